package serving

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framefs/framefs/media"
)

var bmp = media.ImageSetting{Format: media.FormatBMP}

// uncached are options under which every Frame call decodes (or takes a
// kept picture): no image cache, no read-ahead, no fills.
func uncached(o Options) Options {
	o.CacheBytes, o.Readahead, o.NoFill = -1, -1, true
	return o
}

// TestPoolContinues: a request for a later frame of the GOP a session
// stands in decodes on from there; an earlier frame or another GOP seeks.
func TestPoolContinues(t *testing.T) {
	c := &countingCodec{}
	srv := New(c, uncached(Options{MaxSessionsPerVideo: 1}))
	defer srv.Close()
	v := countingVideo(t, "v", 120, 30)
	for _, st := range []struct{ frame, seeks, decoded int }{
		{0, 1, 1}, {1, 1, 2}, {10, 1, 11}, {29, 1, 30}, {30, 1, 31},
		{12, 2, 44}, // back: from the keyframe at 0
		{75, 3, 60}, // another GOP: from its keyframe at 60
	} {
		if _, err := srv.Frame(context.Background(), v, st.frame, bmp); err != nil {
			t.Fatal(err)
		}
		if s, d := c.seeks.Load(), c.decoded.Load(); s != int64(st.seeks) || d != int64(st.decoded) {
			t.Errorf("after frame %d: %d seeks, %d decoded; want %d, %d", st.frame, s, d, st.seeks, st.decoded)
		}
	}
	if ps := srv.PoolStats(); ps.Opened != 1 || ps.Open != 1 || ps.Idle != 1 || ps.Decoded != 60 {
		t.Errorf("pool %+v: want one idle session that decoded 60 pictures", ps)
	}
}

// TestPoolCountersNeverGoDown: the frames decoded, a Prometheus counter,
// stay counted while the session that decoded them is at work again.
func TestPoolCountersNeverGoDown(t *testing.T) {
	c := &countingCodec{}
	srv := New(c, uncached(Options{MaxSessionsPerVideo: 1}))
	defer srv.Close()
	v := countingVideo(t, "v", 60, 30)
	ctx := context.Background()
	if _, err := srv.Frame(ctx, v, 9, bmp); err != nil {
		t.Fatal(err)
	}
	before := srv.PoolStats()
	err := srv.pool.with(ctx, v, 10, func(*session) error {
		if during := srv.PoolStats(); during.Decoded < before.Decoded || during.Seeks < before.Seeks {
			t.Errorf("with the session at work: %+v; before: %+v", during, before)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if after := srv.PoolStats(); after.Decoded != 10 || after.Seeks != 1 {
		t.Errorf("after: %+v; want 10 decoded, 1 seek", after)
	}
}

// TestPoolLimits: concurrent readers of several videos never hold more
// sessions than allowed, per video and in all, and idle sessions of other
// videos are evicted to make room.
func TestPoolLimits(t *testing.T) {
	c := &countingCodec{decodeDelay: 50 * time.Microsecond}
	srv := New(c, uncached(Options{MaxOpenSessions: 3, MaxSessionsPerVideo: 2}))
	defer srv.Close()
	videos := []media.Video{countingVideo(t, "a", 90, 30), countingVideo(t, "b", 90, 30), countingVideo(t, "c", 90, 30)}
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			peak.Store(max(peak.Load(), int64(srv.PoolStats().Open)))
			time.Sleep(20 * time.Microsecond)
		}
	})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			v := videos[g%3]
			for k := range 10 {
				i := (g*7 + k*13) % 90
				b, err := srv.Frame(context.Background(), v, i, bmp)
				if err != nil {
					t.Error(err)
					return
				}
				if string(b) != string(countingImage(v.Key, i, bmp)) {
					t.Errorf("%s frame %d: got the image of another frame", v.Key.Object, i)
				}
			}
		})
	}
	wg.Wait()
	// A fourth video while every session is idle always evicts one.
	if _, err := srv.Frame(context.Background(), countingVideo(t, "d", 30, 30), 3, bmp); err != nil {
		t.Fatal(err)
	}
	close(stop)
	sampler.Wait()
	st := srv.PoolStats()
	if peak.Load() > 3 || st.Open > 3 {
		t.Errorf("peak %d open sessions, now %d; limit 3", peak.Load(), st.Open)
	}
	if st.Evicted == 0 {
		t.Errorf("pool %+v: no eviction when a fourth video needed a session", st)
	}
	srv.Close()
	if st := srv.PoolStats(); st.Open != 0 {
		t.Errorf("%d sessions open after Close", st.Open)
	}
	if _, err := srv.Frame(context.Background(), videos[0], 1, bmp); !errors.Is(err, ErrClosed) {
		t.Errorf("Frame after Close: %v, want ErrClosed", err)
	}
}

// TestPoolPerVideoLimit: readers of one video beyond the per-video limit
// wait for a session instead of opening more.
func TestPoolPerVideoLimit(t *testing.T) {
	c := &countingCodec{decodeDelay: 20 * time.Microsecond}
	srv := New(c, uncached(Options{MaxSessionsPerVideo: 2, MaxOpenSessions: 8}))
	defer srv.Close()
	v := countingVideo(t, "v", 250, 250)
	var wg sync.WaitGroup
	for g := range 5 {
		wg.Go(func() {
			for k := range 4 {
				if _, err := srv.Frame(context.Background(), v, 240-g*11-k*29, bmp); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := c.opened.Load(); n > 2 {
		t.Errorf("opened %d sessions of one video, limit 2", n)
	}
}

// TestPoolContextCancel: a request waiting for a session gives up when its
// context ends; the session it waited for stays usable, and a request
// cancelled while decoding breaks only its own session.
func TestPoolContextCancel(t *testing.T) {
	c := &countingCodec{}
	srv := New(c, uncached(Options{MaxOpenSessions: 1}))
	defer srv.Close()
	v := countingVideo(t, "v", 90, 30)
	s, err := srv.pool.acquire(context.Background(), v, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := srv.Frame(ctx, v, 3, bmp); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting request: %v, want DeadlineExceeded", err)
	}
	srv.pool.release(s)
	if _, err := srv.Frame(context.Background(), v, 3, bmp); err != nil {
		t.Errorf("after release: %v", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := srv.Frame(cctx, v, 50, bmp); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: %v, want Canceled", err)
	}
	if _, err := srv.Frame(context.Background(), v, 50, bmp); err != nil {
		t.Errorf("after a cancelled request: %v", err)
	}
}

// TestDecodeErrorsBreakOneSession: a frame that cannot be decoded fails
// its own request with media.ErrFrameDecode; the session that met it is
// closed and the next request opens a new one.
func TestDecodeErrorsBreakOneSession(t *testing.T) {
	c := &countingCodec{failFrames: map[int]bool{40: true}}
	srv := New(c, uncached(Options{}))
	defer srv.Close()
	v := countingVideo(t, "v", 90, 30)
	if _, err := srv.Frame(context.Background(), v, 45, bmp); !errors.Is(err, media.ErrFrameDecode) {
		t.Fatalf("frame 45 after a damaged frame 40: %v, want ErrFrameDecode", err)
	}
	if _, err := srv.Frame(context.Background(), v, 20, bmp); err != nil {
		t.Fatalf("frame 20 of another GOP: %v", err)
	}
	if ps := srv.PoolStats(); ps.Broken != 1 || c.opened.Load() != 2 {
		t.Errorf("pool %+v, %d opened: want the broken session closed and a new one opened", ps, c.opened.Load())
	}
}
