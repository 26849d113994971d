package ingest

import (
	"errors"
	"fmt"
	"syscall"
)

// A staging area fills up in two ways: the disk (or its quota) is full,
// or the write directory reached its limit (Options.LimitBytes). Either
// way the file being written is cut short. It must not be committed (it
// would fail as a "truncated" video at best), it gets an error file that
// says what happened, and it holds back nothing else.

// failIncomplete sets aside the ready groups with a file whose writing
// failed for lack of room.
func (s *Stager) failIncomplete(gs []*group) {
	for _, g := range gs {
		if !g.ready {
			continue
		}
		if msg := s.incomplete(g); msg != "" {
			g.ready = false
			s.fail(g, problemFailed, msg)
		}
	}
}

// incomplete explains why a group has a file cut short for lack of
// room, or returns "".
func (s *Stager) incomplete(g *group) string {
	if s.noSpaceCount.Load() == 0 {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range g.entries {
		for _, f := range e.files {
			st := s.inodes[f.ino]
			if st == nil || st.noSpace == nil {
				continue
			}
			// No figures that change as files come and go: the message is
			// about one state of the files, and shown once.
			var why string
			if st.noSpace.limit {
				why = fmt.Sprintf("this write directory may hold at most %s (--staging-limit %d)",
					formatBytes(s.opts.LimitBytes), s.opts.LimitBytes)
			} else {
				why = "the staging disk is full (" + s.diskSize() + ")"
			}
			return fmt.Sprintf("%s is incomplete: writing it failed at byte %d because %s. "+
				"Remove %s, and copy it again once there is room; the other files commit meanwhile.",
				f.name, st.noSpace.offset, why, e.name)
		}
	}
	return ""
}

// diskSize describes the staging disk for messages.
func (s *Stager) diskSize() string {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(s.opts.Dir, &fs); err != nil {
		return s.opts.Dir
	}
	return fmt.Sprintf("%s in %s", formatBytes(int64(fs.Blocks)*fs.Bsize), s.opts.Dir)
}

// outOfRoom tells whether err means the staging disk is full. Errors
// that lost their errno on the way (through FFmpeg, say) count when the
// disk has almost no room left.
func (s *Stager) outOfRoom(err error) bool {
	if IsNoSpace(err) {
		return true
	}
	var fs syscall.Statfs_t
	return syscall.Statfs(s.opts.Dir, &fs) == nil && int64(fs.Bavail)*fs.Bsize < 1<<20
}

// IsNoSpace tells whether err (an errno of a write) means there is no
// room: the disk is full or the user's quota is used up.
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// formatBytes writes n in binary units for people.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
