package filter

import (
	"strconv"
	"strings"
	"time"
)

const (
	microsPerSecond = int64(1e6)
	microsPerDay    = 86400 * microsPerSecond
)

// Timestamps are years 1 to 9999: what JSON, RFC 3339 and Go's time
// formatting can write back (DuckDB reaches further, framefs's listings
// and mounts could not show it).
var (
	minTimestamp = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	maxTimestamp = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
)

// timestampForms says, for messages, how a timestamp may be written.
const timestampForms = "'YYYY-MM-DD', 'YYYY-MM-DD HH:MM:SS[.ffffff]' or RFC 3339, with an optional offset such as +01:00 or Z (UTC when none)"

// parsedTime is a timestamp read from text.
type parsedTime struct {
	// micros since the epoch of the time as written, moved to UTC by its
	// offset when it has one.
	micros int64
	// zoned says an offset or zone was written; offset is it, in seconds.
	zoned  bool
	offset int
	// spacedZone says the offset came after a space ("... +01:00"), a
	// form DuckDB refuses.
	spacedZone bool
}

// parseTime reads a timestamp as DuckDB does (its forms are what the
// error message lists): a date, then optionally a time after a space or
// T (hours, minutes, seconds and up to nine digits of fraction, kept to
// the microsecond), then optionally Z, an offset (+01, +0100, +01:00), or
// after a space UTC, GMT or an offset.
func parseTime(s string) (parsedTime, error) {
	orig := s
	bad := func() (parsedTime, error) {
		return parsedTime{}, valueError("%q is not a timestamp; write %s", clip(orig), timestampForms)
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
	t := parsedTime{micros: time.Date(year, time.Month(month), day, hour, minute, sec, micro*1000, time.UTC).UnixMicro()}
	if s == "" {
		return t, nil
	}
	if s[0] == ' ' {
		s = strings.TrimLeft(s, " ")
		t.spacedZone = true
		switch strings.ToUpper(s) {
		case "UTC", "GMT", "Z", "ETC/UTC":
			t.zoned = true
			return t, nil
		}
		if s == "" || s[0] != '+' && s[0] != '-' {
			return parsedTime{}, valueError("%q: time zone %q is not supported; write an offset such as +01:00 (or UTC)", clip(orig), clip(s))
		}
	}
	if s == "Z" || s == "z" {
		t.zoned = true
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
	t.zoned = true
	t.offset = sign * (oh*3600 + om*60 + os)
	t.micros -= int64(t.offset) * microsPerSecond
	return t, nil
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// inTimeRange reports whether a timestamp lies in years 1 to 9999.
func inTimeRange(us int64) bool { return us >= minTimestamp && us <= maxTimestamp }

// ParseTimestamp reads a timestamp written as DuckDB reads one for a
// TIMESTAMP WITH TIME ZONE ('2026-01-02', '2026-01-02 03:04:05.5',
// '2026-01-02T03:04:05Z', '2026-01-02 04:04:05+01:00'; UTC when no offset
// is given) and returns microseconds since the Unix epoch. Sidecars and
// filters read timestamps with it.
func ParseTimestamp(s string) (int64, error) {
	t, err := parseTime(s)
	if err == nil && t.spacedZone && t.offset != 0 {
		err = valueError("%q: write the offset right after the time, without a space (%s)", clip(s), strings.Replace(strings.TrimSpace(s), " +", "+", 1))
	}
	if err == nil && !inTimeRange(t.micros) {
		err = valueError("%q is outside years 1 to 9999", clip(s))
	}
	if err != nil {
		return 0, err
	}
	return t.micros, nil
}

// formatTimestamp writes a timestamp as DuckDB casts one to VARCHAR:
// 2026-01-02 03:04:05[.ffffff], with +00 for TIMESTAMP WITH TIME ZONE.
func formatTimestamp(us int64, t sqlType) string {
	tm := time.UnixMicro(us).UTC()
	if t.id == tDate {
		return tm.Format("2006-01-02")
	}
	s := tm.Format("2006-01-02 15:04:05.999999")
	if t.id == tTimestampTZ {
		s += "+00"
	}
	return s
}

// floorDay returns the midnight (UTC) at or before a timestamp.
func floorDay(us int64) int64 {
	d := us / microsPerDay
	if us < 0 && us%microsPerDay != 0 {
		d--
	}
	return d * microsPerDay
}
