package videoidx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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

// realDir holds the real-world fixtures (see its README.md).
const realDir = "../testdata/real"

// fixturePath finds a video among the project's own fixtures and the
// real-world ones; every golden file's video is in one of them.
func fixturePath(t testing.TB, name string) string {
	t.Helper()
	for _, dir := range []string{"../testdata/video", realDir} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("fixture %s is in neither ../testdata/video nor %s", name, realDir)
	return ""
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
			path := fixturePath(t, g.File)
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

// TestReadMP4MatchesFrameInfo checks the index against the frame lists
// published with the real-world NASA clip (pts_time and duration_time of
// every frame, printed with six decimals), a reference made independently
// of scripts/make-golden.sh.
func TestReadMP4MatchesFrameInfo(t *testing.T) {
	for _, stream := range []int{0, 3} {
		t.Run(fmt.Sprintf("stream%d", stream), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(realDir, fmt.Sprintf("nasa_13013.mp4.stream%d.all_frames_info.json", stream)))
			if err != nil {
				t.Fatal(err)
			}
			var frames []struct {
				PTS      float64 `json:"pts_time,string"`
				Duration float64 `json:"duration_time,string"`
			}
			if err := json.Unmarshal(data, &frames); err != nil {
				t.Fatal(err)
			}
			ix, err := openIndex(t, fixturePath(t, "nasa_13013.mp4"), stream)
			if err != nil {
				t.Fatal(err)
			}
			if ix.Frames() != len(frames) {
				t.Fatalf("%d frames, the frame list has %d", ix.Frames(), len(frames))
			}
			const half = 0.5e-6 // the list's rounding
			for n, want := range frames {
				pts := ix.Seconds(ix.Frame(n).PTS)
				if math.Abs(pts-want.PTS) > half {
					t.Fatalf("frame %d: pts %.7f s, the frame list says %.6f", n, pts, want.PTS)
				}
				if n+1 < len(frames) {
					if d := ix.Seconds(ix.Frame(n+1).PTS - ix.Frame(n).PTS); math.Abs(d-want.Duration) > half {
						t.Fatalf("frame %d lasts %.7f s, the frame list says %.6f", n, d, want.Duration)
					}
				}
			}
		})
	}
}
