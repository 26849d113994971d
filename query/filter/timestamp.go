package filter

import "time"

const (
	microsPerSecond = int64(1e6)
	microsPerDay    = 86400 * microsPerSecond
)

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
