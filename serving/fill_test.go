package serving

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/framefs/framefs/cache"
	"github.com/framefs/framefs/media"
)

// shuffledRead reads frames of v from srv in a shuffled order (n of them,
// all if n < 0), checking that each is its own image.
func shuffledRead(t *testing.T, srv *Server, v media.Video, setting media.ImageSetting, seed uint64, n int) {
	t.Helper()
	shuffledReadOf(t, srv, countingImage, v, setting, seed, n)
}

// shuffledReadOf is shuffledRead for a codec whose images image makes.
func shuffledReadOf(t *testing.T, srv *Server, image func(media.VideoKey, int, media.ImageSetting) []byte,
	v media.Video, setting media.ImageSetting, seed uint64, n int) {
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
		if !bytes.Equal(b, image(v.Key, i, setting)) {
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
	// Small images, which fills keep as they are.
	jpeg := media.ImageSetting{Width: 160}
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
		t.Fatalf("after serving 40 frames: cache %+v; want every one kept, demoted (fills %+v)", cs, srv.FillStats())
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

// TestPackedFillsServeRawFormats: a shuffled epoch of BMP frames over a
// dataset many times larger than the cache in BMP form decodes each frame
// once: fills keep the siblings packed, and each request renders its image
// from the packed picture. JPEG siblings, smaller than a packed picture,
// stay images.
func TestPackedFillsServeRawFormats(t *testing.T) {
	const cacheBytes = 32 << 20
	c := &countingCodec{}
	srv := New(c, Options{CacheBytes: cacheBytes, PictureCacheBytes: -1, Readahead: -1, DemoteServed: true})
	defer srv.Close()
	videos := []media.Video{countingVideo(t, "a", 300, 30), countingVideo(t, "b", 300, 30)}
	if bmpBytes := int64(600 * len(countingImage(videos[0].Key, 0, bmp))); bmpBytes < 10*cacheBytes {
		t.Fatalf("the dataset's BMP images (%d bytes) are not many times the cache", bmpBytes)
	}
	type frame struct{ v, i int }
	var order []frame
	for v := range videos {
		for i := range 300 {
			order = append(order, frame{v, i})
		}
	}
	rand.New(rand.NewPCG(3, 3)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	peak := int64(0)
	for _, f := range order {
		v := videos[f.v]
		b, err := srv.Frame(context.Background(), v, f.i, bmp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, countingImage(v.Key, f.i, bmp)) {
			t.Fatalf("%s frame %d: got another frame's image", v.Key.Object, f.i)
		}
		peak = max(peak, srv.CacheStats().Bytes)
	}
	fs := srv.FillStats()
	if d := c.decoded.Load(); d != 600 {
		t.Errorf("%d pictures decoded for 600 frames served (fills %+v), want each decoded once", d, fs)
	}
	if fs.FramesPacked == 0 || fs.Unpacked < fs.FramesPacked-int64(len(videos)*10) || c.packed.Load() != fs.FramesPacked+fs.Fills {
		t.Errorf("fills %+v, %d packed by the codec: want the siblings packed and rendered from their packed pictures", fs, c.packed.Load())
	}
	if peak > cacheBytes {
		t.Errorf("the cache held %d bytes, limit %d", peak, cacheBytes)
	}
	// Scaled-down JPEG images are much smaller than packed pictures.
	before := c.packed.Load()
	srv2 := New(c, Options{CacheBytes: cacheBytes, PictureCacheBytes: -1, Readahead: -1})
	defer srv2.Close()
	shuffledRead(t, srv2, countingVideo(t, "c", 300, 30), media.ImageSetting{Width: 160}, 5, -1)
	if fs := srv2.FillStats(); fs.FramesPacked != 0 || c.packed.Load() != before || fs.FramesFilled == 0 {
		t.Errorf("fills of small JPEG images %+v: want the siblings kept as images", fs)
	}
}

// TestFrameSizesKeepImages: the images FrameSizes makes wait in the cache
// for the reads that follow (a view's first stat computes its sizes, then
// its frames are read), so each frame is decoded once in all.
func TestFrameSizesKeepImages(t *testing.T) {
	scaled := media.ImageSetting{Width: 224, Height: 224}
	for _, setting := range []media.ImageSetting{scaled, {Format: media.FormatPNG}} {
		c := &countingCodec{}
		srv := New(c, Options{CacheBytes: 256 << 20, Readahead: -1, DemoteServed: true})
		v := countingVideo(t, "v", 300, 30)
		if _, err := srv.FrameSizes(context.Background(), v, setting); err != nil {
			t.Fatal(err)
		}
		shuffledRead(t, srv, v, setting, 9, -1)
		srv.Close()
		if d := c.decoded.Load(); d != 300 {
			t.Errorf("%+v: %d pictures decoded for the sizes and a shuffled read of 300 frames, want 300 (fills %+v)", setting, d, srv.FillStats())
		}
		if fs := srv.FillStats(); fs.FramesSized != 300 {
			t.Errorf("%+v: FrameSizes kept %d frames, want 300", setting, fs.FramesSized)
		}
	}
}

// TestFrameSizeThenRead: a loader that stats each file before reading it,
// in a shuffled order, through a view whose image sizes are not stored
// (PNG, or JPEG at another size): each frame's size is worked out when it
// is first asked for, its GOP filled, and each frame decoded once in all.
// A stat of every frame in order decodes each once too.
func TestFrameSizeThenRead(t *testing.T) {
	png := media.ImageSetting{Format: media.FormatPNG}
	c := &countingCodec{}
	srv := New(c, Options{CacheBytes: 64 << 20, PictureCacheBytes: -1, DemoteServed: true})
	v := countingVideo(t, "v", 600, 30)
	for _, i := range rand.New(rand.NewPCG(4, 4)).Perm(600) {
		n, err := srv.FrameSize(context.Background(), v, i, png)
		if err != nil {
			t.Fatal(err)
		}
		b, err := srv.Frame(context.Background(), v, i, png)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != n || !bytes.Equal(b, countingImage(v.Key, i, png)) {
			t.Fatalf("frame %d: size %d, then %d bytes read; want its own image's", i, n, len(b))
		}
	}
	srv.Close()
	if d := c.decoded.Load(); d != 600 {
		t.Errorf("%d pictures decoded for 600 stats and reads in a shuffled order, want 600 (fills %+v)", d, srv.FillStats())
	}

	c = &countingCodec{}
	srv = New(c, Options{CacheBytes: 64 << 20, PictureCacheBytes: -1})
	defer srv.Close()
	for i := range 600 {
		if _, err := srv.FrameSize(context.Background(), v, i, png); err != nil {
			t.Fatal(err)
		}
	}
	if d := c.decoded.Load(); d > 630 {
		t.Errorf("%d pictures decoded for a stat of 600 frames in order, want about 600", d)
	}
}

// TestSecondEpochFromPackedPictures: after a shuffled epoch of BMP frames,
// the cache holds the packed pictures, not the served BMPs (which the
// caller keeps), so a second epoch whose caller lost its copies renders
// them again without decoding.
func TestSecondEpochFromPackedPictures(t *testing.T) {
	c := &countingCodec{}
	v := countingVideo(t, "v", 300, 30)
	// Room for the packed pictures of every frame, not for their BMPs.
	srv := New(c, Options{CacheBytes: 24 << 20, PictureCacheBytes: -1, Readahead: -1, DemoteServed: true})
	defer srv.Close()
	shuffledRead(t, srv, v, bmp, 1, -1)
	if d := c.decoded.Load(); d != 300 {
		t.Fatalf("epoch 1 decoded %d pictures for 300 frames", d)
	}
	shuffledRead(t, srv, v, bmp, 2, -1)
	if d := c.decoded.Load(); d != 300 {
		t.Errorf("epoch 2 decoded %d more pictures, want none (fills %+v, cache %+v)", d-300, srv.FillStats(), srv.CacheStats())
	}
}

// TestCompressedFillsServeScaledRawFormats: a shuffled epoch of BMP frames
// scaled well down, over a dataset many times larger than the cache in BMP
// form, decodes each frame once: fills keep the siblings as compressed
// images, smaller than packed pictures, and each request is served from
// one by decompressing it, without rendering. A second epoch whose caller
// lost its copies decodes nothing.
func TestCompressedFillsServeScaledRawFormats(t *testing.T) {
	const cacheBytes = 8 << 20
	scaled := media.ImageSetting{Format: media.FormatBMP, Width: 224, Height: 224}
	c := &countingCodec{}
	srv := New(c, Options{CacheBytes: cacheBytes, PictureCacheBytes: -1, Readahead: -1, DemoteServed: true})
	defer srv.Close()
	v := countingVideo(t, "a", 600, 30)
	if bmpBytes := int64(600 * len(countingImage(v.Key, 0, scaled))); bmpBytes < 10*cacheBytes {
		t.Fatalf("the dataset's BMP images (%d bytes) are not many times the cache", bmpBytes)
	}
	peak := int64(0)
	for _, i := range rand.New(rand.NewPCG(5, 5)).Perm(600) {
		b, err := srv.Frame(context.Background(), v, i, scaled)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, countingImage(v.Key, i, scaled)) {
			t.Fatalf("frame %d: got another frame's image", i)
		}
		peak = max(peak, srv.CacheStats().Bytes)
	}
	fs := srv.FillStats()
	if d := c.decoded.Load(); d != 600 {
		t.Errorf("%d pictures decoded for 600 frames served (fills %+v), want each decoded once", d, fs)
	}
	if fs.FramesCompressed == 0 || fs.FramesPacked != 0 || c.packed.Load() != 0 || fs.Decompressed < fs.FramesCompressed {
		t.Errorf("fills %+v, %d packed by the codec: want the siblings compressed and served from their compressed images", fs, c.packed.Load())
	}
	if encoded := c.encoded.Load(); encoded != 600 {
		t.Errorf("%d images rendered for 600 frames, want each rendered once", encoded)
	}
	if peak > cacheBytes {
		t.Errorf("the cache held %d bytes, limit %d", peak, cacheBytes)
	}
	shuffledRead(t, srv, v, scaled, 6, -1)
	if d := c.decoded.Load(); d != 600 {
		t.Errorf("epoch 2 decoded %d more pictures, want none (fills %+v, cache %+v)", d-600, srv.FillStats(), srv.CacheStats())
	}
}

// TestDecompressImageRefusesDamage: bytes that are not a compressed image
// of a sane size end in an error, never a wrong image or a huge allocation.
func TestDecompressImageRefusesDamage(t *testing.T) {
	image := bytes.Repeat([]byte("BM frame "), 5000)
	c := s2.Encode(nil, image)
	if b, err := decompressImage(c); err != nil || !bytes.Equal(b, image) {
		t.Fatalf("round trip: %v", err)
	}
	huge := binary.AppendUvarint(nil, maxCompressedImage+1)
	for name, bad := range map[string][]byte{
		"empty": nil, "truncated": c[:len(c)/2], "huge": append(huge, 0), "garbage": []byte("not s2 at all"),
	} {
		if _, err := decompressImage(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestRawImagesCompressedOnlyWhereItPays: scaled raw images that do not
// compress (noisy camera video) are kept as they are, not compressed for a
// few percent at the cost of more CPU than anything but decoding; every
// probeEvery-th fill still compresses, so that the estimate follows the
// video. At full size the packed picture stays the smaller form.
func TestRawImagesCompressedOnlyWhereItPays(t *testing.T) {
	v := countingVideo(t, "a", 30, 30)
	scaled := media.ImageSetting{Format: media.FormatBMP, Width: 224, Height: 224}
	full := media.ImageSetting{Format: media.FormatBMP}
	count := func(p *fillPolicy, s media.ImageSetting, calls int) map[form]int {
		n := map[form]int{}
		for range calls {
			n[p.form(v, s)]++
		}
		return n
	}
	p := newFillPolicy()
	p.compressedRatio.fold(16, 100)
	if n := count(p, scaled, 32); n[formCompressed] != 32 {
		t.Errorf("images compressing to 16%%: forms %v, want all compressed", n)
	}
	p = newFillPolicy()
	p.compressedRatio.fold(95, 100)
	if n := count(p, scaled, 2*probeEvery); n[formCompressed] != 2 || n[formImage] != 2*probeEvery-2 {
		t.Errorf("images compressing to 95%%: forms %v, want images but for one compressed fill in %d", n, probeEvery)
	}
	if n := count(p, full, 4); n[formPicture] != 4 {
		t.Errorf("full-size images compressing to 95%%: forms %v, want packed pictures", n)
	}
}

// TestIncompressibleFillsServeScaledRawFormats reads every frame of a
// video whose scaled BMP images do not compress: each is decoded once and
// served byte for byte, and after the first fill has measured that, the
// siblings are kept as images, not compressed.
func TestIncompressibleFillsServeScaledRawFormats(t *testing.T) {
	c, fs := noisyEpoch(t, media.ImageSetting{Format: media.FormatBMP, Width: 224, Height: 224}, 64<<20)
	// The first fill compresses (nothing is measured yet); the others keep
	// images.
	if fs.FramesCompressed == 0 || fs.FramesCompressed > 29 || fs.FramesPacked != 0 || fs.FramesFilled < 250 {
		t.Errorf("fills %+v: want the first fill's siblings compressed, the rest kept as images", fs)
	}
	if encoded := c.encoded.Load(); encoded != 300 {
		t.Errorf("%d images rendered for 300 frames, want each rendered once", encoded)
	}
}

// TestPicturesStoredWhereCompressionDoesNotPay: pictures that compress to
// 95% are packed without compression, but for one in probeEvery, which
// keeps the estimate current; pictures that compress well are compressed.
func TestPicturesStoredWhereCompressionDoesNotPay(t *testing.T) {
	count := func(p *fillPolicy, calls int) (compressed int) {
		for range calls {
			if p.compressPacks() {
				compressed++
			}
		}
		return compressed
	}
	p := newFillPolicy()
	if n := count(p, 32); n != 32 {
		t.Errorf("before any measurement %d of 32 pictures compressed, want all", n)
	}
	p.measuredPack(time.Millisecond, 12, 10, 10, true)
	if n := count(p, 32); n != 32 {
		t.Errorf("pictures compressing to 8%%: %d of 32 compressed, want all", n)
	}
	p = newFillPolicy()
	p.measuredPack(time.Millisecond, 143, 10, 10, true)
	if n := count(p, 2*probeEvery); n != 2 {
		t.Errorf("pictures compressing to 95%%: %d of %d compressed, want 2", n, 2*probeEvery)
	}
	p.measuredPack(time.Millisecond, 150, 10, 10, false)
	if !p.packedRatio.measured || p.packedRatio.v < 0.9 || p.packedRatio.v > 1 {
		t.Errorf("a stored picture moved the ratio to %v", p.packedRatio.v)
	}
}

// TestIncompressiblePicturesStored reads every frame of a video whose
// pictures do not compress through a full-size BMP setting: each frame is
// decoded once and served byte for byte, and the siblings are packed
// stored, but for the first fill's and a probe's.
func TestIncompressiblePicturesStored(t *testing.T) {
	c, fs := noisyEpoch(t, media.ImageSetting{Format: media.FormatBMP}, 256<<20)
	packed, stored := c.packed.Load(), c.stored.Load()
	if fs.FramesPacked < 250 || stored < packed-29-packed/probeEvery-1 || stored == packed {
		t.Errorf("fills %+v: %d pictures packed, %d of them stored: want all stored but the first fill's and a probe's", fs, packed, stored)
	}
}

// noisyEpoch reads the 300 frames of a video of incompressible images with
// setting through a server with a memory cache of cacheBytes, in a
// shuffled order, checking that each is decoded once and served byte for
// byte, and returns the codec and the server's fill statistics.
func noisyEpoch(t *testing.T, setting media.ImageSetting, cacheBytes int64) (*countingCodec, FillStats) {
	t.Helper()
	c := &countingCodec{noisy: true}
	srv := New(c, Options{CacheBytes: cacheBytes, PictureCacheBytes: -1, Readahead: -1, DemoteServed: true})
	defer srv.Close()
	v := countingVideo(t, "a", 300, 30)
	shuffledReadOf(t, srv, noisyImage, v, setting, 7, -1)
	fs := srv.FillStats()
	if d := c.decoded.Load(); d != 300 {
		t.Errorf("%d pictures decoded for 300 frames served (fills %+v), want each decoded once", d, fs)
	}
	return c, fs
}
