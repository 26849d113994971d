package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/framefs/framefs/table/storage"
)

// windowsByFormula lists the windows of an episode of n frames straight
// from the definition: stride = skip + 1, span = (window − 1) × stride + 1,
// a window at every multiple of hop while start + span ≤ n.
func windowsByFormula(n, window, skip, hop int64) [][]int64 {
	stride := skip + 1
	span := (window-1)*stride + 1
	if n < span {
		return nil
	}
	count := (n-span)/hop + 1
	out := make([][]int64, count)
	for k := range out {
		start := int64(k) * hop
		for j := int64(0); j < window; j++ {
			out[k] = append(out[k], start+j*stride)
		}
	}
	return out
}

func windowsOf(w Window, n int64) [][]int64 {
	var out [][]int64
	for _, s := range w.Starts(n) {
		out = append(out, w.Frames(s))
	}
	return out
}

func TestWindowArithmetic(t *testing.T) {
	for _, tc := range []struct {
		n, window, skip, hop int64
		want                 [][]int64 // nil: check against the formula only
	}{
		{n: 10, window: 3, skip: 0, hop: 3, want: [][]int64{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}},
		{n: 10, window: 4, skip: 1, hop: 2, want: [][]int64{{0, 2, 4, 6}, {2, 4, 6, 8}}},
		{n: 5, window: 6, skip: 0, hop: 1},                                             // span > episode: none
		{n: 7, window: 4, skip: 1, hop: 1},                                             // span 7 = episode: one
		{n: 20, window: 2, skip: 0, hop: 7, want: [][]int64{{0, 1}, {7, 8}, {14, 15}}}, // hop > span
		{n: 1, window: 1, skip: 0, hop: 1, want: [][]int64{{0}}},
		{n: 0, window: 1, skip: 0, hop: 1},
		{n: 1800, window: 16, skip: 0, hop: 8},
		{n: 1800, window: 16, skip: 3, hop: 5},
		{n: 100, window: 1, skip: 9, hop: 1},
		{n: 100, window: 10, skip: 10, hop: 1000},
	} {
		w := Window{Length: tc.window, FrameSkip: tc.skip, Hop: tc.hop}
		if err := w.Validate(); err != nil {
			t.Fatal(err)
		}
		got := windowsOf(w, tc.n)
		formula := windowsByFormula(tc.n, tc.window, tc.skip, tc.hop)
		if !reflect.DeepEqual(got, formula) {
			t.Errorf("%+v over %d frames: %v, formula %v", w, tc.n, got, formula)
		}
		if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v over %d frames: %v, want %v", w, tc.n, got, tc.want)
		}
		if tc.n == 1800 && tc.skip == 0 && len(got) != 224 {
			t.Errorf("window 16 hop 8 over 1,800 frames: %d windows, want 224", len(got))
		}
	}
}

func TestWindowLimits(t *testing.T) {
	for _, tc := range []struct {
		w    Window
		want string
	}{
		{Window{Length: 0, Hop: 1}, "at least 1 frame"},
		{Window{Length: 4, FrameSkip: -1, Hop: 1}, "negative"},
		{Window{Length: 4, Hop: 0}, "hop 0"},
		{Window{Length: 4, Hop: -3}, "hop -3"},
		{Window{Length: 1_000_000_000, Hop: 1}, "over the limit of 10000 frames"},
		{Window{Length: 4, FrameSkip: 1 << 40, Hop: 1}, "frame skip 1099511627776 is over"},
		{Window{Length: 4, Hop: 1 << 62}, "over the limit"},
		{Window{Length: MaxWindowLength, FrameSkip: MaxFrameSkip, Hop: 1}, "spans 9999010000 frames"},
	} {
		err := tc.w.Validate()
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.w, err, tc.want)
		}
	}
	if err := (Window{Length: MaxWindowLength, FrameSkip: 999, Hop: MaxHop}).Validate(); err != nil {
		t.Errorf("largest accepted window: %v", err)
	}
}

// lanceWindows is the window function of Lance's video-frame clips as
// documented (window_length, frame_skip, hop_size), transcribed to
// Python: the test runs it with /usr/bin/python3 and compares.
const lanceWindows = `
import json, sys

def clip_windows(num_frames, window_length, frame_skip=0, hop_size=1):
    stride = frame_skip + 1
    span = (window_length - 1) * stride + 1
    start = 0
    while start + span <= num_frames:
        yield [start + j * stride for j in range(window_length)]
        start += hop_size

out = []
for n, w, s, h in json.load(sys.stdin):
    out.append(list(clip_windows(n, w, s, h)))
json.dump(out, sys.stdout)
`

func TestWindowsMatchPythonTranscription(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 16))
	var cases [][4]int64
	for i := 0; i < 300; i++ {
		cases = append(cases, [4]int64{rng.Int64N(200), 1 + rng.Int64N(20), rng.Int64N(6), 1 + rng.Int64N(30)})
	}
	cases = append(cases, [4]int64{1800, 16, 0, 8}, [4]int64{3, 5, 0, 1}, [4]int64{10, 1, 0, 100})
	in, _ := json.Marshal(cases)
	cmd := exec.Command("/usr/bin/python3", "-c", lanceWindows)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var want [][][]int64
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		got := windowsOf(Window{Length: c[1], FrameSkip: c[2], Hop: c[3]}, c[0])
		if len(got) == 0 && len(want[i]) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("frames %d window %d skip %d hop %d: %v, Python %v", c[0], c[1], c[2], c[3], got, want[i])
		}
	}
}

// TestMatchingWindows checks the windows kept under a filter against a
// window-by-window check of every frame.
func TestMatchingWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		n := rng.Int64N(120)
		w := Window{Length: 1 + rng.Int64N(8), FrameSkip: rng.Int64N(4), Hop: 1 + rng.Int64N(6)}
		matches := map[int64]bool{}
		var ordinals []int64
		for f := int64(0); f < n; f++ {
			if rng.IntN(10) < 8 {
				matches[f] = true
				ordinals = append(ordinals, f)
			}
		}
		var want []int64
		for _, s := range w.Starts(n) {
			if !slices.ContainsFunc(w.Frames(s), func(f int64) bool { return !matches[f] }) {
				want = append(want, s)
			}
		}
		got := w.matchingStarts(n, ordinals)
		if !slices.Equal(got, want) {
			t.Fatalf("%+v over %d frames matching %v: %v, want %v", w, n, ordinals, got, want)
		}
		// The union of the windows' frames.
		var union []int64
		for _, s := range got {
			union = append(union, w.Frames(s)...)
		}
		slices.Sort(union)
		union = slices.Compact(union)
		if o := (ClipPart{Starts: got}).Ordinals(w); !slices.Equal(o, union) {
			t.Fatalf("%+v starts %v: ordinals %v, want %v", w, got, o, union)
		}
	}
	if got := (Window{Length: 3, Hop: 1}).matchingStarts(10, nil); len(got) != 8 {
		t.Errorf("no filter: %v", got)
	}
}

// TestClipViews checks clip views through the table: windows under a
// filter and group-by, the stored feature, and bad input refused with
// nothing stored.
func TestClipViews(t *testing.T) {
	ctx := context.Background()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, snap := filterTestTable(t, local)
	w := Window{Length: 4, FrameSkip: 1, Hop: 3}
	f, err := tbl.CompileFilter(ctx, snap, "speed >= 40")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := tbl.SelectClips(ctx, snap, f, w, SelectOptions{GroupBy: []string{"task"}})
	if err != nil {
		t.Fatal(err)
	}
	// The same windows by hand, from every row.
	eps, _ := tbl.Episodes(ctx, snap)
	var want []string
	wantFrames := int64(0)
	for _, e := range eps {
		rows, err := tbl.Rows(ctx, snap, e)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int64]bool{}
		for _, s := range w.Starts(e.Rows) {
			ok := true
			for _, fr := range w.Frames(s) {
				sp, isFloat := rows[fr]["speed"].(float64)
				ok = ok && isFloat && sp >= 40
			}
			if ok {
				want = append(want, fmt.Sprintf("task=%s/%s@%d", rows[0]["task"], e.Episode, s))
				for _, fr := range w.Frames(s) {
					seen[fr] = true
				}
			}
		}
		wantFrames += int64(len(seen))
	}
	var got []string
	for _, ce := range cs.Episodes {
		for _, p := range ce.Parts {
			for _, s := range p.Starts {
				got = append(got, fmt.Sprintf("%s/%s@%d", p.Group, ce.Entry.Episode, s))
			}
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(want) == 0 || !slices.Equal(got, want) || cs.Clips != int64(len(want)) || cs.Frames != wantFrames {
		t.Fatalf("clips %v (%d clips, %d frames), want %v (%d frames)", got, cs.Clips, cs.Frames, want, wantFrames)
	}

	v, err := tbl.CreateView(ctx, View{Name: "clips", Where: "speed >= 40", Window: &w})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.Features, []string{FeatureClipWindows}) {
		t.Errorf("clip view features %v", v.Features)
	}
	back, err := tbl.View(ctx, "clips")
	if err != nil || back.Window == nil || *back.Window != w {
		t.Fatalf("clip view read back: %+v %v", back, err)
	}
	// A clip view whose window is longer than every episode is a view
	// with no clips, not an error.
	if _, err := tbl.CreateView(ctx, View{Name: "long", Where: "TRUE", Window: &Window{Length: 1000, Hop: 1}}); err != nil {
		t.Fatalf("window longer than every episode: %v", err)
	}
	if cs, err := tbl.SelectClips(ctx, snap, f, Window{Length: 1000, Hop: 1}, SelectOptions{}); err != nil || cs.Clips != 0 || len(cs.Episodes) != 0 {
		t.Errorf("window longer than every episode: %+v %v", cs, err)
	}
	for _, tc := range []struct {
		w    Window
		want string
	}{
		{Window{Length: 0, Hop: 1}, "window length 0"},
		{Window{Length: 2, FrameSkip: -1, Hop: 1}, "frame skip -1"},
		{Window{Length: 2, Hop: -1}, "hop -1"},
		{Window{Length: 1e9, Hop: 1}, "window length 1000000000"},
	} {
		_, err := tbl.CreateView(ctx, View{Name: "bad", Where: "TRUE", Window: &tc.w})
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.w, err, tc.want)
		}
	}
	if names, _ := tbl.ViewNames(ctx); !slices.Equal(names, []string{"clips", "long"}) {
		t.Errorf("views after bad input: %v", names)
	}
	// A feature without its window, or a window without its feature, is
	// damage, not a plain view.
	for name, body := range map[string]string{
		"nowindow":  `{"format_version": 1, "features": ["clip_windows"], "view": "nowindow", "where": "TRUE", "time": "2026-01-01T00:00:00Z"}`,
		"nofeature": `{"format_version": 1, "features": [], "view": "nofeature", "where": "TRUE", "window": {"length": 2, "frame_skip": 0, "hop": 1}, "time": "2026-01-01T00:00:00Z"}`,
	} {
		if err := local.PutIfAbsent(ctx, viewKey(name), []byte(body)); err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.View(ctx, name); !errors.Is(err, ErrCorrupt) {
			t.Errorf("view %s: %v", name, err)
		}
	}
}
