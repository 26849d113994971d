package table

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os/exec"
	"reflect"
	"strings"
	"testing"
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
