package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"golang.org/x/sync/errgroup"

	"github.com/framefs/framefs/query/filter"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/manifest"
	"github.com/framefs/framefs/table/storage"
)

// FilterSchema returns the columns a filter on snapshot rows may name: the
// episode column, the user columns (partition columns included) and the
// frame's position in its episode (table.FrameColumn), as Arrow fields.
func FilterSchema(s *table.Schema) (*arrow.Schema, error) {
	fields := []arrow.Field{{Name: s.EpisodeColumn, Type: arrow.BinaryTypes.String}}
	if s.HasFrameColumn() {
		fields = append(fields, arrow.Field{Name: table.FrameColumn, Type: arrow.PrimitiveTypes.Int64})
	}
	for _, c := range s.Columns {
		dt, err := c.Type.Arrow()
		if err != nil {
			return nil, err
		}
		fields = append(fields, arrow.Field{Name: c.Name, Type: dt, Nullable: c.Nullable})
	}
	return arrow.NewSchema(fields, nil), nil
}

// CompileFilter checks filter text against the schema of a snapshot.
// Errors wrap table.ErrInvalidInput and filter.ErrInvalid.
func CompileFilter(ctx context.Context, t *table.Table, snap *table.Snapshot, text string) (*filter.Filter, error) {
	s, err := t.Schema(ctx, snap.SchemaID)
	if err != nil {
		return nil, err
	}
	return compileFilter(s, text)
}

func compileFilter(s *table.Schema, text string) (*filter.Filter, error) {
	fs, err := FilterSchema(s)
	if err != nil {
		return nil, err
	}
	f, err := filter.Compile(text, fs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", table.ErrInvalidInput, err)
	}
	return f, nil
}

// SelectOptions tune Select.
type SelectOptions struct {
	// Episode, when set, restricts the selection to that episode.
	Episode string
	// GroupBy splits each episode's matching rows by the values of these
	// columns (see SelectedPart.Group).
	GroupBy []string
	// CountOnly asks for counts: matching rows are counted, and reading is
	// skipped wherever statistics decide.
	CountOnly bool
}

// Selection is the result of Select.
type Selection struct {
	// Episodes with at least one matching row, in snapshot order (by
	// partition values and episode id). Empty with CountOnly.
	Episodes []SelectedEpisode
	// Matched counts the episodes with at least one matching row.
	Matched int
	// Frames counts the matching rows.
	Frames int64
	Stats  SelectStats
}

// SelectedEpisode is an episode with matching rows.
type SelectedEpisode struct {
	Entry table.EpisodeEntry
	// Frames counts its matching rows.
	Frames int64
	// Parts are the matching rows, by group (one part without GroupBy).
	// Empty with CountOnly.
	Parts []SelectedPart
}

// SelectedPart is a group of an episode's matching rows.
type SelectedPart struct {
	// Group names the part's GroupBy values as folder names,
	// "COL=VALUE/COL2=VALUE2" (empty without GroupBy).
	Group string
	// Ordinals are the rows (0-based positions in the episode), ascending;
	// nil means every row of the episode.
	Ordinals []int64
}

// SelectStats say how much of the snapshot Select had to read.
type SelectStats struct {
	// Episodes in the snapshot (or the one asked for).
	Episodes int `json:"episodes"`
	// Manifests counts the snapshot's manifests, and ManifestsRead those
	// whose entries were read: the others were decided by their
	// summaries in the manifest list.
	Manifests     int `json:"manifests"`
	ManifestsRead int `json:"manifests_read"`
	// SkippedByManifest episodes were decided by partition values and
	// manifest statistics (of the episode, or of its whole manifest)
	// without reading rows, matching none of them.
	SkippedByManifest int `json:"skipped_by_manifest"`
	// MatchedByManifest episodes match in every row, by the same means.
	MatchedByManifest int `json:"matched_by_manifest"`
	// SkippedByRowGroup and MatchedByRowGroup were decided by Parquet
	// row-group statistics (episodes written before manifest statistics).
	SkippedByRowGroup int `json:"skipped_by_row_group"`
	MatchedByRowGroup int `json:"matched_by_row_group"`
	// Scanned episodes had their rows read and evaluated.
	Scanned int `json:"scanned"`
	// RowsScanned counts the rows evaluated.
	RowsScanned int64 `json:"rows_scanned"`
	// DataFiles counts the Parquet files opened.
	DataFiles int `json:"data_files"`
}

// Select finds the rows of a snapshot that match f: first by the
// summaries of the snapshot's manifests (a manifest none of whose rows
// can match is not read; with CountOnly, one all of whose rows match is
// counted unread), then by partition values and per-episode column
// statistics in the manifests it reads (only the columns f needs), then
// by Parquet row-group statistics, and only then by reading the filter's
// columns of the remaining row groups and evaluating f over them. Whole
// entries are decoded only for the episodes it returns or reads.
func Select(ctx context.Context, t *table.Table, snap *table.Snapshot, f *filter.Filter, opts SelectOptions) (*Selection, error) {
	schema, err := t.Schema(ctx, snap.SchemaID)
	if err != nil {
		return nil, err
	}
	for _, g := range opts.GroupBy {
		if err := checkGroupColumn(schema, g); err != nil {
			return nil, err
		}
	}
	p := &pruning{t: t, snap: snap, schema: schema, f: f, opts: opts, sel: &Selection{},
		rowsNeedGroups: !groupsConstant(schema, opts.GroupBy)}
	if opts.Episode != "" {
		e, err := t.Episode(ctx, snap, opts.Episode)
		if err != nil {
			return nil, err
		}
		p.sel.Stats.Episodes = 1
		p.decide(&e, f.Prune(manifestStats(schema, &e, e.Stats != nil)))
	} else if err := p.manifests(ctx); err != nil {
		return nil, err
	}
	sel := p.sel
	if len(p.work) > 0 {
		scanned, err := scan(ctx, t, schema, f, p.work, opts)
		if err != nil {
			return nil, err
		}
		for _, r := range scanned.results {
			p.results[r.index] = r.episode
		}
		sel.Stats.SkippedByRowGroup += scanned.skippedByRowGroup
		sel.Stats.MatchedByRowGroup += scanned.matchedByRowGroup
		sel.Stats.Scanned += scanned.scanned
		sel.Stats.RowsScanned += scanned.rows
		sel.Stats.DataFiles += scanned.files
	}
	for _, r := range p.results {
		if r != nil && r.Frames > 0 {
			sel.Matched++
			sel.Frames += r.Frames
			if !opts.CountOnly {
				sel.Episodes = append(sel.Episodes, *r)
			}
		}
	}
	// Snapshot order: manifests were read in parallel.
	layout := schema.ManifestLayout()
	keys := make([]string, len(sel.Episodes))
	order := make([]int, len(sel.Episodes))
	for i := range sel.Episodes {
		keys[i], order[i] = layout.SortKey(&sel.Episodes[i].Entry), i
	}
	sort.Slice(order, func(i, j int) bool { return keys[order[i]] < keys[order[j]] })
	sorted := make([]SelectedEpisode, len(order))
	for i, k := range order {
		sorted[i] = sel.Episodes[k]
	}
	sel.Episodes = sorted
	return sel, nil
}

// pruning is the state of one Select: what statistics decided, and the
// episodes left to read.
type pruning struct {
	t              *table.Table
	snap           *table.Snapshot
	schema         *table.Schema
	f              *filter.Filter
	opts           SelectOptions
	rowsNeedGroups bool

	mu      sync.Mutex // guards the fields below
	sel     *Selection // its counts and Stats
	results []*SelectedEpisode
	work    []scanItem // index: in results
}

// decide records what statistics decided of an episode: nothing to read,
// or its rows to scan.
func (p *pruning) decide(e *table.EpisodeEntry, d filter.Decision) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch d {
	case filter.None:
		p.sel.Stats.SkippedByManifest++
		return
	case filter.All:
		p.sel.Stats.MatchedByManifest++
		if !p.rowsNeedGroups || p.opts.CountOnly {
			p.results = append(p.results, wholeEpisode(p.schema, e, p.opts))
			return
		}
	}
	p.results = append(p.results, nil)
	p.work = append(p.work, scanItem{index: len(p.results) - 1, entry: e, decided: d})
}

// manifests prunes the snapshot's manifests, a few at a time.
func (p *pruning) manifests(ctx context.Context) error {
	infos, err := p.t.Manifests(ctx, p.snap)
	if err != nil {
		return err
	}
	p.sel.Stats.Manifests = len(infos)
	proj := p.projection()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, info := range infos {
		if s := info.Summary; s != nil {
			d := p.f.Prune(summaryStats(p.schema, s))
			if d == filter.None || (d == filter.All && p.opts.CountOnly) {
				// The manifests read meanwhile count under p.mu too.
				p.mu.Lock()
				p.sel.Stats.Episodes += int(s.Episodes)
				if d == filter.None {
					p.sel.Stats.SkippedByManifest += int(s.Episodes)
				} else {
					p.sel.Stats.MatchedByManifest += int(s.Episodes)
					p.sel.Matched += int(s.Episodes)
					p.sel.Frames += s.Rows
				}
				p.mu.Unlock()
				continue
			}
		}
		g.Go(func() error { return p.manifest(gctx, info.Key, proj) })
	}
	return g.Wait()
}

// projection is what the filter needs of each entry: the columns it
// names, and for a count where rows are (a count reads rows, never
// videos, and returns no entry).
func (p *pruning) projection() manifest.Projection {
	proj := manifest.Projection{Locations: p.opts.CountOnly, Episodes: p.opts.CountOnly}
	for _, c := range p.f.Columns() {
		switch {
		case c == p.schema.EpisodeColumn:
			proj.Episodes = true
		case p.schema.IsPartition(c):
			proj.Partitions = true
		case c == table.FrameColumn && p.schema.HasFrameColumn():
			// Not stored: an entry's row count bounds it.
		default:
			proj.Stats = append(proj.Stats, c)
		}
	}
	return proj
}

// manifest prunes the episodes of one manifest by their statistics, and
// reads whole entries of those that match or need their rows read.
func (p *pruning) manifest(ctx context.Context, key string, proj manifest.Projection) error {
	b, err := p.t.ReadManifest(ctx, p.snap, key, proj)
	if err != nil {
		return err
	}
	var positions []int
	var decided []filter.Decision
	var counted, countedFrames int64
	skipped := 0
	for i := 0; i < b.Len; i++ {
		switch d := p.f.Prune(batchStats(p.schema, b, i)); {
		case d == filter.None:
			skipped++
		case d == filter.All && p.opts.CountOnly:
			counted++
			countedFrames += b.Rows[i]
		default:
			positions = append(positions, i)
			decided = append(decided, d)
		}
	}
	p.mu.Lock()
	p.sel.Stats.ManifestsRead++
	p.sel.Stats.Episodes += b.Len
	p.sel.Stats.SkippedByManifest += skipped
	p.sel.Stats.MatchedByManifest += int(counted)
	p.sel.Matched += int(counted)
	p.sel.Frames += countedFrames
	p.mu.Unlock()
	if len(positions) == 0 {
		return nil
	}
	var entries []table.EpisodeEntry
	if b.Locations != nil {
		entries = make([]table.EpisodeEntry, len(positions))
		for k, i := range positions {
			entries[k] = b.Light(i)
		}
	} else if entries, err = p.t.ManifestEntries(ctx, p.snap, key, positions); err != nil {
		return err
	}
	for i := range entries {
		p.decide(&entries[i], decided[i])
	}
	return nil
}

// Count returns the number of rows of a snapshot that match f, reading
// rows only where statistics cannot decide.
func Count(ctx context.Context, t *table.Table, snap *table.Snapshot, f *filter.Filter) (int64, SelectStats, error) {
	sel, err := Select(ctx, t, snap, f, SelectOptions{CountOnly: true})
	if err != nil {
		return 0, SelectStats{}, err
	}
	return sel.Frames, sel.Stats, nil
}

func checkGroupColumn(s *table.Schema, name string) error {
	if name == s.EpisodeColumn || name == table.FrameColumn && s.HasFrameColumn() {
		return nil
	}
	c, ok := s.Column(name)
	if !ok {
		return fmt.Errorf("%w: group-by column %q is not a column of the table", table.ErrInvalidInput, name)
	}
	if _, isList := c.Type.Elem(); isList {
		return fmt.Errorf("%w: group-by column %q is a list; group by a column of single values", table.ErrInvalidInput, name)
	}
	return nil
}

// groupsConstant reports whether every group-by column has one value per
// episode (partition columns and the episode id), so that groups follow
// from the manifest.
func groupsConstant(s *table.Schema, groupBy []string) bool {
	for _, g := range groupBy {
		if g != s.EpisodeColumn && !s.IsPartition(g) {
			return false
		}
	}
	return true
}

// wholeEpisode selects every row of an episode whose groups are constant.
func wholeEpisode(s *table.Schema, e *table.EpisodeEntry, opts SelectOptions) *SelectedEpisode {
	out := &SelectedEpisode{Entry: *e, Frames: e.Rows}
	if !opts.CountOnly {
		out.Parts = []SelectedPart{{Group: constantGroup(s, e, opts.GroupBy)}}
	}
	return out
}

func constantGroup(s *table.Schema, e *table.EpisodeEntry, groupBy []string) string {
	var vals []any
	for _, g := range groupBy {
		if g == s.EpisodeColumn {
			vals = append(vals, e.Episode)
		} else {
			vals = append(vals, e.Partition[g])
		}
	}
	return GroupFolder(groupBy, vals)
}

type scanItem struct {
	index   int
	entry   *table.EpisodeEntry
	decided filter.Decision
}

type scanResult struct {
	index   int
	episode *SelectedEpisode
}

type scanOutcome struct {
	results                              []scanResult
	skippedByRowGroup, matchedByRowGroup int
	scanned, files                       int
	rows                                 int64
}

// scanConcurrency is how many data files are read at once: enough to
// hide object-store latency, bounded so memory stays small.
func scanConcurrency() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// scan reads the row groups of the items, grouped by data file, and
// evaluates the filter over them.
func scan(ctx context.Context, t *table.Table, s *table.Schema, f *filter.Filter, items []scanItem, opts SelectOptions) (*scanOutcome, error) {
	byFile := map[string][]scanItem{}
	var files []string
	for _, it := range items {
		if _, ok := byFile[it.entry.DataFile]; !ok {
			files = append(files, it.entry.DataFile)
		}
		byFile[it.entry.DataFile] = append(byFile[it.entry.DataFile], it)
	}
	sort.Strings(files)
	var mu sync.Mutex
	out := &scanOutcome{files: len(files)}
	var rows atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(scanConcurrency())
	for _, key := range files {
		its := byFile[key]
		g.Go(func() error {
			res, err := scanFile(gctx, t, s, f, key, its, opts, &rows)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			out.results = append(out.results, res.results...)
			out.skippedByRowGroup += res.skippedByRowGroup
			out.matchedByRowGroup += res.matchedByRowGroup
			out.scanned += res.scanned
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out.rows = rows.Load()
	return out, nil
}

// maxRowGroupsPerRead bounds how many row groups are decoded together,
// which bounds memory on files of thousands of episodes.
const maxRowGroupsPerRead = 64

func scanFile(ctx context.Context, t *table.Table, s *table.Schema, f *filter.Filter, key string, items []scanItem,
	opts SelectOptions, rows *atomic.Int64) (*scanOutcome, error) {
	obj, err := t.Store().Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	defer obj.Close()
	if ix := t.ChunkIndex(ctx, key); ix != nil {
		out, ok, err := scanIndexed(ctx, t, obj, ix, s, f, key, items, opts)
		if err != nil || ok {
			if out != nil {
				for _, it := range items {
					rows.Add(it.entry.Rows)
				}
			}
			return out, err
		}
	}
	pf, err := file.NewParquetReader(io.NewSectionReader(obj, 0, obj.Size()))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", table.ErrCorrupt, key, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", table.ErrCorrupt, key, err)
	}
	leaves := leafColumns(pf.MetaData())
	out := &scanOutcome{}
	// Row-group statistics decide the episodes the manifest had none for.
	var read []scanItem
	for _, it := range items {
		e := it.entry
		if e.RowGroup < 0 || e.RowGroup >= pf.NumRowGroups() {
			return nil, fmt.Errorf("%w: %s has no row group %d (episode %q)", table.ErrCorrupt, key, e.RowGroup, e.Episode)
		}
		if n := pf.MetaData().RowGroup(e.RowGroup).NumRows(); n != e.Rows {
			return nil, fmt.Errorf("%w: %s row group %d has %d rows, the manifest says %d", table.ErrCorrupt, key, e.RowGroup, n, e.Rows)
		}
		if it.decided == filter.Some && e.Stats == nil {
			switch f.Prune(rowGroupStats(s, e, pf.MetaData(), leaves)) {
			case filter.None:
				out.skippedByRowGroup++
				continue
			case filter.All:
				out.matchedByRowGroup++
				if groupsConstant(s, opts.GroupBy) || opts.CountOnly {
					out.results = append(out.results, scanResult{it.index, wholeEpisode(s, e, opts)})
					continue
				}
				it.decided = filter.All
			}
		}
		read = append(read, it)
	}
	sort.Slice(read, func(i, j int) bool { return read[i].entry.RowGroup < read[j].entry.RowGroup })
	// The columns to read: the filter's (unless every row is known to
	// match) and the group-by columns that vary within an episode.
	need := neededColumns(s, f, opts)
	var cols []int
	for name := range need {
		cols = append(cols, leaves[name]...)
	}
	sort.Ints(cols)
	for start := 0; start < len(read); start += maxRowGroupsPerRead {
		chunk := read[start:min(start+maxRowGroupsPerRead, len(read))]
		res, err := evalRowGroups(ctx, fr, s, f, key, chunk, cols, opts)
		if err != nil {
			return nil, err
		}
		for _, r := range chunk {
			rows.Add(r.entry.Rows)
		}
		out.results = append(out.results, res...)
		out.scanned += len(chunk)
	}
	return out, nil
}

// leafColumns maps each top-level column of a Parquet file to the indexes
// of its leaf columns.
func leafColumns(md *metadata.FileMetaData) map[string][]int {
	out := map[string][]int{}
	for i := 0; i < md.Schema.NumColumns(); i++ {
		path := md.Schema.Column(i).ColumnPath()
		if len(path) > 0 {
			out[path[0]] = append(out[path[0]], i)
		}
	}
	return out
}

// rowGroupStats returns the statistics Parquet keeps for an episode's row
// group, with the episode's constants. Float bounds are not used: writers
// leave NaN out of them.
func rowGroupStats(s *table.Schema, e *table.EpisodeEntry, md *metadata.FileMetaData, leaves map[string][]int) filter.StatsFunc {
	consts := episodeConstants(s, e)
	rg := md.RowGroup(e.RowGroup)
	return func(name string) (filter.ColumnStats, bool) {
		if v, ok := consts[name]; ok {
			return filter.Exactly(v, e.Rows), true
		}
		if st, ok := frameStats(s, name, e.Rows, e.Rows); ok {
			return st, true
		}
		c, ok := s.Column(name)
		idx := leaves[name]
		if !ok || len(idx) != 1 {
			return filter.ColumnStats{}, false
		}
		cc, err := rg.ColumnChunk(idx[0])
		if err != nil {
			return filter.ColumnStats{}, false
		}
		if set, err := cc.StatsSet(); err != nil || !set {
			return filter.ColumnStats{}, false
		}
		ts, err := cc.Statistics()
		if err != nil || ts == nil || !ts.HasNullCount() {
			return filter.ColumnStats{}, false
		}
		out := filter.ColumnStats{Nulls: ts.NullCount(), Rows: e.Rows}
		if !ts.HasMinMax() {
			return out, true
		}
		switch st := ts.(type) {
		case *metadata.BooleanStatistics:
			out.Min, out.Max, out.HasRange = filter.Bool(st.Min()), filter.Bool(st.Max()), true
		case *metadata.Int32Statistics:
			out.Min, out.Max, out.HasRange = filter.Int(int64(st.Min())), filter.Int(int64(st.Max())), true
		case *metadata.Int64Statistics:
			if c.Type == "timestamp" {
				out.Min, out.Max = filter.TimestampMicros(st.Min()), filter.TimestampMicros(st.Max())
			} else {
				out.Min, out.Max = filter.Int(st.Min()), filter.Int(st.Max())
			}
			out.HasRange = true
		case *metadata.ByteArrayStatistics:
			// framefs writes string bounds whole or not at all (values
			// longer than the writer's limit leave them out).
			if c.Type == "string" {
				out.Min, out.Max, out.HasRange = filter.String(string(st.Min())), filter.String(string(st.Max())), true
			}
		}
		return out, true
	}
}

// evalRowGroups reads the given columns of the items' row groups (in
// row-group order) and evaluates the filter over them.
func evalRowGroups(ctx context.Context, fr *pqarrow.FileReader, s *table.Schema, f *filter.Filter, key string,
	items []scanItem, cols []int, opts SelectOptions) ([]scanResult, error) {
	rgs := make([]int, len(items))
	var total int64
	for i, it := range items {
		rgs[i] = it.entry.RowGroup
		total += it.entry.Rows
	}
	results := make([]scanResult, len(items))
	selected := make([]*SelectedEpisode, len(items))
	for i, it := range items {
		selected[i] = &SelectedEpisode{Entry: *it.entry}
		results[i] = scanResult{it.index, selected[i]}
	}
	if len(cols) == 0 {
		// None of the filter's columns is in this (older) file: they read
		// as NULL in every row (but the frame column).
		for i, it := range items {
			n := int(it.entry.Rows)
			columns := withFrame(s, func(string) arrow.Array { return nil }, ordinalsFrom(0, n))
			match, err := f.Eval(n, columns)
			if err != nil {
				return nil, episodeError(key, err, it.entry, nil)
			}
			groups := varyingGroups(s, opts, columns)
			for k, m := range match {
				if m || it.decided == filter.All {
					selected[i].addMatch(s, it.entry, opts, groups, k, int64(k))
				}
			}
			selected[i].normalize()
		}
		return results, nil
	}
	tbl, err := fr.ReadRowGroups(ctx, cols, rgs)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s: %v", table.ErrCorrupt, key, err)
	}
	defer tbl.Release()
	if tbl.NumRows() != total {
		return nil, fmt.Errorf("%w: %s: read %d rows, the manifest says %d", table.ErrCorrupt, key, tbl.NumRows(), total)
	}
	// Walk the table's chunks alongside the row groups: a chunk may span
	// row groups and a row group several chunks.
	reader := array.NewTableReader(tbl, 64<<10)
	defer reader.Release()
	item, offset := 0, int64(0)
	var match []bool
	var rowItems []int
	var ordinals []int64
	for reader.Next() {
		rec := reader.RecordBatch()
		n := int(rec.NumRows())
		// The episode (item) and position (ordinal) of each row.
		rowItems, ordinals = rowItems[:0], ordinals[:0]
		for i := 0; i < n; i++ {
			for offset == items[item].entry.Rows {
				item++
				offset = 0
			}
			rowItems, ordinals = append(rowItems, item), append(ordinals, offset)
			offset++
		}
		columns := withFrame(s, func(name string) arrow.Array {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				return nil
			}
			return rec.Column(idx[0])
		}, ordinals)
		if cap(match) < n {
			match = make([]bool, n)
		}
		match = match[:n]
		if _, err := f.EvalInto(n, columns, match); err != nil {
			var ee *filter.EvalError
			if errors.As(err, &ee) && ee.Row < n {
				return nil, episodeError(key, err, items[rowItems[ee.Row]].entry, &ordinals[ee.Row])
			}
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		groups := varyingGroups(s, opts, columns)
		for i := 0; i < n; i++ {
			it := items[rowItems[i]]
			if match[i] || it.decided == filter.All {
				selected[rowItems[i]].addMatch(s, it.entry, opts, groups, i, ordinals[i])
			}
		}
	}
	if err := reader.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", table.ErrCorrupt, key, err)
	}
	for _, sel := range selected {
		sel.normalize()
	}
	return results, nil
}

// neededColumns returns the columns a scan reads: the filter's and the
// group-by columns that vary within an episode.
func neededColumns(s *table.Schema, f *filter.Filter, opts SelectOptions) map[string]bool {
	need := map[string]bool{}
	for _, c := range f.Columns() {
		need[c] = true
	}
	if !opts.CountOnly {
		for _, g := range opts.GroupBy {
			if g != s.EpisodeColumn && !s.IsPartition(g) {
				need[g] = true
			}
		}
	}
	if s.HasFrameColumn() {
		delete(need, table.FrameColumn) // not stored: withFrame supplies it
	}
	return need
}

// withFrame adds the frame column to the columns of a batch whose rows are
// at the given positions of their episodes.
func withFrame(s *table.Schema, columns func(string) arrow.Array, ordinals []int64) func(string) arrow.Array {
	if !s.HasFrameColumn() {
		return columns
	}
	var frames arrow.Array
	return func(name string) arrow.Array {
		if name != table.FrameColumn {
			return columns(name)
		}
		if frames == nil {
			b := array.NewInt64Builder(memory.DefaultAllocator)
			b.AppendValues(ordinals, nil)
			frames = b.NewArray()
			b.Release()
		}
		return frames
	}
}

// ordinalsFrom returns start, start+1, ... (n values).
func ordinalsFrom(start int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(i)
	}
	return out
}

// episodeError names the episode and frame a filter failed on (ordinal
// nil: the frame is the row of the error within the episode).
func episodeError(key string, err error, e *table.EpisodeEntry, ordinal *int64) error {
	var ee *filter.EvalError
	if !errors.As(err, &ee) {
		return fmt.Errorf("%s: %w", key, err)
	}
	frame := int64(ee.Row)
	if ordinal != nil {
		frame = *ordinal
	}
	return fmt.Errorf("%w: episode %q, frame %d: %w", table.ErrInvalidInput, e.Episode, frame, err)
}

// groupArrays are the group-by columns of a batch, when some vary within
// episodes (nil otherwise: groups follow from the manifest).
type groupArrays struct {
	names []string
	cols  []arrow.Array
}

func varyingGroups(s *table.Schema, opts SelectOptions, columns func(string) arrow.Array) *groupArrays {
	if opts.CountOnly || groupsConstant(s, opts.GroupBy) {
		return nil
	}
	g := &groupArrays{}
	for _, name := range opts.GroupBy {
		g.names = append(g.names, name)
		g.cols = append(g.cols, columns(name))
	}
	return g
}

// addMatch records a matching row: row ordinal of episode e, row i of the
// batch groups come from.
func (sel *SelectedEpisode) addMatch(s *table.Schema, e *table.EpisodeEntry, opts SelectOptions, groups *groupArrays, i int, ordinal int64) {
	sel.Frames++
	if opts.CountOnly {
		return
	}
	group := constantGroup(s, e, opts.GroupBy)
	if groups != nil {
		group = rowGroup(s, e, groups.names, groups.cols, i)
	}
	sel.addRow(group, ordinal)
}

// rowGroup names the group of row i of a batch.
func rowGroup(s *table.Schema, e *table.EpisodeEntry, names []string, cols []arrow.Array, i int) string {
	vals := make([]any, len(names))
	for k, g := range names {
		switch {
		case g == s.EpisodeColumn:
			vals[k] = e.Episode
		case s.IsPartition(g):
			vals[k] = e.Partition[g]
		case cols[k] == nil:
			vals[k] = nil
		default:
			vals[k] = table.RowValue(cols[k], i)
		}
	}
	return GroupFolder(names, vals)
}

func (e *SelectedEpisode) addRow(group string, ordinal int64) {
	for i := range e.Parts {
		if e.Parts[i].Group == group {
			e.Parts[i].Ordinals = append(e.Parts[i].Ordinals, ordinal)
			return
		}
	}
	e.Parts = append(e.Parts, SelectedPart{Group: group, Ordinals: []int64{ordinal}})
}

// normalize sorts the parts by group and marks a single part holding
// every row as whole (nil ordinals).
func (e *SelectedEpisode) normalize() {
	sort.Slice(e.Parts, func(i, j int) bool { return e.Parts[i].Group < e.Parts[j].Group })
	if len(e.Parts) == 1 && int64(len(e.Parts[0].Ordinals)) == e.Entry.Rows {
		e.Parts[0].Ordinals = nil
	}
}

// scanIndexed evaluates the filter over the items' row groups reading only
// the column chunks it needs, located by the file's chunk index; ok is
// false when the index cannot serve (an episode without manifest
// statistics, a list column), and the footer is used instead.
func scanIndexed(ctx context.Context, t *table.Table, obj storage.Object, ix *table.ChunkIndex, s *table.Schema, f *filter.Filter, key string,
	items []scanItem, opts SelectOptions) (*scanOutcome, bool, error) {
	need := neededColumns(s, f, opts)
	out := &scanOutcome{}
	type column struct {
		name  string
		index int
		descr *schema.Column
		dt    arrow.DataType
	}
	var plan [][]column
	for _, it := range items {
		e := it.entry
		if e.Stats == nil && it.decided == filter.Some {
			return nil, false, nil // row-group statistics first: the footer has them
		}
		if rows, ok := ix.Rows(e.RowGroup); !ok || rows != e.Rows {
			return nil, false, nil
		}
		es, err := t.Schema(ctx, e.SchemaID)
		if err != nil {
			return nil, false, err
		}
		ps, err := t.ParquetSchema(es)
		if err != nil {
			return nil, false, err
		}
		as, err := table.DataFileSchema(es)
		if err != nil {
			return nil, false, err
		}
		var cols []column
		for name := range need {
			fi := as.FieldIndices(name)
			if len(fi) == 0 {
				continue // added after this file was written: NULL
			}
			idx, ok := ix.Column(name)
			leaf := ps.ColumnIndexByName(name)
			if !ok || leaf < 0 {
				return nil, false, nil // a list: the footer path reads it
			}
			cols = append(cols, column{name, idx, ps.Column(leaf), as.Field(fi[0]).Type})
		}
		plan = append(plan, cols)
	}
	for k, it := range items {
		if err := ctx.Err(); err != nil {
			return nil, true, err
		}
		e := it.entry
		arrays := map[string]arrow.Array{}
		for _, c := range plan[k] {
			off, n := ix.Chunk(e.RowGroup, c.index)
			if off < 0 || n <= 0 || off+n > obj.Size() {
				return nil, true, fmt.Errorf("%w: %s: chunk index points outside the file", table.ErrCorrupt, key)
			}
			arr, err := readChunk(obj, off, n, ix.Codec(), c.descr, e.Rows, c.dt)
			if err != nil {
				for _, a := range arrays {
					a.Release()
				}
				if ctx.Err() != nil {
					return nil, true, ctx.Err()
				}
				return nil, true, fmt.Errorf("%w: %s row group %d column %s: %v", table.ErrCorrupt, key, e.RowGroup, c.name, err)
			}
			arrays[c.name] = arr
		}
		columns := withFrame(s, func(name string) arrow.Array { return arrays[name] }, ordinalsFrom(0, int(e.Rows)))
		match, err := f.Eval(int(e.Rows), columns)
		if err != nil {
			for _, a := range arrays {
				a.Release()
			}
			return nil, true, episodeError(key, err, e, nil)
		}
		sel := &SelectedEpisode{Entry: *e}
		groups := varyingGroups(s, opts, columns)
		for i, m := range match {
			if m || it.decided == filter.All {
				sel.addMatch(s, e, opts, groups, i, int64(i))
			}
		}
		sel.normalize()
		for _, a := range arrays {
			a.Release()
		}
		out.results = append(out.results, scanResult{it.index, sel})
		out.scanned++
	}
	return out, true, nil
}
