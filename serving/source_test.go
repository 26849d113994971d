package serving

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/framefs/framefs/media"
)

// TestReadahead walks a video in order: after the first three frames,
// read-ahead decodes the rest (the reader finds them cached or in flight),
// with one session and one seek, each frame decoded once.
func TestReadahead(t *testing.T) {
	c := &countingCodec{}
	srv := New(c, Options{Readahead: 8})
	v := countingVideo(t, "v", 300, 30)
	ctx := context.Background()
	for i := range v.Index.Frames() {
		b, err := srv.Frame(ctx, v, i, media.ImageSetting{})
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(b, countingImage(v.Key, i, media.ImageSetting{})) {
			t.Fatalf("frame %d: got another frame's image", i)
		}
	}
	srv.Close() // waits for read-ahead
	// The first request fills its GOP (it does not know yet that its
	// reader reads on): those frames come from their packed pictures.
	cs, unpacked := srv.CacheStats(), srv.FillStats().Unpacked
	if cs.Misses-unpacked > 8 || cs.Hits+cs.Shared+unpacked < 300-8 {
		t.Errorf("cache %+v, %d from packed pictures: want nearly every frame from read-ahead", cs, unpacked)
	}
	// A request that overtakes its read-ahead batch on a starved machine
	// decodes its GOP's prefix once more.
	if s, d := c.seeks.Load(), c.decoded.Load(); s > 2 || d > 300+30 {
		t.Errorf("%d seeks, %d pictures decoded for 300 frames: want one seek and each frame decoded once", s, d)
	}
}

// TestSharesLoads: concurrent requests for one frame decode it once,
// whether they share one request's decoding or its GOP's fill.
func TestSharesLoads(t *testing.T) {
	for _, noFill := range []bool{true, false} {
		c := &countingCodec{}
		srv := New(c, Options{MaxSessionsPerVideo: 4, Readahead: -1, NoFill: noFill})
		v := countingVideo(t, "v", 250, 250)
		var wg sync.WaitGroup
		results := make([][]byte, 8)
		for g := range results {
			wg.Go(func() {
				b, err := srv.Frame(context.Background(), v, 240, media.ImageSetting{})
				if err != nil {
					t.Error(err)
				}
				results[g] = b
			})
		}
		wg.Wait()
		srv.Close()
		for _, b := range results {
			if !bytes.Equal(b, countingImage(v.Key, 240, media.ImageSetting{})) {
				t.Fatal("a concurrent request got the wrong image")
			}
		}
		cs, fs := srv.CacheStats(), srv.FillStats()
		if noFill && cs.Misses != 1 || !noFill && (cs.Misses != 0 || fs.Fills != 1) {
			t.Errorf("NoFill %v: cache %+v, fills %+v: want the frame made once for 8 concurrent requests", noFill, cs, fs)
		}
		if n := c.opened.Load(); n != 1 {
			t.Errorf("NoFill %v: %d sessions opened, want 1", noFill, n)
		}
	}
}

// TestFrameSizes: FrameSizes gives the size of every image, decoding the
// video once in runs of whole GOPs over several sessions; BMP sizes come
// from the picture size without decoding.
func TestFrameSizes(t *testing.T) {
	c := &countingCodec{}
	srv := New(c, Options{MaxSessionsPerVideo: 3, SizeWorkers: 3, Readahead: -1})
	defer srv.Close()
	v := countingVideo(t, "v", 200, 25)
	ctx := context.Background()
	for _, setting := range []media.ImageSetting{{}, {Format: media.FormatPNG, Width: 80}} {
		before := c.decoded.Load()
		sizes, err := srv.FrameSizes(ctx, v, setting)
		if err != nil {
			t.Fatal(err)
		}
		if d := c.decoded.Load() - before; d != 200 {
			t.Errorf("%+v: %d pictures decoded for the sizes of 200 frames, want 200", setting, d)
		}
		for i, n := range sizes {
			if want := len(countingImage(v.Key, i, setting)); n != int64(want) {
				t.Fatalf("%+v frame %d: size %d, the image has %d bytes", setting, i, n, want)
			}
		}
	}
	before := c.decoded.Load()
	sizes, err := srv.FrameSizes(ctx, v, bmp)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := media.PredictSize(bmp, 640, 480)
	if sizes[0] != want || sizes[199] != want || c.decoded.Load() != before {
		t.Errorf("BMP sizes %d..%d (want %d) after decoding %d pictures (want none)", sizes[0], sizes[199], want, c.decoded.Load()-before)
	}
}

// TestFrameSizesParallelChunks: the GOP runs cover every frame once, in
// order, and split only at decode starts.
func TestFrameSizesParallelChunks(t *testing.T) {
	for _, gop := range []int{1, 7, 30, 250, 1000} {
		v := countingVideo(t, "v", 500, gop)
		for _, workers := range []int{1, 2, 8} {
			chunks := gopChunks(v, workers)
			next := 0
			for _, c := range chunks {
				if c.from != next || c.to <= c.from {
					t.Fatalf("GOP %d, %d workers: chunks %v do not tile the frames", gop, workers, chunks)
				}
				if c.from > 0 && v.Index.DecodeStart(c.from) == v.Index.DecodeStart(c.from-1) {
					t.Errorf("GOP %d: chunk at frame %d splits a GOP", gop, c.from)
				}
				next = c.to
			}
			if next != 500 {
				t.Fatalf("GOP %d: chunks end at %d of 500 frames", gop, next)
			}
		}
	}
}

// TestImageCacheGivesWay: the image cache's bound can be lowered, which
// evicts at once, and raised back, never above the configured size; frames
// are still served at any bound.
func TestImageCacheGivesWay(t *testing.T) {
	const configured = 1 << 20
	srv := New(&countingCodec{}, Options{CacheBytes: configured, Readahead: -1})
	defer srv.Close()
	v := countingVideo(t, "v", 60, 30)
	ctx := context.Background()
	for i := range 30 {
		if _, err := srv.Frame(ctx, v, i, media.ImageSetting{}); err != nil {
			t.Fatal(err)
		}
	}
	full := srv.CacheStats().Bytes
	if full == 0 {
		t.Fatal("nothing cached")
	}
	if got := srv.SetImageCacheBytes(full / 2); got != full/2 {
		t.Errorf("SetImageCacheBytes(%d) = %d", full/2, got)
	}
	if b := srv.CacheStats().Bytes; b > full/2 {
		t.Errorf("the cache holds %d bytes under a bound of %d", b, full/2)
	}
	if b, err := srv.Frame(ctx, v, 45, media.ImageSetting{}); err != nil || !bytes.Equal(b, countingImage(v.Key, 45, media.ImageSetting{})) {
		t.Errorf("frame 45 at the lower bound: %v", err)
	}
	if got := srv.SetImageCacheBytes(4 * configured); got != configured {
		t.Errorf("SetImageCacheBytes above the configured size = %d, want %d", got, configured)
	}
	if got := srv.SetImageCacheBytes(-1); got != 0 {
		t.Errorf("SetImageCacheBytes(-1) = %d, want 0", got)
	}
	if bound, conf := srv.ImageCacheBytes(); bound != 0 || conf != configured {
		t.Errorf("ImageCacheBytes = %d, %d", bound, conf)
	}
}
