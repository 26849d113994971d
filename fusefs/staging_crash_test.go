package fusefs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/treetest"
	"github.com/framefs/framefs/table"
)

// daemon is a mount served by a child process (see TestMain).
type daemon struct {
	t                *testing.T
	wh, mnt, staging string
	cmd              *exec.Cmd
}

func startDaemon(t *testing.T, wh, mnt, staging string) *daemon {
	t.Helper()
	return startDaemonReady(t, wh, mnt, staging, filepath.Join("robot", "ingest", ".status"))
}

// startDaemonReady starts a daemon and waits until the file ready (a path
// in the mount) can be read.
func startDaemonReady(t *testing.T, wh, mnt, staging, ready string) *daemon {
	t.Helper()
	os.MkdirAll(mnt, 0o755)
	d := &daemon{t: t, wh: wh, mnt: mnt, staging: staging}
	d.cmd = exec.Command(os.Args[0], "-test.run=^$")
	d.cmd.Env = append(os.Environ(), "FRAMEFS_TEST_MOUNT="+wh+"|"+mnt+"|"+staging)
	d.cmd.Stderr = os.Stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.stop)
	// Reading .status needs the daemon itself: a dead predecessor's
	// mount may still answer stat from the kernel's caches.
	waitFor(t, func() bool {
		_, err := os.ReadFile(filepath.Join(mnt, ready))
		return err == nil
	}, "the daemon's mount")
	return d
}

// kill stops the daemon the hard way; its mount is left dead, as after a
// crash.
func (d *daemon) kill() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.cmd.Wait()
}

func (d *daemon) stop() {
	if d.cmd.ProcessState != nil {
		return // already stopped or killed
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		d.kill()
	}
	if mounted(d.mnt) {
		exec.Command("fusermount3", "-u", "-z", d.mnt).Run()
		syscall.Unmount(d.mnt, syscall.MNT_DETACH)
	}
}

// stagePairs copies one pair per episode into dir/robot/ingest.
func stagePairs(t *testing.T, mnt string, episodes ...string) {
	t.Helper()
	in := filepath.Join(mnt, "robot", "ingest")
	for i, ep := range episodes {
		v := mp4s[i%len(mp4s)]
		if out, err := exec.Command("cp", video(v), filepath.Join(in, ep+".mp4")).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		if err := os.WriteFile(filepath.Join(in, ep+".jsonl"), []byte(rowsFor("pick", 4)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var mp4s = []string{"h264_faststart.mp4", "h264_vfr.mp4", "h264_negative_cts.mp4", "h264_editlist.mp4"}

func episodeNames(prefix string, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("%s%02d", prefix, i))
	}
	return out
}

// checkTable verifies the table and that every episode is there once.
func checkTable(t *testing.T, tbl *table.Table, want []string) {
	t.Helper()
	ctx := context.Background()
	problems, err := tbl.Verify(ctx)
	if err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	_, eps := treetest.HeadEpisodes(t, tbl)
	count := map[string]int{}
	for _, e := range eps {
		count[e.Episode]++
	}
	for _, w := range want {
		if count[w] != 1 {
			t.Errorf("episode %s is in the head %d times", w, count[w])
		}
	}
	ids, _ := tbl.SnapshotIDs(ctx)
	for i, id := range ids {
		if id != int64(i+1) {
			t.Fatalf("snapshot ids not contiguous: %v", ids)
		}
	}
}

func TestIngestSurvivesKill9(t *testing.T) {
	requireFUSE(t)
	wh, staging := t.TempDir(), t.TempDir()
	mnt := filepath.Join(t.TempDir(), "mnt")
	tbl := robotTable(t, wh)
	var all []string

	// Killed while files are staged, before they settle.
	d := startDaemon(t, wh, mnt, staging)
	first := episodeNames("staged", 4)
	stagePairs(t, mnt, first...)
	d.kill()
	d = startDaemon(t, wh, mnt, staging)
	waitEpisodes(t, tbl, first...)
	all = append(all, first...)

	// Killed while a commit runs, at different moments.
	for trial, delay := range []time.Duration{0, 20 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond, 250 * time.Millisecond} {
		eps := episodeNames(fmt.Sprintf("t%d-", trial), 3)
		stagePairs(t, mnt, eps...)
		go exec.Command("touch", filepath.Join(mnt, "robot", "ingest", ".commit")).Run()
		time.Sleep(delay)
		d.kill()
		d = startDaemon(t, wh, mnt, staging)
		for i := 0; i < 100 && !hasEpisodes(tbl, eps...); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if !hasEpisodes(tbl, eps...) {
			st, _ := os.ReadFile(filepath.Join(mnt, "robot", "ingest", ".status"))
			ls, _ := exec.Command("sh", "-c", "ls -R "+staging+"; ls "+wh+"/robot/snapshot; cat "+wh+"/robot/snapshot/*4.json").CombinedOutput()
			t.Fatalf("trial %d: not committed; status:\n%s\nstaging:\n%s", trial, st, ls)
		}
		all = append(all, eps...)
	}
	waitFor(t, func() bool {
		entries, _ := os.ReadDir(filepath.Join(mnt, "robot", "ingest"))
		return len(entries) == 1
	}, "the staging directory to empty")
	d.stop()
	checkTable(t, tbl, all)
}

// Files staged before a crash commit after the restart even if nobody
// looks at their table.
func TestStagedFilesResumeAfterRestart(t *testing.T) {
	requireFUSE(t)
	wh, staging := t.TempDir(), t.TempDir()
	mnt := filepath.Join(t.TempDir(), "mnt")
	tbl := robotTable(t, wh)
	d := startDaemon(t, wh, mnt, staging)
	eps := episodeNames("resumed", 2)
	stagePairs(t, mnt, eps...)
	d.kill()
	// Only the warehouse root is touched: .stats is not in any table.
	d = startDaemonReady(t, wh, mnt, staging, ".stats")
	waitEpisodes(t, tbl, eps...)
	d.stop()
	checkTable(t, tbl, eps)
}

func TestTwoMountsIngestAtOnce(t *testing.T) {
	requireFUSE(t)
	wh := t.TempDir()
	tbl := robotTable(t, wh)
	var daemons []*daemon
	for i := 0; i < 2; i++ {
		daemons = append(daemons, startDaemon(t, wh, filepath.Join(t.TempDir(), "mnt"), t.TempDir()))
	}
	var wg sync.WaitGroup
	var all []string
	for i, d := range daemons {
		eps := episodeNames(fmt.Sprintf("node%d-", i), 6)
		all = append(all, eps...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ep := range eps {
				stagePairs(t, d.mnt, ep)
				exec.Command("touch", filepath.Join(d.mnt, "robot", "ingest", ".commit")).Run()
			}
		}()
	}
	wg.Wait()
	waitEpisodes(t, tbl, all...)
	for _, d := range daemons {
		d.stop()
	}
	checkTable(t, tbl, all)
}

func hasEpisodes(tbl *table.Table, want ...string) bool {
	ctx := context.Background()
	head, err := tbl.Head(ctx)
	if err != nil || head == nil {
		return false
	}
	for _, w := range want {
		if _, err := tbl.Episode(ctx, head, w); err != nil {
			return false
		}
	}
	return true
}
