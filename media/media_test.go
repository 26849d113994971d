package media

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/videoidx"
)

func TestParseImageFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ImageFormat
		ext  string
	}{
		{"jpeg", FormatJPEG, "jpg"}, {"JPG", FormatJPEG, "jpg"}, {".jpg", FormatJPEG, "jpg"},
		{"png", FormatPNG, "png"}, {"Bmp", FormatBMP, "bmp"}, {".ppm", FormatPPM, "ppm"},
	} {
		f, err := ParseImageFormat(tc.in)
		if err != nil || f != tc.want || f.Extension() != tc.ext {
			t.Errorf("ParseImageFormat(%q) = %v (%s), %v; want %v (%s)", tc.in, f, f.Extension(), err, tc.want, tc.ext)
		}
	}
	for _, bad := range []string{"", "gif", "jpgx", "..jpg", "jpeg\x00"} {
		if f, err := ParseImageFormat(bad); err == nil {
			t.Errorf("ParseImageFormat(%q) = %v, want an error", bad, f)
		}
	}
	if got := ImageFormat(9).Extension(); got != "format9" {
		t.Errorf("unknown format's extension = %q", got)
	}
}

// TestCanonical pins the text that names a setting in the image identity
// of stored frame sizes: changing it would make every table's stored sizes
// look stale.
func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		s    ImageSetting
		want string
	}{
		{ImageSetting{}, "jpeg;q=95;size=native"},
		{ImageSetting{JPEGQuality: DefaultJPEGQuality}, "jpeg;q=95;size=native"},
		{ImageSetting{JPEGQuality: 100, Width: 64}, "jpeg;q=100;size=64x0"},
		{ImageSetting{Format: FormatPNG, JPEGQuality: 50}, "png;size=native"},
		{ImageSetting{Format: FormatBMP, Height: 100}, "bmp;size=0x100"},
		{ImageSetting{Format: FormatPPM, Width: 33, Height: 7}, "ppm;size=33x7"},
	} {
		if got := tc.s.Canonical(); got != tc.want {
			t.Errorf("%+v.Canonical() = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestSettingFor(t *testing.T) {
	s, err := SettingFor("jpg", 0)
	if err != nil || s != (ImageSetting{Format: FormatJPEG, JPEGQuality: DefaultJPEGQuality}) {
		t.Errorf("SettingFor(jpg, 0) = %+v, %v", s, err)
	}
	s, err = SettingFor("png", 80)
	if err != nil || s != (ImageSetting{Format: FormatPNG}) {
		t.Errorf("SettingFor(png, 80) = %+v, %v; a PNG has no quality", s, err)
	}
	if _, err := SettingFor("tiff", 0); err == nil {
		t.Error("SettingFor(tiff) succeeded")
	}
}

func TestValidate(t *testing.T) {
	for _, ok := range []ImageSetting{{}, {Format: FormatPPM, Width: MaxImageDimension}, {JPEGQuality: 100}, {Width: 7680, Height: 4320}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for _, bad := range []ImageSetting{{Format: 9}, {JPEGQuality: 101}, {JPEGQuality: -1}, {Width: -1}, {Height: MaxImageDimension + 1},
		{Width: MaxImageDimension, Height: MaxImageDimension}, {Width: 8193, Height: 4097}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validates", bad)
		}
	}
	// A setting that keeps the aspect ratio is checked on its output.
	if w, h := (ImageSetting{Width: 16384}).OutputSize(640, 480); CheckOutputSize(w, h) == nil {
		t.Errorf("a %dx%d image passes CheckOutputSize", w, h)
	}
	if err := CheckOutputSize(7680, 4320); err != nil {
		t.Errorf("8K UHD: %v", err)
	}
}

func TestOutputSize(t *testing.T) {
	for _, tc := range []struct {
		s          ImageSetting
		dw, dh     int
		outW, outH int
	}{
		{ImageSetting{}, 640, 480, 640, 480},
		{ImageSetting{Width: 160}, 320, 180, 160, 90},
		{ImageSetting{Height: 100}, 480, 270, 178, 100},
		{ImageSetting{Width: 33, Height: 7}, 480, 270, 33, 7},
		{ImageSetting{Width: 1}, 1000, 10, 1, 1}, // never 0 pixels
	} {
		if w, h := tc.s.OutputSize(tc.dw, tc.dh); w != tc.outW || h != tc.outH {
			t.Errorf("%+v.OutputSize(%d, %d) = %d, %d; want %d, %d", tc.s, tc.dw, tc.dh, w, h, tc.outW, tc.outH)
		}
	}
}

func TestSpan(t *testing.T) {
	var samples []videoidx.Sample
	for i := range 10 {
		samples = append(samples, videoidx.Sample{DTS: int64(i), PTS: int64(i), Key: i == 0})
	}
	ix, err := videoidx.Build(&videoidx.Index{Timescale: 30, Samples: samples})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, to, wantFrom, wantTo int }{
		{0, 0, 0, 10}, {2, 5, 2, 5}, {3, 99, 3, 10}, {12, 0, 10, 10}, {7, 4, 4, 4}, {-1, 3, 0, 3},
	} {
		from, to := Video{Index: ix, From: tc.from, To: tc.to}.Span()
		if from != tc.wantFrom || to != tc.wantTo {
			t.Errorf("Span of [%d, %d) = [%d, %d), want [%d, %d)", tc.from, tc.to, from, to, tc.wantFrom, tc.wantTo)
		}
	}
}

func TestShows(t *testing.T) {
	all := Video{From: 100}
	some := Video{From: 100, Shown: []int64{0, 3, 30}}
	for _, tc := range []struct {
		ordinal  int
		all, shw bool
	}{
		{100, true, true}, {101, true, false}, {103, true, true}, {130, true, true}, {131, true, false}, {3, true, false},
	} {
		if got := all.Shows(tc.ordinal); got != tc.all {
			t.Errorf("Shows(%d) without Shown = %v", tc.ordinal, got)
		}
		if got := some.Shows(tc.ordinal); got != tc.shw {
			t.Errorf("Shows(%d) with rows %v from 100 = %v, want %v", tc.ordinal, some.Shown, got, tc.shw)
		}
	}
}

func TestErrFrameRange(t *testing.T) {
	wrapped := errors.Join(errors.New("frame 9 of x"), ErrFrameRange)
	if !errors.Is(wrapped, ErrFrameRange) {
		t.Error("a wrapped ErrFrameRange is not recognised")
	}
	if k := (VideoKey{Object: "packs/a", Offset: 5, Length: 7}).String(); k != "packs/a[5:+7]" {
		t.Errorf("VideoKey.String() = %q", k)
	}
}

// TestNPYHeaderLoadsInNumPy: NumPy reads a .npy file made of NPYHeader and
// the pixels as a uint8 array of shape (height, width, 3), and the header
// is padded to 64 bytes as NumPy writes it.
func TestNPYHeaderLoadsInNumPy(t *testing.T) {
	const w, h = 7, 3
	hdr := NPYHeader(w, h)
	if len(hdr)%64 != 0 {
		t.Errorf("the header is %d bytes, not a multiple of 64", len(hdr))
	}
	if n, ok := PredictSize(ImageSetting{Format: FormatNPY}, w, h); !ok || n != int64(len(hdr)+3*w*h) {
		t.Errorf("PredictSize = %d, %v; want %d", n, ok, len(hdr)+3*w*h)
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("Debian's python3 is needed to check with NumPy: %v", err)
	}
	pix := make([]byte, 3*w*h)
	for i := range pix {
		pix[i] = byte(i)
	}
	path := filepath.Join(t.TempDir(), "frame.npy")
	if err := os.WriteFile(path, append([]byte(hdr), pix...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", `import sys, numpy as np
a = np.load(sys.argv[1])
print(a.dtype, a.shape, int(a[2, 6, 2]), a.flags["C_CONTIGUOUS"])`, path).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy.load: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), fmt.Sprintf("uint8 (%d, %d, 3) %d True", h, w, byte(3*w*h-1)); got != want {
		t.Errorf("numpy read %q, want %q", got, want)
	}
}
