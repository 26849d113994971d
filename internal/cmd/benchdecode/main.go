// Command benchdecode reads frames of one video through a serving.Server
// over the decoder, the way a mount serves them, and prints throughput and peak memory as
// NAME VALUE UNIT lines for scripts/bench-decode.sh.
//
//	go run ./internal/cmd/benchdecode -video V -mode seq -format jpeg
//	go run ./internal/cmd/benchdecode -video V -mode random -n 500 -seed 1 -format bmp
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
)

func main() {
	video := flag.String("video", "", "video file")
	mode := flag.String("mode", "seq", "seq: every frame in order; random: -n frames in a shuffled order")
	format := flag.String("format", "jpeg", "image format: jpeg, png, bmp, ppm, npy")
	quality := flag.Int("quality", 0, "JPEG quality (0 = the default)")
	scale := flag.String("scale", "", "scale the images to WxH (0 keeps the aspect ratio)")
	n := flag.Int("n", 500, "frames to read in random mode")
	framesFile := flag.String("frames", "", "random mode: read the frame ordinals from this file (one per line) instead of drawing them")
	seed := flag.Uint64("seed", 1, "random seed")
	cacheBytes := flag.Int64("cache-bytes", 64<<20, "image cache bytes")
	readahead := flag.Int("readahead", 0, "read-ahead frames (0 = default, -1 = off)")
	threads := flag.Int("decoder-threads", 0, "decoder threads (0 = default)")
	seekThreads := flag.Int("seek-threads", 0, "decoder threads of a random request on an otherwise idle pool (0 = default)")
	pictureBytes := flag.Int64("picture-cache-bytes", 0, "decoded pictures kept for random readers, in bytes (0 = default, -1 = none)")
	name := flag.String("name", "framefs", "prefix of the printed figure names")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the reads to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchdecode:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "benchdecode:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	var width, height int
	if *scale != "" {
		if _, err := fmt.Sscanf(*scale, "%dx%d", &width, &height); err != nil {
			fmt.Fprintln(os.Stderr, "benchdecode: -scale wants WxH:", err)
			os.Exit(2)
		}
	}
	if err := run(*video, *mode, *format, *quality, width, height, *n, *seed, *framesFile, *cacheBytes, *readahead,
		serving.Options{DecoderThreads: *threads, SeekThreads: *seekThreads, PictureCacheBytes: *pictureBytes}, *name); err != nil {
		fmt.Fprintln(os.Stderr, "benchdecode:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(path, mode, format string, quality, width, height, n int, seed uint64, framesFile string, cacheBytes int64, readahead int, opts serving.Options, name string) error {
	ctx := context.Background()
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	ix, err := decoder.IndexVideo(ctx, f, st.Size(), -1)
	if err != nil {
		return err
	}
	imgFormat, err := media.ParseImageFormat(format)
	if err != nil {
		return err
	}
	setting := media.ImageSetting{Format: imgFormat, JPEGQuality: quality, Width: width, Height: height}
	v := media.Video{Key: media.VideoKey{Object: path, Length: st.Size()}, R: f, Size: st.Size(), Index: ix}

	var order []int
	switch mode {
	case "seq":
		for i := range ix.Frames() {
			order = append(order, i)
		}
	case "random":
		if framesFile != "" {
			data, err := os.ReadFile(framesFile)
			if err != nil {
				return err
			}
			for _, f := range strings.Fields(string(data)) {
				i, err := strconv.Atoi(f)
				if err != nil || i < 0 || i >= ix.Frames() {
					return fmt.Errorf("%s: bad frame ordinal %q", framesFile, f)
				}
				order = append(order, i)
			}
			break
		}
		rng := rand.New(rand.NewPCG(seed, seed))
		order = rng.Perm(ix.Frames())[:min(n, ix.Frames())]
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}

	opts.CacheBytes, opts.Readahead = cacheBytes, readahead
	src := serving.New(decoder.Codec{}, opts)
	defer src.Close()

	start := time.Now()
	var bytes int64
	for _, i := range order {
		b, err := src.Frame(ctx, v, i, setting)
		if err != nil {
			return err
		}
		bytes += int64(len(b))
	}
	elapsed := time.Since(start).Seconds()

	ps, cs := src.PoolStats(), src.CacheStats()
	fmt.Fprintf(os.Stderr, "pool: opened %d seeks %d decoded %d pictures kept %d hits %d; cache: hits %d misses %d shared %d evictions %d\n",
		ps.Opened, ps.Seeks, ps.Decoded, ps.PicturesKept, ps.PictureHits, cs.Hits, cs.Misses, cs.Shared, cs.Evictions)

	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	fmt.Printf("%s_frames %d frames\n", name, len(order))
	fmt.Printf("%s_seconds %.3f s\n", name, elapsed)
	fmt.Printf("%s_fps %.1f frames/s\n", name, float64(len(order))/elapsed)
	fmt.Printf("%s_mean_image_bytes %d bytes\n", name, bytes/int64(max(len(order), 1)))
	fmt.Printf("%s_peak_rss %.1f MB\n", name, float64(ru.Maxrss)/1024)
	return nil
}
