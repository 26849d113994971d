package decoder

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestFrameSourceReadahead walks a video in order: after the first three
// frames, read-ahead must decode the rest (the reader finds them cached or
// in flight), with one session and no seek, and the bytes must be those of
// uncached decoding.
func TestFrameSourceReadahead(t *testing.T) {
	t.Parallel()
	v := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	pool := NewPool(Options{})
	defer pool.Close()
	src := NewFrameSource(pool, FrameSourceOptions{Readahead: 8})
	defer src.Close()
	ref := NewPool(Options{})
	defer ref.Close()
	ctx := context.Background()
	for _, setting := range []ImageSetting{{}, {Format: FormatPNG}} {
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
	cs, ps := src.CacheStats(), pool.Stats()
	frames := int64(v.Index.Frames())
	// Per setting, the first three frames are misses; a few more may be
	// requested before their read-ahead batch is promised.
	if cs.Misses > 2*8 || cs.Hits+cs.Shared < 2*frames-2*8 {
		t.Errorf("cache %+v: want nearly every frame from read-ahead", cs)
	}
	// One seek, back to frame 0 for the second setting, and each frame
	// decoded once; a request that overtakes its read-ahead batch on a
	// starved machine decodes its GOP (30 frames) directly, once more at
	// most per setting.
	if ps.Seeks > 3 || ps.Opened > 2 || ps.Decoded > 2*int(frames)+2*30+4 {
		t.Errorf("pool %+v: want about one seek and each frame decoded about once", ps)
	}
}

// TestFrameSourceSharesLoads: concurrent requests for one frame decode it
// once, whether they share one request's decoding or its GOP's fill.
func TestFrameSourceSharesLoads(t *testing.T) {
	t.Parallel()
	v := openVideo(t, "../testdata/video/h264_gop250.mp4", 0)
	for _, noFill := range []bool{true, false} {
		pool := NewPool(Options{MaxSessionsPerVideo: 4})
		src := NewFrameSource(pool, FrameSourceOptions{Readahead: -1, NoFill: noFill})
		var wg sync.WaitGroup
		results := make([][]byte, 8)
		for g := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, err := src.Frame(context.Background(), v, 240, ImageSetting{})
				if err != nil {
					t.Error(err)
				}
				results[g] = b
			}()
		}
		wg.Wait()
		src.Close()
		pool.Close()
		for _, b := range results[1:] {
			if !bytes.Equal(b, results[0]) {
				t.Fatal("concurrent requests got different bytes")
			}
		}
		cs, fs := src.CacheStats(), src.FillStats()
		if noFill && cs.Misses != 1 || !noFill && (cs.Misses != 0 || fs.Fills != 1) {
			t.Errorf("NoFill %v: cache %+v, fills %+v: want the frame made once for 8 concurrent requests", noFill, cs, fs)
		}
		if ps := pool.Stats(); ps.Opened != 1 {
			t.Errorf("NoFill %v: pool opened %d sessions, want 1", noFill, ps.Opened)
		}
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
		pool := NewPool(Options{MaxSessionsPerVideo: 3})
		src := NewFrameSource(pool, FrameSourceOptions{SizeWorkers: 3, Readahead: -1})
		for _, setting := range []ImageSetting{{}, {Format: FormatPNG, Width: 80}, {Format: FormatBMP}} {
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

// TestFrameSizesParallelChunks: the GOP runs cover every frame once, in
// order, and split only at decode starts.
func TestFrameSizesParallelChunks(t *testing.T) {
	for _, path := range []string{"../testdata/video/hevc.mp4", "../testdata/video/h264_gop250.mp4", "../testdata/video/h264_bframes_gop30.mp4"} {
		v := openVideo(t, path, 0)
		for _, workers := range []int{1, 2, 8} {
			chunks := gopChunks(v, workers)
			next := 0
			for _, c := range chunks {
				if c.from != next || c.to <= c.from {
					t.Fatalf("%s workers %d: chunks %v do not tile the frames", path, workers, chunks)
				}
				if c.from > 0 && v.Index.DecodeStart(c.from) == v.Index.DecodeStart(c.from-1) {
					t.Errorf("%s: chunk at frame %d splits a GOP", path, c.from)
				}
				next = c.to
			}
			if next != v.Index.Frames() {
				t.Fatalf("%s: chunks end at %d of %d frames", path, next, v.Index.Frames())
			}
		}
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
	var videos []Video
	for _, p := range paths {
		videos = append(videos, openVideo(t, p, -1))
	}
	const cacheBytes = 2 << 20
	const pictureBytes = 4 << 20
	pool := NewPool(Options{MaxOpenSessions: 2, MaxSessionsPerVideo: 1, PictureCacheBytes: pictureBytes})
	defer pool.Close()
	src := NewFrameSource(pool, FrameSourceOptions{CacheBytes: cacheBytes})
	defer src.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 5))
	settings := []ImageSetting{{}, {Format: FormatBMP}, {Format: FormatPNG, Width: 64}}
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
		float64(heap0)/1e6, float64(rss0)/1e6, float64(heap1)/1e6, float64(rss1)/1e6, src.CacheStats(), pool.Stats())
	if cs := src.CacheStats(); cs.Bytes > cacheBytes {
		t.Errorf("cache holds %d bytes, limit %d", cs.Bytes, cacheBytes)
	}
	if st := pool.Stats(); st.PictureBytes > pictureBytes || st.PicturesKept == 0 {
		t.Errorf("pool %+v: want kept pictures within %d bytes", st, pictureBytes)
	}
	if st := pool.Stats(); st.Open > 2 || st.Evicted == 0 {
		t.Errorf("pool %+v: want at most 2 open sessions and evictions", st)
	}
	if heap1 > heap0+8<<20 {
		t.Errorf("Go heap grew from %d to %d bytes", heap0, heap1)
	}
	if rss0 > 0 && rss1 > rss0+64<<20 {
		t.Errorf("resident memory grew from %d to %d bytes", rss0, rss1)
	}
}

// residentBytes returns the process's resident set size from /proc, or 0
// where there is none.
func residentBytes(t *testing.T) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	return 0
}

var bmp = ImageSetting{Format: FormatBMP}

func BenchmarkFrameSequentialJPEG(b *testing.B) { benchmarkSequential(b, ImageSetting{}) }
func BenchmarkFrameSequentialBMP(b *testing.B)  { benchmarkSequential(b, bmp) }
func BenchmarkFrameRandomJPEG(b *testing.B)     { benchmarkRandom(b, ImageSetting{}) }
func BenchmarkFrameRandomBMP(b *testing.B)      { benchmarkRandom(b, bmp) }

// benchmarkSequential reads every frame in order through a FrameSource
// (with read-ahead), as a sequential reader of the mount does.
func benchmarkSequential(b *testing.B, setting ImageSetting) {
	v := openVideo(b, "../testdata/video/h264_bframes_gop30.mp4", 0)
	ctx := context.Background()
	n := v.Index.Frames()
	for b.Loop() {
		pool := NewPool(Options{})
		src := NewFrameSource(pool, FrameSourceOptions{})
		for i := range n {
			if _, err := src.Frame(ctx, v, i, setting); err != nil {
				b.Fatal(err)
			}
		}
		src.Close()
		pool.Close()
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "frames/s")
}

// benchmarkRandom reads frames of a long-GOP video in random order with no
// cache hits.
func benchmarkRandom(b *testing.B, setting ImageSetting) {
	v := openVideo(b, "../testdata/video/h264_gop250.mp4", 0)
	pool := NewPool(Options{})
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
