package filter

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
// statistics give Some.
func (f *Filter) Prune(stats StatsFunc) Decision {
	st := &statsScope{stats: stats}
	set := f.root.bounds(st).tri
	switch {
	case set&setT == 0:
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
	setAny       = setF | setT | setN
)

// abstract describes the values an expression may take over a group of
// rows: a range of non-null values and whether it may be NULL or not; a
// condition by the set of outcomes it may have.
type abstract struct {
	hasRange bool
	lo, hi   Value
	mayNull  bool
	mayValue bool
	tri      uint8 // conditions: the possible outcomes
}

var unknown = abstract{mayNull: true, mayValue: true, tri: setAny}

type statsScope struct {
	stats StatsFunc
}

func exact(v Value) abstract {
	if v.Kind == KindNull {
		return abstract{mayNull: true, tri: setN}
	}
	a := abstract{hasRange: true, lo: v, hi: v, mayValue: true}
	if v.Kind == KindBool {
		a.tri = setF
		if v.Bool {
			a.tri = setT
		}
	}
	return a
}

func (l *litExpr) bounds(*statsScope) abstract {
	if l.asBool {
		return abstract{mayNull: true, tri: setN}
	}
	return exact(l.v)
}

func (c *colExpr) bounds(st *statsScope) abstract {
	s, ok := st.stats(c.name)
	if !ok {
		return unknown
	}
	a := abstract{
		mayNull:  s.Nulls != 0,
		mayValue: s.Nulls < 0 || s.Rows < 0 || s.Nulls < s.Rows,
	}
	a.hasRange = s.HasRange && a.mayValue && c.k != KindList && rangeFits(s.Min, c.k) && rangeFits(s.Max, c.k)
	if a.hasRange {
		a.lo, a.hi = s.Min, s.Max
	}
	if c.k == KindBool {
		if a.mayNull {
			a.tri |= setN
		}
		if a.mayValue {
			if !a.hasRange || a.hi.Bool {
				a.tri |= setT
			}
			if !a.hasRange || !a.lo.Bool {
				a.tri |= setF
			}
		}
	} else {
		a.tri = setAny
	}
	return a
}

// rangeFits checks that a statistics value is of the column's kind (stats
// of another type are ignored rather than trusted).
func rangeFits(v Value, k Kind) bool {
	return v.Kind == k || (v.Kind.numeric() && k.numeric())
}

// compareSets returns the possible outcomes of a op b for two ranges.
func compareSets(op cmpOp, a, b abstract) uint8 {
	var s uint8
	if a.mayNull || b.mayNull {
		s |= setN
	}
	if !a.mayValue || !b.mayValue {
		return setN
	}
	if !a.hasRange || !b.hasRange {
		return s | setT | setF
	}
	c := func(x, y Value) int { return compareValues(x, y) }
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
	return abstract{tri: compareSets(c.op, c.l.bounds(st), c.r.bounds(st))}
}

func (l *logicExpr) bounds(st *statsScope) abstract {
	a, b := l.l.bounds(st).tri, l.r.bounds(st).tri
	table := &orTable
	if l.and {
		table = &andTable
	}
	var s uint8
	for x := uint8(0); x < 3; x++ {
		if a&(1<<x) == 0 {
			continue
		}
		for y := uint8(0); y < 3; y++ {
			if b&(1<<y) != 0 {
				s |= 1 << table[x*3+y]
			}
		}
	}
	return abstract{tri: s}
}

func mapSet(s uint8, table *[3]uint8) uint8 {
	var out uint8
	for x := uint8(0); x < 3; x++ {
		if s&(1<<x) != 0 {
			out |= 1 << table[x]
		}
	}
	return out
}

func (n *notExpr) bounds(st *statsScope) abstract {
	return abstract{tri: mapSet(n.x.bounds(st).tri, &notTable)}
}

func (n *isNullExpr) bounds(st *statsScope) abstract {
	a := n.x.bounds(st)
	if n.x.kind() == KindBool {
		a.mayNull, a.mayValue = a.tri&setN != 0, a.tri&(setT|setF) != 0
	}
	var s uint8
	if a.mayNull {
		s |= setT
	}
	if a.mayValue {
		s |= setF
	}
	if n.not {
		s = mapSet(s, &notTable)
	}
	return abstract{tri: s}
}

func (n *isTruthExpr) bounds(st *statsScope) abstract {
	x := n.x.bounds(st).tri
	want := setF
	if n.truth {
		want = setT
	}
	var s uint8
	if x&want != 0 {
		s |= setT
	}
	if x&^want != 0 {
		s |= setF
	}
	if n.not {
		s = mapSet(s, &notTable)
	}
	return abstract{tri: s}
}

func (n *inExpr) bounds(st *statsScope) abstract {
	a := n.x.bounds(st)
	var s uint8
	if a.mayNull {
		s |= setN
	}
	if !a.mayValue {
		return abstract{tri: setN}
	}
	miss := setF
	if n.hasNull {
		miss = setN
	}
	if !a.hasRange {
		s |= setT | miss
	} else {
		for _, v := range n.values {
			if compareValues(a.lo, v) <= 0 && compareValues(v, a.hi) <= 0 {
				s |= setT
				break
			}
		}
		// Every row misses unless the range is one listed value.
		if !(compareValues(a.lo, a.hi) == 0 && n.contains(a.lo)) {
			s |= miss
		}
	}
	if n.not {
		s = mapSet(s, &notTable)
	}
	return abstract{tri: s}
}

func (n *inExpr) contains(v Value) bool {
	for _, x := range n.values {
		if compareValues(x, v) == 0 {
			return true
		}
	}
	return false
}

func (n *likeExpr) bounds(st *statsScope) abstract {
	a := n.x.bounds(st)
	if !a.mayValue {
		return abstract{tri: setN}
	}
	var s uint8
	if a.mayNull {
		s |= setN
	}
	if !a.hasRange {
		return abstract{tri: s | setT | setF}
	}
	if compareValues(a.lo, a.hi) == 0 {
		// One value for the whole group (a partition, an episode id):
		// decide exactly.
		if n.m.match(a.lo.Str) {
			return abstract{tri: s | setT}
		}
		return abstract{tri: s | setF}
	}
	s |= setF
	if n.m.prefix == "" {
		return abstract{tri: s | setT}
	}
	// Strings with the prefix lie in [prefix, prefix+1): true is
	// possible only if that range meets [lo, hi].
	p := n.m.prefix
	if p > a.hi.Str {
		return abstract{tri: s}
	}
	if end, ok := prefixEnd(p); ok && end <= a.lo.Str {
		return abstract{tri: s}
	}
	return abstract{tri: s | setT}
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

func (c *callExpr) bounds(*statsScope) abstract {
	if c.k == KindBool {
		return abstract{tri: setAny}
	}
	return unknown
}
