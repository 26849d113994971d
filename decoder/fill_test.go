package decoder

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"time"
)

// shuffledRead reads n frames of fx (all if n < 0) from src as PPM in a
// shuffled order and checks each against sequential decoding.
func shuffledRead(t *testing.T, src *FrameSource, fx fixture, seed uint64, n int) {
	t.Helper()
	want := sequentialHashes(t, fx)
	v := openVideo(t, fx.path, fx.stream)
	order := rand.New(rand.NewPCG(seed, seed)).Perm(v.Index.Frames())
	if n >= 0 {
		order = order[:n]
	}
	for _, i := range order {
		b, err := src.Frame(context.Background(), v, i, ImageSetting{Format: FormatPPM})
		if err != nil {
			t.Fatalf("%s frame %d: %v", fx.name, i, err)
		}
		if sha256.Sum256(b) != want[i] {
			t.Fatalf("%s frame %d: bytes differ from sequential decoding", fx.name, i)
		}
	}
}

// TestFillDecodesEachGOPOnce reads every frame of videos with short and
// long GOPs, B-frames and an open GOP in a shuffled order, as a training
// loader does: with fills each GOP is decoded once, without them its
// prefix is decoded again for most requests.
func TestFillDecodesEachGOPOnce(t *testing.T) {
	t.Parallel()
	for _, fx := range fixtures(t) {
		switch fx.name {
		case "h264_bframes_gop30.mp4.stream0", "h264_gop250.mp4.stream0", "hevc.mp4.stream0", "h264_editlist.mp4.stream0":
		default:
			continue
		}
		frames := len(sequentialHashes(t, fx))
		perServed := map[bool]float64{}
		for _, noFill := range []bool{false, true} {
			pool := NewPool(Options{PictureCacheBytes: -1})
			src := NewFrameSource(pool, FrameSourceOptions{CacheBytes: 256 << 20, Readahead: -1, NoFill: noFill})
			// Without fills, a sample of the requests is enough to see the
			// cost per request.
			n := frames
			if noFill {
				n = min(frames, 30)
			}
			shuffledRead(t, src, fx, 7, n)
			src.Close()
			pool.Close()
			perServed[noFill] = float64(pool.Stats().Decoded) / float64(n)
			if !noFill {
				if fs := src.FillStats(); fs.Fills == 0 || fs.Useful != fs.FramesFilled || fs.Wasted != 0 {
					t.Errorf("%s: fills %+v: want every filled frame served", fx.name, fs)
				}
			}
		}
		// A fill decodes its GOP once; a B-frame GOP may need a few
		// pictures of the next one to output its last frames.
		if perServed[false] > 1.15 {
			t.Errorf("%s: %.2f pictures decoded per frame with fills, want about one", fx.name, perServed[false])
		}
		if perServed[true] < 2 {
			t.Errorf("%s: only %.2f pictures decoded per frame without fills: the test does not tell fills apart", fx.name, perServed[true])
		}
	}
}

// TestFillsStopWhenWasted reads a video in a shuffled order through a
// cache that holds only a few images: the frames fills encode are evicted
// before they are asked for, so fills must stop.
func TestFillsStopWhenWasted(t *testing.T) {
	t.Parallel()
	fx := fixtureNamed(t, "h264_bframes_gop30.mp4.stream0")
	pool := NewPool(Options{})
	defer pool.Close()
	// About four PPM frames.
	src := NewFrameSource(pool, FrameSourceOptions{CacheBytes: 4 * 230 << 10, Readahead: -1})
	defer src.Close()
	for seed := range uint64(4) {
		shuffledRead(t, src, fx, seed, -1)
	}
	fs := src.FillStats()
	if fs.Wasted == 0 || fs.Declined == 0 || fs.Usefulness > 0.5 {
		t.Errorf("fills %+v: want wasted fills noticed and later ones declined", fs)
	}
}

// TestDropServed: with DropServed, the cache keeps the frames of a fill
// until they are served, and no longer.
func TestDropServed(t *testing.T) {
	t.Parallel()
	v := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	pool := NewPool(Options{})
	defer pool.Close()
	src := NewFrameSource(pool, FrameSourceOptions{Readahead: -1, DropServed: true})
	defer src.Close()
	ctx := context.Background()
	from, to := group(v, 40)
	// Frame 40, then the last one of its GOP, which waits for the fill to
	// end.
	for _, i := range []int{40, to - 1} {
		if _, err := src.Frame(ctx, v, i, ImageSetting{}); err != nil {
			t.Fatal(err)
		}
	}
	// The fill's last encodings may still be running.
	for deadline := time.Now().Add(10 * time.Second); src.CacheStats().Entries < to-from-2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if cs := src.CacheStats(); cs.Entries != to-from-2 {
		t.Fatalf("after serving two frames of a %d-frame GOP, %d images cached; want the %d others", to-from, cs.Entries, to-from-2)
	}
	decoded := pool.Stats().Decoded
	for i := from; i < to-1; i++ {
		if i == 40 {
			continue
		}
		if _, err := src.Frame(ctx, v, i, ImageSetting{}); err != nil {
			t.Fatal(err)
		}
	}
	if cs := src.CacheStats(); cs.Entries != 0 {
		t.Errorf("%d images cached after serving the whole GOP; want none", cs.Entries)
	}
	if d := pool.Stats().Decoded - decoded; d != 0 {
		t.Errorf("%d pictures decoded to serve the rest of a filled GOP; want none", d)
	}
	// Frame 40 was dropped when it was served: asked again, it is decoded
	// again.
	if _, err := src.Frame(ctx, v, 40, ImageSetting{}); err != nil {
		t.Fatal(err)
	}
	src.Close()
	if pool.Stats().Decoded == decoded {
		t.Error("a served frame asked again was not decoded again: it stayed cached")
	}
}

// fixtureNamed returns the golden fixture of that name.
func fixtureNamed(t *testing.T, name string) fixture {
	t.Helper()
	for _, fx := range fixtures(t) {
		if fx.name == name {
			return fx
		}
	}
	t.Fatalf("no fixture %s", name)
	return fixture{}
}
