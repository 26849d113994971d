package table

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// frozenEncoding is an entry of a frozen table's expected.json: a binary
// block under encodings/ and the JSON of what it decodes to (the package
// internal/frozentable describes them; it imports this package, so the
// tests of this package read the files themselves).
type frozenEncoding struct {
	Kind   string `json:"kind"`
	File   string `json:"file"`
	JSON   string `json:"json"`
	Source string `json:"source"`
}

// frozenEncodings returns the blocks of one kind of every frozen table,
// with the folder of their table.
func frozenEncodings(t *testing.T, kind string) map[string][]frozenEncoding {
	t.Helper()
	dirs, err := filepath.Glob("../testdata/format/v*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no frozen tables under ../testdata/format: %v", err)
	}
	out := map[string][]frozenEncoding{}
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "expected.json"))
		if err != nil {
			t.Fatal(err)
		}
		var exp struct {
			Encodings []frozenEncoding `json:"encodings"`
		}
		if err := json.Unmarshal(data, &exp); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, e := range exp.Encodings {
			if e.Kind == kind {
				out[dir] = append(out[dir], e)
			}
		}
		if len(out[dir]) == 0 {
			t.Fatalf("%s holds no %s block", dir, kind)
		}
	}
	return out
}

func readFrozen(t *testing.T, dir, name string, into any) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if into != nil {
		if err := json.Unmarshal(data, into); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return data
}

// TestFrozenSizesBlocks: the FSZS blocks of the frozen tables decode to
// their sizes, and encoding the sizes writes the same bytes.
func TestFrozenSizesBlocks(t *testing.T) {
	for dir, encs := range frozenEncodings(t, "FSZS") {
		for _, e := range encs {
			bin := readFrozen(t, dir, e.File, nil)
			var want struct{ Sizes []int64 }
			readFrozen(t, dir, e.JSON, &want)
			got, err := DecodeSizes(bin)
			if err != nil || !reflect.DeepEqual(got, want.Sizes) {
				t.Errorf("%s/%s decodes to %v, %v; want %v", dir, e.File, got, err, want.Sizes)
			}
			if enc := encodeSizes(want.Sizes); !bytes.Equal(enc, bin) {
				t.Errorf("%s/%s: the sizes encode to other bytes:\n%x\nwant\n%x", dir, e.File, enc, bin)
			}
		}
	}
}

// TestFrozenChunkIndexes: the FCIX blocks of the frozen tables decode to
// the column chunks their JSON lists (read from the data files' Parquet
// footers when the table was written), and the index made from each data
// file's footer is the same bytes.
func TestFrozenChunkIndexes(t *testing.T) {
	for dir, encs := range frozenEncodings(t, "FCIX") {
		for _, e := range encs {
			bin := readFrozen(t, dir, e.File, nil)
			var want struct {
				Version   int
				Codec     int
				Columns   []string
				RowGroups []struct {
					Rows   int64
					Chunks [][2]int64
				} `json:"row_groups"`
			}
			readFrozen(t, dir, e.JSON, &want)
			ix, err := decodeChunkIndex(bin)
			if err != nil {
				t.Fatalf("%s/%s: %v", dir, e.File, err)
			}
			if want.Version != 1 || ix.codec != compress.Compression(want.Codec) || len(ix.columns) != len(want.Columns) || len(ix.groups) != len(want.RowGroups) {
				t.Fatalf("%s/%s decodes to codec %v, %d columns, %d row groups; want %+v", dir, e.File, ix.codec, len(ix.columns), len(ix.groups), want)
			}
			for c, name := range want.Columns {
				if ix.columns[name] != c {
					t.Errorf("%s/%s: column %s at %d, want %d", dir, e.File, name, ix.columns[name], c)
				}
			}
			for g, rg := range want.RowGroups {
				if ix.groups[g].rows != rg.Rows || len(ix.groups[g].chunks) != len(rg.Chunks) {
					t.Fatalf("%s/%s: row group %d: %+v, want %+v", dir, e.File, g, ix.groups[g], rg)
				}
				for c, loc := range rg.Chunks {
					if got := ix.groups[g].chunks[c]; got.offset != loc[0] || got.length != loc[1] {
						t.Errorf("%s/%s: row group %d column %d at %+v, want %v", dir, e.File, g, c, got, loc)
					}
				}
			}
			pf, err := file.OpenParquetFile(filepath.Join(dir, e.Source), false)
			if err != nil {
				t.Fatal(err)
			}
			enc := encodeChunkIndex(pf.MetaData())
			pf.Close()
			if !bytes.Equal(enc, bin) {
				t.Errorf("the chunk index of %s encodes to other bytes:\n%x\nwant\n%x", e.Source, enc, bin)
			}
			if stored := readFrozen(t, dir, e.Source[:len(e.Source)-len(".parquet")]+".chunks", nil); !bytes.Equal(stored, bin) {
				t.Errorf("%s differs from the table's own chunk index", e.File)
			}
		}
	}
}
