// Package procstatus reads the memory figures of a Linux process from
// /proc/PID/status: VmRSS, VmHWM (peak), RssAnon (private pages: heaps
// and stacks), RssFile (pages mapped from files).
package procstatus

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Bytes returns field (such as "RssAnon") of /proc/PID/status in bytes;
// pid 0 is this process.
func Bytes(pid int, field string) (int64, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	prefix := []byte(field + ":")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, found := bytes.CutPrefix(sc.Bytes(), prefix)
		if !found {
			continue
		}
		kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s in %s: %w", field, path, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in %s", field, path)
}
