package decoder

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/framefs/framefs/cache"
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

// TestDemoteServed: with DemoteServed, the frames of a fill stay cached
// after they are served, but are the first to go when a later fill needs
// the room.
func TestDemoteServed(t *testing.T) {
	t.Parallel()
	path := ffmpegTo(t, filepath.Join(t.TempDir(), "gop10.mp4"), "-f", "lavfi", "-i", "testsrc=d=2:r=30:s=160x120",
		"-c:v", "libx264", "-g", "10", "-keyint_min", "10", "-sc_threshold", "0", "-pix_fmt", "yuv420p")
	v := openVideo(t, path, 0)
	pool := NewPool(Options{})
	defer pool.Close()
	ctx := context.Background()
	var gops [][2]int // the first five GOPs
	for o := 0; len(gops) < 5; {
		from, to := group(v, o)
		gops = append(gops, [2]int{from, to})
		o = to
	}
	// Room for four and a half GOPs of images (fills may take a quarter,
	// so one GOP at a time).
	var imageBytes int64
	for i := gops[0][0]; i < gops[0][1]; i++ {
		img, err := pool.Frame(ctx, v, i, ImageSetting{})
		if err != nil {
			t.Fatal(err)
		}
		imageBytes += int64(len(img) + cache.EntryOverhead)
	}
	src := NewFrameSource(pool, FrameSourceOptions{Readahead: -1, DemoteServed: true, CacheBytes: imageBytes * 9 / 2})
	defer src.Close()
	serveGOP := func(g [2]int) (decoded int) {
		t.Helper()
		start := pool.Stats().Decoded
		// The middle frame fills the GOP; the rest waits for the fill.
		for _, i := range append([]int{(g[0] + g[1]) / 2}, seq(g[0], g[1])...) {
			if _, err := src.Frame(ctx, v, i, ImageSetting{}); err != nil {
				t.Fatal(err)
			}
		}
		return pool.Stats().Decoded - start
	}
	for _, g := range gops[:4] {
		serveGOP(g)
	}
	cs := src.CacheStats()
	if n := gops[4][0]; cs.Entries != n || cs.Demoted != n || cs.Evictions != 0 {
		t.Fatalf("after serving %d frames: cache %+v; want every one kept, demoted", n, cs)
	}
	// Asked again, a served frame comes from the cache.
	if d := serveGOP(gops[1]); d != 0 {
		t.Errorf("%d pictures decoded for served frames asked again; want none", d)
	}
	// The fifth GOP's fill needs room: served frames go, not its own.
	if d := serveGOP(gops[4]); d > gops[4][1]-gops[4][0]+3 {
		t.Errorf("%d pictures decoded to serve a %d-frame GOP; want it decoded once", d, gops[4][1]-gops[4][0])
	}
	if cs := src.CacheStats(); cs.Evictions == 0 || cs.Entries != cs.Demoted {
		t.Errorf("cache %+v: want served frames evicted for the fifth GOP's fill", cs)
	}
}

func seq(from, to int) []int {
	s := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
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
