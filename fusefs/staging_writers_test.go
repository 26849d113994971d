package fusefs

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stagingStat reads one write directory's gauge or counter from .stats.
func stagingStat(t *testing.T, mnt, metric, dir string) int64 {
	t.Helper()
	f, err := os.Open(filepath.Join(mnt, ".stats"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	prefix := "framefs_" + metric + "{"
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, prefix) && strings.Contains(line, `dir="`+dir+`"}`) {
			fields := strings.Fields(line)
			v, err := strconv.ParseInt(fields[len(fields)-1], 10, 64)
			if err != nil {
				t.Fatalf(".stats line %q: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf(".stats has no %s for %s/", metric, dir)
	return 0
}

// errorFiles lists the error files of a write directory.
func errorFiles(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".error") {
			out = append(out, e.Name())
		}
	}
	return out
}

// What go-fuse delivers for a file shared by several descriptors and
// processes: a FLUSH at every close(2) of any copy, one RELEASE when the
// last copy is gone. Only the release ends the writing.
func TestWriteHandleEndsAtRelease(t *testing.T) {
	f := newWritableFixture(t)
	in := f.path("robot", "ingest")
	writing := func() int64 { return stagingStat(t, f.mnt, "ingest_writing_files", "ingest") }
	fh, err := os.OpenFile(filepath.Join(in, "shared.mp4"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write([]byte("part one")); err != nil {
		t.Fatal(err)
	}
	dup, err := syscall.Dup(int(fh.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	copy2 := os.NewFile(uintptr(dup), "dup")
	// A child process inherits a third copy and keeps it for a while.
	child := exec.Command("sleep", "1")
	child.ExtraFiles = []*os.File{copy2}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	fh.Close() // FLUSH
	copy2.Close()
	if w := writing(); w != 1 {
		t.Fatalf("after closing two of three descriptor copies: %d files open for writing, want 1", w)
	}
	child.Wait() // the last copy closes: RELEASE
	waitFor(t, func() bool { return writing() == 0 }, "the release of the last copy")
}

// Shell-shaped writers: descriptors shared across processes, pipes, and a
// descriptor held open without writing, each pausing for longer than the
// settle time. None of them gets an error file or a commit while it
// writes, and each commits the whole video once it is done.
func TestMultiProcessWriters(t *testing.T) {
	f := newWritableFixture(t)
	in := f.path("robot", "ingest")
	src := video("h264_gop250.mp4")
	const pause = "1" // seconds; the settle time is 0.3 s
	writers := map[string]string{
		"subshell": `( head -c 10000 "$SRC"; sleep $PAUSE; tail -c +10001 "$SRC" ) > "$DST"`,
		"braces":   `{ head -c 10000 "$SRC"; sleep $PAUSE; tail -c +10001 "$SRC"; } > "$DST"`,
		"tee":      `( head -c 10000 "$SRC"; sleep $PAUSE; tail -c +10001 "$SRC" ) | tee "$DST" > /dev/null`,
		"heldopen": `exec 3> "$DST"; sleep $PAUSE; cat "$SRC" >&3; sleep $PAUSE; exec 3>&-`,
		"dupfd":    `exec 3> "$DST"; head -c 20000 "$SRC" >&3; sh -c 'sleep '$PAUSE'; tail -c +20001 "$SRC" >&4' 4>&3; exec 3>&-`,
	}
	type result struct {
		exited   time.Time
		problems map[string]bool
	}
	var mu sync.Mutex
	results := map[string]*result{}
	var wg sync.WaitGroup
	for name, script := range writers {
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = append(os.Environ(), "SRC="+src, "DST="+filepath.Join(in, name+".mp4"), "PAUSE="+pause)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		results[name] = &result{problems: map[string]bool{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				t.Errorf("%s: %v %s", name, err, out.String())
			}
			mu.Lock()
			results[name].exited = time.Now()
			mu.Unlock()
		}()
	}
	// The sidecars come once the videos are open: a lone sidecar would
	// rightly get an error.
	for name := range writers {
		waitFor(t, func() bool {
			_, err := os.Stat(filepath.Join(in, name+".mp4"))
			return err == nil
		}, name+".mp4 created")
		if err := os.WriteFile(filepath.Join(in, name+".jsonl"), []byte(rowsFor("pick", 6)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Meanwhile: what is shown, and a commit asked for mid-way.
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			errs := errorFiles(in)
			now := time.Now()
			mu.Lock()
			for name, r := range results {
				if !r.exited.IsZero() && now.After(r.exited) {
					continue
				}
				for _, e := range errs {
					if e == name+".error" {
						msg, _ := os.ReadFile(filepath.Join(in, e))
						r.problems[fmt.Sprintf("%s while the writer runs: %s", e, msg)] = true
					}
				}
				if hasEpisodes(f.tbl, name) && (r.exited.IsZero() || now.Before(r.exited)) {
					r.problems["committed while the writer runs"] = true
				}
			}
			mu.Unlock()
		}
	}()
	time.Sleep(400 * time.Millisecond)
	status, _ := os.ReadFile(filepath.Join(in, ".status"))
	run(t, "touch", filepath.Join(in, ".commit"))
	wg.Wait()
	close(stop)
	<-watched
	for name, r := range results {
		for p := range r.problems {
			t.Errorf("%s: %s", name, p)
		}
	}
	if !strings.Contains(string(status), "writing") {
		t.Errorf(".status while the writers pause:\n%s", status)
	}
	var names []string
	for name := range writers {
		names = append(names, name)
	}
	got := waitEpisodes(t, f.tbl, names...)
	for _, name := range names {
		if got[name].Videos["video"].SHA256 != sha(t, src) || got[name].Rows != 6 {
			t.Errorf("%s: stored %+v, want the whole of %s with 6 rows", name, got[name], src)
		}
	}
	if errs := errorFiles(in); len(errs) > 0 {
		t.Errorf("error files left: %v", errs)
	}
}
