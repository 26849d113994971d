// Package mounttest holds what tests that run real FUSE mounts share
// across packages: whether a directory is a mount point, and ending a
// mount daemon (a framefs process serving a mount) so that it leaves no
// mount behind. It is imported by tests only.
package mounttest

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Mounted reports whether dir is a mount point, from /proc/self/mounts.
func Mounted(dir string) bool {
	data, _ := os.ReadFile("/proc/self/mounts")
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[1] == dir {
			return true
		}
	}
	return false
}

// StopDaemon ends the mount daemon cmd serving mnt: SIGTERM, on which a
// daemon unmounts and exits; SIGKILL if it has not exited within grace.
// A mount still at mnt then (the daemon was killed, now or before) is
// detached lazily. A daemon that has already been waited for is not
// signalled.
func StopDaemon(cmd *exec.Cmd, mnt string, grace time.Duration) {
	if cmd.ProcessState == nil {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(grace):
			cmd.Process.Kill()
			<-done
		}
	}
	if Mounted(mnt) {
		exec.Command("fusermount3", "-u", "-z", mnt).Run()
		syscall.Unmount(mnt, syscall.MNT_DETACH)
	}
}
