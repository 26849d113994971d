package manifest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// EntriesPerRowGroup is how many entries a manifest's row groups hold: a
// reader that needs a few entries decodes one row group of each column,
// not the whole manifest.
const EntriesPerRowGroup = 1024

// ErrInvalid means entries or summaries cannot be written as given (a
// damaged entry carried over from an older manifest, or a layout that
// does not fit them).
var ErrInvalid = errors.New("invalid manifest content")

// check refuses layouts whose columns cannot be written.
func (l Layout) check() error {
	if len(l.Videos) == 0 {
		return fmt.Errorf("%w: no video columns", ErrInvalid)
	}
	for _, p := range l.Partitions {
		if k := KindOf(p.Type); k == KindNone || k == KindFloat || p.Type == "timestamp" {
			return fmt.Errorf("%w: partition column %q has type %s", ErrInvalid, p.Name, p.Type)
		}
	}
	return nil
}

// SortKey orders a manifest's entries: by partition values (as text, in
// the layout's order), then by episode id. Manifests keep their entries
// in this order so that their ranges of partitions and episodes are
// narrow.
func (l Layout) SortKey(e *Entry) string {
	var b strings.Builder
	for _, p := range l.Partitions {
		b.WriteString(e.Partition[p.Name])
		b.WriteByte(0)
	}
	b.WriteString(e.Episode)
	return b.String()
}

// Sort puts entries in manifest order (SortKey).
func (l Layout) Sort(entries []Entry) {
	if len(l.Partitions) == 0 {
		slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Episode, b.Episode) })
		return
	}
	keys := make([]string, len(entries))
	idx := make([]int, len(entries))
	for i := range entries {
		keys[i], idx[i] = l.SortKey(&entries[i]), i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	sorted := make([]Entry, len(entries))
	for i, j := range idx {
		sorted[i] = entries[j]
	}
	copy(entries, sorted)
}

// writerProperties are those of manifests and manifest lists: Zstandard,
// dictionaries (file names, codecs and identities repeat from entry to
// entry) and row-group statistics.
func writerProperties(rowGroup int64) *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(rowGroup),
		parquet.WithCreatedBy("framefs"),
	)
}

// writeRecord writes one record as a Parquet file.
func writeRecord(sc *arrow.Schema, rec arrow.RecordBatch, rowGroup int64) ([]byte, error) {
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(sc, &buf, writerProperties(rowGroup), pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	if err := fw.Write(rec); err != nil {
		fw.Close()
		return nil, err
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Encode writes entries as a manifest (docs/FORMAT.md) in manifest order
// (sorting a copy), and returns its bytes and its summary (Manifest left
// for the caller to fill in).
func Encode(l Layout, entries []Entry) ([]byte, Summary, error) {
	if err := l.check(); err != nil {
		return nil, Summary{}, err
	}
	if len(entries) == 0 {
		return nil, Summary{}, fmt.Errorf("%w: a manifest holds at least one entry", ErrInvalid)
	}
	entries = slices.Clone(entries)
	l.Sort(entries)
	sc := l.entrySchema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	sum := newSummarizer(l)
	for i := range entries {
		e := &entries[i]
		if err := appendEntry(b, l, e); err != nil {
			return nil, Summary{}, fmt.Errorf("manifest entry of episode %q: %w", e.Episode, err)
		}
		if err := sum.add(e); err != nil {
			return nil, Summary{}, fmt.Errorf("manifest entry of episode %q: %w", e.Episode, err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data, err := writeRecord(sc, rec, EntriesPerRowGroup)
	if err != nil {
		return nil, Summary{}, fmt.Errorf("write manifest: %w", err)
	}
	s := sum.result()
	s.Bytes = int64(len(data))
	return data, s, nil
}

func appendEntry(b *array.RecordBuilder, l Layout, e *Entry) error {
	if e.Rows < 0 || e.RowGroup < 0 || e.RowGroup > math.MaxInt32 || e.SchemaID < 0 || e.SchemaID > math.MaxInt32 {
		return fmt.Errorf("%w: %d rows, row group %d, schema %d", ErrInvalid, e.Rows, e.RowGroup, e.SchemaID)
	}
	f := 0
	next := func() array.Builder { f++; return b.Field(f - 1) }
	next().(*array.StringBuilder).Append(e.Episode)
	if len(l.Partitions) > 0 {
		pb := next().(*array.StructBuilder)
		pb.Append(true)
		for i, p := range l.Partitions {
			v, ok := e.Partition[p.Name]
			if !ok {
				return fmt.Errorf("%w: no value for partition column %q", ErrInvalid, p.Name)
			}
			if _, ok := ParsePartition(p.Type, v); !ok {
				return fmt.Errorf("%w: partition value %q is not of type %s", ErrInvalid, v, p.Type)
			}
			pb.FieldBuilder(i).(*array.StringBuilder).Append(v)
		}
	}
	next().(*array.Int64Builder).Append(e.Rows)
	next().(*array.Int64Builder).Append(e.FirstRowID)
	next().(*array.StringBuilder).Append(e.DataFile)
	next().(*array.Int32Builder).Append(int32(e.RowGroup))
	next().(*array.Int32Builder).Append(int32(e.SchemaID))
	tb := next().(*array.TimestampBuilder)
	if e.Time.IsZero() {
		tb.AppendNull()
	} else {
		tb.Append(arrow.Timestamp(e.Time.UnixNano()))
	}
	vb := next().(*array.StructBuilder)
	vb.Append(true)
	for i, col := range l.Videos {
		ref, ok := e.Videos[col]
		if !ok {
			return fmt.Errorf("%w: no video for column %q", ErrInvalid, col)
		}
		if err := appendVideo(vb.FieldBuilder(i).(*array.StructBuilder), ref); err != nil {
			return fmt.Errorf("video %q: %w", col, err)
		}
	}
	if len(l.Columns) > 0 {
		appendEntryStats(next().(*array.StructBuilder), l, e)
	}
	return nil
}

func appendVideo(b *array.StructBuilder, ref VideoRef) error {
	if ref.Width < 0 || ref.Width > math.MaxInt32 || ref.Height < 0 || ref.Height > math.MaxInt32 {
		return fmt.Errorf("%w: size %dx%d", ErrInvalid, ref.Width, ref.Height)
	}
	b.Append(true)
	b.FieldBuilder(0).(*array.StringBuilder).Append(ref.Pack)
	b.FieldBuilder(1).(*array.Int64Builder).Append(ref.Offset)
	b.FieldBuilder(2).(*array.Int64Builder).Append(ref.Length)
	sb := b.FieldBuilder(3).(*array.FixedSizeBinaryBuilder)
	if ref.SHA256 == "" {
		sb.AppendNull()
	} else {
		sum, err := hex.DecodeString(ref.SHA256)
		if err != nil || len(sum) != 32 || hex.EncodeToString(sum) != ref.SHA256 {
			return fmt.Errorf("%w: sha256 %q is not 64 lower-case hex digits", ErrInvalid, ref.SHA256)
		}
		sb.Append(sum)
	}
	b.FieldBuilder(4).(*array.Int64Builder).Append(ref.IndexOffset)
	b.FieldBuilder(5).(*array.Int64Builder).Append(ref.IndexLength)
	b.FieldBuilder(6).(*array.Int64Builder).Append(ref.FirstFrame)
	b.FieldBuilder(7).(*array.Int64Builder).Append(ref.Frames)
	b.FieldBuilder(8).(*array.StringBuilder).Append(ref.Codec)
	b.FieldBuilder(9).(*array.Int32Builder).Append(int32(ref.Width))
	b.FieldBuilder(10).(*array.Int32Builder).Append(int32(ref.Height))
	b.FieldBuilder(11).(*array.StringBuilder).Append(ref.SourceName)
	lb := b.FieldBuilder(12).(*array.ListBuilder)
	lb.Append(true)
	eb := lb.ValueBuilder().(*array.StructBuilder)
	for _, s := range ref.Sizes {
		eb.Append(true)
		eb.FieldBuilder(0).(*array.StringBuilder).Append(s.Identity)
		eb.FieldBuilder(1).(*array.StringBuilder).Append(s.Object)
		eb.FieldBuilder(2).(*array.Int64Builder).Append(s.Offset)
		eb.FieldBuilder(3).(*array.Int64Builder).Append(s.Length)
	}
	return nil
}

// appendEntryStats writes an entry's statistics: null when it has none
// (written before they existed), a null column when it has none for the
// column (added by a later schema). Bounds that do not parse are left out.
func appendEntryStats(b *array.StructBuilder, l Layout, e *Entry) {
	if e.Stats == nil {
		b.AppendNull()
		return
	}
	b.Append(true)
	for i, c := range l.Columns {
		cs, ok := e.Stats[c.Name]
		var st Stats
		if ok {
			st, ok = TypedStats(c.Type, cs, e.Rows)
		}
		appendStats(b.FieldBuilder(i).(*array.StructBuilder), c.Type, st, ok)
	}
}

// appendStats writes one column's statistics (null when !ok).
func appendStats(b *array.StructBuilder, typ string, st Stats, ok bool) {
	if !ok {
		b.AppendNull()
		return
	}
	b.Append(true)
	n := 0
	if KindOf(typ) != KindNone {
		appendBound(b.FieldBuilder(0), st.Min, st.HasRange)
		appendBound(b.FieldBuilder(1), st.Max, st.HasRange)
		n = 2
	}
	b.FieldBuilder(n).(*array.Int64Builder).Append(st.Nulls)
}

// appendBound appends a bound to the builder of its kind (null when
// !ok).
func appendBound(b array.Builder, v Bound, ok bool) {
	if !ok {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		bb.Append(v.Bool)
	case *array.Int64Builder:
		bb.Append(v.Int)
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(v.Int))
	case *array.Float64Builder:
		bb.Append(v.Float)
	case *array.StringBuilder:
		bb.Append(v.Str)
	default:
		b.AppendNull()
	}
}
