package lerobot

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/framefs/framefs/internal/parquetcheck"
	"github.com/framefs/framefs/internal/regfile"
)

// parquetTable is (part of) a Parquet file read into memory: one Arrow
// array per top-level column. Dataset files are bounded by LeRobot's
// file size limits (100 MB by default).
type parquetTable struct {
	rows   int64
	fields []arrow.Field
	cols   map[string]arrow.Array
	// pandas is the "pandas" key-value metadata, when the file has it.
	pandas string
}

func (t *parquetTable) release() {
	for _, a := range t.cols {
		a.Release()
	}
}

// field returns the Arrow field of a column.
func (t *parquetTable) field(name string) (arrow.Field, bool) {
	for _, f := range t.fields {
		if f.Name == name {
			return f, true
		}
	}
	return arrow.Field{}, false
}

// ErrMalformedParquet means a Parquet file is damaged: its footer claims
// what the file cannot hold, or the reader failed on its pages.
var ErrMalformedParquet = parquetcheck.ErrMalformed

// openParquet opens a Parquet file after checking its footer's claims
// (parquetcheck.Open, with its default limits). The file must be a
// regular file (links followed) of at most maxBytes bytes (0: any size).
func openParquet(path string, maxBytes int64) (*os.File, *file.Reader, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if maxBytes > 0 && st.Size() > maxBytes {
		f.Close()
		return nil, nil, &regfile.TooLargeError{Path: path, Size: st.Size(), Limit: maxBytes}
	}
	pf, err := parquetcheck.Open(f, st.Size(), parquetcheck.Limits{})
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, pf, nil
}

// readParquet reads the named top-level columns of a Parquet file (all of
// them when names is nil; names the file lacks are left out) of at most
// maxBytes bytes (0: any size).
func readParquet(ctx context.Context, path string, names []string, maxBytes int64) (out *parquetTable, err error) {
	defer parquetcheck.Recover(&err)
	f, pf, err := openParquet(path, maxBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var leaves []int
	for i := range fr.Manifest.Fields {
		sf := &fr.Manifest.Fields[i]
		if names == nil || want[sf.Field.Name] {
			leaves = appendLeaves(leaves, sf)
		}
	}
	out = &parquetTable{rows: pf.NumRows(), cols: map[string]arrow.Array{}}
	if kv := pf.MetaData().KeyValueMetadata(); kv != nil {
		if v := kv.FindValue("pandas"); v != nil {
			out.pandas = *v
		}
	}
	if len(leaves) == 0 {
		return out, nil
	}
	groups := make([]int, pf.NumRowGroups())
	for i := range groups {
		groups[i] = i
	}
	tbl, err := fr.ReadRowGroups(ctx, leaves, groups)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	defer func() {
		if err != nil {
			out.release()
		}
	}()
	if tbl.NumRows() != out.rows {
		return nil, fmt.Errorf("%w: read %d rows, the footer says %d", ErrMalformedParquet, tbl.NumRows(), out.rows)
	}
	for i := 0; i < int(tbl.NumCols()); i++ {
		col := tbl.Column(i)
		chunks := col.Data().Chunks()
		var a arrow.Array
		switch len(chunks) {
		case 0:
			a = array.MakeArrayOfNull(memory.DefaultAllocator, col.DataType(), 0)
		case 1:
			a = chunks[0]
			a.Retain()
		default:
			if a, err = array.Concatenate(chunks, memory.DefaultAllocator); err != nil {
				return nil, err
			}
		}
		out.fields = append(out.fields, col.Field())
		out.cols[col.Name()] = a
	}
	return out, nil
}

func appendLeaves(out []int, sf *pqarrow.SchemaField) []int {
	if sf.IsLeaf() {
		return append(out, sf.ColIndex)
	}
	for i := range sf.Children {
		out = appendLeaves(out, &sf.Children[i])
	}
	return out
}

// parquetFooter reads a Parquet file's footer only: its top-level
// columns, and per column the number of nulls its statistics count (-1
// where a row group has no usable statistics).
func parquetFooter(path string) (fields []arrow.Field, nulls map[string]int64, err error) {
	defer parquetcheck.Recover(&err)
	f, pf, err := openParquet(path, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	defer pf.Close()
	md := pf.MetaData()
	sc, err := pqarrow.FromParquet(md.Schema, nil, md.KeyValueMetadata())
	if err != nil {
		return nil, nil, err
	}
	nulls = map[string]int64{}
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		group := md.RowGroup(rg)
		for c := 0; c < md.Schema.NumColumns(); c++ {
			name := md.Schema.Column(c).ColumnPath()[0]
			if nulls[name] < 0 {
				continue
			}
			chunk, err := group.ColumnChunk(c)
			if err != nil {
				return nil, nil, err
			}
			stats, err := chunk.Statistics()
			if err != nil || stats == nil || !stats.HasNullCount() {
				nulls[name] = -1
				continue
			}
			nulls[name] += stats.NullCount()
		}
	}
	return sc.Fields(), nulls, nil
}

// intAt returns element i of an integer array.
func intAt(a arrow.Array, i int) (int64, bool) {
	if a == nil || a.IsNull(i) { // a nil array: a column the file lacks
		return 0, false
	}
	switch x := a.(type) {
	case *array.Int64:
		return x.Value(i), true
	case *array.Int32:
		return int64(x.Value(i)), true
	case *array.Int16:
		return int64(x.Value(i)), true
	case *array.Int8:
		return int64(x.Value(i)), true
	case *array.Uint64:
		v := x.Value(i)
		return int64(v), v <= math.MaxInt64
	case *array.Uint32:
		return int64(x.Value(i)), true
	case *array.Uint16:
		return int64(x.Value(i)), true
	case *array.Uint8:
		return int64(x.Value(i)), true
	}
	return 0, false
}

// floatAt returns element i of a floating-point (or integer) array.
func floatAt(a arrow.Array, i int) (float64, bool) {
	if a == nil || a.IsNull(i) { // a nil array: a column the file lacks
		return 0, false
	}
	switch x := a.(type) {
	case *array.Float64:
		return x.Value(i), true
	case *array.Float32:
		return float64(x.Value(i)), true
	case *array.Float16:
		return float64(x.Value(i).Float32()), true
	}
	n, ok := intAt(a, i)
	return float64(n), ok
}

// stringAt returns element i of a string array.
func stringAt(a arrow.Array, i int) (string, bool) {
	if a == nil || a.IsNull(i) { // a nil array: a column the file lacks
		return "", false
	}
	switch x := a.(type) {
	case *array.String:
		return x.Value(i), true
	case *array.LargeString:
		return x.Value(i), true
	case *array.StringView:
		return x.Value(i), true
	}
	return "", false
}

// listAt returns the values array and range of element i of a list array.
func listAt(a arrow.Array, i int) (values arrow.Array, start, end int, ok bool) {
	if a == nil || a.IsNull(i) { // a nil array: a column the file lacks
		return nil, 0, 0, false
	}
	switch x := a.(type) {
	case *array.List:
		s, e := x.ValueOffsets(i)
		return x.ListValues(), int(s), int(e), true
	case *array.LargeList:
		s, e := x.ValueOffsets(i)
		return x.ListValues(), int(s), int(e), true
	case *array.FixedSizeList:
		s, e := x.ValueOffsets(i)
		return x.ListValues(), int(s), int(e), true
	}
	return nil, 0, 0, false
}

// stringsAt returns element i of a list-of-strings array.
func stringsAt(a arrow.Array, i int) ([]string, bool) {
	vals, start, end, ok := listAt(a, i)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, end-start)
	for j := start; j < end; j++ {
		s, ok := stringAt(vals, j)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// describeType names an Arrow type in messages.
func describeType(dt arrow.DataType) string { return dt.String() }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
