// Package mounttest holds what tests that run real FUSE mounts share
// across packages: whether a directory is a mount point, and ending a
// mount daemon (a framefs process serving a mount) so that it leaves no
// mount behind. It is imported by tests only.
package mounttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/framefs/framefs/internal/mountinfo"
)

// Mounted reports whether dir is a mount point.
func Mounted(dir string) bool {
	_, ok := mountinfo.At(dir)
	return ok
}

// StopDaemon ends the mount daemon cmd serving mnt: SIGTERM, on which a
// daemon unmounts and exits; SIGKILL if it has not exited within grace;
// and if it still has not exited within grace, the kernel's connection
// to mnt is aborted (AbortConnection). A mount still at mnt then (the
// daemon was killed, now or before) is detached lazily. A daemon that has
// already been waited for is not signalled.
func StopDaemon(cmd *exec.Cmd, mnt string, grace time.Duration) {
	if cmd.ProcessState == nil {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(grace):
			cmd.Process.Kill()
			select {
			case <-done:
			case <-time.After(grace):
				AbortConnection(mnt)
				<-done
			}
		}
	}
	Detach(mnt)
}

// Detach lazily unmounts whatever is mounted at mnt (a dead daemon's
// mount), with fusermount3 where it is installed.
func Detach(mnt string) {
	if Mounted(mnt) {
		exec.Command("fusermount3", "-u", "-z", mnt).Run()
		syscall.Unmount(mnt, syscall.MNT_DETACH)
	}
}

// AbortConnection aborts the kernel's FUSE connection of the mount at
// mnt, through the fusectl file system (mounted at
// /sys/fs/fuse/connections for the while if it is not), so that every
// request waiting on it fails. A daemon killed while one of its own
// threads waited on its own mount (a request the killed daemon had read
// and will never answer) cannot exit until then: that thread keeps the
// connection open. It touches nothing under mnt, which would wait too.
func AbortConnection(mnt string) {
	m, ok := mountinfo.At(mnt)
	_, minor, hasMinor := strings.Cut(m.Device, ":")
	if !ok || !hasMinor {
		return
	}
	const fusectl = "/sys/fs/fuse/connections"
	abort := fusectl + "/" + minor + "/abort"
	if _, err := os.Stat(abort); err != nil {
		if syscall.Mount("fusectl", fusectl, "fusectl", 0, "") == nil {
			defer syscall.Unmount(fusectl, 0)
		}
	}
	os.WriteFile(abort, []byte("1"), 0o200)
}

// StopPolls makes the kernel stop asking the mount at mnt to poll its
// files, as go-fuse's Server.WaitMount does, for a test that reads a mount
// served in its own process without holding the Server (the mount
// command run in process). Go's runtime polls every file it opens and
// waits for the answer holding a scheduler slot; with every slot so held,
// nothing would be left to answer. The file is opened and polled without
// the runtime, and the mount's answer (not supported) is the kernel's cue.
func StopPolls(mnt string) error {
	fd, err := syscall.Open(filepath.Join(mnt, ".go-fuse-epoll-hack"), syscall.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	_, err = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	return err
}
