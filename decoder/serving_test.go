package decoder

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/framefs/framefs/cache/diskcache"
	"github.com/framefs/framefs/internal/procstatus"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
)

// The frame server (package serving) over the real decoder: what its tests
// with a counting codec cannot show, the bytes and the memory.

// TestServerReadahead walks a video in order: after the first three
// frames, read-ahead must decode the rest (the reader finds them cached or
// in flight), with one session and no seek, and the bytes must be those of
// uncached decoding.
func TestServerReadahead(t *testing.T) {
	t.Parallel()
	v := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	src := serving.New(Codec{}, serving.Options{Readahead: 8})
	defer src.Close()
	ref := newTestPool(serving.Options{})
	defer ref.Close()
	ctx := context.Background()
	for _, setting := range []media.ImageSetting{{}, {Format: media.FormatPNG}} {
		for i := range v.Index.Frames() {
			b, err := src.Frame(ctx, v, i, setting)
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			want, err := ref.Frame(ctx, v, i, setting)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, want) {
				t.Fatalf("%+v frame %d: read-ahead bytes differ from direct decoding", setting, i)
			}
		}
	}
	src.Close() // waits for read-ahead
	cs, ps, unpacked := src.CacheStats(), src.PoolStats(), src.FillStats().Unpacked
	frames := int64(v.Index.Frames())
	// Per setting, the first three frames are misses; a few more may be
	// requested before their read-ahead batch is promised. The first
	// request fills its GOP: those frames come from packed pictures.
	if cs.Misses-unpacked > 2*8 || cs.Hits+cs.Shared+unpacked < 2*frames-2*8 {
		t.Errorf("cache %+v, %d from packed pictures: want nearly every frame from read-ahead", cs, unpacked)
	}
	// One seek, back to frame 0 for the second setting, and each frame
	// decoded once; a request that overtakes its read-ahead batch on a
	// starved machine decodes its GOP (30 frames) directly, once more at
	// most per setting.
	if ps.Seeks > 3 || ps.Opened > 2 || ps.Decoded > 2*int(frames)+2*30+4 {
		t.Errorf("pool %+v: want about one seek and each frame decoded about once", ps)
	}
}

// TestFrameSizes compares FrameSizes with the images themselves, on videos
// with B-frames, an open GOP and an edit list, and checks the predicted
// BMP sizes.
func TestFrameSizes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, path := range []string{"../testdata/video/hevc.mp4", "../testdata/video/h264_editlist.mp4", "../testdata/video/h264_vfr.mp4"} {
		v := openVideo(t, path, 0)
		pool := newTestPool(serving.Options{MaxSessionsPerVideo: 3})
		src := serving.New(Codec{}, serving.Options{MaxSessionsPerVideo: 3, SizeWorkers: 3, Readahead: -1})
		for _, setting := range []media.ImageSetting{{}, {Format: media.FormatPNG, Width: 80}, {Format: media.FormatBMP}} {
			sizes, err := src.FrameSizes(ctx, v, setting)
			if err != nil {
				t.Fatalf("%s %+v: %v", path, setting, err)
			}
			if len(sizes) != v.Index.Frames() {
				t.Fatalf("%d sizes for %d frames", len(sizes), v.Index.Frames())
			}
			for _, i := range shuffled(len(sizes), 20, 3) {
				b, err := pool.Frame(ctx, v, i, setting)
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(b)) != sizes[i] {
					t.Errorf("%s %+v frame %d: FrameSizes says %d bytes, the image has %d", path, setting, i, sizes[i], len(b))
				}
			}
		}
		src.Close()
		pool.Close()
	}
}

// TestMemoryBounded reads many random frames of several videos with a
// small cache and few sessions (so that sessions are opened and evicted
// all the time) and measures the Go heap and the process's resident memory:
// after a warm-up both must stay flat, whatever the number of requests.
// Nothing is timed.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("reads hundreds of frames")
	}
	paths := []string{"../testdata/video/h264_bframes_gop30.mp4", "../testdata/video/hevc.mp4", "../testdata/video/h264_gop250.mp4", "../testdata/video/mpeg4_part2.mp4",
		realDir + "/bt709_full_range.mp4", realDir + "/nasa_13013.mp4"}
	var videos []media.Video
	for _, p := range paths {
		videos = append(videos, openVideo(t, p, -1))
	}
	const cacheBytes = 2 << 20
	const pictureBytes = 4 << 20
	src := serving.New(Codec{}, serving.Options{MaxOpenSessions: 2, MaxSessionsPerVideo: 1, PictureCacheBytes: pictureBytes, CacheBytes: cacheBytes})
	defer src.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 5))
	settings := []media.ImageSetting{{}, {Format: media.FormatBMP}, {Format: media.FormatPNG, Width: 64}}
	read := func(n int) {
		for range n {
			v := videos[rng.IntN(len(videos))]
			i := rng.IntN(v.Index.Frames())
			if rng.IntN(4) == 0 { // some sequential runs, to start read-ahead
				for k := range 4 {
					if _, err := src.Frame(ctx, v, min(i+k, v.Index.Frames()-1), settings[0]); err != nil {
						t.Fatal(err)
					}
				}
				continue
			}
			if _, err := src.Frame(ctx, v, i, settings[rng.IntN(len(settings))]); err != nil {
				t.Fatal(err)
			}
		}
	}
	measure := func() (heap uint64, rss int64) {
		runtime.GC()
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc, residentBytes(t)
	}
	read(150)
	heap0, rss0 := measure()
	read(450)
	heap1, rss1 := measure()
	t.Logf("after 150 requests: heap %.1f MB, RSS %.1f MB; after 600: heap %.1f MB, RSS %.1f MB; cache %+v, pool %+v",
		float64(heap0)/1e6, float64(rss0)/1e6, float64(heap1)/1e6, float64(rss1)/1e6, src.CacheStats(), src.PoolStats())
	if cs := src.CacheStats(); cs.Bytes > cacheBytes {
		t.Errorf("cache holds %d bytes, limit %d", cs.Bytes, cacheBytes)
	}
	if st := src.PoolStats(); st.PictureBytes > pictureBytes || st.PicturesKept == 0 {
		t.Errorf("pool %+v: want kept pictures within %d bytes", st, pictureBytes)
	}
	if st := src.PoolStats(); st.Open > 2 || st.Evicted == 0 {
		t.Errorf("pool %+v: want at most 2 open sessions and evictions", st)
	}
	if heap1 > heap0+8<<20 {
		t.Errorf("Go heap grew from %d to %d bytes", heap0, heap1)
	}
	if rss0 > 0 && rss1 > rss0+64<<20 {
		t.Errorf("resident memory grew from %d to %d bytes", rss0, rss1)
	}
}

// residentBytes returns the process's resident set size, or 0 where
// there is none to read.
func residentBytes(t *testing.T) int64 {
	n, _ := procstatus.Bytes(0, "VmRSS")
	return n
}

var bmp = media.ImageSetting{Format: media.FormatBMP}

func BenchmarkFrameSequentialJPEG(b *testing.B) { benchmarkSequential(b, media.ImageSetting{}) }
func BenchmarkFrameSequentialBMP(b *testing.B)  { benchmarkSequential(b, bmp) }
func BenchmarkFrameRandomJPEG(b *testing.B)     { benchmarkRandom(b, media.ImageSetting{}) }
func BenchmarkFrameRandomBMP(b *testing.B)      { benchmarkRandom(b, bmp) }

// benchmarkSequential reads every frame in order through a frame
// server (with read-ahead), as a sequential reader of the mount does.
func benchmarkSequential(b *testing.B, setting media.ImageSetting) {
	v := openVideo(b, "../testdata/video/h264_bframes_gop30.mp4", 0)
	ctx := context.Background()
	n := v.Index.Frames()
	for b.Loop() {
		src := serving.New(Codec{}, serving.Options{})
		for i := range n {
			if _, err := src.Frame(ctx, v, i, setting); err != nil {
				b.Fatal(err)
			}
		}
		src.Close()
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "frames/s")
}

// benchmarkRandom reads frames of a long-GOP video in random order with no
// cache hits.
func benchmarkRandom(b *testing.B, setting media.ImageSetting) {
	v := openVideo(b, "../testdata/video/h264_gop250.mp4", 0)
	pool := newTestPool(serving.Options{})
	defer pool.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 1))
	frames := 0
	for b.Loop() {
		if _, err := pool.Frame(ctx, v, rng.IntN(v.Index.Frames()), setting); err != nil {
			b.Fatal(err)
		}
		frames++
	}
	b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
}

// shuffledRead reads n frames of fx (all if n < 0) from src as PPM in a
// shuffled order and checks each against sequential decoding.
func shuffledRead(t *testing.T, src *serving.Server, fx fixture, seed uint64, n int) {
	t.Helper()
	want := sequentialHashes(t, fx)
	v := openVideo(t, fx.path, fx.stream)
	order := rand.New(rand.NewPCG(seed, seed)).Perm(v.Index.Frames())
	if n >= 0 {
		order = order[:n]
	}
	for _, i := range order {
		b, err := src.Frame(context.Background(), v, i, media.ImageSetting{Format: media.FormatPPM})
		if err != nil {
			t.Fatalf("%s frame %d: %v", fx.name, i, err)
		}
		if sha256.Sum256(b) != want[i] {
			t.Fatalf("%s frame %d: bytes differ from sequential decoding", fx.name, i)
		}
	}
}

// TestFillDecodesEachGOPOnce reads every frame of real videos with short
// and long GOPs, B-frames and an open GOP in a shuffled order, as a
// training loader does: with fills each GOP is decoded once (a B-frame GOP
// may need a few pictures of the next one), without them its prefix is
// decoded again for most requests; every image is sequential decoding's.
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
			src := serving.New(Codec{}, serving.Options{PictureCacheBytes: -1, CacheBytes: 256 << 20, Readahead: -1, NoFill: noFill})
			// Without fills, a sample of the requests is enough to see the
			// cost per request.
			n := frames
			if noFill {
				n = min(frames, 30)
			}
			shuffledRead(t, src, fx, 7, n)
			src.Close()
			perServed[noFill] = float64(src.PoolStats().Decoded) / float64(n)
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

// TestDiskTierNotPoisoned is the attack on a shared disk tier: a table
// records another video's digest for its own video. Its frames are read
// through a frame server with the disk tier, then the real video's frames
// through another server sharing the directory: they are the real video's
// frames, every one.
func TestDiskTierNotPoisoned(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	other := openVideo(t, "../testdata/video/h264_gop250.mp4", 0)
	data, err := os.ReadFile(real.Key.Object)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	real.Digest = "sha256:" + hex.EncodeToString(sum[:])
	other.Digest = real.Digest // the lie
	ctx := context.Background()
	frames := min(real.Index.Frames(), other.Index.Frames())
	read := func(v media.Video) [][]byte {
		disk, err := diskcache.Open(diskcache.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer disk.Close()
		srv := serving.New(Codec{}, serving.Options{Store: disk, Readahead: -1})
		defer srv.Close()
		var out [][]byte
		for i := range frames {
			b, err := srv.Frame(ctx, v, i, media.ImageSetting{})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		return out
	}
	read(other)
	got := read(real)
	ref := newTestPool(serving.Options{})
	defer ref.Close()
	for i := range frames {
		want, err := ref.Frame(ctx, real, i, media.ImageSetting{})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[i], want) {
			t.Fatalf("frame %d of the real video is another video's frame from the disk tier", i)
		}
	}
}
