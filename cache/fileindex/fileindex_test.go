package fileindex

import (
	"crypto/sha256"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

func TestIndexEvictsLeastRecentlyUsed(t *testing.T) {
	x := New[string](100)
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
	x := New[string](1 << 20)
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

// TestIndexAgainstModel runs random operations on an index and on a plain
// slice kept in LRU order, and compares them after each: the slots move
// when files are forgotten, and their links must follow.
func TestIndexAgainstModel(t *testing.T) {
	type file struct {
		name  int
		size  int64
		epoch uint64
	}
	var model []file // newest first
	find := func(name int) int {
		return slices.IndexFunc(model, func(f file) bool { return f.name == name })
	}
	x := New[int](1000)
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 20000 {
		name := rng.IntN(64)
		size := int64(rng.IntN(100))
		epoch := uint64(rng.IntN(4))
		switch op := rng.IntN(7); op {
		case 0, 1:
			x.Put(name, size, epoch)
			if i := find(name); i >= 0 {
				model = slices.Delete(model, i, i+1)
			}
			model = slices.Insert(model, 0, file{name, size, epoch})
		case 2:
			x.PutOldest(name, size, epoch)
			if find(name) < 0 {
				model = append(model, file{name, size, epoch})
			}
		case 3:
			if got, i := x.Touch(name), find(name); got != (i >= 0) {
				t.Fatalf("step %d: Touch(%d) = %v", step, name, got)
			} else if i >= 0 {
				f := model[i]
				model = slices.Insert(slices.Delete(model, i, i+1), 0, f)
			}
		case 4:
			x.Forget(name)
			if i := find(name); i >= 0 {
				model = slices.Delete(model, i, i+1)
			}
		case 5:
			onDisk := map[int]bool{}
			for range 40 {
				onDisk[rng.IntN(64)] = true
			}
			x.ForgetMissing(onDisk, epoch)
			model = slices.DeleteFunc(model, func(f file) bool { return !onDisk[f.name] && f.epoch < epoch })
		case 6:
			var want []int
			var bytes int64
			for _, f := range model {
				bytes += f.size
			}
			for bytes > x.maxBytes && len(model) > 0 {
				last := model[len(model)-1]
				want = append(want, last.name)
				bytes -= last.size
				model = model[:len(model)-1]
			}
			if got := x.Evict(); !slices.Equal(got, want) {
				t.Fatalf("step %d: evicted %v, want %v", step, got, want)
			}
		}
		// The index's LRU order, newest first, must be the model's.
		var order []int
		var bytes int64
		for i := x.newest; i != none; i = x.slots[i].older {
			order = append(order, x.slots[i].name)
			if len(order) > len(x.slots) {
				t.Fatalf("step %d: the LRU list has a loop", step)
			}
		}
		var backwards []int
		for i := x.oldest; i != none; i = x.slots[i].newer {
			backwards = append(backwards, x.slots[i].name)
		}
		slices.Reverse(backwards)
		var want []int
		for _, f := range model {
			want = append(want, f.name)
			bytes += f.size
		}
		if !slices.Equal(order, want) || !slices.Equal(backwards, want) || x.Len() != len(model) || x.Bytes() != bytes || len(x.at) != len(model) {
			t.Fatalf("step %d: index %v (backwards %v), %d bytes; model %v, %d bytes", step, order, backwards, x.Bytes(), want, bytes)
		}
	}
}

// TestIndexMemoryPerFile: a file named by a 20-byte digest, what package
// diskcache indexes, costs at most 100 bytes of heap.
func TestIndexMemoryPerFile(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x := New[[20]byte](1 << 50)
	const n = 200_000
	for i := range n {
		h := sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
		x.Put([20]byte(h[:20]), 36_000, 1)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d bytes per file", per)
	if per > 100 {
		t.Errorf("the index takes %d bytes per file, more than 100", per)
	}
	runtime.KeepAlive(x)
}
