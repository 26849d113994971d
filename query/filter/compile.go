package filter

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Filter is a filter checked against a table's columns, ready to prune
// and evaluate. It is immutable and safe for concurrent use.
type Filter struct {
	text    string
	root    expr
	columns []string
}

// String returns the filter text.
func (f *Filter) String() string { return f.text }

// Columns returns the columns the filter reads, sorted.
func (f *Filter) Columns() []string { return f.columns }

// Compile parses text and checks it against the columns of schema: every
// name must be a column, every operator must have operands it takes, and
// the whole must be a condition.
func Compile(text string, schema *arrow.Schema) (*Filter, error) {
	e, err := Parse(text)
	if err != nil {
		return nil, err
	}
	return e.Compile(schema)
}

// Compile checks a parsed filter against the columns of schema.
func (e *Expr) Compile(schema *arrow.Schema) (*Filter, error) {
	b := &binder{schema: schema, used: map[string]bool{}, text: e.text}
	root, err := b.bind(e.root)
	if err != nil {
		return nil, err
	}
	if root, err = b.condition(root, e.root); err != nil {
		return nil, err
	}
	// Which NOT IN lists DuckDB computes whole depends on the columns
	// the filter's terms read once constants are folded; until that is
	// known, no constant of such a list decides it (see markWhole).
	simp := &simplifier{constant: map[expr]bool{}, notInOpen: true}
	root = simp.simplify(root)
	markWhole(root)
	simp.notInOpen = false
	if simp.refold() {
		root = simp.simplify(root)
	}
	root = topDecided(root)
	orderBetweens(root)
	orderTopAnd(root)
	if err := simp.checkConstants(root); err != nil {
		return nil, err
	}
	markSelecting(root)
	f := &Filter{text: e.text, root: root}
	for c := range b.used {
		f.columns = append(f.columns, c)
	}
	sort.Strings(f.columns)
	return f, nil
}

type binder struct {
	schema *arrow.Schema
	used   map[string]bool
	text   string
}

// src is the text a node was parsed from, for messages.
func (b *binder) src(n node) string {
	s := n.spanOf()
	if s.start < 0 || s.end > len(b.text) || s.start >= s.end {
		return "the expression"
	}
	return clip(strings.TrimSpace(b.text[s.start:s.end]))
}

func (b *binder) bind(n node) (expr, error) {
	switch x := n.(type) {
	case colNode:
		return b.column(x.name)
	case litNode:
		return b.literal(x)
	case unaryNode:
		return b.unary(x)
	case binaryNode:
		return b.binary(x)
	case logicNode:
		l := &logicExpr{and: x.and}
		for _, t := range x.terms {
			e, err := b.bind(t)
			if err != nil {
				return nil, err
			}
			if e, err = b.condition(e, t); err != nil {
				return nil, err
			}
			if inner, ok := e.(*logicExpr); ok && inner.and == x.and && !inner.list && !inner.between {
				l.terms = append(l.terms, inner.terms...)
			} else {
				l.terms = append(l.terms, e)
			}
		}
		return l, nil
	case isNode:
		v, err := b.bind(x.x)
		if err != nil {
			return nil, err
		}
		if x.what == "NULL" {
			return &isNullExpr{x: v, not: x.not}, nil
		}
		if v, err = b.condition(v, x.x); err != nil {
			return nil, err
		}
		return &isTruthExpr{x: v, truth: x.what == "TRUE", not: x.not}, nil
	case inNode:
		return b.in(x)
	case betweenNode:
		return b.between(x)
	case likeNode:
		return b.like(x)
	case callNode:
		return b.call(x)
	case castNode:
		v, err := b.bind(x.x)
		if err != nil {
			return nil, err
		}
		if err := checkCast(v.typ(), x.to); err != nil {
			return nil, invalid("CAST(%s AS %s): %s is %s, which does not cast to %s", b.src(x.x), x.to, b.src(x.x), v.typ(), x.to)
		}
		return b.fold(&castExpr{x: v, to: x.to, try: x.try}, x)
	case listNode:
		return b.listLiteral(x)
	case subscriptNode:
		return b.extract(x.x, x.index, x)
	}
	return nil, invalid("unsupported expression %T", n)
}

// column binds a name to a column of the schema: exactly, or by a unique
// case-insensitive match (SQL names are case-insensitive).
func (b *binder) column(name string) (expr, error) {
	idx := b.schema.FieldIndices(name)
	if len(idx) == 0 {
		for i, f := range b.schema.Fields() {
			if strings.EqualFold(f.Name, name) {
				idx = append(idx, i)
			}
		}
	}
	if len(idx) != 1 {
		return nil, b.unknownColumn(name)
	}
	f := b.schema.Field(idx[0])
	t, ok := typeOfArrow(f.Type)
	if !ok {
		return nil, invalid("column %q (%s) cannot be used in a filter", f.Name, f.Type)
	}
	b.used[f.Name] = true
	return &colExpr{name: f.Name, t: t, notNull: !f.Nullable}, nil
}

func (b *binder) unknownColumn(name string) error {
	var names []string
	for _, f := range b.schema.Fields() {
		if _, ok := typeOfArrow(f.Type); ok {
			names = append(names, f.Name)
		}
	}
	best := ""
	for _, n := range names {
		if closeNames(strings.ToLower(name), strings.ToLower(n)) {
			best = n
			break
		}
	}
	msg := fmt.Sprintf("unknown column %q; the columns are %s", clip(name), strings.Join(names, ", "))
	if best != "" {
		msg = fmt.Sprintf("unknown column %q (did you mean %q?); the columns are %s", clip(name), best, strings.Join(names, ", "))
	}
	return invalid("%s", msg)
}

// closeNames reports names a typo apart: an edit distance of at most two
// fifths of the name's length (at least 1).
func closeNames(a, b string) bool {
	limit := max(1, len(b)*2/5)
	if d := len(a) - len(b); d > limit || -d > limit {
		return false
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)] <= limit
}

// constant makes a constant of one value.
func constant(v *vec, literal bool) *constExpr {
	return &constExpr{v: v, literal: literal}
}

func constInt(n int64, t sqlType) *constExpr {
	v := newVec(t, 1, 0)
	v.ints[0] = n
	return constant(v, false)
}

// literal binds a literal. Integers are INTEGER or BIGINT by their size
// (beyond BIGINT, a DECIMAL(38,0) as DuckDB's HUGEINT), decimals are
// DECIMALs of their digits, exponents DOUBLE, as DuckDB types them.
func (b *binder) literal(x litNode) (expr, error) {
	switch x.kind {
	case litNull:
		return constant(nullConst(typNull), true), nil
	case litBool:
		v := newVec(typBool, 1, 0)
		v.tri[0] = boolTri(x.text == "TRUE")
		return constant(v, true), nil
	case litString:
		v := newVec(typString, 1, 0)
		v.strs[0] = x.text
		if x.typed.id == tNull {
			return constant(v, true), nil
		}
		out := castVec(v, x.typed, false)
		if out.isBad(0) {
			return nil, invalid("%s: %v", b.src(x), out.errAt(0))
		}
		return constant(out, false), nil
	}
	text := x.text
	if strings.ContainsAny(text, "eE") {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, invalid("number %s is out of range", clip(text))
		}
		v := newVec(typDouble, 1, 0)
		v.flts[0] = f
		return constant(v, true), nil
	}
	if !strings.Contains(text, ".") {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			t := typInt64
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				t = typInt32
			}
			c := constInt(n, t)
			c.literal = true
			return c, nil
		}
	}
	d, scale, ok := parseDecimalDigits(text)
	if !ok {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, invalid("number %s is out of range", clip(text))
		}
		v := newVec(typDouble, 1, 0)
		v.flts[0] = f
		return constant(v, true), nil
	}
	digits := strings.Count(text, "") - 1 - strings.Count(text, ".") - strings.Count(text, "-")
	v := newVec(decimalType(max(digits, scale+1), scale), 1, 0)
	v.decs[0] = d
	return constant(v, true), nil
}

// condition makes e a condition: a BOOLEAN as it is; a number or a string
// cast to BOOLEAN, as DuckDB does where it needs a condition (WHERE n is
// WHERE n <> 0).
func (b *binder) condition(e expr, n node) (expr, error) {
	switch t := e.typ(); {
	case t.id == tBool:
		return e, nil
	case t.id == tNull || t.numeric() || t.id == tString:
		return b.coerce(e, typBool, n)
	default:
		return nil, invalid("%s is %s, not a condition; compare it, as in %s IS NOT NULL", b.src(n), t, b.src(n))
	}
}

// coerce casts e to type t where DuckDB would implicitly; a constant is
// cast at once. One that does not convert ('abc' for an INTEGER) stays a
// cast: a term that decides without it drops it (FALSE AND count = 'abc'
// is FALSE), and checkConstants reports it otherwise.
func (b *binder) coerce(e expr, t sqlType, n node) (expr, error) {
	if e.typ().equal(t) {
		return e, nil
	}
	if err := checkCast(e.typ(), t); err != nil {
		return nil, invalid("%s is %s, which does not convert to %s", b.src(n), e.typ(), t)
	}
	if c, ok := e.(*constExpr); ok {
		if v := castVec(c.v, t, false); !v.isBad(0) {
			return constant(v, false), nil
		}
	}
	return &castExpr{x: e, to: t, implicit: true}, nil
}

// coerceCompared coerces an operand of a comparison; what the comparison
// was (format and args) leads the message of a constant that does not
// convert, whether at once or when checkConstants reports it. (A cast of
// a constant that coerce leaves is one that does not convert.)
func (b *binder) coerceCompared(e expr, t sqlType, n node, format string, args ...any) (expr, error) {
	c, err := b.coerce(e, t, n)
	if err != nil {
		return nil, invalid("%s: %s", fmt.Sprintf(format, args...), reason(err))
	}
	if cast, ok := c.(*castExpr); ok && isConst(cast.x) {
		cast.context = fmt.Sprintf(format, args...)
	}
	return c, nil
}

// fold evaluates an expression of constants into one constant. One whose
// value fails stays as it is: an operator above it may not need it
// (NULL <= CAST(3000000000 AS INTEGER) is NULL), and checkConstants
// reports it otherwise.
func (b *binder) fold(e expr, n node) (expr, error) {
	if !isConstant(e) {
		return e, nil
	}
	if v, ok := evalConstant(e); ok {
		return constant(v, false), nil
	}
	return e, nil
}

// constantOf folds an expression that must be a constant (a LIKE
// pattern); a value that fails is an error of the filter.
func (b *binder) constantOf(e expr, n node) (expr, error) {
	if !isConstant(e) {
		return e, nil
	}
	v, ok := evalConstant(e)
	if !ok {
		return nil, invalid("%s: %v", b.src(n), v.errAt(0))
	}
	return constant(v, false), nil
}

func isStringLiteral(e expr) bool {
	c, ok := e.(*constExpr)
	return ok && c.stringLiteral()
}

// isOrdering reports whether a comparison orders (< <= > >=) rather than
// tests equality.
func isOrdering(op string) bool {
	return op == "<" || op == "<=" || op == ">" || op == ">="
}

// commonType is the type two operands of a comparison meet in, by
// DuckDB's rules: a string literal takes the other side's type; a
// VARCHAR column meets another type in that type for = and <>, and is an
// error for < and > (DuckDB asks for an explicit cast).
func (b *binder) commonType(l, r expr, ordering bool, ln, rn node) (sqlType, error) {
	lt, rt := l.typ(), r.typ()
	switch {
	case isStringLiteral(l) && !isStringLiteral(r) && rt.id != tNull:
		return rt, nil
	case isStringLiteral(r) && !isStringLiteral(l) && lt.id != tNull:
		return lt, nil
	}
	if ordering && stringMix(lt, rt) {
		s, o, on := ln, rt, rn
		if rt.id == tString {
			s, o, on = rn, lt, ln
		}
		return sqlType{}, invalid("cannot order %s (VARCHAR) against %s (%s); cast one of them: CAST(%s AS %s)",
			b.src(s), b.src(on), o, b.src(s), o)
	}
	if lt.id == tList && rt.id == tList && (lt.elem.id == tString) != (rt.elem.id == tString) &&
		lt.elem.id != tNull && rt.elem.id != tNull && !lt.elem.temporal() && !rt.elem.temporal() {
		// Lists of strings and of numbers compare as lists of strings
		// (DuckDB casts the numbers, where scalars go the other way).
		return listOf(typString), nil
	}
	t, ok := maxType(lt, rt)
	if !ok {
		return sqlType{}, invalid("cannot compare %s (%s) with %s (%s)", b.src(ln), lt, b.src(rn), rt)
	}
	return t, nil
}

// stringMix reports whether a VARCHAR (or a list of them) meets another
// type (or a list of another type).
func stringMix(a, b sqlType) bool {
	if a.id == tList && b.id == tList {
		a, b = *a.elem, *b.elem
	}
	return a.id != tNull && b.id != tNull && (a.id == tString) != (b.id == tString)
}

// compare binds l op r (= <> < <= > >=, IS [NOT] DISTINCT FROM).
func (b *binder) compare(op string, l, r expr, ln, rn, whole node) (expr, error) {
	t, err := b.commonType(l, r, isOrdering(op), ln, rn)
	if err != nil {
		return nil, err
	}
	lt, rt := l.typ(), r.typ()
	if l, err = b.coerceCompared(l, t, ln, "cannot compare %s (%s) with %s", b.src(rn), rt, b.src(ln)); err != nil {
		return nil, err
	}
	if r, err = b.coerceCompared(r, t, rn, "cannot compare %s (%s) with %s", b.src(ln), lt, b.src(rn)); err != nil {
		return nil, err
	}
	switch op {
	case "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
		return &distinctExpr{l: l, r: r, not: op == "IS NOT DISTINCT FROM"}, nil
	}
	if lt.id == tNull || rt.id == tNull {
		// A NULL literal makes the comparison NULL, as DuckDB binds it;
		// a NULL computed from constants (lower(NULL)) is folded with
		// the rest (see simplifier.failsBeforeNull).
		return constant(nullConst(typBool), false), nil
	}
	return &cmpExpr{op: cmpOps[op], l: l, r: r}, nil
}

func isNullConst(e expr) bool {
	c, ok := e.(*constExpr)
	return ok && c.isNull()
}

func (b *binder) unary(x unaryNode) (expr, error) {
	if in, ok := x.x.(inNode); ok && x.op == "NOT" && in.of == nil && !in.not {
		// DuckDB holds NOT (x IN (...)) as x NOT IN (...), and computes it
		// so (see in); NOT (x NOT IN (...)) stays as it is, a NOT over
		// a chain it computes whole.
		in.not = true
		return b.in(in)
	}
	v, err := b.bind(x.x)
	if err != nil {
		return nil, err
	}
	if x.op == "NOT" {
		if v, err = b.condition(v, x.x); err != nil {
			return nil, err
		}
		return &notExpr{x: v}, nil
	}
	t := v.typ()
	if t.id == tNull {
		return constant(nullConst(typInt64), false), nil // -NULL and +NULL are BIGINT NULLs, as abs(NULL)
	}
	if !t.numeric() {
		return nil, invalid("%s%s: %s is %s; %s takes a number", x.op, b.src(x.x), b.src(x.x), t, x.op)
	}
	if x.op == "+" {
		return v, nil
	}
	return &negExpr{x: v}, nil
}

func (b *binder) binary(x binaryNode) (expr, error) {
	l, err := b.bind(x.l)
	if err != nil {
		return nil, err
	}
	r, err := b.bind(x.r)
	if err != nil {
		return nil, err
	}
	switch x.op {
	case "=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
		return b.compare(x.op, l, r, x.l, x.r, x)
	case "||":
		return b.concat(l, r, x)
	}
	return b.arith(x.op, l, r, x)
}

// arith binds l op r for + - * / // %, typed as DuckDB types them: the
// wider integer, FLOAT or DOUBLE, or a DECIMAL (exact); / of integers or
// decimals is a DOUBLE.
func (b *binder) arith(opName string, l, r expr, x binaryNode) (expr, error) {
	op := arithOps[opName]
	// A string literal takes the other operand's type (count + '1'); next
	// to a literal decimal or float both are DOUBLE, next to NULL BIGINT;
	// next to an integer literal or a string DuckDB cannot choose.
	if isStringLiteral(r) && !isStringLiteral(l) {
		var err error
		if r, err = b.stringOperand(op, r, l, x.r, x); err != nil {
			return nil, err
		}
	} else if isStringLiteral(l) {
		var err error
		if l, err = b.stringOperand(op, l, r, x.l, x); err != nil {
			return nil, err
		}
	}
	lt, rt := l.typ(), r.typ()
	for _, side := range []struct {
		t sqlType
		n node
	}{{lt, x.l}, {rt, x.r}} {
		if side.t.id != tNull && !side.t.numeric() {
			hint := ""
			switch {
			case side.t.temporal():
				hint = "; arithmetic on timestamps is not supported, compare them with TIMESTAMP '...' literals"
			case side.t.id == tBool:
				hint = fmt.Sprintf("; CAST(%s AS INTEGER) makes it one", b.src(side.n))
			}
			return nil, invalid("%s: %s is %s, and %s takes numbers%s", b.src(x), b.src(side.n), side.t, opName, hint)
		}
	}
	if lt.id == tNull && rt.id == tNull {
		lt, rt = typInt32, typInt32
	} else if lt.id == tNull {
		lt = rt
	} else if rt.id == tNull {
		rt = lt
	}
	t := numericMax(lt, rt)
	operand := t
	switch {
	case t.id == tDecimal && (op == opDiv || op == opIntDiv):
		t, operand = typDouble, typDouble
	case t.integer() && op == opDiv:
		t, operand = typDouble, typDouble
	case t.id == tDecimal:
		dl, dr := asDecimal(lt), asDecimal(rt)
		if op == opMul && int(dl.scale)+int(dr.scale) > maxDecimalDigits {
			return nil, invalid("%s: the product has more than %d decimals", b.src(x), maxDecimalDigits)
		}
		t, narrowed := decimalResult(op, dl, dr)
		l, r, err := b.coercePair(l, r, dl, dr, x)
		return &arithExpr{op: op, l: l, r: r, t: t, narrowed: narrowed}, err
	}
	l, r, err := b.coercePair(l, r, operand, operand, x)
	return &arithExpr{op: op, l: l, r: r, t: t}, err
}

// coercePair casts the operands of a binary operator to lt and rt.
func (b *binder) coercePair(l, r expr, lt, rt sqlType, x binaryNode) (expr, expr, error) {
	l, err := b.coerce(l, lt, x.l)
	if err != nil {
		return nil, nil, err
	}
	r, err = b.coerce(r, rt, x.r)
	return l, r, err
}

// stringOperand casts a string literal operand of arithmetic to the type
// DuckDB gives it next to the other operand.
func (b *binder) stringOperand(op arithOp, str, other expr, n, whole node) (expr, error) {
	ot := other.typ()
	c, lit := other.(*constExpr)
	lit = lit && c.literal
	var t sqlType
	switch {
	case ot.id == tNull:
		t = typInt64
	case op == opMod && lit && ot.integer():
		t = ot
	case isStringLiteral(other) || lit && ot.integer():
		return nil, invalid("%s: cast the string to a number, as in CAST('1' AS INTEGER)", b.src(whole))
	case lit && (ot.id == tDecimal || ot.floating()):
		t = typDouble
	case ot.numeric():
		t = ot
	default:
		return str, nil // the operand check says what is wrong
	}
	return b.coerce(str, t, n)
}

func isConst(e expr) bool {
	_, ok := e.(*constExpr)
	return ok
}

// concat binds a || b: lists are joined, anything else is joined as
// text (NULL when either side is).
func (b *binder) concat(l, r expr, x binaryNode) (expr, error) {
	lt, rt := l.typ(), r.typ()
	if lt.id == tList || rt.id == tList {
		t, ok := maxType(lt, rt)
		if !ok || t.id != tList {
			return nil, invalid("%s: || joins two lists or two strings; %s is %s and %s is %s", b.src(x), b.src(x.l), lt, b.src(x.r), rt)
		}
		l, r, err := b.coercePair(l, r, t, t, x)
		return &listConcatExpr{l: l, r: r, t: t}, err
	}
	l, r, err := b.coercePair(l, r, typString, typString, x)
	return &concatExpr{args: []expr{l, r}}, err
}

// plannedFailure stands for an IN of constants alone, one of its values
// a constant that fails, whose comparisons fail: DuckDB computes such an
// IN while it plans the query, in order (5 IN (5, 2147483647 + 1) is
// TRUE, 5 IN (2147483647 + 1, 5) fails), so the filter fails whatever the
// rows, unless folding drops it first (FALSE AND ...); checkConstants
// reports it. An IN that reads a column, or whose values are all valid
// ((2147483647 + 1) IN (1, 2)), computes its constants only where rows
// reach them.
type plannedFailure struct{ err error }

func (p *plannedFailure) typ() sqlType { return typBool }

func (p *plannedFailure) eval(*batch) *vec {
	v := newVec(typBool, 1, 0)
	v.fail(0, p.err)
	return v
}

// in binds x [NOT] IN (values) and x [NOT] IN list.
func (b *binder) in(x inNode) (expr, error) {
	v, err := b.bind(x.x)
	if err != nil {
		return nil, err
	}
	if x.of != nil {
		list, err := b.bind(x.of)
		if err != nil {
			return nil, err
		}
		e, err := b.contains(list, v, x.of, x.x, x)
		if err != nil || !x.not {
			return e, err
		}
		return &notExpr{x: e}, nil
	}
	items := make([]expr, len(x.list))
	for i, n := range x.list {
		if items[i], err = b.bind(n); err != nil {
			return nil, err
		}
	}
	// The values meet x in one type, as the operands of = do.
	t, err := b.meetType(append([]expr{v}, items...), append([]node{x.x}, x.list...), false)
	if err != nil {
		return nil, err
	}
	if v, err = b.coerce(v, t, x.x); err != nil {
		return nil, err
	}
	allConst := true
	for i := range items {
		if items[i], err = b.coerce(items[i], t, x.list[i]); err != nil {
			return nil, err
		}
		if items[i], err = b.fold(items[i], x.list[i]); err != nil {
			return nil, err
		}
		allConst = allConst && isConst(items[i])
	}
	if !allConst || t.id == tList || t.id == tNull {
		// x IN (a, b) is x = a OR x = b, NULLs included, and x NOT IN
		// (a, b) is x <> a AND x <> b, as DuckDB rewrites them: its terms
		// are then computed in order (see logicExpr.table). DuckDB
		// rewrites them after folding comparisons with NULL, so a term
		// with a NULL operand still computes the other one: x fails the
		// filter wherever the first term is computed (-big NOT IN (NULL,
		// count) fails where -big overflows), and NULL IN (count, -big)
		// computes -big where count left the row undecided.
		chain, op := &logicExpr{list: true}, opEQ
		if x.not {
			chain.and, op = true, opNE
		}
		for _, item := range items {
			if t.id == tNull {
				// NULL against NULL: nothing to compute.
				chain.terms = append(chain.terms, constant(nullConst(typBool), false))
			} else {
				chain.terms = append(chain.terms, &cmpExpr{op: op, l: v, r: item, listed: true})
			}
		}
		if isConstant(chain) {
			if r := chain.evalInOrder(constantBatch()); r.isBad(0) {
				return &plannedFailure{err: r.errAt(0)}, nil
			}
		}
		return chain, nil
	}
	in := &inExpr{x: v, not: x.not, values: newVec(t, 0, 1)}
	for _, item := range items {
		c := item.(*constExpr).v
		if c.isNull(0) {
			in.hasNull = true
			continue
		}
		in.values.grow(1)
		copyValue(in.values, in.values.len()-1, c, 0)
	}
	if in.values.len() == 0 {
		// Every value is NULL: x [NOT] IN (NULL) is NULL.
		return constant(nullConst(typBool), false), nil
	}
	in.index()
	return in, nil
}

// meetType is the type several values compared with one another meet in
// (x and the values of IN, the three of BETWEEN): string literals take
// the others' type; a VARCHAR column meets another type in it, except
// where values are ordered (BETWEEN), where DuckDB asks for a cast.
func (b *binder) meetType(es []expr, nodes []node, ordering bool) (sqlType, error) {
	t := typNull
	var first node
	sawString := false
	for i, e := range es {
		if isStringLiteral(e) {
			sawString = true
			continue
		}
		et := e.typ()
		if ordering && t.id != tNull && et.id != tNull && (t.id == tString) != (et.id == tString) {
			return sqlType{}, invalid("cannot order %s (%s) against %s (%s); cast one of them, as in CAST(%s AS %s)",
				b.src(first), t, b.src(nodes[i]), et, b.src(nodes[i]), t)
		}
		next, ok := maxType(t, et)
		if !ok {
			return sqlType{}, invalid("cannot compare %s (%s) with %s (%s)", b.src(nodes[0]), es[0].typ(), b.src(nodes[i]), et)
		}
		if t.id == tNull {
			first = nodes[i]
		}
		t = next
	}
	if t.id == tNull && sawString {
		t = typString
	}
	return t, nil
}

// between binds x [NOT] BETWEEN lo AND hi as x >= lo AND x <= hi.
func (b *binder) between(x betweenNode) (expr, error) {
	nodes := []node{x.x, x.lo, x.hi}
	es := make([]expr, 3)
	for i, n := range nodes {
		var err error
		if es[i], err = b.bind(n); err != nil {
			return nil, err
		}
	}
	t, err := b.meetType(es, nodes, true)
	if err != nil {
		return nil, err
	}
	for i := range es {
		if es[i], err = b.coerce(es[i], t, nodes[i]); err != nil {
			return nil, err
		}
	}
	// A NULL bound is folded with the rest, not here: DuckDB computes the
	// input all the same (CAST(3000000000 AS INTEGER) BETWEEN NULL AND 5
	// fails), where a NULL literal compared with = makes it NULL at once.
	var e expr = &logicExpr{and: true, between: true, terms: []expr{
		&cmpExpr{op: opGE, l: es[0], r: es[1]}, &cmpExpr{op: opLE, l: es[0], r: es[2]},
	}}
	if x.not {
		e = &notExpr{x: e}
	}
	return e, nil
}

// like binds x [NOT] LIKE/ILIKE pattern [ESCAPE e]; the pattern and the
// escape are constants.
func (b *binder) like(x likeNode) (expr, error) {
	word := "LIKE"
	if x.ilike {
		word = "ILIKE"
	}
	v, err := b.bind(x.x)
	if err != nil {
		return nil, err
	}
	if t := v.typ(); t.id != tString && t.id != tNull {
		return nil, invalid("%s matches strings; %s is %s (CAST(%s AS VARCHAR) %s ... matches its text)", word, b.src(x.x), t, b.src(x.x), word)
	}
	pc, err := b.constantString(x.pattern)
	if err != nil {
		return nil, err
	}
	if pc == nil {
		return nil, invalid("%s takes a constant 'pattern' string; %s is not one", word, b.src(x.pattern))
	}
	escape := rune(-1)
	if x.escape != nil {
		ec, err := b.constantString(x.escape)
		if err != nil {
			return nil, err
		}
		if ec == nil || ec.isNull() {
			return nil, invalid("ESCAPE takes a one-character string, such as ESCAPE '\\'")
		}
		rs := []rune(ec.v.strs[0])
		if len(rs) > 1 {
			return nil, invalid("ESCAPE takes one character, not %q", clip(ec.v.strs[0]))
		}
		if len(rs) == 1 {
			escape = rs[0]
		}
	}
	if pc.isNull() || v.typ().id == tNull {
		return constant(nullConst(typBool), false), nil
	}
	pattern := pc.v.strs[0]
	if x.ilike {
		pattern = lowerString(pattern)
		if escape >= 0 {
			escape = []rune(lowerString(string(escape)))[0]
		}
	}
	m, err := compileLike(pattern, escape)
	if err != nil {
		return nil, err
	}
	var e expr = &likeExpr{x: v, m: m, ilike: x.ilike}
	if x.not {
		e = &notExpr{x: e}
	}
	return e, nil
}

// constantString binds an operand that must be a constant string (or
// NULL); nil when it is not one.
func (b *binder) constantString(n node) (*constExpr, error) {
	e, err := b.bind(n)
	if err != nil {
		return nil, err
	}
	if e, err = b.constantOf(e, n); err != nil {
		return nil, err
	}
	c, ok := e.(*constExpr)
	if !ok || c.v.t.id != tString && c.v.t.id != tNull {
		return nil, nil
	}
	return c, nil
}

// listLiteral binds [a, b, ...]: the elements meet in one type.
func (b *binder) listLiteral(x listNode) (expr, error) {
	elems := make([]expr, len(x.elems))
	for i, n := range x.elems {
		var err error
		if elems[i], err = b.bind(n); err != nil {
			return nil, err
		}
		if elems[i].typ().id == tList {
			return nil, invalid("lists of lists are not supported in filters")
		}
	}
	t, err := b.argsType(elems, x.elems)
	if err != nil {
		return nil, err
	}
	for i := range elems {
		if elems[i], err = b.coerce(elems[i], t, x.elems[i]); err != nil {
			return nil, err
		}
	}
	return b.fold(&listLitExpr{elems: elems, t: listOf(t)}, x)
}

// argsType is the type values of several expressions meet in (the
// elements of a list literal, the arguments of coalesce): string literals
// take the others' type.
func (b *binder) argsType(args []expr, nodes []node) (sqlType, error) {
	t := typNull
	sawString := false
	for i, a := range args {
		if isStringLiteral(a) {
			sawString = true
			continue
		}
		next, ok := maxType(t, a.typ())
		if !ok {
			return sqlType{}, invalid("%s (%s) does not mix with the values before it (%s)", b.src(nodes[i]), a.typ(), t)
		}
		t = next
	}
	if t.id == tNull && sawString {
		t = typString
	}
	return t, nil
}

// call binds a function call.
func (b *binder) call(x callNode) (expr, error) {
	fn, ok := functions[x.name]
	if !ok {
		return nil, invalid("function %s is not supported in filters; the functions are %s", clip(x.name), supportedFunctions)
	}
	args := make([]expr, len(x.args))
	for i, a := range x.args {
		var err error
		if args[i], err = b.bind(a); err != nil {
			return nil, err
		}
	}
	arity := map[string]int{"abs": 1, "lower": 1, "upper": 1, "length": 1, "strlen": 1, "list_contains": 2, "list_extract": 2}
	if want, fixed := arity[fn]; fixed && len(args) != want {
		return nil, invalid("%s takes %d argument%s, not %d", fn, want, plural(want), len(args))
	}
	if (fn == "coalesce" || fn == "concat") && len(args) == 0 {
		return nil, invalid("%s takes at least one argument", fn)
	}
	var e expr
	switch fn {
	case "abs":
		t := args[0].typ()
		switch {
		case t.id == tNull:
			// A BIGINT NULL, as DuckDB types it, no longer a NULL
			// literal: CAST(3000000000 AS INTEGER) = abs(NULL) computes
			// the cast.
			return constant(nullConst(typInt64), false), nil
		case isStringLiteral(args[0]):
			return nil, invalid("abs takes a number; %s is a string", b.src(x.args[0]))
		case !t.numeric():
			return nil, invalid("abs takes a number; %s is %s", b.src(x.args[0]), t)
		}
		e = &absExpr{x: args[0]}
	case "lower", "upper":
		a, err := b.stringArg(fn, args[0], x.args[0])
		if err != nil {
			return nil, err
		}
		f := lowerString
		if fn == "upper" {
			f = upperString
		}
		e = &stringFunc{x: a, fn: f}
	case "length", "strlen":
		a := args[0]
		if a.typ().id != tList || fn == "strlen" {
			var err error
			if a, err = b.stringArg(fn, a, x.args[0]); err != nil {
				return nil, invalid("%s takes a string or a list; %s is %s", fn, b.src(x.args[0]), args[0].typ())
			}
		}
		e = &lengthExpr{x: a, bytes: fn == "strlen"}
	case "coalesce":
		t, err := b.argsType(args, x.args)
		if err != nil {
			return nil, err
		}
		for i := range args {
			if args[i], err = b.coerce(args[i], t, x.args[i]); err != nil {
				return nil, err
			}
		}
		e = &coalesceExpr{args: args, t: t}
	case "concat":
		for i := range args {
			var err error
			if args[i].typ().id == tList {
				return nil, invalid("concat joins strings; %s is %s (|| joins lists)", b.src(x.args[i]), args[i].typ())
			}
			if args[i], err = b.coerce(args[i], typString, x.args[i]); err != nil {
				return nil, err
			}
		}
		e = &concatExpr{args: args, skipNulls: true}
	case "list_contains":
		return b.contains(args[0], args[1], x.args[0], x.args[1], x)
	case "list_extract":
		return b.extract(x.args[0], x.args[1], x)
	}
	return b.fold(e, x)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// stringArg checks an argument that must be a string (a string literal,
// NULL).
func (b *binder) stringArg(fn string, a expr, n node) (expr, error) {
	switch a.typ().id {
	case tString:
		return a, nil
	case tNull:
		return b.coerce(a, typString, n)
	}
	return nil, invalid("%s takes a string; %s is %s (CAST(%s AS VARCHAR) makes it one)", fn, b.src(n), a.typ(), b.src(n))
}

// contains binds list_contains(list, x) (and x IN list).
func (b *binder) contains(list, v expr, ln, vn, whole node) (expr, error) {
	lt := list.typ()
	if lt.id == tNull || v.typ().id == tNull && !isStringLiteral(v) {
		if lt.id != tNull && lt.id != tList {
			return nil, invalid("list_contains takes a list first; %s is %s", b.src(ln), lt)
		}
		return constant(nullConst(typBool), false), nil
	}
	if lt.id != tList {
		return nil, invalid("list_contains takes a list first; %s is %s", b.src(ln), lt)
	}
	elem := *lt.elem
	t := elem
	if !isStringLiteral(v) {
		if (v.typ().id == tString) != (elem.id == tString) && elem.id != tNull {
			return nil, invalid("list_contains: the list holds %s values, %s is %s", elem, b.src(vn), v.typ())
		}
		var ok bool
		if t, ok = maxType(elem, v.typ()); !ok || t.id == tList {
			return nil, invalid("list_contains: the list holds %s values, %s is %s", elem, b.src(vn), v.typ())
		}
	} else if elem.id == tNull {
		t = typString
	}
	var err error
	if list, err = b.coerce(list, listOf(t), ln); err != nil {
		return nil, err
	}
	if v, err = b.coerce(v, t, vn); err != nil {
		return nil, err
	}
	return b.fold(&containsExpr{list: list, x: v}, whole)
}

// extract binds list_extract(list, i) and list[i].
func (b *binder) extract(ln, in, whole node) (expr, error) {
	list, err := b.bind(ln)
	if err != nil {
		return nil, err
	}
	index, err := b.bind(in)
	if err != nil {
		return nil, err
	}
	if lt := list.typ(); lt.id != tList {
		if lt.id == tNull {
			return constant(nullConst(typNull), false), nil
		}
		return nil, invalid("list_extract takes a list; %s is %s", b.src(ln), lt)
	}
	if t := index.typ(); !t.integer() && t.id != tNull {
		return nil, invalid("list_extract takes an integer position (1 is the first element); %s is %s", b.src(in), t)
	}
	if index, err = b.coerce(index, typInt64, in); err != nil {
		return nil, err
	}
	return b.fold(&extractExpr{list: list, index: index}, whole)
}
