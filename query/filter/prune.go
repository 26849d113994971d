package filter

import "math"

// ColumnStats summarises the values of one column over a group of rows
// (an episode, a Parquet row group): every non-null value lies within
// [Min, Max]. A column whose value is the same in every row (a partition
// column, the episode id) has Min == Max and no nulls.
type ColumnStats struct {
	// HasRange says Min and Max are known.
	HasRange bool
	Min, Max Value
	// Nulls counts the null values; -1 when unknown.
	Nulls int64
	// Rows counts the rows of the group; -1 when unknown.
	Rows int64
}

// Exactly returns the statistics of a column that holds v in every one of
// rows rows.
func Exactly(v Value, rows int64) ColumnStats {
	return ColumnStats{HasRange: true, Min: v, Max: v, Nulls: 0, Rows: rows}
}

// StatsFunc returns the statistics of a column, or false when none are
// known.
type StatsFunc func(column string) (ColumnStats, bool)

// Decision is what statistics say about a group of rows.
type Decision uint8

const (
	// Some rows may match: the rows must be read and evaluated.
	Some Decision = iota
	// None of the rows can match.
	None
	// All rows match.
	All
)

func (d Decision) String() string {
	return [...]string{Some: "some", None: "none", All: "all"}[d]
}

// Prune decides from statistics whether no row, every row, or perhaps
// some rows of a group match. It never errs towards None or All: unknown
// statistics give Some, and so does a group where a value might fail
// (evaluation must report that as DuckDB would).
func (f *Filter) Prune(stats StatsFunc) Decision {
	st := &statsScope{stats: stats}
	set := f.root.bounds(st).tri
	switch {
	case set&(setT|setE) == 0:
		return None
	case set == setT:
		return All
	}
	return Some
}

// Sets of the possible outcomes of a condition.
const (
	setF   uint8 = 1 << triF
	setT   uint8 = 1 << triT
	setN   uint8 = 1 << triN
	setE   uint8 = 1 << triE
	setAny       = setF | setT | setN
)

// abstract describes the values an expression may take over a group of
// rows: a range of valid values (lo and hi are constants of the
// expression's type), whether a row may be NULL, hold a value, or fail;
// a condition by the set of outcomes it may have.
type abstract struct {
	hasRange bool
	lo, hi   *vec
	mayNull  bool
	mayValue bool
	mayFail  bool
	tri      uint8
}

type statsScope struct {
	stats StatsFunc
}

// unknownOf is what nothing is known of but whether e's operands may fail.
func unknownOf(e expr, st *statsScope) abstract {
	a := abstract{mayNull: true, mayValue: true, tri: setAny}
	for _, c := range children(e) {
		if c.bounds(st).mayFail {
			a.mayFail = true
		}
	}
	if a.mayFail {
		a.tri |= setE
	}
	return a
}

// condition completes the abstract of a condition from its outcomes.
func condition(tri uint8) abstract {
	return abstract{tri: tri, mayNull: tri&setN != 0, mayValue: tri&(setT|setF) != 0, mayFail: tri&setE != 0}
}

func (c *constExpr) bounds(*statsScope) abstract {
	v := c.v
	if v.isNull(0) {
		return abstract{mayNull: true, tri: setN}
	}
	a := abstract{hasRange: true, lo: v, hi: v, mayValue: true}
	if v.t.id == tBool {
		a.tri = setF
		if v.tri[0] == triT {
			a.tri = setT
		}
	}
	return a
}

func (c *colExpr) bounds(st *statsScope) abstract {
	s, ok := st.stats(c.name)
	if !ok {
		return abstract{mayNull: true, mayValue: true, tri: setAny}
	}
	a := abstract{
		mayNull:  s.Nulls != 0,
		mayValue: s.Nulls < 0 || s.Rows < 0 || s.Nulls < s.Rows,
	}
	if s.HasRange && a.mayValue && c.t.id != tList {
		lo, ok1 := statVec(s.Min, c.t)
		hi, ok2 := statVec(s.Max, c.t)
		if ok1 && ok2 {
			a.hasRange, a.lo, a.hi = true, lo, hi
		}
	}
	switch {
	case c.t.id != tBool:
		a.tri = setAny
	default:
		if a.mayNull {
			a.tri |= setN
		}
		if a.mayValue {
			if !a.hasRange || a.hi.tri[0] == triT {
				a.tri |= setT
			}
			if !a.hasRange || a.lo.tri[0] == triF {
				a.tri |= setF
			}
		}
	}
	return a
}

// statVec converts a statistics value to a constant of type t; values of
// another kind are ignored rather than trusted.
func statVec(v Value, t sqlType) (*vec, bool) {
	if v.Kind != t.kind() {
		return nil, false
	}
	out := newVec(t, 1, 0)
	switch t.id {
	case tBool:
		out.tri[0] = boolTri(v.Bool)
	case tInt32, tInt64, tDate, tTimestamp, tTimestampTZ:
		out.ints[0] = v.Int
	case tFloat32, tFloat64:
		if math.IsNaN(v.Float) {
			return nil, false
		}
		out.flts[0] = v.Float
	case tString:
		out.strs[0] = v.Str
	default:
		return nil, false
	}
	return out, true
}

// compareSets returns the possible outcomes of a op b for two abstracts
// of one type.
func compareSets(op cmpOp, a, b abstract) uint8 {
	var s uint8
	if a.mayFail || b.mayFail {
		s |= setE
	}
	if a.mayNull || b.mayNull {
		s |= setN
	}
	if !a.mayValue || !b.mayValue {
		return s | setN
	}
	if !a.hasRange || !b.hasRange {
		return s | setT | setF
	}
	c := func(x, y *vec) int { return compareValuesAt(x, 0, y, 0) }
	overlap := c(a.lo, b.hi) <= 0 && c(b.lo, a.hi) <= 0
	single := c(a.lo, a.hi) == 0 && c(b.lo, b.hi) == 0 && c(a.lo, b.lo) == 0
	var t, f bool
	switch op {
	case opEQ:
		t, f = overlap, !single
	case opNE:
		t, f = !single, overlap
	case opLT:
		t, f = c(a.lo, b.hi) < 0, c(a.hi, b.lo) >= 0
	case opLE:
		t, f = c(a.lo, b.hi) <= 0, c(a.hi, b.lo) > 0
	case opGT:
		t, f = c(a.hi, b.lo) > 0, c(a.lo, b.hi) <= 0
	case opGE:
		t, f = c(a.hi, b.lo) >= 0, c(a.lo, b.hi) < 0
	}
	if t {
		s |= setT
	}
	if f {
		s |= setF
	}
	return s
}

func (c *cmpExpr) bounds(st *statsScope) abstract {
	return condition(compareSets(c.op, c.l.bounds(st), c.r.bounds(st)))
}

// combine returns the possible outcomes of a table applied to two sets.
func combine(a, b uint8, table *[16]uint8) uint8 {
	var s uint8
	for x := uint8(0); x < 4; x++ {
		if a&(1<<x) == 0 {
			continue
		}
		for y := uint8(0); y < 4; y++ {
			if b&(1<<y) != 0 {
				s |= 1 << table[x*4+y]
			}
		}
	}
	return s
}

func (l *logicExpr) bounds(st *statsScope) abstract {
	table := l.table()
	set := func(e expr) uint8 {
		s := e.bounds(st).tri
		if l.selecting {
			s = mapSet(s, &selectTri)
		}
		return s
	}
	acc := set(l.terms[0])
	for _, t := range l.terms[1:] {
		acc = combine(acc, set(t), table)
	}
	return condition(acc)
}

func mapSet(s uint8, table *[4]uint8) uint8 {
	var out uint8
	for x := uint8(0); x < 4; x++ {
		if s&(1<<x) != 0 {
			out |= 1 << table[x]
		}
	}
	return out
}

func (n *notExpr) bounds(st *statsScope) abstract {
	return condition(mapSet(n.x.bounds(st).tri, &notTable))
}

func (n *isNullExpr) bounds(st *statsScope) abstract {
	a := n.x.bounds(st)
	if n.x.typ().id == tBool {
		a.mayNull, a.mayValue, a.mayFail = a.tri&setN != 0, a.tri&(setT|setF) != 0, a.tri&setE != 0
	}
	var s uint8
	if a.mayNull {
		s |= boolSet(!n.not)
	}
	if a.mayValue {
		s |= boolSet(n.not)
	}
	if a.mayFail {
		s |= setE
	}
	return condition(s)
}

func boolSet(b bool) uint8 {
	if b {
		return setT
	}
	return setF
}

func (n *isTruthExpr) bounds(st *statsScope) abstract {
	x := n.x.bounds(st).tri
	want := boolSet(n.truth)
	var s uint8
	if x&want != 0 {
		s |= boolSet(!n.not)
	}
	if x&^want&setAny != 0 {
		s |= boolSet(n.not)
	}
	if x&setE != 0 {
		s |= setE
	}
	return condition(s)
}

func (d *distinctExpr) bounds(st *statsScope) abstract {
	a := unknownOf(d, st)
	return condition(a.tri &^ setN)
}

func (n *inExpr) bounds(st *statsScope) abstract {
	a := n.x.bounds(st)
	var s uint8
	if a.mayFail {
		s |= setE
	}
	if a.mayNull {
		s |= setN
	}
	if !a.mayValue {
		return condition(s | setN)
	}
	miss := setF
	if n.hasNull {
		miss = setN
	}
	vals := n.values
	if !a.hasRange {
		s |= setT | miss
	} else {
		for i := 0; i < vals.len(); i++ {
			if compareValuesAt(a.lo, 0, vals, i) <= 0 && compareValuesAt(vals, i, a.hi, 0) <= 0 {
				s |= setT
				break
			}
		}
		// Every row misses unless the range is one listed value.
		if !(compareValuesAt(a.lo, 0, a.hi, 0) == 0 && n.hit(a.lo, 0)) {
			s |= miss
		}
	}
	if n.not {
		s = mapSet(s, &notTable)
	}
	return condition(s)
}

func (n *likeExpr) bounds(st *statsScope) abstract {
	a := n.x.bounds(st)
	var s uint8
	if a.mayFail {
		s |= setE
	}
	if !a.mayValue {
		return condition(s | setN)
	}
	if a.mayNull {
		s |= setN
	}
	if !a.hasRange || n.ilike {
		return condition(s | setT | setF)
	}
	lo, hi := a.lo.strs[0], a.hi.strs[0]
	if lo == hi {
		// One value for the whole group (a partition, an episode id):
		// decide exactly.
		return condition(s | boolSet(n.m.match(lo)))
	}
	s |= setF
	if n.m.prefix == "" {
		return condition(s | setT)
	}
	// Strings with the prefix lie in [prefix, prefix+1): true is
	// possible only if that range meets [lo, hi].
	p := n.m.prefix
	if p > hi {
		return condition(s)
	}
	if end, ok := prefixEnd(p); ok && end <= lo {
		return condition(s)
	}
	return condition(s | setT)
}

// prefixEnd returns the smallest string greater than every string that
// starts with p, or false when there is none (p is all 0xff bytes).
func prefixEnd(p string) (string, bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

func (c *constOrNullExpr) bounds(st *statsScope) abstract {
	a := c.x.bounds(st)
	var s uint8
	if a.mayValue {
		s |= boolSet(c.v)
	}
	if a.mayNull {
		s |= setN
	}
	if a.mayFail {
		s |= setE
	}
	return condition(s)
}

// castExpr: numeric casts, and those between times, keep order (rounding
// is monotonic), so the range casts with its ends; if both ends convert,
// so does every value between them. Other casts know nothing.
func (c *castExpr) bounds(st *statsScope) abstract {
	a := c.x.bounds(st)
	from := c.x.typ()
	out := abstract{mayNull: a.mayNull || c.try, mayValue: a.mayValue, mayFail: a.mayFail || !c.try && a.mayValue && mayFailCast(from, c.to)}
	monotonic := (from.numeric() || from.id == tBool) && c.to.numeric() || from.temporal() && c.to.temporal()
	if monotonic && a.hasRange {
		lo, hi := castVec(a.lo, c.to, false), castVec(a.hi, c.to, false)
		if !lo.isBad(0) && !hi.isBad(0) {
			out.hasRange, out.lo, out.hi, out.mayFail = true, lo, hi, a.mayFail
		}
	}
	if c.to.id == tBool {
		out.hasRange = false
		out.tri = setAny
		if out.mayFail {
			out.tri |= setE
		}
	}
	return out
}

// mayFailCast reports whether some value of type from may fail to cast to
// type to.
func mayFailCast(from, to sqlType) bool {
	switch {
	case from.equal(to), from.id == tNull, to.id == tString && from.id != tList, to.id == tBool && from.id != tString:
		return false
	case from.id == tString:
		return true
	case from.id == tList:
		return to.id != tString && mayFailCast(*from.elem, *to.elem)
	case from.temporal():
		return false
	case from.id == tBool:
		return false
	case to.id == tFloat64:
		return false
	case to.id == tInt64:
		return !from.integer()
	case to.id == tFloat32:
		return from.id == tFloat64
	}
	return true
}

// integer arithmetic: the range of x op y from the ranges of x and y,
// computed in 128 bits; where it leaves the type, a row may fail.
func (a *arithExpr) bounds(st *statsScope) abstract {
	l, r := a.l.bounds(st), a.r.bounds(st)
	out := abstract{mayNull: l.mayNull || r.mayNull, mayValue: l.mayValue && r.mayValue, mayFail: l.mayFail || r.mayFail}
	switch {
	case a.t.floating():
		// // by zero is NULL for floats too.
		out.mayNull = out.mayNull || a.op == opIntDiv
		return out
	case a.t.id == tDecimal:
		out.mayFail = out.mayFail || a.narrowed
		out.mayNull = out.mayNull || a.op == opMod || a.op == opIntDiv
		return out
	}
	if !l.hasRange || !r.hasRange {
		out.mayFail = true
		out.mayNull = out.mayNull || a.op == opMod || a.op == opIntDiv
		return out
	}
	x0, x1 := i128From(l.lo.ints[0]), i128From(l.hi.ints[0])
	y0, y1 := i128From(r.lo.ints[0]), i128From(r.hi.ints[0])
	var lo, hi i128
	switch a.op {
	case opAdd:
		lo, hi = x0.add(y0), x1.add(y1)
	case opSub:
		lo, hi = x0.sub(y1), x1.sub(y0)
	case opMul:
		p := []i128{mul128(x0, y0), mul128(x0, y1), mul128(x1, y0), mul128(x1, y1)}
		lo, hi = p[0], p[0]
		for _, v := range p[1:] {
			if v.cmp(lo) < 0 {
				lo = v
			}
			if v.cmp(hi) > 0 {
				hi = v
			}
		}
	case opMod:
		// x % y with y > 0 lies in [0, y-1] for x >= 0.
		if y0.cmp(i128From(0)) > 0 && x0.cmp(i128From(0)) >= 0 {
			lo, hi = i128From(0), y1.sub(i128From(1))
			if x1.cmp(hi) < 0 {
				hi = x1
			}
			if x1.cmp(y0) < 0 {
				lo = x0
			}
			return withRange(out, lo, hi, a.t)
		}
		out.mayFail = true
		out.mayNull = true
		return out
	default:
		out.mayFail = true
		out.mayNull = true
		return out
	}
	return withRange(out, lo, hi, a.t)
}

// mul128 multiplies two int64 values in 128 bits (it cannot overflow).
func mul128(x, y i128) i128 {
	v, _ := x.mul(y)
	return v
}

// withRange sets a range in 128 bits, or marks a failure where it leaves
// the integer type t.
func withRange(out abstract, lo, hi i128, t sqlType) abstract {
	l, ok1 := lo.int64()
	h, ok2 := hi.int64()
	if !ok1 || !ok2 || t.id == tInt32 && (l < math.MinInt32 || h > math.MaxInt32) {
		out.mayFail = true
		return out
	}
	out.hasRange, out.lo, out.hi = true, constInt(l, t).v, constInt(h, t).v
	return out
}

func (n *negExpr) bounds(st *statsScope) abstract {
	a := n.x.bounds(st)
	out := abstract{mayNull: a.mayNull, mayValue: a.mayValue, mayFail: a.mayFail}
	if !a.hasRange || !a.lo.t.integer() {
		out.mayFail = out.mayFail || n.x.typ().integer()
		return out
	}
	return withRange(out, i128From(a.hi.ints[0]).neg(), i128From(a.lo.ints[0]).neg(), a.lo.t)
}

func (n *absExpr) bounds(st *statsScope) abstract {
	a := n.x.bounds(st)
	out := abstract{mayNull: a.mayNull, mayValue: a.mayValue, mayFail: a.mayFail}
	if !a.hasRange || !a.lo.t.integer() {
		out.mayFail = out.mayFail || n.x.typ().integer()
		return out
	}
	lo, hi := i128From(a.lo.ints[0]), i128From(a.hi.ints[0])
	switch {
	case !lo.isNeg():
	case hi.isNeg():
		lo, hi = hi.neg(), lo.neg()
	default:
		m := lo.neg()
		if hi.cmp(m) > 0 {
			m = hi
		}
		lo, hi = i128From(0), m
	}
	return withRange(out, lo, hi, a.lo.t)
}

func (f *stringFunc) bounds(st *statsScope) abstract     { return unknownOf(f, st) }
func (l *lengthExpr) bounds(st *statsScope) abstract     { return unknownOf(l, st) }
func (c *coalesceExpr) bounds(st *statsScope) abstract   { return unknownOf(c, st) }
func (c *concatExpr) bounds(st *statsScope) abstract     { return unknownOf(c, st) }
func (c *listConcatExpr) bounds(st *statsScope) abstract { return unknownOf(c, st) }
func (l *listLitExpr) bounds(st *statsScope) abstract    { return unknownOf(l, st) }
func (c *containsExpr) bounds(st *statsScope) abstract   { return unknownOf(c, st) }
func (e *extractExpr) bounds(st *statsScope) abstract    { return unknownOf(e, st) }
func (p *plannedFailure) bounds(st *statsScope) abstract { return unknownOf(p, st) }
