package fusefs

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/framefs/framefs/internal/tabletest"
	"github.com/framefs/framefs/internal/testenv"
)

// stagingTmpfs mounts a tmpfs of size (mount(8) syntax: 4m) for a staging
// directory and unmounts it at cleanup. Without the right to mount one
// the test is skipped, unless FRAMEFS_REQUIRE_ROOT=1 (CI), where it
// fails. scripts/unmount-stale.sh knows its name.
func stagingTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "staging-tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0755"); err != nil {
		testenv.Missing(t, testenv.Root, fmt.Sprintf("cannot mount a tmpfs for a full staging disk (root only): %v", err))
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// fillStaging copies a file of size bytes into dir as big.mp4 with cp,
// which must fail for lack of room.
func fillStaging(t *testing.T, dir string, size int) {
	t.Helper()
	big := filepath.Join(t.TempDir(), "big.mp4")
	data := make([]byte, size)
	rand.Read(data)
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("cp", big, dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "No space left") {
		t.Fatalf("cp of %d bytes into a full staging area: %v %s", size, err, out)
	}
}

// stagingFullScenario: a pair is being written when another file fills
// the staging area. The pair commits anyway, the file cut short gets
// big.error saying why (wantWhy), removing it removes its error and its
// .status line, and the next pair commits without a remount.
func stagingFullScenario(t *testing.T, f *fixture, fill int, wantWhy string) {
	in := f.path("robot", "ingest")
	// "before" stays open while the area fills, so that it commits on a
	// full disk.
	before, err := os.Create(filepath.Join(in, "before.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(video("h264_faststart.mp4"))
	if _, err := before.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "before.jsonl"), []byte(rowsFor("pick", 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	fillStaging(t, in, fill)
	before.Close()
	waitEpisodes(t, f.tbl, "before")

	var msg []byte
	waitFor(t, func() bool {
		msg, _ = os.ReadFile(filepath.Join(in, "big.error"))
		return len(msg) > 0
	}, "big.error")
	text := string(msg)
	if !strings.Contains(text, "big.mp4 is incomplete") || !strings.Contains(text, wantWhy) || strings.Contains(text, "truncated") {
		t.Fatalf("big.error = %q, want it to say big.mp4 is incomplete because %s", text, wantWhy)
	}
	status, _ := os.ReadFile(filepath.Join(in, ".status"))
	if !strings.Contains(string(status), "failed: big.mp4 is incomplete") || strings.Contains(string(status), "retrying") {
		t.Fatalf(".status on a full staging area:\n%s", status)
	}

	if err := os.Remove(filepath.Join(in, "big.mp4")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(in, "big.error"))
		status, _ := os.ReadFile(filepath.Join(in, ".status"))
		return os.IsNotExist(err) && !strings.Contains(string(status), "big")
	}, "big.error and big's .status line to go with big.mp4")

	run(t, "cp", video("h264_vfr.mp4"), filepath.Join(in, "after.mp4"))
	if err := os.WriteFile(filepath.Join(in, "after.jsonl"), []byte(rowsFor("pick", 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitEpisodes(t, f.tbl, "after")
	waitFor(t, func() bool {
		entries, _ := os.ReadDir(in)
		return len(entries) == 1
	}, "ingest/ to empty")
	checkTable(t, f.tbl, []string{"before", "after"})
}

// A staging disk filled by user data: the daemon's own bookkeeping
// (journal, links, error files) still works.
func TestStagingDiskFull(t *testing.T) {
	testenv.RequireFUSE(t)
	staging := stagingTmpfs(t, "4m")
	f := newFixture(t, writableOptions(staging))
	stagingFullScenario(t, f, 8<<20, "the staging disk is full")
	var st syscall.Statfs_t
	if err := syscall.Statfs(staging, &st); err != nil {
		t.Fatal(err)
	}
	if free := int64(st.Bavail) * st.Bsize; free < 3<<20 {
		t.Errorf("%d bytes free on the staging disk after everything committed", free)
	}
}

func TestStagingLimit(t *testing.T) {
	opts := writableOptions(t.TempDir())
	opts.StagingLimit = 64 << 10
	f := newFixture(t, opts)
	stagingFullScenario(t, f, 256<<10, "--staging-limit 65536")
}

// An image folder settles while the staging disk is full: encoding it
// into a video finds no room. It is not failed for good: its error says
// so, and once there is room it commits without a remount.
func TestStagingDiskFullWhileEncoding(t *testing.T) {
	testenv.RequireFUSE(t)
	staging := stagingTmpfs(t, "4m")
	f := newFixture(t, writableOptions(staging))
	in := f.path("robot", "ingest")
	src := t.TempDir()
	tabletest.Lavfi(t, filepath.Join(src, "img%03d.png"), "testsrc=size=64x48:rate=5", 6)
	if err := os.Mkdir(filepath.Join(in, "frames"), 0o755); err != nil {
		t.Fatal(err)
	}
	images, _ := filepath.Glob(filepath.Join(src, "img*.png"))
	run(t, "cp", append(images, filepath.Join(in, "frames"))...)
	// The sidecar stays open until the disk is full.
	side, err := os.Create(filepath.Join(in, "frames.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	side.WriteString(rowsFor("pick", 6))
	fillStaging(t, in, 8<<20)
	side.Close()

	var msg []byte
	waitFor(t, func() bool {
		msg, _ = os.ReadFile(filepath.Join(in, "frames.error"))
		return len(msg) > 0
	}, "frames.error")
	if !strings.Contains(string(msg), "no room to encode the images of frames/") || !strings.Contains(string(msg), "tried again") {
		t.Fatalf("frames.error = %q", msg)
	}
	if hasEpisodes(f.tbl, "frames") {
		t.Fatal("committed without room to encode")
	}
	if err := os.Remove(filepath.Join(in, "big.mp4")); err != nil {
		t.Fatal(err)
	}
	got := waitEpisodes(t, f.tbl, "frames")
	if got["frames"].Rows != 6 || got["frames"].Videos["video"].Frames != 6 {
		t.Fatalf("frames: %+v", got["frames"])
	}
	if errs := errorFiles(in); len(errs) > 0 {
		t.Fatalf("error files left: %v", errs)
	}
}
