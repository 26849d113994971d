package ingest

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/framefs/framefs/internal/safetext"
)

// A group that cannot commit has a problem, shown to the user as the file
// NAME.error beside its files. Error files live in the stager's memory,
// not in the staging directory: writing them must not fail when user
// data has filled the disk, and they must vanish with the files they are
// about. The stager re-derives them after a restart.

// problemKind says what makes a problem go away.
type problemKind int

const (
	// problemFailed: the files are wrong; changing them clears it.
	problemFailed problemKind = iota
	// problemWaiting: more files are needed (a sidecar); CommitNow
	// commits the group anyway.
	problemWaiting
	// problemNoRoom: the staging disk is too full to prepare the commit;
	// it is tried again after a while.
	problemNoRoom
)

// problem is why a group did not commit.
type problem struct {
	fp        string // the group's files the problem is about
	text      string
	kind      problemKind
	dismissed bool      // NAME.error was removed by the user
	retryAt   time.Time // problemNoRoom: when to try again
}

// fail records why a group did not commit, once per state of its files.
func (s *Stager) fail(g *group, kind problemKind, msg string) {
	s.mu.Lock()
	p := s.problems[g.name]
	if p != nil && p.fp == g.fp && p.kind == kind && p.text == msg {
		p.retryAt = time.Now().Add(s.noRoomRetry())
		s.mu.Unlock()
		return
	}
	if kind != problemWaiting {
		s.stats.Failures++
	}
	s.problems[g.name] = &problem{fp: g.fp, text: msg, kind: kind, retryAt: time.Now().Add(s.noRoomRetry())}
	s.mu.Unlock()
	s.log.Warn("not committed", "group", g.name, "problem", msg)
}

// noRoomRetry is how long a group that found no room waits before it is
// tried again.
func (s *Stager) noRoomRetry() time.Duration { return max(s.opts.Settle, 2*time.Second) }

// alreadyReported tells whether a group failed before in this state. A
// group waiting for more files is tried again when the user asks for a
// commit now, and one that found no room once its retry time came.
func (s *Stager) alreadyReported(g *group, now bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.problems[g.name]
	switch {
	case p == nil || p.fp != g.fp:
		return false
	case p.kind == problemWaiting:
		return !now
	case p.kind == problemNoRoom:
		return time.Now().Before(p.retryAt)
	}
	return true
}

// forgetStale drops the problems of groups whose files changed or went:
// an error file is about exactly the files it was written for. Removing
// a failed file removes its error file; re-writing it hides the error
// until the new version is checked.
func (s *Stager) forgetStale(gs []*group) {
	fps := make(map[string]string, len(gs))
	for _, g := range gs {
		fps[g.name] = g.fp
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, p := range s.problems {
		if fp, ok := fps[name]; !ok || fp != p.fp {
			delete(s.problems, name)
		}
	}
}

// ErrorFiles lists the names of the error files to show (NAME.error), in
// name order.
func (s *Stager) ErrorFiles() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name, p := range s.problems {
		if !p.dismissed {
			out = append(out, errorFileName(name))
		}
	}
	sort.Strings(out)
	return out
}

// ErrorText returns the content of the error file name (NAME.error).
func (s *Stager) ErrorText(name string) (string, bool) {
	group, ok := groupOfErrorFile(name)
	if !ok {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.problems[group]
	if p == nil || p.dismissed {
		return "", false
	}
	var hint string
	switch p.kind {
	case problemWaiting:
		hint = "It commits when its other files arrive."
	case problemNoRoom:
		hint = "It is tried again every " + s.noRoomRetry().String() + "."
	default:
		hint = "Fix the files and they are tried again."
	}
	// The text echoes file names and rows: their control characters are
	// shown, not sent to the terminal of whoever reads the file.
	return safetext.Escape(fmt.Sprintf("%s\n\n%s Remove %s to dismiss this message.\n", p.text, hint, name)), true
}

// Dismiss hides the error file name (rm NAME.error). The group's files
// stay staged and are tried again when they change.
func (s *Stager) Dismiss(name string) bool {
	group, ok := groupOfErrorFile(name)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.problems[group]
	if p == nil || p.dismissed {
		return false
	}
	p.dismissed = true
	return true
}

// IsErrorFile tells whether name is reserved for error files.
func IsErrorFile(name string) bool { return strings.HasSuffix(name, ErrorSuffix) }

func errorFileName(group string) string {
	if group == "" {
		return SchemaFile + ErrorSuffix
	}
	return group + ErrorSuffix
}

func groupOfErrorFile(name string) (string, bool) {
	group, ok := strings.CutSuffix(name, ErrorSuffix)
	if group == SchemaFile {
		group = ""
	}
	return group, ok
}

// statusOf is the state .status shows for a group with a problem about
// its current files. s.mu must be held.
func (s *Stager) statusOf(g *group) (string, bool) {
	p := s.problems[g.name]
	if p == nil || p.fp != g.fp {
		return "", false
	}
	switch p.kind {
	case problemWaiting:
		return firstLine(p.text), true
	case problemNoRoom:
		return "waiting for room: " + firstLine(p.text), true
	}
	return "failed: " + firstLine(p.text), true
}
