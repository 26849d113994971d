package parquetcheck

import (
	"bytes"
	"testing"
)

// TestPool: buffers come zeroed at the size asked, keep their content
// when grown, and are reused once freed.
func TestPool(t *testing.T) {
	var p Pool
	b := p.Allocate(100)
	if len(b) != 100 || cap(b) != 128 {
		t.Fatalf("len %d cap %d", len(b), cap(b))
	}
	copy(b, "hello")
	b = p.Reallocate(1000, b)
	if len(b) != 1000 || !bytes.HasPrefix(b, []byte("hello")) || b[999] != 0 {
		t.Fatalf("reallocated: len %d %q", len(b), b[:5])
	}
	b[999] = 7
	p.Free(b)
	c := p.Allocate(700)
	if len(c) != 700 || cap(c) != 1024 || c[0] != 0 {
		t.Fatalf("reused buffer: len %d cap %d first byte %d (not zeroed)", len(c), cap(c), c[0])
	}
	p.Free(make([]byte, 100)) // not of a class: dropped
}
