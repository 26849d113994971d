package fileindex

import (
	"slices"
	"testing"
)

func TestIndexEvictsLeastRecentlyUsed(t *testing.T) {
	x := New(100)
	x.Put("a", 40, 0)
	x.Put("b", 40, 0)
	if !x.Touch("a") || x.Touch("nope") {
		t.Fatal("Touch: want true for an indexed file only")
	}
	x.Put("c", 40, 0)
	if got := x.Evict(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("evicted %v, want [b] (a was used after b)", got)
	}
	if x.Len() != 2 || x.Bytes() != 80 || x.Has("b") {
		t.Errorf("after eviction: %d files, %d bytes, has b %v", x.Len(), x.Bytes(), x.Has("b"))
	}
	x.Put("a", 10, 0) // replaced: its old size is not counted twice
	if x.Bytes() != 50 {
		t.Errorf("%d bytes after replacing a, want 50", x.Bytes())
	}
}

func TestIndexScanOrderAndMissing(t *testing.T) {
	x := New(1 << 20)
	x.Put("used", 1, 1)
	x.PutOldest("old", 1, 2)
	x.PutOldest("used", 5, 2) // already indexed: kept as it was
	if x.Bytes() != 2 {
		t.Errorf("%d bytes, want 2", x.Bytes())
	}
	x.Put("new", 1, 2)
	// A scan of epoch 2 found only "old": "used" (epoch 1) was removed by
	// another process; "new" was indexed during the scan and stays.
	x.ForgetMissing(map[string]bool{"old": true}, 2)
	if x.Has("used") || !x.Has("old") || !x.Has("new") {
		t.Errorf("after the scan: used %v old %v new %v; want false true true", x.Has("used"), x.Has("old"), x.Has("new"))
	}
	x.maxBytes = 1
	if got := x.Evict(); !slices.Equal(got, []string{"old"}) {
		t.Errorf("evicted %v, want the scanned file first", got)
	}
}
