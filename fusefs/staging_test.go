package fusefs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/internal/tabletest"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

// The test binary doubles as a mount daemon: with FRAMEFS_TEST_MOUNT set
// ("WAREHOUSE|MOUNTPOINT|STAGING") it mounts and serves until killed, so
// that tests can kill -9 a daemon and run two of them at once.
func TestMain(m *testing.M) {
	if spec := os.Getenv("FRAMEFS_TEST_MOUNT"); spec != "" {
		os.Exit(serveMount(spec))
	}
	os.Exit(m.Run())
}

func serveMount(spec string) int {
	parts := strings.Split(spec, "|")
	frames := serving.New(decoder.Codec{}, serving.Options{CacheBytes: 16 << 20})
	store, err := storage.NewLocal(parts[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	wh := table.NewWarehouse(store, tabletest.Options())
	srv, err := MountWarehouse(parts[1], parts[0], wh, frames, writableOptions(parts[2]))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; srv.Unmount() }()
	srv.Wait()
	return 0
}

func writableOptions(staging string) Options {
	return Options{
		StagingDir: staging, Settle: 300 * time.Millisecond, Refresh: 100 * time.Millisecond,
		EncodeImages: func(ctx context.Context, images []string, out string) error {
			return decoder.EncodeImagesToVideo(ctx, images, out, decoder.VideoEncodeOptions{})
		},
	}
}

func newWritableFixture(t *testing.T) *fixture {
	return newFixture(t, writableOptions(t.TempDir()))
}

// rowsFor is a sidecar of the fixture table "robot" with n rows.
func rowsFor(task string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"task":%q,"t":%d}`+"\n", task, i)
	}
	return b.String()
}

func sha(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// waitEpisodes waits until the table's head has the episodes, and
// returns the head's entries by episode.
func waitEpisodes(t *testing.T, tbl *table.Table, want ...string) map[string]table.EpisodeEntry {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]table.EpisodeEntry{}
		if head, err := tbl.Head(ctx); err == nil && head != nil {
			eps, err := tbl.Episodes(ctx, head)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range eps {
				got[e.Episode] = e
			}
		}
		missing := 0
		for _, w := range want {
			if _, ok := got[w]; !ok {
				missing++
			}
		}
		if missing == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("episodes %v did not all commit; have %d episodes", want, len(got))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func TestIngestLikeClientsDo(t *testing.T) {
	f := newWritableFixture(t)
	in := filepath.Join(f.mnt, "robot", "ingest")
	src := t.TempDir()
	sources := map[string]string{
		"byrename": "h264_faststart.mp4", "bycp": "h264_vfr.mp4", "byrsync": "h264_gop250.mp4", "bymv": "h264_editlist.mp4",
	}
	for ep, v := range sources {
		data, err := os.ReadFile(video(v))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(src, ep+".mp4"), data, 0o644)
		os.WriteFile(filepath.Join(src, ep+".jsonl"), []byte(rowsFor("pick", 5)), 0o644)
	}
	// A file manager: write under a temporary name, then rename.
	for _, ext := range []string{".mp4", ".jsonl"} {
		data, _ := os.ReadFile(filepath.Join(src, "byrename"+ext))
		tmp := filepath.Join(in, ".byrename"+ext+".part")
		if err := os.WriteFile(tmp, data[:len(data)/2], 0o644); err != nil {
			t.Fatal(err)
		}
		// Re-written from the start, as a resumed download might.
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(in, "byrename"+ext)); err != nil {
			t.Fatal(err)
		}
	}
	run(t, "cp", filepath.Join(src, "bycp.mp4"), filepath.Join(src, "bycp.jsonl"), in)
	run(t, "rsync", "-a", filepath.Join(src, "byrsync.mp4"), filepath.Join(src, "byrsync.jsonl"), in+"/")
	run(t, "mv", filepath.Join(src, "bymv.mp4"), filepath.Join(src, "bymv.jsonl"), in)
	// A staged file deleted before it commits is simply gone.
	os.WriteFile(filepath.Join(in, "dropped.mp4"), []byte("not yet"), 0o644)
	os.Remove(filepath.Join(in, "dropped.mp4"))

	got := waitEpisodes(t, f.tbl, "byrename", "bycp", "byrsync", "bymv")
	for ep, v := range sources {
		if got[ep].Videos["video"].SHA256 != sha(t, video(v)) {
			t.Errorf("%s: stored video differs from %s", ep, v)
		}
		if got[ep].Rows != 5 {
			t.Errorf("%s: %d rows", ep, got[ep].Rows)
		}
	}
	// Episodes show up under latest, and ingest/ is empty again.
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(f.mnt, "robot", "latest", "task=pick", "bymv", "000004.jpg"))
		return err == nil
	}, "bymv under latest/")
	waitFor(t, func() bool {
		entries, _ := os.ReadDir(in)
		return len(entries) == 1 && entries[0].Name() == ".status"
	}, "ingest/ empty after the commits")
	status, err := os.ReadFile(filepath.Join(in, ".status"))
	if err != nil || !strings.Contains(string(status), "snapshot") {
		t.Fatalf(".status: %q, %v", status, err)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestIngestBatchWithBadPair(t *testing.T) {
	f := newWritableFixture(t)
	in := filepath.Join(f.mnt, "robot", "ingest")
	before, _ := f.tbl.SnapshotIDs(context.Background())
	src := t.TempDir()
	var args []string
	for i, v := range []string{"h264_faststart.mp4", "h264_vfr.mp4", "h264_negative_cts.mp4"} {
		ep := fmt.Sprintf("batch%d", i)
		data, _ := os.ReadFile(video(v))
		os.WriteFile(filepath.Join(src, ep+".mp4"), data, 0o644)
		os.WriteFile(filepath.Join(src, ep+".jsonl"), []byte(rowsFor("place", 3)), 0o644)
		args = append(args, filepath.Join(src, ep+".mp4"), filepath.Join(src, ep+".jsonl"))
	}
	data, _ := os.ReadFile(video("h264_faststart.mp4"))
	os.WriteFile(filepath.Join(src, "broken.mp4"), data[:len(data)/2], 0o644)
	os.WriteFile(filepath.Join(src, "broken.jsonl"), []byte(rowsFor("place", 3)), 0o644)
	args = append(args, filepath.Join(src, "broken.mp4"), filepath.Join(src, "broken.jsonl"), in)
	run(t, "cp", args...)
	// touch .commit commits what is staged now and returns when done.
	run(t, "touch", filepath.Join(in, ".commit"))
	after, _ := f.tbl.SnapshotIDs(context.Background())
	if len(after) != len(before)+1 {
		t.Fatalf("want exactly one new snapshot, have %v -> %v", before, after)
	}
	got := waitEpisodes(t, f.tbl, "batch0", "batch1", "batch2")
	if _, ok := got["broken"]; ok {
		t.Fatal("the broken pair committed")
	}
	msg, err := os.ReadFile(filepath.Join(in, "broken.error"))
	if err != nil || !strings.Contains(string(msg), "broken.mp4") {
		t.Fatalf("broken.error: %q, %v", msg, err)
	}
	// ls -a and os.listdir show it too.
	if shown := names(t, in); strings.Join(shown, " ") != ".status broken.error broken.jsonl broken.mp4" {
		t.Fatalf("ingest/ lists %v, want broken.error among them", shown)
	}
	if _, err := os.Stat(filepath.Join(f.mnt, "robot", "latest", "task=place", "batch2", "000002.jpg")); err != nil {
		t.Fatalf("right after touch .commit: %v", err)
	}
	stats, _ := os.ReadFile(filepath.Join(f.mnt, ".stats"))
	if !strings.Contains(string(stats), `framefs_ingest_failures_total{table=`) || !strings.Contains(string(stats), `dir="ingest"} 1`) {
		t.Fatalf(".stats lacks the failure:\n%s", stats)
	}
	// Removing the error file clears it; the broken files stay staged.
	if err := os.Remove(filepath.Join(in, "broken.error")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(in)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != ".status broken.jsonl broken.mp4" {
		t.Fatalf("ingest/ holds %v", names)
	}
}

// TestCommitNowFailure: when the commit `touch .commit` asks for fails
// (here the stager's batch directory is a file, so nothing can be staged
// for the commit), the create fails with EIO, as the mount's errno
// mapping says of an error that is not the input's, and nothing is
// committed.
func TestCommitNowFailure(t *testing.T) {
	staging := t.TempDir()
	f := newFixture(t, writableOptions(staging))
	ctx := context.Background()
	in := f.path("robot", "ingest")
	names(t, in) // starts the stager, which makes its directories
	batches, _ := filepath.Glob(filepath.Join(staging, "robot-*", ".work-ingest", "batch"))
	if len(batches) != 1 {
		t.Fatalf("batch directories %v, want one", batches)
	}
	// A file where the batch directory goes. The stager makes the
	// directory again when it finds it missing, so the swap is retried
	// until the file wins.
	for try := 0; ; try++ {
		if err := os.RemoveAll(batches[0]); err != nil {
			t.Fatal(err)
		}
		fh, err := os.OpenFile(batches[0], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			fh.Close()
			break
		}
		if try == 100 {
			t.Fatalf("a file in place of %s: %v", batches[0], err)
		}
	}
	before, err := f.tbl.SnapshotIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	run(t, "cp", video("h264_faststart.mp4"), filepath.Join(in, "late.mp4"))
	if err := os.WriteFile(filepath.Join(in, "late.jsonl"), []byte(rowsFor("place", 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	err = os.WriteFile(filepath.Join(in, ".commit"), nil, 0o644)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("touch .commit with no batch directory: %v, want EIO", err)
	}
	if after, err := f.tbl.SnapshotIDs(ctx); err != nil || len(after) != len(before) {
		t.Fatalf("snapshots %v -> %v (%v): a commit happened", before, after, err)
	}
}

func TestIngestImageFolders(t *testing.T) {
	f := newWritableFixture(t)
	in := filepath.Join(f.mnt, "robot", "ingest")
	src := t.TempDir()
	tabletest.Lavfi(t, filepath.Join(src, "img%03d.png"), "testsrc=size=64x48:rate=5", 6)
	tabletest.Lavfi(t, filepath.Join(src, "small.png"), "testsrc=size=32x32:rate=5", 1)

	copyImages := func(folder string, extra ...string) {
		if err := os.Mkdir(filepath.Join(in, folder), 0o755); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(src, "img*.png"))
		run(t, "cp", append(append(files, extra...), filepath.Join(in, folder))...)
	}
	copyImages("frames")
	os.WriteFile(filepath.Join(in, "frames.jsonl"), []byte(rowsFor("pick", 6)), 0o644)
	copyImages("mixed", filepath.Join(src, "small.png"))
	os.WriteFile(filepath.Join(in, "mixed.jsonl"), []byte(rowsFor("pick", 7)), 0o644)
	notes := filepath.Join(src, "notes.txt")
	os.WriteFile(notes, []byte("x"), 0o644)
	copyImages("stray", notes)
	os.WriteFile(filepath.Join(in, "stray.jsonl"), []byte(rowsFor("pick", 6)), 0o644)

	run(t, "touch", filepath.Join(in, ".commit"))
	got := waitEpisodes(t, f.tbl, "frames")
	if got["frames"].Rows != 6 || got["frames"].Videos["video"].Frames != 6 {
		t.Fatalf("frames: %+v", got["frames"])
	}
	for name, want := range map[string]string{"mixed": "small.png", "stray": "notes.txt"} {
		msg, err := os.ReadFile(filepath.Join(in, name+".error"))
		if err != nil || !strings.Contains(string(msg), want) {
			t.Errorf("%s.error = %q (%v), want it to name %s", name, msg, err, want)
		}
		if _, ok := got[name]; ok {
			t.Errorf("%s committed", name)
		}
	}
}

func TestReplaceDirectory(t *testing.T) {
	f := newWritableFixture(t)
	rep := filepath.Join(f.mnt, "robot", "replace")
	run(t, "cp", video("h264_gop250.mp4"), filepath.Join(rep, "ep1.mp4"))
	waitFor(t, func() bool {
		head, err := f.tbl.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		e, err := f.tbl.Episode(context.Background(), head, "ep1")
		return err == nil && e.Videos["video"].SHA256 == sha(t, video("h264_gop250.mp4"))
	}, "ep1's video replaced")
	os.WriteFile(filepath.Join(rep, "ep1.jsonl"), []byte(rowsFor("pick", 12)), 0o644)
	waitFor(t, func() bool { return waitEpisodes(t, f.tbl, "ep1")["ep1"].Rows == 12 }, "ep1's rows updated")
	os.WriteFile(filepath.Join(rep, "nosuch.jsonl"), []byte(rowsFor("pick", 2)), 0o644)
	waitFor(t, func() bool {
		msg, _ := os.ReadFile(filepath.Join(rep, "nosuch.error"))
		return strings.Contains(string(msg), "ingest/")
	}, "nosuch.error")
	// ingest/ refuses to touch an existing episode.
	in := filepath.Join(f.mnt, "robot", "ingest")
	run(t, "cp", video("h264_faststart.mp4"), filepath.Join(in, "ep1.mp4"))
	os.WriteFile(filepath.Join(in, "ep1.jsonl"), []byte(rowsFor("pick", 2)), 0o644)
	run(t, "touch", filepath.Join(in, ".commit"))
	msg, _ := os.ReadFile(filepath.Join(in, "ep1.error"))
	if !strings.Contains(string(msg), "already") {
		t.Fatalf("ep1.error = %q", msg)
	}
	if waitEpisodes(t, f.tbl, "ep1")["ep1"].Rows != 12 {
		t.Fatal("ingest/ changed an existing episode")
	}
}

func TestTablesAndTagsFromTheMount(t *testing.T) {
	f := newWritableFixture(t)
	tags := filepath.Join(f.mnt, "robot", "tags")
	if err := os.Symlink("../snapshots/1", filepath.Join(tags, "v1")); err != nil {
		t.Fatal(err)
	}
	if tg, err := f.tbl.Tag(context.Background(), "v1"); err != nil || tg.Snapshot != 1 {
		t.Fatalf("tag v1: %+v %v", tg, err)
	}
	if target, err := os.Readlink(filepath.Join(tags, "v1")); err != nil || target != "../snapshots/1" {
		t.Fatalf("readlink: %q %v", target, err)
	}
	if err := os.Symlink("../snapshots/999", filepath.Join(tags, "bad")); err == nil {
		t.Fatal("a tag of a missing snapshot was created")
	}
	if err := os.WriteFile(filepath.Join(tags, "file"), nil, 0o644); err == nil {
		t.Fatal("tags/ took a regular file")
	}
	if err := os.Remove(filepath.Join(tags, "v1")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.tbl.Tag(context.Background(), "v1"); err == nil {
		t.Fatal("tag v1 still exists")
	}

	// mkdir makes a table; its first sidecar gives its columns.
	if err := os.Mkdir(filepath.Join(f.mnt, "fresh"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(f.mnt, "fresh", "ingest")
	run(t, "cp", video("h264_faststart.mp4"), filepath.Join(in, "first.mp4"))
	os.WriteFile(filepath.Join(in, "first.jsonl"), []byte(`{"speed": 0.5, "label": "a"}`+"\n"), 0o644)
	run(t, "touch", filepath.Join(in, ".commit"))
	store, _ := storage.NewLocal(filepath.Join(f.wh, "fresh"))
	fresh, err := table.Open(context.Background(), store, tabletest.Options())
	if err != nil {
		t.Fatal(err)
	}
	s, err := fresh.LatestSchema(context.Background())
	if err != nil || len(s.Columns) != 2 {
		t.Fatalf("schema %+v %v", s, err)
	}
	if _, err := os.Stat(filepath.Join(f.mnt, "fresh", "latest", "first", "000000.jpg")); err != nil {
		t.Fatal(err)
	}
}

func TestReadOnlyMountHasNoWriteDirectories(t *testing.T) {
	opts := writableOptions(t.TempDir())
	opts.ReadOnly = true
	f := newFixture(t, opts)
	if _, err := os.Stat(filepath.Join(f.mnt, "robot", "ingest")); !os.IsNotExist(err) {
		t.Fatalf("ingest/ on a read-only mount: %v", err)
	}
	if err := os.Mkdir(filepath.Join(f.mnt, "new"), 0o755); err == nil {
		t.Fatal("mkdir on a read-only mount")
	}
}
