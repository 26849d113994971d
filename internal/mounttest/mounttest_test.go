package mounttest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/internal/testenv"
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

// stuckFile is a file whose attributes are never answered.
type stuckFile struct {
	fs.Inode
	stuck chan struct{}
}

func (f *stuckFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	<-f.stuck
	return 0
}

// TestAbortConnection: a request the daemon never answers (as a killed
// daemon never answers what it had read) ends once the connection is
// aborted, and the mount is left to detach.
func TestAbortConnection(t *testing.T) {
	testenv.RequireFUSE(t)
	mnt := t.TempDir()
	stuck := make(chan struct{})
	server, err := fs.Mount(mnt, &stuckRoot{stuck: stuck}, &fs.Options{
		MountOptions: fuse.MountOptions{DirectMount: true, FsName: "mounttest"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(stuck)
		syscall.Unmount(mnt, syscall.MNT_DETACH)
		server.Wait()
	}()
	done := make(chan error, 1)
	go func() {
		_, err := os.Stat(filepath.Join(mnt, "stuck"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("stat returned before the abort: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	AbortConnection(mnt)
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
			t.Errorf("stat after the abort: %v, want ENOTCONN", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stat still waits 10 s after the abort")
	}
}

// stuckRoot is a root folder holding one stuckFile, "stuck".
type stuckRoot struct {
	fs.Inode
	stuck chan struct{}
}

func (r *stuckRoot) OnAdd(ctx context.Context) {
	r.AddChild("stuck", r.NewPersistentInode(ctx, &stuckFile{stuck: r.stuck}, fs.StableAttr{Mode: fuse.S_IFREG}), false)
}
