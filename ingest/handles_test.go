package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func (e *env) ino(name string) uint64 {
	e.t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(e.dir, name), &st); err != nil {
		e.t.Fatal(err)
	}
	return st.Ino
}

// expectHeld checks that group has neither committed nor got an error.
func (e *env) expectHeld(group string) {
	e.t.Helper()
	if _, ok := e.episodes()[group]; ok {
		e.t.Fatalf("%s committed while a handle on it was open", group)
	}
	if text, ok := e.st.ErrorText(group + ErrorSuffix); ok {
		e.t.Fatalf("%s.error while a handle on it was open: %s", group, text)
	}
}

// A descriptor shared by several processes is flushed at every close of a
// copy; only its release ends the writing.
func TestFlushOfOneCopyDoesNotEndWriting(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	e.write("shared.jsonl", rows(4))
	data, _ := os.ReadFile(fixture("h264_faststart.mp4"))
	e.write("shared.mp4", string(data[:len(data)/2]))
	w := e.st.OpenWriter(e.ino("shared.mp4"), true)
	w.Flushed() // the first process of a subshell exits
	for i := 0; i < 3; i++ {
		e.settleAndStep()
	}
	e.expectHeld("shared")
	if !strings.Contains(e.st.Status(), "writing") {
		t.Fatalf("status:\n%s", e.st.Status())
	}
	// The subshell's last process writes the rest and exits.
	w.Writing()
	f, _ := os.OpenFile(filepath.Join(e.dir, "shared.mp4"), os.O_WRONLY|os.O_APPEND, 0)
	f.Write(data[len(data)/2:])
	f.Close()
	w.Wrote(int64(len(data)/2), int64(len(data)-len(data)/2))
	w.Flushed()
	w.Release()
	e.settleAndStep()
	if e.episodes()["shared"] != 4 {
		t.Fatalf("not committed after the release: %v\n%s", e.episodes(), e.st.Status())
	}
}

// The settle time counts from the last release: a file held open without
// writing for longer than the settle time is not committed the moment it
// is closed.
func TestSettleCountsFromTheLastRelease(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	// Long enough that the step right after the release comes within it,
	// however loaded the machine.
	e.st.opts.Settle = time.Second
	e.copy(fixture("h264_faststart.mp4"), "held.mp4")
	e.write("held.jsonl", rows(3))
	w := e.st.OpenWriter(e.ino("held.mp4"), false)
	e.st.step(context.Background(), false)
	time.Sleep(1200 * time.Millisecond)
	w.Release()
	if err := e.st.step(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	e.expectHeld("held")
	time.Sleep(1200 * time.Millisecond)
	e.st.step(context.Background(), false)
	if e.episodes()["held"] != 3 {
		t.Fatalf("not committed a settle time after the release: %v", e.episodes())
	}
}

// touch .commit right after cp: the release of cp's handle may come after
// the commit request; CommitNow waits for it.
func TestCommitNowWaitsForReleases(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	e.copy(fixture("h264_faststart.mp4"), "late.mp4")
	e.write("late.jsonl", rows(2))
	w := e.st.OpenWriter(e.ino("late.mp4"), true)
	w.Flushed()
	go func() {
		time.Sleep(50 * time.Millisecond)
		w.Release()
	}()
	if err := e.st.CommitNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.episodes()["late"] != 2 {
		t.Fatalf("CommitNow did not wait for the release: %v", e.episodes())
	}

	// A file still being written (no flush) is not waited for, nor committed.
	e.copy(fixture("h264_faststart.mp4"), "busy.mp4")
	e.write("busy.jsonl", rows(2))
	busy := e.st.OpenWriter(e.ino("busy.mp4"), true)
	defer busy.Release()
	if err := e.st.CommitNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.expectHeld("busy")
}

// A file whose writing failed for lack of room gets an error that says
// so, holds back nothing else, and its error goes with the file.
func TestWriteFailedForLackOfRoom(t *testing.T) {
	for _, limit := range []bool{false, true} {
		t.Run(map[bool]string{false: "disk", true: "limit"}[limit], func(t *testing.T) {
			e := newEnv(t, Add, stdColumns)
			if limit {
				e.st.opts.LimitBytes = 20000
			}
			data, _ := os.ReadFile(fixture("h264_faststart.mp4"))
			e.write("big.jsonl", rows(3))
			e.write("big.mp4", string(data[:len(data)/3]))
			w := e.st.OpenWriter(e.ino("big.mp4"), true)
			w.Wrote(0, int64(len(data)/3))
			w.NoSpace(int64(len(data)/3), limit)
			w.Flushed()
			w.Release()
			e.copy(fixture("h264_vfr.mp4"), "small.mp4")
			e.write("small.jsonl", rows(5))
			e.settleAndStep()
			if e.episodes()["small"] != 5 {
				t.Fatalf("the other pair did not commit: %v", e.episodes())
			}
			text := e.errorText("big")
			want := "staging disk is full"
			if limit {
				want = "--staging-limit 20000"
			}
			if !strings.Contains(text, "big.mp4 is incomplete") || !strings.Contains(text, want) || strings.Contains(text, "truncated") {
				t.Fatalf("big.error = %q, want it to say big.mp4 is incomplete because %s", text, want)
			}
			if !strings.Contains(e.st.Status(), "failed: big.mp4 is incomplete") {
				t.Fatalf("status:\n%s", e.st.Status())
			}
			// Removing the files removes the error and the status line.
			os.Remove(filepath.Join(e.dir, "big.mp4"))
			os.Remove(filepath.Join(e.dir, "big.jsonl"))
			e.st.step(context.Background(), false)
			if names := e.st.ErrorFiles(); len(names) != 0 {
				t.Fatalf("error files after rm: %v", names)
			}
			if strings.Contains(e.st.Status(), "big") {
				t.Fatalf("status after rm:\n%s", e.st.Status())
			}
			// Copied again with room: it commits.
			e.write("big.jsonl", rows(3))
			e.copy(fixture("h264_faststart.mp4"), "big.mp4")
			again := e.st.OpenWriter(e.ino("big.mp4"), true)
			again.Wrote(0, int64(len(data)))
			again.Release()
			e.settleAndStep()
			if e.episodes()["big"] != 3 {
				t.Fatalf("not committed when copied again: %v %q", e.episodes(), e.errorText("big"))
			}
		})
	}
}

// Rewriting a failed file hides its error while it is open.
func TestNoErrorWhileRewriting(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	data, _ := os.ReadFile(fixture("h264_faststart.mp4"))
	e.write("cut.mp4", string(data[:len(data)/2]))
	e.write("cut.jsonl", rows(3))
	e.settleAndStep()
	if !strings.Contains(e.errorText("cut"), "cut") {
		t.Fatalf("no error for a truncated video: %q", e.errorText("cut"))
	}
	w := e.st.OpenWriter(e.ino("cut.mp4"), false)
	defer w.Release()
	e.write("cut.mp4", string(data[:len(data)/2+10]))
	e.st.step(context.Background(), false)
	if names := e.st.ErrorFiles(); len(names) != 0 {
		t.Fatalf("error files while the file is written again: %v", names)
	}
}

func TestDismissError(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	e.write("lonely.jsonl", rows(3))
	e.settleAndStep()
	if names := e.st.ErrorFiles(); len(names) != 1 || names[0] != "lonely.error" {
		t.Fatalf("error files %v", names)
	}
	if !e.st.Dismiss("lonely.error") || len(e.st.ErrorFiles()) != 0 {
		t.Fatal("dismissed error still shown")
	}
	e.settleAndStep()
	if len(e.st.ErrorFiles()) != 0 {
		t.Fatal("a dismissed error came back with its files unchanged")
	}
	if !strings.Contains(e.st.Status(), "failed") {
		t.Fatalf("status:\n%s", e.st.Status())
	}
}

func TestJournalFile(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	st, err := os.Stat(e.st.journalPath())
	if err != nil || st.Size() != journalReserve {
		t.Fatalf("reserved journal: %v %v", st, err)
	}
	if j, err := e.st.readJournal(); j != nil || err != nil {
		t.Fatalf("fresh journal: %+v %v", j, err)
	}
	want := journal{Started: time.Now().UTC().Truncate(time.Second), Groups: []journalGroup{{Episode: "a", Files: map[string]string{"a.mp4": fpDigest("1:2:3.4")}}}}
	if err := e.st.writeJournal(want); err != nil {
		t.Fatal(err)
	}
	got, err := e.st.readJournal()
	if err != nil || got == nil || !got.Started.Equal(want.Started) || got.Groups[0].Files["a.mp4"] != want.Groups[0].Files["a.mp4"] {
		t.Fatalf("read back %+v %v", got, err)
	}
	if st, _ := os.Stat(e.st.journalPath()); st.Size() != journalReserve {
		t.Fatalf("journal grew to %d bytes", st.Size())
	}
	// A torn write fails its checksum and is discarded.
	f, _ := os.OpenFile(e.st.journalPath(), os.O_WRONLY, 0)
	f.WriteAt([]byte("X"), journalHeader+3)
	f.Close()
	if j, _ := e.st.readJournal(); j != nil {
		t.Fatalf("torn journal read as %+v", j)
	}
	e.st.clearJournal()
	if j, _ := e.st.readJournal(); j != nil {
		t.Fatalf("cleared journal read as %+v", j)
	}
	huge := journal{Groups: []journalGroup{{Episode: strings.Repeat("x", journalReserve)}}}
	if err := e.st.writeJournal(huge); err != errJournalFull {
		t.Fatalf("oversized journal: %v", err)
	}
}
