package fusefs

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/mounttest"
	"github.com/framefs/framefs/internal/testenv"
)

// A daemon killed with SIGKILL as its mount appears exits, leaving a dead
// mount behind, never a hung one: nothing of the daemon waits on its own
// mount (see mount). Each daemon is killed a little later than the one
// before, across the first millisecond of its mount's life, when go-fuse's
// fs.Mount would be opening a file in it: 4 to 7 of the 60 then hung.
func TestDaemonKilledAsItMountsExits(t *testing.T) {
	testenv.RequireFUSE(t)
	wh, staging := t.TempDir(), t.TempDir()
	mnt := filepath.Join(t.TempDir(), "mnt")
	os.MkdirAll(mnt, 0o755)
	robotTable(t, wh)
	const daemons = 60
	hung := 0
	for i := 0; i < daemons; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "FRAMEFS_TEST_MOUNT="+wh+"|"+mnt+"|"+staging)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		waitMounted(t, mnt, exited)
		time.Sleep(time.Duration(i%20) * 50 * time.Microsecond)
		cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			hung++
			mounttest.AbortConnection(mnt)
			<-exited
		}
		mounttest.Detach(mnt)
	}
	if hung > 0 {
		t.Errorf("%d of %d daemons killed as they mounted did not exit until their connection was aborted", hung, daemons)
	}
}

// waitMounted returns as soon as mnt is a mount point, polling without
// sleeping so as to see it early; it fails if the daemon exits first or
// takes more than 30 s.
func waitMounted(t *testing.T, mnt string, exited <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !mounttest.Mounted(mnt) {
		select {
		case <-exited:
			t.Fatalf("the daemon exited before mounting %s", mnt)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not mounted within 30 s", mnt)
		}
	}
}
