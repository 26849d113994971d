package decoder

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"github.com/asticode/go-astiav"
)

// fillFrame copies tightly packed rgb24 rows into a frame's first plane.
func fillFrame(t *testing.T, f *astiav.Frame, data []byte) {
	t.Helper()
	row := 3 * f.Width()
	ls := f.Linesize()[0]
	base := unsafe.Slice((*byte)(planePointer(f)), ls*f.Height())
	for y := range f.Height() {
		copy(base[y*ls:y*ls+row], data[y*row:(y+1)*row])
	}
}

func planePointer(f *astiav.Frame) unsafe.Pointer {
	var ls int
	return framePlane(f, 0, &ls)
}

func TestImageSettingSizes(t *testing.T) {
	tests := []struct {
		setting        ImageSetting
		dispW, dispH   int
		outW, outH     int
		predict        int64
		predictable    bool
		identityPrefix string
	}{
		{ImageSetting{Format: FormatBMP}, 640, 480, 640, 480, 54 + 1920*480, true, "bmp;size=native;"},
		{ImageSetting{Format: FormatBMP}, 161, 90, 161, 90, 54 + 484*90, true, "bmp;size=native;"},
		{ImageSetting{Format: FormatPPM}, 320, 180, 320, 180, int64(len("P6\n320 180\n255\n")) + 3*320*180, true, "ppm;size=native;"},
		{ImageSetting{Format: FormatPPM, Width: 160}, 320, 180, 160, 90, int64(len("P6\n160 90\n255\n")) + 3*160*90, true, "ppm;size=160x0;"},
		{ImageSetting{Format: FormatBMP, Height: 100}, 480, 270, 178, 100, 54 + 536*100, true, "bmp;size=0x100;"},
		{ImageSetting{Format: FormatBMP, Width: 33, Height: 7}, 480, 270, 33, 7, 54 + 100*7, true, "bmp;size=33x7;"},
		{ImageSetting{}, 640, 480, 640, 480, 0, false, "jpeg;q=95;size=native;"},
		{ImageSetting{JPEGQuality: 100, Width: 64}, 640, 480, 64, 48, 0, false, "jpeg;q=100;size=64x0;"},
		{ImageSetting{Format: FormatPNG, JPEGQuality: 50}, 640, 480, 640, 480, 0, false, "png;size=native;"},
	}
	for _, tc := range tests {
		w, h := tc.setting.OutputSize(tc.dispW, tc.dispH)
		if w != tc.outW || h != tc.outH {
			t.Errorf("%+v.OutputSize(%d, %d) = %d, %d; want %d, %d", tc.setting, tc.dispW, tc.dispH, w, h, tc.outW, tc.outH)
		}
		size, ok := tc.setting.PredictSize(tc.dispW, tc.dispH)
		if size != tc.predict || ok != tc.predictable {
			t.Errorf("%+v.PredictSize = %d, %v; want %d, %v", tc.setting, size, ok, tc.predict, tc.predictable)
		}
		id := tc.setting.Identity()
		if !strings.HasPrefix(id, tc.identityPrefix) || !strings.Contains(id, "lavc59.") || !strings.Contains(id, "sws") || !strings.Contains(id, "lavfi") {
			t.Errorf("%+v.Identity() = %q, want prefix %q and library versions", tc.setting, id, tc.identityPrefix)
		}
	}
	if (ImageSetting{}).Identity() != (ImageSetting{JPEGQuality: DefaultJPEGQuality}).Identity() {
		t.Error("the default quality and its explicit value have different identities")
	}
	for _, bad := range []ImageSetting{{Format: 9}, {JPEGQuality: 101}, {JPEGQuality: -1}, {Width: -1}, {Height: MaxImageDimension + 1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validates", bad)
		}
	}
	for q, want := range map[int]int{100: 2, 95: 3, 1: 31, 50: 17} {
		if got := jpegQscale(q); got != want {
			t.Errorf("jpegQscale(%d) = %d, want %d", q, got, want)
		}
	}
}

// TestImageFormats checks every format against the exact RGB of the PPM:
// PNG and BMP must hold the same pixels (BMP's bgr24 conversion must equal
// rgb24 with channels swapped), JPEG must be close, and BMP/PPM sizes must
// be the predicted ones, for every frame of a few fixtures and for scaled
// settings.
func TestImageFormats(t *testing.T) {
	videos := []string{"../testdata/video/h264_bframes_gop30.mp4", "../testdata/video/hevc.mp4", "../testdata/video/mpeg4_part2.mp4"}
	if fileExists(realDir) {
		videos = append(videos, realDir+"/h264_10bits.mp4", realDir+"/bt709_full_range.mp4", realDir+"/av1_video.mkv", realDir+"/nasa_13013.mp4")
	}
	ctx := context.Background()
	for _, path := range videos {
		t.Run(path[strings.LastIndex(path, "/")+1:], func(t *testing.T) {
			t.Parallel()
			v := openVideo(t, path, -1)
			s, err := openSession(ctx, v, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			s.bind(ctx, v.R)
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
				enc := func(set ImageSetting) []byte {
					b, err := s.r.encode(f, set.Normalize())
					if err != nil {
						t.Fatalf("frame %d %+v: %v", i, set, err)
					}
					if size, ok := set.PredictSize(s.info.Width, s.info.Height); ok && int64(len(b)) != size {
						t.Fatalf("frame %d %+v: %d bytes, predicted %d", i, set, len(b), size)
					}
					return b
				}
				_, _, rgb := ppmPixels(t, enc(ImageSetting{Format: FormatPPM}))
				bw, bh, brgb := bmpPixels(t, enc(ImageSetting{Format: FormatBMP}))
				if bw != s.info.Width || bh != s.info.Height || !bytes.Equal(brgb, rgb) {
					t.Fatalf("frame %d: BMP pixels differ from PPM's", i)
				}
				if step == 1 && i%5 != 0 {
					s.frame.Unref()
					continue
				}
				img, err := png.Decode(bytes.NewReader(enc(ImageSetting{Format: FormatPNG})))
				if err != nil {
					t.Fatalf("frame %d PNG: %v", i, err)
				}
				if d := maxAbsDiff(rgbOf(img), rgb); d != 0 {
					t.Fatalf("frame %d: PNG differs from PPM by %d", i, d)
				}
				jb := enc(ImageSetting{Format: FormatJPEG, JPEGQuality: 100})
				jimg, err := jpeg.Decode(bytes.NewReader(jb))
				if err != nil {
					t.Fatalf("frame %d JPEG: %v", i, err)
				}
				if mean := meanAbsDiff(rgbOf(jimg), rgb); mean > 3 {
					t.Errorf("frame %d: JPEG at quality 100 is off by %.2f levels on average", i, mean)
				}
				// Scaled, BMP still holds the PPM's pixels.
				_, _, small := ppmPixels(t, enc(ImageSetting{Format: FormatPPM, Height: 31}))
				if _, _, bsmall := bmpPixels(t, enc(ImageSetting{Format: FormatBMP, Height: 31})); !bytes.Equal(bsmall, small) {
					t.Fatalf("frame %d: scaled BMP pixels differ from scaled PPM's", i)
				}
				for _, set := range []ImageSetting{{Format: FormatPPM, Width: 50}, {Format: FormatBMP, Height: 31}, {Format: FormatPNG, Width: 40, Height: 40}, {Format: FormatJPEG, Width: 17}} {
					b := enc(set)
					w, h := set.OutputSize(s.info.Width, s.info.Height)
					var cfg image.Config
					switch set.Format {
					case FormatPNG:
						cfg, err = png.DecodeConfig(bytes.NewReader(b))
					case FormatJPEG:
						cfg, err = jpeg.DecodeConfig(bytes.NewReader(b))
					case FormatBMP:
						cfg.Width, cfg.Height, _ = bmpPixels(t, b)
					case FormatPPM:
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
	pool := NewPool(Options{})
	defer pool.Close()
	b, err := pool.Frame(context.Background(), v, 3, ImageSetting{})
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
	if _, err := exec.LookPath("ffprobe"); err == nil {
		cmd := exec.Command("ffprobe", "-v", "error", "-show_entries", "stream=pix_fmt", "-of", "csv=p=0", "-")
		cmd.Stdin = bytes.NewReader(b)
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != "yuvj420p" {
			t.Errorf("ffprobe says %q, %v; want yuvj420p", out, err)
		}
	}
}

// TestRGBToJPEGYCbCr checks the conversion against the JFIF formulas in
// floating point, on saturated colours (where rounding could wrap) and odd
// sizes (edge blocks).
func TestRGBToJPEGYCbCr(t *testing.T) {
	colours := [][3]float64{{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 255}, {0, 0, 0}, {255, 255, 0}, {0, 255, 255}, {255, 0, 255}, {12, 200, 99}}
	for _, size := range [][2]int{{2, 2}, {5, 3}, {1, 1}, {17, 9}} {
		w, h := size[0], size[1]
		for _, c := range colours {
			src := astiav.AllocFrame()
			dst := astiav.AllocFrame()
			src.SetWidth(w)
			src.SetHeight(h)
			src.SetPixelFormat(astiav.PixelFormatRgb24)
			dst.SetWidth(w)
			dst.SetHeight(h)
			dst.SetPixelFormat(astiav.PixelFormatYuvj420P)
			if err := src.AllocBuffer(0); err != nil {
				t.Fatal(err)
			}
			if err := dst.AllocBuffer(0); err != nil {
				t.Fatal(err)
			}
			data, _ := src.Data().Bytes(1)
			for i := 0; i < len(data); i += 3 {
				data[i], data[i+1], data[i+2] = byte(c[0]), byte(c[1]), byte(c[2])
			}
			fillFrame(t, src, data)
			if err := rgbToJPEGYCbCr(src, dst); err != nil {
				t.Fatal(err)
			}
			planes, _ := dst.Data().Bytes(1)
			y, cb, cr := planes[0], planes[w*h], planes[w*h+((w+1)/2)*((h+1)/2)]
			r, g, b := c[0], c[1], c[2]
			want := [3]float64{0.299*r + 0.587*g + 0.114*b, -0.168736*r - 0.331264*g + 0.5*b + 128, 0.5*r - 0.418688*g - 0.081312*b + 128}
			for k, got := range []byte{y, cb, cr} {
				if d := float64(got) - want[k]; d > 0.5 || d < -0.51 {
					t.Errorf("%dx%d %v: component %d is %d, want %.2f", w, h, c, k, got, want[k])
				}
			}
			src.Free()
			dst.Free()
		}
	}
}

// TestRGBToJPEGYCbCrMatchesSimple holds the one-pass conversion to the
// plain reference code, byte for byte, on random pixels of even, odd and
// tiny sizes.
func TestRGBToJPEGYCbCrMatchesSimple(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, size := range [][2]int{{640, 480}, {1, 1}, {2, 1}, {1, 2}, {3, 3}, {17, 9}, {200, 133}, {481, 271}} {
		w, h := size[0], size[1]
		src := newTestFrame(t, w, h, astiav.PixelFormatRgb24)
		data, _ := src.Data().Bytes(1)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		fillFrame(t, src, data)
		var out [2][]byte
		for k, simple := range []bool{false, true} {
			dst := newTestFrame(t, w, h, astiav.PixelFormatYuvj420P)
			if err := rgbToJPEGYCbCrWith(src, dst, simple); err != nil {
				t.Fatal(err)
			}
			out[k], _ = dst.Data().Bytes(1)
			dst.Free()
		}
		if !bytes.Equal(out[0], out[1]) {
			t.Errorf("%dx%d: the one-pass conversion differs from the reference", w, h)
		}
		src.Free()
	}
}

func newTestFrame(t testing.TB, w, h int, pf astiav.PixelFormat) *astiav.Frame {
	f := astiav.AllocFrame()
	f.SetWidth(w)
	f.SetHeight(h)
	f.SetPixelFormat(pf)
	if err := f.AllocBuffer(0); err != nil {
		t.Fatal(err)
	}
	return f
}

func BenchmarkRGBToJPEGYCbCr(b *testing.B) {
	for _, simple := range []bool{false, true} {
		b.Run(fmt.Sprintf("simple=%v", simple), func(b *testing.B) {
			src := newTestFrame(b, 640, 480, astiav.PixelFormatRgb24)
			dst := newTestFrame(b, 640, 480, astiav.PixelFormatYuvj420P)
			defer src.Free()
			defer dst.Free()
			for b.Loop() {
				if err := rgbToJPEGYCbCrWith(src, dst, simple); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
