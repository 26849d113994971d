package manifest

import (
	"cmp"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Kind is the kind of value a Bound holds.
type Kind uint8

// Kinds of bounds. Integers of every width and timestamps (microseconds
// since the Unix epoch) are KindInt; float32 and float64 are KindFloat.
const (
	KindNone Kind = iota
	KindBool
	KindInt
	KindFloat
	KindString
)

// KindOf returns the kind of the bounds of a column of a table's type
// (bool, int32, int64, float32, float64, string, timestamp), or KindNone
// for lists and unknown types, which have no bounds.
func KindOf(typ string) Kind {
	switch typ {
	case "bool":
		return KindBool
	case "int32", "int64", "timestamp":
		return KindInt
	case "float32", "float64":
		return KindFloat
	case "string":
		return KindString
	}
	return KindNone
}

// Bound is a minimum or a maximum of a column.
type Bound struct {
	Kind  Kind
	Bool  bool
	Int   int64
	Float float64
	Str   string
}

// Compare orders two bounds of one kind: -1, 0 or +1.
func (b Bound) Compare(o Bound) int {
	switch b.Kind {
	case KindBool:
		switch {
		case b.Bool == o.Bool:
			return 0
		case o.Bool:
			return -1
		}
		return 1
	case KindInt:
		return cmp.Compare(b.Int, o.Int)
	case KindFloat:
		return cmp.Compare(b.Float, o.Float) // bounds hold no NaN
	case KindString:
		return strings.Compare(b.Str, o.Str)
	}
	return 0
}

// JSON writes the bound as a manifest's JSON statistics hold it (and as
// version 1 manifests were written): numbers, booleans, strings.
func (b Bound) JSON() json.RawMessage {
	switch b.Kind {
	case KindBool:
		return json.RawMessage(strconv.FormatBool(b.Bool))
	case KindInt:
		return json.RawMessage(strconv.FormatInt(b.Int, 10))
	case KindFloat:
		return json.RawMessage(strconv.FormatFloat(b.Float, 'g', -1, 64))
	case KindString:
		data, _ := json.Marshal(b.Str)
		return data
	}
	return nil
}

// ParseJSON reads a JSON bound of a column of type typ; ok is false when
// it is not one (a damaged entry: its bounds are then not used).
func ParseJSON(typ string, raw json.RawMessage) (Bound, bool) {
	s := string(raw)
	switch KindOf(typ) {
	case KindBool:
		v, err := strconv.ParseBool(s)
		return Bound{Kind: KindBool, Bool: v}, err == nil
	case KindInt:
		v, err := strconv.ParseInt(s, 10, 64)
		return Bound{Kind: KindInt, Int: v}, err == nil
	case KindFloat:
		v, err := strconv.ParseFloat(s, 64)
		return Bound{Kind: KindFloat, Float: v}, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
	case KindString:
		var v string
		err := json.Unmarshal(raw, &v)
		return Bound{Kind: KindString, Str: v}, err == nil
	}
	return Bound{}, false
}

// ParsePartition reads a partition value (manifest entries keep them as
// text) of a partition column of type typ (string, int32, int64, bool).
func ParsePartition(typ, s string) (Bound, bool) {
	switch typ {
	case "string":
		return Bound{Kind: KindString, Str: s}, true
	case "int32", "int64":
		v, err := strconv.ParseInt(s, 10, 64)
		return Bound{Kind: KindInt, Int: v}, err == nil
	case "bool":
		v, err := strconv.ParseBool(s)
		return Bound{Kind: KindBool, Bool: v}, err == nil
	}
	return Bound{}, false
}

// Stats are a column's statistics in typed form, over an episode's rows
// (ColumnStats in JSON form) or over all rows of a manifest.
type Stats struct {
	// Nulls counts the null values.
	Nulls int64
	// HasRange says that Min and Max bound every non-null value.
	HasRange bool
	Min, Max Bound
}

// TypedStats reads an entry's JSON statistics of a column of type typ.
// Bounds that do not parse are left out (nothing is then assumed of the
// values); ok is false when the null count is impossible for rows rows.
func TypedStats(typ string, cs ColumnStats, rows int64) (Stats, bool) {
	st := Stats{Nulls: cs.Nulls}
	if cs.Nulls < 0 || cs.Nulls > rows {
		return st, false
	}
	if cs.Min == nil || cs.Max == nil {
		return st, true
	}
	lo, ok1 := ParseJSON(typ, cs.Min)
	hi, ok2 := ParseJSON(typ, cs.Max)
	if ok1 && ok2 {
		st.HasRange, st.Min, st.Max = true, lo, hi
	}
	return st, true
}

// JSON returns the statistics in an entry's JSON form.
func (s Stats) JSON() ColumnStats {
	cs := ColumnStats{Nulls: s.Nulls}
	if s.HasRange {
		cs.Min, cs.Max = s.Min.JSON(), s.Max.JSON()
	}
	return cs
}

// statsAccumulator merges the statistics of a column over many entries
// into bounds of all their rows.
type statsAccumulator struct {
	known     bool // every entry so far had statistics for the column
	unbounded bool // some entry has non-null values without bounds
	seen      bool
	st        Stats
}

func newStatsAccumulator() *statsAccumulator { return &statsAccumulator{known: true} }

// add merges one entry's statistics (ok false: the entry has none).
func (a *statsAccumulator) add(st Stats, ok bool, rows int64) {
	if !ok {
		a.known = false
		return
	}
	a.st.Nulls += st.Nulls
	switch {
	case st.HasRange:
		if !a.st.HasRange || st.Min.Compare(a.st.Min) < 0 {
			a.st.Min = st.Min
		}
		if !a.st.HasRange || st.Max.Compare(a.st.Max) > 0 {
			a.st.Max = st.Max
		}
		a.st.HasRange = true
	case st.Nulls < rows:
		a.unbounded = true
	}
	a.seen = true
}

// result returns the merged statistics; ok is false when some entry had
// none.
func (a *statsAccumulator) result() (Stats, bool) {
	if !a.known || !a.seen {
		return Stats{}, false
	}
	st := a.st
	if a.unbounded {
		st.HasRange, st.Min, st.Max = false, Bound{}, Bound{}
	}
	return st, true
}
