package query

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

// TestMatchingWindows checks the windows kept under a filter against a
// window-by-window check of every frame.
func TestMatchingWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		n := rng.Int64N(120)
		w := table.Window{Length: 1 + rng.Int64N(8), FrameSkip: rng.Int64N(4), Hop: 1 + rng.Int64N(6)}
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
		got := matchingStarts(w, n, ordinals)
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
	if got := matchingStarts(table.Window{Length: 3, Hop: 1}, 10, nil); len(got) != 8 {
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
	w := table.Window{Length: 4, FrameSkip: 1, Hop: 3}
	f, err := CompileFilter(ctx, tbl, snap, "speed >= 40")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := SelectClips(ctx, tbl, snap, f, w, SelectOptions{GroupBy: []string{"task"}})
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

	v, err := CreateView(ctx, tbl, table.View{Name: "clips", Where: "speed >= 40", Window: &w})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.Features, []string{table.FeatureClipWindows}) {
		t.Errorf("clip view features %v", v.Features)
	}
	back, err := tbl.View(ctx, "clips")
	if err != nil || back.Window == nil || *back.Window != w {
		t.Fatalf("clip view read back: %+v %v", back, err)
	}
	// A clip view whose window is longer than every episode is a view
	// with no clips, not an error.
	if _, err := CreateView(ctx, tbl, table.View{Name: "long", Where: "TRUE", Window: &table.Window{Length: 1000, Hop: 1}}); err != nil {
		t.Fatalf("window longer than every episode: %v", err)
	}
	if cs, err := SelectClips(ctx, tbl, snap, f, table.Window{Length: 1000, Hop: 1}, SelectOptions{}); err != nil || cs.Clips != 0 || len(cs.Episodes) != 0 {
		t.Errorf("window longer than every episode: %+v %v", cs, err)
	}
	for _, tc := range []struct {
		w    table.Window
		want string
	}{
		{table.Window{Length: 0, Hop: 1}, "window length 0"},
		{table.Window{Length: 2, FrameSkip: -1, Hop: 1}, "frame skip -1"},
		{table.Window{Length: 2, Hop: -1}, "hop -1"},
		{table.Window{Length: 1e9, Hop: 1}, "window length 1000000000"},
	} {
		_, err := CreateView(ctx, tbl, table.View{Name: "bad", Where: "TRUE", Window: &tc.w})
		if !errors.Is(err, table.ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
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
		if err := local.PutIfAbsent(ctx, table.ViewKey(name), []byte(body)); err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.View(ctx, name); !errors.Is(err, table.ErrCorrupt) {
			t.Errorf("view %s: %v", name, err)
		}
	}
}
