package filter

import (
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Three-valued logic: every condition is TRUE, FALSE or NULL for a row.
const (
	triF uint8 = 0
	triT uint8 = 1
	triN uint8 = 2
)

var (
	andTable = [9]uint8{
		triF, triF, triF, // F AND x
		triF, triT, triN, // T AND x
		triF, triN, triN, // N AND x
	}
	orTable = [9]uint8{
		triF, triT, triN,
		triT, triT, triT,
		triN, triT, triN,
	}
	notTable = [3]uint8{triT, triF, triN}
)

// vec is the value of an expression over a batch: one value per row, or
// one value for every row (step 0, a constant).
type vec struct {
	kind Kind
	step int    // 1: a value per row; 0: values[0] for every row
	null []bool // nil: no nulls; else indexed like the values
	ints []int64
	flts []float64
	strs []string
	tri  []uint8 // conditions and booleans: triF, triT or triN
	// Lists: the offsets and validity of each row's list, and the
	// elements as one vec.
	list  arrow.Array
	elems *vec
}

// rows is how many values a result computed from v has: one per row of
// the batch, or one for a constant.
func (v *vec) rows(b *batch) int {
	if v.step == 0 {
		return 1
	}
	return b.n
}

func (v *vec) isNull(i int) bool {
	if v.kind == KindBool {
		return v.tri[i*v.step] == triN
	}
	if v.kind == KindList {
		return v.list.IsNull(i)
	}
	return v.null != nil && v.null[i*v.step]
}

// batch is the rows evaluation works on: column arrays by name.
type batch struct {
	n       int
	columns func(name string) arrow.Array
	err     error
}

func (b *batch) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Eval evaluates the filter over n rows whose columns column returns (nil
// for a column the rows lack, which reads as NULL), and returns for each
// row whether it matches (the condition is TRUE).
func (f *Filter) Eval(n int, column func(name string) arrow.Array) ([]bool, error) {
	out := make([]bool, n)
	_, err := f.EvalInto(n, column, out)
	return out, err
}

// EvalInto is Eval writing into out (at least n long); it returns the
// number of matching rows.
func (f *Filter) EvalInto(n int, column func(name string) arrow.Array, out []bool) (int, error) {
	b := &batch{n: n, columns: column}
	v := f.root.eval(b)
	if b.err != nil {
		return 0, b.err
	}
	count := 0
	for i := 0; i < n; i++ {
		m := v.tri[i*v.step] == triT
		out[i] = m
		if m {
			count++
		}
	}
	return count, nil
}

func constTri(t uint8) *vec { return &vec{kind: KindBool, step: 0, tri: []uint8{t}} }

func (l *litExpr) eval(b *batch) *vec {
	v := l.v
	switch v.Kind {
	case KindNull:
		if l.asBool {
			return constTri(triN)
		}
		return &vec{kind: KindNull, null: []bool{true}, ints: []int64{0}, flts: []float64{0}, strs: []string{""}}
	case KindBool:
		if v.Bool {
			return constTri(triT)
		}
		return constTri(triF)
	case KindInt, KindTimestamp:
		return &vec{kind: v.Kind, ints: []int64{v.Int}, flts: []float64{float64(v.Int)}}
	case KindFloat:
		return &vec{kind: v.Kind, flts: []float64{v.Float}}
	case KindString:
		return &vec{kind: v.Kind, strs: []string{v.Str}}
	}
	return constTri(triN)
}

func (c *colExpr) eval(b *batch) *vec {
	a := b.columns(c.name)
	if a == nil {
		return nullVec(c.k, b.n)
	}
	if a.Len() != b.n {
		b.fail(fmt.Errorf("filter: column %q has %d values for %d rows", c.name, a.Len(), b.n))
		return nullVec(c.k, b.n)
	}
	v, err := arrayVec(a, c.k)
	if err != nil {
		b.fail(fmt.Errorf("filter: column %q: %w", c.name, err))
		return nullVec(c.k, b.n)
	}
	return v
}

// nullVec is a column all of whose values are NULL.
func nullVec(k Kind, n int) *vec {
	switch k {
	case KindBool:
		return constTri(triN)
	case KindList:
		return &vec{kind: KindNull, null: []bool{true}, ints: []int64{0}, flts: []float64{0}, strs: []string{""}}
	}
	return &vec{kind: k, null: []bool{true}, ints: []int64{0}, flts: []float64{0}, strs: []string{""}}
}

func validity(a arrow.Array) []bool {
	if a.NullN() == 0 {
		return nil
	}
	null := make([]bool, a.Len())
	for i := range null {
		null[i] = a.IsNull(i)
	}
	return null
}

// arrayVec views an Arrow array as a vec of kind k.
func arrayVec(a arrow.Array, k Kind) (*vec, error) {
	v := &vec{kind: k, step: 1}
	switch arr := a.(type) {
	case *array.Boolean:
		v.tri = make([]uint8, arr.Len())
		for i := range v.tri {
			switch {
			case arr.IsNull(i):
				v.tri[i] = triN
			case arr.Value(i):
				v.tri[i] = triT
			}
		}
		return v, nil
	case *array.Int64:
		v.ints = arr.Int64Values()
	case *array.Int32:
		v.ints = widen(arr.Int32Values())
	case *array.Int16:
		v.ints = widen(arr.Int16Values())
	case *array.Int8:
		v.ints = widen(arr.Int8Values())
	case *array.Uint32:
		v.ints = widen(arr.Uint32Values())
	case *array.Uint16:
		v.ints = widen(arr.Uint16Values())
	case *array.Uint8:
		v.ints = widen(arr.Uint8Values())
	case *array.Float64:
		v.flts = arr.Float64Values()
	case *array.Float32:
		src := arr.Float32Values()
		v.flts = make([]float64, len(src))
		for i, x := range src {
			v.flts[i] = float64(x)
		}
	case *array.String:
		v.strs = make([]string, arr.Len())
		for i := range v.strs {
			v.strs[i] = arr.Value(i)
		}
	case *array.LargeString:
		v.strs = make([]string, arr.Len())
		for i := range v.strs {
			v.strs[i] = arr.Value(i)
		}
	case *array.Timestamp:
		unit := arr.DataType().(*arrow.TimestampType).Unit
		src := arr.TimestampValues()
		v.ints = make([]int64, len(src))
		for i, x := range src {
			v.ints[i] = toMicros(int64(x), unit)
		}
	case *array.Dictionary:
		return dictionaryVec(arr, k)
	case array.ListLike:
		if k != KindList {
			return nil, fmt.Errorf("unexpected list values")
		}
		v.list = arr
		_, elemKind, _ := kindOf(arr.DataType())
		elems, err := arrayVec(arr.ListValues(), elemKind)
		if err != nil {
			return nil, err
		}
		v.elems = elems
		return v, nil
	default:
		return nil, fmt.Errorf("unexpected Arrow type %s", a.DataType())
	}
	v.null = validity(a)
	return v, nil
}

func widen[T int8 | int16 | int32 | uint8 | uint16 | uint32](src []T) []int64 {
	out := make([]int64, len(src))
	for i, x := range src {
		out[i] = int64(x)
	}
	return out
}

func toMicros(v int64, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return v * 1e6
	case arrow.Millisecond:
		return v * 1e3
	case arrow.Nanosecond:
		if v < 0 && v%1e3 != 0 {
			return v/1e3 - 1 // floor, so that earlier instants stay earlier
		}
		return v / 1e3
	}
	return v
}

// floats returns the values of a numeric vec as floats.
func (v *vec) floats() []float64 {
	if v.flts == nil && v.ints != nil {
		v.flts = make([]float64, len(v.ints))
		for i, x := range v.ints {
			v.flts[i] = float64(x)
		}
	}
	return v.flts
}

func (c *cmpExpr) eval(b *batch) *vec {
	l, r := c.l.eval(b), c.r.eval(b)
	n := b.n
	if l.step == 0 && r.step == 0 {
		n = 1
	}
	out := &vec{kind: KindBool, step: 1, tri: make([]uint8, n)}
	if n == 1 && l.step == 0 && r.step == 0 {
		out.step = 0
	}
	ls, rs := l.step, r.step
	op := c.op
	switch c.in {
	case KindInt, KindTimestamp:
		compareOrdered(op, l.ints, r.ints, ls, rs, out.tri)
	case KindFloat:
		compareFloats(op, l.floats(), r.floats(), ls, rs, out.tri)
	case KindString:
		compareOrdered(op, l.strs, r.strs, ls, rs, out.tri)
	case KindBool:
		// FALSE < TRUE, as triF < triT; NULLs are marked below.
		compareOrdered(op, l.tri, r.tri, ls, rs, out.tri)
	}
	markNulls(out.tri, l, r)
	return out
}

// compareOrdered writes op(l[i], r[i]) for every row with Go's operators
// (integers, timestamps and strings order as SQL does); a step of 0
// repeats the first value. One loop per operator keeps the inner loop a
// compare and a store.
func compareOrdered[T int64 | string | uint8](op cmpOp, l, r []T, ls, rs int, out []uint8) {
	switch op {
	case opEQ:
		for i := range out {
			if l[i*ls] == r[i*rs] {
				out[i] = triT
			}
		}
	case opNE:
		for i := range out {
			if l[i*ls] != r[i*rs] {
				out[i] = triT
			}
		}
	case opLT:
		for i := range out {
			if l[i*ls] < r[i*rs] {
				out[i] = triT
			}
		}
	case opLE:
		for i := range out {
			if l[i*ls] <= r[i*rs] {
				out[i] = triT
			}
		}
	case opGT:
		for i := range out {
			if l[i*ls] > r[i*rs] {
				out[i] = triT
			}
		}
	case opGE:
		for i := range out {
			if l[i*ls] >= r[i*rs] {
				out[i] = triT
			}
		}
	}
}

// compareFloats is compareOrdered for floats, where NaN equals NaN and is
// above every number (SQL's order, not IEEE's).
func compareFloats(op cmpOp, l, r []float64, ls, rs int, out []uint8) {
	for i := range out {
		if op.holds(compareFloat(l[i*ls], r[i*rs])) {
			out[i] = triT
		}
	}
}

// markNulls sets NULL where either operand is NULL.
func markNulls(out []uint8, vs ...*vec) {
	for _, v := range vs {
		switch {
		case v.kind == KindBool:
			for i := range out {
				if v.tri[i*v.step] == triN {
					out[i] = triN
				}
			}
		case v.null != nil:
			for i := range out {
				if v.null[i*v.step] {
					out[i] = triN
				}
			}
		}
	}
}

func (l *logicExpr) eval(b *batch) *vec {
	x, y := l.l.eval(b), l.r.eval(b)
	table := &orTable
	if l.and {
		table = &andTable
	}
	if x.step == 0 && y.step == 0 {
		return constTri(table[x.tri[0]*3+y.tri[0]])
	}
	out := make([]uint8, b.n)
	xs, ys := x.step, y.step
	for i := range out {
		out[i] = table[x.tri[i*xs]*3+y.tri[i*ys]]
	}
	return &vec{kind: KindBool, step: 1, tri: out}
}

func (n *notExpr) eval(b *batch) *vec {
	x := n.x.eval(b)
	out := make([]uint8, len(x.tri))
	for i, t := range x.tri {
		out[i] = notTable[t]
	}
	return &vec{kind: KindBool, step: x.step, tri: out}
}

func (n *isNullExpr) eval(b *batch) *vec {
	x := n.x.eval(b)
	rows := x.rows(b)
	out := make([]uint8, rows)
	yes, no := triT, triF
	if n.not {
		yes, no = triF, triT
	}
	for i := range out {
		if x.isNull(i) {
			out[i] = yes
		} else {
			out[i] = no
		}
	}
	return &vec{kind: KindBool, step: x.step, tri: out}
}

func (n *isTruthExpr) eval(b *batch) *vec {
	x := n.x.eval(b)
	want := triF
	if n.truth {
		want = triT
	}
	out := make([]uint8, len(x.tri))
	for i, t := range x.tri {
		if (t == want) != n.not {
			out[i] = triT
		}
	}
	return &vec{kind: KindBool, step: x.step, tri: out}
}

func (n *inExpr) eval(b *batch) *vec {
	x := n.x.eval(b)
	rows := x.rows(b)
	miss := triF
	if n.hasNull {
		miss = triN // x IN (1, NULL) is NULL, not FALSE, when x is not 1
	}
	out := make([]uint8, rows)
	hit := func(i int) bool {
		switch n.in {
		case KindInt, KindTimestamp:
			_, ok := n.ints[x.ints[i]]
			return ok
		case KindFloat:
			_, ok := n.floats[x.floats()[i]]
			return ok
		case KindString:
			_, ok := n.strs[x.strs[i]]
			return ok
		case KindBool:
			return n.bools[x.tri[i]&1]
		}
		return false
	}
	for i := range out {
		switch {
		case x.isNull(i):
			out[i] = triN
		case hit(i):
			out[i] = triT
		default:
			out[i] = miss
		}
		if n.not {
			out[i] = notTable[out[i]]
		}
	}
	return &vec{kind: KindBool, step: x.step, tri: out}
}

func (n *likeExpr) eval(b *batch) *vec {
	x := n.x.eval(b)
	rows := x.rows(b)
	out := make([]uint8, rows)
	for i := range out {
		switch {
		case x.isNull(i):
			out[i] = triN
		case n.m.match(x.strs[i]):
			out[i] = triT
		}
	}
	return &vec{kind: KindBool, step: x.step, tri: out}
}

func (c *callExpr) eval(b *batch) *vec {
	switch c.fn {
	case "len":
		return evalLen(c.args[0].eval(b), b.n)
	case "list_contains":
		return c.evalContains(c.args[0].eval(b), c.args[1].eval(b), b.n)
	case "list_extract":
		return evalExtract(c.args[0].eval(b), c.args[1].eval(b), b.n, c.k)
	}
	return constTri(triN)
}

func evalLen(x *vec, n int) *vec {
	if x.kind == KindNull {
		return nullVec(KindInt, n)
	}
	rows := n
	if x.step == 0 {
		rows = 1
	}
	out := &vec{kind: KindInt, step: x.step, ints: make([]int64, rows)}
	for i := 0; i < rows; i++ {
		if x.isNull(i) {
			if out.null == nil {
				out.null = make([]bool, rows)
			}
			out.null[i] = true
			continue
		}
		if x.kind == KindList {
			start, end := listBounds(x.list, i)
			out.ints[i] = end - start
		} else {
			out.ints[i] = int64(utf8.RuneCountInString(x.strs[i*x.step]))
		}
	}
	return out
}

func listBounds(a arrow.Array, i int) (int64, int64) {
	switch l := a.(type) {
	case *array.List:
		s, e := l.ValueOffsets(i)
		return s, e
	case *array.LargeList:
		return l.ValueOffsets(i)
	}
	return 0, 0
}

func (c *callExpr) evalContains(list, probe *vec, n int) *vec {
	if list.kind == KindNull {
		return constTri(triN)
	}
	out := make([]uint8, n)
	el := list.elems
	for i := 0; i < n; i++ {
		if list.isNull(i) || probe.isNull(i) {
			out[i] = triN
			continue
		}
		start, end := listBounds(list.list, i)
		for j := start; j < end; j++ {
			k := int(j)
			if el.isNull(k) {
				continue
			}
			var eq bool
			switch c.in {
			case KindInt, KindTimestamp:
				eq = el.ints[k] == probe.ints[i*probe.step]
			case KindFloat:
				eq = compareFloat(el.floats()[k], probe.floats()[i*probe.step]) == 0
			case KindString:
				eq = el.strs[k] == probe.strs[i*probe.step]
			case KindBool:
				eq = el.tri[k] == probe.tri[i*probe.step]
			}
			if eq {
				out[i] = triT
				break
			}
		}
	}
	return &vec{kind: KindBool, step: 1, tri: out}
}

// evalExtract returns element idx (1-based; negative counts from the end)
// of each list, NULL when out of range.
func evalExtract(list, idx *vec, n int, k Kind) *vec {
	if list.kind == KindNull {
		return nullVec(k, n)
	}
	el := list.elems
	out := &vec{kind: k, step: 1, null: make([]bool, n)}
	switch k {
	case KindBool:
		out.tri = make([]uint8, n)
	case KindInt, KindTimestamp:
		out.ints = make([]int64, n)
	case KindFloat:
		out.flts = make([]float64, n)
	case KindString:
		out.strs = make([]string, n)
	}
	for i := 0; i < n; i++ {
		pos := int64(0)
		ok := !list.isNull(i) && !idx.isNull(i)
		if ok {
			start, end := listBounds(list.list, i)
			p := idx.ints[i*idx.step]
			switch {
			case p > 0 && p <= end-start:
				pos = start + p - 1
			case p < 0 && -p <= end-start:
				pos = end + p
			default:
				ok = false
			}
			ok = ok && !el.isNull(int(pos))
		}
		if !ok {
			out.null[i] = true
			if k == KindBool {
				out.tri[i] = triN
			}
			continue
		}
		switch k {
		case KindBool:
			out.tri[i] = el.tri[pos]
		case KindInt, KindTimestamp:
			out.ints[i] = el.ints[pos]
		case KindFloat:
			out.flts[i] = el.floats()[pos]
		case KindString:
			out.strs[i] = el.strs[pos]
		}
	}
	return out
}

// dictionaryVec expands a dictionary-encoded array (as Parquet readers may
// return strings) into plain values.
func dictionaryVec(arr *array.Dictionary, k Kind) (*vec, error) {
	dict, err := arrayVec(arr.Dictionary(), k)
	if err != nil {
		return nil, err
	}
	n := arr.Len()
	v := &vec{kind: k, step: 1, null: validity(arr)}
	switch {
	case dict.tri != nil:
		v.tri = make([]uint8, n)
	case dict.ints != nil:
		v.ints = make([]int64, n)
	case dict.flts != nil:
		v.flts = make([]float64, n)
	case dict.strs != nil:
		v.strs = make([]string, n)
	default:
		return nil, fmt.Errorf("unexpected dictionary of %s", arr.Dictionary().DataType())
	}
	for i := 0; i < n; i++ {
		if arr.IsNull(i) {
			if v.tri != nil {
				v.tri[i] = triN
			}
			continue
		}
		j := arr.GetValueIndex(i)
		switch {
		case v.tri != nil:
			v.tri[i] = dict.tri[j]
		case v.ints != nil:
			v.ints[i] = dict.ints[j]
		case v.flts != nil:
			v.flts[i] = dict.flts[j]
		default:
			v.strs[i] = dict.strs[j]
		}
	}
	return v, nil
}
