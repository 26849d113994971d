package manifest

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/framefs/framefs/internal/parquetcheck"
)

// ErrCorrupt means a manifest or a manifest list does not read as one: a
// damaged file, or one another program wrote wrongly.
var ErrCorrupt = parquetcheck.ErrMalformed

// limits bound what a manifest's or a list's footer may claim. Writers
// cut manifests far smaller (see Encode's callers).
var limits = parquetcheck.Limits{MaxRows: 1 << 22, MaxColumnChunk: 256 << 20}

// Reader reads a manifest held in memory. It is not safe for concurrent
// use.
type Reader struct {
	pf     *file.Reader
	fr     *pqarrow.FileReader
	paths  [][]string // the column path of each leaf
	starts []int      // the first entry of each row group, and the count
}

// NewReader reads a manifest's footer.
func NewReader(data []byte) (r *Reader, err error) {
	defer parquetcheck.Recover(&err)
	pf, err := parquetcheck.Open(bytes.NewReader(data), int64(len(data)), limits)
	if err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	r = &Reader{pf: pf, fr: fr}
	md := pf.MetaData()
	for i := 0; i < md.Schema.NumColumns(); i++ {
		r.paths = append(r.paths, md.Schema.Column(i).ColumnPath())
	}
	n := 0
	for rg := 0; rg < pf.NumRowGroups(); rg++ {
		r.starts = append(r.starts, n)
		n += int(md.RowGroup(rg).NumRows())
	}
	r.starts = append(r.starts, n)
	return r, nil
}

// Len returns the number of entries.
func (r *Reader) Len() int { return r.starts[len(r.starts)-1] }

// leaves returns the leaf columns whose path starts with one of the
// prefixes.
func (r *Reader) leaves(prefixes ...[]string) []int {
	var out []int
	for i, p := range r.paths {
		for _, pre := range prefixes {
			if len(p) >= len(pre) && slices.Equal(p[:len(pre)], pre) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// read reads the given leaves of the given row groups, one array per
// top-level column.
func (r *Reader) read(ctx context.Context, leaves, rowGroups []int) (cols map[string]arrow.Array, n int, err error) {
	defer parquetcheck.Recover(&err)
	cols = map[string]arrow.Array{}
	for _, rg := range rowGroups {
		n += r.starts[rg+1] - r.starts[rg]
	}
	if len(leaves) == 0 || n == 0 {
		return cols, n, nil
	}
	tbl, err := r.fr.ReadRowGroups(ctx, leaves, rowGroups)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		return nil, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer tbl.Release()
	if int(tbl.NumRows()) != n {
		return nil, 0, fmt.Errorf("%w: read %d entries, the footer says %d", ErrCorrupt, tbl.NumRows(), n)
	}
	for i := 0; i < int(tbl.NumCols()); i++ {
		col := tbl.Column(i)
		a, err := array.Concatenate(col.Data().Chunks(), memory.DefaultAllocator)
		if err != nil {
			releaseAll(cols)
			return nil, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		cols[col.Name()] = a
	}
	return cols, n, nil
}

func releaseAll(cols map[string]arrow.Array) {
	for _, a := range cols {
		a.Release()
	}
}

func (r *Reader) allRowGroups() []int {
	rgs := make([]int, len(r.starts)-1)
	for i := range rgs {
		rgs[i] = i
	}
	return rgs
}

// Projection names what Read reads of every entry besides its rows.
type Projection struct {
	// Episodes reads the episode ids.
	Episodes bool
	// Partitions reads the partition values.
	Partitions bool
	// Stats reads the statistics of these columns.
	Stats []string
	// Locations reads where each entry's rows are (data file, row group,
	// schema, first row id) and whether it has statistics: what a reader
	// of the rows needs, without the videos.
	Locations bool
}

// Batch is some columns of a manifest's entries, element i of each
// belonging to entry i (in manifest order).
type Batch struct {
	Len  int
	Rows []int64
	// Episodes, when read, are the episode ids.
	Episodes []string
	// Partitions, when read, are the values of each partition column.
	Partitions map[string][]string
	// Stats, when read, are the statistics of the columns asked for.
	Stats map[string]EntryStats
	// Locations, when read.
	Locations *Locations
}

// Locations are where the rows of a batch's entries are.
type Locations struct {
	DataFiles   []string
	RowGroups   []int
	SchemaIDs   []int
	FirstRowIDs []int64
	// HasStats is false for an entry without statistics (written before
	// they existed).
	HasStats []bool
}

// Light returns entry i of the batch without its videos: its id and
// partition values (when read), rows, location, and statistics (when
// read; an empty map for an entry that has statistics of other columns
// only). A reader of rows needs no more. Its strings are its own: a
// batch's share the buffers of a row group's columns, which an entry
// kept after the batch would keep whole.
func (b *Batch) Light(i int) Entry {
	e := Entry{Rows: b.Rows[i]}
	if b.Episodes != nil {
		e.Episode = strings.Clone(b.Episodes[i])
	}
	if len(b.Partitions) > 0 {
		e.Partition = make(map[string]string, len(b.Partitions))
		for name, vals := range b.Partitions {
			e.Partition[name] = strings.Clone(vals[i])
		}
	}
	if l := b.Locations; l != nil {
		e.DataFile, e.RowGroup, e.SchemaID, e.FirstRowID = strings.Clone(l.DataFiles[i]), l.RowGroups[i], l.SchemaIDs[i], l.FirstRowIDs[i]
		if l.HasStats[i] {
			e.Stats = map[string]ColumnStats{}
			for name, es := range b.Stats {
				if es.Known[i] {
					e.Stats[name] = es.Stats[i].JSON()
				}
			}
		}
	}
	return e
}

// EntryStats are one column's statistics of each entry of a batch.
type EntryStats struct {
	// Known is false for an entry without statistics of the column
	// (written before statistics existed, or before the column did).
	Known []bool
	Stats []Stats
}

// Read reads some columns of every entry, a row group at a time (so that
// the Arrow arrays decoded are a row group's, not the manifest's).
func (r *Reader) Read(ctx context.Context, proj Projection) (*Batch, error) {
	leaves := r.projectionLeaves(proj)
	var b *Batch
	for rg := range r.starts[:len(r.starts)-1] {
		if r.starts[rg+1] == r.starts[rg] {
			continue // an empty row group
		}
		part, err := r.readBatch(ctx, proj, leaves, rg)
		if err != nil {
			return nil, err
		}
		if b == nil {
			b = part
			b.grow(r.Len() - part.Len)
		} else {
			b.append(part)
		}
	}
	if b == nil {
		return BatchOf(Layout{}, nil, proj), nil
	}
	return b, nil
}

// grow makes room for n more entries.
func (b *Batch) grow(n int) {
	b.Rows = slices.Grow(b.Rows, n)
	if b.Episodes != nil {
		b.Episodes = slices.Grow(b.Episodes, n)
	}
	for name, vals := range b.Partitions {
		b.Partitions[name] = slices.Grow(vals, n)
	}
	if l := b.Locations; l != nil {
		l.DataFiles, l.RowGroups, l.SchemaIDs = slices.Grow(l.DataFiles, n), slices.Grow(l.RowGroups, n), slices.Grow(l.SchemaIDs, n)
		l.FirstRowIDs, l.HasStats = slices.Grow(l.FirstRowIDs, n), slices.Grow(l.HasStats, n)
	}
	for name, es := range b.Stats {
		b.Stats[name] = EntryStats{Known: slices.Grow(es.Known, n), Stats: slices.Grow(es.Stats, n)}
	}
}

// append appends the entries of o, read with the same projection.
func (b *Batch) append(o *Batch) {
	b.Len += o.Len
	b.Rows = append(b.Rows, o.Rows...)
	if b.Episodes != nil {
		b.Episodes = append(b.Episodes, o.Episodes...)
	}
	for name, vals := range b.Partitions {
		b.Partitions[name] = append(vals, o.Partitions[name]...)
	}
	if l, ol := b.Locations, o.Locations; l != nil {
		l.DataFiles, l.RowGroups, l.SchemaIDs = append(l.DataFiles, ol.DataFiles...), append(l.RowGroups, ol.RowGroups...), append(l.SchemaIDs, ol.SchemaIDs...)
		l.FirstRowIDs, l.HasStats = append(l.FirstRowIDs, ol.FirstRowIDs...), append(l.HasStats, ol.HasStats...)
	}
	for name, es := range b.Stats {
		b.Stats[name] = EntryStats{Known: append(es.Known, o.Stats[name].Known...), Stats: append(es.Stats, o.Stats[name].Stats...)}
	}
}

// projectionLeaves are the leaf columns Read reads for proj.
func (r *Reader) projectionLeaves(proj Projection) []int {
	prefixes := [][]string{{colRows}}
	if proj.Episodes {
		prefixes = append(prefixes, []string{colEpisode})
	}
	if proj.Partitions {
		prefixes = append(prefixes, []string{colPartition})
	}
	for _, c := range proj.Stats {
		prefixes = append(prefixes, []string{colStats, c})
	}
	if proj.Locations {
		prefixes = append(prefixes, []string{colDataFile}, []string{colRowGroup}, []string{colSchemaID}, []string{colFirstRowID})
		// One leaf of the statistics tells whether an entry has any.
		if leaves := r.leaves([]string{colStats}); len(leaves) > 0 {
			prefixes = append(prefixes, r.paths[leaves[0]])
		}
	}
	return r.leaves(prefixes...)
}

// readBatch reads the leaves of row group rg as a batch of proj.
func (r *Reader) readBatch(ctx context.Context, proj Projection, leaves []int, rg int) (b *Batch, err error) {
	cols, n, err := r.read(ctx, leaves, []int{rg})
	if err != nil {
		return nil, err
	}
	defer releaseAll(cols)
	defer parquetcheck.Recover(&err)
	b = &Batch{Len: n}
	rows, err := int64Column(cols[colRows], colRows, n)
	if err != nil {
		return nil, err
	}
	b.Rows = slices.Clone(rows.Int64Values())
	if proj.Episodes {
		ids, err := stringColumn(cols[colEpisode], colEpisode, n)
		if err != nil {
			return nil, err
		}
		b.Episodes = make([]string, n)
		for i := range b.Episodes {
			b.Episodes[i] = ids.Value(i)
		}
	}
	if proj.Partitions {
		b.Partitions = map[string][]string{}
		if p, ok := cols[colPartition].(*array.Struct); ok {
			st := p.DataType().(*arrow.StructType)
			for f := 0; f < st.NumFields(); f++ {
				name := st.Field(f).Name
				vals, err := stringColumn(p.Field(f), colPartition+"."+name, n)
				if err != nil {
					return nil, err
				}
				out := make([]string, n)
				for i := range out {
					out[i] = vals.Value(i)
				}
				b.Partitions[name] = out
			}
		}
	}
	if proj.Locations {
		if b.Locations, err = locationsOf(cols, n); err != nil {
			return nil, err
		}
	}
	if len(proj.Stats) > 0 {
		b.Stats = map[string]EntryStats{}
		// No statistics column at all when none of proj.Stats is one.
		var stats *array.Struct
		if a, ok := cols[colStats].(*array.Struct); ok {
			stats = a
		}
		for _, c := range proj.Stats {
			es := EntryStats{Known: make([]bool, n), Stats: make([]Stats, n)}
			var col arrow.Array
			if stats != nil {
				col = structChild(stats, c)
			}
			for i := 0; i < n && col != nil; i++ {
				if stats.IsNull(i) {
					continue
				}
				es.Stats[i], es.Known[i] = statsAt(col, i)
			}
			b.Stats[c] = es
		}
	}
	return b, nil
}

// locationsOf reads the locations of n entries.
func locationsOf(cols map[string]arrow.Array, n int) (*Locations, error) {
	ck := &checker{n: n}
	files := need[*array.String](ck, cols[colDataFile], colDataFile)
	firsts := need[*array.Int64](ck, cols[colFirstRowID], colFirstRowID)
	rgs := need[*array.Int32](ck, cols[colRowGroup], colRowGroup)
	schemas := need[*array.Int32](ck, cols[colSchemaID], colSchemaID)
	if ck.err != nil {
		return nil, ck.err
	}
	l := &Locations{DataFiles: make([]string, n), RowGroups: make([]int, n), SchemaIDs: make([]int, n),
		FirstRowIDs: slices.Clone(firsts.Int64Values()), HasStats: make([]bool, n)}
	stats, _ := cols[colStats].(*array.Struct)
	for i := range n {
		l.DataFiles[i] = files.Value(i)
		l.RowGroups[i], l.SchemaIDs[i] = int(rgs.Value(i)), int(schemas.Value(i))
		l.HasStats[i] = stats != nil && stats.IsValid(i)
	}
	return l, nil
}

// Entries reads whole entries: those at the given positions (ascending,
// in manifest order), or every entry when positions is nil.
func (r *Reader) Entries(ctx context.Context, positions []int) ([]Entry, error) {
	return r.collect(ctx, positions, true)
}

// EntriesWithoutStats is Entries without the entries' column statistics
// (their Stats are nil): it does not read or decode those columns, which
// take most of a manifest, for a reader that needs where episodes are,
// not what their rows hold.
func (r *Reader) EntriesWithoutStats(ctx context.Context, positions []int) ([]Entry, error) {
	return r.collect(ctx, positions, false)
}

func (r *Reader) collect(ctx context.Context, positions []int, withStats bool) (out []Entry, err error) {
	err = r.EntryBatches(ctx, positions, withStats, 0, func(batch []Entry) error {
		out = batch
		return nil
	})
	return out, err
}

// EntryBatches calls fn with the entries Entries (EntriesWithoutStats
// unless withStats) returns, at most size at a time (all at once for a
// size of 0), in manifest order. It reads their columns once and decodes
// each batch as fn asks for it, so that a reader keeping less of each
// entry than the entry never holds the whole manifest's entries decoded.
// Each batch is fn's own. An error fn returns stops it and is returned.
func (r *Reader) EntryBatches(ctx context.Context, positions []int, withStats bool, size int, fn func([]Entry) error) error {
	ec, rows, release, err := r.entryRows(ctx, positions, withStats)
	if err != nil {
		return err
	}
	defer release()
	if size <= 0 {
		size = len(rows)
	}
	for start := 0; start < len(rows); start += size {
		batch, err := ec.entries(rows[start:min(start+size, len(rows))])
		if err != nil {
			return err
		}
		if err := fn(batch); err != nil {
			return err
		}
	}
	return nil
}

// entryRows reads the columns of the entries at positions (all when nil),
// their statistics if withStats, and returns them with the rows of those
// entries in them; release releases them.
func (r *Reader) entryRows(ctx context.Context, positions []int, withStats bool) (ec *entryColumns, rows []int, release func(), err error) {
	leaves := r.leaves([]string{})
	if !withStats {
		var tops [][]string
		for _, p := range r.paths {
			if p[0] != colStats && !slices.ContainsFunc(tops, func(t []string) bool { return t[0] == p[0] }) {
				tops = append(tops, p[:1])
			}
		}
		leaves = r.leaves(tops...)
	}
	rowGroups := r.allRowGroups()
	if positions != nil {
		rowGroups = rowGroups[:0]
		for _, p := range positions {
			if p < 0 || p >= r.Len() {
				return nil, nil, nil, fmt.Errorf("manifest has no entry %d (it has %d)", p, r.Len())
			}
			rg := r.rowGroupOf(p)
			if len(rowGroups) == 0 || rowGroups[len(rowGroups)-1] < rg {
				rowGroups = append(rowGroups, rg)
			} else if rowGroups[len(rowGroups)-1] > rg {
				return nil, nil, nil, fmt.Errorf("entry positions %v are not ascending", positions)
			}
		}
	}
	cols, n, err := r.read(ctx, leaves, rowGroups)
	if err != nil {
		return nil, nil, nil, err
	}
	release = func() { releaseAll(cols) }
	defer func() {
		if err != nil {
			release()
		}
	}()
	defer parquetcheck.Recover(&err)
	if n == 0 {
		return &entryColumns{}, nil, release, nil
	}
	if ec, err = entryColumnsOf(cols, n); err != nil {
		return nil, nil, nil, err
	}
	if positions == nil {
		rows = make([]int, n)
		for i := range rows {
			rows[i] = i
		}
		return ec, rows, release, nil
	}
	local := map[int]int{} // the first row read of each row group
	k := 0
	for _, rg := range rowGroups {
		local[rg] = k
		k += r.starts[rg+1] - r.starts[rg]
	}
	rows = make([]int, len(positions))
	for i, p := range positions {
		rg := r.rowGroupOf(p)
		rows[i] = local[rg] + p - r.starts[rg]
	}
	return ec, rows, release, nil
}

// entries decodes the entries at the given rows.
func (ec *entryColumns) entries(rows []int) (out []Entry, err error) {
	defer parquetcheck.Recover(&err)
	out = make([]Entry, len(rows))
	for i, k := range rows {
		if out[i], err = ec.entry(k); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *Reader) rowGroupOf(p int) int {
	rg, found := slices.BinarySearch(r.starts, p)
	if !found {
		rg--
	}
	for r.starts[rg+1] == r.starts[rg] { // empty row groups
		rg++
	}
	return rg
}

// Objects returns the objects the entries reference: data files, packs
// and sizes objects, each once.
func (r *Reader) Objects(ctx context.Context) (out []string, err error) {
	var prefixes [][]string
	for _, p := range r.paths {
		if (len(p) == 1 && p[0] == colDataFile) || (len(p) == 3 && p[0] == colVideo && p[2] == colPack) ||
			(len(p) > 3 && p[0] == colVideo && p[2] == colSizes && p[len(p)-1] == colObject) {
			prefixes = append(prefixes, p)
		}
	}
	cols, n, err := r.read(ctx, r.leaves(prefixes...), r.allRowGroups())
	if err != nil {
		return nil, err
	}
	defer releaseAll(cols)
	defer parquetcheck.Recover(&err)
	seen := map[string]bool{}
	add := func(a *array.String) {
		for i := 0; i < a.Len(); i++ {
			if a.IsValid(i) && !seen[a.Value(i)] {
				seen[a.Value(i)] = true
				out = append(out, a.Value(i))
			}
		}
	}
	files, err := stringColumn(cols[colDataFile], colDataFile, n)
	if err != nil {
		return nil, err
	}
	add(files)
	if v, ok := cols[colVideo].(*array.Struct); ok {
		for f := 0; f < v.NumField(); f++ {
			ref, ok := v.Field(f).(*array.Struct)
			if !ok {
				return nil, fmt.Errorf("%w: video column %d is not a struct", ErrCorrupt, f)
			}
			if pack, ok := structChild(ref, colPack).(*array.String); ok {
				add(pack)
			}
			if sizes, ok := structChild(ref, colSizes).(*array.List); ok {
				if s, ok := sizes.ListValues().(*array.Struct); ok {
					if obj, ok := structChild(s, colObject).(*array.String); ok {
						add(obj)
					}
				}
			}
		}
	}
	return out, nil
}

// structChild returns the child of a struct array by name, or nil.
func structChild(a arrow.Array, name string) arrow.Array {
	s, ok := a.(*array.Struct)
	if !ok {
		return nil
	}
	if i, ok := s.DataType().(*arrow.StructType).FieldIdx(name); ok {
		return s.Field(i)
	}
	return nil
}

func columnError(name string, a arrow.Array, want string, n int) error {
	if a == nil {
		return fmt.Errorf("%w: no column %s", ErrCorrupt, name)
	}
	if a.Len() != n {
		return fmt.Errorf("%w: column %s has %d values for %d entries", ErrCorrupt, name, a.Len(), n)
	}
	return fmt.Errorf("%w: column %s is %s, not %s", ErrCorrupt, name, a.DataType(), want)
}

// checker checks the columns of n entries, keeping the first error: a
// column must be of its Arrow type, of n values, without nulls.
type checker struct {
	n   int
	err error
}

// need returns column a (named name, for messages) as a T, or records
// why it cannot be one.
func need[T interface {
	arrow.Array
	*array.Int64 | *array.Int32 | *array.String
}](ck *checker, a arrow.Array, name string) T {
	x, ok := a.(T)
	if ck.err == nil && (!ok || x.Len() != ck.n || x.NullN() > 0) {
		ck.err = columnError(name, a, arrowTypeName(x)+" without nulls", ck.n)
	}
	return x
}

// arrowTypeName names the Arrow type of a column of x's kind, as Arrow
// prints it (x may be nil: only its type matters).
func arrowTypeName(x arrow.Array) string {
	switch x.(type) {
	case *array.Int64:
		return arrow.PrimitiveTypes.Int64.String()
	case *array.Int32:
		return arrow.PrimitiveTypes.Int32.String()
	default:
		return arrow.BinaryTypes.String.String()
	}
}

func int64Column(a arrow.Array, name string, n int) (*array.Int64, error) {
	ck := &checker{n: n}
	return need[*array.Int64](ck, a, name), ck.err
}

func stringColumn(a arrow.Array, name string, n int) (*array.String, error) {
	ck := &checker{n: n}
	return need[*array.String](ck, a, name), ck.err
}

// owned returns element k of a, copied: Arrow's strings point into the
// column's buffer, which entries kept for long must not hold alive.
func owned(a *array.String, k int) string { return strings.Clone(a.Value(k)) }

// boundAt reads element k of a min or max column; ok is false for a null
// or a column of a type bounds are not stored as.
func boundAt(a arrow.Array, k int) (Bound, bool) {
	if a == nil || k >= a.Len() || a.IsNull(k) {
		return Bound{}, false
	}
	switch x := a.(type) {
	case *array.Boolean:
		return Bound{Kind: KindBool, Bool: x.Value(k)}, true
	case *array.Int64:
		return Bound{Kind: KindInt, Int: x.Value(k)}, true
	case *array.Timestamp:
		if x.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond {
			return Bound{}, false
		}
		return Bound{Kind: KindInt, Int: int64(x.Value(k))}, true
	case *array.Float64:
		return Bound{Kind: KindFloat, Float: x.Value(k)}, true
	case *array.String:
		return Bound{Kind: KindString, Str: strings.Clone(x.Value(k))}, true
	}
	return Bound{}, false
}

// statsAt reads element k of one column's statistics struct; ok is false
// when it is null or lacks a null count.
func statsAt(col arrow.Array, k int) (Stats, bool) {
	if col == nil || k >= col.Len() || col.IsNull(k) {
		return Stats{}, false
	}
	nulls, ok := structChild(col, colNulls).(*array.Int64)
	if !ok || nulls.IsNull(k) || nulls.Value(k) < 0 {
		return Stats{}, false
	}
	st := Stats{Nulls: nulls.Value(k)}
	lo, ok1 := boundAt(structChild(col, colMin), k)
	hi, ok2 := boundAt(structChild(col, colMax), k)
	if ok1 && ok2 && lo.Kind == hi.Kind {
		st.HasRange, st.Min, st.Max = true, lo, hi
	}
	return st, true
}

// entryColumns are a manifest's columns, checked once, from which entries
// are made.
type entryColumns struct {
	n                 int
	episode, dataFile *array.String
	rows, firstRowID  *array.Int64
	rowGroup, schema  *array.Int32
	time              *array.Timestamp
	partNames         []string
	parts             []*array.String
	videoNames        []string
	videos            []*videoColumns
	stats             *array.Struct
	statNames         []string
	statCols          []arrow.Array
}

type videoColumns struct {
	pack, codec, source                           *array.String
	offset, length, ixOffset, ixLength, ff, count *array.Int64
	width, height                                 *array.Int32
	sha                                           *array.FixedSizeBinary
	sizes                                         *array.List
	sizeIdentity, sizeObject                      *array.String
	sizeOffset, sizeLength                        *array.Int64
}

func entryColumnsOf(cols map[string]arrow.Array, n int) (*entryColumns, error) {
	ec := &entryColumns{n: n}
	ck := &checker{n: n}
	ec.episode = need[*array.String](ck, cols[colEpisode], colEpisode)
	ec.dataFile = need[*array.String](ck, cols[colDataFile], colDataFile)
	ec.rows = need[*array.Int64](ck, cols[colRows], colRows)
	ec.firstRowID = need[*array.Int64](ck, cols[colFirstRowID], colFirstRowID)
	ec.rowGroup = need[*array.Int32](ck, cols[colRowGroup], colRowGroup)
	ec.schema = need[*array.Int32](ck, cols[colSchemaID], colSchemaID)
	if ck.err != nil {
		return nil, ck.err
	}
	if t, ok := cols[colTime].(*array.Timestamp); ok && t.Len() == n && t.DataType().(*arrow.TimestampType).Unit == arrow.Nanosecond {
		ec.time = t
	} else if cols[colTime] != nil {
		return nil, columnError(colTime, cols[colTime], "timestamp[ns]", n)
	}
	var err error
	if p, ok := cols[colPartition].(*array.Struct); ok {
		if ec.partNames, ec.parts, err = structFields(p, colPartition, n, stringColumn); err != nil {
			return nil, err
		}
	}
	v, ok := cols[colVideo].(*array.Struct)
	if !ok || v.Len() != n {
		return nil, columnError(colVideo, cols[colVideo], "struct", n)
	}
	if ec.videoNames, ec.videos, err = structFields(v, colVideo, n, videoColumnsOf); err != nil {
		return nil, err
	}
	if s, ok := cols[colStats].(*array.Struct); ok && s.Len() == n {
		ec.stats = s
		st := s.DataType().(*arrow.StructType)
		for f := 0; f < st.NumFields(); f++ {
			ec.statNames, ec.statCols = append(ec.statNames, st.Field(f).Name), append(ec.statCols, s.Field(f))
		}
	}
	return ec, nil
}

// structFields checks each field of struct column s (named name) with
// check and returns the fields' names and what check made of them.
func structFields[T any](s *array.Struct, name string, n int, check func(a arrow.Array, name string, n int) (T, error)) ([]string, []T, error) {
	st := s.DataType().(*arrow.StructType)
	names, vals := make([]string, 0, st.NumFields()), make([]T, 0, st.NumFields())
	for f := 0; f < st.NumFields(); f++ {
		field := st.Field(f).Name
		v, err := check(s.Field(f), name+"."+field, n)
		if err != nil {
			return nil, nil, err
		}
		names, vals = append(names, field), append(vals, v)
	}
	return names, vals, nil
}

func videoColumnsOf(a arrow.Array, name string, n int) (*videoColumns, error) {
	if _, ok := a.(*array.Struct); !ok || a.Len() != n {
		return nil, columnError(name, a, "struct", n)
	}
	vc := &videoColumns{}
	ck := &checker{n: n}
	vc.pack = need[*array.String](ck, structChild(a, colPack), name+"."+colPack)
	vc.codec = need[*array.String](ck, structChild(a, colCodec), name+"."+colCodec)
	vc.source = need[*array.String](ck, structChild(a, colSourceName), name+"."+colSourceName)
	vc.offset = need[*array.Int64](ck, structChild(a, colOffset), name+"."+colOffset)
	vc.length = need[*array.Int64](ck, structChild(a, colLength), name+"."+colLength)
	vc.ixOffset = need[*array.Int64](ck, structChild(a, colIndexOffset), name+"."+colIndexOffset)
	vc.ixLength = need[*array.Int64](ck, structChild(a, colIndexLength), name+"."+colIndexLength)
	vc.ff = need[*array.Int64](ck, structChild(a, colFirstFrame), name+"."+colFirstFrame)
	vc.count = need[*array.Int64](ck, structChild(a, colFrames), name+"."+colFrames)
	vc.width = need[*array.Int32](ck, structChild(a, colWidth), name+"."+colWidth)
	vc.height = need[*array.Int32](ck, structChild(a, colHeight), name+"."+colHeight)
	if ck.err != nil {
		return nil, ck.err
	}
	sha, ok := structChild(a, colSHA256).(*array.FixedSizeBinary)
	if !ok || sha.Len() != n || sha.DataType().(*arrow.FixedSizeBinaryType).ByteWidth != 32 {
		return nil, columnError(name+"."+colSHA256, structChild(a, colSHA256), "fixed_size_binary[32]", n)
	}
	vc.sha = sha
	sizes, ok := structChild(a, colSizes).(*array.List)
	if !ok || sizes.Len() != n {
		return nil, columnError(name+"."+colSizes, structChild(a, colSizes), "list", n)
	}
	vc.sizes = sizes
	elems := sizes.ListValues()
	ek := &checker{n: elems.Len()}
	vc.sizeIdentity = need[*array.String](ek, structChild(elems, colIdentity), name+".sizes.identity")
	vc.sizeObject = need[*array.String](ek, structChild(elems, colObject), name+".sizes.object")
	vc.sizeOffset = need[*array.Int64](ek, structChild(elems, colOffset), name+".sizes.offset")
	vc.sizeLength = need[*array.Int64](ek, structChild(elems, colLength), name+".sizes.length")
	if ek.err != nil {
		return nil, ek.err
	}
	return vc, nil
}

// entry makes entry k.
func (ec *entryColumns) entry(k int) (Entry, error) {
	e := Entry{
		Episode:    owned(ec.episode, k),
		Rows:       ec.rows.Value(k),
		FirstRowID: ec.firstRowID.Value(k),
		DataFile:   owned(ec.dataFile, k),
		RowGroup:   int(ec.rowGroup.Value(k)),
		SchemaID:   int(ec.schema.Value(k)),
		Videos:     make(map[string]VideoRef, len(ec.videos)),
	}
	if ec.time != nil && ec.time.IsValid(k) {
		e.Time = time.Unix(0, int64(ec.time.Value(k))).UTC()
	}
	if len(ec.parts) > 0 {
		e.Partition = make(map[string]string, len(ec.parts))
		for i, p := range ec.parts {
			e.Partition[ec.partNames[i]] = owned(p, k)
		}
	}
	for i, vc := range ec.videos {
		ref, err := vc.ref(k)
		if err != nil {
			return Entry{}, fmt.Errorf("episode %q video %q: %w", e.Episode, ec.videoNames[i], err)
		}
		e.Videos[ec.videoNames[i]] = ref
	}
	if ec.stats != nil && ec.stats.IsValid(k) {
		e.Stats = make(map[string]ColumnStats, len(ec.statCols))
		for i, col := range ec.statCols {
			if st, ok := statsAt(col, k); ok {
				e.Stats[ec.statNames[i]] = st.JSON()
			}
		}
	}
	return e, nil
}

func (vc *videoColumns) ref(k int) (VideoRef, error) {
	ref := VideoRef{
		Pack: owned(vc.pack, k), Offset: vc.offset.Value(k), Length: vc.length.Value(k),
		IndexOffset: vc.ixOffset.Value(k), IndexLength: vc.ixLength.Value(k),
		FirstFrame: vc.ff.Value(k), Frames: vc.count.Value(k), Codec: owned(vc.codec, k),
		Width: int(vc.width.Value(k)), Height: int(vc.height.Value(k)), SourceName: owned(vc.source, k),
	}
	if vc.sha.IsValid(k) {
		ref.SHA256 = hex.EncodeToString(vc.sha.Value(k))
	}
	if vc.sizes.IsValid(k) {
		start, end := vc.sizes.ValueOffsets(k)
		if start < 0 || end < start || end > int64(vc.sizeObject.Len()) {
			return VideoRef{}, fmt.Errorf("%w: sizes list %d..%d out of range", ErrCorrupt, start, end)
		}
		for j := start; j < end; j++ {
			ref.Sizes = append(ref.Sizes, SizesRef{
				Identity: owned(vc.sizeIdentity, int(j)), Object: owned(vc.sizeObject, int(j)),
				Offset: vc.sizeOffset.Value(int(j)), Length: vc.sizeLength.Value(int(j)),
			})
		}
	}
	return ref, nil
}

// DecodeList reads a manifest list.
func DecodeList(data []byte) (sums []Summary, err error) {
	r, err := NewReader(data)
	if err != nil {
		return nil, err
	}
	cols, n, err := r.read(context.Background(), r.leaves([]string{}), r.allRowGroups())
	if err != nil {
		return nil, err
	}
	defer releaseAll(cols)
	defer parquetcheck.Recover(&err)
	if n == 0 {
		return nil, nil
	}
	keys, err := stringColumn(cols[colManifest], colManifest, n)
	if err != nil {
		return nil, err
	}
	var ints [3]*array.Int64
	for i, name := range []string{colBytes, colEpisodes, colRows} {
		if ints[i], err = int64Column(cols[name], name, n); err != nil {
			return nil, err
		}
	}
	var ids [2]*array.String
	for i, name := range []string{colEpisodeMin, colEpisodeMax} {
		if ids[i], err = stringColumn(cols[name], name, n); err != nil {
			return nil, err
		}
	}
	parts, _ := cols[colPartition].(*array.Struct)
	stats, _ := cols[colStats].(*array.Struct)
	sums = make([]Summary, n)
	for k := range sums {
		s := Summary{
			Manifest: owned(keys, k), Bytes: ints[0].Value(k), Episodes: ints[1].Value(k), Rows: ints[2].Value(k),
			EpisodeMin: owned(ids[0], k), EpisodeMax: owned(ids[1], k),
		}
		if s.Bytes < 0 || s.Episodes < 0 || s.Rows < 0 {
			return nil, fmt.Errorf("%w: manifest list row %d counts %d bytes, %d episodes, %d rows", ErrCorrupt, k, s.Bytes, s.Episodes, s.Rows)
		}
		if parts != nil {
			s.Partitions = map[string]Range{}
			pt := parts.DataType().(*arrow.StructType)
			for f := 0; f < pt.NumFields(); f++ {
				lo, ok1 := boundAt(structChild(parts.Field(f), colMin), k)
				hi, ok2 := boundAt(structChild(parts.Field(f), colMax), k)
				if !ok1 || !ok2 || lo.Kind != hi.Kind {
					return nil, fmt.Errorf("%w: manifest list row %d: no range of partition column %q", ErrCorrupt, k, pt.Field(f).Name)
				}
				s.Partitions[pt.Field(f).Name] = Range{lo, hi}
			}
		}
		if stats != nil {
			st := stats.DataType().(*arrow.StructType)
			for f := 0; f < st.NumFields(); f++ {
				if v, ok := statsAt(stats.Field(f), k); ok {
					if s.Stats == nil {
						s.Stats = map[string]Stats{}
					}
					s.Stats[st.Field(f).Name] = v
				}
			}
		}
		sums[k] = s
	}
	return sums, nil
}
