package decoder

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/asticode/go-astiav"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
)

func TestImageSettingSizes(t *testing.T) {
	tests := []struct {
		setting        media.ImageSetting
		dispW, dispH   int
		outW, outH     int
		predict        int64
		predictable    bool
		identityPrefix string
	}{
		{media.ImageSetting{Format: media.FormatBMP}, 640, 480, 640, 480, 54 + 1920*480, true, "bmp;size=native;"},
		{media.ImageSetting{Format: media.FormatBMP}, 161, 90, 161, 90, 54 + 484*90, true, "bmp;size=native;"},
		{media.ImageSetting{Format: media.FormatPPM}, 320, 180, 320, 180, int64(len("P6\n320 180\n255\n")) + 3*320*180, true, "ppm;size=native;"},
		{media.ImageSetting{Format: media.FormatPPM, Width: 160}, 320, 180, 160, 90, int64(len("P6\n160 90\n255\n")) + 3*160*90, true, "ppm;size=160x0;"},
		{media.ImageSetting{Format: media.FormatBMP, Height: 100}, 480, 270, 178, 100, 54 + 536*100, true, "bmp;size=0x100;"},
		{media.ImageSetting{Format: media.FormatBMP, Width: 33, Height: 7}, 480, 270, 33, 7, 54 + 100*7, true, "bmp;size=33x7;"},
		{media.ImageSetting{}, 640, 480, 640, 480, 0, false, "jpeg;q=95;size=native;"},
		{media.ImageSetting{JPEGQuality: 100, Width: 64}, 640, 480, 64, 48, 0, false, "jpeg;q=100;size=64x0;"},
		{media.ImageSetting{Format: media.FormatPNG, JPEGQuality: 50}, 640, 480, 640, 480, 0, false, "png;size=native;"},
	}
	for _, tc := range tests {
		w, h := tc.setting.OutputSize(tc.dispW, tc.dispH)
		if w != tc.outW || h != tc.outH {
			t.Errorf("%+v.OutputSize(%d, %d) = %d, %d; want %d, %d", tc.setting, tc.dispW, tc.dispH, w, h, tc.outW, tc.outH)
		}
		size, ok := media.PredictSize(tc.setting, tc.dispW, tc.dispH)
		if size != tc.predict || ok != tc.predictable {
			t.Errorf("%+v.PredictSize = %d, %v; want %d, %v", tc.setting, size, ok, tc.predict, tc.predictable)
		}
		id := Identity(tc.setting)
		if !strings.HasPrefix(id, tc.identityPrefix) || !strings.Contains(id, "lavc59.") || !strings.Contains(id, "sws") || !strings.Contains(id, "lavfi") {
			t.Errorf("%+v.Identity() = %q, want prefix %q and library versions", tc.setting, id, tc.identityPrefix)
		}
	}
	if Identity(media.ImageSetting{}) != Identity(media.ImageSetting{JPEGQuality: media.DefaultJPEGQuality}) {
		t.Error("the default quality and its explicit value have different identities")
	}
	for _, bad := range []media.ImageSetting{{Format: 9}, {JPEGQuality: 101}, {JPEGQuality: -1}, {Width: -1}, {Height: media.MaxImageDimension + 1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validates", bad)
		}
	}
	if id := Identity(media.ImageSetting{}); !strings.Contains(id, "libjpeg-turbo:") || strings.Contains(id, "unavailable") {
		t.Errorf("JPEG identity %q does not fingerprint libjpeg-turbo", id)
	}
}

// TestImageFormats checks every format against the exact RGB of the PPM:
// PNG and BMP must hold the same pixels (BMP's bgr24 conversion must equal
// rgb24 with channels swapped), JPEG must be close, and BMP/PPM sizes must
// be the predicted ones, for every frame of a few fixtures and for scaled
// settings.
func TestImageFormats(t *testing.T) {
	videos := []string{"../testdata/video/h264_bframes_gop30.mp4", "../testdata/video/hevc.mp4", "../testdata/video/mpeg4_part2.mp4",
		realDir + "/h264_10bits.mp4", realDir + "/bt709_full_range.mp4", realDir + "/av1_video.mkv", realDir + "/nasa_13013.mp4"}
	ctx := context.Background()
	for _, path := range videos {
		t.Run(path[strings.LastIndex(path, "/")+1:], func(t *testing.T) {
			t.Parallel()
			v, s, r := renderingSession(t, path)
			// Every frame of the small videos; a few million pixels' worth
			// spread over the big ones (the checks are per-pixel Go loops,
			// slow under -race).
			step := 1
			if n, px := v.Index.Frames(), s.info.Width*s.info.Height; n*px > 3_000_000 {
				step = max(1, n/max(3, 5_000_000/px))
			}
			for i := 0; i < v.Index.Frames(); i += step {
				f, err := s.decodeTo(ctx, i)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				enc := func(set media.ImageSetting) []byte {
					b, err := r.encode(nil, f, s.st, set.Normalize())
					if err != nil {
						t.Fatalf("frame %d %+v: %v", i, set, err)
					}
					if size, ok := media.PredictSize(set, s.info.Width, s.info.Height); ok && int64(len(b)) != size {
						t.Fatalf("frame %d %+v: %d bytes, predicted %d", i, set, len(b), size)
					}
					return b
				}
				_, _, rgb := ppmPixels(t, enc(media.ImageSetting{Format: media.FormatPPM}))
				bw, bh, brgb := bmpPixels(t, enc(media.ImageSetting{Format: media.FormatBMP}))
				if bw != s.info.Width || bh != s.info.Height || !bytes.Equal(brgb, rgb) {
					t.Fatalf("frame %d: BMP pixels differ from PPM's", i)
				}
				npy := enc(media.ImageSetting{Format: media.FormatNPY})
				if hdr := media.NPYHeader(s.info.Width, s.info.Height); !bytes.HasPrefix(npy, []byte(hdr)) || !bytes.Equal(npy[len(hdr):], rgb) {
					t.Fatalf("frame %d: the .npy file is not its header and PPM's pixels", i)
				}
				if step == 1 && i%5 != 0 {
					s.frame.Unref()
					continue
				}
				img, err := png.Decode(bytes.NewReader(enc(media.ImageSetting{Format: media.FormatPNG})))
				if err != nil {
					t.Fatalf("frame %d PNG: %v", i, err)
				}
				if d := maxAbsDiff(rgbOf(img), rgb); d != 0 {
					t.Fatalf("frame %d: PNG differs from PPM by %d", i, d)
				}
				jb := enc(media.ImageSetting{Format: media.FormatJPEG, JPEGQuality: 100})
				jimg, err := jpeg.Decode(bytes.NewReader(jb))
				if err != nil {
					t.Fatalf("frame %d JPEG: %v", i, err)
				}
				if mean := meanAbsDiff(rgbOf(jimg), rgb); mean > 3 {
					t.Errorf("frame %d: JPEG at quality 100 is off by %.2f levels on average", i, mean)
				}
				// Scaled, BMP still holds the PPM's pixels.
				_, _, small := ppmPixels(t, enc(media.ImageSetting{Format: media.FormatPPM, Height: 31}))
				if _, _, bsmall := bmpPixels(t, enc(media.ImageSetting{Format: media.FormatBMP, Height: 31})); !bytes.Equal(bsmall, small) {
					t.Fatalf("frame %d: scaled BMP pixels differ from scaled PPM's", i)
				}
				for _, set := range []media.ImageSetting{{Format: media.FormatPPM, Width: 50}, {Format: media.FormatBMP, Height: 31}, {Format: media.FormatPNG, Width: 40, Height: 40}, {Format: media.FormatJPEG, Width: 17}} {
					b := enc(set)
					w, h := set.OutputSize(s.info.Width, s.info.Height)
					var cfg image.Config
					switch set.Format {
					case media.FormatPNG:
						cfg, err = png.DecodeConfig(bytes.NewReader(b))
					case media.FormatJPEG:
						cfg, err = jpeg.DecodeConfig(bytes.NewReader(b))
					case media.FormatBMP:
						cfg.Width, cfg.Height, _ = bmpPixels(t, b)
					case media.FormatPPM:
						cfg.Width, cfg.Height, _ = ppmPixels(t, b)
					}
					if err != nil || cfg.Width != w || cfg.Height != h {
						t.Fatalf("frame %d %+v: %dx%d (%v), want %dx%d", i, set, cfg.Width, cfg.Height, err, w, h)
					}
				}
				s.frame.Unref()
			}
		})
	}
}

func rgbOf(img image.Image) []byte {
	b := img.Bounds()
	out := make([]byte, 0, 3*b.Dx()*b.Dy())
	if rgba, ok := img.(*image.RGBA); ok && rgba.Rect.Min == (image.Point{}) && rgba.Stride == 4*b.Dx() {
		for i := 0; i < len(rgba.Pix); i += 4 {
			out = append(out, rgba.Pix[i:i+3]...)
		}
		return out
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			out = append(out, byte(r>>8), byte(g>>8), byte(bl>>8))
		}
	}
	return out
}

func meanAbsDiff(a, b []byte) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 256
	}
	var sum int
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		sum += d
	}
	return float64(sum) / float64(len(a))
}

// TestJPEGIsPlainJFIF: the JPEG must carry no encoder version or other
// varying metadata, and decode with standard tools.
func TestJPEGIsPlainJFIF(t *testing.T) {
	t.Parallel()
	v := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	pool := newTestPool(serving.Options{})
	defer pool.Close()
	b, err := pool.Frame(context.Background(), v, 3, media.ImageSetting{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff, 0xe0}) || !bytes.Contains(b[:32], []byte("JFIF")) {
		t.Errorf("not JFIF: % x", b[:16])
	}
	if bytes.Contains(b, []byte("Lavc")) {
		t.Error("JPEG names the encoder version")
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width != 160 || cfg.Height != 120 {
		t.Errorf("DecodeConfig: %+v, %v", cfg, err)
	}
	cmd := exec.Command("ffprobe", "-v", "error", "-show_entries", "stream=pix_fmt", "-of", "csv=p=0", "-")
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "yuvj420p" {
		t.Errorf("ffprobe says %q, %v; want yuvj420p", out, err)
	}
}

// jpegSamples encodes pictures of random pixels at several qualities and
// sizes (odd ones exercise the edge blocks, where the SIMD code differs
// most from the C code) and returns the JPEG files.
func jpegSamples(t testing.TB) [][]byte {
	rng := rand.New(rand.NewPCG(5, 5))
	var out [][]byte
	for _, size := range [][2]int{{640, 480}, {1, 1}, {2, 1}, {3, 3}, {17, 9}, {481, 271}} {
		w, h := size[0], size[1]
		pic := make([]byte, 3*w*h)
		for i := range pic {
			// Smooth gradients with noise: like video, unlike pure noise.
			pic[i] = byte(i/3%w + i/(3*w) + int(rng.Uint32()%16))
		}
		for _, q := range []int{1, 50, 90, 95, 100} {
			e, err := newJPEGEncoder(encKey{format: media.FormatJPEG, quality: q, width: w, height: h})
			if err != nil {
				t.Fatal(err)
			}
			b, err := e.compress(nil, unsafe.Pointer(&pic[0]), 3*w)
			e.free()
			if err != nil {
				t.Fatalf("%dx%d q%d: %v", w, h, q, err)
			}
			out = append(out, b)
		}
	}
	return out
}

// TestJPEGWithoutSIMD holds libjpeg-turbo's SIMD code to its C code, byte
// for byte: the mount promises the same bytes for a frame on every
// machine, whatever vector instructions it has. JSIMD_FORCENONE is read
// once per process, so the C code runs in a child test process.
func TestJPEGWithoutSIMD(t *testing.T) {
	if os.Getenv("FRAMEFS_JPEG_SAMPLES") != "" {
		return // the child's own run of this test
	}
	t.Parallel()
	out := filepath.Join(t.TempDir(), "samples")
	cmd := exec.Command(os.Args[0], "-test.run=^TestJPEGSamplesChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "JSIMD_FORCENONE=1", "FRAMEFS_JPEG_SAMPLES="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, b)
	}
	plain, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	simd := bytes.Join(jpegSamples(t), []byte("--"))
	if !bytes.Equal(plain, simd) {
		t.Fatalf("JPEG bytes with SIMD (%d) differ from those without (%d)", len(simd), len(plain))
	}
}

// TestJPEGSamplesChild writes jpegSamples for TestJPEGWithoutSIMD, in
// the child process that test starts; in any other run it has nothing to
// do (the helper-process pattern of os/exec's tests).
func TestJPEGSamplesChild(t *testing.T) {
	out := os.Getenv("FRAMEFS_JPEG_SAMPLES")
	if out == "" {
		return
	}
	if err := os.WriteFile(out, bytes.Join(jpegSamples(t), []byte("--")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestJPEGBottomUp: a picture whose rows run upwards in memory (what the
// vflip filter leaves) encodes like the same picture stored top down.
func TestJPEGBottomUp(t *testing.T) {
	t.Parallel()
	const w, h = 37, 23
	top := make([]byte, 3*w*h)
	for i := range top {
		top[i] = byte(i * 7 / 3)
	}
	bottom := make([]byte, len(top))
	for y := range h {
		copy(bottom[(h-1-y)*3*w:], top[y*3*w:(y+1)*3*w])
	}
	e, err := newJPEGEncoder(encKey{format: media.FormatJPEG, quality: 90, width: w, height: h})
	if err != nil {
		t.Fatal(err)
	}
	defer e.free()
	want, err := e.compress(nil, unsafe.Pointer(&top[0]), 3*w)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.compress(nil, unsafe.Pointer(&bottom[(h-1)*3*w]), -3*w)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the bottom-up picture encodes differently")
	}
	if img, err := jpeg.Decode(bytes.NewReader(got)); err != nil || img.Bounds().Dx() != w || img.Bounds().Dy() != h {
		t.Errorf("decode: %v", err)
	}
}

func BenchmarkJPEG(b *testing.B) {
	const w, h = 640, 480
	pic := make([]byte, 3*w*h)
	for i := range pic {
		pic[i] = byte(i/3%w + i/(3*w))
	}
	e, err := newJPEGEncoder(encKey{format: media.FormatJPEG, quality: media.DefaultJPEGQuality, width: w, height: h})
	if err != nil {
		b.Fatal(err)
	}
	defer e.free()
	for b.Loop() {
		if _, err := e.compress(nil, unsafe.Pointer(&pic[0]), 3*w); err != nil {
			b.Fatal(err)
		}
	}
}

// TestScaleFilters: a picture made smaller is scaled bilinearly (the
// antialiased filter of torchvision's Resize), one made larger bicubic,
// both in the decoded pixel format before the conversion to RGB: each
// scaled frame must equal the ffmpeg command line's frame through that
// chain, and the smaller one must not be the bicubic one.
func TestScaleFilters(t *testing.T) {
	t.Parallel()
	const path = "../testdata/video/h264_bframes_gop30.mp4" // 160x120
	ctx := context.Background()
	v, s, r := renderingSession(t, path)
	chain := func(w, h int, flags string) string {
		return fmt.Sprintf("scale=w=%d:h=%d:flags=%s,format=yuv420p,scale=flags=bicubic,format=rgb24", w, h, flags)
	}
	for _, c := range []struct {
		w, h          int
		flags, others string
	}{{64, 48, "bilinear", "bicubic"}, {320, 200, "bicubic", "bilinear"}} {
		set := media.ImageSetting{Format: media.FormatPPM, Width: c.w, Height: c.h}.Normalize()
		var ours [][]byte
		for i := range v.Index.Frames() {
			f, err := s.decodeTo(ctx, i)
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			b, err := r.encode(nil, f, s.st, set)
			if err != nil {
				t.Fatalf("frame %d %dx%d: %v", i, c.w, c.h, err)
			}
			_, _, pix := ppmPixels(t, b)
			ours = append(ours, pix)
		}
		same, differ := 0, 0
		n := ffmpegFiltered(t, path, 0, chain(c.w, c.h, c.flags), c.w, c.h, func(i int, rgb []byte) {
			if i < len(ours) && bytes.Equal(ours[i], rgb) {
				same++
			}
		})
		ffmpegFiltered(t, path, 0, chain(c.w, c.h, c.others), c.w, c.h, func(i int, rgb []byte) {
			if i < len(ours) && !bytes.Equal(ours[i], rgb) {
				differ++
			}
		})
		if n != len(ours) || same != n {
			t.Errorf("%dx%d: %d of %d frames equal ffmpeg's %s chain (ffmpeg made %d)", c.w, c.h, same, len(ours), c.flags, n)
		}
		if differ == 0 {
			t.Errorf("%dx%d: every frame equals ffmpeg's %s chain too", c.w, c.h, c.others)
		}
	}
}

// renderingSession opens the video at path (its first video stream), a
// session bound to it and a renderer, closed when the test ends.
func renderingSession(t *testing.T, path string) (media.Video, *session, *renderer) {
	t.Helper()
	v := openVideo(t, path, -1)
	s, err := openSession(context.Background(), v, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Bind(context.Background(), v.R)
	r := newRenderer()
	t.Cleanup(r.Close)
	return v, s, r
}

// TestJPEGFromPlanes: 8-bit BT.601 4:2:0 pictures at their own size are
// encoded from their planes (limited-range samples expanded, full-range
// ones as they are), within rounding of the JPEG the RGB route makes and
// as close to the exact RGB as that one; every other picture takes the
// RGB route, byte for byte.
func TestJPEGFromPlanes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	video := func(name string, args ...string) string {
		return ffmpegTo(t, filepath.Join(dir, name), append([]string{"-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
			"-frames:v", "5", "-c:v", "libx264", "-preset", "veryfast"}, args...)...)
	}
	jpeg100 := media.ImageSetting{Format: media.FormatJPEG, JPEGQuality: 100}.Normalize()
	cases := []struct {
		path            string
		setting         media.ImageSetting
		planes, limited bool
	}{
		{video("limited.mp4", "-pix_fmt", "yuv420p"), jpeg100, true, true},
		{video("full.mp4", "-pix_fmt", "yuvj420p"), jpeg100, true, false},
		{video("smpte170m.mp4", "-pix_fmt", "yuv420p", "-colorspace", "smpte170m"), jpeg100, true, true},
		{video("bt709.mp4", "-pix_fmt", "yuv420p", "-colorspace", "bt709"), jpeg100, false, false},
		{video("yuv444.mp4", "-pix_fmt", "yuv444p"), jpeg100, false, false},
		{realDir + "/h264_10bits.mp4", jpeg100, false, false},
		{filepath.Join(dir, "limited.mp4"), media.ImageSetting{Format: media.FormatJPEG, Width: 160}.Normalize(), false, false},
	}
	ctx := context.Background()
	for _, tc := range cases {
		_, s, r := renderingSession(t, tc.path)
		f, err := s.decodeTo(ctx, 2)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		name := fmt.Sprintf("%s %+v", filepath.Base(tc.path), tc.setting)
		if planes, limited := fromPlanes(getFrameInfo(f), s.st, tc.setting); planes != tc.planes || limited != tc.limited {
			t.Errorf("%s: from planes %v, limited %v; want %v, %v", name, planes, limited, tc.planes, tc.limited)
		}
		got, err := r.encode(nil, f, s.st, tc.setting)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := r.convert(f, getFrameInfo(f), s.st, tc.setting)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := r.encoderFor(tc.setting, s.st)
		if err != nil {
			t.Fatal(err)
		}
		viaRGB, err := enc.encode(nil, out)
		out.Unref()
		if err != nil {
			t.Fatal(err)
		}
		if !tc.planes {
			if !bytes.Equal(got, viaRGB) {
				t.Errorf("%s: not the RGB route's JPEG", name)
			}
			continue
		}
		_, _, exact := ppmPixels(t, mustEncode(t, r, f, s.st, media.ImageSetting{Format: media.FormatPPM}))
		a, err := jpeg.Decode(bytes.NewReader(got))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := jpeg.Decode(bytes.NewReader(viaRGB))
		if err != nil {
			t.Fatal(err)
		}
		planes, rgb := rgbOf(a), rgbOf(b)
		fromRGB, toRGB, toExact := meanAbsDiff(rgb, exact), meanAbsDiff(planes, rgb), meanAbsDiff(planes, exact)
		if toRGB > 1 {
			t.Errorf("%s: %.2f levels from the RGB route's JPEG on average", name, toRGB)
		}
		if toExact > fromRGB+0.5 {
			t.Errorf("%s: %.2f levels from the exact RGB on average, the RGB route's JPEG %.2f", name, toExact, fromRGB)
		}
		t.Logf("%s: %.2f levels from the RGB route's JPEG, %.2f from the exact RGB (the RGB route's %.2f)", name, toRGB, toExact, fromRGB)
	}
}

func mustEncode(t *testing.T, r *renderer, f *astiav.Frame, st *stream, setting media.ImageSetting) []byte {
	t.Helper()
	b, err := r.encode(nil, f, st, setting.Normalize())
	if err != nil {
		t.Fatal(err)
	}
	return b
}
