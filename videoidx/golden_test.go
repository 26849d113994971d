package videoidx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// golden is what FFmpeg reports for one video stream; scripts/make-golden.sh
// writes these files with ffprobe.
type golden struct {
	File      string   `json:"file"`
	Stream    int      `json:"stream"`
	Codec     string   `json:"codec"`
	Width     int      `json:"width"`
	Height    int      `json:"height"`
	TimeBase  [2]int64 `json:"time_base"`
	Frames    int      `json:"frames"`
	PTS       []int64  `json:"pts"`
	KeyFrames []int    `json:"key_frames"`
}

const realDir = "../../shared/testdata/real"

// fixturePath finds a golden file's video among the project's own fixtures
// or the shared real-world ones; ok is false when it is not present.
func fixturePath(name string) (string, bool) {
	for _, dir := range []string{"../testdata/video", realDir} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	return "", false
}

func loadGoldens(t *testing.T) []golden {
	t.Helper()
	files, err := filepath.Glob("../testdata/golden/*.stream*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files under testdata/golden (run scripts/make-golden.sh): %v", err)
	}
	var out []golden
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g golden
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, g)
	}
	return out
}

func openIndex(t *testing.T, path string, stream int) (*Index, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return ReadMP4(context.Background(), f, st.Size(), stream)
}

// TestReadMP4MatchesFFmpeg checks frame count, every presentation timestamp
// and the keyframe set against ffprobe on every fixture.
func TestReadMP4MatchesFFmpeg(t *testing.T) {
	for _, g := range loadGoldens(t) {
		t.Run(fmt.Sprintf("%s/stream%d", g.File, g.Stream), func(t *testing.T) {
			path, ok := fixturePath(g.File)
			if !ok {
				t.Skipf("%s is not present", g.File)
			}
			ix, err := openIndex(t, path, g.Stream)
			if !strings.HasSuffix(g.File, ".mp4") {
				if !errors.Is(err, ErrNotMP4) {
					t.Fatalf("want ErrNotMP4 for %s, got %v", g.File, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			compareWithGolden(t, ix, g)
		})
	}
}

func compareWithGolden(t *testing.T, ix *Index, g golden) {
	t.Helper()
	if ix.Codec != g.Codec || ix.Width != g.Width || ix.Height != g.Height {
		t.Errorf("codec %s %dx%d, ffprobe says %s %dx%d", ix.Codec, ix.Width, ix.Height, g.Codec, g.Width, g.Height)
	}
	if ix.Frames() != g.Frames {
		t.Fatalf("%d frames, ffprobe counts %d", ix.Frames(), g.Frames)
	}
	num, den := g.TimeBase[0], g.TimeBase[1]
	bad := 0
	for n := 0; n < ix.Frames(); n++ {
		// pts/timescale == golden*num/den, compared without rounding.
		if ix.Frame(n).PTS*den != g.PTS[n]*num*int64(ix.Timescale) {
			if bad < 5 {
				t.Errorf("frame %d: pts %d/%d, ffprobe %d*%d/%d", n, ix.Frame(n).PTS, ix.Timescale, g.PTS[n], num, den)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d frames have the wrong pts", bad, ix.Frames())
	}
	var keys []int
	for n := 0; n < ix.Frames(); n++ {
		if ix.Frame(n).Key {
			keys = append(keys, n)
		}
	}
	if !slices.Equal(keys, g.KeyFrames) {
		t.Errorf("keyframes %v, ffprobe %v", keys, g.KeyFrames)
	}
}
