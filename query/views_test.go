package query

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/table/storage/storagetest"
)

// TestPartitionFilterReadsOnlyItsPartition checks that a filter on a
// partition column opens no data file of other partitions, and that a
// count decided by the manifests opens none at all.
func TestPartitionFilterReadsOnlyItsPartition(t *testing.T) {
	ctx := context.Background()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rec := &storagetest.OpenRecordingStore{Store: local}
	tbl, _ := filterTestTable(t, rec)
	// One more commit holding only "pick" episodes: its data file is the
	// only one a filter on pick and speed may open besides the others
	// that hold pick episodes.
	snap, err := tbl.Resolve(ctx, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	eps, _ := tbl.Episodes(ctx, snap)
	files := map[string]map[string]bool{} // data file -> tasks in it
	for _, e := range eps {
		if files[e.DataFile] == nil {
			files[e.DataFile] = map[string]bool{}
		}
		files[e.DataFile][e.Partition["task"]] = true
	}
	rec.Opened()
	f, err := CompileFilter(ctx, tbl, snap, "task = 'stack'")
	if err != nil {
		t.Fatal(err)
	}
	n, st, err := Count(ctx, tbl, snap, f)
	if err != nil {
		t.Fatal(err)
	}
	if opened := rec.Opened(); len(opened) != 0 || n == 0 || st.MatchedByManifest == 0 {
		t.Errorf("count of a partition: %d frames, opened %v (stats %+v); want frames from the manifests alone", n, opened, st)
	}
	f, err = CompileFilter(ctx, tbl, snap, "task = 'stack' AND speed > 40")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Select(ctx, tbl, snap, f, SelectOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, key := range rec.Opened() {
		if !files[key]["stack"] {
			t.Errorf("a filter on task = 'stack' opened %s, which holds %v", key, files[key])
		}
	}
}

// TestSelectStatistics checks what each level of pruning decides.
func TestSelectStatistics(t *testing.T) {
	ctx := context.Background()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, snap := filterTestTable(t, local)
	for _, tc := range []struct {
		filter string
		check  func(st SelectStats) bool
	}{
		{"episode_id = 'ep03'", func(st SelectStats) bool {
			return st.SkippedByManifest == 7 && st.MatchedByManifest == 1 && st.Scanned == 0
		}},
		{"speed > 1000", func(st SelectStats) bool { return st.SkippedByManifest == 8 && st.DataFiles == 0 }},
		{"task IN ('pick', 'place', 'stack')", func(st SelectStats) bool { return st.MatchedByManifest == 8 && st.Scanned == 0 }},
		{"gear = 2", func(st SelectStats) bool { return st.Scanned == 8 && st.RowsScanned > 0 }},
	} {
		f, err := CompileFilter(ctx, tbl, snap, tc.filter)
		if err != nil {
			t.Fatal(err)
		}
		_, st, err := Count(ctx, tbl, snap, f)
		if err != nil {
			t.Fatal(err)
		}
		if !tc.check(st) {
			t.Errorf("%s: %+v", tc.filter, st)
		}
	}
}

func TestGroupBy(t *testing.T) {
	ctx := context.Background()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, snap := filterTestTable(t, local)
	f, err := CompileFilter(ctx, tbl, snap, "speed > 30")
	if err != nil {
		t.Fatal(err)
	}
	sel, err := Select(ctx, tbl, snap, f, SelectOptions{GroupBy: []string{"label", "task"}})
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]int64{}
	for _, e := range sel.Episodes {
		rows, err := tbl.Rows(ctx, snap, e.Entry)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, p := range e.Parts {
			if p.Ordinals == nil {
				t.Fatalf("%s: one group for every row of %s", p.Group, e.Entry.Episode)
			}
			for _, o := range p.Ordinals {
				want := GroupFolder([]string{"label", "task"}, []any{rows[o]["label"], rows[o]["task"]})
				if p.Group != want {
					t.Fatalf("%s row %d is in group %s, its values say %s", e.Entry.Episode, o, p.Group, want)
				}
				groups[p.Group]++
				n++
			}
		}
		if n != e.Frames {
			t.Errorf("%s: %d frames in parts, %d counted", e.Entry.Episode, n, e.Frames)
		}
	}
	if _, ok := groups["label="+NullGroup+"/task=pick"]; !ok || len(groups) < 6 {
		t.Errorf("groups %v", groups)
	}
	if _, err := Select(ctx, tbl, snap, f, SelectOptions{GroupBy: []string{"state"}}); !errors.Is(err, table.ErrInvalidInput) {
		t.Errorf("grouping by a list: %v", err)
	}
}

func TestGroupFolderEscapes(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"a/b", "c=a%2Fb"}, {".hidden", "c=%2Ehidden"}, {" x ", "c=%20x%20"}, {"50%", "c=50%25"},
		{nil, "c=__null__"}, {int64(-3), "c=-3"}, {1.5, "c=1.5"}, {true, "c=true"},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "c=2026-01-02T03:04:05Z"},
	} {
		if got := GroupFolder([]string{"c"}, []any{tc.v}); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.v, got, tc.want)
		}
	}
	long := GroupFolder([]string{"c"}, []any{strings.Repeat("é", 200)})
	if len(long) > 200 || long == GroupFolder([]string{"c"}, []any{strings.Repeat("é", 199)}) {
		t.Errorf("long values: %q", long)
	}
}

// TestGroupFoldersFitNameMax: every group-by folder fits the 255 bytes of
// a file name, for the longest column name a table takes and long values,
// which are cut yet stay distinct, and never shows an invisible format
// character.
func TestGroupFoldersFitNameMax(t *testing.T) {
	col := strings.Repeat("c", 200)
	if table.CheckName("column", col) != nil || table.CheckName("column", col+"c") == nil {
		t.Fatalf("the longest column name is no longer %d bytes", len(col))
	}
	seen := map[string]bool{}
	for _, v := range []any{strings.Repeat("v", 300), strings.Repeat("v", 299), strings.Repeat("é", 150), strings.Repeat("\u202e", 100), "short"} {
		folder := GroupFolder([]string{col, "task"}, []any{v, v})
		for _, part := range strings.Split(folder, "/") {
			if len(part) > table.MaxFileName {
				t.Errorf("group folder of %d bytes: %.60q...", len(part), part)
			}
			if strings.ContainsRune(part, '\u202e') {
				t.Errorf("group folder holds U+202E: %q", part)
			}
		}
		if seen[folder] {
			t.Errorf("two values share folder %q", folder)
		}
		seen[folder] = true
	}
}

func TestViews(t *testing.T) {
	ctx := context.Background()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, snap := filterTestTable(t, local)
	first := snap.ID - 1
	if _, err := CreateView(ctx, tbl, table.View{Name: "fast", Where: "speed >= 60"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.CreateTag(ctx, "v1", first); err != nil {
		t.Fatal(err)
	}
	pinned, err := CreateView(ctx, tbl, table.View{Name: "old-picks", Where: "task = 'pick'", Tag: "v1",
		GroupBy: []string{"label"}, Image: &table.ViewImage{Format: "png", MaxSide: 128}})
	if err != nil {
		t.Fatal(err)
	}
	if pinned.Snapshot != first || pinned.FormatVersion != table.ViewFormatVersion {
		t.Errorf("pinned view %+v", pinned)
	}
	if _, err := CreateView(ctx, tbl, table.View{Name: "fast", Where: "speed >= 70"}); !errors.Is(err, table.ErrExists) {
		t.Errorf("second view called fast: %v", err)
	}
	// Bad input: each refused with an error naming the problem, nothing
	// stored.
	for _, tc := range []struct {
		v    table.View
		want string
	}{
		{table.View{Name: "a", Where: "spd > 1"}, `unknown column "spd"`},
		{table.View{Name: "a", Where: "speed = 'fast'"}, "cannot compare speed (DOUBLE) with 'fast'"},
		{table.View{Name: "a", Where: "label = 'abc"}, "unterminated string"},
		{table.View{Name: "a", Where: ""}, "empty"},
		{table.View{Name: "a", Where: strings.Repeat("speed > 1 AND ", 8000) + "TRUE"}, "bytes long"},
		{table.View{Name: "a", Where: "1=1; DROP TABLE x"}, "one condition"},
		{table.View{Name: "a/b", Where: "TRUE"}, "contains '/'"},
		{table.View{Name: "..", Where: "TRUE"}, "reserved"},
		{table.View{Name: "x.where", Where: "TRUE"}, `ends with ".where"`},
		{table.View{Name: "a", Where: "TRUE", GroupBy: []string{"nope"}}, `group-by column "nope"`},
		{table.View{Name: "a", Where: "TRUE", Image: &table.ViewImage{Format: "gif"}}, "image format"},
		{table.View{Name: "a", Where: "TRUE", Image: &table.ViewImage{Width: 10, MaxSide: 10}}, "not both"},
		{table.View{Name: "a", Where: "TRUE", Snapshot: 99}, "snapshot 99"},
	} {
		_, err := CreateView(ctx, tbl, tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("view %q where %.40q: error %v, want %q", tc.v.Name, tc.v.Where, err, tc.want)
		}
	}
	names, err := tbl.ViewNames(ctx)
	if err != nil || strings.Join(names, ",") != "fast,old-picks" {
		t.Fatalf("views %v %v", names, err)
	}
	// The pinned view keeps snapshot 1 through expire and gc, after its
	// tag is gone.
	if err := tbl.DeleteTag(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	if dropped, err := tbl.Expire(ctx, table.ExpireOptions{KeepLast: 1}); err != nil || len(dropped) != 0 {
		t.Fatalf("expire dropped %v (%v)", dropped, err)
	}
	if _, err := tbl.GC(ctx, table.GCOptions{Grace: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	if problems, err := tbl.Verify(ctx); err != nil || len(problems) != 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	v, err := tbl.View(ctx, "old-picks")
	if err != nil {
		t.Fatal(err)
	}
	s, err := tbl.ResolveView(ctx, v)
	if err != nil || s.ID != first {
		t.Fatalf("pinned view resolves to %v, %v", s, err)
	}
	f, _ := CompileFilter(ctx, tbl, s, v.Where)
	if n, _, err := Count(ctx, tbl, s, f); err != nil || n == 0 {
		t.Fatalf("pinned view after gc: %d rows, %v", n, err)
	}
	// Deleted, the view no longer pins: expire drops the snapshot.
	if err := tbl.DeleteView(ctx, "old-picks"); err != nil {
		t.Fatal(err)
	}
	if err := tbl.DeleteView(ctx, "old-picks"); !errors.Is(err, table.ErrNotFound) {
		t.Errorf("deleting a deleted view: %v", err)
	}
	if dropped, err := tbl.Expire(ctx, table.ExpireOptions{KeepLast: 1}); err != nil || len(dropped) != 1 || dropped[0] != first {
		t.Fatalf("expire after the view went: %v (%v)", dropped, err)
	}
	// A view of a newer format is listed with an error, and not deleted
	// by mistake for one of this version.
	newer := `{"format_version": 1, "features": ["time_travel_joins"], "view": "clips", "where": "TRUE", "time": "2026-01-01T00:00:00Z"}`
	if err := local.PutIfAbsent(ctx, table.ViewKey("clips"), []byte(newer)); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.View(ctx, "clips"); !errors.Is(err, table.ErrUnsupportedFormat) {
		t.Errorf("view with an unknown feature: %v", err)
	}
	views, errs, err := tbl.Views(ctx)
	if err != nil || len(views) != 2 || errs[0] == nil || errs[1] != nil {
		t.Errorf("views %v errors %v (%v)", views, errs, err)
	}
}

// TestVerifyViews: a view whose filter does not fit its snapshot's schema
// (stored without CheckView) is a problem VerifyViews reports and
// table.Verify leaves to it; table.CreateView refuses to store a view
// without a check.
func TestVerifyViews(t *testing.T) {
	ctx := context.Background()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := filterTestTable(t, local)
	if _, err := tbl.CreateView(ctx, table.View{Name: "unchecked", Where: "TRUE"}, nil); err == nil {
		t.Fatal("a view was stored without a check of its filter")
	}
	if _, err := CreateView(ctx, tbl, table.View{Name: "good", Where: "speed > 1", GroupBy: []string{"label"}}); err != nil {
		t.Fatal(err)
	}
	skip := func(*table.Schema, table.View) error { return nil }
	if _, err := tbl.CreateView(ctx, table.View{Name: "bad", Where: "spd > 1"}, skip); err != nil {
		t.Fatal(err)
	}
	problems, err := VerifyViews(ctx, tbl)
	if err != nil || len(problems) != 1 || problems[0].Object != table.ViewKey("bad") || !strings.Contains(problems[0].Problem, `unknown column "spd"`) {
		t.Fatalf("VerifyViews: %+v, %v", problems, err)
	}
	if problems, err := tbl.Verify(ctx); err != nil || len(problems) != 0 {
		t.Errorf("table.Verify: %+v, %v", problems, err)
	}
}

// TestNPYViews: a view serving .npy frames carries the feature that makes
// older readers refuse it, and the feature without the format (or the
// format without the feature) is damage. Scales beyond the decoder's
// pixel bound are refused.
func TestNPYViews(t *testing.T) {
	ctx := context.Background()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := filterTestTable(t, local)
	v, err := CreateView(ctx, tbl, table.View{Name: "tensors", Where: "TRUE", Image: &table.ViewImage{Format: "npy", Width: 224, Height: 224}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.Features, []string{table.FeatureNPYImages}) {
		t.Errorf("npy view features %v", v.Features)
	}
	if back, err := tbl.View(ctx, "tensors"); err != nil || back.Image == nil || back.Image.Format != "npy" {
		t.Fatalf("npy view read back: %+v %v", back, err)
	}
	for name, body := range map[string]string{
		"noformat":  `{"format_version": 1, "features": ["npy_images"], "view": "noformat", "where": "TRUE", "time": "2026-01-01T00:00:00Z"}`,
		"nofeature": `{"format_version": 1, "features": [], "view": "nofeature", "where": "TRUE", "image": {"format": "npy"}, "time": "2026-01-01T00:00:00Z"}`,
	} {
		if err := local.PutIfAbsent(ctx, table.ViewKey(name), []byte(body)); err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.View(ctx, name); !errors.Is(err, table.ErrCorrupt) {
			t.Errorf("view %s: %v", name, err)
		}
	}
	for _, img := range []table.ViewImage{{Width: 16384, Height: 16384}, {MaxSide: 16384}} {
		if _, err := CreateView(ctx, tbl, table.View{Name: "huge", Where: "TRUE", Image: &img}); !errors.Is(err, table.ErrInvalidInput) || !strings.Contains(err.Error(), "pixels") {
			t.Errorf("view scaled to %+v: %v, want the pixel bound", img, err)
		}
	}
}
