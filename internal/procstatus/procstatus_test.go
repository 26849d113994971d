package procstatus

import (
	"os"
	"testing"
)

func TestBytes(t *testing.T) {
	for _, pid := range []int{0, os.Getpid()} {
		rss, err := Bytes(pid, "VmRSS")
		if err != nil || rss < 1<<20 {
			t.Errorf("pid %d: VmRSS %d, %v; want a resident set of at least 1 MiB", pid, rss, err)
		}
		hwm, err := Bytes(pid, "VmHWM")
		if err != nil || hwm < rss {
			t.Errorf("pid %d: VmHWM %d, %v; want at least VmRSS %d", pid, hwm, err, rss)
		}
	}
	if _, err := Bytes(0, "NoSuchField"); err == nil {
		t.Error("a missing field gave no error")
	}
	if _, err := Bytes(-1, "VmRSS"); err == nil {
		t.Error("a missing process gave no error")
	}
}
