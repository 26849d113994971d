package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
)

// byteSize is a size in bytes as flags and mount options take it: a byte
// count (268435456) or a number with a unit as people type them (256MiB,
// 1.5GiB, 2G, 64 kB; parsed by go-humanize, case-insensitive). Units with
// an i (KiB, MiB, GiB, TiB, or Ki, Mi, ...) count in 1024s, the others
// (kB, MB, G, ...) in 1000s. A negative size parses, so that the flag's
// range check (see checkFlag) names it; no size option takes one.
type byteSize int64

func (s *byteSize) Set(text string) error {
	n, err := parseSize(text)
	if err != nil {
		return err
	}
	*s = byteSize(n)
	return nil
}

// String prints the size with a unit where that is exact (256 MiB, 10 GiB,
// 1.5 GiB), so that help shows defaults readably and the text parses back
// to the same size.
func (s *byteSize) String() string { return formatSize(int64(*s)) }

func (s *byteSize) Type() string { return "size" }

// The errors of parseSize; the flag's error names the flag and the value.
var (
	errNotSize  = errors.New("not a size: want a byte count or a number with a unit, e.g. 268435456, 256MiB, 1.5GiB or 2G")
	errTooLarge = fmt.Errorf("too large: the largest size is %d bytes (8 EiB)", int64(math.MaxInt64))
)

// parseSize parses a size (see byteSize).
func parseSize(text string) (int64, error) {
	t := strings.TrimSpace(text)
	neg := strings.HasPrefix(t, "-")
	if neg {
		t = t[1:]
	}
	if t == "" || t[0] < '0' || t[0] > '9' {
		return 0, errNotSize
	}
	u, err := humanize.ParseBytes(t)
	if err != nil {
		if strings.Contains(err.Error(), "too large") {
			return 0, errTooLarge
		}
		return 0, errNotSize
	}
	if u > math.MaxInt64 {
		return 0, errTooLarge
	}
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}

// formatSize prints n as go-humanize does, with 1024s (256 MiB) or 1000s
// (2 GB), where that text parses back to n; as a byte count otherwise.
func formatSize(n int64) string {
	if n < 0 && n != math.MinInt64 {
		return "-" + formatSize(-n)
	}
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	u := uint64(n)
	for digits := 1; digits <= 4; digits++ {
		for _, s := range []string{humanize.IBytesN(u, digits), humanize.BytesN(u, digits)} {
			if back, err := humanize.ParseBytes(s); err == nil && back == u {
				return s
			}
		}
	}
	return strconv.FormatInt(n, 10)
}
