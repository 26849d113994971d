package videoidx

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

func addFixtureSeeds(_ *testing.F) [][]byte {
	var seeds [][]byte
	for _, pattern := range []string{"../testdata/video/*", filepath.Join(realDir, "*.mp4"), filepath.Join(realDir, "*.mkv")} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil || len(data) > 64<<10 { // large inputs slow the fuzzer down a hundredfold
				continue
			}
			seeds = append(seeds, data)
		}
	}
	return seeds
}

// FuzzReadMP4 feeds arbitrary bytes to the MP4 indexer: it may fail, but
// must not panic, hang or allocate beyond what the input size justifies, and
// any index it returns must survive an encode/decode round trip.
func FuzzReadMP4(f *testing.F) {
	for _, s := range addFixtureSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := ReadMP4(context.Background(), bytes.NewReader(data), int64(len(data)), BestStream)
		if err != nil {
			return
		}
		if ix.Frames() == 0 {
			t.Fatal("index without frames")
		}
		for n := 0; n < ix.Frames(); n++ {
			s := ix.Frame(n)
			if s.Offset < 0 || s.Offset+int64(s.Size) > int64(len(data)) {
				t.Fatalf("frame %d lies outside the input", n)
			}
			ix.DecodeStart(n)
		}
		if _, err := Decode(ix.Encode()); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzDecode feeds arbitrary bytes to the index decoder.
func FuzzDecode(f *testing.F) {
	for _, s := range addFixtureSeeds(f) {
		if ix, err := ReadMP4(context.Background(), bytes.NewReader(s), int64(len(s)), BestStream); err == nil {
			f.Add(ix.Encode())
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := Decode(data)
		if err != nil {
			return
		}
		if !bytes.Equal(ix.Encode(), data) {
			t.Fatal("a decoded index does not encode back to the same bytes")
		}
	})
}
