package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/testenv"
)

// TestSpillDirByDefault: a mount given no --cache-dir spills under the
// user's cache directory, so that a shuffled epoch over frames worth
// several times its image cache decodes each frame about once; with
// --spill-dir off it spills nothing and decodes GOPs again.
func TestSpillDirByDefault(t *testing.T) {
	testenv.RequireFUSE(t)
	wh := t.TempDir()
	video := filepath.Join(t.TempDir(), "clip.mp4")
	// 300 frames of 320x240, a GOP of 30: about 3 MB of JPEG frames.
	ff := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "300",
		"-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", video)
	if out, err := ff.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	mustRun(t, "create", filepath.Join(wh, "robot"))
	mustRun(t, "ingest", filepath.Join(wh, "robot"), video)
	spillDir := filepath.Join(os.Getenv("XDG_CACHE_HOME"), "framefs", "spill")
	os.RemoveAll(spillDir)

	// epoch reads every frame in a shuffled order and returns the frames
	// decoded per frame served and those spilled, from .stats.
	epoch := func(args ...string) (perServed float64, spilled int64) {
		t.Helper()
		// The image cache holds half the frames, and a fill (a quarter
		// of it) a GOP.
		mnt, _, stop := startMount(t, wh, append([]string{"--cache-bytes", "1536KiB"}, args...)...)
		defer stop()
		folder := filepath.Join(mnt, "robot", "latest", "clip")
		names, err := os.ReadDir(folder)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		want := map[string][]byte{}
		for _, n := range names {
			if strings.HasSuffix(n.Name(), ".jpg") {
				want[n.Name()] = readPromptly(t, filepath.Join(folder, n.Name()), func() {})
			}
		}
		if len(want) != 300 {
			t.Fatalf("read %d frames, want 300", len(want))
		}
		for _, k := range []int{0, 17, 299} {
			name := strconv.Itoa(k)
			b := mustRun(t, "frame", filepath.Join(wh, "robot"), "--episode", "clip", "--frame", name)
			if !bytes.Equal(b, want[strings.Repeat("0", 6-len(name))+name+".jpg"]) {
				t.Fatalf("frame %d differs from framefs frame's", k)
			}
		}
		stats := statsOf(t, mnt)
		return stats["framefs_decoder_frames_decoded_total"] / stats["framefs_frames_served_total"], int64(stats["framefs_gop_fill_frames_spilled_total"])
	}
	perServed, spilled := epoch()
	t.Logf("spilling to the default directory: %.3f frames decoded per frame served, %d spilled", perServed, spilled)
	if perServed > 1.05 || spilled == 0 {
		t.Errorf("with the default spill directory %.3f frames decoded per frame served and %d spilled; want at most 1.05, some spilled", perServed, spilled)
	}
	if entries, err := filepath.Glob(filepath.Join(spillDir, "*", "*.ent")); err != nil || len(entries) == 0 {
		t.Errorf("no entries in %s: %v", spillDir, err)
	}
	os.RemoveAll(spillDir)
	perServed, spilled = epoch("--spill-dir", "off")
	t.Logf("--spill-dir off: %.3f frames decoded per frame served", perServed)
	if spilled != 0 || perServed < 1.5 {
		t.Errorf("--spill-dir off: %.3f frames decoded per frame served and %d spilled; want frames decoded again, none spilled", perServed, spilled)
	}
	if _, err := os.Stat(spillDir); err == nil {
		t.Errorf("--spill-dir off made %s", spillDir)
	}
}

// statsOf reads a mount's .stats into a map of the values by name.
func statsOf(t *testing.T, mnt string) map[string]float64 {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(mnt, ".stats"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, value := range parseStats(t, string(text)).samples {
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out
}
