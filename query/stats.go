package query

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/framefs/framefs/query/filter"
	"github.com/framefs/framefs/table"
)

// The statistics of a manifest entry (table.ColumnStats, docs/FORMAT.md)
// in the filter's form, for pruning.

// filterStats converts an episode's statistics of column c to the filter's
// form; ok is false when they cannot be read (then nothing is assumed).
func filterStats(c table.Column, st table.ColumnStats, rows int64) (filter.ColumnStats, bool) {
	out := filter.ColumnStats{Nulls: st.Nulls, Rows: rows}
	if st.Nulls < 0 || st.Nulls > rows {
		return out, false
	}
	if st.Min == nil || st.Max == nil {
		return out, true
	}
	lo, ok1 := decodeStat(c.Type, st.Min)
	hi, ok2 := decodeStat(c.Type, st.Max)
	if ok1 && ok2 {
		out.HasRange, out.Min, out.Max = true, lo, hi
	}
	return out, true
}

func decodeStat(t table.Type, raw json.RawMessage) (filter.Value, bool) {
	s := string(raw)
	switch t {
	case "bool":
		b, err := strconv.ParseBool(s)
		return filter.Bool(b), err == nil
	case "int32", "int64":
		i, err := strconv.ParseInt(s, 10, 64)
		return filter.Int(i), err == nil
	case "float32", "float64":
		f, err := strconv.ParseFloat(s, 64)
		return filter.Float(f), err == nil && !math.IsNaN(f)
	case "timestamp":
		i, err := strconv.ParseInt(s, 10, 64)
		return filter.TimestampMicros(i), err == nil
	case "string":
		var str string
		err := json.Unmarshal(raw, &str)
		return filter.String(str), err == nil
	}
	return filter.Value{}, false
}

// partitionValue converts a partition value (kept as a string in the
// manifest) to the filter's form.
func partitionValue(t table.Type, s string) (filter.Value, bool) {
	switch t {
	case "string":
		return filter.String(s), true
	case "int32", "int64":
		i, err := strconv.ParseInt(s, 10, 64)
		return filter.Int(i), err == nil
	case "bool":
		b, err := strconv.ParseBool(s)
		return filter.Bool(b), err == nil
	}
	return filter.Value{}, false
}
