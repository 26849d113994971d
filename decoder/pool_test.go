package decoder

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
)

// TestSessionContinues: a request for the next frame, or a later frame of
// the same GOP, decodes on; an earlier frame or another GOP seeks.
func TestSessionContinues(t *testing.T) {
	t.Parallel()
	v := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	pool := newTestPool(serving.Options{MaxSessionsPerVideo: 1})
	defer pool.Close()
	ctx := context.Background()
	steps := []struct {
		frame     int
		wantSeeks int // total so far
	}{
		{0, 0},  // a new session starts at the first packet
		{1, 0},  // next frame
		{2, 0},  // next frame
		{10, 0}, // later in the same GOP
		{29, 0}, // last of the GOP
		{30, 0}, // the next keyframe is the next packet
		{31, 0},
		{12, 1}, // back: seek
		{13, 1},
		{75, 2}, // two GOPs ahead: seek rather than decode them
		{76, 2},
	}
	for _, st := range steps {
		if _, err := pool.Frame(ctx, v, st.frame, media.ImageSetting{Format: media.FormatBMP}); err != nil {
			t.Fatalf("frame %d: %v", st.frame, err)
		}
		if got := pool.PoolStats().Seeks; got != st.wantSeeks {
			t.Errorf("after frame %d: %d seeks, want %d", st.frame, got, st.wantSeeks)
		}
	}
	if st := pool.PoolStats(); st.Opened != 1 || st.Open != 1 || st.Idle != 1 {
		t.Errorf("stats %+v: want one open idle session", st)
	}
}

// TestPoolLimits runs concurrent readers and checks that no more sessions
// than allowed are ever open, per video and in total, and that idle
// sessions of other videos are evicted to make room.
func TestPoolLimits(t *testing.T) {
	t.Parallel()
	a := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	b := openVideo(t, "../testdata/video/hevc.mp4", 0)
	c := openVideo(t, "../testdata/video/mpeg4_part2.mp4", 0)
	pool := newTestPool(serving.Options{MaxOpenSessions: 3, MaxSessionsPerVideo: 2})
	defer pool.Close()
	ctx := context.Background()
	want := map[string][]byte{}
	for _, v := range []media.Video{a, b, c} {
		img, err := pool.Frame(ctx, v, 20, media.ImageSetting{Format: media.FormatPPM})
		if err != nil {
			t.Fatal(err)
		}
		want[v.Key.Object] = img
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			peak.Store(max(peak.Load(), int64(pool.PoolStats().Open)))
			time.Sleep(50 * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := []media.Video{a, b, c}[g%3]
			for k := range 8 {
				i := (g*7 + k*13) % 50
				img, err := pool.Frame(ctx, v, i, media.ImageSetting{Format: media.FormatPPM})
				if err != nil {
					t.Errorf("%s frame %d: %v", v.Key.Object, i, err)
					return
				}
				if i == 20 && !bytes.Equal(img, want[v.Key.Object]) {
					t.Errorf("%s frame 20 differs under concurrency", v.Key.Object)
				}
			}
		}()
	}
	wg.Wait()
	// Whether the concurrent readers needed evictions depends on
	// scheduling; a fourth video with every session idle always does.
	d := openVideo(t, "../testdata/video/h264_gop250.mp4", 0)
	if _, err := pool.Frame(ctx, d, 3, media.ImageSetting{Format: media.FormatPPM}); err != nil {
		t.Fatal(err)
	}
	close(stop)
	sampler.Wait()
	st := pool.PoolStats()
	if peak.Load() > 3 || st.Open > 3 {
		t.Errorf("peak %d open sessions, now %d; limit 3", peak.Load(), st.Open)
	}
	if st.Evicted == 0 {
		t.Errorf("no eviction when a fourth video needed a session: %+v", st)
	}
	pool.Close()
	if st := pool.PoolStats(); st.Open != 0 {
		t.Errorf("%d sessions open after Close", st.Open)
	}
	if _, err := pool.Frame(ctx, a, 1, media.ImageSetting{}); !errors.Is(err, serving.ErrClosed) {
		t.Errorf("Frame after Close: %v, want serving.ErrClosed", err)
	}
}

// TestPoolPerVideoLimit: readers of one video beyond the per-video limit
// wait for a session instead of opening more.
func TestPoolPerVideoLimit(t *testing.T) {
	t.Parallel()
	v := openVideo(t, "../testdata/video/h264_gop250.mp4", 0)
	pool := newTestPool(serving.Options{MaxSessionsPerVideo: 2, MaxOpenSessions: 8})
	defer pool.Close()
	var wg sync.WaitGroup
	for g := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 4 {
				if _, err := pool.Frame(context.Background(), v, 240-g*11-k*29, media.ImageSetting{Format: media.FormatBMP}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if st := pool.PoolStats(); st.Opened > 2 {
		t.Errorf("opened %d sessions of one video, limit 2", st.Opened)
	}
}

// TestRandomReaderDrains: the second request in a row that no position
// could reach by decoding on drains; a request that follows on from a
// drained one seeks once, does not drain, and the reader continues from
// there.
func TestRandomReaderDrains(t *testing.T) {
	t.Parallel()
	v := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	ctx := context.Background()
	s, err := openSession(ctx, v, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Bind(ctx, v.R)
	steps := []struct {
		frame     int
		wantDrain bool
		wantSeeks int // total so far
	}{
		{40, false, 1}, // first seek: may be the start of a sequential reader
		{41, false, 1}, // continues
		{75, false, 2}, // seeks after a continuation
		{46, true, 3},  // second far request in a row: drains
		{47, false, 4}, // the drained session seeks, but the reader reads on
		{48, false, 4}, // continues
		{49, false, 4},
		{3, false, 5},   // far after a continuation
		{80, true, 6},   // second far request
		{12, true, 7},   // and the third, but it comes out without a flush
		{13, false, 7},  // so the session continues
		{46, false, 8},  // far after a continuation
		{3, true, 9},    // second far request
		{47, true, 10},  // third, flushed after its packet
		{48, false, 11}, // near the drained one: one seek
		{49, false, 11}, // continues
	}
	for _, st := range steps {
		if _, err := sessionImage(ctx, s, st.frame, media.ImageSetting{Format: media.FormatBMP}); err != nil {
			t.Fatalf("frame %d: %v", st.frame, err)
		}
		if s.draining != st.wantDrain || s.seeks != st.wantSeeks {
			t.Errorf("frame %d: drain %v after %d seeks, want %v after %d", st.frame, s.draining, s.seeks, st.wantDrain, st.wantSeeks)
		}
	}
	if s.drains == 0 {
		t.Error("no request drained the decoder")
	}
	// After random requests, a reader that says it reads on does not
	// drain its first (far) request.
	for _, f := range []int{3, 75} {
		if _, err := sessionImage(ctx, s, f, media.ImageSetting{Format: media.FormatBMP}); err != nil {
			t.Fatal(err)
		}
	}
	s.ReadOn()
	if _, err := sessionImage(ctx, s, 47, media.ImageSetting{Format: media.FormatBMP}); err != nil {
		t.Fatal(err)
	}
	if s.draining {
		t.Error("a request after readOn drained")
	}
}

// TestPassedPicturesServeLaterRequests: a random reader's requests keep
// the pictures they decode on the way; a later request for one of them is
// rendered from it, without decoding, to the same bytes as sequential
// decoding. The kept pictures stay within their bound and go with Close.
func TestPassedPicturesServeLaterRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, name := range []string{"h264_bframes_gop30.mp4", "h264_gop250.mp4"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fx := fixture{name: name, path: "../testdata/video/" + name}
			want := sequentialHashes(t, fx)
			v := openVideo(t, fx.path, 0)
			const limit = 1 << 20 // a few dozen 160x120 pictures: evictions happen
			pool := newTestPool(serving.Options{MaxSessionsPerVideo: 1, PictureCacheBytes: limit})
			defer pool.Close()
			for _, i := range shuffled(v.Index.Frames(), v.Index.Frames(), 7) {
				before := pool.PoolStats()
				b, err := pool.Frame(ctx, v, i, media.ImageSetting{Format: media.FormatPPM})
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if sha256.Sum256(b) != want[i] {
					t.Fatalf("frame %d differs from sequential decoding", i)
				}
				after := pool.PoolStats()
				if after.PictureHits > before.PictureHits && (after.Decoded != before.Decoded || after.Seeks != before.Seeks) {
					t.Fatalf("frame %d came from a kept picture but %d frames were decoded", i, after.Decoded-before.Decoded)
				}
				if after.PictureBytes > limit {
					t.Fatalf("kept pictures hold %d bytes, limit %d", after.PictureBytes, limit)
				}
			}
			st := pool.PoolStats()
			t.Logf("%+v", st)
			if st.PictureHits == 0 || st.PicturesKept <= st.PictureHits {
				t.Errorf("stats %+v: want requests served from kept pictures", st)
			}
			pool.Close()
			if st := pool.PoolStats(); st.PictureBytes != 0 {
				t.Errorf("after Close, kept pictures hold %d bytes", st.PictureBytes)
			}
		})
	}
}
