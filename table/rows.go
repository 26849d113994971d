package table

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Row is one frame row: column name to value. Values are bool, int64,
// float64, string, time.Time (UTC), []any for lists, FrameRef for video
// columns, or nil for null.
type Row map[string]any

// FrameRef is the value of a video column in a row: which frame of which
// stored video (Paimon's video frame descriptor).
type FrameRef struct {
	Pack   string `json:"pack"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	Frame  int64  `json:"frame"`
}

// Field names of the frame reference struct in Parquet.
var frameRefType = arrow.StructOf(
	arrow.Field{Name: "pack", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
	arrow.Field{Name: "length", Type: arrow.PrimitiveTypes.Int64},
	arrow.Field{Name: "frame", Type: arrow.PrimitiveTypes.Int64},
)

// DataFileSchema is the Arrow schema of the data files written with s:
// the episode column, the row's index within its episode, the user
// columns, then one frame reference per video column.
func DataFileSchema(s *Schema) (*arrow.Schema, error) {
	fields := []arrow.Field{
		{Name: s.EpisodeColumn, Type: arrow.BinaryTypes.String},
		{Name: colIndex, Type: arrow.PrimitiveTypes.Int64},
	}
	for _, c := range s.Columns {
		dt, err := c.Type.Arrow()
		if err != nil {
			return nil, err
		}
		fields = append(fields, arrow.Field{Name: c.Name, Type: dt, Nullable: c.Nullable})
	}
	for _, v := range s.VideoColumns {
		fields = append(fields, arrow.Field{Name: v, Type: frameRefType})
	}
	return arrow.NewSchema(fields, nil), nil
}

// episodeRows is one episode's rows ready to write: row i is frame
// FirstFrame+i of each video.
type episodeRows struct {
	episode string
	rows    []Row
	videos  map[string]VideoRef
	// ordinals, when set, are the positions of rows in the episode (a
	// selection of its rows); else row i is position i.
	ordinals []int64
}

// writeDataFile streams one Parquet file with a row group per episode,
// and returns its footer. Data files are compressed with Zstandard: they
// are written once and read by every reader of the table.
func writeDataFile(ctx context.Context, put func(io.Reader) error, s *Schema, episodes []episodeRows) (*metadata.FileMetaData, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := put(pr)
		pr.CloseWithError(err) // unblock the writer if put gave up early
		done <- err
	}()
	// The Parquet writer writes page by page, tens of bytes at a time:
	// buffer them into large writes to the store.
	bw := bufio.NewWriterSize(pw, 1<<20)
	md, werr := encodeRows(ctx, bw, s, episodes, compress.Codecs.Zstd)
	if werr == nil {
		if werr = bw.Flush(); werr != nil {
			werr = fmt.Errorf("write rows: %w", werr)
		}
	}
	pw.CloseWithError(werr)
	perr := <-done
	if werr != nil {
		return nil, werr
	}
	return md, perr
}

// encodeRows writes episodes to w as one Parquet file with a row group
// per episode, compressed with codec, and returns its footer.
func encodeRows(ctx context.Context, w io.Writer, s *Schema, episodes []episodeRows, codec compress.Compression) (*metadata.FileMetaData, error) {
	sc, err := DataFileSchema(s)
	if err != nil {
		return nil, err
	}
	md, err := func() (*metadata.FileMetaData, error) {
		props := parquet.NewWriterProperties(
			parquet.WithCompression(codec),
			parquet.WithMaxRowGroupLength(math.MaxInt32), // one row group per episode
			parquet.WithCreatedBy("framefs"),
			// A row group holds one episode: dictionaries would be built
			// and written per episode and cost more than they save.
			parquet.WithDictionaryDefault(false),
		)
		fw, err := pqarrow.NewFileWriter(sc, w, props, pqarrow.DefaultWriterProps())
		if err != nil {
			return nil, err
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		for _, ep := range episodes {
			if err := ctx.Err(); err != nil {
				fw.Close()
				return nil, err
			}
			if err := appendEpisode(b, s, ep); err != nil {
				fw.Close()
				return nil, err
			}
			rec := b.NewRecordBatch()
			err := fw.Write(rec)
			rec.Release()
			if err != nil {
				fw.Close()
				return nil, err
			}
		}
		if err := fw.Close(); err != nil {
			return nil, err
		}
		return fw.FileMetadata()
	}()
	if err != nil {
		return nil, fmt.Errorf("write rows: %w", err)
	}
	return md, nil
}

func appendEpisode(b *array.RecordBuilder, s *Schema, ep episodeRows) error {
	for k, row := range ep.rows {
		i := int64(k)
		if ep.ordinals != nil {
			i = ep.ordinals[k]
		}
		b.Field(0).(*array.StringBuilder).Append(ep.episode)
		b.Field(1).(*array.Int64Builder).Append(i)
		for c, col := range s.Columns {
			if err := appendValue(b.Field(2+c), col.Type, row[col.Name]); err != nil {
				return fmt.Errorf("episode %q row %d column %q: %w", ep.episode, i, col.Name, err)
			}
		}
		for v, name := range s.VideoColumns {
			ref := ep.videos[name]
			sb := b.Field(2 + len(s.Columns) + v).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.StringBuilder).Append(ref.Pack)
			sb.FieldBuilder(1).(*array.Int64Builder).Append(ref.Offset)
			sb.FieldBuilder(2).(*array.Int64Builder).Append(ref.Length)
			sb.FieldBuilder(3).(*array.Int64Builder).Append(ref.FirstFrame + i)
		}
	}
	return nil
}

func appendValue(b array.Builder, t Type, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	if elem, ok := t.Elem(); ok {
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("want a list, have %T", v)
		}
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		for _, e := range list {
			if err := appendValue(lb.ValueBuilder(), elem, e); err != nil {
				return err
			}
		}
		return nil
	}
	var ok bool
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		var x bool
		if x, ok = v.(bool); ok {
			bb.Append(x)
		}
	case *array.Int32Builder:
		var x int64
		if x, ok = v.(int64); ok {
			bb.Append(int32(x))
		}
	case *array.Int64Builder:
		var x int64
		if x, ok = v.(int64); ok {
			bb.Append(x)
		}
	case *array.Float32Builder:
		var x float64
		if x, ok = v.(float64); ok {
			bb.Append(float32(x))
		}
	case *array.Float64Builder:
		var x float64
		if x, ok = v.(float64); ok {
			bb.Append(x)
		}
	case *array.StringBuilder:
		var x string
		if x, ok = v.(string); ok {
			bb.Append(x)
		}
	case *array.TimestampBuilder:
		var x time.Time
		if x, ok = v.(time.Time); ok {
			bb.Append(arrow.Timestamp(x.UnixMicro()))
		}
	default:
		return fmt.Errorf("unsupported column builder %T", b)
	}
	if !ok {
		return fmt.Errorf("value %v (%T) does not fit type %s", v, v, t)
	}
	return nil
}

// readRows reads one episode's rows: a single row group of its data file.
// Columns the file lacks (added by a later schema) read as null.
func (t *Table) readRows(ctx context.Context, e EpisodeEntry, s *Schema) ([]Row, error) {
	obj, err := t.store.Open(ctx, e.DataFile)
	if err != nil {
		return nil, fmt.Errorf("episode %q: %w", e.Episode, err)
	}
	defer obj.Close()
	pf, err := file.NewParquetReader(io.NewSectionReader(obj, 0, obj.Size()))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, e.DataFile, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, e.DataFile, err)
	}
	if e.RowGroup < 0 || e.RowGroup >= pf.NumRowGroups() {
		return nil, fmt.Errorf("%w: %s has no row group %d", ErrCorrupt, e.DataFile, e.RowGroup)
	}
	leaves := make([]int, pf.MetaData().Schema.NumColumns())
	for i := range leaves {
		leaves[i] = i
	}
	tbl, err := fr.ReadRowGroups(ctx, leaves, []int{e.RowGroup})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, e.DataFile, err)
	}
	defer tbl.Release()
	n := int(tbl.NumRows())
	if int64(n) != e.Rows {
		return nil, fmt.Errorf("%w: %s row group %d has %d rows, the manifest says %d", ErrCorrupt, e.DataFile, e.RowGroup, n, e.Rows)
	}
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{}
	}
	for c := 0; c < int(tbl.NumCols()); c++ {
		name := tbl.Schema().Field(c).Name
		if name == colIndex {
			continue
		}
		i := 0
		for _, chunk := range tbl.Column(c).Data().Chunks() {
			for k := 0; k < chunk.Len(); k++ {
				rows[i][name] = RowValue(chunk, k)
				i++
			}
		}
	}
	for _, col := range s.Columns {
		for _, r := range rows {
			if _, ok := r[col.Name]; !ok {
				r[col.Name] = nil
			}
		}
	}
	return rows, nil
}

// RowValue converts element k of an Arrow array read from a data file (or
// a Parquet sidecar) to its Row value.
func RowValue(a arrow.Array, k int) any {
	if a.IsNull(k) {
		return nil
	}
	switch arr := a.(type) {
	case *array.Boolean:
		return arr.Value(k)
	case *array.Int32:
		return int64(arr.Value(k))
	case *array.Int64:
		return arr.Value(k)
	case *array.Float32:
		// The shortest decimal that round-trips the float32 (0.1, not
		// 0.10000000149011612), as a user who wrote 0.1 expects back.
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(arr.Value(k)), 'g', -1, 32), 64)
		return f
	case *array.Float64:
		return arr.Value(k)
	case *array.String:
		return arr.Value(k)
	case *array.Timestamp:
		unit := arr.DataType().(*arrow.TimestampType).Unit
		return arr.Value(k).ToTime(unit).UTC()
	case *array.List:
		start, end := arr.ValueOffsets(k)
		values := arr.ListValues()
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, RowValue(values, int(j)))
		}
		return out
	case *array.Struct:
		if arr.NumField() == 4 {
			return FrameRef{
				Pack:   arr.Field(0).(*array.String).Value(k),
				Offset: arr.Field(1).(*array.Int64).Value(k),
				Length: arr.Field(2).(*array.Int64).Value(k),
				Frame:  arr.Field(3).(*array.Int64).Value(k),
			}
		}
	}
	return fmt.Sprintf("<unsupported %s>", a.DataType())
}

// Rows returns an episode's frame rows, each with its row id and its
// position in the episode (FrameColumn).
func (t *Table) Rows(ctx context.Context, snap *Snapshot, e EpisodeEntry) ([]Row, error) {
	s, err := t.Schema(ctx, snap.SchemaID)
	if err != nil {
		return nil, err
	}
	rows, err := t.readRows(ctx, e, s)
	if err != nil {
		return nil, err
	}
	framed := s.HasFrameColumn()
	for i, r := range rows {
		r[RowIDColumn] = e.FirstRowID + int64(i)
		if framed {
			r[FrameColumn] = int64(i)
		}
	}
	return rows, nil
}

// RowIDColumn is the name under which Rows reports a row's id.
const RowIDColumn = "_row_id"

// EpisodeParquet returns an episode's rows as a standalone Parquet file
// (the data file layout, one row group), for tools that want one file per
// episode.
func (t *Table) EpisodeParquet(ctx context.Context, snap *Snapshot, e EpisodeEntry) ([]byte, error) {
	return t.EpisodeParquetRows(ctx, snap, e, nil)
}

// EpisodeParquetRows is EpisodeParquet of some of the episode's rows:
// those at the given positions (ascending; nil for all). Each row keeps
// its position (_index) and its frame.
func (t *Table) EpisodeParquetRows(ctx context.Context, snap *Snapshot, e EpisodeEntry, ordinals []int64) ([]byte, error) {
	s, err := t.Schema(ctx, snap.SchemaID)
	if err != nil {
		return nil, err
	}
	rows, err := t.readRows(ctx, e, s)
	if err != nil {
		return nil, err
	}
	if ordinals != nil {
		picked := make([]Row, len(ordinals))
		for k, i := range ordinals {
			if i < 0 || i >= int64(len(rows)) {
				return nil, fmt.Errorf("%w: episode %q has no row %d", ErrNotFound, e.Episode, i)
			}
			picked[k] = rows[i]
		}
		rows = picked
	}
	// Snappy, not the data files' Zstandard: the file is made on demand
	// and dropped, and a Zstandard encoder keeps megabytes of tables,
	// which a mount would hold, pooled, for every rows file it makes.
	var buf bytes.Buffer
	if _, err := encodeRows(ctx, &buf, s, []episodeRows{{episode: e.Episode, rows: rows, videos: e.Videos, ordinals: ordinals}}, compress.Codecs.Snappy); err != nil {
		return nil, err
	}
	// An exact-size copy: the buffer grew by doubling, and a mount keeps
	// the file in a cache that charges it by length.
	return bytes.Clone(buf.Bytes()), nil
}
