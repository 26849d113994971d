package query

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/table/storage/storagetest"
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
	rec := &storagetest.OpenRecordingStore{Store: local}
	tbl, snap := filterTestTable(t, rec)
	eps, err := tbl.Episodes(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	sel := func(text string, opts SelectOptions) *Selection {
		t.Helper()
		f, err := CompileFilter(ctx, tbl, snap, text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		s, err := Select(ctx, tbl, snap, f, opts)
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
	rec.Opened()
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
		f, err := CompileFilter(ctx, tbl, snap, tc.filter)
		if err != nil {
			t.Fatal(err)
		}
		n, st, err := Count(ctx, tbl, snap, f)
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
		if opened := rec.Opened(); (tc.none || tc.all) && len(opened) != 0 {
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
	f, err := CompileFilter(ctx, tbl, snap, "frame % 2 = 0")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := SelectClips(ctx, tbl, snap, f, table.Window{Length: 3, FrameSkip: 1, Hop: 1}, SelectOptions{})
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
	if rows[7][table.FrameColumn] != int64(7) {
		t.Errorf("row 7: frame %v", rows[7][table.FrameColumn])
	}
}

// TestLegacyFrameColumn checks that on a table made before the name frame
// was reserved, whose schema has a column called frame, filters and
// group-by mean that column, as they always did there.
func TestLegacyFrameColumn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	local, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Create refuses the name now: make the column under another name and
	// rename it in the stored schema, as an older framefs would have
	// written it.
	if _, err := table.Create(ctx, local, table.Schema{Columns: []table.Column{{Name: "legacy_frame", Type: "int64"}}}, table.Options{}); err != nil {
		t.Fatal(err)
	}
	schemas, _ := filepath.Glob(filepath.Join(dir, "schema", "*.json"))
	if len(schemas) != 1 {
		t.Fatalf("schema files: %v", schemas)
	}
	data, err := os.ReadFile(schemas[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(schemas[0], []byte(strings.Replace(string(data), `"legacy_frame"`, `"frame"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl, err := table.Open(ctx, local, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&lines, "{\"frame\": %d}\n", 100+i)
	}
	sc, err := table.ParseSidecar("a.jsonl", []byte(lines.String()))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.AddEpisodes(ctx, []table.EpisodeInput{{Episode: "a", Sidecar: sc, Videos: map[string]table.VideoFile{"": {Path: fixture("h264_faststart.mp4")}}}}, table.AddOptions{NoSizes: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := CompileFilter(ctx, tbl, snap, "frame >= 105")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Select(ctx, tbl, snap, f, SelectOptions{GroupBy: []string{"frame"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := selectedOrdinals(s)["a"]; fmt.Sprint(got) != "[5 6 7 8 9]" || s.Episodes[0].Parts[0].Group != "frame=105" {
		t.Errorf("frame >= 105 on a user column frame: %v, %+v", got, s.Episodes)
	}
}
