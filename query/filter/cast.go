package filter

import (
	"math"
	"strconv"
	"strings"

	"github.com/framefs/framefs/internal/timestamp"
)

// castExpr is CAST(x AS t), TRY_CAST (NULL where the cast fails), or an
// implicit cast the binder inserted.
type castExpr struct {
	x   expr
	to  sqlType
	try bool
	// implicit is set on a cast the binder inserted (see binder.coerce).
	implicit bool
	// context says what an implicit cast of a constant is for, for the
	// error of a constant that does not convert (see
	// binder.coerceCompared).
	context string
}

func (c *castExpr) typ() sqlType { return c.to }

func (c *castExpr) eval(b *batch) *vec { return castVec(c.x.eval(b), c.to, c.try) }

// checkCast reports whether values of type from can be cast to type to
// at all (some values may still fail, 'abc' to INTEGER).
func checkCast(from, to sqlType) error {
	if from.id == tNull || from.equal(to) || to.id == tString && from.id != tList {
		return nil
	}
	switch {
	case from.id == tList && to.id == tList:
		return checkCast(*from.elem, *to.elem)
	case from.id == tList && to.id == tString:
		return nil
	case from.id == tList || to.id == tList:
		return invalid("cannot cast %s to %s", from, to)
	case from.id == tString:
		return nil
	case from.temporal() && to.temporal():
		return nil
	case from.temporal() || to.temporal():
		return invalid("cannot cast %s to %s", from, to)
	}
	return nil // numbers and booleans cast to one another
}

// castInvertible reports whether DuckDB takes a cast from type from to
// type to for one that loses nothing (its CastIsInvertible), which lets
// its optimizer compare the cast's operand instead of the cast: numbers
// other than floating point where the scale does not shrink (the width
// may: DECIMAL(4,0) counts), dates and timestamps among themselves but for
// a timestamp to a date, and those to strings. Whether such a cast fails
// for a value (3000000000 to INTEGER) is not asked.
func castInvertible(from, to sqlType) bool {
	exact := func(t sqlType) bool { return t.integer() || t.id == tDecimal }
	switch {
	case exact(from) && exact(to):
		return to.scale >= from.scale
	case from.temporal() && to.temporal():
		return to.id != tDate || from.id == tDate
	case from.temporal() && to.id == tString:
		return true
	}
	return false
}

// castVec casts every value of x to type to. A value that does not
// convert fails (or, with try, becomes NULL).
func castVec(x *vec, to sqlType, try bool) *vec {
	if x.t.equal(to) {
		return x
	}
	n := x.len()
	out := newVec(to, n, x.step)
	if x.t.id == tNull {
		for j := 0; j < n; j++ {
			out.setNull(j)
			if to.id == tList {
				out.offs[j+1] = out.offs[j]
			}
		}
		return out
	}
	if x.t.id == tList && to.id == tList {
		return castList(x, out, try)
	}
	for j := 0; j < n; j++ {
		switch {
		case x.badAt(j):
			out.fail(j, x.errAt(j))
			continue
		case x.nullAt(j):
			out.setNull(j)
			continue
		}
		if err := castValue(x, j, out, j); err != nil {
			if try {
				out.setNull(j)
			} else {
				out.fail(j, err)
			}
		}
	}
	return out
}

// nullAt and badAt are isNull and isBad by the index of a stored value.
func (v *vec) nullAt(j int) bool {
	if v.t.id == tBool {
		return v.tri[j] == triN
	}
	return v.null != nil && v.null[j]
}

func (v *vec) badAt(j int) bool {
	if v.t.id == tBool {
		return v.tri[j] == triE
	}
	return v.bad != nil && v.bad[j]
}

// castList casts each list's elements; a list with an element that fails
// fails (TRY_CAST makes the element NULL instead).
func castList(x, out *vec, try bool) *vec {
	out.elems = castVec(x.elems, *out.t.elem, try)
	copy(out.offs, x.offs)
	for j := 0; j < x.len(); j++ {
		switch {
		case x.badAt(j):
			out.fail(j, x.errAt(j))
		case x.nullAt(j):
			out.setNull(j)
		default:
			for e := x.offs[j]; e < x.offs[j+1]; e++ {
				if out.elems.badAt(int(e)) {
					out.fail(j, out.elems.errAt(int(e)))
					break
				}
			}
		}
	}
	return out
}

// castValue converts value j of x into value k of out.
func castValue(x *vec, j int, out *vec, k int) error {
	to := out.t
	switch x.t.id {
	case tBool:
		b := x.tri[j] == triT
		if to.id == tString {
			out.strs[k] = strconv.FormatBool(b)
			return nil
		}
		n := int64(0)
		if b {
			n = 1
		}
		return setInteger(out, k, n, x.t)
	case tInt32, tInt64:
		if to.id == tString {
			out.strs[k] = strconv.FormatInt(x.ints[j], 10)
			return nil
		}
		return setInteger(out, k, x.ints[j], x.t)
	case tFloat32, tFloat64:
		return setFloat(out, k, x.flts[j], x.t)
	case tDecimal:
		return setDecimal(out, k, x.decs[j], int(x.t.scale), x.t)
	case tString:
		return setString(out, k, x.strs[j])
	case tDate, tTimestamp, tTimestampTZ:
		us := x.ints[j]
		switch to.id {
		case tString:
			out.strs[k] = formatTimestamp(us, x.t)
		case tDate:
			out.ints[k] = floorDay(us)
		default:
			out.ints[k] = us
		}
		return nil
	case tList:
		if to.id == tString {
			out.strs[k] = formatList(x, j)
			return nil
		}
	}
	return valueError("cannot cast %s to %s", x.t, to)
}

func outOfRange(v string, from, to sqlType) error {
	return valueError("%s %s does not fit in %s", from, v, to)
}

// setInteger stores an integer (or a boolean as 0 or 1) as type out.t.
func setInteger(out *vec, k int, n int64, from sqlType) error {
	switch out.t.id {
	case tBool:
		out.tri[k] = boolTri(n != 0)
	case tInt32:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return outOfRange(strconv.FormatInt(n, 10), from, out.t)
		}
		out.ints[k] = n
	case tInt64:
		out.ints[k] = n
	case tFloat32:
		out.flts[k] = float64(float32(n))
	case tFloat64:
		out.flts[k] = float64(n)
	case tDecimal:
		d, ok := i128From(n).scaleUp(int(out.t.scale))
		if !ok || !fitsWidth(d, out.t) {
			return outOfRange(strconv.FormatInt(n, 10), from, out.t)
		}
		out.decs[k] = d
	default:
		return valueError("cannot cast %s to %s", from, out.t)
	}
	return nil
}

// fitsWidth reports whether an unscaled value fits a DECIMAL's width.
func fitsWidth(d i128, t sqlType) bool {
	lim := pow10s[t.width]
	return d.cmp(lim) < 0 && d.cmp(lim.neg()) > 0
}

// setFloat stores a float as type out.t: integers round half to even, as
// DuckDB casts a DOUBLE; NaN and infinities fit no integer.
func setFloat(out *vec, k int, f float64, from sqlType) error {
	switch out.t.id {
	case tBool:
		out.tri[k] = boolTri(f != 0)
	case tInt32, tInt64:
		r := math.RoundToEven(f)
		lo, hi := float64(math.MinInt32), float64(math.MaxInt32)
		if out.t.id == tInt64 {
			lo, hi = -0x1p63, 0x1p63
		}
		if math.IsNaN(r) || r < lo || r > hi || out.t.id == tInt64 && r == hi {
			return outOfRange(formatFloat(f, from.id == tFloat32), from, out.t)
		}
		out.ints[k] = int64(r)
	case tFloat32:
		r := float32(f)
		if !math.IsInf(f, 0) && math.IsInf(float64(r), 0) {
			return outOfRange(formatFloat(f, false), from, out.t)
		}
		out.flts[k] = float64(r)
	case tFloat64:
		out.flts[k] = f
	case tDecimal:
		r := math.Round(f * math.Pow10(int(out.t.scale)))
		if math.IsNaN(r) || math.Abs(r) >= math.Pow10(int(out.t.width)) {
			return outOfRange(formatFloat(f, from.id == tFloat32), from, out.t)
		}
		out.decs[k] = i128FromFloat(r)
	case tString:
		out.strs[k] = formatFloat(f, from.id == tFloat32)
	default:
		return valueError("cannot cast %s to %s", from, out.t)
	}
	return nil
}

// i128FromFloat converts a whole float below 10^38 in magnitude.
func i128FromFloat(f float64) i128 {
	neg := f < 0
	f = math.Abs(f)
	hi := math.Floor(f / 0x1p64)
	lo := f - hi*0x1p64
	v := i128{int64(hi), uint64(lo)}
	if neg {
		v = v.neg()
	}
	return v
}

// setDecimal stores a decimal (unscaled d, scale) as type out.t.
func setDecimal(out *vec, k int, d i128, scale int, from sqlType) error {
	switch out.t.id {
	case tBool:
		out.tri[k] = boolTri(!d.isZero())
	case tInt32, tInt64:
		n, ok := d.scaleDown(scale).int64()
		if !ok || out.t.id == tInt32 && (n < math.MinInt32 || n > math.MaxInt32) {
			return outOfRange(formatDecimal(d, scale), from, out.t)
		}
		out.ints[k] = n
	case tFloat32:
		out.flts[k] = float64(float32(d.float64(scale)))
	case tFloat64:
		out.flts[k] = d.float64(scale)
	case tDecimal:
		r, ok := rescale(d, scale, int(out.t.scale))
		if !ok || !fitsWidth(r, out.t) {
			return outOfRange(formatDecimal(d, scale), from, out.t)
		}
		out.decs[k] = r
	case tString:
		out.strs[k] = formatDecimal(d, scale)
	default:
		return valueError("cannot cast %s to %s", from, out.t)
	}
	return nil
}

// rescale moves an unscaled value from one scale to another, rounding
// half away from zero when digits are dropped.
func rescale(d i128, from, to int) (i128, bool) {
	if to >= from {
		return d.scaleUp(to - from)
	}
	return d.scaleDown(from - to), true
}

// setString parses a string as type out.t, as DuckDB casts a VARCHAR.
func setString(out *vec, k int, s string) error {
	switch out.t.id {
	case tBool:
		b, ok := parseBool(s)
		if !ok {
			return valueError("cannot cast %q to BOOLEAN (true/false, t/f, yes/no, y/n and 1/0 are)", clip(s))
		}
		out.tri[k] = boolTri(b)
	case tInt32, tInt64:
		n, err := parseInteger(s)
		if err == nil && out.t.id == tInt32 && (n < math.MinInt32 || n > math.MaxInt32) {
			err = outOfRange(strconv.Quote(s), typString, out.t)
		}
		if err != nil {
			return valueError("cannot cast %q to %s: not an integer in range", clip(s), out.t)
		}
		out.ints[k] = n
	case tFloat32, tFloat64:
		bits := 64
		if out.t.id == tFloat32 {
			bits = 32
		}
		f, err := parseFloat(strings.TrimSpace(s), bits)
		if err != nil && !math.IsInf(f, 0) || strings.ContainsAny(s, "_xXpP") {
			return valueError("cannot cast %q to %s: not a number", clip(s), out.t)
		}
		out.flts[k] = f
	case tDecimal:
		d, scale, ok := parseNumber(strings.TrimSpace(s))
		if !ok {
			return valueError("cannot cast %q to %s: not a number", clip(s), out.t)
		}
		r, ok := rescale(d, scale, int(out.t.scale))
		if !ok || !fitsWidth(r, out.t) {
			return outOfRange(strconv.Quote(s), typString, out.t)
		}
		out.decs[k] = r
	case tDate, tTimestamp, tTimestampTZ:
		us, err := stringToTime(s, out.t)
		if err != nil {
			return err
		}
		out.ints[k] = us
	case tString:
		out.strs[k] = s
	default:
		return valueError("cannot cast VARCHAR to %s", out.t)
	}
	return nil
}

// stringToTime reads a string as a DATE, TIMESTAMP or TIMESTAMP WITH
// TIME ZONE. An offset moves a TIMESTAMP WITH TIME ZONE to UTC; a
// TIMESTAMP has no time zone, and DuckDB drops an offset written in one
// (2026-01-02 04:00+01 is 04:00), which would silently differ from what
// was meant: anything but a zero offset is refused there.
func stringToTime(s string, t sqlType) (int64, error) {
	p, err := timestamp.Scan(s)
	if err != nil {
		return 0, valueError("%v", err)
	}
	switch {
	case t.id == tDate:
		return floorDay(p.Micros + int64(p.Offset)*microsPerSecond), nil
	case p.SpacedZone && p.Offset != 0:
		return 0, valueError("%v", timestamp.SpacedOffsetError(s))
	case t.id == tTimestamp && p.Offset != 0:
		return 0, valueError("%q: a TIMESTAMP has no time zone, so its offset would be ignored; write TIMESTAMPTZ %s to apply it, or leave the offset out",
			clip(s), quoteSQL(s))
	case !timestamp.InRange(p.Micros):
		return 0, valueError("%v", timestamp.RangeError(s))
	}
	return p.Micros, nil
}

func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// parseBool reads the words DuckDB casts to BOOLEAN.
func parseBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "true", "t", "yes", "y", "1":
		return true, true
	case "false", "f", "no", "n", "0":
		return false, true
	}
	return false, false
}

// parseInteger reads a string as DuckDB casts one to an integer: blanks
// around it, a sign, 0x or 0b prefixes, _ between digits, and a fraction
// or exponent rounded half away from zero ('2.5' is 3).
func parseInteger(s string) (int64, error) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	body := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if len(body) > 2 && body[0] == '0' && strings.ContainsRune("xXbB", rune(body[1])) {
		base := 16
		if body[1] == 'b' || body[1] == 'B' {
			base = 2
		}
		u, err := strconv.ParseUint(body[2:], base, 64)
		if err != nil || u > 1<<63 || !neg && u == 1<<63 {
			return 0, valueError("%q is not an integer", s)
		}
		if neg {
			return -int64(u), nil
		}
		return int64(u), nil
	}
	d, scale, ok := parseNumber(s)
	if !ok {
		return 0, valueError("%q is not an integer", s)
	}
	r, ok := rescale(d, scale, 0)
	if !ok {
		return 0, valueError("%q is out of range", s)
	}
	n, ok := r.int64()
	if !ok {
		return 0, valueError("%q is out of range", s)
	}
	return n, nil
}

// parseNumber reads a numeral exactly: a sign, digits (with _ between
// them), a fraction and an exponent, as an unscaled value and a scale
// (negative for a value times a power of ten). ok is false for anything
// else and beyond 38 digits.
func parseNumber(s string) (i128, int, bool) {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 100 || e < -100 {
			return i128{}, 0, false
		}
		mant, exp = s[:i], e
	}
	if strings.Contains(mant, "_") {
		for i := 0; i < len(mant); i++ {
			if mant[i] == '_' && (i == 0 || i == len(mant)-1 || !isDigit(mant[i-1]) || !isDigit(mant[i+1])) {
				return i128{}, 0, false
			}
		}
		mant = strings.ReplaceAll(mant, "_", "")
	}
	d, scale, ok := parseDecimalDigits(mant)
	if !ok {
		return i128{}, 0, false
	}
	scale -= exp
	if scale < 0 {
		r, ok := d.scaleUp(-scale)
		return r, 0, ok
	}
	if scale > maxDecimalDigits {
		return d.scaleDown(scale - maxDecimalDigits), maxDecimalDigits, true
	}
	return d, scale, true
}

// parseFloat reads a float as strconv.ParseFloat does, and a signed NaN
// (-nan, +NaN) as DuckDB does, keeping its sign.
func parseFloat(s string, bits int) (float64, error) {
	f, err := strconv.ParseFloat(s, bits)
	if err != nil && len(s) == 4 && (s[0] == '-' || s[0] == '+') && strings.EqualFold(s[1:], "nan") {
		if s[0] == '-' {
			return math.Copysign(math.NaN(), -1), nil
		}
		return math.NaN(), nil
	}
	return f, err
}

// formatFloat writes a float as DuckDB casts one to VARCHAR: the shortest
// digits that read back the same value (of a FLOAT, for single), in plain
// notation with at least one decimal (1.0) for exponents -4 to 15, in
// exponent notation (1e+16, 1e-05) beyond; nan, inf, -inf.
func formatFloat(f float64, single bool) string {
	switch {
	case math.IsNaN(f) && math.Signbit(f):
		return "-nan" // see defaultNaN
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	bits := 64
	if single {
		bits = 32
	}
	e := strconv.FormatFloat(f, 'e', -1, bits)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, bits)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// formatList writes a list as DuckDB casts one to VARCHAR: [a, b, NULL],
// strings quoted when they hold separators, spaces or nothing.
func formatList(x *vec, j int) string {
	var b strings.Builder
	b.WriteByte('[')
	el := x.elems
	for e := x.offs[j]; e < x.offs[j+1]; e++ {
		if e > x.offs[j] {
			b.WriteString(", ")
		}
		k := int(e)
		if !el.valid(k) {
			b.WriteString("NULL")
			continue
		}
		tmp := newVec(typString, 1, 1)
		if el.t.id == tList {
			tmp.strs[0] = formatList(el, k)
		} else if err := castValue(el, k, tmp, 0); err != nil {
			tmp.strs[0] = "?"
		}
		s := tmp.strs[0]
		if el.t.id == tString || el.t.temporal() {
			if s == "" || strings.ContainsAny(s, " \t\n,[]{}()'\"\\:") || strings.EqualFold(s, "null") {
				s = "'" + strings.ReplaceAll(s, "'", "\\'") + "'"
			}
		}
		b.WriteString(s)
	}
	b.WriteByte(']')
	return b.String()
}
