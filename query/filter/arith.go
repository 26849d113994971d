package filter

import (
	"math"
	"math/bits"
)

// arithOp is an arithmetic operator.
type arithOp uint8

const (
	opAdd arithOp = iota
	opSub
	opMul
	opDiv    // /: DOUBLE (or FLOAT) division, even of integers
	opIntDiv // //: integer division, truncating
	opMod
)

var arithOps = map[string]arithOp{"+": opAdd, "-": opSub, "*": opMul, "/": opDiv, "//": opIntDiv, "%": opMod}
var arithNames = [...]string{opAdd: "+", opSub: "-", opMul: "*", opDiv: "/", opIntDiv: "//", opMod: "%"}

// arithExpr is l op r. The binder casts the operands: to the result type
// for integers and floats, to DECIMALs (of their own scales) for
// decimals.
type arithExpr struct {
	op   arithOp
	l, r expr
	t    sqlType
	// narrowed says the DECIMAL type t has fewer digits than the exact
	// sum or product may need (see decimalResult): a result that does
	// not fit in them fails.
	narrowed bool
}

func (a *arithExpr) typ() sqlType { return a.t }

func (a *arithExpr) eval(b *batch) *vec {
	l, r := a.l.eval(b), a.r.eval(b)
	out := result(a.t, b.n, l, r)
	for i := range out.size(b.n) {
		if !out.inherit(i, l, r) {
			continue
		}
		j := i * out.step
		li, ri := i*l.step, i*r.step
		switch a.t.id {
		case tInt32, tInt64:
			v, null, err := intArith(a.op, l.ints[li], r.ints[ri], a.t)
			if out.settle(j, null, err) {
				out.ints[j] = v
			}
		case tFloat32, tFloat64:
			if a.op == opIntDiv && r.flts[ri] == 0 {
				out.setNull(j) // // by zero is NULL, for floats too
				continue
			}
			out.flts[j] = floatArith(a.op, l.flts[li], r.flts[ri], a.t.id == tFloat32)
		case tDecimal:
			v, null, err := decimalArith(a.op, l.decs[li], int(l.t.scale), r.decs[ri], int(r.t.scale), a.t)
			if out.settle(j, null, err) {
				out.decs[j] = v
			}
		}
	}
	return out
}

// settle marks value j failed (err) or NULL, or reports that it takes
// the computed value.
func (out *vec) settle(j int, null bool, err error) bool {
	switch {
	case err != nil:
		out.fail(j, err)
	case null:
		out.setNull(j)
	default:
		return true
	}
	return false
}

func overflow(op string, x, y int64, t sqlType) error {
	return valueError("integer overflow: %d %s %d does not fit in %s", x, op, y, t)
}

// intArith computes x op y in an integer type, failing where DuckDB
// reports an overflow; division and remainder by zero are NULL.
func intArith(op arithOp, x, y int64, t sqlType) (int64, bool, error) {
	var v int64
	switch op {
	case opAdd:
		v = x + y
		if (v > x) != (y > 0) {
			return 0, false, overflow("+", x, y, t)
		}
	case opSub:
		v = x - y
		if (v < x) != (y > 0) {
			return 0, false, overflow("-", x, y, t)
		}
	case opMul:
		hi, lo := bits.Mul64(magnitude(x), magnitude(y))
		neg := (x < 0) != (y < 0)
		if hi != 0 || lo > 1<<63 || lo == 1<<63 && !neg {
			return 0, false, overflow("*", x, y, t)
		}
		v = int64(lo)
		if neg {
			v = -v
		}
	case opIntDiv, opMod:
		if y == 0 {
			return 0, true, nil
		}
		if y == -1 && (x == math.MinInt64 || t.id == tInt32 && x == math.MinInt32) {
			return 0, false, valueError("integer overflow: %d %s -1 does not fit in %s", x, arithNames[op], t)
		}
		if op == opIntDiv {
			v = x / y
		} else {
			v = x % y
		}
	}
	if t.id == tInt32 && (v < math.MinInt32 || v > math.MaxInt32) {
		return 0, false, overflow(arithNames[op], x, y, t)
	}
	return v, false, nil
}

// magnitude is |x| (2^63 for the smallest int64).
func magnitude(x int64) uint64 {
	if x < 0 {
		return uint64(-x)
	}
	return uint64(x)
}

// floatArith computes x op y in DOUBLE, or in FLOAT (rounding the double
// result, which for + - * / is the correctly rounded float result). No
// float operation fails: 1/0 is infinity, 0/0 NaN, as in DuckDB; // of
// floats divides as / does (DuckDB's), but is NULL for a zero divisor.
func floatArith(op arithOp, x, y float64, single bool) float64 {
	var v float64
	switch op {
	case opAdd:
		v = x + y
	case opSub:
		v = x - y
	case opMul:
		v = x * y
	case opDiv, opIntDiv:
		v = x / y
	case opMod:
		v = fmod(x, y)
	}
	if single {
		v = float64(float32(v))
	}
	return v
}

// defaultNaN is the NaN an x86 processor makes of an invalid operation
// (inf - inf, 0 * inf, 0 / 0): its sign bit is set, which a cast to
// VARCHAR shows (-nan). + - * / of floats give it here as in DuckDB, both
// being the processor's own instructions.
var defaultNaN = math.Float64frombits(0xfff8000000000000)

// fmod is x % y of floats as DuckDB computes it (C's fmod): math.Mod's
// remainder, and the same NaN, sign included, where math.Mod gives a NaN
// of its own: a NaN operand's when one is (when both are, negative only if
// both are), and defaultNaN for an infinite x or a zero y.
func fmod(x, y float64) float64 {
	xn, yn := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xn && yn && math.Signbit(x) && math.Signbit(y):
		return x
	case xn && yn:
		return math.Abs(x)
	case xn:
		return x
	case yn:
		return y
	case math.IsInf(x, 0) || y == 0:
		return defaultNaN
	}
	return math.Mod(x, y)
}

// decimalArith computes x op y for decimals of scales xs and ys into
// type t (whose scale the binder chose: the larger for + - %, the sum
// for *); a remainder by zero is NULL, a result with more digits than t
// has fails.
func decimalArith(op arithOp, x i128, xs int, y i128, ys int, t sqlType) (i128, bool, error) {
	fail := func() (i128, bool, error) {
		return i128{}, false, valueError("decimal overflow: %s %s %s does not fit in %s",
			formatDecimal(x, xs), arithNames[op], formatDecimal(y, ys), t)
	}
	if op == opMul {
		v, ok := x.mul(y)
		if !ok || !v.fits(int(t.width)) {
			return fail()
		}
		return v, false, nil
	}
	s := int(t.scale)
	x2, ok1 := x.scaleUp(s - xs)
	y2, ok2 := y.scaleUp(s - ys)
	if !ok1 || !ok2 {
		return fail()
	}
	var v i128
	switch op {
	case opAdd:
		v = x2.add(y2)
	case opSub:
		v = x2.sub(y2)
	case opMod:
		if y2.isZero() {
			return i128{}, true, nil
		}
		_, v = x2.quoRem(y2)
	}
	if !v.fits(int(t.width)) {
		return fail()
	}
	return v, false, nil
}

// negExpr is -x.
type negExpr struct{ x expr }

func (n *negExpr) typ() sqlType { return n.x.typ() }

func (n *negExpr) eval(b *batch) *vec {
	return signOp(n.x.eval(b), b.n, "-(%d)", func(v int64) int64 { return -v },
		func(f float64) float64 { return -f }, i128.neg)
}

// signOp computes -x or abs(x): an integer of the smallest value of its
// type has no such value in it, and fails (name formats the message).
func signOp(x *vec, n int, name string, fi func(int64) int64, ff func(float64) float64, fd func(i128) i128) *vec {
	out := result(x.t, n, x)
	for i := range out.size(n) {
		if !out.inherit(i, x) {
			continue
		}
		j, k := i*out.step, i*x.step
		switch x.t.id {
		case tInt32, tInt64:
			v := x.ints[k]
			if v == math.MinInt64 || x.t.id == tInt32 && v == math.MinInt32 {
				out.fail(j, valueError("integer overflow: "+name+" does not fit in %s", v, x.t))
				continue
			}
			out.ints[j] = fi(v)
		case tFloat32, tFloat64:
			out.flts[j] = ff(x.flts[k])
		case tDecimal:
			out.decs[j] = fd(x.decs[k])
		}
	}
	return out
}
