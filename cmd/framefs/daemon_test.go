package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/fusefs"
	"github.com/framefs/framefs/internal/mounttest"
	"github.com/framefs/framefs/internal/testenv"
)

// TestDaemonMount: `mount --daemon` returns once the mount is up, at a
// mount point whose name the kernel's mount table escapes (a space is
// "\040" there), and the daemon it leaves behind serves frames and exits
// when the mount is unmounted.
func TestDaemonMount(t *testing.T) {
	testenv.RequireFUSE(t)
	wh := t.TempDir()
	mustRun(t, "create", filepath.Join(wh, "robot"))
	mustRun(t, "ingest", filepath.Join(wh, "robot"), "../../testdata/video/h264_faststart.mp4")
	mnt := filepath.Join(t.TempDir(), "my frames")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mounttest.Detach(mnt) })

	start := time.Now()
	out := string(runFramefs(t, "mount", "--daemon", wh, mnt, "-o", "ro"))
	m := regexp.MustCompile(`^mounted (.*) \(pid (\d+), log .*\)\n$`).FindStringSubmatch(out)
	if m == nil || m[1] != mnt {
		t.Fatalf("mount --daemon printed %q, want the mount point, the pid and the log", out)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("mount --daemon took %v", took)
	}
	pid, _ := strconv.Atoi(m[2])
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if !fusefs.IsMounted(mnt) {
		t.Fatalf("%s is not mounted", mnt)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "robot", "latest", "h264_faststart", "000003.jpg")); err != nil {
		t.Fatal(err)
	}

	if err := syscall.Unmount(mnt, 0); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); running(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon (pid %d) still runs 10 s after its mount was unmounted", pid)
		}
	}
}

// running reports whether process pid exists and has not exited (a
// zombie that nobody reaped has).
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// PID (COMM) STATE ...: the command name may hold spaces and parens.
	rest := stat[strings.LastIndexByte(string(stat), ')')+1:]
	return !strings.HasPrefix(strings.TrimSpace(string(rest)), "Z")
}
