package filter

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// Expr is a parsed filter, not yet checked against any table.
type Expr struct {
	text string
	root node
}

// String returns the filter text as given.
func (e *Expr) String() string { return e.text }

// The parsed expression tree. Nodes are plain data; Compile gives them
// types.
type (
	node    interface{}
	colNode struct{ name string }
	litNode struct{ val Value }
	cmpNode struct {
		op   cmpOp
		l, r node
	}
	logicNode struct {
		and  bool
		l, r node
	}
	notNode    struct{ x node }
	isNullNode struct {
		x   node
		not bool
	}
	isTruthNode struct {
		x     node
		truth bool
		not   bool
	}
	inNode struct {
		x    node
		list []node
		not  bool
	}
	betweenNode struct {
		x, lo, hi node
		not       bool
	}
	likeNode struct {
		x       node
		pattern node
		escape  rune // -1: none
		not     bool
	}
	callNode struct {
		fn   string
		args []node
	}
)

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

var cmpNames = [...]string{opEQ: "=", opNE: "!=", opLT: "<", opLE: "<=", opGT: ">", opGE: ">="}

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

// wrapPrefix turns an expression into the one statement the SQL parser
// takes; errors are reported relative to the filter text.
const wrapPrefix = "SELECT * FROM t WHERE "

// The SQL parser is not safe for concurrent use; parsers are pooled.
var parsers = sync.Pool{New: func() any {
	p := parser.New()
	// SQL-standard quoting: "col" is a column, 'text' a string, and a
	// backslash is an ordinary character (as in DuckDB and PostgreSQL).
	p.SetSQLMode(mysql.ModeANSIQuotes | mysql.ModeNoBackslashEscapes)
	return p
}}

// Parse parses filter text. The error, which wraps ErrInvalid, says what
// is wrong and where.
func Parse(text string) (*Expr, error) {
	if strings.TrimSpace(text) == "" {
		return nil, invalid("the filter is empty; write a condition such as speed >= 60")
	}
	if len(text) > MaxLength {
		return nil, invalid("the filter is %d bytes long; at most %d are allowed", len(text), MaxLength)
	}
	if !utf8.ValidString(text) {
		return nil, invalid("the filter is not valid UTF-8")
	}
	if strings.ContainsRune(text, 0) {
		return nil, invalid("the filter contains a NUL byte")
	}
	p := parsers.Get().(*parser.Parser)
	// The statements are the parser's own (it reuses them at its next
	// Parse): it goes back to the pool once they are converted.
	defer parsers.Put(p)
	stmts, _, err := p.Parse(wrapPrefix+text, "", "")
	if err != nil {
		return nil, syntaxError(text, err)
	}
	if len(stmts) != 1 {
		return nil, invalid("the filter must be one condition; %q ends it and starts another statement", ";")
	}
	sel, ok := stmts[0].(*ast.SelectStmt)
	if !ok || sel.Where == nil || !plainSelect(sel) {
		return nil, invalid("the filter must be one condition (a WHERE clause), not %q", text)
	}
	c := converter{}
	root, err := c.convert(sel.Where, 0)
	if err != nil {
		return nil, err
	}
	return &Expr{text: text, root: root}, nil
}

// plainSelect reports whether the statement is exactly SELECT * FROM t
// WHERE ...: text after the condition (ORDER BY, LIMIT, UNION, INTO, ...)
// would otherwise be accepted and ignored.
func plainSelect(s *ast.SelectStmt) bool {
	return s.Distinct == false && s.GroupBy == nil && s.Having == nil && s.OrderBy == nil &&
		s.Limit == nil && s.LockInfo == nil && s.SelectIntoOpt == nil && s.WindowSpecs == nil &&
		s.With == nil && s.AfterSetOperator == nil && len(s.TableHints) == 0 &&
		s.Fields != nil && len(s.Fields.Fields) == 1 && s.Fields.Fields[0].WildCard != nil
}

var tidbPosition = regexp.MustCompile(`line (\d+) column (\d+) near "((?s).*)"\s*$`)

// syntaxError rewrites the SQL parser's message (which speaks of the
// wrapped statement and of MySQL manuals) in terms of the filter text.
func syntaxError(text string, err error) error {
	msg := err.Error()
	if quotes := strings.Count(text, "'") - 2*strings.Count(text, "''"); quotes%2 == 1 {
		return invalid("unterminated string: a ' is not closed in %q", clip(text))
	}
	if strings.Count(text, `"`)%2 == 1 {
		return invalid(`unterminated quoted name: a " is not closed in %q`, clip(text))
	}
	m := tidbPosition.FindStringSubmatch(msg)
	if m == nil {
		return invalid("syntax error in %q", clip(text))
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	if line == 1 {
		col -= len(wrapPrefix)
	}
	near := m[3]
	if near == "" {
		return invalid("syntax error at the end of %q: the condition is incomplete", clip(text))
	}
	return invalid("syntax error at line %d, column %d, near %q", line, max(col, 1), clip(near))
}

// clip shortens text quoted in an error message.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

type converter struct{}

func (c converter) convert(n ast.ExprNode, depth int) (node, error) {
	if depth > maxDepth {
		return nil, invalid("the filter nests more than %d levels deep", maxDepth)
	}
	depth++
	switch x := n.(type) {
	case *ast.ParenthesesExpr:
		return c.convert(x.Expr, depth)
	case *ast.ColumnNameExpr:
		if x.Name.Schema.O != "" || x.Name.Table.O != "" {
			return nil, invalid("column %q: write the column name alone, without a table name", x.Name.String())
		}
		return colNode{name: x.Name.Name.O}, nil
	case *test_driver.ValueExpr:
		return c.literal(x)
	case *ast.BinaryOperationExpr:
		return c.binary(x, depth)
	case *ast.UnaryOperationExpr:
		return c.unary(x, depth)
	case *ast.IsNullExpr:
		v, err := c.convert(x.Expr, depth)
		return isNullNode{x: v, not: x.Not}, err
	case *ast.IsTruthExpr:
		v, err := c.convert(x.Expr, depth)
		return isTruthNode{x: v, truth: x.True != 0, not: x.Not}, err
	case *ast.PatternInExpr:
		if x.Sel != nil {
			return nil, invalid("IN takes a list of values, not a subquery")
		}
		v, err := c.convert(x.Expr, depth)
		if err != nil {
			return nil, err
		}
		in := inNode{x: v, not: x.Not}
		for _, e := range x.List {
			item, err := c.convert(e, depth)
			if err != nil {
				return nil, err
			}
			in.list = append(in.list, item)
		}
		return in, nil
	case *ast.BetweenExpr:
		v, err := c.convert(x.Expr, depth)
		if err != nil {
			return nil, err
		}
		lo, err := c.convert(x.Left, depth)
		if err != nil {
			return nil, err
		}
		hi, err := c.convert(x.Right, depth)
		return betweenNode{x: v, lo: lo, hi: hi, not: x.Not}, err
	case *ast.PatternLikeOrIlikeExpr:
		if !x.IsLike {
			return nil, invalid("ILIKE is not supported; use LIKE (case-sensitive)")
		}
		v, err := c.convert(x.Expr, depth)
		if err != nil {
			return nil, err
		}
		pat, err := c.convert(x.Pattern, depth)
		if err != nil {
			return nil, err
		}
		esc := rune(-1)
		if x.EscapeExplicit {
			esc = rune(x.Escape)
		}
		return likeNode{x: v, pattern: pat, escape: esc, not: x.Not}, nil
	case *ast.FuncCallExpr:
		return c.call(x, depth)
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		return nil, invalid("subqueries are not supported in filters")
	case ast.ParamMarkerExpr:
		return nil, invalid("? placeholders are not supported; write the value")
	case *ast.RowExpr:
		return nil, invalid("row values (a, b) are not supported")
	case *ast.DefaultExpr, *ast.VariableExpr:
		return nil, invalid("variables are not supported in filters")
	case *ast.AggregateFuncExpr:
		return nil, invalid("aggregate function %s is not supported in filters", strings.ToUpper(x.F))
	case *ast.FuncCastExpr:
		return nil, invalid("CAST is not supported; compare with a literal of the column's type")
	case *ast.CaseExpr:
		return nil, invalid("CASE is not supported in filters")
	}
	return nil, invalid("%s is not supported in filters", describeNode(n))
}

func describeNode(n ast.ExprNode) string {
	name := fmt.Sprintf("%T", n)
	name = strings.TrimPrefix(strings.TrimPrefix(name, "*ast."), "*test_driver.")
	return "the expression kind " + strings.TrimSuffix(name, "Expr")
}

func (c converter) literal(v *test_driver.ValueExpr) (node, error) {
	d := &v.Datum
	switch d.Kind() {
	case test_driver.KindNull:
		return litNode{Value{Kind: KindNull}}, nil
	case test_driver.KindInt64:
		if mysql.HasIsBooleanFlag(v.Type.GetFlag()) {
			return litNode{Value{Kind: KindBool, Bool: d.GetInt64() != 0}}, nil
		}
		return litNode{Value{Kind: KindInt, Int: d.GetInt64()}}, nil
	case test_driver.KindUint64:
		// Above the int64 range: only a float can hold it.
		return litNode{Value{Kind: KindFloat, Float: float64(d.GetUint64())}}, nil
	case test_driver.KindFloat32:
		return litNode{Value{Kind: KindFloat, Float: float64(d.GetFloat32())}}, nil
	case test_driver.KindFloat64:
		return litNode{Value{Kind: KindFloat, Float: d.GetFloat64()}}, nil
	case test_driver.KindMysqlDecimal:
		s := d.GetMysqlDecimal().String()
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, invalid("number %s is out of range", s)
		}
		return litNode{Value{Kind: KindFloat, Float: f}}, nil
	case test_driver.KindString:
		return litNode{Value{Kind: KindString, Str: d.GetString()}}, nil
	case test_driver.KindBytes:
		return litNode{Value{Kind: KindString, Str: string(d.GetBytes())}}, nil
	case test_driver.KindBinaryLiteral:
		return nil, invalid("hexadecimal and bit literals are not supported; write a number or a 'string'")
	}
	return nil, invalid("literal %s is not supported", v.GetDatumString())
}

var comparisons = map[opcode.Op]cmpOp{
	opcode.EQ: opEQ, opcode.NE: opNE, opcode.LT: opLT, opcode.LE: opLE, opcode.GT: opGT, opcode.GE: opGE,
}

func (c converter) binary(x *ast.BinaryOperationExpr, depth int) (node, error) {
	l, err := c.convert(x.L, depth)
	if err != nil {
		return nil, err
	}
	r, err := c.convert(x.R, depth)
	if err != nil {
		return nil, err
	}
	if op, ok := comparisons[x.Op]; ok {
		return cmpNode{op: op, l: l, r: r}, nil
	}
	switch x.Op {
	case opcode.LogicAnd:
		return logicNode{and: true, l: l, r: r}, nil
	case opcode.LogicOr:
		return logicNode{and: false, l: l, r: r}, nil
	case opcode.LogicXor:
		return nil, invalid("XOR is not supported; use AND, OR and NOT")
	}
	return nil, invalid("operator %s is not supported in filters (comparisons, AND, OR, NOT, IN, BETWEEN, LIKE and IS NULL are)", x.Op.String())
}

func (c converter) unary(x *ast.UnaryOperationExpr, depth int) (node, error) {
	v, err := c.convert(x.V, depth)
	if err != nil {
		return nil, err
	}
	switch x.Op {
	case opcode.Not, opcode.Not2:
		return notNode{x: v}, nil
	case opcode.Plus:
		if lit, ok := v.(litNode); ok && (lit.val.Kind == KindInt || lit.val.Kind == KindFloat) {
			return lit, nil
		}
	case opcode.Minus:
		if lit, ok := v.(litNode); ok {
			switch lit.val.Kind {
			case KindInt:
				lit.val.Int = -lit.val.Int
				return lit, nil
			case KindFloat:
				lit.val.Float = -lit.val.Float
				return lit, nil
			}
		}
		return nil, invalid("a minus sign is supported before numbers only")
	}
	return nil, invalid("operator %s is not supported in filters", x.Op.String())
}

// Functions the filter language knows, by lower-case name, with the
// canonical name used in messages. The names are DuckDB's.
var functions = map[string]string{
	"len":            "len",
	"length":         "len",
	"array_length":   "len",
	"list_contains":  "list_contains",
	"array_contains": "list_contains",
	"list_has":       "list_contains",
	"list_extract":   "list_extract",
	"list_element":   "list_extract",
	"array_extract":  "list_extract",
}

func (c converter) call(x *ast.FuncCallExpr, depth int) (node, error) {
	switch x.FnName.L {
	case ast.TimestampLiteral, ast.DateLiteral:
		return c.timeLiteral(x)
	case ast.TimeLiteral:
		return nil, invalid("TIME literals are not supported; use TIMESTAMP 'YYYY-MM-DD HH:MM:SS'")
	}
	fn, ok := functions[x.FnName.L]
	if !ok {
		return nil, invalid("function %s is not supported in filters (len, list_contains and list_extract are)", x.FnName.O)
	}
	call := callNode{fn: fn}
	for _, a := range x.Args {
		v, err := c.convert(a, depth)
		if err != nil {
			return nil, err
		}
		call.args = append(call.args, v)
	}
	return call, nil
}

// Timestamp literal layouts, as DuckDB and PostgreSQL accept them (the
// time zone is always UTC).
var timeLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
	time.RFC3339Nano,
}

func (c converter) timeLiteral(x *ast.FuncCallExpr) (node, error) {
	word := "TIMESTAMP"
	if x.FnName.L == ast.DateLiteral {
		word = "DATE"
	}
	if len(x.Args) != 1 {
		return nil, invalid("%s takes one string, e.g. %s '2026-01-02 03:04:05'", word, word)
	}
	lit, ok := x.Args[0].(*test_driver.ValueExpr)
	if !ok || lit.Datum.Kind() != test_driver.KindString {
		return nil, invalid("%s takes a string, e.g. %s '2026-01-02 03:04:05'", word, word)
	}
	ts, err := ParseTimestamp(lit.Datum.GetString())
	if err != nil {
		return nil, err
	}
	if word == "DATE" && ts%(86400*1e6) != 0 {
		return nil, invalid("DATE %q has a time of day; use TIMESTAMP", lit.Datum.GetString())
	}
	return litNode{Value{Kind: KindTimestamp, Int: ts}}, nil
}

// ParseTimestamp reads a timestamp written as in a filter ('2026-01-02',
// '2026-01-02 03:04:05', '2026-01-02 03:04:05.123456', or RFC 3339) and
// returns microseconds since the Unix epoch, UTC.
func ParseTimestamp(s string) (int64, error) {
	s = strings.TrimSpace(s)
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, invalid("%q is not a timestamp; write 'YYYY-MM-DD HH:MM:SS[.ffffff]' (UTC)", clip(s))
}
