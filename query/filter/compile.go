package filter

import (
	"fmt"
	"slices"
	"sort"
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
// name must be a column, every comparison must compare like with like, and
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
	b := binder{schema: schema, used: map[string]bool{}}
	root, err := b.bind(e.root)
	if err != nil {
		return nil, err
	}
	if root.kind() != KindBool {
		return nil, invalid("the filter must be a condition, but %q is %s (compare it: e.g. %s > 0)", clip(e.text), root.kind(), clip(e.text))
	}
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
}

// kindOf maps an Arrow column type onto a kind (and the element kind of
// a list).
func kindOf(dt arrow.DataType) (Kind, Kind, bool) {
	switch dt.ID() {
	case arrow.BOOL:
		return KindBool, 0, true
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32:
		return KindInt, 0, true
	case arrow.FLOAT32, arrow.FLOAT64:
		return KindFloat, 0, true
	case arrow.STRING, arrow.LARGE_STRING:
		return KindString, 0, true
	case arrow.TIMESTAMP:
		return KindTimestamp, 0, true
	case arrow.LIST, arrow.LARGE_LIST:
		elem, _, ok := kindOf(dt.(arrow.ListLikeType).Elem())
		if !ok || elem == KindList {
			return 0, 0, false
		}
		return KindList, elem, true
	}
	return 0, 0, false
}

func (b *binder) column(name string) (expr, error) {
	idx := b.schema.FieldIndices(name)
	if len(idx) == 0 {
		// SQL names are case-insensitive unless quoted; accept a unique
		// case-insensitive match.
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
	k, elem, ok := kindOf(f.Type)
	if !ok {
		return nil, invalid("column %q (%s) cannot be used in a filter", f.Name, f.Type)
	}
	b.used[f.Name] = true
	c := &colExpr{name: f.Name, k: k, elemKind: elem}
	switch dt := f.Type.(type) {
	case *arrow.Float32Type:
		c.single = true
	case arrow.ListLikeType:
		c.elemSingle = dt.Elem().ID() == arrow.FLOAT32
	}
	return c, nil
}

func (b *binder) unknownColumn(name string) error {
	var names []string
	for _, f := range b.schema.Fields() {
		if _, _, ok := kindOf(f.Type); ok {
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
	msg := fmt.Sprintf("unknown column %q; the columns are %s", name, strings.Join(names, ", "))
	if best != "" {
		msg = fmt.Sprintf("unknown column %q (did you mean %q?); the columns are %s", name, best, strings.Join(names, ", "))
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

func (b *binder) bind(n node) (expr, error) {
	switch x := n.(type) {
	case colNode:
		return b.column(x.name)
	case litNode:
		return &litExpr{v: x.val}, nil
	case cmpNode:
		l, err := b.bind(x.l)
		if err != nil {
			return nil, err
		}
		r, err := b.bind(x.r)
		if err != nil {
			return nil, err
		}
		return b.compare(x.op, l, r)
	case logicNode:
		l, err := b.condition(x.l)
		if err != nil {
			return nil, err
		}
		r, err := b.condition(x.r)
		if err != nil {
			return nil, err
		}
		return &logicExpr{and: x.and, l: l, r: r}, nil
	case notNode:
		v, err := b.condition(x.x)
		if err != nil {
			return nil, err
		}
		return &notExpr{x: v}, nil
	case isNullNode:
		v, err := b.bind(x.x)
		if err != nil {
			return nil, err
		}
		return &isNullExpr{x: v, not: x.not}, nil
	case isTruthNode:
		v, err := b.condition(x.x)
		if err != nil {
			return nil, err
		}
		return &isTruthExpr{x: v, truth: x.truth, not: x.not}, nil
	case betweenNode:
		v, err := b.bind(x.x)
		if err != nil {
			return nil, err
		}
		lo, err := b.bind(x.lo)
		if err != nil {
			return nil, err
		}
		hi, err := b.bind(x.hi)
		if err != nil {
			return nil, err
		}
		ge, err := b.compare(opGE, v, lo)
		if err != nil {
			return nil, err
		}
		le, err := b.compare(opLE, v, hi)
		if err != nil {
			return nil, err
		}
		var e expr = &logicExpr{and: true, l: ge, r: le}
		if x.not {
			e = &notExpr{x: e}
		}
		return e, nil
	case inNode:
		return b.in(x)
	case likeNode:
		return b.like(x)
	case callNode:
		return b.call(x)
	}
	return nil, invalid("unsupported expression %T", n)
}

// condition binds an operand of AND, OR or NOT, which must be boolean.
func (b *binder) condition(n node) (expr, error) {
	e, err := b.bind(n)
	if err != nil {
		return nil, err
	}
	if k := e.kind(); k != KindBool && k != KindNull {
		return nil, invalid("%s is %s, not a condition; AND, OR and NOT combine conditions such as %s > 0", describe(e), k, describe(e))
	}
	return e, nil
}

func describe(e expr) string {
	switch x := e.(type) {
	case *colExpr:
		return "column " + x.name
	case *litExpr:
		return x.v.String()
	case *callExpr:
		return x.fn + "(...)"
	}
	return "the expression"
}

// single reports whether an expression holds float32 values.
func single(e expr) bool {
	switch x := e.(type) {
	case *colExpr:
		return x.single
	case *callExpr:
		list, ok := x.args[0].(*colExpr)
		return ok && x.fn == "list_extract" && list.elemSingle
	}
	return false
}

// toSingle returns lit rounded to float32 when other holds float32
// values, else lit unchanged.
func toSingle(other, lit expr) expr {
	l, ok := lit.(*litExpr)
	if !ok || !single(other) || !l.v.Kind.numeric() {
		return lit
	}
	return &litExpr{v: Float(float64(float32(l.v.asFloat())))}
}

// coerce brings a literal to the kind of the other operand where SQL
// would (a string compared with a timestamp is a timestamp), and reports
// the kind the comparison is made in.
func coerce(l, r expr) (expr, expr, Kind, error) {
	lk, rk := l.kind(), r.kind()
	if lk == KindNull || rk == KindNull {
		return l, r, KindNull, nil
	}
	if lk == KindList || rk == KindList {
		list := l
		if rk == KindList {
			list = r
		}
		return nil, nil, 0, invalid("%s is a list; lists are compared through len(), list_contains() or list_extract()", describe(list))
	}
	if lk.numeric() && rk.numeric() {
		// A number compared with a float32 column is rounded to float32
		// first, as DuckDB does (0.1 matches a float32 0.1).
		l, r = toSingle(r, l), toSingle(l, r)
		if lk == rk {
			return l, r, lk, nil
		}
		return l, r, KindFloat, nil
	}
	if lk == rk {
		return l, r, lk, nil
	}
	if lk == KindTimestamp && rk == KindString {
		if lit, ok := r.(*litExpr); ok {
			ts, err := ParseTimestamp(lit.v.Str)
			if err != nil {
				return nil, nil, 0, err
			}
			return l, &litExpr{v: TimestampMicros(ts)}, KindTimestamp, nil
		}
	}
	if rk == KindTimestamp && lk == KindString {
		r2, l2, k, err := coerce(r, l)
		return l2, r2, k, err
	}
	return nil, nil, 0, invalid("cannot compare %s (%s) with %s (%s)", describe(l), lk, describe(r), rk)
}

func (b *binder) compare(op cmpOp, l, r expr) (expr, error) {
	l, r, k, err := coerce(l, r)
	if err != nil {
		return nil, err
	}
	if k == KindNull {
		return &litExpr{v: Value{Kind: KindNull}, asBool: true}, nil
	}
	return &cmpExpr{op: op, l: l, r: r, in: k}, nil
}

func (b *binder) in(x inNode) (expr, error) {
	v, err := b.bind(x.x)
	if err != nil {
		return nil, err
	}
	in := &inExpr{x: v, not: x.not}
	for _, item := range x.list {
		e, err := b.bind(item)
		if err != nil {
			return nil, err
		}
		lit, ok := e.(*litExpr)
		if !ok {
			return nil, invalid("IN takes a list of literal values; %s is not one", describe(e))
		}
		if lit.v.Kind == KindNull {
			in.hasNull = true
			continue
		}
		_, l2, k, err := coerce(v, lit)
		if err != nil {
			return nil, err
		}
		if in.in == 0 || in.in == k {
			in.in = k
		} else if in.in.numeric() && k.numeric() {
			in.in = KindFloat
		} else {
			return nil, invalid("IN mixes %s and %s values", in.in, k)
		}
		in.values = append(in.values, l2.(*litExpr).v)
	}
	if v.kind() == KindNull || len(in.values) == 0 {
		// NULL IN (...) or x IN (NULL): never true.
		return &litExpr{v: Value{Kind: KindNull}, asBool: true}, nil
	}
	in.index()
	return in, nil
}

func (b *binder) like(x likeNode) (expr, error) {
	v, err := b.bind(x.x)
	if err != nil {
		return nil, err
	}
	if k := v.kind(); k != KindString && k != KindNull {
		return nil, invalid("LIKE matches strings; %s is %s", describe(v), k)
	}
	p, err := b.bind(x.pattern)
	if err != nil {
		return nil, err
	}
	lit, ok := p.(*litExpr)
	if !ok || (lit.v.Kind != KindString && lit.v.Kind != KindNull) {
		return nil, invalid("LIKE takes a 'pattern' string literal")
	}
	if lit.v.Kind == KindNull || v.kind() == KindNull {
		return &litExpr{v: Value{Kind: KindNull}, asBool: true}, nil
	}
	m, err := compileLike(lit.v.Str, x.escape)
	if err != nil {
		return nil, err
	}
	var e expr = &likeExpr{x: v, m: m}
	if x.not {
		e = &notExpr{x: e}
	}
	return e, nil
}

func (b *binder) call(x callNode) (expr, error) {
	var args []expr
	for _, a := range x.args {
		e, err := b.bind(a)
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	want := map[string]int{"len": 1, "list_contains": 2, "list_extract": 2}[x.fn]
	if len(args) != want {
		return nil, invalid("%s takes %d arguments, not %d", x.fn, want, len(args))
	}
	c := &callExpr{fn: x.fn, args: args}
	switch x.fn {
	case "len":
		if k := args[0].kind(); k != KindList && k != KindString {
			return nil, invalid("len takes a list or a string; %s is %s", describe(args[0]), k)
		}
		c.k = KindInt
	case "list_contains":
		if args[0].kind() != KindList {
			return nil, invalid("list_contains takes a list first; %s is %s", describe(args[0]), args[0].kind())
		}
		elem := args[0].elem()
		// probe stands for an element in the type check.
		list, _ := args[0].(*colExpr)
		probe := &colExpr{k: elem, single: list != nil && list.elemSingle}
		_, r, k, err := coerce(probe, args[1])
		if err != nil {
			return nil, invalid("list_contains: the list holds %s values, %s is %s", elem, describe(args[1]), args[1].kind())
		}
		c.args[1], c.in, c.k = r, k, KindBool
	case "list_extract":
		if args[0].kind() != KindList {
			return nil, invalid("list_extract takes a list first; %s is %s", describe(args[0]), args[0].kind())
		}
		if k := args[1].kind(); k != KindInt {
			return nil, invalid("list_extract takes an integer position (1 is the first element); %s is %s", describe(args[1]), k)
		}
		c.k = args[0].elem()
	}
	return c, nil
}

// The typed expression tree.
type expr interface {
	kind() Kind
	// elem is the element kind of a list.
	elem() Kind
	// eval computes the expression over a batch of rows.
	eval(b *batch) *vec
	// bounds says what values the expression may take over a group of
	// rows described by statistics.
	bounds(st *statsScope) abstract
}

type colExpr struct {
	name     string
	k        Kind
	elemKind Kind
	// single marks a float32 column, elemSingle a list of float32.
	single, elemSingle bool
}

func (c *colExpr) kind() Kind { return c.k }
func (c *colExpr) elem() Kind { return c.elemKind }

type litExpr struct {
	v Value
	// asBool marks a NULL that stands for a condition (x = NULL).
	asBool bool
}

func (l *litExpr) kind() Kind {
	if l.asBool {
		return KindBool
	}
	return l.v.Kind
}
func (l *litExpr) elem() Kind { return 0 }

type cmpExpr struct {
	op   cmpOp
	l, r expr
	in   Kind // the kind values are compared in
}

func (c *cmpExpr) kind() Kind { return KindBool }
func (c *cmpExpr) elem() Kind { return 0 }

type logicExpr struct {
	and  bool
	l, r expr
}

func (l *logicExpr) kind() Kind { return KindBool }
func (l *logicExpr) elem() Kind { return 0 }

type notExpr struct{ x expr }

func (n *notExpr) kind() Kind { return KindBool }
func (n *notExpr) elem() Kind { return 0 }

type isNullExpr struct {
	x   expr
	not bool
}

func (n *isNullExpr) kind() Kind { return KindBool }
func (n *isNullExpr) elem() Kind { return 0 }

type isTruthExpr struct {
	x          expr
	truth, not bool
}

func (n *isTruthExpr) kind() Kind { return KindBool }
func (n *isTruthExpr) elem() Kind { return 0 }

type inExpr struct {
	x       expr
	in      Kind
	values  []Value
	hasNull bool
	not     bool
	ints    map[int64]struct{}
	floats  map[float64]struct{}
	strs    map[string]struct{}
	bools   [2]bool
}

func (n *inExpr) kind() Kind { return KindBool }
func (n *inExpr) elem() Kind { return 0 }

// index builds the lookup set of the values.
func (n *inExpr) index() {
	switch n.in {
	case KindInt, KindTimestamp:
		n.ints = map[int64]struct{}{}
		for _, v := range n.values {
			n.ints[v.Int] = struct{}{}
		}
	case KindFloat:
		n.floats = map[float64]struct{}{}
		for _, v := range n.values {
			n.floats[v.asFloat()] = struct{}{}
		}
	case KindString:
		n.strs = map[string]struct{}{}
		for _, v := range n.values {
			n.strs[v.Str] = struct{}{}
		}
	case KindBool:
		for _, v := range n.values {
			if v.Bool {
				n.bools[1] = true
			} else {
				n.bools[0] = true
			}
		}
	}
	slices.SortFunc(n.values, compareValues)
}

type likeExpr struct {
	x expr
	m *likeMatcher
}

func (n *likeExpr) kind() Kind { return KindBool }
func (n *likeExpr) elem() Kind { return 0 }

type callExpr struct {
	fn   string
	args []expr
	k    Kind
	in   Kind // list_contains: the kind elements are compared in
}

func (c *callExpr) kind() Kind { return c.k }
func (c *callExpr) elem() Kind { return 0 }
