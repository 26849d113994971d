package mounttest

import (
	"os/exec"
	"testing"
	"time"
)

func TestMounted(t *testing.T) {
	if !Mounted("/proc") {
		t.Error("/proc is not reported as a mount point")
	}
	if Mounted(t.TempDir()) {
		t.Error("a fresh temporary directory is reported as a mount point")
	}
}

// TestStopDaemon: a process that exits on SIGTERM is waited for; one
// that ignores it is killed once the grace period is over.
func TestStopDaemon(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		min    time.Duration
	}{
		{"exits on SIGTERM", "exec sleep 60", 0},
		{"ignores SIGTERM", `trap "" TERM; exec sleep 60`, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", tc.script)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // the shell sets its trap
			start := time.Now()
			StopDaemon(cmd, t.TempDir(), 300*time.Millisecond)
			took := time.Since(start)
			if cmd.ProcessState == nil {
				t.Fatal("StopDaemon returned before the process was waited for")
			}
			if took < tc.min || took > 10*time.Second {
				t.Errorf("StopDaemon took %v; want at least %v", took, tc.min)
			}
			// Stopping again is harmless.
			StopDaemon(cmd, t.TempDir(), time.Second)
		})
	}
}
