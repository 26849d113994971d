package filter

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// typeID is a SQL type of the filter language, named as DuckDB names it.
type typeID uint8

const (
	tNull typeID = iota // the type of NULL, which casts to any type
	tBool
	tInt32
	tInt64
	tFloat32
	tFloat64
	tDecimal
	tString
	tDate
	tTimestamp   // TIMESTAMP: no time zone
	tTimestampTZ // TIMESTAMP WITH TIME ZONE: what timestamp columns hold
	tList
)

// sqlType is a type with its parameters: a DECIMAL's width and scale, a
// list's element type.
type sqlType struct {
	id           typeID
	width, scale uint8
	elem         *sqlType
}

var (
	typNull   = sqlType{id: tNull}
	typBool   = sqlType{id: tBool}
	typInt32  = sqlType{id: tInt32}
	typInt64  = sqlType{id: tInt64}
	typFloat  = sqlType{id: tFloat32}
	typDouble = sqlType{id: tFloat64}
	typString = sqlType{id: tString}
	typDate   = sqlType{id: tDate}
	typTS     = sqlType{id: tTimestamp}
	typTSTZ   = sqlType{id: tTimestampTZ}
)

func listOf(elem sqlType) sqlType { return sqlType{id: tList, elem: &elem} }

func decimalType(width, scale int) sqlType {
	return sqlType{id: tDecimal, width: uint8(min(width, maxDecimalDigits)), scale: uint8(scale)}
}

// maxInt64Digits is the most digits of a DECIMAL that DuckDB keeps in 64
// bits.
const maxInt64Digits = 18

// decimalResult returns the type of l op r for DECIMALs l and r (op one of
// + - * %), as DuckDB binds it, and whether it may have fewer digits than
// the exact result needs: a sum, difference or product of DECIMALs of at
// most 18 digits that would need more has 18 (DuckDB computes it in 64
// bits, checked, rather than widen it to 128: "add an explicit cast to a
// bigger decimal"), unless a product has 18 decimals or more; any result
// has at most 38.
func decimalResult(op arithOp, l, r sqlType) (t sqlType, narrowed bool) {
	ls, rs := int(l.scale), int(r.scale)
	scale := max(ls, rs)
	var width int
	switch op {
	case opAdd, opSub:
		width = max(int(l.width)-ls, int(r.width)-rs) + scale + 1
	case opMul:
		width, scale = int(l.width)+int(r.width), ls+rs
	case opMod:
		return decimalType(max(int(l.width)-ls, int(r.width)-rs)+scale, scale), false
	}
	if width > maxInt64Digits && max(l.width, r.width) <= maxInt64Digits && (op != opMul || scale < maxInt64Digits) {
		return decimalType(maxInt64Digits, scale), true
	}
	return decimalType(width, scale), width > maxDecimalDigits
}

func (t sqlType) String() string {
	switch t.id {
	case tNull:
		return "NULL"
	case tBool:
		return "BOOLEAN"
	case tInt32:
		return "INTEGER"
	case tInt64:
		return "BIGINT"
	case tFloat32:
		return "FLOAT"
	case tFloat64:
		return "DOUBLE"
	case tDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.width, t.scale)
	case tString:
		return "VARCHAR"
	case tDate:
		return "DATE"
	case tTimestamp:
		return "TIMESTAMP"
	case tTimestampTZ:
		return "TIMESTAMP WITH TIME ZONE"
	case tList:
		return t.elem.String() + "[]"
	}
	return "?"
}

func (t sqlType) equal(o sqlType) bool {
	if t.id != o.id || t.width != o.width || t.scale != o.scale {
		return false
	}
	if t.id == tList {
		return t.elem.equal(*o.elem)
	}
	return true
}

func (t sqlType) integer() bool  { return t.id == tInt32 || t.id == tInt64 }
func (t sqlType) floating() bool { return t.id == tFloat32 || t.id == tFloat64 }
func (t sqlType) numeric() bool  { return t.integer() || t.floating() || t.id == tDecimal }
func (t sqlType) temporal() bool {
	return t.id == tDate || t.id == tTimestamp || t.id == tTimestampTZ
}

// kind is the public Kind of values of the type (what statistics hold).
func (t sqlType) kind() Kind {
	switch t.id {
	case tBool:
		return KindBool
	case tInt32, tInt64:
		return KindInt
	case tFloat32, tFloat64, tDecimal:
		return KindFloat
	case tString:
		return KindString
	case tDate, tTimestamp, tTimestampTZ:
		return KindTimestamp
	case tList:
		return KindList
	}
	return KindNull
}

// integerWidth is the DECIMAL width an integer type converts to.
func integerWidth(t sqlType) int {
	if t.id == tInt32 {
		return 10
	}
	return 19
}

// asDecimal is the DECIMAL an integer or decimal type converts to.
func asDecimal(t sqlType) sqlType {
	if t.id == tDecimal {
		return t
	}
	return decimalType(integerWidth(t), 0)
}

// typeOfArrow maps an Arrow column type onto a SQL type.
func typeOfArrow(dt arrow.DataType) (sqlType, bool) {
	switch dt.ID() {
	case arrow.BOOL:
		return typBool, true
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT8, arrow.UINT16:
		return typInt32, true
	case arrow.INT64, arrow.UINT32:
		return typInt64, true
	case arrow.FLOAT32:
		return typFloat, true
	case arrow.FLOAT64:
		return typDouble, true
	case arrow.STRING, arrow.LARGE_STRING:
		return typString, true
	case arrow.DATE32:
		return typDate, true
	case arrow.TIMESTAMP:
		if dt.(*arrow.TimestampType).TimeZone != "" {
			return typTSTZ, true
		}
		return typTS, true
	case arrow.LIST, arrow.LARGE_LIST:
		elem, ok := typeOfArrow(dt.(arrow.ListLikeType).Elem())
		if !ok || elem.id == tList {
			return sqlType{}, false
		}
		return listOf(elem), true
	case arrow.DICTIONARY:
		return typeOfArrow(dt.(*arrow.DictionaryType).ValueType)
	}
	return sqlType{}, false
}

// numericMax is the type two numbers are combined in: DOUBLE if either
// is one, else FLOAT, else DECIMAL, else the wider integer (DuckDB's
// implicit casts).
func numericMax(a, b sqlType) sqlType {
	switch {
	case a.id == tFloat64 || b.id == tFloat64:
		return typDouble
	case a.id == tFloat32 || b.id == tFloat32:
		return typFloat
	case a.id == tDecimal || b.id == tDecimal:
		da, db := asDecimal(a), asDecimal(b)
		scale := max(da.scale, db.scale)
		intDigits := max(int(da.width)-int(da.scale), int(db.width)-int(db.scale))
		return decimalType(intDigits+int(scale), int(scale))
	case a.id == tInt64 || b.id == tInt64:
		return typInt64
	}
	return typInt32
}

// maxType is the type two values are compared or combined in, by DuckDB's
// rules, or false when there is none. A VARCHAR (other than a literal,
// which the caller casts first) meets another type in that type.
func maxType(a, b sqlType) (sqlType, bool) {
	switch {
	case a.id == tNull:
		return b, true
	case b.id == tNull:
		return a, true
	case a.equal(b):
		return a, true
	case a.id == tList && b.id == tList:
		elem, ok := maxType(*a.elem, *b.elem)
		return listOf(elem), ok
	case a.id == tList || b.id == tList:
		return sqlType{}, false
	case a.id == tString:
		return b, true
	case b.id == tString:
		return a, true
	case a.numeric() && b.numeric():
		return numericMax(a, b), true
	case a.id == tBool && b.numeric():
		return b, true
	case b.id == tBool && a.numeric():
		return a, true
	case a.temporal() && b.temporal():
		if a.id == tTimestampTZ || b.id == tTimestampTZ {
			return typTSTZ, true
		}
		return typTS, true
	}
	return sqlType{}, false
}

// Type names CAST and :: take, as DuckDB spells them.
var typeNames = map[string]sqlType{
	"boolean": typBool, "bool": typBool, "logical": typBool,
	"integer": typInt32, "int": typInt32, "int4": typInt32, "int32": typInt32, "signed": typInt32,
	"bigint": typInt64, "int8": typInt64, "int64": typInt64, "long": typInt64,
	"float": typFloat, "float4": typFloat, "real": typFloat,
	"double": typDouble, "float8": typDouble,
	"varchar": typString, "text": typString, "string": typString, "char": typString, "bpchar": typString,
	"date":      typDate,
	"timestamp": typTS, "datetime": typTS,
	"timestamptz": typTSTZ,
	"decimal":     decimalType(18, 3), "numeric": decimalType(18, 3),
}

// supportedTypes lists the types a filter may cast to, for messages.
const supportedTypes = "BOOLEAN, INTEGER, BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), VARCHAR, DATE, TIMESTAMP, TIMESTAMPTZ, and lists of them (INTEGER[])"

// unsupportedTypeError says that a type name is not one a filter knows.
func unsupportedTypeError(name string) error {
	return invalid("type %s is not supported in filters; the types are %s", strings.ToUpper(clip(name)), supportedTypes)
}
