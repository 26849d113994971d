package query

import (
	"github.com/framefs/framefs/query/filter"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/manifest"
)

// The statistics manifests and manifest lists keep (docs/FORMAT.md), in
// the filter's form, for pruning: of one episode (an entry, or an element
// of a manifest.Batch), and of all rows of a manifest (its summary).

// episodeConstants returns the values an episode holds in every row: its
// id and its partition values.
func episodeConstants(s *table.Schema, e *table.EpisodeEntry) map[string]filter.Value {
	out := map[string]filter.Value{s.EpisodeColumn: filter.String(e.Episode)}
	for _, p := range s.PartitionColumns {
		c, _ := s.Column(p)
		if v, ok := partitionValue(c.Type, e.Partition[p]); ok {
			out[p] = v
		}
	}
	return out
}

// frameStats are the statistics of the frame column over episodes of at
// most maxRows rows, rows in all: 0 to maxRows-1, never NULL.
func frameStats(s *table.Schema, name string, maxRows, rows int64) (filter.ColumnStats, bool) {
	if name != table.FrameColumn || !s.HasFrameColumn() {
		return filter.ColumnStats{}, false
	}
	return filter.ColumnStats{HasRange: maxRows > 0, Min: filter.Int(0), Max: filter.Int(maxRows - 1), Nulls: 0, Rows: rows}, true
}

// manifestStats returns the statistics a manifest entry gives: its
// constants, and its column statistics when withColumns is set.
func manifestStats(s *table.Schema, e *table.EpisodeEntry, withColumns bool) filter.StatsFunc {
	consts := episodeConstants(s, e)
	return func(name string) (filter.ColumnStats, bool) {
		if v, ok := consts[name]; ok {
			return filter.Exactly(v, e.Rows), true
		}
		if st, ok := frameStats(s, name, e.Rows, e.Rows); ok {
			return st, true
		}
		if !withColumns {
			return filter.ColumnStats{}, false
		}
		cs, ok := e.Stats[name]
		c, isColumn := s.Column(name)
		if !ok || !isColumn {
			return filter.ColumnStats{}, false
		}
		st, ok := manifest.TypedStats(string(c.Type), cs, e.Rows)
		if !ok {
			return filter.ColumnStats{}, false
		}
		return filterStats(c, st, e.Rows), true
	}
}

// batchStats returns the statistics of entry i of a batch read with the
// filter's projection.
func batchStats(s *table.Schema, b *manifest.Batch, i int) filter.StatsFunc {
	return func(name string) (filter.ColumnStats, bool) {
		rows := b.Rows[i]
		switch {
		case name == s.EpisodeColumn:
			if b.Episodes == nil {
				return filter.ColumnStats{}, false
			}
			return filter.Exactly(filter.String(b.Episodes[i]), rows), true
		case s.IsPartition(name):
			c, _ := s.Column(name)
			v, ok := partitionValue(c.Type, b.Partitions[name][i])
			return filter.Exactly(v, rows), ok
		}
		if st, ok := frameStats(s, name, rows, rows); ok {
			return st, true
		}
		es, ok := b.Stats[name]
		c, isColumn := s.Column(name)
		if !ok || !isColumn || !es.Known[i] || es.Stats[i].Nulls > rows {
			return filter.ColumnStats{}, false
		}
		return filterStats(c, es.Stats[i], rows), true
	}
}

// summaryStats returns the statistics of all rows of a manifest, from its
// summary.
func summaryStats(s *table.Schema, sum *manifest.Summary) filter.StatsFunc {
	return func(name string) (filter.ColumnStats, bool) {
		if name == s.EpisodeColumn {
			if sum.Episodes == 0 {
				return filter.ColumnStats{}, false
			}
			return filter.ColumnStats{HasRange: true, Min: filter.String(sum.EpisodeMin), Max: filter.String(sum.EpisodeMax), Rows: sum.Rows}, true
		}
		// No episode of the manifest has more rows than all of them.
		if st, ok := frameStats(s, name, sum.Rows, sum.Rows); ok {
			return st, true
		}
		c, ok := s.Column(name)
		if !ok {
			return filter.ColumnStats{}, false
		}
		if s.IsPartition(name) {
			r, ok := sum.Partitions[name]
			if !ok {
				return filter.ColumnStats{}, false
			}
			return filterStats(c, manifest.Stats{HasRange: true, Min: r.Min, Max: r.Max}, sum.Rows), true
		}
		st, ok := sum.Stats[name]
		if !ok || st.Nulls > sum.Rows {
			return filter.ColumnStats{}, false
		}
		return filterStats(c, st, sum.Rows), true
	}
}

// filterStats converts typed statistics of column c over rows rows to the
// filter's form; bounds of another kind than the column's are left out.
func filterStats(c table.Column, st manifest.Stats, rows int64) filter.ColumnStats {
	out := filter.ColumnStats{Nulls: st.Nulls, Rows: rows}
	if !st.HasRange {
		return out
	}
	lo, ok1 := filterValue(c.Type, st.Min)
	hi, ok2 := filterValue(c.Type, st.Max)
	if ok1 && ok2 {
		out.HasRange, out.Min, out.Max = true, lo, hi
	}
	return out
}

// filterValue converts a bound of a column of type t.
func filterValue(t table.Type, b manifest.Bound) (filter.Value, bool) {
	if b.Kind != manifest.KindOf(string(t)) {
		return filter.Value{}, false
	}
	switch b.Kind {
	case manifest.KindBool:
		return filter.Bool(b.Bool), true
	case manifest.KindInt:
		if t == "timestamp" {
			return filter.TimestampMicros(b.Int), true
		}
		return filter.Int(b.Int), true
	case manifest.KindFloat:
		return filter.Float(b.Float), true
	case manifest.KindString:
		return filter.String(b.Str), true
	}
	return filter.Value{}, false
}

// partitionValue converts a partition value (kept as text in manifests)
// to the filter's form.
func partitionValue(t table.Type, s string) (filter.Value, bool) {
	b, ok := manifest.ParsePartition(string(t), s)
	if !ok {
		return filter.Value{}, false
	}
	return filterValue(t, b)
}
