package table

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// maxStatBytes bounds string bounds kept in manifests: longer minimums
// are cut (still a lower bound), longer maximums cut and incremented
// (still an upper bound).
const maxStatBytes = 64

// episodeStats computes the statistics of every user column that is not
// a partition column (partition values are in the entry already).
func episodeStats(s *Schema, rows []Row) map[string]ColumnStats {
	out := map[string]ColumnStats{}
	for _, c := range s.Columns {
		if s.IsPartition(c.Name) {
			continue
		}
		var st ColumnStats
		var lo, hi any
		ranged := true
		for _, r := range rows {
			v := r[c.Name]
			if v == nil {
				st.Nulls++
				continue
			}
			v, ok := statValue(c.Type, v)
			if !ok {
				ranged = false
				continue
			}
			if lo == nil || lessStat(v, lo) {
				lo = v
			}
			if hi == nil || lessStat(hi, v) {
				hi = v
			}
		}
		if ranged && lo != nil {
			st.Min, st.Max = encodeStat(lo, false), encodeStat(hi, true)
			if st.Min == nil || st.Max == nil {
				st.Min, st.Max = nil, nil
			}
		}
		out[c.Name] = st
	}
	return out
}

// IsPartition reports whether name is a partition column.
func (s *Schema) IsPartition(name string) bool {
	for _, p := range s.PartitionColumns {
		if p == name {
			return true
		}
	}
	return false
}

// statValue converts a row value to the form its statistics compare in,
// exactly as it is stored (float32 columns hold float32 values); ok is
// false for values that have no place in a range (lists, NaN, infinities).
func statValue(t Type, v any) (any, bool) {
	switch t {
	case "bool":
		b, ok := v.(bool)
		return b, ok
	case "int32", "int64":
		i, ok := v.(int64)
		return i, ok
	case "float32", "float64":
		f, ok := v.(float64)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		if t == "float32" {
			f = float64(float32(f))
			if math.IsInf(f, 0) {
				return nil, false
			}
		}
		return f, true
	case "string":
		s, ok := v.(string)
		// Bounds are JSON strings, which must be valid UTF-8.
		return s, ok && utf8.ValidString(s)
	case "timestamp":
		ts, ok := v.(time.Time)
		if !ok {
			return nil, false
		}
		return ts.UnixMicro(), true
	}
	return nil, false
}

func lessStat(a, b any) bool {
	switch x := a.(type) {
	case bool:
		return !x && b.(bool)
	case int64:
		return x < b.(int64)
	case float64:
		return x < b.(float64)
	case string:
		return x < b.(string)
	}
	return false
}

// encodeStat writes a bound as JSON; upper marks a maximum, which a cut
// string must still bound from above.
func encodeStat(v any, upper bool) json.RawMessage {
	switch x := v.(type) {
	case bool:
		return json.RawMessage(strconv.FormatBool(x))
	case int64:
		return json.RawMessage(strconv.FormatInt(x, 10))
	case float64:
		return json.RawMessage(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		if len(x) > maxStatBytes {
			cut := maxStatBytes
			for cut > 0 && !utf8.RuneStart(x[cut]) {
				cut--
			}
			x = x[:cut]
			if upper {
				var ok bool
				if x, ok = incrementString(x); !ok {
					return nil
				}
			}
		}
		b, _ := json.Marshal(x)
		return b
	}
	return nil
}

// incrementString returns a string above every string that starts with p
// (UTF-8 orders strings by code point, so raising the last code point
// does it), or false when there is none.
func incrementString(p string) (string, bool) {
	rs := []rune(p)
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i] + 1
		if r >= 0xD800 && r <= 0xDFFF {
			r = 0xE000
		}
		if r <= utf8.MaxRune {
			rs[i] = r
			return string(rs[:i+1]), true
		}
	}
	return "", false
}
