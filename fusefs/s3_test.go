package fusefs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/cache/blockcache"
	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// The mount's functional suite on an S3 warehouse: a real versitygw on
// loopback (internal/s3test), a fault-injecting proxy between it and the
// mount, and the mount's own S3 store with its block cache, as
// `framefs mount s3://...` builds them.

// s3Fixture is table "robot" (as robotTable makes it) in an S3 warehouse,
// mounted at mnt through a fault proxy.
type s3Fixture struct {
	fixture
	gw    *s3test.Server
	proxy *s3test.FaultProxy
	store *storage.S3 // the mount's store (through the proxy)
}

// s3RobotTable creates table "robot" under the warehouse store: the
// schema and episodes of robotTable.
func s3RobotTable(t *testing.T, wh storage.Store) *table.Table {
	t.Helper()
	store, err := storage.Sub(wh, "robot")
	if err != nil {
		t.Fatal(err)
	}
	return robotTableIn(t, store)
}

// newS3Fixture starts versitygw and a fault proxy (no faults yet), makes
// the table and mounts the warehouse. tweak adjusts the mount's store
// options (the block cache is on unless tweak turns it off).
func newS3Fixture(t *testing.T, opts Options, frameOpts serving.Options, tweak func(*storage.S3Options)) *s3Fixture {
	requireFUSE(t)
	f := &s3Fixture{gw: s3test.Start(t)}
	f.proxy = s3test.StartFaultProxy(t, f.gw.Endpoint, s3test.Faults{}, 1)
	f.wh = f.gw.URI("warehouse")
	f.mnt = filepath.Join(t.TempDir(), "mnt")
	os.MkdirAll(f.mnt, 0o755)
	// The table is written and checked over a direct connection, so that
	// faults only ever hit the mount.
	f.tbl = s3RobotTable(t, f.gw.Open(t, "warehouse", nil))

	cacheDir := t.TempDir()
	f.store = f.gw.Open(t, "warehouse", func(o *storage.S3Options) {
		o.Endpoint = f.proxy.Endpoint
		o.CacheDir = cacheDir
		if tweak != nil {
			tweak(o)
		}
	})
	f.frames = serving.New(decoder.Codec{}, frameOpts)
	// Background prefetches must end before the cache directory goes
	// (cleanups run last first: this one after the unmount).
	t.Cleanup(func() {
		if c, err := blockcache.Shared(blockcache.Options{Dir: cacheDir}); err == nil {
			c.Wait()
		}
	})
	f.mount(t, table.NewWarehouse(f.store, tableOptions()), opts)
	return f
}

// referenceFrames decodes every frame of the fixture's episodes from the
// source videos on local disk (not through S3), as the mount serves them:
// path under a snapshot -> image bytes.
func referenceFrames(t *testing.T, frames *serving.Server, setting media.ImageSetting, ext string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	for _, ep := range []struct {
		dir, file   string
		first, rows int64
	}{
		{"task=pick/ep1", "h264_bframes_gop30.mp4", 0, 40},
		{"task=place/ep2", "hevc.mp4", 5, 30},
	} {
		fh, err := os.Open(video(ep.file))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := fh.Stat()
		ix, err := decoder.IndexVideo(ctx, fh, st.Size(), videoidx.BestStream)
		if err != nil {
			t.Fatal(err)
		}
		dv := media.Video{Key: media.VideoKey{Object: "reference/" + ep.file, Length: st.Size()}, R: fh, Size: st.Size(), Index: ix}
		for i := int64(0); i < ep.rows; i++ {
			img, err := frames.Frame(ctx, dv, int(ep.first+i), setting)
			if err != nil {
				t.Fatalf("%s frame %d: %v", ep.file, ep.first+i, err)
			}
			out[filepath.Join(ep.dir, mounttree.FrameName(i, ep.rows, ext))] = img
		}
		fh.Close()
	}
	return out
}

func runOut(t *testing.T, name string, args ...string) string {
	t.Helper()
	b, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, b)
	}
	return string(b)
}

// TestS3Mount runs the mount's functional checks on one S3-backed mount,
// in order: reads and the tools people use, refused writes, a commit from
// elsewhere, an ingest through the mount.
func TestS3Mount(t *testing.T) {
	f := newS3Fixture(t, writableOptions(t.TempDir()), serving.Options{CacheBytes: 16 << 20}, nil)
	ctx := context.Background()
	snap := f.path("robot", "snapshots", "1")
	ref := referenceFrames(t, f.frames, media.ImageSetting{Format: media.FormatJPEG, JPEGQuality: 90}, "jpg")

	t.Run("Layout", func(t *testing.T) {
		if got := strings.Join(names(t, f.mnt), " "); got != ".stats robot" {
			t.Errorf("root: %s", got)
		}
		if got := strings.Join(names(t, f.path("robot")), " "); got != "ingest latest replace snapshots tags views" {
			t.Errorf("table: %s", got)
		}
		if target, err := os.Readlink(f.path("robot", "latest")); err != nil || target != "snapshots/1" {
			t.Errorf("latest -> %q %v", target, err)
		}
		ls := runOut(t, "ls", "-l", filepath.Join(snap, "task=pick", "ep1"))
		if n := strings.Count(ls, ".jpg\n"); n != 40 {
			t.Errorf("ls -l: %d frames, want 40:\n%s", n, ls)
		}
	})

	t.Run("View", func(t *testing.T) {
		// A view made from a shell, over the S3 table: its frames are the
		// decoder's, stat sizes exact.
		if err := os.WriteFile(f.path("robot", "views", "late.where"), []byte("t >= 25\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := f.path("robot", "views", "late", "task=pick", "ep1")
		got := frameNames(t, dir)
		if len(got) != 15 || got[0] != "000025.jpg" {
			t.Fatalf("views/late/task=pick/ep1: %v", got)
		}
		for _, name := range got {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || !bytes.Equal(data, ref[filepath.Join("task=pick", "ep1", name)]) {
				t.Fatalf("%s of the view differs from the decoder's (%v)", name, err)
			}
		}
		if err := os.Remove(f.path("robot", "views", "late")); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("FramesMatchDecoder", func(t *testing.T) {
		for rel, want := range ref {
			name := filepath.Join(snap, rel)
			st, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(got)) != st.Size() || !bytes.Equal(got, want) {
				t.Fatalf("%s: %d bytes (stat %d), decoder gives %d bytes, equal=%v", rel, len(got), st.Size(), len(want), bytes.Equal(got, want))
			}
		}
		// cmp, as a user would check a frame.
		want := filepath.Join(t.TempDir(), "want.jpg")
		rel := filepath.Join("task=place", "ep2", "000017.jpg")
		os.WriteFile(want, ref[rel], 0o644)
		runOut(t, "cmp", filepath.Join(snap, rel), want)
		if st := f.store.Stats(); st.GETs == 0 || st.Cache.Misses == 0 {
			t.Errorf("frames were not read from S3: %+v", st)
		}
	})

	t.Run("StoredVideo", func(t *testing.T) {
		// The stored video, read by ranges through the block cache.
		runOut(t, "cmp", filepath.Join(snap, "task=pick", "ep1", "video.mp4"), video("h264_bframes_gop30.mp4"))
		if n, m := ffprobeFrames(t, filepath.Join(snap, "task=place", "ep2", "video.mp4")), ffprobeFrames(t, video("hevc.mp4")); n != m {
			t.Errorf("ffprobe decodes %s frames from the mounted video, %s from the source", n, m)
		}
		if _, err := os.OpenFile(filepath.Join(snap, "task=pick", "ep1", "video.mp4"), os.O_WRONLY, 0); !errors.Is(err, syscall.EROFS) {
			t.Errorf("open the stored video for writing: %v, want EROFS", err)
		}
	})

	t.Run("Clients", func(t *testing.T) {
		out := t.TempDir()
		if n := strings.Count(runOut(t, "find", snap, "-name", "*.jpg"), "\n"); n != 70 {
			t.Errorf("find: %d frames, want 70", n)
		}
		runOut(t, "cp", "-r", snap, filepath.Join(out, "cp"))
		runOut(t, "rsync", "-a", snap+"/", filepath.Join(out, "rsync"))
		runOut(t, "tar", "cf", filepath.Join(out, "snap.tar"), "-C", snap, ".")
		os.Mkdir(filepath.Join(out, "tar"), 0o755)
		runOut(t, "tar", "xf", filepath.Join(out, "snap.tar"), "-C", filepath.Join(out, "tar"))
		for _, copy := range []string{"cp", "rsync", "tar"} {
			runOut(t, "diff", "-r", snap, filepath.Join(out, copy))
			for rel, want := range ref {
				got, err := os.ReadFile(filepath.Join(out, copy, rel))
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s copy of %s: %d bytes, %v; not the decoder's frame", copy, rel, len(got), err)
				}
			}
		}
		sizes := runOut(t, "find", snap, "-type", "f", "-printf", "%s\n")
		copied := runOut(t, "find", filepath.Join(out, "cp"), "-type", "f", "-printf", "%s\n")
		if sum(sizes) != sum(copied) || sum(sizes) == 0 {
			t.Errorf("file sizes: mount %d bytes, copy %d bytes", sum(sizes), sum(copied))
		}
	})

	t.Run("Xattrs", func(t *testing.T) {
		got := runOut(t, "getfattr", "-d", filepath.Join(snap, "task=place", "ep2", "000007.jpg"))
		for _, want := range []string{`user.episode_id="ep2"`, `user.t="7"`, `user.task="place"`, `user.state="[7,1.5]"`} {
			if !strings.Contains(got, want) {
				t.Errorf("getfattr -d lacks %s:\n%s", want, got)
			}
		}
	})

	t.Run("ReadOnlySnapshots", func(t *testing.T) {
		frame := filepath.Join(snap, "task=pick", "ep1", "000003.jpg")
		dir := filepath.Dir(frame)
		for op, err := range map[string]error{
			"create":   os.WriteFile(filepath.Join(dir, "new.jpg"), []byte("x"), 0o644),
			"write":    os.WriteFile(frame, []byte("x"), 0o644),
			"truncate": os.Truncate(frame, 0),
			"unlink":   os.Remove(frame),
			"rename":   os.Rename(frame, filepath.Join(dir, "x.jpg")),
			"mkdir":    os.Mkdir(filepath.Join(dir, "d"), 0o755),
			"setxattr": syscall.Setxattr(frame, "user.x", []byte("1"), 0),
			"latest":   os.WriteFile(f.path("robot", "latest", "task=pick", "x.jpg"), nil, 0o644),
		} {
			if !errors.Is(err, syscall.EROFS) {
				t.Errorf("%s: %v, want EROFS", op, err)
			}
		}
		if got, _ := os.ReadFile(frame); !bytes.Equal(got, ref[filepath.Join("task=pick", "ep1", "000003.jpg")]) {
			t.Error("a refused write changed the frame")
		}
	})

	t.Run("CommitWhileMounted", func(t *testing.T) {
		if _, err := f.tbl.AddEpisodes(ctx, []table.EpisodeInput{
			{Videos: map[string]table.VideoFile{"": {Path: video("h264_gop250.mp4")}}, Sidecar: sidecar(t, "ep3", "pick", 20)},
		}, table.AddOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			target, _ := os.Readlink(f.path("robot", "latest"))
			return target == "snapshots/2"
		}, "latest -> snapshots/2")
		data, err := os.ReadFile(f.path("robot", "latest", "task=pick", "ep3", "000019.jpg"))
		if err != nil || !bytes.HasPrefix(data, []byte{0xff, 0xd8}) {
			t.Fatalf("new episode's frame: %d bytes, %v", len(data), err)
		}
	})

	t.Run("IngestThroughMount", func(t *testing.T) {
		in := f.path("robot", "ingest")
		src := t.TempDir()
		data, err := os.ReadFile(video("h264_faststart.mp4"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(src, "dropped.mp4"), data, 0o644)
		os.WriteFile(filepath.Join(src, "dropped.jsonl"), []byte(rowsFor("pick", 5)), 0o644)
		runOut(t, "cp", filepath.Join(src, "dropped.mp4"), filepath.Join(src, "dropped.jsonl"), in)
		runOut(t, "touch", filepath.Join(in, ".commit"))
		got := waitEpisodes(t, f.tbl, "dropped")
		if got["dropped"].Videos["video"].SHA256 != sha(t, video("h264_faststart.mp4")) || got["dropped"].Rows != 5 {
			t.Errorf("stored episode: %+v", got["dropped"])
		}
		waitFor(t, func() bool {
			_, err := os.Stat(f.path("robot", "latest", "task=pick", "dropped", "000004.jpg"))
			return err == nil
		}, "dropped under latest/")
		frame, err := os.ReadFile(f.path("robot", "latest", "task=pick", "dropped", "000004.jpg"))
		if err != nil || !bytes.HasPrefix(frame, []byte{0xff, 0xd8}) {
			t.Fatalf("ingested frame: %d bytes, %v", len(frame), err)
		}
	})
}

// TestS3MountFaults reads every frame while the proxy breaks requests:
// each read gives the decoder's bytes or EIO, never other bytes, and once
// the faults stop every frame reads right (nothing bad was cached).
func TestS3MountFaults(t *testing.T) {
	// BMP: sizes follow from the picture size, so stat needs no decoding
	// and the reads are what meets the faults. No block cache, no image
	// cache or read-ahead, one decoder session (the test videos fit in
	// its input buffer; frames are read alternately from the two episodes
	// so each read opens the video again) and few attempts per request:
	// every read of a frame reads its video from S3 and faults reach it.
	bmp := ImageChoice{ImageOptions: table.ImageOptions{Format: "bmp"}}
	frameOpts := serving.Options{MaxOpenSessions: 1, MaxSessionsPerVideo: 1, CacheBytes: -1, Readahead: -1}
	f := newS3Fixture(t, Options{Image: bmp, ReadOnly: true}, frameOpts, func(o *storage.S3Options) {
		o.CacheDir = ""
		o.MaxAttempts = 2
		o.MaxBackoff = 20 * time.Millisecond
	})
	snap := f.path("robot", "snapshots", "1")
	ref := referenceFrames(t, f.frames, media.ImageSetting{Format: media.FormatBMP}, "bmp")
	// Listing the episodes before the faults start leaves the reads.
	for _, dir := range []string{"task=pick/ep1", "task=place/ep2"} {
		names(t, filepath.Join(snap, dir))
	}
	f.proxy.SetFaults(s3test.Faults{Error: 0.25, DropBefore: 0.1, DropAfter: 0.1, Truncate: 0.25})
	var order []string // ep1 and ep2 frames alternately
	for i := 0; i < 40; i++ {
		order = append(order, filepath.Join("task=pick", "ep1", mounttree.FrameName(int64(i), 40, "bmp")))
		if i < 30 {
			order = append(order, filepath.Join("task=place", "ep2", mounttree.FrameName(int64(i), 30, "bmp")))
		}
	}
	var ok, eio int
	for _, rel := range order {
		want := ref[rel]
		got, err := os.ReadFile(filepath.Join(snap, rel))
		switch {
		case err == nil && bytes.Equal(got, want):
			ok++
		case err == nil:
			t.Fatalf("%s: wrong bytes under faults (%d bytes, want %d)", rel, len(got), len(want))
		case errors.Is(err, syscall.EIO):
			eio++
		default:
			t.Fatalf("%s: %v, want the frame or EIO", rel, err)
		}
	}
	t.Logf("under faults: %d frames read, %d EIO; proxy: %d requests, %d errors, %d drops, %d truncations",
		ok, eio, f.proxy.Requests.Load(), f.proxy.Errors.Load(), f.proxy.Drops.Load(), f.proxy.Truncations.Load())
	if f.proxy.Errors.Load()+f.proxy.Drops.Load()+f.proxy.Truncations.Load() == 0 {
		t.Fatal("no fault was injected")
	}
	if ok == 0 {
		t.Fatal("no frame could be read while faults were injected")
	}
	f.proxy.SetFaults(s3test.Faults{})
	for rel, want := range ref {
		got, err := os.ReadFile(filepath.Join(snap, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after the faults: %d bytes, %v", rel, len(got), err)
		}
	}
	if got, err := os.ReadFile(f.path(".stats")); err != nil || len(got) == 0 {
		t.Fatalf(".stats after the faults: %v", err)
	}
}
