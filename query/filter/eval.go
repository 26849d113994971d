package filter

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Four-valued logic: every condition is TRUE, FALSE or NULL for a row, as
// in SQL; a fourth value marks a row whose value could not be computed
// (an integer overflow, a string that is not a number). Whether such a
// value fails the filter depends on whether DuckDB computes it, which
// depends on where it stands (see logicExpr.table): DuckDB selects rows
// with the filter's AND and OR chains a term at a time, each term on the
// rows the terms before it left undecided (FALSE AND x needs no x, but x
// AND FALSE fails where x does), except that it splits the filter's top
// AND into filters it orders itself (so there a term that rejects a row
// rejects it whichever term fails, unless they keep their order: see
// orderTopAnd); and it computes every term of a chain under NOT, IS or a
// comparison on every row (NOT (FALSE AND x) fails where x does).
const (
	triF uint8 = 0
	triT uint8 = 1
	triN uint8 = 2
	triE uint8 = 3
)

var (
	andTable = [16]uint8{
		triF, triF, triF, triF, // F AND x
		triF, triT, triN, triE, // T AND x
		triF, triN, triN, triE, // N AND x
		triF, triE, triE, triE, // E AND x
	}
	orTable = [16]uint8{
		triF, triT, triN, triE,
		triT, triT, triT, triT,
		triN, triT, triN, triE,
		triE, triT, triE, triE,
	}
	notTable = [4]uint8{triT, triF, triN, triE}

	// The tables as DuckDB applies them term after term: a failed value
	// of an earlier term fails the row, whatever comes after it.
	andInOrder, orInOrder = inOrder(andTable), inOrder(orTable)
	// The tables of a chain whose terms are all computed: any failed
	// value fails the row.
	andStrict, orStrict = strict(andTable), strict(orTable)
)

func inOrder(t [16]uint8) [16]uint8 {
	for y := range uint8(4) {
		t[triE*4+y] = triE
	}
	return t
}

func strict(t [16]uint8) [16]uint8 {
	t = inOrder(t)
	for x := range uint8(4) {
		t[x*4+triE] = triE
	}
	return t
}

func boolTri(b bool) uint8 {
	if b {
		return triT
	}
	return triF
}

// vec is the value of an expression over a batch of rows: one value per
// row (step 1), or one value for every row (step 0, a constant).
type vec struct {
	t    sqlType
	step int
	// null and bad mark NULL values and values that failed, for every
	// type but BOOLEAN (whose tri holds triN and triE); nil when none.
	null, bad []bool
	// errs says why each failed value failed, by value index.
	errs map[int]error
	tri  []uint8   // BOOLEAN
	ints []int64   // INTEGER, BIGINT; DATE and TIMESTAMP as microseconds since the epoch (UTC)
	flts []float64 // DOUBLE; FLOAT (float32 values, held exactly)
	decs []i128    // DECIMAL: unscaled values
	strs []string  // VARCHAR
	// Lists: value i is elems[offs[i]:offs[i+1]].
	offs  []int64
	elems *vec
}

// newVec makes a vec of type t holding n values, all zero and valid.
func newVec(t sqlType, n, step int) *vec {
	v := &vec{t: t, step: step}
	switch t.id {
	case tBool:
		v.tri = make([]uint8, n)
	case tInt32, tInt64, tDate, tTimestamp, tTimestampTZ:
		v.ints = make([]int64, n)
	case tFloat32, tFloat64:
		v.flts = make([]float64, n)
	case tDecimal:
		v.decs = make([]i128, n)
	case tString:
		v.strs = make([]string, n)
	case tList:
		v.offs = make([]int64, n+1)
		v.elems = newVec(*t.elem, 0, 1)
	case tNull:
		v.null = make([]bool, n)
		for i := range v.null {
			v.null[i] = true
		}
	}
	return v
}

// nullConst is NULL of type t, for every row.
func nullConst(t sqlType) *vec {
	v := newVec(t, 1, 0)
	v.setNull(0)
	return v
}

// size is the number of values v holds for a batch of n rows.
func (v *vec) size(n int) int {
	if v.step == 0 {
		return 1
	}
	return n
}

func (v *vec) isNull(i int) bool {
	if v.t.id == tBool {
		return v.tri[i*v.step] == triN
	}
	return v.null != nil && v.null[i*v.step]
}

func (v *vec) isBad(i int) bool {
	if v.t.id == tBool {
		return v.tri[i*v.step] == triE
	}
	return v.bad != nil && v.bad[i*v.step]
}

// valid reports whether row i holds a value (neither NULL nor failed).
func (v *vec) valid(i int) bool { return !v.isNull(i) && !v.isBad(i) }

// setNull marks value i (an index into the vec, not a row) NULL.
func (v *vec) setNull(i int) {
	if v.t.id == tBool {
		v.tri[i] = triN
		return
	}
	if v.null == nil {
		v.null = make([]bool, v.len())
	}
	v.null[i] = true
}

// fail marks value i failed, for reason err.
func (v *vec) fail(i int, err error) {
	if v.errs == nil {
		v.errs = map[int]error{}
	}
	v.errs[i] = err
	if v.t.id == tBool {
		v.tri[i] = triE
		return
	}
	if v.bad == nil {
		v.bad = make([]bool, v.len())
	}
	v.bad[i] = true
}

// errAt says why value j failed.
func (v *vec) errAt(j int) error {
	if err := v.errs[j]; err != nil {
		return err
	}
	return valueError("a value could not be computed")
}

// rowErr says why row i failed.
func (v *vec) rowErr(i int) error { return v.errAt(i * v.step) }

// failRow marks row i of out failed as row i of in is.
func (out *vec) failRow(i int, in *vec) { out.fail(i*out.step, in.rowErr(i)) }

// len is the number of values stored.
func (v *vec) len() int {
	switch {
	case v.tri != nil:
		return len(v.tri)
	case v.ints != nil:
		return len(v.ints)
	case v.flts != nil:
		return len(v.flts)
	case v.decs != nil:
		return len(v.decs)
	case v.strs != nil:
		return len(v.strs)
	case v.offs != nil:
		return len(v.offs) - 1
	}
	return len(v.null)
}

// inherit marks value i of out NULL or failed where row i of any of the
// inputs is: a computed value is NULL when an input is, and fails when
// an input failed (which wins over NULL: the input had to be computed).
// It reports whether row i is valid in all inputs.
func (out *vec) inherit(i int, ins ...*vec) bool {
	ok := true
	for _, in := range ins {
		if in.isBad(i) {
			out.failRow(i, in)
			return false
		}
		if in.isNull(i) {
			ok = false
		}
	}
	if !ok {
		out.setNull(i * out.step)
	}
	return ok
}

// stepOf returns the step of a result computed from ins: 0 when every
// input is a constant.
func stepOf(ins ...*vec) int {
	for _, in := range ins {
		if in.step != 0 {
			return 1
		}
	}
	return 0
}

// result makes the vec of a computation from ins over a batch of n rows.
func result(t sqlType, n int, ins ...*vec) *vec {
	step := stepOf(ins...)
	if step == 0 {
		n = 1
	}
	return newVec(t, n, step)
}

// batch is the rows evaluation works on: column arrays by name.
type batch struct {
	n       int
	columns func(name string) arrow.Array
	cache   map[string]*vec
	err     error
}

func (b *batch) failWith(err error) {
	if b.err == nil {
		b.err = err
	}
}

// EvalError is a filter failing on a row: a value it needs cannot be
// computed (an integer overflow, a string that is not a number, as
// DuckDB reports them). Row is the row of the batch.
type EvalError struct {
	Row int
	Err error
}

func (e *EvalError) Error() string { return e.Err.Error() }
func (e *EvalError) Unwrap() error { return e.Err }

// ErrValue is wrapped by the errors of values that cannot be computed.
var ErrValue = errors.New("filter value error")

// valueErr is a value that cannot be computed; its message is the
// reason alone (it is quoted in filter errors and in EvalError).
type valueErr struct{ msg string }

func (e *valueErr) Error() string        { return e.msg }
func (e *valueErr) Is(target error) bool { return target == ErrValue }

func valueError(format string, args ...any) error {
	return &valueErr{msg: fmt.Sprintf(format, args...)}
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
// number of matching rows. A row whose outcome cannot be computed fails
// the whole evaluation with an *EvalError.
func (f *Filter) EvalInto(n int, column func(name string) arrow.Array, out []bool) (int, error) {
	b := &batch{n: n, columns: column, cache: map[string]*vec{}}
	v := f.root.eval(b)
	if b.err != nil {
		return 0, b.err
	}
	count := 0
	for i := 0; i < n; i++ {
		t := v.tri[i*v.step]
		if t == triE {
			return 0, &EvalError{Row: i, Err: fmt.Errorf("filter %q: %w", clip(f.text), v.rowErr(i))}
		}
		out[i] = t == triT
		if out[i] {
			count++
		}
	}
	return count, nil
}

// The typed expression tree.
type expr interface {
	typ() sqlType
	// eval computes the expression over a batch of rows.
	eval(b *batch) *vec
	// bounds says what values the expression may take over a group of
	// rows described by statistics.
	bounds(st *statsScope) abstract
}

// constExpr is a constant: a literal, or an expression of constants
// folded when the filter was compiled.
type constExpr struct {
	v *vec
	// literal marks a string or number written in the filter, which
	// DuckDB casts to the type it meets (count = '10').
	literal bool
}

func (c *constExpr) typ() sqlType        { return c.v.t }
func (c *constExpr) eval(*batch) *vec    { return c.v }
func (c *constExpr) isNull() bool        { return c.v.isNull(0) }
func (c *constExpr) stringLiteral() bool { return c.literal && c.v.t.id == tString }

type colExpr struct {
	name string
	t    sqlType
	// notNull says the column holds no NULL (the episode and frame
	// columns, and columns the schema does not let be NULL).
	notNull bool
}

func (c *colExpr) typ() sqlType { return c.t }

func (c *colExpr) eval(b *batch) *vec {
	if v, ok := b.cache[c.name]; ok {
		return v
	}
	v := c.read(b)
	b.cache[c.name] = v
	return v
}

func (c *colExpr) read(b *batch) *vec {
	a := b.columns(c.name)
	if a == nil {
		return nullConst(c.t)
	}
	if a.Len() != b.n {
		b.failWith(fmt.Errorf("filter: column %q has %d values for %d rows", c.name, a.Len(), b.n))
		return nullConst(c.t)
	}
	v, err := arrayVec(a, c.t)
	if err != nil {
		b.failWith(fmt.Errorf("filter: column %q: %w", c.name, err))
		return nullConst(c.t)
	}
	return v
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

// arrayVec views an Arrow array as a vec of type t.
func arrayVec(a arrow.Array, t sqlType) (*vec, error) {
	v := &vec{t: t, step: 1}
	switch arr := a.(type) {
	case *array.Boolean:
		if t.id != tBool {
			return nil, fmt.Errorf("unexpected boolean values")
		}
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
	case *array.Date32:
		src := arr.Date32Values()
		v.ints = make([]int64, len(src))
		for i, d := range src {
			v.ints[i] = int64(d) * microsPerDay
		}
	case *array.Timestamp:
		unit := arr.DataType().(*arrow.TimestampType).Unit
		src := arr.TimestampValues()
		v.ints = make([]int64, len(src))
		for i, x := range src {
			v.ints[i] = toMicros(int64(x), unit)
		}
	case *array.Dictionary:
		return dictionaryVec(arr, t)
	case array.ListLike:
		if t.id != tList {
			return nil, fmt.Errorf("unexpected list values")
		}
		elems, err := arrayVec(arr.ListValues(), *t.elem)
		if err != nil {
			return nil, err
		}
		v.elems = elems
		v.offs = make([]int64, arr.Len()+1)
		for i := 0; i < arr.Len(); i++ {
			start, end := arr.ValueOffsets(i)
			v.offs[i], v.offs[i+1] = start, end
		}
	default:
		return nil, fmt.Errorf("unexpected Arrow type %s", a.DataType())
	}
	if v.len() != a.Len() {
		return nil, fmt.Errorf("%s array holds %d values for %d rows", a.DataType(), v.len(), a.Len())
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

// dictionaryVec expands a dictionary-encoded array (as Parquet readers may
// return strings) into plain values.
func dictionaryVec(arr *array.Dictionary, t sqlType) (*vec, error) {
	dict, err := arrayVec(arr.Dictionary(), t)
	if err != nil {
		return nil, err
	}
	if t.id == tList {
		return nil, fmt.Errorf("unexpected dictionary of lists")
	}
	n := arr.Len()
	idx := make([]int, n)
	for i := range idx {
		if !arr.IsNull(i) {
			idx[i] = arr.GetValueIndex(i)
		}
	}
	v := gather(dict, idx)
	for i := 0; i < n; i++ {
		if arr.IsNull(i) {
			v.setNull(i)
		}
	}
	return v, nil
}

// gather returns the values of v at the given indexes, as a vec of one
// value per index.
func gather(v *vec, idx []int) *vec {
	out := newVec(v.t, len(idx), 1)
	for k, i := range idx {
		copyValue(out, k, v, i)
	}
	return out
}

// copyValue sets value k of out to value j of in (indexes into the vecs,
// not rows; lists append their elements to out's).
func copyValue(out *vec, k int, in *vec, j int) {
	if in.badAt(j) {
		out.fail(k, in.errAt(j))
		if out.t.id == tList {
			out.offs[k+1] = out.offs[k]
		}
		return
	}
	if in.nullAt(j) {
		out.setNull(k)
		if out.t.id == tList {
			out.offs[k+1] = out.offs[k]
		}
		return
	}
	switch out.t.id {
	case tBool:
		out.tri[k] = in.tri[j]
	case tInt32, tInt64, tDate, tTimestamp, tTimestampTZ:
		out.ints[k] = in.ints[j]
	case tFloat32, tFloat64:
		out.flts[k] = in.flts[j]
	case tDecimal:
		out.decs[k] = in.decs[j]
	case tString:
		out.strs[k] = in.strs[j]
	case tList:
		start, end := in.offs[j], in.offs[j+1]
		base := int(out.offs[k])
		out.elems.grow(int(end - start))
		for e := start; e < end; e++ {
			copyValue(out.elems, base+int(e-start), in.elems, int(e))
		}
		out.offs[k+1] = out.offs[k] + end - start
	}
}

// grow adds n zero values to a vec of step 1 (the elements of a list
// being built).
func (v *vec) grow(n int) {
	switch v.t.id {
	case tBool:
		v.tri = append(v.tri, make([]uint8, n)...)
	case tInt32, tInt64, tDate, tTimestamp, tTimestampTZ:
		v.ints = append(v.ints, make([]int64, n)...)
	case tFloat32, tFloat64:
		v.flts = append(v.flts, make([]float64, n)...)
	case tDecimal:
		v.decs = append(v.decs, make([]i128, n)...)
	case tString:
		v.strs = append(v.strs, make([]string, n)...)
	case tList:
		last := v.offs[len(v.offs)-1]
		for range n {
			v.offs = append(v.offs, last)
		}
	case tNull:
		for range n {
			v.null = append(v.null, true)
		}
		return
	}
	if v.null != nil {
		v.null = append(v.null, make([]bool, n)...)
	}
	if v.bad != nil {
		v.bad = append(v.bad, make([]bool, n)...)
	}
}

// logicExpr is a chain of AND or OR.
type logicExpr struct {
	and   bool
	terms []expr
	// selecting marks a chain whose outcome only selects rows (the
	// filter's own AND and OR, not one under NOT or IS): there NULL and
	// FALSE both leave a row out, so FALSE AND x and NULL AND x need no
	// x, and a value of x that fails does not fail the filter.
	selecting bool
	// split marks the filter's top AND (and the AND chains directly under
	// it), which DuckDB splits into filters.
	split bool
	// list marks the chain an [NOT] IN list becomes, which DuckDB
	// computes as one term of the chain it stands in: it is neither
	// merged into that chain nor split.
	list bool
	// whole marks the chain of an x NOT IN (...) that DuckDB does not
	// rewrite into a chain (see markWhole): its NOT IN computes every
	// value of the list on every row, so 0 NOT IN (0, 1 + big) fails
	// where 1 + big overflows although 0 <> 0 decides the row.
	whole bool
	// between marks the chain x >= lo AND x <= hi of an x BETWEEN lo AND
	// hi. It is not merged into the chain it stands in, so that in the
	// top AND, which DuckDB splits into filters run in any order, it
	// still computes its comparisons in order, as DuckDB's filter does:
	// nums[0] BETWEEN -big AND len(tags) fails where -big overflows,
	// though nums[0] <= len(tags) is NULL on every row.
	between bool
	// ordered marks the filter's top AND that DuckDB computes in written
	// order (see orderTopAnd).
	ordered bool
}

// table returns how the chain combines its terms' values (see the
// four-valued logic above).
func (l *logicExpr) table() *[16]uint8 {
	switch {
	case l.whole:
		return &andStrict
	case l.ordered: // the top AND, which is split
		return &andInOrder
	case l.split:
		return &andTable
	case !l.selecting && l.and:
		return &andStrict
	case !l.selecting:
		return &orStrict
	case l.and:
		return &andInOrder
	}
	return &orInOrder
}

// selectTri is the outcome of a condition for selecting rows: NULL counts
// as FALSE.
var selectTri = [4]uint8{triF, triT, triF, triE}

func (l *logicExpr) typ() sqlType { return typBool }

func (l *logicExpr) eval(b *batch) *vec { return l.combine(b, l.table(), l.selecting) }

// evalInOrder computes the chain term after term, as DuckDB does where it
// evaluates one at once: a term decided by those before it computes
// nothing more (see plannedFailure).
func (l *logicExpr) evalInOrder(b *batch) *vec {
	if l.and {
		return l.combine(b, &andInOrder, false)
	}
	return l.combine(b, &orInOrder, false)
}

// combine computes the terms and combines their values by table; a
// selecting chain counts NULL as FALSE.
func (l *logicExpr) combine(b *batch, table *[16]uint8, selecting bool) *vec {
	acc := l.terms[0].eval(b)
	if selecting {
		acc = l.forSelection(acc)
	}
	for _, term := range l.terms[1:] {
		y := term.eval(b)
		if selecting {
			y = l.forSelection(y)
		}
		n := b.n
		step := stepOf(acc, y)
		if step == 0 {
			n = 1
		}
		out := &vec{t: typBool, step: step, tri: make([]uint8, n)}
		xs, ys := acc.step, y.step
		for i := range out.tri {
			t := table[acc.tri[i*xs]*4+y.tri[i*ys]]
			out.tri[i] = t
			if t == triE {
				from := acc
				if acc.tri[i*xs] != triE {
					from = y
				}
				out.fail(i, from.rowErr(i))
			}
		}
		acc = out
	}
	return acc
}

// forSelection maps NULL to FALSE.
func (l *logicExpr) forSelection(v *vec) *vec {
	out := &vec{t: typBool, step: v.step, tri: make([]uint8, len(v.tri)), errs: v.errs}
	for i, t := range v.tri {
		out.tri[i] = selectTri[t]
	}
	return out
}

// markSelecting marks the AND and OR chains that only select rows: the
// filter's root and the chains directly under such a chain; and the
// filter's top AND as split.
func markSelecting(e expr) { markSelectingAt(e, true) }

func markSelectingAt(e expr, top bool) {
	if l, ok := e.(*logicExpr); ok {
		l.selecting = true
		l.split = top && l.and && !l.list && !l.between
		for _, t := range l.terms {
			markSelectingAt(t, l.split)
		}
	}
}

type notExpr struct{ x expr }

func (n *notExpr) typ() sqlType { return typBool }

func (n *notExpr) eval(b *batch) *vec {
	x := n.x.eval(b)
	out := &vec{t: typBool, step: x.step, tri: make([]uint8, len(x.tri)), errs: x.errs}
	for i, t := range x.tri {
		out.tri[i] = notTable[t]
	}
	return out
}

// predicate computes a condition of one operand row by row: failed where
// x failed, onNull where x is NULL, else f of x's value index.
func predicate(x *vec, n int, onNull uint8, f func(j int) bool) *vec {
	out := result(typBool, n, x)
	for i := range out.tri {
		switch {
		case x.isBad(i):
			out.failRow(i, x)
		case x.isNull(i):
			out.tri[i] = onNull
		default:
			out.tri[i] = boolTri(f(i * x.step))
		}
	}
	return out
}

// isNullExpr is x IS [NOT] NULL.
type isNullExpr struct {
	x   expr
	not bool
}

func (n *isNullExpr) typ() sqlType { return typBool }

func (n *isNullExpr) eval(b *batch) *vec {
	return predicate(n.x.eval(b), b.n, boolTri(!n.not), func(int) bool { return n.not })
}

// isTruthExpr is x IS [NOT] TRUE / FALSE.
type isTruthExpr struct {
	x          expr
	truth, not bool
}

func (n *isTruthExpr) typ() sqlType { return typBool }

func (n *isTruthExpr) eval(b *batch) *vec {
	x := n.x.eval(b)
	want := boolTri(n.truth)
	out := &vec{t: typBool, step: x.step, tri: make([]uint8, len(x.tri)), errs: x.errs}
	for i, t := range x.tri {
		if t == triE {
			out.tri[i] = triE
			continue
		}
		out.tri[i] = boolTri((t == want) != n.not)
	}
	return out
}

// cmpOp is a comparison operator.
type cmpOp uint8

const (
	opEQ cmpOp = iota
	opNE
	opLT
	opLE
	opGT
	opGE
)

var cmpOps = map[string]cmpOp{"=": opEQ, "<>": opNE, "<": opLT, "<=": opLE, ">": opGT, ">=": opGE}

// flip returns the operator with its operands swapped (a < b is b > a).
func (op cmpOp) flip() cmpOp {
	switch op {
	case opLT:
		return opGT
	case opLE:
		return opGE
	case opGT:
		return opLT
	case opGE:
		return opLE
	}
	return op
}

func (op cmpOp) holds(c int) bool {
	switch op {
	case opEQ:
		return c == 0
	case opNE:
		return c != 0
	case opLT:
		return c < 0
	case opLE:
		return c <= 0
	case opGT:
		return c > 0
	}
	return c >= 0
}

// cmpExpr compares two values of one type (the binder casts them to it).
type cmpExpr struct {
	op   cmpOp
	l, r expr
	// listed marks a comparison of an IN list, whose operands DuckDB
	// computes as written: its constants are not moved (moveConstants).
	listed bool
}

func (c *cmpExpr) typ() sqlType { return typBool }

func (c *cmpExpr) eval(b *batch) *vec {
	l, r := c.l.eval(b), c.r.eval(b)
	out := result(typBool, b.n, l, r)
	ls, rs := l.step, r.step
	switch l.t.id {
	case tInt32, tInt64, tDate, tTimestamp, tTimestampTZ:
		compareOrdered(c.op, l.ints, r.ints, ls, rs, out.tri)
	case tFloat32, tFloat64:
		compareFloats(c.op, l.flts, r.flts, ls, rs, out.tri)
	case tString:
		compareOrdered(c.op, l.strs, r.strs, ls, rs, out.tri)
	case tBool:
		// FALSE < TRUE, as triF < triT; NULLs are marked below.
		compareOrdered(c.op, l.tri, r.tri, ls, rs, out.tri)
	case tDecimal:
		for i := range out.tri {
			out.tri[i] = boolTri(c.op.holds(l.decs[i*ls].cmp(r.decs[i*rs])))
		}
	case tList:
		for i := range out.tri {
			if l.valid(i) && r.valid(i) {
				out.tri[i] = boolTri(c.op.holds(compareLists(l, i*ls, r, i*rs)))
			}
		}
	}
	markNulls(out, l, r)
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
			out[i] = boolTri(l[i*ls] == r[i*rs])
		}
	case opNE:
		for i := range out {
			out[i] = boolTri(l[i*ls] != r[i*rs])
		}
	case opLT:
		for i := range out {
			out[i] = boolTri(l[i*ls] < r[i*rs])
		}
	case opLE:
		for i := range out {
			out[i] = boolTri(l[i*ls] <= r[i*rs])
		}
	case opGT:
		for i := range out {
			out[i] = boolTri(l[i*ls] > r[i*rs])
		}
	case opGE:
		for i := range out {
			out[i] = boolTri(l[i*ls] >= r[i*rs])
		}
	}
}

// compareFloats is compareOrdered for floats, where NaN equals NaN and is
// above every number (SQL's order, not IEEE's).
func compareFloats(op cmpOp, l, r []float64, ls, rs int, out []uint8) {
	for i := range out {
		out[i] = boolTri(op.holds(compareFloat(l[i*ls], r[i*rs])))
	}
}

// markNulls sets NULL where an operand is NULL and the failure marker
// where one failed.
func markNulls(out *vec, ins ...*vec) {
	for _, in := range ins {
		switch {
		case in.t.id == tBool:
			for i := range out.tri {
				switch t := in.tri[i*in.step]; {
				case t == triE && out.tri[i] != triE:
					out.failRow(i, in)
				case t == triN && out.tri[i] != triE:
					out.tri[i] = triN
				}
			}
		case in.null != nil || in.bad != nil:
			for i := range out.tri {
				switch {
				case in.bad != nil && in.bad[i*in.step]:
					if out.tri[i] != triE {
						out.failRow(i, in)
					}
				case in.null != nil && in.null[i*in.step] && out.tri[i] != triE:
					out.tri[i] = triN
				}
			}
		}
	}
}

// compareValuesAt orders value i of a and value j of b (indexes into the
// vecs), both valid and of one type: NaN above every number, FALSE
// before TRUE, lists element by element.
func compareValuesAt(a *vec, i int, b *vec, j int) int {
	switch a.t.id {
	case tBool:
		return int(a.tri[i]) - int(b.tri[j])
	case tInt32, tInt64, tDate, tTimestamp, tTimestampTZ:
		return cmp.Compare(a.ints[i], b.ints[j])
	case tFloat32, tFloat64:
		return compareFloat(a.flts[i], b.flts[j])
	case tDecimal:
		return a.decs[i].cmp(b.decs[j])
	case tString:
		return cmp.Compare(a.strs[i], b.strs[j])
	case tList:
		return compareLists(a, i, b, j)
	}
	return 0
}

// compareLists orders two lists as DuckDB does: element by element, a
// NULL element above every value (and equal to another NULL), a list
// before the longer lists it starts.
func compareLists(a *vec, i int, b *vec, j int) int {
	as, ae := a.offs[i], a.offs[i+1]
	bs, be := b.offs[j], b.offs[j+1]
	for k := int64(0); as+k < ae && bs+k < be; k++ {
		x, y := int(as+k), int(bs+k)
		xn, yn := !a.elems.valid(x), !b.elems.valid(y)
		switch {
		case xn && yn:
			continue
		case xn:
			return 1
		case yn:
			return -1
		}
		if c := compareValuesAt(a.elems, x, b.elems, y); c != 0 {
			return c
		}
	}
	return cmp.Compare(ae-as, be-bs)
}

// distinctExpr is x IS [NOT] DISTINCT FROM y: equality where NULL equals
// NULL, never NULL itself.
type distinctExpr struct {
	l, r expr
	not  bool
}

func (d *distinctExpr) typ() sqlType { return typBool }

func (d *distinctExpr) eval(b *batch) *vec {
	l, r := d.l.eval(b), d.r.eval(b)
	out := result(typBool, b.n, l, r)
	for i := range out.tri {
		switch {
		case l.isBad(i):
			out.failRow(i, l)
			continue
		case r.isBad(i):
			out.failRow(i, r)
			continue
		case l.isNull(i) || r.isNull(i):
			out.tri[i] = boolTri((l.isNull(i) != r.isNull(i)) != d.not)
		default:
			same := compareValuesAt(l, i*l.step, r, i*r.step) == 0
			out.tri[i] = boolTri(same == d.not)
		}
	}
	return out
}

// inExpr is x [NOT] IN (values...) with constant values: a set lookup.
// (IN with expressions among the values is bound as a chain of OR.)
type inExpr struct {
	x       expr
	values  *vec // the distinct non-NULL values, of x's type
	hasNull bool // NULL is among the values: a miss is NULL, not FALSE
	not     bool
	ints    map[int64]struct{}
	floats  map[float64]struct{}
	hasNaN  bool
	strs    map[string]struct{}
	decs    map[i128]struct{}
	bools   [2]bool
}

func (n *inExpr) typ() sqlType { return typBool }

// index builds the lookup set of the values.
func (n *inExpr) index() {
	v := n.values
	switch v.t.id {
	case tInt32, tInt64, tDate, tTimestamp, tTimestampTZ:
		n.ints = map[int64]struct{}{}
		for _, x := range v.ints {
			n.ints[x] = struct{}{}
		}
	case tFloat32, tFloat64:
		n.floats = map[float64]struct{}{}
		for _, x := range v.flts {
			if x != x {
				n.hasNaN = true
			}
			n.floats[x] = struct{}{}
		}
	case tDecimal:
		n.decs = map[i128]struct{}{}
		for _, x := range v.decs {
			n.decs[x] = struct{}{}
		}
	case tString:
		n.strs = map[string]struct{}{}
		for _, x := range v.strs {
			n.strs[x] = struct{}{}
		}
	case tBool:
		for _, x := range v.tri {
			n.bools[x&1] = true
		}
	}
}

func (n *inExpr) eval(b *batch) *vec {
	x := n.x.eval(b)
	out := result(typBool, b.n, x)
	miss := triF
	if n.hasNull {
		miss = triN // x IN (1, NULL) is NULL, not FALSE, when x is not 1
	}
	for i := range out.tri {
		var t uint8
		switch {
		case x.isBad(i):
			out.failRow(i, x)
			continue
		case x.isNull(i):
			t = triN
		case n.hit(x, i*x.step):
			t = triT
		default:
			t = miss
		}
		if n.not {
			t = notTable[t]
		}
		out.tri[i] = t
	}
	return out
}

func (n *inExpr) hit(x *vec, j int) bool {
	switch x.t.id {
	case tInt32, tInt64, tDate, tTimestamp, tTimestampTZ:
		_, ok := n.ints[x.ints[j]]
		return ok
	case tFloat32, tFloat64:
		f := x.flts[j]
		if f != f {
			return n.hasNaN
		}
		_, ok := n.floats[f]
		return ok
	case tDecimal:
		_, ok := n.decs[x.decs[j]]
		return ok
	case tString:
		_, ok := n.strs[x.strs[j]]
		return ok
	case tBool:
		return n.bools[x.tri[j]&1]
	}
	return false
}

// likeExpr is x [NOT] LIKE / ILIKE pattern, the pattern a constant.
type likeExpr struct {
	x     expr
	m     *likeMatcher
	ilike bool
}

func (n *likeExpr) typ() sqlType { return typBool }

func (n *likeExpr) eval(b *batch) *vec {
	x := n.x.eval(b)
	return predicate(x, b.n, triN, func(j int) bool {
		s := x.strs[j]
		if n.ilike {
			s = lowerString(s)
		}
		return n.m.match(s)
	})
}
