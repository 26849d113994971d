// Package timestamp reads timestamps written as text the way DuckDB reads
// them. Sidecars (package table) and the filter language (package
// query/filter) both read timestamps with it, so that a time stored from
// a sidecar and the same text written in a filter are one instant.
//
// It holds text parsing only: no time zones but offsets and UTC, no
// formatting, and nothing of the table format or the filter language.
package timestamp

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Timestamps are years 1 to 9999: what JSON, RFC 3339 and Go's time
// formatting can write back (DuckDB reaches further, framefs's listings
// and mounts could not show it).
var (
	// Min is 0001-01-01 00:00:00 UTC in microseconds since the epoch.
	Min = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	// Max is 9999-12-31 23:59:59.999999 UTC in microseconds since the
	// epoch.
	Max = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
)

// Forms says, for messages, how a timestamp may be written.
const Forms = "'YYYY-MM-DD', 'YYYY-MM-DD HH:MM:SS[.ffffff]' or RFC 3339, with an optional offset such as +01:00 or Z (UTC when none)"

// Text is a timestamp as read from text, before a caller decides what its
// offset means (a TIMESTAMP ignores it, a TIMESTAMP WITH TIME ZONE
// applies it).
type Text struct {
	// Micros since the epoch of the time as written, moved to UTC by its
	// offset when it has one.
	Micros int64
	// Zoned says an offset or zone was written; Offset is it, in seconds
	// east of UTC.
	Zoned  bool
	Offset int
	// SpacedZone says the offset came after a space ("... +01:00"), a
	// form DuckDB refuses for a nonzero offset.
	SpacedZone bool
}

// Scan reads a timestamp as DuckDB does (its forms are what Forms lists):
// a date, then optionally a time after a space or T (hours, minutes,
// seconds and up to nine digits of fraction, kept to the microsecond),
// then optionally Z, an offset (+01, +0100, +01:00), or after a space
// UTC, GMT or an offset. It checks the fields, not the year range (see
// InRange).
func Scan(s string) (Text, error) {
	orig := s
	bad := func() (Text, error) {
		return Text{}, fmt.Errorf("%.80q is not a timestamp; write %s", orig, Forms)
	}
	s = strings.TrimSpace(s)
	num := func(minDigits, maxDigits int) (int, bool) {
		i := 0
		for i < len(s) && i < maxDigits && isDigit(s[i]) {
			i++
		}
		if i < minDigits {
			return 0, false
		}
		n, _ := strconv.Atoi(s[:i])
		s = s[i:]
		return n, true
	}
	sep := func(c byte) bool {
		if len(s) > 0 && s[0] == c {
			s = s[1:]
			return true
		}
		return false
	}
	year, ok := num(4, 4)
	if !ok || !sep('-') {
		return bad()
	}
	month, ok := num(1, 2)
	if !ok || !sep('-') {
		return bad()
	}
	day, ok := num(1, 2)
	if !ok || month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || year < 1 {
		return bad()
	}
	var hour, minute, sec, micro int
	if rest := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(s, "T"), "t"), " "); len(s) > 0 &&
		(s[0] == 'T' || s[0] == 't' || s[0] == ' ') && rest != "" && isDigit(rest[0]) {
		s = rest
		if hour, ok = num(1, 2); !ok || !sep(':') {
			return bad()
		}
		if minute, ok = num(1, 2); !ok {
			return bad()
		}
		if sep(':') {
			if sec, ok = num(1, 2); !ok {
				return bad()
			}
			if sep('.') {
				i := 0
				for i < len(s) && isDigit(s[i]) {
					i++
				}
				if i == 0 || i > 9 {
					return bad()
				}
				frac := s[:min(i, 6)]
				micro, _ = strconv.Atoi(frac + strings.Repeat("0", 6-len(frac)))
				s = s[i:]
			}
		}
		if hour > 23 || minute > 59 || sec > 59 {
			return bad()
		}
	}
	t := Text{Micros: time.Date(year, time.Month(month), day, hour, minute, sec, micro*1000, time.UTC).UnixMicro()}
	if s == "" {
		return t, nil
	}
	if s[0] == ' ' {
		s = strings.TrimLeft(s, " ")
		t.SpacedZone = true
		switch strings.ToUpper(s) {
		case "UTC", "GMT", "Z", "ETC/UTC":
			t.Zoned = true
			return t, nil
		}
		if s == "" || s[0] != '+' && s[0] != '-' {
			return Text{}, fmt.Errorf("%.80q: time zone %.80q is not supported; write an offset such as +01:00 (or UTC)", orig, s)
		}
	}
	if s == "Z" || s == "z" {
		t.Zoned = true
		return t, nil
	}
	if s[0] != '+' && s[0] != '-' {
		return bad()
	}
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	s = s[1:]
	oh, ok := num(2, 2)
	if !ok {
		return bad()
	}
	om, os := 0, 0
	sep(':')
	if len(s) > 0 {
		if om, ok = num(2, 2); !ok {
			return bad()
		}
		sep(':')
		if len(s) > 0 {
			if os, ok = num(2, 2); !ok {
				return bad()
			}
		}
	}
	if s != "" || oh > 23 || om > 59 || os > 59 {
		return bad()
	}
	t.Zoned = true
	t.Offset = sign * (oh*3600 + om*60 + os)
	t.Micros -= int64(t.Offset) * int64(time.Second/time.Microsecond)
	return t, nil
}

// SpacedOffsetError is the error for a nonzero offset written after a
// space, which DuckDB refuses: it shows s written as DuckDB reads it.
func SpacedOffsetError(s string) error {
	return fmt.Errorf("%.80q: write the offset right after the time, without a space (%s)", s,
		strings.Replace(strings.TrimSpace(s), " +", "+", 1))
}

// RangeError is the error for a timestamp outside years 1 to 9999.
func RangeError(s string) error {
	return fmt.Errorf("%.80q is outside years 1 to 9999", s)
}

// Parse reads a timestamp written as DuckDB reads one for a TIMESTAMP
// WITH TIME ZONE ('2026-01-02', '2026-01-02 03:04:05.5',
// '2026-01-02T03:04:05Z', '2026-01-02 04:04:05+01:00'; UTC when no
// offset is given) and returns microseconds since the Unix epoch.
func Parse(s string) (int64, error) {
	t, err := Scan(s)
	switch {
	case err != nil:
		return 0, err
	case t.SpacedZone && t.Offset != 0:
		return 0, SpacedOffsetError(s)
	case !InRange(t.Micros):
		return 0, RangeError(s)
	}
	return t.Micros, nil
}

// InRange reports whether a timestamp (microseconds since the epoch) lies
// in years 1 to 9999.
func InRange(us int64) bool { return us >= Min && us <= Max }

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
