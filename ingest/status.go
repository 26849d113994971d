package ingest

import (
	"fmt"
	"strings"

	"github.com/framefs/framefs/internal/safetext"
)

// statusRow is what .status shows of one staged group. Its state is
// worked out when .status is read, from the group's problem then, so that
// a group's NAME.error and its "failed" line in .status appear together.
type statusRow struct {
	name, fp string // the group's, for its problem
	label    string
	files    string
	open     bool // a file is being written
	ready    bool // settled
}

// setStatus records the staged groups for Status.
func (s *Stager) setStatus(gs []*group) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = s.rows[:0]
	for _, g := range gs {
		var names []string
		open := false
		for _, e := range g.entries {
			n := e.name
			if e.kind == kindImages || e.kind == kindDataset {
				n += "/"
			}
			names = append(names, n)
			open = open || e.open
		}
		label := g.name
		if label == "" {
			label = SchemaFile
		}
		s.rows = append(s.rows, statusRow{name: g.name, fp: g.fp, label: label, files: strings.Join(names, " "), open: open, ready: g.ready})
	}
}

// statusLine is row's line in .status. s.mu must be held.
func (s *Stager) statusLine(row statusRow) string {
	state, held := s.statusOf(row.name, row.fp)
	switch {
	case held:
	case row.open:
		state = "writing"
	case !row.ready:
		state = "settling"
	default:
		state = "ready"
	}
	return fmt.Sprintf("  %-24s %-40s %s", row.label, row.files, state)
}

// Status describes what is staged, waiting and failed, and the last
// commits, as the text of .status.
func (s *Stager) Status() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s, staged in %s\nsettle time %s", s.opts.Mode, s.opts.Dir, s.opts.Settle)
	if s.opts.LimitBytes > 0 {
		fmt.Fprintf(&b, ", %d of %d bytes staged", s.stats.Staged, s.opts.LimitBytes)
	} else {
		fmt.Fprintf(&b, ", %d bytes staged", s.stats.Staged)
	}
	b.WriteString("\n\nstaged:\n")
	if len(s.rows) == 0 {
		b.WriteString("  (nothing)\n")
	}
	for _, row := range s.rows {
		b.WriteString(s.statusLine(row) + "\n")
	}
	if s.running != "" {
		fmt.Fprintf(&b, "\ncommitting: %s\n", s.running)
	}
	if s.lastErr != "" {
		fmt.Fprintf(&b, "\nlast error (retrying): %s\n", s.lastErr)
	}
	b.WriteString("\nlast commits:\n")
	if len(s.history) == 0 {
		b.WriteString("  (none yet)\n")
	}
	for i := len(s.history) - 1; i >= 0; i-- {
		b.WriteString("  " + s.history[i] + "\n")
	}
	// File names dropped by users are shown, control characters escaped.
	return safetext.Escape(b.String())
}
