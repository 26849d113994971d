package decoder

import (
	"context"
	"os"
	"runtime"
	"sync"
	"testing"
)

// TestReadCMemory: an open decoder session's memory shows in malloc's
// in-use bytes, and comes off them when the session closes.
func TestReadCMemory(t *testing.T) {
	v := openVideo(t, "../testdata/video/h264_faststart.mp4", 0)
	before := ReadCMemory()
	s, err := Codec{}.OpenSession(context.Background(), v, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.Bind(context.Background(), v.R)
	p, err := s.Decode(context.Background(), 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	open := ReadCMemory()
	p.Release()
	s.Close()
	closed := ReadCMemory()
	t.Logf("in use: %d before, %d with the session, %d after; free in the arenas %d", before.MallocInUse, open.MallocInUse, closed.MallocInUse, closed.MallocFree)
	if open.MallocInUse-before.MallocInUse < 64<<10 {
		t.Errorf("a session decoding a frame added %d bytes in use, want its buffers (over 64 KiB)", open.MallocInUse-before.MallocInUse)
	}
	if closed.MallocInUse >= open.MallocInUse || closed.MallocFree < 0 {
		t.Errorf("closing the session left %d bytes in use (%d with it open)", closed.MallocInUse, open.MallocInUse)
	}
}

// TestOneMallocArena: sessions decoding on eight threads of their own
// leave malloc with one arena, where glibc would give each thread one.
func TestOneMallocArena(t *testing.T) {
	if os.Getenv("MALLOC_ARENA_MAX") != "" || os.Getenv("GLIBC_TUNABLES") != "" {
		t.Skip("the environment chooses malloc's arenas")
	}
	v := openVideo(t, "../testdata/video/h264_faststart.mp4", 0)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // a thread of its own, which ends with the goroutine
			s, err := Codec{}.OpenSession(context.Background(), v, 1)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			s.Bind(context.Background(), v.R)
			p, err := s.Decode(context.Background(), 10, nil)
			if err != nil {
				errs <- err
				return
			}
			p.Release()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := ReadCMemory().Arenas; got != 1 {
		t.Errorf("malloc has %d arenas after sessions on eight threads, want 1", got)
	}
}
