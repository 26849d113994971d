package filter

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Kind is the kind of a value in column statistics. Column types map onto
// kinds: int32 and int64 are KindInt, float32 and float64 KindFloat,
// timestamps KindTimestamp (microseconds, UTC).
type Kind uint8

// Kinds of values.
const (
	KindNull Kind = iota
	KindBool
	KindInt
	KindFloat
	KindString
	KindTimestamp
	KindList
)

var kindNames = [...]string{KindNull: "NULL", KindBool: "a boolean", KindInt: "an integer", KindFloat: "a float",
	KindString: "a string", KindTimestamp: "a timestamp", KindList: "a list"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind %d", k)
}

// numeric reports whether values of the kind compare as numbers.
func (k Kind) numeric() bool { return k == KindInt || k == KindFloat }

// Value is one scalar value: a literal of a filter, or a bound of column
// statistics.
type Value struct {
	Kind Kind
	// Int holds integers and timestamps (microseconds since the epoch).
	Int   int64
	Float float64
	Str   string
	Bool  bool
}

// Int, Float, String, Bool and Timestamp make values.
func Int(v int64) Value              { return Value{Kind: KindInt, Int: v} }
func Float(v float64) Value          { return Value{Kind: KindFloat, Float: v} }
func String(v string) Value          { return Value{Kind: KindString, Str: v} }
func Bool(v bool) Value              { return Value{Kind: KindBool, Bool: v} }
func Timestamp(t time.Time) Value    { return Value{Kind: KindTimestamp, Int: t.UnixMicro()} }
func TimestampMicros(us int64) Value { return Value{Kind: KindTimestamp, Int: us} }
func (v Value) asFloat() float64 {
	if v.Kind == KindInt {
		return float64(v.Int)
	}
	return v.Float
}

func (v Value) String() string {
	switch v.Kind {
	case KindNull:
		return "NULL"
	case KindBool:
		return strconv.FormatBool(v.Bool)
	case KindInt:
		return strconv.FormatInt(v.Int, 10)
	case KindFloat:
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	case KindString:
		return strconv.Quote(v.Str)
	case KindTimestamp:
		return time.UnixMicro(v.Int).UTC().Format("2006-01-02 15:04:05.999999")
	}
	return "?"
}

// compareFloat orders floats as SQL engines do: NaN equals NaN and is
// greater than every other value.
func compareFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	return cmp.Compare(a, b)
}

// compareValues compares two non-null values of compatible kinds (equal,
// or both numeric).
func compareValues(a, b Value) int {
	if a.Kind != b.Kind {
		return compareFloat(a.asFloat(), b.asFloat())
	}
	switch a.Kind {
	case KindInt, KindTimestamp:
		return cmp.Compare(a.Int, b.Int)
	case KindFloat:
		return compareFloat(a.Float, b.Float)
	case KindString:
		return cmp.Compare(a.Str, b.Str)
	case KindBool:
		switch {
		case a.Bool == b.Bool:
			return 0
		case b.Bool:
			return -1
		}
		return 1
	}
	return 0
}
