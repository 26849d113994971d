package decoder

import (
	"context"
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
