package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/framefs/framefs/table/storage"
)

// selectedOrdinals returns the rows a selection holds, by episode.
func selectedOrdinals(sel *Selection) map[string][]int64 {
	out := map[string][]int64{}
	for _, e := range sel.Episodes {
		for _, p := range e.Parts {
			if p.Ordinals == nil {
				for i := int64(0); i < e.Entry.Rows; i++ {
					out[e.Entry.Episode] = append(out[e.Entry.Episode], i)
				}
			}
			out[e.Entry.Episode] = append(out[e.Entry.Episode], p.Ordinals...)
		}
	}
	return out
}

// TestFrameColumn checks the frame column: each row's position in its
// episode, in filters (with pruning from the episodes' row counts), in
// group-by, in clip windows and in Rows.
func TestFrameColumn(t *testing.T) {
	ctx := context.Background()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingStore{Store: local}
	tbl, snap := filterTestTable(t, rec)
	eps, err := tbl.Episodes(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	sel := func(text string, opts SelectOptions) *Selection {
		t.Helper()
		f, err := tbl.CompileFilter(ctx, snap, text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		s, err := tbl.Select(ctx, snap, f, opts)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return s
	}

	every3 := selectedOrdinals(sel("frame % 3 = 0", SelectOptions{}))
	for _, e := range eps {
		var want []int64
		for i := int64(0); i < e.Rows; i += 3 {
			want = append(want, i)
		}
		if fmt.Sprint(every3[e.Episode]) != fmt.Sprint(want) {
			t.Errorf("frame %% 3 = 0 in %s: %v, want %v", e.Episode, every3[e.Episode], want)
		}
	}

	// Bounds come from the manifest: no data file is opened.
	rec.take()
	for _, tc := range []struct {
		filter     string
		none, all  bool
		wantFrames int64
	}{
		{filter: "frame > 1000", none: true},
		{filter: "frame >= 0", all: true},
		{filter: "frame < 5", all: false, wantFrames: 5 * int64(len(eps))},
		{filter: "frame + 1 > 1000", none: true},
		{filter: "frame - 2 < -2", none: true},
	} {
		f, err := tbl.CompileFilter(ctx, snap, tc.filter)
		if err != nil {
			t.Fatal(err)
		}
		n, st, err := tbl.Count(ctx, snap, f)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.none && (n != 0 || st.SkippedByManifest != len(eps)):
			t.Errorf("%s: %d frames, %+v; want every episode skipped by the manifest", tc.filter, n, st)
		case tc.all && st.MatchedByManifest != len(eps):
			t.Errorf("%s: %+v; want every episode matched by the manifest", tc.filter, st)
		case !tc.none && !tc.all && n != tc.wantFrames:
			t.Errorf("%s: %d frames, want %d", tc.filter, n, tc.wantFrames)
		}
		if opened := rec.take(); (tc.none || tc.all) && len(opened) != 0 {
			t.Errorf("%s opened %v", tc.filter, opened)
		}
	}

	// Group by frame: a folder per position.
	g := sel("frame < 2 AND episode_id = 'ep00'", SelectOptions{GroupBy: []string{"frame"}})
	if len(g.Episodes) != 1 || len(g.Episodes[0].Parts) != 2 || g.Episodes[0].Parts[0].Group != "frame=0" ||
		fmt.Sprint(g.Episodes[0].Parts[1].Ordinals) != "[1]" {
		t.Errorf("group by frame: %+v", g.Episodes)
	}

	// Clip windows over every other frame, two frames apart.
	f, err := tbl.CompileFilter(ctx, snap, "frame % 2 = 0")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := tbl.SelectClips(ctx, snap, f, Window{Length: 3, FrameSkip: 1, Hop: 1}, SelectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Episodes) != len(eps) {
		t.Fatalf("clips in %d episodes, want %d", len(cs.Episodes), len(eps))
	}
	for _, ce := range cs.Episodes {
		for _, s := range ce.Parts[0].Starts {
			if s%2 != 0 {
				t.Errorf("%s: a clip starts at odd frame %d", ce.Entry.Episode, s)
			}
		}
		if want := (ce.Entry.Rows - 5 + 2) / 2; int64(len(ce.Parts[0].Starts)) != want {
			t.Errorf("%s: %d clips of %d frames, want %d", ce.Entry.Episode, len(ce.Parts[0].Starts), ce.Entry.Rows, want)
		}
	}

	rows, err := tbl.Rows(ctx, snap, eps[1])
	if err != nil {
		t.Fatal(err)
	}
	if rows[7][FrameColumn] != int64(7) {
		t.Errorf("row 7: frame %v", rows[7][FrameColumn])
	}
}

// TestFrameNameReserved checks that no column takes the name frame, and
// that a table made before it was reserved keeps its own frame column.
func TestFrameNameReserved(t *testing.T) {
	ctx := context.Background()
	for _, s := range []Schema{
		{Columns: []Column{{Name: "frame", Type: "int64"}}},
		{Columns: []Column{{Name: "Frame", Type: "int64"}}},
		{EpisodeColumn: "frame"},
		{VideoColumns: []string{"frame"}},
	} {
		local, _ := storage.NewLocal(t.TempDir())
		_, err := Create(ctx, local, s, Options{})
		if !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), "is reserved") {
			t.Errorf("create %+v: %v", s, err)
		}
	}

	local, _ := storage.NewLocal(t.TempDir())
	tbl, err := Create(ctx, local, Schema{Columns: []Column{{Name: "speed", Type: "float64", Nullable: true}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ParseSidecar("a.jsonl", []byte("{\"speed\": 1, \"frame\": 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []AddOptions{{NoSizes: true}, {NoSizes: true, AllowNewColumns: true}} {
		_, err = tbl.AddEpisodes(ctx, []EpisodeInput{{Episode: "a", Sidecar: sc, Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}}}, opts)
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), `sets "frame", which is reserved`) {
			t.Errorf("sidecar with frame (%+v): %v", opts, err)
		}
	}

	// A table whose schema already has a column called frame: the name
	// is that column's in filters, group-by and rows.
	local, _ = storage.NewLocal(t.TempDir())
	legacy := Schema{Columns: []Column{{Name: "frame", Type: "int64"}}}.withDefaults()
	if err := local.PutIfAbsent(ctx, schemaKey(legacy.ID), marshal(legacy)); err != nil {
		t.Fatal(err)
	}
	if tbl, err = Create(ctx, local, Schema{Columns: []Column{{Name: "unused", Type: "int64"}}}, Options{}); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&lines, "{\"frame\": %d}\n", 100+i)
	}
	if sc, err = ParseSidecar("a.jsonl", []byte(lines.String())); err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.AddEpisodes(ctx, []EpisodeInput{{Episode: "a", Sidecar: sc, Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}}}, AddOptions{NoSizes: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := tbl.CompileFilter(ctx, snap, "frame >= 105")
	if err != nil {
		t.Fatal(err)
	}
	s, err := tbl.Select(ctx, snap, f, SelectOptions{GroupBy: []string{"frame"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := selectedOrdinals(s)["a"]; fmt.Sprint(got) != "[5 6 7 8 9]" || s.Episodes[0].Parts[0].Group != "frame=105" {
		t.Errorf("frame >= 105 on a user column frame: %v, %+v", got, s.Episodes)
	}
	eps, _ := tbl.Episodes(ctx, snap)
	rows, err := tbl.Rows(ctx, snap, eps[0])
	if err != nil {
		t.Fatal(err)
	}
	if rows[3]["frame"] != int64(103) {
		t.Errorf("row 3: frame %v, want the column's 103", rows[3]["frame"])
	}
}
