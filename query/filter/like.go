package filter

import (
	"strings"
	"unicode/utf8"
)

// likeMatcher matches SQL LIKE patterns: % is any run of characters, _
// exactly one character, and the escape character (if any) makes the next
// character literal. Matching is case-sensitive, by characters.
type likeMatcher struct {
	// parts are the pattern split at %; within a part, wildcard marks the
	// positions of _ (by rune).
	parts []likePart
	// leading and trailing say whether the pattern starts or ends with %.
	leading, trailing bool
	// prefix is the literal text before the first wildcard, which pruning
	// turns into a range of strings.
	prefix string
	// exact is set when the pattern has no wildcard at all.
	exact bool
}

type likePart struct {
	runes []rune
	any   []bool // any[i]: runes[i] is _
	plain string // the part as a string when it has no _
	fixed bool   // no _ in the part
}

func compileLike(pattern string, escape rune) (*likeMatcher, error) {
	m := &likeMatcher{}
	var cur likePart
	prefixDone := false
	var prefix strings.Builder
	flush := func() {
		cur.fixed = true
		for _, a := range cur.any {
			if a {
				cur.fixed = false
			}
		}
		if cur.fixed {
			cur.plain = string(cur.runes)
		}
		m.parts = append(m.parts, cur)
		cur = likePart{}
	}
	rs := []rune(pattern)
	wild, trailing := false, false
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case escape >= 0 && r == escape:
			if i+1 >= len(rs) {
				return nil, invalid("LIKE pattern %q ends with its escape character", clip(pattern))
			}
			i++
			trailing = false
			cur.runes = append(cur.runes, rs[i])
			cur.any = append(cur.any, false)
			if !prefixDone {
				prefix.WriteRune(rs[i])
			}
		case r == '%':
			wild, trailing = true, true
			prefixDone = true
			if len(m.parts) == 0 && len(cur.runes) == 0 {
				m.leading = true
			}
			flush()
		case r == '_':
			wild, trailing = true, false
			prefixDone = true
			cur.runes = append(cur.runes, r)
			cur.any = append(cur.any, true)
		default:
			trailing = false
			cur.runes = append(cur.runes, r)
			cur.any = append(cur.any, false)
			if !prefixDone {
				prefix.WriteRune(r)
			}
		}
	}
	m.trailing = trailing
	flush()
	// Drop the empty parts that % at the ends produced.
	parts := m.parts[:0]
	for _, p := range m.parts {
		if len(p.runes) > 0 {
			parts = append(parts, p)
		}
	}
	m.parts = parts
	m.prefix = prefix.String()
	m.exact = !wild
	return m, nil
}

func (p *likePart) matchAt(s string) (int, bool) {
	if p.fixed {
		if strings.HasPrefix(s, p.plain) {
			return len(p.plain), true
		}
		return 0, false
	}
	off := 0
	for i, want := range p.runes {
		if off >= len(s) {
			return 0, false
		}
		r, size := utf8.DecodeRuneInString(s[off:])
		if !p.any[i] && r != want {
			return 0, false
		}
		off += size
	}
	return off, true
}

// find returns the first position of the part in s, and the length it
// matched there.
func (p *likePart) find(s string) (int, int, bool) {
	if p.fixed {
		i := strings.Index(s, p.plain)
		return i, len(p.plain), i >= 0
	}
	for off := 0; off <= len(s); {
		if n, ok := p.matchAt(s[off:]); ok {
			return off, n, true
		}
		if off == len(s) {
			break
		}
		_, size := utf8.DecodeRuneInString(s[off:])
		off += size
	}
	return 0, 0, false
}

func (m *likeMatcher) match(s string) bool {
	if m.exact {
		return len(m.parts) == 1 && s == m.parts[0].plain || len(m.parts) == 0 && s == ""
	}
	parts := m.parts
	if len(parts) == 0 {
		return m.leading || m.trailing || s == ""
	}
	// The first part is anchored at the start unless the pattern starts
	// with %; the last is anchored at the end unless it ends with %. The
	// parts between are found leftmost-first, which is enough: a %
	// between them absorbs whatever lies between.
	if !m.leading {
		n, ok := parts[0].matchAt(s)
		if !ok {
			return false
		}
		s = s[n:]
		parts = parts[1:]
		if len(parts) == 0 {
			return m.trailing || s == ""
		}
	}
	last := len(parts) - 1
	for i, p := range parts {
		if i == last && !m.trailing {
			return matchSuffix(&p, s)
		}
		at, n, ok := p.find(s)
		if !ok {
			return false
		}
		s = s[at+n:]
	}
	return true
}

// matchSuffix reports whether s ends with the part.
func matchSuffix(p *likePart, s string) bool {
	if p.fixed {
		return strings.HasSuffix(s, p.plain)
	}
	// Step back len(p.runes) runes from the end.
	off := len(s)
	for range p.runes {
		if off == 0 {
			return false
		}
		_, size := utf8.DecodeLastRuneInString(s[:off])
		off -= size
	}
	n, ok := p.matchAt(s[off:])
	return ok && off+n == len(s)
}
