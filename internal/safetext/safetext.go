// Package safetext makes text from users safe to show: error messages
// echo file names, arguments and filters, and a terminal acts on the
// control characters among them (ESC starts a sequence that can rewrite
// the screen or the window title, BEL rings) and a bidi override (U+202E)
// makes what follows read backwards. Escape shows such characters as
// escapes instead; Hidden tells which characters user-chosen names may
// not contain.
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r changes how text is shown rather than showing
// itself: a control character (tab and newline included), a bidi control
// or another invisible format character, or a line or paragraph
// separator. The zero-width joiners (U+200C, U+200D), which scripts and
// emoji need, are not.
func Hidden(r rune) bool {
	switch {
	case r == '\u200c' || r == '\u200d':
		return false
	case unicode.IsControl(r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r):
		return true
	}
	return false
}

// Escape returns s with every hidden character but newline and tab, and
// every byte that is not UTF-8, written as a Go escape (\x1b, \u202e).
func Escape(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r == utf8.RuneError || r != '\n' && r != '\t' && Hidden(r) })
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t' || !Hidden(r):
			b.WriteString(s[i : i+size])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}
