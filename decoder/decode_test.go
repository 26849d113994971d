package decoder

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
)

// TestFramesMatchFFmpeg decodes every frame of every fixture in order and
// compares it, pixel for pixel, with what the ffmpeg command line outputs
// for the stream as rgb24: same number of frames, same order, same bytes.
func TestFramesMatchFFmpeg(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.name, func(t *testing.T) {
			t.Parallel()
			v := openVideo(t, fx.path, fx.stream)
			if v.Index.Frames() != fx.frames || len(fx.pts) != fx.frames {
				t.Fatalf("index has %d frames, golden %d", v.Index.Frames(), fx.frames)
			}
			pool := newTestPool(serving.Options{MaxSessionsPerVideo: 1})
			defer pool.Close()
			info, err := pool.Info(context.Background(), v)
			if err != nil {
				t.Fatal(err)
			}
			hashes := sequentialHashes(t, fx)
			n := ffmpegFrames(t, fx.path, fx.stream, info.Width, info.Height, func(i int, rgb []byte) {
				if i >= len(hashes) {
					return
				}
				want := append([]byte(ppmHeader(info.Width, info.Height)), rgb...)
				if sha256.Sum256(want) != hashes[i] {
					t.Errorf("frame %d differs from ffmpeg's", i)
				}
			})
			if n != len(hashes) {
				t.Errorf("ffmpeg output %d frames, framefs %d", n, len(hashes))
			}
		})
	}
}

// TestRandomAccessMatchesSequential reads frames in shuffled orders, with
// one reused session and with a fresh session per frame, and requires the
// bytes sequential decoding gave.
func TestRandomAccessMatchesSequential(t *testing.T) {
	ctx := context.Background()
	ppm := media.ImageSetting{Format: media.FormatPPM}
	for _, fx := range fixtures(t) {
		t.Run(fx.name, func(t *testing.T) {
			t.Parallel()
			want := sequentialHashes(t, fx)
			v := openVideo(t, fx.path, fx.stream)
			n := v.Index.Frames()

			// One session, every frame (at most 120), shuffled.
			reused := newTestPool(serving.Options{MaxSessionsPerVideo: 1})
			defer reused.Close()
			for _, i := range shuffled(n, 120, 1) {
				b, err := reused.Frame(ctx, v, i, ppm)
				if err != nil {
					t.Fatalf("reused session, frame %d: %v", i, err)
				}
				if sha256.Sum256(b) != want[i] {
					t.Fatalf("reused session, frame %d differs from sequential decoding", i)
				}
			}
			if st := reused.PoolStats(); st.Opened != 1 {
				t.Errorf("reused pool opened %d sessions, want 1", st.Opened)
			}
			// Backwards, which defeats every continuation.
			for i := n - 1; i >= max(0, n-12); i-- {
				b, err := reused.Frame(ctx, v, i, ppm)
				if err != nil || sha256.Sum256(b) != want[i] {
					t.Fatalf("backwards, frame %d: %v (or bytes differ)", i, err)
				}
			}

			// A fresh session per frame.
			for _, i := range shuffled(n, 12, 2) {
				s, err := openSession(ctx, v, 1)
				if err != nil {
					t.Fatal(err)
				}
				s.Bind(ctx, v.R)
				b, err := sessionImage(ctx, s, i, ppm)
				s.Close()
				if err != nil {
					t.Fatalf("fresh session, frame %d: %v", i, err)
				}
				if sha256.Sum256(b) != want[i] {
					t.Fatalf("fresh session, frame %d differs from sequential decoding", i)
				}
			}
		})
	}
}

var referenceName = regexp.MustCompile(`^(.+)\.stream(\d+)\.frame(\d+)\.png$`)

// TestReferenceFramesExact compares decoded frames with the reference
// PNGs of the real-world fixtures, made by the ffmpeg command line: the
// maximum difference must be 0, reached in order and in shuffled order.
func TestReferenceFramesExact(t *testing.T) {
	refs, err := filepath.Glob(filepath.Join(realDir, "reference", "*.png"))
	if err != nil || len(refs) == 0 {
		t.Fatalf("no reference frames: %v", err)
	}
	type ref struct {
		video  string
		stream int
		frame  int
		rgb    []byte
		w, h   int
	}
	byVideo := map[string][]ref{}
	for _, p := range refs {
		m := referenceName.FindStringSubmatch(filepath.Base(p))
		if m == nil {
			t.Fatalf("unexpected reference name %s", p)
		}
		stream, _ := strconv.Atoi(m[2])
		frame, _ := strconv.Atoi(m[3])
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b := img.Bounds()
		rgba := image.NewNRGBA(b)
		draw.Draw(rgba, b, img, b.Min, draw.Src)
		rgb := make([]byte, 0, 3*b.Dx()*b.Dy())
		for i := 0; i < len(rgba.Pix); i += 4 {
			rgb = append(rgb, rgba.Pix[i:i+3]...)
		}
		key := fmt.Sprintf("%s#%d", m[1], stream)
		byVideo[key] = append(byVideo[key], ref{m[1], stream, frame, rgb, b.Dx(), b.Dy()})
	}
	ctx := context.Background()
	for key, list := range byVideo {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			v := openVideo(t, filepath.Join(realDir, list[0].video), list[0].stream)
			check := func(how string, r ref, b []byte) {
				w, h, pix := ppmPixels(t, b)
				if w != r.w || h != r.h {
					t.Fatalf("%s: frame %d is %dx%d, reference %dx%d", how, r.frame, w, h, r.w, r.h)
				}
				if d := maxAbsDiff(pix, r.rgb); d != 0 {
					t.Errorf("%s: frame %d: maximum difference %d from the reference, want 0", how, r.frame, d)
				}
			}
			// In order: one session walks the video.
			seq := newTestPool(serving.Options{MaxSessionsPerVideo: 1})
			defer seq.Close()
			byFrame := map[int]ref{}
			for _, r := range list {
				byFrame[r.frame] = r
			}
			last := sortedKeys(byFrame)[len(byFrame)-1]
			for i := 0; i <= last; i++ {
				b, err := seq.Frame(ctx, v, i, media.ImageSetting{Format: media.FormatPPM})
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if r, ok := byFrame[i]; ok {
					check("sequential", r, b)
				}
			}
			// Shuffled, twice, on a fresh pool.
			rnd := newTestPool(serving.Options{MaxSessionsPerVideo: 1})
			defer rnd.Close()
			for round := range 2 {
				for _, j := range shuffled(len(list), len(list), uint64(10+round)) {
					b, err := rnd.Frame(ctx, v, list[j].frame, media.ImageSetting{Format: media.FormatPPM})
					if err != nil {
						t.Fatalf("frame %d: %v", list[j].frame, err)
					}
					check("shuffled", list[j], b)
				}
			}
		})
	}
}

// TestOpenGOPLeadingFrames checks the RASL frames of hevc.mp4: frames 27-29
// lead the CRA at 30 and reference the GOP before it, so reaching them
// must start at the keyframe before, and the CRA itself must not.
func TestOpenGOPLeadingFrames(t *testing.T) {
	t.Parallel()
	fx := fixture{name: "hevc.mp4.stream0", path: "../testdata/video/hevc.mp4"}
	want := sequentialHashes(t, fx)
	v := openVideo(t, fx.path, 0)
	ctx := context.Background()
	for _, i := range []int{29, 28, 27, 30, 31, 26} {
		pool := newTestPool(serving.Options{})
		b, err := pool.Frame(ctx, v, i, media.ImageSetting{Format: media.FormatPPM})
		pool.Close()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if sha256.Sum256(b) != want[i] {
			t.Errorf("frame %d differs from sequential decoding", i)
		}
	}
}

// TestFirstPresentedFrameNotKey: the edit list of h264_editlist.mp4 hides
// the keyframe and the frames before 0.5 s, so frame 0 is a B/P frame that
// needs the hidden samples decoded first.
func TestFirstPresentedFrameNotKey(t *testing.T) {
	t.Parallel()
	v := openVideo(t, "../testdata/video/h264_editlist.mp4", 0)
	if v.Index.Frame(0).Key || !v.Index.Samples[0].Hidden {
		t.Fatalf("fixture changed: frame 0 key %v, sample 0 hidden %v", v.Index.Frame(0).Key, v.Index.Samples[0].Hidden)
	}
	want := sequentialHashes(t, fixture{name: "h264_editlist.mp4.stream0", path: v.Key.Object})
	for _, i := range []int{0, 14, 1, 15, 16} {
		pool := newTestPool(serving.Options{})
		b, err := pool.Frame(context.Background(), v, i, media.ImageSetting{Format: media.FormatPPM})
		pool.Close()
		if err != nil || sha256.Sum256(b) != want[i] {
			t.Fatalf("frame %d: %v (or bytes differ from sequential decoding)", i, err)
		}
	}
}

// TestRotation makes rotated copies of a fixture (the display matrix set
// by the mov muxer) and compares with the ffmpeg command line, which
// applies the rotation by default.
func TestRotation(t *testing.T) {
	t.Parallel()
	src := "../testdata/video/h264_bframes_gop30.mp4"
	for _, angle := range []int{90, 180, 270} {
		t.Run(strconv.Itoa(angle), func(t *testing.T) {
			t.Parallel()
			path := ffmpegTo(t, filepath.Join(t.TempDir(), "rotated.mp4"),
				"-i", src, "-c", "copy", "-metadata:s:v:0", "rotate="+strconv.Itoa(angle))
			v := openVideo(t, path, 0)
			pool := newTestPool(serving.Options{})
			defer pool.Close()
			info, err := pool.Info(context.Background(), v)
			if err != nil {
				t.Fatal(err)
			}
			if (angle == 180) == (info.Width < info.Height) || info.Rotation == "" {
				t.Fatalf("info %+v for a %d degree rotation of a landscape video", info, angle)
			}
			n := ffmpegFrames(t, path, 0, info.Width, info.Height, func(i int, rgb []byte) {
				if i%7 != 0 {
					return
				}
				b, err := pool.Frame(context.Background(), v, i, media.ImageSetting{Format: media.FormatPPM})
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				_, _, pix := ppmPixels(t, b)
				if d := maxAbsDiff(pix, rgb); d != 0 {
					t.Errorf("frame %d: maximum difference %d from ffmpeg", i, d)
				}
			})
			if n != v.Index.Frames() {
				t.Errorf("ffmpeg output %d frames, index has %d", n, v.Index.Frames())
			}
		})
	}
}

// TestDecoderThreadsSameBytes: frame threading must not change a byte.
func TestDecoderThreadsSameBytes(t *testing.T) {
	t.Parallel()
	v := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	ctx := context.Background()
	var outs [2][][]byte
	for k, threads := range []int{1, 3} {
		pool := newTestPool(serving.Options{DecoderThreads: threads})
		for _, i := range []int{0, 1, 2, 40, 41, 89, 12} {
			b, err := pool.Frame(ctx, v, i, media.ImageSetting{Format: media.FormatPPM})
			if err != nil {
				t.Fatal(err)
			}
			outs[k] = append(outs[k], b)
		}
		pool.Close()
	}
	for i := range outs[0] {
		if !bytes.Equal(outs[0][i], outs[1][i]) {
			t.Errorf("request %d: 1 and 3 decoder threads give different bytes", i)
		}
	}
}

// TestFrameErrors covers requests that must fail: ordinals out of range, an
// index of another video, a video cut short, a damaged frame.
func TestFrameErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := "../testdata/video/h264_bframes_gop30.mp4"
	v := openVideo(t, path, 0)
	pool := newTestPool(serving.Options{})
	defer pool.Close()
	for _, n := range []int{-1, v.Index.Frames()} {
		if _, err := pool.Frame(ctx, v, n, media.ImageSetting{}); !errors.Is(err, media.ErrFrameRange) {
			t.Errorf("frame %d: %v, want media.ErrFrameRange", n, err)
		}
	}

	other := openVideo(t, "../testdata/video/h264_gop250.mp4", 0)
	wrong := v
	wrong.Key.Object += "#wrong-index"
	wrong.Index = other.Index
	if _, err := pool.Frame(ctx, wrong, 5, media.ImageSetting{}); !errors.Is(err, ErrIndexMismatch) {
		t.Errorf("index of another video: %v, want ErrIndexMismatch", err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// Cut in the middle of the media data (of a file with moov in front):
	// frames before the cut decode, frames after it fail with
	// media.ErrFrameDecode, naming the frame.
	fast := openVideo(t, "../testdata/video/h264_faststart.mp4", 0)
	fastData, err := os.ReadFile(fast.Key.Object)
	if err != nil {
		t.Fatal(err)
	}
	cut := fast
	cut.Key.Object += "#cut"
	cutAt := fast.Index.Samples[60].Offset + 10
	cut.R, cut.Size = bytes.NewReader(fastData[:cutAt]), cutAt
	if _, err := pool.Frame(ctx, cut, 70, media.ImageSetting{}); !errors.Is(err, media.ErrFrameDecode) || !containsFrame(err, 70) {
		t.Errorf("frame after the cut: %v, want media.ErrFrameDecode naming frame 70", err)
	}
	if _, err := pool.Frame(ctx, cut, 10, media.ImageSetting{}); err != nil {
		t.Errorf("frame before the cut: %v", err)
	}

	// Damage one P-frame: overwrite its slice data. The frame, and those
	// predicted from it, must fail; frames of other GOPs still decode.
	damaged := append([]byte(nil), data...)
	target := -1
	for ord := 35; ord < 60; ord++ {
		s := v.Index.Frame(ord)
		if !s.Key && s.Size > 64 {
			target = ord
			break
		}
	}
	sm := v.Index.Frame(target)
	for i := sm.Offset + 4; i < sm.Offset+int64(sm.Size); i++ {
		damaged[i] = 0xff
	}
	bad := v
	bad.Key.Object += "#damaged"
	bad.R = bytes.NewReader(damaged)
	_, err = pool.Frame(ctx, bad, target, media.ImageSetting{})
	if !errors.Is(err, media.ErrFrameDecode) || !containsFrame(err, target) {
		t.Errorf("damaged frame %d: %v, want media.ErrFrameDecode naming it", target, err)
	}
	before := pool.PoolStats().Broken
	for _, i := range []int{5, 80} {
		b, err := pool.Frame(ctx, bad, i, media.ImageSetting{Format: media.FormatPPM})
		if err != nil {
			t.Fatalf("frame %d of another GOP after the error: %v", i, err)
		}
		want, _ := pool.Frame(ctx, v, i, media.ImageSetting{Format: media.FormatPPM})
		if !bytes.Equal(b, want) {
			t.Errorf("frame %d of another GOP differs from the undamaged video's", i)
		}
	}
	if after := pool.PoolStats().Broken; after != before {
		t.Errorf("%d sessions broke reading good frames", after-before)
	}
}

func containsFrame(err error, n int) bool {
	return err != nil && regexp.MustCompile(`\bframe `+strconv.Itoa(n)+`\b`).MatchString(err.Error())
}

// TestConcurrentDeterminism decodes the same frames in two goroutines in
// opposite orders, in every format, and requires identical bytes.
func TestConcurrentDeterminism(t *testing.T) {
	t.Parallel()
	v := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	frames := []int{0, 1, 2, 3, 29, 30, 31, 44, 45, 60, 89}
	settings := []media.ImageSetting{
		{Format: media.FormatJPEG}, {Format: media.FormatJPEG, JPEGQuality: 40}, {Format: media.FormatPNG},
		{Format: media.FormatBMP}, {Format: media.FormatPPM}, {Format: media.FormatJPEG, Width: 64},
	}
	results := make([]map[string][]byte, 2)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool := newTestPool(serving.Options{})
			defer pool.Close()
			results[g] = map[string][]byte{}
			for k := range frames {
				i := frames[k]
				if g == 1 {
					i = frames[len(frames)-1-k]
				}
				for _, s := range settings {
					b, err := pool.Frame(context.Background(), v, i, s)
					if err != nil {
						t.Errorf("frame %d %+v: %v", i, s, err)
						return
					}
					results[g][fmt.Sprintf("%d %+v", i, s)] = b
				}
			}
		}()
	}
	wg.Wait()
	for k, b := range results[0] {
		if !bytes.Equal(b, results[1][k]) {
			t.Errorf("%s: bytes differ between the goroutines", k)
		}
	}
}

// TestDrainMatchesSequential: a request that drains the decoder after the
// target's packet (what random readers get) decodes only the reference
// pictures before the target and the target itself; every frame of every
// fixture (B-frames, open GOPs, edit lists, HEVC, AV1, ...) reached that
// way, in shuffled order, must have the bytes sequential decoding gave,
// with one decoder thread and with the frame-threaded decoder the pool
// gives random requests on idle cores. In that second run each random
// request is followed by its next frame, which does not drain and so
// switches back to the session's own decoder.
func TestDrainMatchesSequential(t *testing.T) {
	ctx := context.Background()
	ppm := media.ImageSetting{Format: media.FormatPPM}
	for _, fx := range fixtures(t) {
		t.Run(fx.name, func(t *testing.T) {
			t.Parallel()
			want := sequentialHashes(t, fx)
			v := openVideo(t, fx.path, fx.stream)
			n := v.Index.Frames()
			for _, tc := range []struct{ seekThreads, limit int }{{1, n}, {2, 40}} {
				s, err := openSession(ctx, v, 1)
				if err != nil {
					t.Fatal(err)
				}
				s.seekThreads = tc.seekThreads
				s.Bind(ctx, v.R)
				for _, i := range shuffled(n, tc.limit, 3) {
					ords := []int{i}
					if tc.seekThreads > 1 && i+1 < n {
						ords = append(ords, i+1)
					}
					for k, j := range ords {
						s.alwaysDrain = k == 0
						b, err := sessionImage(ctx, s, j, ppm)
						if err != nil {
							s.Close()
							t.Fatalf("%d seek threads, frame %d: %v", tc.seekThreads, j, err)
						}
						if sha256.Sum256(b) != want[j] {
							s.Close()
							t.Fatalf("%d seek threads, frame %d differs from sequential decoding", tc.seekThreads, j)
						}
					}
				}
				if v.Index.HasBFrames() && s.drains == 0 {
					t.Errorf("%d seek threads: no request drained", tc.seekThreads)
				}
				if tc.seekThreads > 1 && s.drains > 0 && s.spare.threads == 0 {
					t.Errorf("%d seek threads: the threaded decoder was never used", tc.seekThreads)
				}
				s.Close()
			}
		})
	}
}
