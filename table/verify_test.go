package table_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/tabletamper"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/manifest"
	"github.com/framefs/framefs/table/storage"
)

// verifyTable makes a table of 6 episodes of 4 rows in one commit (one
// data file), all cut from one video.
func verifyTable(t *testing.T) (string, storage.Store) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := table.Create(ctx, store, table.Schema{Columns: []table.Column{
		{Name: "speed", Type: "float64"}, {Name: "tags", Type: "list<string>", Nullable: true}}}, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var inputs []table.EpisodeInput
	for e := range 6 {
		var b strings.Builder
		for r := range 4 {
			fmt.Fprintf(&b, `{"speed":%d,"tags":["a","b"]}`+"\n", e*10+r)
		}
		sc, err := table.ParseSidecar("s.jsonl", []byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, table.EpisodeInput{Episode: fmt.Sprintf("ep%d", e), Sidecar: sc,
			Videos: map[string]table.VideoFile{"": {Path: filepath.Join("..", "testdata", "video", "h264_vfr.mp4"), FirstFrame: int64(e)}}})
	}
	if _, err := tbl.AddEpisodes(ctx, inputs, table.AddOptions{NoSizes: true}); err != nil {
		t.Fatal(err)
	}
	return dir, store
}

func verifyProblems(t *testing.T, store storage.Store) table.VerifyReport {
	t.Helper()
	tbl, err := table.Open(context.Background(), store, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var last table.VerifyProgress
	rep, err := tbl.VerifyWith(context.Background(), table.VerifyOptions{Progress: func(p table.VerifyProgress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	if last.Phase != "done" || last.Episodes != rep.Episodes || last.RowGroups != rep.RowGroups {
		t.Errorf("the last progress %+v is not the report's %+v", last, rep.VerifyProgress)
	}
	return rep
}

// TestVerifyRowGroups: verify decodes every referenced row group of every
// data file once, and reports a manifest that claims a row group the file
// lacks or of other rows, and a data file whose pages are damaged.
func TestVerifyRowGroups(t *testing.T) {
	ctx := context.Background()
	_, store := verifyTable(t)
	rep := verifyProblems(t, store)
	if len(rep.Problems) != 0 || rep.RowGroups != 6 || rep.DataFiles != 1 || rep.Episodes != 6 || rep.Payloads != 1 {
		t.Fatalf("healthy table: %+v", rep)
	}
	for name, tc := range map[string]struct {
		edit func(*manifest.Entry) bool
		want string
	}{
		"missing row group": {func(e *manifest.Entry) bool { return e.Episode == "ep5" && edit(&e.RowGroup, 10) }, "has no row group"},
		"rows":              {func(e *manifest.Entry) bool { return e.Episode == "ep2" && edit(&e.Rows, -1) }, "the manifest says 3"},
	} {
		t.Run(name, func(t *testing.T) {
			_, store := verifyTable(t)
			if _, err := tabletamper.RewriteEntries(ctx, store, tc.edit); err != nil {
				t.Fatal(err)
			}
			rep := verifyProblems(t, store)
			found := false
			for _, p := range rep.Problems {
				found = found || strings.Contains(p.Problem, tc.want)
			}
			if !found {
				t.Errorf("verify: %+v, want a problem saying %q", rep.Problems, tc.want)
			}
		})
	}
	t.Run("damaged pages", func(t *testing.T) {
		dir, store := verifyTable(t)
		files, _ := filepath.Glob(filepath.Join(dir, "data", "*.parquet"))
		data, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		for i := 8; i < len(data)/2; i += 7 {
			data[i] ^= 0x5a
		}
		if err := os.WriteFile(files[0], data, 0o644); err != nil {
			t.Fatal(err)
		}
		rep := verifyProblems(t, store)
		if len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0].Object, "data/") {
			t.Errorf("verify of a damaged data file: %+v", rep.Problems)
		}
	})
}

// edit adds d to *v and reports a change.
func edit[T int | int64](v *T, d T) bool {
	*v += d
	return true
}
