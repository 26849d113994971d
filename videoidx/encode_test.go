package videoidx

import (
	"errors"
	"reflect"
	"testing"
)

func TestEncodeRoundTrip(t *testing.T) {
	for _, g := range loadGoldens(t) {
		if g.File == "av1_video.mkv" {
			continue // not MP4: ReadMP4 does not index it
		}
		path := fixturePath(t, g.File)
		ix, err := openIndex(t, path, g.Stream)
		if err != nil {
			t.Fatalf("%s: %v", g.File, err)
		}
		enc := ix.Encode()
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("%s: decode: %v", g.File, err)
		}
		if !reflect.DeepEqual(ix, back) {
			t.Fatalf("%s: decoded index differs from the original", g.File)
		}
		perFrame := float64(len(enc)) / float64(len(ix.Samples))
		t.Logf("%-26s %5d samples %6d bytes %.2f bytes/frame", g.File, len(ix.Samples), len(enc), perFrame)
		if len(ix.Samples) >= 60 && perFrame > 6.5 {
			t.Errorf("%s: %.2f bytes per frame, want at most 6.5", g.File, perFrame)
		}
	}
}

// TestDecodeDetectsDamage flips every byte of an encoded index: each damaged
// copy must be rejected, never decoded into a different index.
func TestDecodeDetectsDamage(t *testing.T) {
	path := fixturePath(t, "h264_editlist.mp4")
	ix, err := openIndex(t, path, BestStream)
	if err != nil {
		t.Fatal(err)
	}
	enc := ix.Encode()
	for i := range enc {
		bad := append([]byte(nil), enc...)
		bad[i] ^= 0x5a
		if _, err := Decode(bad); !errors.Is(err, ErrBadEncoding) {
			t.Fatalf("byte %d flipped: got %v", i, err)
		}
	}
	for n := 0; n < len(enc); n++ {
		if _, err := Decode(enc[:n]); !errors.Is(err, ErrBadEncoding) {
			t.Fatalf("truncated to %d bytes: got %v", n, err)
		}
	}
}
