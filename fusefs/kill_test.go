package fusefs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/internal/mounttest"
	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/serving"
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

// A mount over one whose daemon is stopped (SIGSTOP) fails after
// mountAnswerTimeout with an error that says so, where it waited for the
// daemon forever, deaf to SIGTERM; the stopped daemon, continued, serves
// its mount as before.
func TestMountOverStoppedDaemonFails(t *testing.T) {
	testenv.RequireFUSE(t)
	wh, staging := t.TempDir(), t.TempDir()
	mnt := filepath.Join(t.TempDir(), "mnt")
	robotTable(t, wh)
	d := startDaemon(t, wh, mnt, staging)
	d.cmd.Process.Signal(syscall.SIGSTOP)
	// Cleanups run last registered first: this one before d.stop.
	t.Cleanup(func() { d.cmd.Process.Signal(syscall.SIGCONT) })
	defer func(old time.Duration) { mountAnswerTimeout = old }(mountAnswerTimeout)
	mountAnswerTimeout = 300 * time.Millisecond

	frames := serving.New(decoder.Codec{}, serving.Options{CacheBytes: 1 << 20})
	defer frames.Close()
	mounted := make(chan error, 1)
	go func() {
		srv, err := MountWarehouse(mnt, wh, dirWarehouse(t, wh), frames, Options{ReadOnly: true})
		if err == nil {
			srv.Unmount()
			srv.Wait()
		}
		mounted <- err
	}()
	select {
	case err := <-mounted:
		if err == nil || !strings.Contains(err.Error(), "has not answered") || !strings.Contains(err.Error(), mnt) {
			t.Fatalf("mount over a stopped daemon's mount: %v, want an error naming %s and saying its daemon does not answer", err, mnt)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a mount over a stopped daemon's mount waited 20 s")
	}

	d.cmd.Process.Signal(syscall.SIGCONT)
	if _, err := os.ReadFile(filepath.Join(mnt, "robot", "ingest", ".status")); err != nil {
		t.Fatalf("the continued daemon does not serve its mount: %v", err)
	}
}
