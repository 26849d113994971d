package filter

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// simplifier remembers which expressions are constant: asking again at
// every level of a chain of 16,000 additions would take quadratic time.
// (Simplifying never changes whether an expression reads a column.)
type simplifier struct {
	constant map[expr]bool
	// notInOpen keeps a constant term of a NOT IN chain from deciding
	// it: the chain may yet be marked whole. held lists the chains whose
	// constant it kept from deciding.
	notInOpen bool
	held      []*logicExpr
}

// refold reports whether a NOT IN chain that a constant would have
// decided was held open and is not whole after all: the filter is then
// simplified again, for that constant to decide it.
func (s *simplifier) refold() bool {
	for _, l := range s.held {
		if !l.whole {
			return true
		}
	}
	return false
}

func (s *simplifier) isConstant(e expr) bool {
	if c, ok := s.constant[e]; ok {
		return c
	}
	c := true
	if _, ok := e.(*colExpr); ok {
		c = false
	} else {
		for _, ch := range children(e) {
			if !s.isConstant(ch) {
				c = false
				break
			}
		}
	}
	s.constant[e] = c
	return c
}

// simplify folds constants and decides comparisons of a column with a
// constant on the column's own values where that is exact, as DuckDB's
// optimizer does: count + 1 > 30 is count > 29, n32 * 2 = 21 is FALSE
// (or NULL), CAST(big AS INTEGER) = 0 is big = 0. So such a filter never
// fails on an overflow its answer does not depend on (DuckDB does not
// either), and statistics of the column decide it.
func (s *simplifier) simplify(e expr) expr {
	for _, c := range childRefs(e) {
		*c = s.simplify(*c)
	}
	if x, ok := e.(*cmpExpr); ok && !x.listed {
		for s.moveConstants(x) || s.unwrapCast(x) {
		}
		if r := decideConstant(x); r != nil {
			return r
		}
	}
	if d, ok := e.(*distinctExpr); ok {
		s.moveDistinct(d)
	}
	if c, ok := e.(*coalesceExpr); ok {
		if r := foldCoalesce(c); r != nil {
			return r
		}
	}
	if a, ok := e.(*arithExpr); ok && a.t.integer() {
		switch {
		case a.op == opMul:
			dropFactorsOfZero(a)
		case a.op == opIntDiv && isZero(a.r):
			// x // 0 is NULL without computing x, as DuckDB folds it.
			return constant(nullConst(a.t), false)
		}
	}
	if n, ok := e.(*isNullExpr); ok && neverNull(n.x) {
		// x IS NULL is FALSE, without computing x, as DuckDB's
		// statistics decide it: (2147483647 * 7) IS NULL does not fail.
		v := newVec(typBool, 1, 0)
		v.tri[0] = boolTri(n.not)
		return constant(v, false)
	}
	if l, ok := e.(*logicExpr); ok {
		if r := s.foldChain(l); r != nil {
			return r
		}
	}
	if strictNulls(e) && !isListed(e) && !s.failsBeforeNull(e) {
		for _, c := range children(e) {
			if isNullConst(c) {
				// NULL in, NULL out: the other operands are not needed
				// (nor can they fail), as DuckDB folds it.
				return constant(nullConst(e.typ()), false)
			}
		}
	}
	if _, ok := e.(*constExpr); ok || !s.isConstant(e) {
		return e
	}
	if v, ok := evalConstant(e); ok {
		c := constant(v, false)
		s.constant[c] = true
		return c
	}
	// A constant that fails stays as it is: a comparison above may still
	// decide without it (2147483647 + 1 > 0); checkConstants reports it
	// otherwise.
	return e
}

// foldChain folds the constant terms of an AND or OR chain as DuckDB's
// optimizer does, before anything is computed: a FALSE term makes an AND
// FALSE (a TRUE one an OR TRUE) wherever it stands, so the other terms
// are not needed and cannot fail; a TRUE term of an AND (FALSE of an OR)
// is dropped. A whole chain computes every term, so there a FALSE term
// decides nothing before the others are computed (nor, until markWhole,
// in a NOT IN chain), and nor does one after a constant that fails. It
// returns what replaces l, or nil to keep l.
func (s *simplifier) foldChain(l *logicExpr) expr {
	decides, neutral := triT, triF
	if l.and {
		decides, neutral = triF, triT
	}
	held := !l.whole && s.notInOpen && l.list && l.and
	terms := l.terms[:0:0]
	failedBefore := false
	for _, t := range l.terms {
		c, ok := t.(*constExpr)
		decider := ok && c.v.tri[0] == decides && !failedBefore
		switch {
		case decider && !l.whole && !held:
			return c
		case ok && c.v.tri[0] == neutral:
		default:
			if decider && held && (len(s.held) == 0 || s.held[len(s.held)-1] != l) {
				s.held = append(s.held, l)
			}
			// A constant that fails (not folded) before the deciding
			// one fails the chain, as DuckDB folds constants in order:
			// NOT ((2147483647 * 7) > 5 AND 5 <= 4) fails, NOT (5 <= 4
			// AND (2147483647 * 7) > 5) is TRUE. (The top AND is decided
			// by any FALSE term: see topDecided.)
			failedBefore = failedBefore || !l.list && !ok && s.isConstant(t)
			terms = append(terms, t)
		}
	}
	switch {
	case len(terms) == len(l.terms):
		return nil
	case len(terms) == 0:
		return l.terms[0] // every term is the neutral constant
	case len(terms) == 1:
		return terms[0]
	}
	l.terms = terms
	return l
}

// isListed reports whether e is a comparison of an IN list, whose
// operands DuckDB computes even against NULL (see binder.in).
func isListed(e expr) bool {
	c, ok := e.(*cmpExpr)
	return ok && c.listed
}

// strictNulls reports whether e is NULL wherever one of its operands is.
func strictNulls(e expr) bool {
	switch x := e.(type) {
	case *cmpExpr, *arithExpr, *negExpr, *absExpr, *castExpr, *stringFunc, *lengthExpr, *listConcatExpr,
		*containsExpr, *extractExpr, *likeExpr, *inExpr:
		return true
	case *concatExpr:
		return !x.skipNulls
	}
	return false
}

// childRefs returns where e keeps its subexpressions, so that
// simplifying can replace them.
func childRefs(e expr) []*expr {
	switch x := e.(type) {
	case *cmpExpr:
		return []*expr{&x.l, &x.r}
	case *logicExpr:
		return refsOf(x.terms)
	case *notExpr:
		return []*expr{&x.x}
	case *isNullExpr:
		return []*expr{&x.x}
	case *isTruthExpr:
		return []*expr{&x.x}
	case *distinctExpr:
		return []*expr{&x.l, &x.r}
	case *inExpr:
		return []*expr{&x.x}
	case *likeExpr:
		return []*expr{&x.x}
	case *castExpr:
		return []*expr{&x.x}
	case *arithExpr:
		return []*expr{&x.l, &x.r}
	case *negExpr:
		return []*expr{&x.x}
	case *absExpr:
		return []*expr{&x.x}
	case *stringFunc:
		return []*expr{&x.x}
	case *lengthExpr:
		return []*expr{&x.x}
	case *coalesceExpr:
		return refsOf(x.args)
	case *concatExpr:
		return refsOf(x.args)
	case *listConcatExpr:
		return []*expr{&x.l, &x.r}
	case *listLitExpr:
		return refsOf(x.elems)
	case *containsExpr:
		return []*expr{&x.list, &x.x}
	case *extractExpr:
		return []*expr{&x.list, &x.index}
	case *constOrNullExpr:
		return []*expr{&x.x}
	}
	return nil
}

func refsOf(es []expr) []*expr {
	out := make([]*expr, len(es))
	for i := range es {
		out[i] = &es[i]
	}
	return out
}

// children returns the subexpressions of e.
func children(e expr) []expr {
	refs := childRefs(e)
	out := make([]expr, len(refs))
	for i, r := range refs {
		out[i] = *r
	}
	return out
}

// isConstant reports whether e reads no column.
func isConstant(e expr) bool {
	if _, ok := e.(*colExpr); ok {
		return false
	}
	for _, c := range children(e) {
		if !isConstant(c) {
			return false
		}
	}
	return true
}

// evalConstant evaluates an expression of constants; ok is false when its
// value fails.
func evalConstant(e expr) (*vec, bool) {
	v := e.eval(constantBatch())
	if v.isBad(0) {
		return v, false
	}
	v.step = 0
	return v, true
}

// constantBatch is the one row expressions of constants are computed on.
func constantBatch() *batch {
	return &batch{n: 1, columns: func(string) arrow.Array { return nil }, cache: map[string]*vec{}}
}

// checkConstants reports a literal that does not convert to the type its
// place in the filter gives it ('abc' compared with an INTEGER column, a
// timestamp with a zone name, 'a' looked up in a list of FLOAT) and was
// not folded away: a mistake in the filter's types, refused before
// anything is read, whatever the rows; so is an IN of constants that
// fails (see plannedFailure). Any other constant that fails
// (2147483647 + 1, CAST(3000000000 AS INTEGER)) fails the filter only
// where it is computed, as in DuckDB: count > 100 AND count = 2147483647
// + 1 finds nothing where no count is above 100.
func (s *simplifier) checkConstants(e expr) error {
	if p, ok := e.(*plannedFailure); ok {
		return invalid("%v", p.err)
	}
	if c, ok := e.(*castExpr); ok && c.implicit && isConst(c.x) {
		if v := castVec(c.x.(*constExpr).v, c.to, false); v.isBad(0) {
			if c.context != "" {
				return invalid("%s: %v", c.context, v.errAt(0))
			}
			return invalid("%v", v.errAt(0))
		}
		return nil
	}
	for _, c := range children(e) {
		if err := s.checkConstants(c); err != nil {
			return err
		}
	}
	return nil
}

// failsBeforeNull reports a comparison whose left operand is a constant
// that fails and whose right one folded to NULL: DuckDB tries the left
// operand for the constant first, gives up where it fails, and computes
// the comparison, which fails (CAST(2147483647 * 2147483647 AS VARCHAR) <
// upper(NULL)); a NULL on the left decides it (upper(NULL) > CAST(...) is
// NULL).
func (s *simplifier) failsBeforeNull(e expr) bool {
	c, ok := e.(*cmpExpr)
	return ok && isNullConst(c.r) && s.failing(c.l)
}

// failing reports whether e, simplified, is a constant that fails:
// simplify folds every other constant into a constExpr.
func (s *simplifier) failing(e expr) bool { return s.isConstant(e) && !isConst(e) }

// constValue returns the value of a constant expression that does not
// fail.
func (s *simplifier) constValue(e expr) (*vec, bool) {
	if c, ok := e.(*constExpr); ok {
		return c.v, true
	}
	if !s.isConstant(e) {
		return nil, false
	}
	return evalConstant(e)
}

// constOrNullExpr is v where x is not NULL, NULL where it is: what a
// comparison becomes when it can only be v or NULL (x * 2 = 21).
type constOrNullExpr struct {
	x expr
	v bool
}

func (c *constOrNullExpr) typ() sqlType { return typBool }

func (c *constOrNullExpr) eval(b *batch) *vec {
	return predicate(c.x.eval(b), b.n, triN, func(int) bool { return c.v })
}

// decideConstant returns what a comparison moveConstants decided
// becomes, or nil.
func decideConstant(c *cmpExpr) expr {
	if c.op == decided {
		return &constOrNullExpr{x: c.l, v: c.r.(*constExpr).v.tri[0] == triT}
	}
	return nil
}

// decided is a pseudo-operator: the comparison is its right operand (a
// BOOLEAN constant) where its left is not NULL.
const decided cmpOp = 255

// constantSide splits a comparison into its constant operand (a valid
// value) and the other one; flipped is set when the constant is on the
// left.
func (s *simplifier) constantSide(c *cmpExpr) (k *vec, other expr, flipped bool, ok bool) {
	if v, isC := s.constValue(c.r); isC && !v.isNull(0) {
		return v, c.l, false, true
	}
	if v, isC := s.constValue(c.l); isC && !v.isNull(0) {
		return v, c.r, true, true
	}
	return nil, nil, false, false
}

// setSides puts the constant k and x back into c, on the sides they came
// from.
func setSides(c *cmpExpr, k *vec, x expr, flipped bool) {
	if flipped {
		c.l, c.r = constant(k, false), x
	} else {
		c.l, c.r = x, constant(k, false)
	}
}

// decide makes c the constant v where x is not NULL.
func decide(c *cmpExpr, x expr, v bool) {
	k := newVec(typBool, 1, 0)
	k.tri[0] = boolTri(v)
	c.op, c.l, c.r = decided, x, constant(k, false)
}

// moveConstants rewrites [x + c1] op c2 as x op [c2 - c1], and likewise
// for -, c1 - x and * (when c2 divides exactly), on integers (DuckDB's
// rule, for the same answers). It reports whether it changed c.
func (s *simplifier) moveConstants(c *cmpExpr) bool {
	if c.op == decided {
		return false
	}
	k, other, flipped, ok := s.constantSide(c)
	if !ok || !k.t.integer() {
		return false
	}
	a, ok := other.(*arithExpr)
	if !ok || !a.t.integer() || a.op != opAdd && a.op != opSub && a.op != opMul {
		return false
	}
	// Where both operands are constants whose sum or product fails, the
	// left one is moved, as DuckDB's matcher takes it: (1 + 2147483647) <
	// -7 is 2147483647 < -8, FALSE, while (2147483647 + 1) < -7 would be
	// 1 < -2147483654, which does not fit, and fails.
	var inner *vec
	var x expr
	innerRight := true
	if v, isC := s.constValue(a.l); isC {
		inner, x, innerRight = v, a.r, false
	} else if v, isC := s.constValue(a.r); isC {
		inner, x = v, a.l
	} else {
		return false
	}
	if inner.isNull(0) {
		return false
	}
	outer, in := i128From(k.ints[0]), i128From(inner.ints[0])
	var next i128
	flip := false
	switch {
	case a.op == opAdd:
		next = outer.sub(in)
	case a.op == opSub && innerRight:
		next = outer.add(in)
	case a.op == opSub:
		next, flip = in.sub(outer), true
	default: // *
		if in.isZero() {
			return false
		}
		q, r := outer.quoRem(in)
		if !r.isZero() {
			switch c.op {
			case opEQ, opNE:
				decide(c, x, c.op == opNE)
				return true
			}
			return false
		}
		next, flip = q, in.isNeg()
	}
	n, fits := next.int64()
	if fits && a.t.id == tInt32 && (n < -1<<31 || n > 1<<31-1) {
		fits = false
	}
	if !fits {
		switch {
		case c.op == opEQ:
			decide(c, x, false)
			return true
		case c.op == opNE && a.op == opMul:
			decide(c, x, true)
			return true
		}
		return false
	}
	if flip {
		c.op = c.op.flip()
	}
	setSides(c, constInt(n, a.t).v, x, flipped)
	s.constant[c.l], s.constant[c.r] = s.isConstant(c.l), s.isConstant(c.r)
	return true
}

// moveDistinct rewrites x IS [NOT] DISTINCT FROM c as moveConstants and
// unwrapCast rewrite x = c, as DuckDB does (big + 1 IS DISTINCT FROM 7 is
// big IS DISTINCT FROM 6, and does not fail where big + 1 would), but only
// where the rewrite is exact: where it decides x = c only for x not NULL
// (big * 2 = 7), DuckDB computes x, and so does the filter.
func (s *simplifier) moveDistinct(d *distinctExpr) {
	if s.unwrapNullCasts(d) {
		return
	}
	c := &cmpExpr{op: opEQ, l: d.l, r: d.r}
	moved := false
	for s.moveConstants(c) || s.unwrapCast(c) {
		moved = true
	}
	if moved && c.op == opEQ {
		d.l, d.r = c.l, c.r
	}
}

// unwrapNullCasts drops the casts around x in x IS [NOT] DISTINCT FROM
// NULL (any constant that is NULL) that DuckDB takes for invertible
// (castInvertible), as DuckDB does: the cast is not computed, and so not
// failed (CAST(big AS INTEGER) IS NOT DISTINCT FROM (0.1 % 0) is big IS
// NULL, even for a big beyond INTEGER). A TRY_CAST stays: it is NULL where
// it fails, which DuckDB's rewrite forgets, giving rows SQL does not.
func (s *simplifier) unwrapNullCasts(d *distinctExpr) bool {
	side := &d.l
	if v, ok := s.constValue(d.l); ok && v.isNull(0) {
		side = &d.r
	} else if v, ok := s.constValue(d.r); !ok || !v.isNull(0) {
		return false
	}
	unwrapped := false
	for {
		cast, ok := (*side).(*castExpr)
		if !ok || cast.try || s.isConstant(cast.x) || !castInvertible(cast.x.typ(), cast.to) {
			return unwrapped
		}
		*side, unwrapped = cast.x, true
	}
}

// unwrapCast rewrites CAST(x AS T) op c as x op c' where the cast of
// numbers cannot lose a digit and keeps the scale (integers to integers
// or to decimals without decimals, decimals to decimals of as many
// decimals) and c converts to x's type exactly (DuckDB's rule, for the
// same answers: the cast, which could fail where the answer does not
// depend on it, is spared). A cast that adds decimals stays, as DuckDB
// leaves it: CAST(x AS DECIMAL(18,0)) = 40.0 compares at DECIMAL(19,1)
// and computes x.
func (s *simplifier) unwrapCast(c *cmpExpr) bool {
	if c.op == decided {
		return false
	}
	if s.failing(c.l) {
		// DuckDB takes a constant left operand for the constant, and
		// gives up where it fails: CAST(3000000000 AS INTEGER) = 5 fails.
		return false
	}
	k, other, flipped, ok := s.constantSide(c)
	if !ok {
		return false
	}
	cast, ok := other.(*castExpr)
	// A cast of a constant that converts is folded; one that fails is
	// unwrapped as DuckDB does where it casts a value (-3 <= CAST(3000000000
	// AS INTEGER) is TRUE), not where it casts a computation that fails
	// ((2147483647 + 7) IS NOT DISTINCT FROM CAST(7 AS DECIMAL(18,0))
	// computes the sum).
	if !ok || cast.try || s.failing(cast.x) {
		return false
	}
	from, to := cast.x.typ(), cast.to
	exact := func(t sqlType) bool { return t.integer() || t.id == tDecimal }
	if !exact(from) || !exact(to) || to.scale != from.scale {
		return false
	}
	v := castVec(k, from, false)
	if v.isBad(0) {
		return false
	}
	if back := castVec(v, k.t, false); back.isBad(0) || compareValuesAt(back, 0, k, 0) != 0 {
		return false // c has digits x's type cannot hold: 2.5 for an integer
	}
	setSides(c, v, cast.x, flipped)
	return true
}

// neverNull reports whether e is never NULL by what DuckDB's statistics
// tell from its operands alone, computing nothing: a constant other than
// NULL, a column without NULLs, and +, -, *, negation, abs, AND, OR and
// NOT of such, and their comparisons with a constant. (DuckDB's
// statistics say nothing of the rest: / and // by zero are NULL, a cast
// may fail, coalesce(count, 2147483647 * 7) IS NULL computes the product.)
func neverNull(e expr) bool {
	switch x := e.(type) {
	case *constExpr:
		return !x.v.isNull(0)
	case *colExpr:
		return x.notNull
	case *arithExpr:
		return (x.op == opAdd || x.op == opSub || x.op == opMul) && neverNull(x.l) && neverNull(x.r)
	case *negExpr:
		return neverNull(x.x)
	case *absExpr:
		return neverNull(x.x)
	case *notExpr:
		return neverNull(x.x)
	case *cmpExpr:
		return (isConst(x.l) || isConst(x.r)) && neverNull(x.l) && neverNull(x.r)
	case *logicExpr:
		for _, t := range x.terms {
			if !neverNull(t) {
				return false
			}
		}
		return true
	}
	return false
}

// foldCoalesce drops the NULL constants of a coalesce and the arguments
// after its first other constant, as DuckDB does: coalesce(-3, -big) is
// -3, and -big is not computed. It returns what replaces c, or nil to
// keep c.
func foldCoalesce(c *coalesceExpr) expr {
	args := c.args[:0:0]
	for _, a := range c.args {
		if isNullConst(a) {
			continue
		}
		args = append(args, a)
		if isConst(a) {
			break
		}
	}
	switch {
	case len(args) == 0:
		return constant(nullConst(c.t), false)
	case len(args) == 1:
		return args[0]
	case len(args) == len(c.args):
		return nil
	}
	c.args = args
	return c
}

// dropFactorsOfZero rewrites (c * y) * 0 as y * 0, as DuckDB does: a
// product with 0 is 0 where its other factor is not NULL, and a constant
// factor of that one does not change whether it is, so it is not
// computed, nor its overflow: (-3 * big) * 0 is 0 for any big. Other
// operations stay ((big + 3) * 0 fails where big + 3 does), and so does
// a product that reads no column: DuckDB computes all of it, so
// (2147483647 * 7) * 0 fails.
func dropFactorsOfZero(a *arithExpr) {
	x := &a.l
	if isZero(a.l) {
		x = &a.r
	} else if !isZero(a.r) {
		return
	}
	if isConstant(*x) {
		return
	}
	for {
		m, ok := (*x).(*arithExpr)
		if !ok || m.op != opMul || !m.t.equal(a.t) {
			return
		}
		switch {
		case isConst(m.l):
			*x = m.r
		case isConst(m.r):
			*x = m.l
		default:
			return
		}
	}
}

// isZero reports whether e is the constant integer 0.
func isZero(e expr) bool {
	c, ok := e.(*constExpr)
	return ok && c.v.t.integer() && !c.v.isNull(0) && c.v.ints[0] == 0
}
