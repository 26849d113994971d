package filter

import (
	"math"
	"strings"
	"unicode/utf8"
)

// Functions the filter language knows, by lower-case name, with the
// canonical name used in messages. The names are DuckDB's.
var functions = map[string]string{
	"abs":              "abs",
	"lower":            "lower",
	"lcase":            "lower",
	"upper":            "upper",
	"ucase":            "upper",
	"len":              "length",
	"length":           "length",
	"char_length":      "length",
	"character_length": "length",
	"array_length":     "length",
	"strlen":           "strlen",
	"coalesce":         "coalesce",
	"ifnull":           "coalesce",
	"list_contains":    "list_contains",
	"array_contains":   "list_contains",
	"list_has":         "list_contains",
	"array_has":        "list_contains",
	"list_extract":     "list_extract",
	"list_element":     "list_extract",
	"array_extract":    "list_extract",
	"concat":           "concat",
}

// supportedFunctions lists them for messages.
const supportedFunctions = "abs, lower, upper, length (len), strlen, coalesce (ifnull), concat, list_contains, list_extract (list[i])"

// evalAll evaluates expressions over a batch.
func evalAll(b *batch, es []expr) []*vec {
	vals := make([]*vec, len(es))
	for k, e := range es {
		vals[k] = e.eval(b)
	}
	return vals
}

// absExpr is abs(x).
type absExpr struct{ x expr }

func (a *absExpr) typ() sqlType { return a.x.typ() }

func (a *absExpr) eval(b *batch) *vec {
	return signOp(a.x.eval(b), b.n, "abs(%d)", func(v int64) int64 { return max(v, -v) }, math.Abs,
		func(d i128) i128 {
			if d.isNeg() {
				return d.neg()
			}
			return d
		})
}

// lowerString and upperString change case as DuckDB does (Unicode's
// simple mappings; ß upper-cases to ẞ).
func lowerString(s string) string { return strings.ToLower(s) }
func upperString(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "ß", "ẞ")) }

// stringFunc applies a function to every string.
type stringFunc struct {
	x  expr
	fn func(string) string
}

func (f *stringFunc) typ() sqlType { return typString }

func (f *stringFunc) eval(b *batch) *vec {
	x := f.x.eval(b)
	out := result(typString, b.n, x)
	for i := range out.size(b.n) {
		if out.inherit(i, x) {
			out.strs[i*out.step] = f.fn(x.strs[i*x.step])
		}
	}
	return out
}

// lengthExpr is the length of a string (in characters, or bytes for
// strlen) or a list (in elements), a BIGINT.
type lengthExpr struct {
	x     expr
	bytes bool
}

func (l *lengthExpr) typ() sqlType { return typInt64 }

func (l *lengthExpr) eval(b *batch) *vec {
	x := l.x.eval(b)
	out := result(typInt64, b.n, x)
	for i := range out.size(b.n) {
		if !out.inherit(i, x) {
			continue
		}
		k := i * x.step
		switch {
		case x.t.id == tList:
			out.ints[i*out.step] = x.offs[k+1] - x.offs[k]
		case l.bytes:
			out.ints[i*out.step] = int64(len(x.strs[k]))
		default:
			out.ints[i*out.step] = int64(utf8.RuneCountInString(x.strs[k]))
		}
	}
	return out
}

// coalesceExpr is coalesce(a, b, ...): the first value that is not NULL.
// Its arguments are cast to its type. A later argument is only needed
// where the earlier ones are NULL, so only there can it fail the row.
type coalesceExpr struct {
	args []expr
	t    sqlType
}

func (c *coalesceExpr) typ() sqlType { return c.t }

func (c *coalesceExpr) eval(b *batch) *vec {
	vals := evalAll(b, c.args)
	out := result(c.t, b.n, vals...)
	for i := range out.size(b.n) {
		j := i * out.step
		chosen := false
		for _, v := range vals {
			if v.isNull(i) {
				continue
			}
			copyValue(out, j, v, i*v.step)
			chosen = true
			break
		}
		if !chosen {
			out.setNull(j)
			if c.t.id == tList {
				out.offs[j+1] = out.offs[j]
			}
		}
	}
	return out
}

// concatExpr is a || b (or concat(a, b, ...)) of strings: the binder
// casts the operands to VARCHAR. || is NULL when an operand is; concat()
// skips NULLs, as in DuckDB.
type concatExpr struct {
	args      []expr
	skipNulls bool
}

func (c *concatExpr) typ() sqlType { return typString }

func (c *concatExpr) eval(b *batch) *vec {
	vals := evalAll(b, c.args)
	out := result(typString, b.n, vals...)
	var sb strings.Builder
	for i := range out.size(b.n) {
		if c.skipNulls {
			if failed := firstBad(vals, i); failed != nil {
				out.failRow(i, failed)
				continue
			}
		} else if !out.inherit(i, vals...) {
			continue
		}
		sb.Reset()
		for _, v := range vals {
			if !v.isNull(i) {
				sb.WriteString(v.strs[i*v.step])
			}
		}
		out.strs[i*out.step] = sb.String()
	}
	return out
}

func firstBad(vals []*vec, i int) *vec {
	for _, v := range vals {
		if v.isBad(i) {
			return v
		}
	}
	return nil
}

// listConcatExpr is a || b of lists (of one element type).
type listConcatExpr struct {
	l, r expr
	t    sqlType
}

func (c *listConcatExpr) typ() sqlType { return c.t }

func (c *listConcatExpr) eval(b *batch) *vec {
	l, r := c.l.eval(b), c.r.eval(b)
	out := result(c.t, b.n, l, r)
	for i := range out.size(b.n) {
		j := i * out.step
		if !out.inherit(i, l, r) {
			out.offs[j+1] = out.offs[j]
			continue
		}
		base := out.offs[j]
		for _, in := range []*vec{l, r} {
			k := i * in.step
			start, end := in.offs[k], in.offs[k+1]
			at := int(base)
			out.elems.grow(int(end - start))
			for e := start; e < end; e++ {
				copyValue(out.elems, at, in.elems, int(e))
				at++
			}
			base += end - start
		}
		out.offs[j+1] = base
	}
	return out
}

// listLitExpr is [a, b, ...]: one list per row of its elements' values,
// cast to one element type.
type listLitExpr struct {
	elems []expr
	t     sqlType
}

func (l *listLitExpr) typ() sqlType { return l.t }

func (l *listLitExpr) eval(b *batch) *vec {
	vals := evalAll(b, l.elems)
	out := result(l.t, b.n, vals...)
	for i := range out.size(b.n) {
		j := i * out.step
		at := int(out.offs[j])
		out.elems.grow(len(vals))
		for _, v := range vals {
			copyValue(out.elems, at, v, i*v.step)
			at++
		}
		out.offs[j+1] = int64(at)
	}
	return out
}

// containsExpr is list_contains(list, x): whether an element equals x
// (NaN equals NaN); NULL when the list or x is.
type containsExpr struct {
	list, x expr
}

func (c *containsExpr) typ() sqlType { return typBool }

func (c *containsExpr) eval(b *batch) *vec {
	list, x := c.list.eval(b), c.x.eval(b)
	out := result(typBool, b.n, list, x)
	el := list.elems
	for i := range out.tri {
		switch {
		case list.isBad(i):
			out.failRow(i, list)
			continue
		case x.isBad(i):
			out.failRow(i, x)
			continue
		case list.isNull(i) || x.isNull(i):
			out.tri[i] = triN
			continue
		}
		k := i * list.step
		found := false
		for e := list.offs[k]; e < list.offs[k+1] && !found; e++ {
			found = el.valid(int(e)) && compareValuesAt(el, int(e), x, i*x.step) == 0
		}
		out.tri[i] = boolTri(found)
	}
	return out
}

// extractExpr is list_extract(list, i) and list[i]: element i (1 is the
// first, -1 the last), NULL out of range.
type extractExpr struct {
	list, index expr
}

func (e *extractExpr) typ() sqlType { return *e.list.typ().elem }

func (e *extractExpr) eval(b *batch) *vec {
	list, idx := e.list.eval(b), e.index.eval(b)
	out := result(*list.t.elem, b.n, list, idx)
	for i := range out.size(b.n) {
		j := i * out.step
		if !out.inherit(i, list, idx) {
			continue
		}
		k := i * list.step
		start, end := list.offs[k], list.offs[k+1]
		p := idx.ints[i*idx.step]
		var pos int64
		switch {
		case p > 0 && p <= end-start:
			pos = start + p - 1
		case p < 0 && -p <= end-start:
			pos = end + p
		default:
			out.setNull(j)
			continue
		}
		copyValue(out, j, list.elems, int(pos))
	}
	return out
}
