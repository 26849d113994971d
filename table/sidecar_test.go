package table

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSidecarTimestamps checks the forms a timestamp may take in a
// sidecar, and that a value outside years 1 to 9999 is refused with the
// file, row and column, never wrapped.
func TestSidecarTimestamps(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "ts", Type: "timestamp"}}}.withDefaults()
	want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name, data string
		want       time.Time
		err        string
	}{
		{"a.jsonl", `{"ts": "2026-01-02 03:04:05"}`, want, ""},
		{"a.jsonl", `{"ts": "2026-01-02T03:04:05Z"}`, want, ""},
		{"a.jsonl", `{"ts": "2026-01-02 04:04:05+01:00"}`, want, ""},
		{"a.jsonl", `{"ts": "2026-01-02T03:04:05.25Z"}`, want.Add(250 * time.Millisecond), ""},
		{"a.jsonl", `{"ts": "2026-01-02"}`, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), ""},
		{"a.jsonl", `{"ts": 1767323045}`, want, ""},
		{"a.jsonl", `{"ts": 1767323045.123456789}`, want.Add(123456 * time.Microsecond), ""},
		{"a.jsonl", `{"ts": 1.767323045e9}`, want, ""},
		{"a.jsonl", `{"ts": -0.5}`, time.Unix(-1, 5e8).UTC(), ""},
		{"a.csv", "ts\n2026-01-02 03:04:05\n", want, ""},
		{"a.csv", "ts\n1767323045\n", want, ""},
		{"a.jsonl", `{"ts": 1767323045000}`, time.Time{}, `a.jsonl: row 1: column "ts": 1767323045000 seconds since 1970 is outside years 1 to 9999: a number is Unix seconds (divide milliseconds by 1000`},
		{"a.jsonl", `{"ts": 1767323045000000}`, time.Time{}, "outside years 1 to 9999"},
		{"a.jsonl", `{"ts": -62135596801}`, time.Time{}, "outside years 1 to 9999"},
		{"a.jsonl", `{"ts": "2026-01-02 04:04:05 +01:00"}`, time.Time{}, "without a space"},
		{"a.jsonl", `{"ts": "02/01/2026"}`, time.Time{}, `row 1: column "ts": "02/01/2026" is not a timestamp`},
		{"a.jsonl", `{"ts": "10000-01-01"}`, time.Time{}, "is not a timestamp"},
		{"a.jsonl", `{"ts": true}`, time.Time{}, "want a time"},
		{"a.csv", "ts\n1e400\n", time.Time{}, "outside years 1 to 9999"},
	} {
		sc, err := ParseSidecar(tc.name, []byte(tc.data+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.data, err)
		}
		rows, err := sc.Rows(&s)
		switch {
		case tc.err != "":
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error with %q", tc.data, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.data, err)
		case !rows[0]["ts"].(time.Time).Equal(tc.want):
			t.Errorf("%s: %v, want %v", tc.data, rows[0]["ts"], tc.want)
		}
	}
}
