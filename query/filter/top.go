package filter

import "slices"

// The filter's top AND, as DuckDB's optimizer plans it before anything is
// computed: which of its terms it computes inside the table scan, and
// what decides the whole filter at once. Both change only whether a value
// that cannot be computed fails the filter, never which rows match.

// markWhole marks the NOT IN chains that DuckDB computes whole (see
// logicExpr.whole): those of a term of the filter's top AND that reads
// one column. DuckDB pushes such a term into its table scan before it
// rewrites NOT IN lists into chains, and computes it there as written
// (big NOT IN (big, 1 + big) fails where 1 + big overflows); a term that
// reads several columns stays in a filter, where NOT IN becomes a chain
// (count NOT IN (count, 1 + big) does not).
func markWhole(root expr) {
	for _, t := range topTerms(root) {
		if readsOneColumn(t) {
			markNotIn(t)
		}
	}
}

// columnsRead adds the columns e reads to cols, and returns it.
func columnsRead(e expr, cols map[string]bool) map[string]bool {
	if c, ok := e.(*colExpr); ok {
		cols[c.name] = true
	}
	for _, ch := range children(e) {
		columnsRead(ch, cols)
	}
	return cols
}

// readsOneColumn reports whether e reads exactly one column.
func readsOneColumn(e expr) bool { return len(columnsRead(e, map[string]bool{})) == 1 }

// markNotIn marks every NOT IN chain in e whole.
func markNotIn(e expr) {
	if l, ok := e.(*logicExpr); ok && l.list && l.and {
		l.whole = true
	}
	for _, ch := range children(e) {
		markNotIn(ch)
	}
}

// topAnd returns the terms of the filter's top AND as bound, a BETWEEN
// among them as one chain: root alone when it is no AND, or a BETWEEN.
func topAnd(root expr) []expr {
	if l, ok := root.(*logicExpr); ok && l.and && !l.list && !l.between {
		return l.terms
	}
	return []expr{root}
}

// topTerms returns the terms of the filter's top AND, each comparison of
// a BETWEEN among them (DuckDB splits a BETWEEN into its two comparisons
// there).
func topTerms(root expr) []expr {
	var terms []expr
	for _, t := range topAnd(root) {
		if b, ok := t.(*logicExpr); ok && b.between {
			terms = append(terms, b.terms...)
		} else {
			terms = append(terms, t)
		}
	}
	return terms
}

// orderBetweens orders the two comparisons of each BETWEEN of the
// filter's top AND as DuckDB computes them: first one it computes inside
// its table scan (count BETWEEN -big AND -100 matches nothing, though
// -big overflows), then one that compares with no constant, then one that
// does (TRY_CAST(code AS DOUBLE) BETWEEN 3000000000 AND abs(big) fails
// where abs(big) overflows); written order where that does not decide.
func orderBetweens(root expr) {
	rank := func(e expr) int {
		switch {
		case scanned(e):
			return 0
		case !constantComparison(e):
			return 1
		}
		return 2
	}
	for _, t := range topAnd(root) {
		b, ok := t.(*logicExpr)
		if ok && b.between && len(b.terms) == 2 && rank(b.terms[1]) < rank(b.terms[0]) {
			b.terms[0], b.terms[1] = b.terms[1], b.terms[0]
		}
	}
}

// orderTopAnd orders the filter's top AND as DuckDB computes it where
// one of its terms may fail (canThrow), and marks it computed in that
// order: DuckDB's optimizer orders the filters it splits the AND into
// by cost only where none may fail. Its table scan computes a term of
// one column first, so that term comes first ((big - count) > 0 AND
// (count < -100 OR count IS NULL) matches nothing where big - count
// overflows), then the others as written: CAST(score AS DECIMAL(18,0)) >
// nums[0] AND label >= task fails where a score is 1e20, whatever
// label >= task is on its row. Where several terms are of one column
// and one of them may fail, the scan computes them in an order of its
// own, and the AND stays one whose filters run in any order.
func orderTopAnd(root expr) {
	l, ok := root.(*logicExpr)
	if !ok || !l.and || l.list || l.between || !slices.ContainsFunc(l.terms, canThrow) {
		return
	}
	var first, rest []expr
	for _, t := range l.terms {
		if readsOneColumn(t) {
			first = append(first, t)
			continue
		}
		if b, ok := t.(*logicExpr); ok && b.between && slices.ContainsFunc(b.terms, readsOneColumn) {
			return // the scan computes one of its comparisons, the filter the other
		}
		rest = append(rest, t)
	}
	if len(first) > 1 && slices.ContainsFunc(first, canThrow) {
		return
	}
	l.terms = append(first, rest...)
	l.ordered = true
}

// constantComparison reports whether e compares an expression with a
// constant.
func constantComparison(e expr) bool {
	c, ok := e.(*cmpExpr)
	return ok && (isConst(c.l) || isConst(c.r))
}

// comparedWith splits comparison c of an expression with a constant that
// is not NULL into the expression, the constant and the operator as seen
// from the expression (5 < x is x > 5); ok is false for any other
// comparison, one of an IN list and one already decided.
func comparedWith(c *cmpExpr) (x expr, k *constExpr, op cmpOp, ok bool) {
	if c.listed || c.op == decided {
		return nil, nil, 0, false
	}
	x, other, op := c.l, c.r, c.op
	if isConst(x) {
		x, other, op = c.r, c.l, op.flip()
	}
	k, ok = other.(*constExpr)
	if !ok || k.v.isNull(0) {
		return nil, nil, 0, false
	}
	return x, k, op, true
}

// scanned reports whether DuckDB computes comparison e inside its table
// scan, before its filter: an expression of one column compared with a
// constant that is not NULL, unless the expression may fail (canThrow).
// (DuckDB pushes one that may fail into its scan too where the scan has
// a filter already, and computes the scan's filters column by column;
// such a comparison is taken as computed in order.)
func scanned(e expr) bool {
	c, ok := e.(*cmpExpr)
	if !ok {
		return false
	}
	x, _, _, ok := comparedWith(c)
	return ok && readsOneColumn(x) && !canThrow(x)
}

// canThrow reports whether DuckDB takes e for an expression that may fail
// on some value: integer and decimal arithmetic and negation (overflow),
// abs (of any type), casts (TRY_CAST too) but those to VARCHAR and those
// that widen a number, and what it does not know.
func canThrow(e expr) bool {
	var self bool
	switch x := e.(type) {
	case *colExpr, *constExpr, *lengthExpr, *stringFunc, *concatExpr, *listConcatExpr, *listLitExpr,
		*containsExpr, *extractExpr, *coalesceExpr, *cmpExpr, *logicExpr, *notExpr, *isNullExpr,
		*isTruthExpr, *distinctExpr, *inExpr, *likeExpr:
	case *arithExpr:
		self = !x.t.floating()
	case *negExpr:
		self = !x.typ().floating()
	case *castExpr:
		self = x.try || !widens(x.x.typ(), x.to)
	default:
		return true
	}
	if self {
		return true
	}
	for _, c := range children(e) {
		if canThrow(c) {
			return true
		}
	}
	return false
}

// widens reports whether every value of type from casts to type to: to
// VARCHAR, or a number to a type that holds it (an integer to a wider
// integer or a float, a float or a decimal to DOUBLE).
func widens(from, to sqlType) bool {
	switch {
	case to.id == tString:
		return true
	case from.integer() && to.integer():
		return from.id == to.id || to.id == tInt64
	case from.integer() || from.id == tDecimal || from.id == tFloat32:
		return to.id == tFloat64 || to.id == tFloat32 && from.integer()
	}
	return from.equal(to)
}

// topDecided returns what decides the filter's top AND before anything
// is computed, in place of the filter, as DuckDB's optimizer decides it:
// a NULL or FALSE term (NULL AND CAST(3000000000 AS INTEGER) > n32
// matches nothing), or constant comparisons of one expression that no value
// meets (-big BETWEEN 40 AND 0 matches nothing, and -big is not computed
// where it overflows). Under an OR or a NOT, DuckDB computes them.
func topDecided(root expr) expr {
	terms := topTerms(root)
	if len(terms) == 1 && terms[0] == root {
		return root
	}
	for _, t := range terms {
		// Wherever it stands: (2147483647 * 7) > 5 AND 5 <= 4 matches
		// nothing, where under a NOT it fails.
		if c, ok := t.(*constExpr); ok && (c.isNull() || c.v.tri[0] == triF) {
			return c
		}
	}
	if emptyRange(terms) {
		v := newVec(typBool, 1, 0)
		v.tri[0] = triF
		return constant(v, false)
	}
	return root
}

// valueRange is what the constant comparisons of one expression allow.
type valueRange struct {
	x              expr
	lo, hi, eq     *vec
	loIncl, hiIncl bool
}

// maxRanges bounds the expressions emptyRange tells apart, each against
// every other: a 64 KB filter of 3,000 terms comparing 3,000 different
// expressions would otherwise take half a second to compile. A filter
// of more compares the rest without looking for empty ranges.
const maxRanges = 64

// emptyRange reports whether the comparisons with a constant (= < <= >
// >=) of some expression among terms leave it no value.
func emptyRange(terms []expr) bool {
	var ranges []*valueRange
	for _, t := range terms {
		c, ok := t.(*cmpExpr)
		if !ok || c.op == opNE {
			continue
		}
		x, kc, op, ok := comparedWith(c)
		if !ok || isConstant(x) || !kc.v.t.equal(x.typ()) {
			continue
		}
		var r *valueRange
		for _, o := range ranges {
			if sameExpr(o.x, x) {
				r = o
				break
			}
		}
		if r == nil {
			if len(ranges) == maxRanges {
				continue
			}
			r = &valueRange{x: x}
			ranges = append(ranges, r)
		}
		v := kc.v
		switch op {
		case opEQ:
			if r.eq != nil && compareValuesAt(r.eq, 0, v, 0) != 0 {
				return true
			}
			r.eq = v
		case opGT, opGE:
			// The tighter bound: the larger, or the exclusive one of equals.
			if r.lo == nil || tighter(compareValuesAt(v, 0, r.lo, 0), op == opGT) {
				r.lo, r.loIncl = v, op == opGE
			}
		case opLT, opLE:
			if r.hi == nil || tighter(-compareValuesAt(v, 0, r.hi, 0), op == opLT) {
				r.hi, r.hiIncl = v, op == opLE
			}
		}
	}
	for _, r := range ranges {
		if r.lo != nil && r.hi != nil {
			if c := compareValuesAt(r.lo, 0, r.hi, 0); c > 0 || c == 0 && !(r.loIncl && r.hiIncl) {
				return true
			}
		}
		if r.eq != nil && r.lo != nil {
			if c := compareValuesAt(r.eq, 0, r.lo, 0); c < 0 || c == 0 && !r.loIncl {
				return true
			}
		}
		if r.eq != nil && r.hi != nil {
			if c := compareValuesAt(r.eq, 0, r.hi, 0); c > 0 || c == 0 && !r.hiIncl {
				return true
			}
		}
	}
	return false
}

// tighter reports whether a bound beyond the one it is compared with by c
// (positive: further in), exclusive or not, is tighter than it.
func tighter(c int, exclusive bool) bool { return c > 0 || c == 0 && exclusive }

// sameExpr reports whether a and b compute the same value: the same
// expression, or columns, constants, casts, negations, abs and
// arithmetic that are alike.
func sameExpr(a, b expr) bool {
	if a == b {
		return true
	}
	switch x := a.(type) {
	case *colExpr:
		y, ok := b.(*colExpr)
		return ok && x.name == y.name
	case *constExpr:
		y, ok := b.(*constExpr)
		return ok && x.v.t.equal(y.v.t) && !x.v.isNull(0) && !y.v.isNull(0) && compareValuesAt(x.v, 0, y.v, 0) == 0
	case *negExpr:
		y, ok := b.(*negExpr)
		return ok && sameExpr(x.x, y.x)
	case *absExpr:
		y, ok := b.(*absExpr)
		return ok && sameExpr(x.x, y.x)
	case *castExpr:
		y, ok := b.(*castExpr)
		return ok && x.try == y.try && x.to.equal(y.to) && sameExpr(x.x, y.x)
	case *arithExpr:
		y, ok := b.(*arithExpr)
		return ok && x.op == y.op && x.t.equal(y.t) && sameExpr(x.l, y.l) && sameExpr(x.r, y.r)
	}
	return false
}
