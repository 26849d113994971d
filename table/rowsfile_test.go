package table

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// TestEpisodeParquetRowsCodecs: an episode's rows file, made on demand by
// a mount, is compressed with Snappy, and holds the episode's rows; the
// data files the table stores are compressed with Zstandard. A mount that
// made its rows files with Zstandard held megabytes of pooled encoders.
func TestEpisodeParquetRowsCodecs(t *testing.T) {
	ctx := context.Background()
	tbl := newTable(t)
	snap, err := tbl.AddEpisodes(ctx, []EpisodeInput{{Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}},
		Sidecar: sidecarFor(t, "ep", 25)}}, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := tbl.Episodes(ctx, snap)
	if err != nil || len(eps) != 1 {
		t.Fatalf("%d episodes, %v", len(eps), err)
	}
	codecs := func(what string, data []byte, rows int64) []compress.Compression {
		t.Helper()
		r, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer r.Close()
		if n := r.NumRows(); n != rows {
			t.Fatalf("%s: %d rows, want %d", what, n, rows)
		}
		var out []compress.Compression
		for c := range r.MetaData().Schema.NumColumns() {
			col, err := r.MetaData().RowGroup(0).ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, col.Compression())
		}
		return out
	}
	rowsFile, err := tbl.EpisodeParquetRows(ctx, snap, eps[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	// A mount caches the file, charged by length: no array behind it
	// beyond its bytes (it was twice their size, grown by doubling).
	if cap(rowsFile) > len(rowsFile)+len(rowsFile)/8 {
		t.Errorf("the rows file's %d bytes hold an array of %d", len(rowsFile), cap(rowsFile))
	}
	for _, c := range codecs("rows file", rowsFile, 25) {
		if c != compress.Codecs.Snappy {
			t.Errorf("a column of the rows file is compressed with %v, want Snappy", c)
		}
	}
	stored, err := tbl.store.ReadAll(ctx, eps[0].DataFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range codecs("data file", stored, 25) {
		if c != compress.Codecs.Zstd {
			t.Errorf("a column of the data file is compressed with %v, want Zstandard", c)
		}
	}
}
