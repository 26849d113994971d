package ingest

import (
	"fmt"
	"strings"

	"github.com/framefs/framefs/internal/safetext"
)

// setStatus records the state of every staged group for Status.
func (s *Stager) setStatus(gs []*group) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = s.lines[:0]
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
		state, held := s.statusOf(g)
		switch {
		case held:
		case open:
			state = "writing"
		case !g.ready:
			state = "settling"
		default:
			state = "ready"
		}
		label := g.name
		if label == "" {
			label = SchemaFile
		}
		s.lines = append(s.lines, fmt.Sprintf("  %-24s %-40s %s", label, strings.Join(names, " "), state))
	}
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
	if len(s.lines) == 0 {
		b.WriteString("  (nothing)\n")
	}
	for _, l := range s.lines {
		b.WriteString(l + "\n")
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
