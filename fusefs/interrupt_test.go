package fusefs

import (
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/framefs/framefs/serving"
)

// TestSignalsDoNotInterruptReads opens and reads frames that must be
// decoded while the reading thread is hit by a signal every 100 µs (the
// kernel then interrupts its FUSE requests): no open or read may fail with
// EINTR, as none would on a local disk. The reads use raw system calls,
// which do not retry EINTR as Go's os package does.
func TestSignalsDoNotInterruptReads(t *testing.T) {
	// No image cache: listing the folder works out the frames' sizes by
	// decoding them, which would otherwise leave their images cached.
	f := newFixtureServing(t, Options{ReadOnly: true}, robotTable, serving.Options{CacheBytes: -1})
	dir := f.path("robot", "snapshots", "1", "task=pick", "ep1")
	names := names(t, dir)
	var tid atomic.Int32
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid.Store(int32(unix.Gettid()))
		buf := make([]byte, 1<<20)
		for _, name := range names {
			fd, err := unix.Open(dir+"/"+name, unix.O_RDONLY, 0)
			if err != nil {
				done <- &os.PathError{Op: "open", Path: name, Err: err}
				return
			}
			_, err = unix.Read(fd, buf)
			unix.Close(fd)
			if err != nil {
				done <- &os.PathError{Op: "read", Path: name, Err: err}
				return
			}
		}
		done <- nil
	}()
	pid := unix.Getpid()
	for sent := 0; ; sent++ {
		select {
		case err := <-done:
			if errors.Is(err, unix.EINTR) {
				t.Fatalf("%v (after %d signals)", err, sent)
			}
			if err != nil {
				t.Fatal(err)
			}
			if sent < 10 {
				t.Errorf("only %d signals were sent while reading", sent)
			}
			return
		case <-time.After(100 * time.Microsecond):
			if id := tid.Load(); id != 0 {
				unix.Tgkill(pid, int(id), unix.SIGURG)
			}
		}
	}
}
