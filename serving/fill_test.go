package serving

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/framefs/framefs/cache"
	"github.com/framefs/framefs/media"
)

// shuffledRead reads frames of v from srv in a shuffled order (n of them,
// all if n < 0), checking that each is its own image.
func shuffledRead(t *testing.T, srv *Server, v media.Video, setting media.ImageSetting, seed uint64, n int) {
	t.Helper()
	order := rand.New(rand.NewPCG(seed, seed)).Perm(v.Index.Frames())
	if n >= 0 {
		order = order[:n]
	}
	for _, i := range order {
		b, err := srv.Frame(context.Background(), v, i, setting)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(b, countingImage(v.Key, i, setting)) {
			t.Fatalf("frame %d: got another frame's image", i)
		}
	}
}

// TestFillDecodesEachGOPOnce reads every frame of videos with short and
// long GOPs in a shuffled order, as a training loader does: with fills each
// GOP is decoded once; without them its prefix is decoded again for most
// requests.
func TestFillDecodesEachGOPOnce(t *testing.T) {
	for _, gop := range []int{30, 250} {
		perServed := map[bool]float64{}
		for _, noFill := range []bool{false, true} {
			c := &countingCodec{}
			srv := New(c, Options{CacheBytes: 256 << 20, PictureCacheBytes: -1, Readahead: -1, NoFill: noFill})
			v := countingVideo(t, "v", 750, gop)
			n := 750
			if noFill {
				n = 60 // a sample shows the cost per request
			}
			shuffledRead(t, srv, v, media.ImageSetting{}, 7, n)
			srv.Close()
			perServed[noFill] = float64(c.decoded.Load()) / float64(n)
			if fs := srv.FillStats(); !noFill && (fs.Fills == 0 || fs.Useful != fs.FramesFilled || fs.Wasted != 0) {
				t.Errorf("GOP %d: fills %+v: want every filled frame served", gop, fs)
			}
		}
		if perServed[false] != 1 {
			t.Errorf("GOP %d: %.2f pictures decoded per frame with fills, want 1", gop, perServed[false])
		}
		if perServed[true] < 5 {
			t.Errorf("GOP %d: only %.2f pictures decoded per frame without fills: the test does not tell fills apart", gop, perServed[true])
		}
	}
}

// TestFillsStopWhenWasted reads a video in a shuffled order through a
// cache that holds only a few images: the frames fills make are evicted
// before they are asked for, so fills must stop.
func TestFillsStopWhenWasted(t *testing.T) {
	c := &countingCodec{}
	v := countingVideo(t, "v", 300, 30)
	size := int64(len(countingImage(v.Key, 0, bmp)) + cache.EntryOverhead)
	srv := New(c, Options{CacheBytes: 20 * size, Readahead: -1})
	defer srv.Close()
	for seed := range uint64(4) {
		shuffledRead(t, srv, v, bmp, seed, -1)
	}
	fs := srv.FillStats()
	if fs.Wasted == 0 || fs.Declined == 0 || fs.Usefulness > 0.5 {
		t.Errorf("fills %+v: want wasted fills noticed and later ones declined", fs)
	}
}

// TestDemoteServed: with DemoteServed, the frames of a fill stay cached
// after they are served, but are the first to go when a later fill needs
// the room.
func TestDemoteServed(t *testing.T) {
	c := &countingCodec{}
	v := countingVideo(t, "v", 100, 10)
	jpeg := media.ImageSetting{}
	imageBytes := int64(10 * (len(countingImage(v.Key, 0, jpeg)) + cache.EntryOverhead))
	// Room for four and a half GOPs of images (fills may take a quarter,
	// so one GOP at a time).
	srv := New(c, Options{Readahead: -1, DemoteServed: true, CacheBytes: imageBytes * 9 / 2, PictureCacheBytes: -1})
	defer srv.Close()
	ctx := context.Background()
	serveGOP := func(g int) (decoded int64) {
		t.Helper()
		start := c.decoded.Load()
		// The middle frame fills the GOP; the rest waits for the fill.
		for _, i := range append([]int{g*10 + 5}, seq(g*10, g*10+10)...) {
			if _, err := srv.Frame(ctx, v, i, jpeg); err != nil {
				t.Fatal(err)
			}
		}
		return c.decoded.Load() - start
	}
	for g := range 4 {
		serveGOP(g)
	}
	if cs := srv.CacheStats(); cs.Entries != 40 || cs.Demoted != 40 || cs.Evictions != 0 {
		t.Fatalf("after serving 40 frames: cache %+v; want every one kept, demoted", cs)
	}
	if d := serveGOP(1); d != 0 {
		t.Errorf("%d pictures decoded for served frames asked again; want none", d)
	}
	if d := serveGOP(4); d != 10 {
		t.Errorf("%d pictures decoded to serve a 10-frame GOP; want it decoded once", d)
	}
	if cs := srv.CacheStats(); cs.Evictions == 0 || cs.Entries != cs.Demoted {
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
