package decoder

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/videoidx"
)

// fixture is one video stream with an FFmpeg golden report
// (testdata/golden/<file>.stream<S>.json, made by scripts/make-golden.sh).
type fixture struct {
	name   string // file.streamS
	path   string
	stream int
	frames int // frames FFmpeg decodes
	pts    []int64
}

// fixtures returns every golden fixture with the path of its video, from
// the project's own videos or the real-world ones.
func fixtures(t testing.TB) []fixture {
	t.Helper()
	files, err := filepath.Glob("../testdata/golden/*.stream*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files under testdata/golden: %v", err)
	}
	var out []fixture
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g struct {
			File   string  `json:"file"`
			Stream int     `json:"stream"`
			Frames int     `json:"frames"`
			PTS    []int64 `json:"pts"`
		}
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		fx := fixture{name: fmt.Sprintf("%s.stream%d", g.File, g.Stream), stream: g.Stream, frames: g.Frames, pts: g.PTS}
		if p := filepath.Join("../testdata/video", g.File); fileExists(p) {
			fx.path = p
		} else if p := filepath.Join(realDir, g.File); fileExists(p) {
			fx.path = p
		} else {
			t.Fatalf("%s: the video %s is in neither ../testdata/video nor %s", f, g.File, realDir)
		}
		out = append(out, fx)
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// indexes caches the frame index of each (path, stream).
var indexes sync.Map

// openVideo opens a fixture as a media.Video. The file stays open until the test
// ends.
func openVideo(t testing.TB, path string, stream int) media.Video {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("%s#%d", path, stream)
	ix, ok := indexes.Load(key)
	if !ok {
		idx, err := IndexVideo(context.Background(), f, st.Size(), stream)
		if err != nil {
			t.Fatalf("index %s: %v", path, err)
		}
		ix, _ = indexes.LoadOrStore(key, idx)
	}
	v := media.Video{Key: media.VideoKey{Object: path, Length: st.Size()}, R: f, Size: st.Size()}
	v.Index = ix.(*videoidx.Index)
	return v
}

// sequentialHashes decodes every frame of fx in order (PPM, so the hash
// covers the exact RGB pixels) once per test binary and returns the SHA-256
// of each frame.
func sequentialHashes(t *testing.T, fx fixture) [][32]byte {
	t.Helper()
	v, _ := seqCache.LoadOrStore(fx.name, &seqEntry{})
	e := v.(*seqEntry)
	e.once.Do(func() {
		video := openVideo(t, fx.path, fx.stream)
		pool := newTestPool(serving.Options{MaxSessionsPerVideo: 1})
		defer pool.Close()
		for i := range video.Index.Frames() {
			b, err := pool.Frame(context.Background(), video, i, media.ImageSetting{Format: media.FormatPPM})
			if err != nil {
				e.err = fmt.Errorf("sequential frame %d: %w", i, err)
				return
			}
			e.hashes = append(e.hashes, sha256.Sum256(b))
		}
		if st := pool.PoolStats(); st.Seeks != 0 {
			e.err = fmt.Errorf("sequential decoding of %d frames seeked %d times, want 0", len(e.hashes), st.Seeks)
		}
	})
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.hashes
}

type seqEntry struct {
	once   sync.Once
	hashes [][32]byte
	err    error
}

var seqCache sync.Map

// ffmpegFrames runs the ffmpeg command line on the stream and calls fn
// with every decoded frame as raw rgb24 of the given size, in output order:
// FFmpeg's own answer to what the frames are.
func ffmpegFrames(t *testing.T, path string, stream, width, height int, fn func(i int, rgb []byte)) int {
	t.Helper()
	return ffmpegFiltered(t, path, stream, "", width, height, fn)
}

// ffmpegFiltered is ffmpegFrames with the filter chain vf (none if "")
// applied to every frame; width and height are its output size.
func ffmpegFiltered(t *testing.T, path string, stream int, vf string, width, height int, fn func(i int, rgb []byte)) int {
	t.Helper()
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("ffmpeg is required: %v", err)
	}
	args := []string{"-v", "error", "-threads", "1", "-i", path, "-map", "0:" + strconv.Itoa(stream), "-vsync", "passthrough"}
	if vf != "" {
		args = append(args, "-vf", vf)
	}
	cmd := exec.Command(bin, append(args, "-f", "rawvideo", "-pix_fmt", "rgb24", "-")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(out, 1<<20)
	buf := make([]byte, width*height*3)
	n := 0
	for {
		if _, err := io.ReadFull(r, buf); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("reading ffmpeg output: %v", err)
			}
			break
		}
		fn(n, buf)
		n++
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, stderr.String())
	}
	return n
}

// ppmPixels returns the pixels of a PPM made by this package.
func ppmPixels(t testing.TB, b []byte) (w, h int, pix []byte) {
	t.Helper()
	var maxv int
	n, err := fmt.Sscanf(string(b[:min(len(b), 64)]), "P6\n%d %d\n%d\n", &w, &h, &maxv)
	if err != nil || n != 3 || maxv != 255 {
		t.Fatalf("not a PPM made by this package: %q", b[:min(len(b), 20)])
	}
	hdr := len(ppmHeader(w, h))
	if len(b) != hdr+3*w*h {
		t.Fatalf("PPM %dx%d has %d bytes, want %d", w, h, len(b), hdr+3*w*h)
	}
	return w, h, b[hdr:]
}

// bmpPixels returns the pixels of a BMP made by this package as top-down
// RGB rows.
func bmpPixels(t testing.TB, b []byte) (w, h int, rgb []byte) {
	t.Helper()
	if len(b) < bmpHeaderSize || b[0] != 'B' || b[1] != 'M' {
		t.Fatalf("not a BMP")
	}
	le := func(o int) int { return int(b[o]) | int(b[o+1])<<8 | int(b[o+2])<<16 | int(b[o+3])<<24 }
	w, h = le(18), le(22)
	stride := bmpStride(w)
	if le(2) != len(b) || le(10) != bmpHeaderSize || len(b) != bmpHeaderSize+stride*h || b[28] != 24 {
		t.Fatalf("BMP header inconsistent: size field %d, file %d, %dx%d", le(2), len(b), w, h)
	}
	rgb = make([]byte, 0, 3*w*h)
	for y := h - 1; y >= 0; y-- {
		row := b[bmpHeaderSize+y*stride:]
		for x := range w {
			rgb = append(rgb, row[3*x+2], row[3*x+1], row[3*x])
		}
		for _, pad := range row[3*w : stride] {
			if pad != 0 {
				t.Fatalf("BMP row padding is not zero")
			}
		}
	}
	return w, h, rgb
}

// shuffled returns 0..n-1 in a seeded random order, cut to at most limit.
func shuffled(n, limit int, seed uint64) []int {
	order := rand.New(rand.NewPCG(seed, 7)).Perm(n)
	return order[:min(limit, n)]
}

func maxAbsDiff(a, b []byte) int {
	if len(a) != len(b) {
		return 256
	}
	d := 0
	for i := range a {
		x := int(a[i]) - int(b[i])
		if x < 0 {
			x = -x
		}
		d = max(d, x)
	}
	return d
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// newTestPool returns a frame server over the decoder that keeps no images
// and reads nothing ahead, so that each Frame call decodes (or takes a kept
// picture), as the tests of the codec ask for frames one at a time.
func newTestPool(opts serving.Options) *serving.Server {
	opts.CacheBytes, opts.Readahead, opts.NoFill = -1, -1, true
	return serving.New(Codec{}, opts)
}

// sessionImage decodes frame ordinal with s and renders it, the way the
// frame server's pool does.
func sessionImage(ctx context.Context, s *session, ordinal int, setting media.ImageSetting) ([]byte, error) {
	pic, err := s.Decode(ctx, ordinal, nil)
	if err != nil {
		return nil, err
	}
	defer pic.Release()
	r := newRenderer()
	defer r.Close()
	return r.Encode(pic, setting.Normalize())
}
