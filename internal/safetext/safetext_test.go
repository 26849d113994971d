package safetext

import "testing"

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode 日本":       "plain text, ünïcode 日本",
		"two\nlines\tand a tab":        "two\nlines\tand a tab",
		"\x1b]0;title\x07 \x1b[2J\r":   `\x1b]0;title\x07 \x1b[2J\x0d`,
		"abc\u202edcba \u2066x\u2069":  `abc\u202edcba \u2066x\u2069`,
		"c1 \u009b31m":                 `c1 \u009b31m`,
		"bad \xff\xfe utf-8":           `bad \xff\xfe utf-8`,
		"family 👩\u200d👧 and ی\u200cی": "family 👩\u200d👧 and ی\u200cی",
		"line\u2028separator\u00ad":    `line\u2028separator\u00ad`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}
