package fusefs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// Readers while gc removes the stored video they read. The decoder keeps
// nothing between reads (no image or picture cache, no read-ahead, one
// session shared with another episode's reads), so every read of a frame
// goes back to the stored video; each read is its whole frame or ENOENT
// or EIO, never other bytes, and the daemon serves on.

// Frame server settings that make every frame read go to storage.
var uncachedFrames = serving.Options{MaxOpenSessions: 1, MaxSessionsPerVideo: 1, PictureCacheBytes: -1, CacheBytes: -1, Readahead: -1}

// decodeAll decodes the first n frames of a video file on local disk, as
// the mount serves them.
func decodeAll(t *testing.T, path string, n int, setting media.ImageSetting) [][]byte {
	t.Helper()
	ctx := context.Background()
	frames := serving.New(decoder.Codec{}, serving.Options{CacheBytes: -1})
	defer frames.Close()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	st, _ := fh.Stat()
	ix, err := decoder.IndexVideo(ctx, fh, st.Size(), videoidx.BestStream)
	if err != nil {
		t.Fatal(err)
	}
	dv := media.Video{Key: media.VideoKey{Object: "reference/" + path, Length: st.Size()}, R: fh, Size: st.Size(), Index: ix}
	out := make([][]byte, n)
	for i := range out {
		if out[i], err = frames.Frame(ctx, dv, i, setting); err != nil {
			t.Fatalf("%s frame %d: %v", path, i, err)
		}
	}
	return out
}

// readFrameAt reads a frame file through an open directory, as cp -r,
// rsync and find do, and drops its pages from the page cache so that the
// next read of it reaches the mount again.
func readFrameAt(dir *os.File, name string) ([]byte, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	data, err := io.ReadAll(f)
	unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
	return data, err
}

// readOutcome sorts a read: the frame, a clean error, or a failure.
func readOutcome(got []byte, err error, want []byte) (ok, clean bool) {
	switch {
	case err == nil:
		return bytes.Equal(got, want), false
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.EIO):
		return false, true
	}
	return false, false
}

type gcCounts struct {
	before, after, afterErrors, unreadErrors, unreadOK atomic.Int64
}

// gcUnderReaders: episode doomed is read by 4 readers (alternating with
// ep1, which stays live) while its snapshot is expired and gc removes its
// video; episode unread, never read before, is read after the gc.
// writer commits to the table the mount serves.
func gcUnderReaders(t *testing.T, f *fixture, writer *table.Table, setting media.ImageSetting, ext string) *gcCounts {
	ctx := context.Background()
	if _, err := writer.AddEpisodes(ctx, []table.EpisodeInput{
		{Videos: map[string]table.VideoFile{"": {Path: video("h264_gop250.mp4")}}, Sidecar: sidecar(t, "doomed", "pick", 300)},
	}, table.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	snap, err := writer.AddEpisodes(ctx, []table.EpisodeInput{
		{Videos: map[string]table.VideoFile{"": {Path: video("h264_vfr.mp4")}}, Sidecar: sidecar(t, "unread", "pick", 60)},
	}, table.AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	packs := map[string]bool{}
	for _, ep := range []string{"doomed", "unread"} {
		e, err := writer.Episode(ctx, snap, ep)
		if err != nil {
			t.Fatal(err)
		}
		packs[e.Videos["video"].Pack] = true
		if _, err := writer.DeleteEpisode(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	doomedRef := decodeAll(t, video("h264_gop250.mp4"), 300, setting)
	unreadRef := decodeAll(t, video("h264_vfr.mp4"), 60, setting)
	ep1Ref := decodeAll(t, video("h264_bframes_gop30.mp4"), 40, setting)

	base := f.path("robot", "snapshots", "3", "task=pick")
	waitFor(t, func() bool { _, err := os.Stat(base); return err == nil }, "snapshot 3 in the mount")
	dirs := map[string]*os.File{}
	for _, ep := range []string{"doomed", "unread", "ep1"} {
		d, err := os.Open(filepath.Join(base, ep))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		dirs[ep] = d
	}

	var counts gcCounts
	var expiring, collected atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 19))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := rng.IntN(300)
				after := collected.Load() // the video was gone before this read
				got, err := readFrameAt(dirs["doomed"], mounttree.FrameName(int64(i), 300, ext))
				ok, clean := readOutcome(got, err, doomedRef[i])
				switch {
				case ok && after:
					counts.after.Add(1)
				case ok:
					counts.before.Add(1)
				case clean && expiring.Load():
					counts.afterErrors.Add(1)
				default:
					t.Errorf("doomed frame %d (expire started: %v): %d bytes, %v; want the frame (%d bytes), or ENOENT/EIO once it is expired",
						i, expiring.Load(), len(got), err, len(doomedRef[i]))
					return
				}
				j := rng.IntN(40)
				got, err = readFrameAt(dirs["ep1"], mounttree.FrameName(int64(j), 40, ext))
				if err != nil || !bytes.Equal(got, ep1Ref[j]) {
					t.Errorf("ep1 frame %d, which stays live: %d bytes, %v", j, len(got), err)
					return
				}
			}
		}(uint64(r))
	}
	waitFor(t, func() bool { return counts.before.Load() >= 20 }, "reads before the gc")
	expiring.Store(true)
	if _, err := writer.Expire(ctx, table.ExpireOptions{KeepLast: 1}); err != nil {
		t.Fatal(err)
	}
	rep, err := writer.GC(ctx, table.GCOptions{Grace: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	removed := map[string]bool{}
	for _, key := range rep.Removed {
		removed[key] = true
	}
	for pack := range packs {
		if !removed[pack] {
			t.Fatalf("gc kept %s; removed %v", pack, rep.Removed)
		}
	}
	collected.Store(true)
	for i := 0; i < 60; i++ {
		got, err := readFrameAt(dirs["unread"], mounttree.FrameName(int64(i), 60, ext))
		switch ok, clean := readOutcome(got, err, unreadRef[i]); {
		case ok:
			counts.unreadOK.Add(1)
		case clean:
			counts.unreadErrors.Add(1)
		default:
			t.Errorf("unread frame %d after the gc: %d bytes, %v", i, len(got), err)
		}
	}
	time.Sleep(time.Second)
	waitFor(t, func() bool { return counts.after.Load()+counts.afterErrors.Load() >= 20 }, "reads after the gc")
	close(stop)
	wg.Wait()

	// The daemon serves on.
	got, err := os.ReadFile(f.path("robot", "latest", "task=pick", "ep1", mounttree.FrameName(7, 40, ext)))
	if err != nil || !bytes.Equal(got, ep1Ref[7]) {
		t.Fatalf("a live frame after the gc: %d bytes, %v", len(got), err)
	}
	if _, err := os.ReadFile(f.path(".stats")); err != nil {
		t.Fatal(err)
	}
	t.Logf("doomed: %d frames read before the gc, %d after, %d clean errors after; unread after the gc: %d frames, %d clean errors; gc removed %d objects",
		counts.before.Load(), counts.after.Load(), counts.afterErrors.Load(), counts.unreadOK.Load(), counts.unreadErrors.Load(), len(rep.Removed))
	if counts.unreadOK.Load() > 0 {
		t.Errorf("%d frames of a video removed before it was ever opened were served", counts.unreadOK.Load())
	}
	return &counts
}

func TestGCUnderReaders(t *testing.T) {
	requireFUSE(t)
	f := &fixture{wh: t.TempDir(), mnt: filepath.Join(t.TempDir(), "mnt")}
	os.MkdirAll(f.mnt, 0o755)
	f.tbl = robotTable(t, f.wh)
	f.frames = serving.New(decoder.Codec{}, uncachedFrames)
	f.mount(t, dirWarehouse(t, f.wh), Options{ReadOnly: true})
	counts := gcUnderReaders(t, f, f.tbl, media.ImageSetting{Format: media.FormatJPEG, JPEGQuality: 90}, "jpg")
	// A local video the mount opened before the gc stays readable: the
	// open file outlives its name.
	if counts.after.Load() == 0 {
		t.Error("no frame of the removed video read after the gc, though the mount had it open")
	}
}

func TestS3GCUnderReaders(t *testing.T) {
	f := newS3Fixture(t, Options{ReadOnly: true}, uncachedFrames, func(o *storage.S3Options) {
		o.CacheDir = "" // every read is a GET
	})
	counts := gcUnderReaders(t, &f.fixture, f.tbl, media.ImageSetting{Format: media.FormatJPEG, JPEGQuality: 90}, "jpg")
	if counts.afterErrors.Load() == 0 {
		t.Error("no read of the removed object failed: the test did not reach S3 after the gc")
	}
}
