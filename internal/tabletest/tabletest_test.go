package tabletest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

// TestLavfiOpenOptions: a video made by Lavfi has the frames asked for,
// as the indexer of Options counts them, and a table created in a
// directory opens there with its schema.
func TestLavfiOpenOptions(t *testing.T) {
	ctx := context.Background()
	video := filepath.Join(t.TempDir(), "v.mp4")
	Lavfi(t, video, "testsrc2=size=64x48:rate=10", 7, "-c:v", "libx264", "-g", "3", "-pix_fmt", "yuv420p")
	data, err := os.ReadFile(video)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Options().Indexer(ctx, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if ix.Frames() != 7 {
		t.Errorf("Lavfi made %d frames, want 7", ix.Frames())
	}

	dir := filepath.Join(t.TempDir(), "t")
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema := table.Schema{Columns: []table.Column{{Name: "task", Type: "string"}}}
	if _, err := table.Create(ctx, store, schema, Options()); err != nil {
		t.Fatal(err)
	}
	tbl := Open(t, dir, Options())
	got, err := tbl.LatestSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cols := got.Columns; len(cols) == 0 || cols[len(cols)-1].Name != "task" {
		t.Errorf("the opened table's columns are %+v", cols)
	}
}
