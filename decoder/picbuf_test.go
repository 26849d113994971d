package decoder

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/asticode/go-astiav"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
)

// TestPictureMemoryBounded: kept pictures are copies in buffers of their
// own, so the memory behind them is the cache's bound plus the idle
// buffers kept for reuse, however many sessions and videos kept pictures,
// and none of it outlives the pool. (References to the decoders' buffers
// would have grown every decoder's buffer pool towards the cache's size.)
// Not parallel: the buffer counts are the process's.
func TestPictureMemoryBounded(t *testing.T) {
	var videos []media.Video
	for _, p := range []string{"../testdata/video/h264_bframes_gop30.mp4", "../testdata/video/hevc.mp4",
		"../testdata/video/h264_gop250.mp4", "../testdata/video/h264_vfr.mp4"} {
		videos = append(videos, openVideo(t, p, -1))
	}
	mapped0, idle0 := pictureMemory()
	const limit = 3 << 20
	pool := newTestPool(serving.Options{MaxOpenSessions: 4, PictureCacheBytes: limit})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	var peakLive, peakIdle int64
	for range 300 {
		v := videos[rng.IntN(len(videos))]
		if _, err := pool.Frame(ctx, v, rng.IntN(v.Index.Frames()), media.ImageSetting{Format: media.FormatBMP}); err != nil {
			pool.Close()
			t.Fatal(err)
		}
		// Between requests every live picture buffer is in the cache.
		mapped, idle := pictureMemory()
		peakLive = max(peakLive, (mapped-idle)-(mapped0-idle0))
		peakIdle = max(peakIdle, idle)
	}
	st := pool.PoolStats()
	pool.Close()
	mapped, idle := pictureMemory()
	t.Logf("%d pictures kept in all, %d hits; peak %d bytes of picture buffers in use, %d idle; after Close %d mapped, %d idle",
		st.PicturesKept, st.PictureHits, peakLive, peakIdle, mapped, idle)
	if st.PicturesKept < 50 {
		t.Fatalf("only %d pictures kept: the test does not exercise the cache", st.PicturesKept)
	}
	if peakLive > limit {
		t.Errorf("picture buffers in use peaked at %d bytes, want at most the cache's %d", peakLive, limit)
	}
	if peakIdle > pictureIdleMax {
		t.Errorf("idle picture buffers peaked at %d bytes, want at most %d", peakIdle, pictureIdleMax)
	}
	if live, live0 := mapped-idle, mapped0-idle0; live > live0 {
		t.Errorf("%d bytes of picture buffers still in use after Close", live-live0)
	}
}

// TestPictureFrameLayout: a picture buffer holds its planes back to back,
// as a packed picture does, exactly when its aligned rows need no padding;
// Unpack writes such planes as one block and copies the others row by row.
func TestPictureFrameLayout(t *testing.T) {
	for _, tc := range []struct {
		format        astiav.PixelFormat
		width, height int
		tight         bool
	}{
		{astiav.PixelFormatYuv420P, 640, 480, true},
		{astiav.PixelFormatYuv420P, 1920, 1080, true},
		{astiav.PixelFormatYuv420P, 160, 120, false}, // 160-byte rows padded to 192
		{astiav.PixelFormatYuv420P, 320, 180, false}, // chroma rows of 160 bytes
		{astiav.PixelFormatYuv420P10Le, 200, 200, false},
	} {
		f, tight, err := newPictureFrame(int(tc.format), tc.width, tc.height)
		if err != nil {
			t.Fatal(err)
		}
		if tight != tc.tight {
			t.Errorf("%s %dx%d: tight %v, want %v", tc.format, tc.width, tc.height, tight, tc.tight)
		}
		f.Free()
	}
}
