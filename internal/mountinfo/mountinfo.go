// Package mountinfo reads the kernel's table of this process's mounts,
// /proc/self/mountinfo, for the mount command and the tests that look for
// a mount at a directory.
package mountinfo

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Mount is one mount of the table.
type Mount struct {
	Device string // "MAJOR:MINOR": a FUSE mount's minor names its connection
	Point  string // where it is mounted
	FSType string // "fuse.framefs", "ext4", ...
}

// At returns the mount at dir (made absolute), the last one made there
// where several are stacked; ok is false when dir is no mount point.
func At(dir string) (m Mount, ok bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Mount{}, false
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Mount{}, false
	}
	for _, mnt := range Parse(string(data)) {
		if mnt.Point == abs {
			m, ok = mnt, true
		}
	}
	return m, ok
}

// Parse reads the lines of a mountinfo table:
//
//	ID PARENT MAJOR:MINOR ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
//
// The kernel writes a space, tab, newline or backslash of POINT as an
// octal escape (\040 for a space), which Parse undoes. Lines it cannot
// read are skipped.
func Parse(table string) []Mount {
	var out []Mount
	for _, line := range strings.Split(table, "\n") {
		fields := strings.Fields(line)
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 5 || sep+1 >= len(fields) {
			continue
		}
		out = append(out, Mount{Device: fields[2], Point: unescape(fields[4]), FSType: fields[sep+1]})
	}
	return out
}

// unescape undoes the octal escapes of a mountinfo field.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
