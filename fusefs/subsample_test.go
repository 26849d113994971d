package fusefs

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
)

// TestSubsampledViewDecodesWhatItShows reads views that show some of an
// episode's frames (subsampled by frame number) through a real mount,
// shuffled and in order: the frame server decodes only what the shown
// frames need (a GOP's frames up to the last shown one) and keeps only
// the shown frames. A view of keyframes decodes one picture a frame; a
// fill of the whole GOP would decode 30.
func TestSubsampledViewDecodesWhatItShows(t *testing.T) {
	testenv.RequireFUSE(t)
	ctx := context.Background()
	wh := t.TempDir()
	tbl, _ := trainTable(t, wh)
	bmp := &table.ViewImage{Format: "bmp", Width: 112, Height: 112}
	for _, tc := range []struct {
		name, where string
		image       *table.ViewImage
		shuffled    bool
		// shown is the view's frame count; maxDecoded what decoding
		// each GOP up to its last shown frame takes at most.
		shown, maxDecoded int
	}{
		// Keyframes only: each decoded alone.
		{"keyframes", "frame % 30 = 0", nil, true, 20, 20},
		{"keyframes-bmp", "frame % 30 = 0", bmp, true, 20, 20},
		// Frames 5, 15 and 25 of each GOP: a fill decodes 26 of its 30.
		{"tenth", "frame % 10 = 5", nil, true, 60, 20 * 26},
		{"tenth-bmp", "frame % 10 = 5", bmp, true, 60, 20 * 26},
		// Every other frame, in order: read-ahead promises only those.
		// It decodes every frame, and a few twice before it starts.
		{"even", "frame % 2 = 0", nil, false, 300, 630},
		{"even-bmp", "frame % 2 = 0", bmp, false, 300, 630},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := query.CreateView(ctx, tbl, table.View{Name: tc.name, Where: tc.where, Image: tc.image}); err != nil {
				t.Fatal(err)
			}
			// A mount of its own, with a cache that holds every frame:
			// whatever it holds was made by the reads.
			f := readOnlyMount(t, wh, serving.Options{CacheBytes: 512 << 20})
			ep := f.path("train", "views", tc.name, "train")
			var files []string
			for _, n := range names(t, ep) {
				if !strings.HasPrefix(n, "frames.") && !strings.HasSuffix(n, ".mp4") {
					files = append(files, n)
				}
			}
			if len(files) != tc.shown {
				t.Fatalf("%d frame files, want %d", len(files), tc.shown)
			}
			if tc.shuffled {
				rand.New(rand.NewPCG(3, 3)).Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
			}
			decoded := f.decodedReading(t, ep, files)
			cs, fills := f.frames.CacheStats(), f.frames.FillStats()
			t.Logf("%d pictures decoded for %d frames served; %d cache entries; fills %+v", decoded, len(files), cs.Entries, fills)
			if decoded > tc.maxDecoded {
				t.Errorf("%d pictures decoded for %d frames served, want at most %d", decoded, len(files), tc.maxDecoded)
			}
			// A frame the view does not show is never kept. A served
			// BMP may be kept twice (its image and its compact form), a
			// JPEG once.
			kept := len(files)
			if tc.image != nil {
				kept *= 2
			}
			if fills.Wasted > 0 || cs.Entries > kept || fills.FramesFilled > int64(len(files)) {
				t.Errorf("%d cache entries, %d frames filled, %d wasted for %d frames shown: frames the view does not show were made", cs.Entries, fills.FramesFilled, fills.Wasted, len(files))
			}
		})
	}

	// A view with the snapshot's image setting shares its frames' files
	// with latest/. Found in the view first (a stat, which makes nothing),
	// they are served as latest/'s once found there: a shuffled epoch of
	// latest/ decodes each frame once.
	t.Run("shared with latest", func(t *testing.T) {
		if _, err := query.CreateView(ctx, tbl, table.View{Name: "third", Where: "frame % 3 = 0"}); err != nil {
			t.Fatal(err)
		}
		f := readOnlyMount(t, wh, serving.Options{CacheBytes: 512 << 20})
		view, latest := f.path("train", "views", "third", "train"), f.path("train", "latest", "train")
		for _, n := range names(t, view) {
			if strings.HasSuffix(n, ".jpg") {
				if _, err := os.Stat(filepath.Join(view, n)); err != nil {
					t.Fatal(err)
				}
			}
		}
		var files []string
		for _, n := range names(t, latest) {
			if strings.HasSuffix(n, ".jpg") {
				files = append(files, n)
			}
		}
		rand.New(rand.NewPCG(5, 5)).Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
		decoded := f.decodedReading(t, latest, files)
		t.Logf("%d pictures decoded for %d frames served; fills %+v", decoded, len(files), f.frames.FillStats())
		if float64(decoded) > 1.05*float64(len(files)) {
			t.Errorf("%d pictures decoded for %d frames of latest/, want at most 1.05 a frame", decoded, len(files))
		}
	})
}

// decodedReading reads the files of dir, in the order given, and returns
// how many pictures the mount's frame server decoded for them (counted
// once its sessions are idle: a fill may still be at work after its
// frame is served).
func (f *fixture) decodedReading(t *testing.T, dir string, files []string) int {
	t.Helper()
	idle := func() bool { ps := f.frames.PoolStats(); return ps.Open == ps.Idle }
	waitFor(t, idle, "decoder sessions idle")
	before := f.frames.PoolStats().Decoded
	for _, n := range files {
		if _, err := os.ReadFile(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, idle, "decoder sessions idle")
	return f.frames.PoolStats().Decoded - before
}
