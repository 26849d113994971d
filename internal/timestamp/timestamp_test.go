package timestamp

import (
	"strings"
	"testing"
	"time"
)

// TestParse checks the forms DuckDB reads for a TIMESTAMP WITH TIME ZONE
// and the errors for what it refuses.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: RFC 3339 in UTC, or "error: ..."
	}{
		{"2026-01-02", "2026-01-02T00:00:00Z"},
		{"2026-01-02 03:04:05", "2026-01-02T03:04:05Z"},
		{"2026-1-2 3:4:5", "2026-01-02T03:04:05Z"},
		{"2026-01-02T03:04:05.123456789Z", "2026-01-02T03:04:05.123456Z"},
		{"2026-01-02 04:04:05+01:00", "2026-01-02T03:04:05Z"},
		{"2026-01-02 04:04:05+01", "2026-01-02T03:04:05Z"},
		{"2026-01-02 01:34:05-0130", "2026-01-02T03:04:05Z"},
		{"2026-01-02 03:04:05 UTC", "2026-01-02T03:04:05Z"},
		{"2026-01-02 03:04", "2026-01-02T03:04:00Z"},
		{" 2026-01-02 03:04:05 ", "2026-01-02T03:04:05Z"},
		{"0001-01-01", "0001-01-01T00:00:00Z"},
		{"2026-01-02 04:04:05 +01:00", "error: without a space"},
		{"2026-01-02 03:04:05 Europe/Paris", "error: time zone"},
		{"2026-02-30", "error: not a timestamp"},
		{"2026-01-02 24:00:00", "error: not a timestamp"},
		{"yesterday", "error: not a timestamp"},
		{"1767322800", "error: not a timestamp"},
		{"2026-01-02 03:04:05.", "error: not a timestamp"},
		{"10000-01-01", "error: not a timestamp"},
	} {
		us, err := Parse(tc.in)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = time.UnixMicro(us).UTC().Format(time.RFC3339Nano)
		}
		if !strings.HasPrefix(got, "error: ") && got != tc.want || strings.HasPrefix(tc.want, "error: ") && !strings.Contains(got, strings.TrimPrefix(tc.want, "error: ")) {
			t.Errorf("%q: %s, want %s", tc.in, got, tc.want)
		}
	}
}

// FuzzParse checks that any text is either refused or read as a time in
// years 1 to 9999 that reads back the same when written in RFC 3339.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"2026-01-02", "2026-01-02 04:04:05+01:00", "2026-01-02T03:04:05.123456789Z",
		"2026-01-02 03:04:05 UTC", "9999-12-31 23:59:59.999999-01", "0001-01-01 00:00+01", "2026-02-30"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		us, err := Parse(s)
		if err != nil {
			return
		}
		if !InRange(us) {
			t.Fatalf("%q: %d is outside years 1 to 9999", s, us)
		}
		text := time.UnixMicro(us).UTC().Format(time.RFC3339Nano)
		back, err := Parse(text)
		if err != nil || back != us {
			t.Fatalf("%q read as %s, which reads back as %d (%v), not %d", s, text, back, err, us)
		}
	})
}
