package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Expr is a parsed filter, not yet checked against any table.
type Expr struct {
	text string
	root node
}

// String returns the filter text as given.
func (e *Expr) String() string { return e.text }

// The parsed expression tree. Nodes are plain data; Compile gives them
// types. Each node keeps the span of the text it was parsed from, which
// messages quote.
type (
	node     interface{ spanOf() textSpan }
	textSpan struct{ start, end int }

	colNode struct {
		textSpan
		name string
	}
	// litNode is a literal: a number, a 'string', TRUE, FALSE, NULL, or a
	// typed literal (TIMESTAMP '...').
	litNode struct {
		textSpan
		kind  litKind
		text  string
		typed sqlType // typed literals: the type named before the string
	}
	unaryNode struct {
		textSpan
		op string // "-", "+" or "NOT"
		x  node
	}
	// binaryNode is an arithmetic, comparison or || operator, or IS
	// [NOT] DISTINCT FROM ("IS DISTINCT FROM", "IS NOT DISTINCT FROM").
	binaryNode struct {
		textSpan
		op   string
		l, r node
	}
	// logicNode is a chain of AND or OR: one node however many terms.
	logicNode struct {
		textSpan
		and   bool
		terms []node
	}
	isNode struct {
		textSpan
		x    node
		what string // "NULL", "TRUE" or "FALSE"
		not  bool
	}
	inNode struct {
		textSpan
		x    node
		list []node // x IN (a, b, ...)
		of   node   // x IN list: a list-valued expression
		not  bool
	}
	betweenNode struct {
		textSpan
		x, lo, hi node
		not       bool
	}
	likeNode struct {
		textSpan
		x, pattern, escape node // escape may be nil
		not, ilike         bool
	}
	callNode struct {
		textSpan
		name string // lower case
		args []node
	}
	castNode struct {
		textSpan
		x   node
		to  sqlType
		try bool
	}
	listNode struct {
		textSpan
		elems []node
	}
	subscriptNode struct {
		textSpan
		x, index node
	}
)

func (s textSpan) spanOf() textSpan { return s }

type litKind uint8

const (
	litNumber litKind = iota
	litString
	litBool
	litNull
)

// Binding powers of operators, loosest first, as in DuckDB's grammar
// (PostgreSQL's): OR < AND < NOT < IS < comparisons < BETWEEN/IN/LIKE <
// || < + - < * / % < unary minus < [ ] < ::.
const (
	bpOr = 10 * (iota + 1)
	bpAnd
	bpNot
	bpIs
	bpCompare
	bpLike
	bpConcat
	bpAdd
	bpMul
	bpPow
	bpUnary
	bpSubscript
	bpCast
)

// maxDepth bounds how deeply a filter nests (parentheses, function
// arguments, operators inside the operands of others), so that parsing a
// hostile filter is bounded; a flat chain (a OR b OR ...) is one level.
const maxDepth = 256

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
	p := &parser{lex: lexer{text: text}, text: text}
	if err := p.advance(); err != nil {
		return nil, err
	}
	root, err := p.expr(bpOr-1, 0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.trailing()
	}
	return &Expr{text: text, root: root}, nil
}

type parser struct {
	lex  lexer
	text string
	tok  token // the current token
	peek *token
	// lastEnd is where the token before the current one ended: the end
	// of the node just parsed.
	lastEnd int
}

func (p *parser) advance() error {
	p.lastEnd = p.tok.end
	if p.peek != nil {
		p.tok, p.peek = *p.peek, nil
		return nil
	}
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

// lookahead returns the token after the current one.
func (p *parser) lookahead() (token, error) {
	if p.peek == nil {
		t, err := p.lex.next()
		if err != nil {
			return token{}, err
		}
		p.peek = &t
	}
	return *p.peek, nil
}

func (p *parser) isOp(op string) bool { return p.tok.kind == tokOp && p.tok.text == op }

func (p *parser) expect(op string) error {
	if !p.isOp(op) {
		return p.errorf("%s expected", op)
	}
	return p.advance()
}

// errorf reports a syntax error at the current token.
func (p *parser) errorf(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if p.tok.kind == tokEOF {
		return invalid("syntax error at the end of %q: the condition is incomplete (%s)", clip(p.text), msg)
	}
	return invalid("syntax error at line %d, column %d, near %q: %s", lineOf(p.text, p.tok.pos), columnOf(p.text, p.tok.pos),
		clip(p.text[p.tok.pos:]), msg)
}

// trailing explains text left after a whole condition.
func (p *parser) trailing() error {
	switch {
	case p.isOp(";"):
		return invalid("the filter must be one condition; %q ends it and starts another statement", ";")
	case p.tok.kind == tokIdent:
		for _, w := range []string{"ORDER", "LIMIT", "GROUP", "HAVING", "UNION", "EXCEPT", "INTERSECT", "OFFSET", "INTO", "WINDOW", "QUALIFY", "FROM", "SELECT"} {
			if p.tok.keyword(w) {
				return invalid("the filter must be one condition (a WHERE clause); %s ... is not part of one", w)
			}
		}
	}
	return p.errorf("the condition ends before this")
}

// infix describes the operator at the current token: its binding power
// and whether it is non-associative (a < b < c is a syntax error).
func (p *parser) infix() (bp int, nonassoc bool, err error) {
	t := p.tok
	switch t.kind {
	case tokOp:
		switch t.text {
		case "=", "==", "!=", "<>", "<", "<=", ">", ">=":
			return bpCompare, true, nil
		case "||":
			return bpConcat, false, nil
		case "+", "-":
			return bpAdd, false, nil
		case "*", "/", "//", "%":
			return bpMul, false, nil
		case "^", "**":
			return bpPow, false, nil
		case "[":
			return bpSubscript, false, nil
		case "::":
			return bpCast, false, nil
		case "->", "->>", "<<", ">>", "@>", "<@", "&&", "~~", "!~~", "~", "&", "|", "#", "@", "!":
			return bpConcat, false, nil
		}
	case tokIdent:
		switch {
		case t.keyword("OR"):
			return bpOr, false, nil
		case t.keyword("AND"):
			return bpAnd, false, nil
		case t.keyword("IS"), t.keyword("ISNULL"), t.keyword("NOTNULL"):
			return bpIs, false, nil
		case t.keyword("BETWEEN"), t.keyword("IN"), t.keyword("LIKE"), t.keyword("ILIKE"), t.keyword("GLOB"),
			t.keyword("SIMILAR"), t.keyword("REGEXP"), t.keyword("RLIKE"):
			return bpLike, true, nil
		case t.keyword("NOT"):
			next, err := p.lookahead()
			if err != nil {
				return 0, false, err
			}
			for _, w := range []string{"BETWEEN", "IN", "LIKE", "ILIKE", "GLOB", "SIMILAR"} {
				if next.keyword(w) {
					return bpLike, true, nil
				}
			}
		case t.keyword("COLLATE"), t.keyword("AT"):
			return bpSubscript, false, nil
		}
	}
	return 0, false, nil
}

// expr parses an expression whose operators bind tighter than minBP.
func (p *parser) expr(minBP, depth int) (node, error) {
	if depth > maxDepth {
		return nil, invalid("the filter nests more than %d levels deep", maxDepth)
	}
	left, err := p.prefix(depth)
	if err != nil {
		return nil, err
	}
	// open is the binding power of the non-associative operator that
	// made left, when its right operand may be continued (a < b): the
	// same level may not follow (a < b < c), as in DuckDB.
	open := 0
	for {
		bp, nonassoc, err := p.infix()
		if err != nil {
			return nil, err
		}
		if bp == 0 || bp <= minBP {
			return left, nil
		}
		if nonassoc && open == bp || bp == bpIs && open == bpIs {
			return nil, p.errorf("%s cannot follow another comparison of its kind without parentheses: write (%s) %s ...",
				p.tok.text, clip(p.text[left.spanOf().start:left.spanOf().end]), p.tok.text)
		}
		left, open, err = p.infixOp(left, bp, depth)
		if err != nil {
			return nil, err
		}
	}
}

// infixOp parses the operator at the current token applied to left, and
// reports the binding power left open (see expr).
func (p *parser) infixOp(left node, bp, depth int) (node, int, error) {
	start := left.spanOf().start
	t := p.tok
	switch {
	case t.keyword("OR"), t.keyword("AND"):
		and := t.keyword("AND")
		chain := logicNode{and: and, terms: []node{left}}
		if l, ok := left.(logicNode); ok && l.and == and {
			chain.terms = l.terms
		}
		for (and && p.tok.keyword("AND")) || (!and && p.tok.keyword("OR")) {
			if err := p.advance(); err != nil {
				return nil, 0, err
			}
			term, err := p.expr(bp, depth+1)
			if err != nil {
				return nil, 0, err
			}
			chain.terms = append(chain.terms, term)
		}
		chain.textSpan = textSpan{start, p.lastEnd}
		return chain, 0, nil
	case t.keyword("IS"):
		return p.isPredicate(left, depth)
	case t.keyword("ISNULL"), t.keyword("NOTNULL"):
		if err := p.advance(); err != nil {
			return nil, 0, err
		}
		return isNode{textSpan: textSpan{start, p.lastEnd}, x: left, what: "NULL", not: t.keyword("NOTNULL")}, 0, nil
	case t.kind == tokIdent: // [NOT] BETWEEN, IN, LIKE, ILIKE, ...
		not := t.keyword("NOT")
		if not {
			if err := p.advance(); err != nil {
				return nil, 0, err
			}
		}
		return p.predicate(left, not, depth)
	}
	op := t.text
	if err := p.advance(); err != nil {
		return nil, 0, err
	}
	switch op {
	case "[":
		index, err := p.expr(0, depth+1)
		if err != nil {
			return nil, 0, err
		}
		if p.isOp(":") {
			return nil, 0, p.errorf("list slices [a:b] are not supported; take elements with list[i]")
		}
		if err := p.expect("]"); err != nil {
			return nil, 0, err
		}
		return subscriptNode{textSpan: textSpan{start, p.lastEnd}, x: left, index: index}, 0, nil
	case "::":
		to, err := p.typeName()
		if err != nil {
			return nil, 0, err
		}
		return castNode{textSpan: textSpan{start, p.lastEnd}, x: left, to: to}, 0, nil
	case "^", "**":
		return nil, 0, invalid("the power operator %s is not supported in filters; the arithmetic operators are + - * / // %%", op)
	case "->", "->>", "<<", ">>", "@>", "<@", "&&", "~~", "!~~", "~", "&", "|", "#", "@", "!":
		return nil, 0, invalid("operator %s is not supported in filters; the operators are %s", op, supportedOperators)
	}
	right, err := p.expr(bp, depth+1)
	if err != nil {
		return nil, 0, err
	}
	n := binaryNode{textSpan: textSpan{start, p.lastEnd}, op: op, l: left, r: right}
	switch op {
	case "==":
		n.op = "="
	case "!=":
		n.op = "<>"
	}
	if bp == bpCompare {
		return n, bpCompare, nil
	}
	return n, 0, nil
}

const supportedOperators = "= <> != < <= > >=, AND OR NOT, + - * / // %, ||, IS [NOT] NULL/TRUE/FALSE/DISTINCT FROM, [NOT] IN, [NOT] BETWEEN, [NOT] LIKE/ILIKE, :: and list[i]"

// isOp parses IS [NOT] NULL | TRUE | FALSE | UNKNOWN | DISTINCT FROM x.
func (p *parser) isPredicate(left node, depth int) (node, int, error) {
	start := left.spanOf().start
	if err := p.advance(); err != nil {
		return nil, 0, err
	}
	not := p.tok.keyword("NOT")
	if not {
		if err := p.advance(); err != nil {
			return nil, 0, err
		}
	}
	switch {
	case p.tok.keyword("NULL"), p.tok.keyword("UNKNOWN"), p.tok.keyword("TRUE"), p.tok.keyword("FALSE"):
		what := strings.ToUpper(p.tok.text)
		if what == "UNKNOWN" {
			what = "NULL"
		}
		if err := p.advance(); err != nil {
			return nil, 0, err
		}
		return isNode{textSpan: textSpan{start, p.lastEnd}, x: left, what: what, not: not}, 0, nil
	case p.tok.keyword("DISTINCT"):
		if err := p.advance(); err != nil {
			return nil, 0, err
		}
		if !p.tok.keyword("FROM") {
			return nil, 0, p.errorf("IS DISTINCT takes FROM")
		}
		if err := p.advance(); err != nil {
			return nil, 0, err
		}
		right, err := p.expr(bpIs, depth+1)
		if err != nil {
			return nil, 0, err
		}
		op := "IS DISTINCT FROM"
		if not {
			op = "IS NOT DISTINCT FROM"
		}
		return binaryNode{textSpan: textSpan{start, p.lastEnd}, op: op, l: left, r: right}, bpIs, nil
	}
	return nil, 0, p.errorf("IS takes NULL, TRUE, FALSE or DISTINCT FROM")
}

// predicate parses [NOT] BETWEEN, IN, LIKE and ILIKE after left (and NOT).
func (p *parser) predicate(left node, not bool, depth int) (node, int, error) {
	start := left.spanOf().start
	t := p.tok
	if err := p.advance(); err != nil {
		return nil, 0, err
	}
	switch {
	case t.keyword("BETWEEN"):
		if p.tok.keyword("SYMMETRIC") || p.tok.keyword("ASYMMETRIC") {
			return nil, 0, p.errorf("BETWEEN %s is not supported; write BETWEEN low AND high", strings.ToUpper(p.tok.text))
		}
		lo, err := p.expr(bpLike, depth+1)
		if err != nil {
			return nil, 0, err
		}
		if !p.tok.keyword("AND") {
			return nil, 0, p.errorf("BETWEEN takes AND: x BETWEEN low AND high")
		}
		if err := p.advance(); err != nil {
			return nil, 0, err
		}
		hi, err := p.expr(bpLike, depth+1)
		if err != nil {
			return nil, 0, err
		}
		return betweenNode{textSpan: textSpan{start, p.lastEnd}, x: left, lo: lo, hi: hi, not: not}, bpLike, nil
	case t.keyword("IN"):
		if p.isOp("(") {
			if err := p.advance(); err != nil {
				return nil, 0, err
			}
			if p.tok.keyword("SELECT") || p.tok.keyword("WITH") || p.tok.keyword("VALUES") {
				return nil, 0, invalid("subqueries are not supported in filters; IN takes a list of values: x IN (1, 2, 3)")
			}
			list, err := p.exprList(")", depth)
			if err != nil {
				return nil, 0, err
			}
			if len(list) == 0 {
				return nil, 0, p.errorf("IN () needs at least one value")
			}
			return inNode{textSpan: textSpan{start, p.lastEnd}, x: left, list: list, not: not}, 0, nil
		}
		of, err := p.expr(bpLike, depth+1)
		if err != nil {
			return nil, 0, err
		}
		return inNode{textSpan: textSpan{start, p.lastEnd}, x: left, of: of, not: not}, bpLike, nil
	case t.keyword("LIKE"), t.keyword("ILIKE"):
		pattern, err := p.expr(bpLike, depth+1)
		if err != nil {
			return nil, 0, err
		}
		n := likeNode{x: left, pattern: pattern, not: not, ilike: t.keyword("ILIKE")}
		if p.tok.keyword("ESCAPE") {
			if err := p.advance(); err != nil {
				return nil, 0, err
			}
			if n.escape, err = p.expr(bpLike, depth+1); err != nil {
				return nil, 0, err
			}
		}
		n.textSpan = textSpan{start, p.lastEnd}
		return n, bpLike, nil
	case t.keyword("SIMILAR"), t.keyword("GLOB"), t.keyword("REGEXP"), t.keyword("RLIKE"):
		return nil, 0, invalid("%s is not supported in filters; match patterns with LIKE or ILIKE (%% any characters, _ one)", strings.ToUpper(t.text))
	}
	return nil, 0, p.errorf("unexpected %s", t.text)
}

// exprList parses expressions separated by commas up to the closing
// token, which it consumes.
func (p *parser) exprList(closing string, depth int) ([]node, error) {
	var list []node
	if p.isOp(closing) {
		return list, p.advance()
	}
	for {
		e, err := p.expr(0, depth+1)
		if err != nil {
			return nil, err
		}
		list = append(list, e)
		if p.isOp(",") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		if err := p.expect(closing); err != nil {
			return nil, err
		}
		return list, nil
	}
}

// prefix parses an operand: a literal, a name, a call, a parenthesized
// expression, a list, or a prefix operator and its operand.
func (p *parser) prefix(depth int) (node, error) {
	t := p.tok
	start := t.pos
	switch t.kind {
	case tokEOF:
		return nil, p.errorf("a value is missing")
	case tokNumber:
		return p.literal(litNumber, t.text)
	case tokString:
		return p.literal(litString, t.text)
	case tokQuoted:
		if err := p.advance(); err != nil {
			return nil, err
		}
		return p.name(start, t.text)
	case tokParam:
		return nil, invalid("placeholders such as %s are not supported in filters; write the value", t.text)
	case tokOp:
		switch t.text {
		case "(":
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.keyword("SELECT") || p.tok.keyword("WITH") || p.tok.keyword("VALUES") {
				return nil, invalid("subqueries are not supported in filters")
			}
			inner, err := p.expr(0, depth+1)
			if err != nil {
				return nil, err
			}
			if p.isOp(",") {
				return nil, invalid("row values (a, b, ...) are not supported in filters")
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			return inner, nil
		case "[":
			if err := p.advance(); err != nil {
				return nil, err
			}
			elems, err := p.exprList("]", depth)
			if err != nil {
				return nil, err
			}
			return listNode{textSpan: textSpan{start, p.lastEnd}, elems: elems}, nil
		case "-", "+":
			if err := p.advance(); err != nil {
				return nil, err
			}
			x, err := p.expr(bpUnary, depth+1)
			if err != nil {
				return nil, err
			}
			if lit, ok := x.(litNode); ok && lit.kind == litNumber && !strings.HasPrefix(lit.text, "-") {
				// A signed numeral is one literal (-2147483648 is an
				// INTEGER), as DuckDB reads it.
				if t.text == "-" {
					lit.text = "-" + lit.text
				}
				lit.textSpan = textSpan{start, lit.end}
				return lit, nil
			}
			return unaryNode{textSpan: textSpan{start, p.lastEnd}, op: t.text, x: x}, nil
		}
	case tokIdent:
		return p.word(depth)
	}
	return nil, p.errorf("a value is expected here")
}

// literal makes a literal of the current token.
func (p *parser) literal(kind litKind, text string) (node, error) {
	start := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	return litNode{textSpan: textSpan{start, p.lastEnd}, kind: kind, text: text}, nil
}

// name makes a column of a name; a name followed by . is qualified.
func (p *parser) name(start int, name string) (node, error) {
	if p.isOp(".") {
		return nil, invalid("column %q: write the column name alone, without a table name", clip(p.text[start:min(len(p.text), p.tok.pos+20)]))
	}
	return colNode{textSpan: textSpan{start, p.lastEnd}, name: name}, nil
}

// word parses what starts with an unquoted word: a keyword literal or
// operator, a typed literal, CAST, a function call or a column.
func (p *parser) word(depth int) (node, error) {
	t := p.tok
	start := t.pos
	switch {
	case t.keyword("NOT"):
		if err := p.advance(); err != nil {
			return nil, err
		}
		x, err := p.expr(bpNot, depth+1)
		if err != nil {
			return nil, err
		}
		return unaryNode{textSpan: textSpan{start, p.lastEnd}, op: "NOT", x: x}, nil
	case t.keyword("TRUE"), t.keyword("FALSE"):
		return p.literal(litBool, strings.ToUpper(t.text))
	case t.keyword("NULL"):
		return p.literal(litNull, "NULL")
	case t.keyword("CAST"), t.keyword("TRY_CAST"):
		return p.cast(t.keyword("TRY_CAST"), depth)
	case t.keyword("CASE"):
		return nil, invalid("CASE is not supported in filters; combine conditions with AND, OR and NOT")
	case t.keyword("EXISTS"):
		return nil, invalid("subqueries are not supported in filters")
	case t.keyword("INTERVAL"):
		return nil, invalid("INTERVAL is not supported in filters; compare timestamps with TIMESTAMP '...' literals")
	case t.keyword("ANY"), t.keyword("ALL"), t.keyword("SOME"):
		return nil, invalid("%s (...) is not supported in filters; use IN (...) or list_contains(list, value)", strings.ToUpper(t.text))
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	// A typed literal: TIMESTAMP '...', TIMESTAMP WITH TIME ZONE '...',
	// DATE '...'.
	if lit, ok, err := p.literalType(t); err != nil || ok {
		return lit, err
	}
	if p.isOp("(") {
		return p.call(start, t.text, depth)
	}
	return p.name(start, t.text)
}

// literalType parses a typed literal after the word t, or returns false
// when t does not start one.
func (p *parser) literalType(t token) (node, bool, error) {
	var typ sqlType
	switch {
	case t.keyword("TIMESTAMP"), t.keyword("DATETIME"):
		typ = typTS
		if p.tok.keyword("WITH") {
			for _, w := range []string{"TIME", "ZONE"} {
				if err := p.advance(); err != nil {
					return nil, false, err
				}
				if !p.tok.keyword(w) {
					return nil, false, p.errorf("TIMESTAMP WITH TIME ZONE '...' expected")
				}
			}
			if err := p.advance(); err != nil {
				return nil, false, err
			}
			typ = typTSTZ
		}
	case t.keyword("TIMESTAMPTZ"):
		typ = typTSTZ
	case t.keyword("DATE"):
		typ = typDate
	case t.keyword("TIME"):
		if p.tok.kind == tokString {
			return nil, false, invalid("TIME literals are not supported; use TIMESTAMP 'YYYY-MM-DD HH:MM:SS'")
		}
		return nil, false, nil
	default:
		return nil, false, nil
	}
	if p.tok.kind != tokString {
		if typ.id == tTimestampTZ && !t.keyword("TIMESTAMPTZ") {
			return nil, false, p.errorf("TIMESTAMP WITH TIME ZONE takes a string: TIMESTAMP WITH TIME ZONE '2026-01-02 03:04:05+01:00'")
		}
		return nil, false, nil
	}
	text := p.tok.text
	if err := p.advance(); err != nil {
		return nil, false, err
	}
	return litNode{textSpan: textSpan{t.pos, p.lastEnd}, kind: litString, text: text, typed: typ}, true, nil
}

// call parses NAME(args).
func (p *parser) call(start int, name string, depth int) (node, error) {
	if err := p.advance(); err != nil { // (
		return nil, err
	}
	if p.tok.keyword("DISTINCT") || p.isOp("*") {
		return nil, invalid("aggregate calls such as %s(%s...) are not supported in filters", name, p.tok.text)
	}
	args, err := p.exprList(")", depth)
	if err != nil {
		return nil, err
	}
	if p.isOp(".") {
		return nil, p.errorf("unexpected .")
	}
	return callNode{textSpan: textSpan{start, p.lastEnd}, name: strings.ToLower(name), args: args}, nil
}

// cast parses CAST(x AS type) and TRY_CAST(x AS type).
func (p *parser) cast(try bool, depth int) (node, error) {
	start := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	x, err := p.expr(0, depth+1)
	if err != nil {
		return nil, err
	}
	if !p.tok.keyword("AS") {
		return nil, p.errorf("CAST takes AS: CAST(x AS INTEGER)")
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	to, err := p.typeName()
	if err != nil {
		return nil, err
	}
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	return castNode{textSpan: textSpan{start, p.lastEnd}, x: x, to: to, try: try}, nil
}

// typeName parses a type: a name (two words for DOUBLE PRECISION and
// TIMESTAMP WITH TIME ZONE), DECIMAL's (width, scale), VARCHAR's ignored
// length, and [] for a list.
func (p *parser) typeName() (sqlType, error) {
	if p.tok.kind != tokIdent && p.tok.kind != tokQuoted {
		return sqlType{}, p.errorf("a type name is expected, such as INTEGER or VARCHAR")
	}
	name := strings.ToLower(p.tok.text)
	if err := p.advance(); err != nil {
		return sqlType{}, err
	}
	typ, ok := typeNames[name]
	switch {
	case name == "double" && p.tok.keyword("PRECISION"):
		if err := p.advance(); err != nil {
			return sqlType{}, err
		}
	case name == "timestamp" && (p.tok.keyword("WITH") || p.tok.keyword("WITHOUT")):
		with := p.tok.keyword("WITH")
		for _, w := range []string{"TIME", "ZONE"} {
			if err := p.advance(); err != nil {
				return sqlType{}, err
			}
			if !p.tok.keyword(w) {
				return sqlType{}, p.errorf("TIMESTAMP WITH TIME ZONE expected")
			}
		}
		if err := p.advance(); err != nil {
			return sqlType{}, err
		}
		if with {
			typ = typTSTZ
		}
	}
	if !ok {
		return sqlType{}, unsupportedTypeError(name)
	}
	if p.isOp("(") {
		if err := p.advance(); err != nil {
			return sqlType{}, err
		}
		var params []int
		for !p.isOp(")") {
			if p.tok.kind != tokNumber || strings.ContainsAny(p.tok.text, ".eE") || len(p.tok.text) > 4 {
				return sqlType{}, p.errorf("a type's parameters are whole numbers: DECIMAL(10, 2)")
			}
			params = append(params, atoiSmall(p.tok.text))
			if err := p.advance(); err != nil {
				return sqlType{}, err
			}
			if p.isOp(",") {
				if err := p.advance(); err != nil {
					return sqlType{}, err
				}
			}
		}
		if err := p.advance(); err != nil {
			return sqlType{}, err
		}
		switch {
		case typ.id == tDecimal:
			if len(params) < 1 || len(params) > 2 {
				return sqlType{}, invalid("DECIMAL takes a width and a scale: DECIMAL(10, 2)")
			}
			width, scale := params[0], 0
			if len(params) == 2 {
				scale = params[1]
			}
			if width < 1 || width > maxDecimalDigits || scale > width {
				return sqlType{}, invalid("DECIMAL(%d, %d): the width is 1 to %d digits and the scale at most the width", width, scale, maxDecimalDigits)
			}
			typ = decimalType(width, scale)
		case typ.id == tString && len(params) == 1:
			// VARCHAR(n): the length is not enforced, as in DuckDB.
		default:
			return sqlType{}, invalid("type %s takes no parameters", typ)
		}
	}
	for p.isOp("[") {
		if err := p.advance(); err != nil {
			return sqlType{}, err
		}
		if err := p.expect("]"); err != nil {
			return sqlType{}, err
		}
		if typ.id == tList {
			return sqlType{}, invalid("lists of lists are not supported in filters")
		}
		typ = listOf(typ)
	}
	return typ, nil
}

func atoiSmall(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
