package filter

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenKind is what a token of filter text is.
type tokenKind uint8

const (
	tokEOF    tokenKind = iota
	tokIdent            // a name or keyword, unquoted
	tokQuoted           // a "quoted name"
	tokString           // a 'string literal'
	tokNumber           // 12, 1.5, .5, 1e3, 1_000
	tokOp               // punctuation and operators: ( ) [ ] , + - * / // % || = == != <> < <= > >= :: ; and others
	tokParam            // ? or $1: placeholders
)

// token is one token: its kind, its text (a name or literal without
// quotes, an operator as written) and where it starts in the filter.
type token struct {
	kind     tokenKind
	text     string
	pos, end int
}

// keyword reports whether the token is the unquoted keyword word (given
// in upper case).
func (t token) keyword(word string) bool {
	return t.kind == tokIdent && strings.EqualFold(t.text, word)
}

// lexer splits filter text into tokens.
type lexer struct {
	text string
	pos  int
}

// operators, longest first within each leading character.
var operators = []string{
	"::", "||", "//", "**", "<>", "<=", ">=", "!=", "==", "->", "->>", "<<", ">>", "@>", "<@", "&&", "!~~", "~~",
	"(", ")", "[", "]", ",", "+", "-", "*", "/", "%", "=", "<", ">", ";", ".", "^", "~", "!", "@", "&", "|", "#", ":", "{", "}",
}

func (l *lexer) next() (token, error) {
	t, err := l.scan()
	t.end = l.pos
	return t, err
}

func (l *lexer) scan() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	start := l.pos
	if l.pos >= len(l.text) {
		return token{kind: tokEOF, pos: start}, nil
	}
	c := l.text[l.pos]
	switch {
	case c == '\'':
		s, err := l.quoted('\'')
		if err != nil {
			return token{}, invalid("unterminated string: a ' is not closed in %q", clip(l.text[start:]))
		}
		return token{kind: tokString, text: s, pos: start}, nil
	case c == '"':
		s, err := l.quoted('"')
		if err != nil {
			return token{}, invalid(`unterminated quoted name: a " is not closed in %q`, clip(l.text[start:]))
		}
		if s == "" {
			return token{}, invalid(`a quoted name "" is empty, at column %d`, columnOf(l.text, start))
		}
		return token{kind: tokQuoted, text: s, pos: start}, nil
	case c >= '0' && c <= '9' || c == '.' && l.pos+1 < len(l.text) && isDigit(l.text[l.pos+1]):
		return l.number()
	case c == '?' || c == '$' && l.pos+1 < len(l.text) && isDigit(l.text[l.pos+1]):
		l.pos++
		for l.pos < len(l.text) && isDigit(l.text[l.pos]) {
			l.pos++
		}
		return token{kind: tokParam, text: l.text[start:l.pos], pos: start}, nil
	case c == '_' || c >= 0x80 || unicode.IsLetter(rune(c)):
		for l.pos < len(l.text) {
			r, size := utf8.DecodeRuneInString(l.text[l.pos:])
			if r != '_' && r != '$' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				break
			}
			l.pos += size
		}
		if l.pos == start {
			r, _ := utf8.DecodeRuneInString(l.text[l.pos:])
			return token{}, invalid("unexpected character %q at column %d", r, columnOf(l.text, start))
		}
		return token{kind: tokIdent, text: l.text[start:l.pos], pos: start}, nil
	}
	for _, op := range operators {
		if strings.HasPrefix(l.text[l.pos:], op) {
			l.pos += len(op)
			return token{kind: tokOp, text: op, pos: start}, nil
		}
	}
	r, _ := utf8.DecodeRuneInString(l.text[l.pos:])
	return token{}, invalid("unexpected character %q at column %d", r, columnOf(l.text, start))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipSpace skips white space and comments (-- to the end of the line,
// /* ... */).
func (l *lexer) skipSpace() error {
	for l.pos < len(l.text) {
		r, size := utf8.DecodeRuneInString(l.text[l.pos:])
		switch {
		case unicode.IsSpace(r):
			l.pos += size
		case strings.HasPrefix(l.text[l.pos:], "--"):
			end := strings.IndexByte(l.text[l.pos:], '\n')
			if end < 0 {
				l.pos = len(l.text)
			} else {
				l.pos += end + 1
			}
		case strings.HasPrefix(l.text[l.pos:], "/*"):
			end := strings.Index(l.text[l.pos+2:], "*/")
			if end < 0 {
				return invalid("unterminated comment: a /* is not closed")
			}
			l.pos += end + 4
		default:
			return nil
		}
	}
	return nil
}

// quoted reads a quoted string or name; a doubled quote stands for one.
func (l *lexer) quoted(q byte) (string, error) {
	var b strings.Builder
	i := l.pos + 1
	for i < len(l.text) {
		c := l.text[i]
		if c == q {
			if i+1 < len(l.text) && l.text[i+1] == q {
				b.WriteByte(q)
				i += 2
				continue
			}
			l.pos = i + 1
			return b.String(), nil
		}
		b.WriteByte(c)
		i++
	}
	return "", errUnterminated
}

var errUnterminated = invalid("unterminated")

// number reads a numeral: digits (single underscores between them), an
// optional fraction and an optional exponent.
func (l *lexer) number() (token, error) {
	start := l.pos
	digits := func() {
		for l.pos < len(l.text) {
			c := l.text[l.pos]
			if isDigit(c) || c == '_' && l.pos > start && isDigit(l.text[l.pos-1]) && l.pos+1 < len(l.text) && isDigit(l.text[l.pos+1]) {
				l.pos++
				continue
			}
			break
		}
	}
	if strings.HasPrefix(l.text[l.pos:], "0x") || strings.HasPrefix(l.text[l.pos:], "0X") ||
		strings.HasPrefix(l.text[l.pos:], "0b") || strings.HasPrefix(l.text[l.pos:], "0B") {
		return token{}, invalid("hexadecimal and binary numbers are not supported at column %d; write the number in decimal", columnOf(l.text, start))
	}
	digits()
	if l.pos < len(l.text) && l.text[l.pos] == '.' {
		l.pos++
		digits()
	}
	if l.pos < len(l.text) && (l.text[l.pos] == 'e' || l.text[l.pos] == 'E') {
		save := l.pos
		l.pos++
		if l.pos < len(l.text) && (l.text[l.pos] == '+' || l.text[l.pos] == '-') {
			l.pos++
		}
		if l.pos < len(l.text) && isDigit(l.text[l.pos]) {
			digits()
		} else {
			l.pos = save
		}
	}
	if l.pos < len(l.text) {
		if r, _ := utf8.DecodeRuneInString(l.text[l.pos:]); r == '_' || unicode.IsLetter(r) {
			return token{}, invalid("malformed number %q at column %d", clip(l.text[start:l.pos+1]), columnOf(l.text, start))
		}
	}
	return token{kind: tokNumber, text: strings.ReplaceAll(l.text[start:l.pos], "_", ""), pos: start}, nil
}

// columnOf returns the 1-based column (in characters) of a byte offset,
// on its line.
func columnOf(text string, pos int) int {
	pos = min(pos, len(text))
	lineStart := strings.LastIndexByte(text[:pos], '\n') + 1
	return utf8.RuneCountInString(text[lineStart:pos]) + 1
}

// lineOf returns the 1-based line of a byte offset.
func lineOf(text string, pos int) int {
	return strings.Count(text[:min(pos, len(text))], "\n") + 1
}
