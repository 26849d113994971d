package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/framefs/framefs/table/storage"
)

// TestFrameNameReserved checks that no column takes the name frame, and
// that a table made before it was reserved keeps its own frame column in
// its rows (package query checks filters and group-by on such a table).
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
	// is that column's in its rows.
	local, _ = storage.NewLocal(t.TempDir())
	legacy := Schema{Columns: []Column{{Name: "frame", Type: "int64"}}}.withDefaults()
	if err := local.PutIfAbsent(ctx, schemaKey(legacy.ID), marshal(legacy)); err != nil {
		t.Fatal(err)
	}
	if tbl, err = Create(ctx, local, Schema{Columns: []Column{{Name: "unused", Type: "int64"}}}, Options{}); err != nil {
		t.Fatal(err)
	}
	if s, err := tbl.Schema(ctx, legacy.ID); err != nil || s.HasFrameColumn() {
		t.Fatalf("the legacy schema: HasFrameColumn true (%v)", err)
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
	eps, _ := tbl.Episodes(ctx, snap)
	rows, err := tbl.Rows(ctx, snap, eps[0])
	if err != nil {
		t.Fatal(err)
	}
	if rows[3]["frame"] != int64(103) {
		t.Errorf("row 3: frame %v, want the column's 103", rows[3]["frame"])
	}
}
