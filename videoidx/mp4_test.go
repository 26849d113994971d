package videoidx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBestStream checks that the default track is the one FFmpeg picks.
func TestBestStream(t *testing.T) {
	data, err := os.ReadFile("../testdata/golden/best_stream.json")
	if err != nil {
		t.Fatal(err)
	}
	var best map[string]int
	if err := json.Unmarshal(data, &best); err != nil {
		t.Fatal(err)
	}
	for name, want := range best {
		if !strings.HasSuffix(name, ".mp4") {
			continue
		}
		path := fixturePath(t, name)
		ix, err := openIndex(t, path, BestStream)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if ix.Stream != want {
			t.Errorf("%s: picked stream %d, FFmpeg picks %d", name, ix.Stream, want)
		}
	}
}

func TestReadMP4BadInput(t *testing.T) {
	tests := []struct {
		name string
		data func(t *testing.T) []byte
		want error
		text string
	}{
		{"zero bytes", fixture("empty.mp4"), ErrNotMP4, "0 bytes"},
		{"random bytes", fixture("random.mp4"), ErrNotMP4, ""},
		{"audio only", fixture("audio_only.mp4"), ErrNoVideo, "none is video"},
		{"moov cut short", func(t *testing.T) []byte {
			b := fixture("h264_faststart.mp4")(t)
			return b[:len(b)/2]
		}, ErrTruncated, "past the end"},
		{"moov at end cut off", func(t *testing.T) []byte {
			b := fixture("h264_bframes_gop30.mp4")(t)
			return b[:len(b)-100]
		}, ErrTruncated, "moov"},
		{"sample count beyond the file", func(t *testing.T) []byte {
			b := fixture("h264_faststart.mp4")(t)
			i := bytes.Index(b, []byte("stsz"))
			// sample_size = 1000, sample_count = 2^32-1
			copy(b[i+8:], []byte{0, 0, 3, 0xe8, 0xff, 0xff, 0xff, 0xff})
			return b
		}, ErrCorrupt, "more than a file"},
		{"box larger than its parent", func(t *testing.T) []byte {
			b := fixture("h264_faststart.mp4")(t)
			i := bytes.Index(b, []byte("stts"))
			copy(b[i-4:], []byte{0x7f, 0xff, 0xff, 0xff})
			return b
		}, ErrCorrupt, ""},
		{"stts count past its box", func(t *testing.T) []byte {
			b := fixture("h264_faststart.mp4")(t)
			i := bytes.Index(b, []byte("stts"))
			copy(b[i+8:], []byte{0x10, 0, 0, 0})
			return b
		}, ErrCorrupt, "do not fit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data(t)
			_, err := ReadMP4(context.Background(), bytes.NewReader(data), int64(len(data)), BestStream)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not say %q", err, tc.text)
			}
		})
	}
}

func TestReadMP4Truncated(t *testing.T) {
	path := fixturePath(t, "truncated_h264_aac.mp4")
	_, err := openIndex(t, path, BestStream)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("got %v, want ErrTruncated", err)
	}
	t.Log(err)
}

func TestReadMP4Canceled(t *testing.T) {
	data := fixture("h264_bframes_gop30.mp4")(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadMP4(ctx, bytes.NewReader(data), int64(len(data)), BestStream); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestReadMP4StreamChoice(t *testing.T) {
	path := fixturePath(t, "h264_with_audio.mp4")
	if _, err := openIndex(t, path, 0); !errors.Is(err, ErrNoVideo) || !strings.Contains(err.Error(), "not a video track") {
		t.Errorf("stream 0 is audio: got %v", err)
	}
	if _, err := openIndex(t, path, 7); !errors.Is(err, ErrNoVideo) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("stream 7: got %v", err)
	}
}

// TestDecodeStart checks the keyframe a decoder starts from, including the
// open-GOP HEVC fixture whose leading pictures precede their CRA keyframe.
func TestDecodeStart(t *testing.T) {
	path := fixturePath(t, "hevc.mp4")
	ix, err := openIndex(t, path, BestStream)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < ix.Frames(); n++ {
		start := ix.DecodeStart(n)
		s := ix.Samples[start]
		if !s.Key || s.PTS > ix.Frame(n).PTS || start > ix.SampleOf(n) {
			t.Fatalf("frame %d: start sample %d (key %v, pts %d) cannot produce it", n, start, s.Key, s.PTS)
		}
	}
	// Frames 27-29 are RASL pictures of the CRA at frame 30: they must
	// start from the IDR at frame 0, not from the CRA.
	if got := ix.DecodeStart(28); got != 0 {
		t.Errorf("frame 28 starts at sample %d, want 0", got)
	}
}

func fixture(name string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("../testdata/video", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}
