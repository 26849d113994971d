package decoder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/videoidx"
)

// writeFrames writes frames of a fixture as image files and returns their
// paths.
func writeFrames(t *testing.T, dir string, frames []int, setting media.ImageSetting) []string {
	t.Helper()
	v := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	pool := newTestPool(serving.Options{})
	defer pool.Close()
	var paths []string
	for _, i := range frames {
		b, err := pool.Frame(context.Background(), v, i, setting)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("%06d.%s", i, setting.Format.Extension()))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func TestEncodeImagesToVideo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var frames []int
	for i := range 40 {
		frames = append(frames, i)
	}
	pngs := writeFrames(t, dir, frames[:25], media.ImageSetting{Format: media.FormatPNG})
	jpgs := writeFrames(t, dir, frames[25:], media.ImageSetting{JPEGQuality: 100})
	images := append(pngs, jpgs...)
	out := filepath.Join(dir, "out.mp4")
	opts := VideoEncodeOptions{FPS: 29.97, GOP: 10, CodecOptions: map[string]string{"crf": "12", "preset": "fast"}}
	if err := EncodeImagesToVideo(context.Background(), images, out, opts); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// moov in front (faststart), then mdat.
	if !bytes.Equal(data[4:8], []byte("ftyp")) || bytes.Index(data, []byte("moov")) > bytes.Index(data, []byte("mdat")) {
		t.Errorf("moov is not before mdat")
	}
	ix, err := videoidx.ReadMP4(context.Background(), bytes.NewReader(data), int64(len(data)), videoidx.BestStream)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Frames() != len(images) || ix.Codec != "h264" || ix.Width != 160 || ix.Height != 120 || ix.KeyFrames() != 4 {
		t.Errorf("video: %d frames %s %dx%d %d keyframes; want %d h264 160x120 4", ix.Frames(), ix.Codec, ix.Width, ix.Height, ix.KeyFrames(), len(images))
	}
	got, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames",
		"-show_entries", "stream=codec_name,pix_fmt,r_frame_rate,nb_read_frames,color_space", "-of", "csv=p=0", out).Output()
	if err != nil || strings.TrimSpace(string(got)) != "h264,yuv420p,smpte170m,30000/1001,40" {
		t.Errorf("ffprobe: %q %v", got, err)
	}
	// The frames survive the round trip: decoding the video gives images
	// close to the originals.
	f, _ := os.Open(out)
	defer f.Close()
	v := media.Video{Key: media.VideoKey{Object: out}, R: f, Size: int64(len(data)), Index: ix}
	pool := newTestPool(serving.Options{})
	defer pool.Close()
	orig := openVideo(t, "../testdata/video/h264_bframes_gop30.mp4", 0)
	for _, i := range []int{0, 13, 39} {
		a, err := pool.Frame(context.Background(), v, i, media.ImageSetting{Format: media.FormatPPM})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := pool.Frame(context.Background(), orig, i, media.ImageSetting{Format: media.FormatPPM})
		_, _, pa := ppmPixels(t, a)
		_, _, pb := ppmPixels(t, b)
		if d := meanAbsDiff(pa, pb); d > 4 {
			t.Errorf("frame %d: re-encoded frame is off by %.2f levels on average", i, d)
		}
	}
}

func TestEncodeImagesToVideoErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFrames(t, dir, []int{0, 1}, media.ImageSetting{Format: media.FormatPNG})
	small := writeFrames(t, t.TempDir(), []int{2}, media.ImageSetting{Format: media.FormatPNG, Width: 80})
	text := filepath.Join(dir, "notes.png")
	os.WriteFile(text, []byte("not an image"), 0o644)
	broken := filepath.Join(dir, "broken.png")
	pngData, _ := os.ReadFile(good[0])
	os.WriteFile(broken, pngData[:40], 0o644)
	out := filepath.Join(dir, "out.mp4")
	tests := []struct {
		name   string
		images []string
		opts   VideoEncodeOptions
		want   string // in the error
		is     error
	}{
		{"size", append(append([]string{}, good...), small[0]), VideoEncodeOptions{}, small[0], nil},
		{"not an image", []string{good[0], text}, VideoEncodeOptions{}, text, ErrNotImage},
		{"undecodable", []string{good[0], broken}, VideoEncodeOptions{}, broken, ErrNotImage},
		{"missing", []string{good[0], filepath.Join(dir, "nope.png")}, VideoEncodeOptions{}, "nope.png", os.ErrNotExist},
		{"none", nil, VideoEncodeOptions{}, "no images", nil},
		{"codec", good, VideoEncodeOptions{Codec: "nope"}, "nope", nil},
		{"pixfmt", good, VideoEncodeOptions{PixFmt: "nope"}, "nope", nil},
		{"option", good, VideoEncodeOptions{CodecOptions: map[string]string{"no_such_option": "1"}}, "no_such_option", nil},
	}
	for _, tc := range tests {
		err := EncodeImagesToVideo(context.Background(), tc.images, out, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: %v; want an error naming %q", tc.name, err, tc.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Fatalf("%s: output left behind", tc.name)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") || strings.Contains(e.Name(), "faststart") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestFrameRate(t *testing.T) {
	for fps, want := range map[float64][2]int{30: {30, 1}, 25: {25, 1}, 29.97: {30000, 1001}, 23.976: {24000, 1001}, 59.94: {60000, 1001}, 12.5: {12500, 1000}, 30000.0 / 1001: {30000, 1001}} {
		r, err := frameRate(fps)
		if err != nil || r.Num()*want[1] != r.Den()*want[0] {
			t.Errorf("frameRate(%v) = %v, %v; want %d/%d", fps, r, err, want[0], want[1])
		}
	}
	for _, bad := range []float64{0, -1, 1e6} {
		if _, err := frameRate(bad); err == nil {
			t.Errorf("frameRate(%v) succeeded", bad)
		}
	}
}
