package cache

import (
	"slices"
	"testing"
)

// TestSizedBounded: Sized keeps the most recently used values within its
// byte bound, charges a replaced value once, and keeps no value larger
// than the bound.
func TestSizedBounded(t *testing.T) {
	var removed []int
	c := NewSized[int, string](3*(100+EntryOverhead)+10, 0, func(k int, _ string) { removed = append(removed, k) })
	for i := range 3 {
		if !c.Add(i, "v", 100) {
			t.Fatalf("value %d not kept", i)
		}
	}
	c.Get(0) // 0 becomes the most recently used
	c.Add(3, "v", 100)
	if _, ok := c.Get(1); ok || !slices.Equal(removed, []int{1}) {
		t.Errorf("the least recently used value (1) survived; removed %v", removed)
	}
	if c.Len() != 3 || c.Bytes() != 3*(100+EntryOverhead) {
		t.Errorf("%d values, %d bytes; want 3 of %d", c.Len(), c.Bytes(), 100+EntryOverhead)
	}
	c.Add(3, "w", 10) // replaced: charged once, at its new size
	if v, _ := c.Get(3); v != "w" || c.Bytes() != 2*(100+EntryOverhead)+10+EntryOverhead {
		t.Errorf("after replacing: %q, %d bytes", v, c.Bytes())
	}
	if c.Add(4, "big", c.MaxBytes()) {
		t.Error("a value larger than the bound was kept")
	}
	if _, ok := c.Get(4); ok || c.Len() != 3 {
		t.Errorf("after an oversized add: %d values", c.Len())
	}
	c.Add(0, "big", c.MaxBytes()) // an oversized replacement drops the old value
	if _, ok := c.Get(0); ok {
		t.Error("an oversized replacement left the old value")
	}
	c.AddOwned(5, "owned", c.MaxBytes()) // kept alone
	if v, ok := c.Get(5); !ok || v != "owned" || c.Len() != 1 {
		t.Errorf("an owned value larger than the bound: kept %v, %d values; want it alone", ok, c.Len())
	}
	c.Add(6, "v", 10) // and evicted by the next value
	if _, ok := c.Get(5); ok || c.Len() != 1 || !slices.Contains(removed, 5) {
		t.Errorf("an oversized owned value stayed past the next add (%d values, removed %v)", c.Len(), removed)
	}
	c.Purge()
	if c.Len() != 0 || c.Bytes() != 0 {
		t.Errorf("after Purge: %d values, %d bytes", c.Len(), c.Bytes())
	}
}

// TestSizedEntryBound: the count bound holds too, and evicts the least
// recently used value.
func TestSizedEntryBound(t *testing.T) {
	c := NewSized[int, int](1<<20, 2, nil)
	c.Add(1, 1, 1)
	c.Add(2, 2, 1)
	c.Get(1)
	c.Add(3, 3, 1)
	if _, ok := c.Get(2); ok || c.Len() != 2 || c.Bytes() != 2*(1+EntryOverhead) {
		t.Errorf("count bound: 2 kept %v, %d values, %d bytes", ok, c.Len(), c.Bytes())
	}
}

// TestSizedRecharge: a value's size set after it was added is charged,
// evicting the least recently used others, without telling onRemove of
// the value itself; a key not cached is left alone.
func TestSizedRecharge(t *testing.T) {
	var removed []int
	c := NewSized[int, string](3*(100+EntryOverhead), 0, func(k int, _ string) { removed = append(removed, k) })
	for i := range 3 {
		c.Add(i, "v", 0)
	}
	c.Recharge(1, 100)
	if c.Bytes() != 100+3*EntryOverhead || len(removed) != 0 {
		t.Fatalf("after recharging 1: %d bytes, removed %v", c.Bytes(), removed)
	}
	c.Recharge(0, 2*100+EntryOverhead) // 0 is now the most recently used
	if _, ok := c.Get(0); !ok || !slices.Equal(removed, []int{2}) || c.Bytes() != c.MaxBytes() {
		t.Errorf("after recharging 0: removed %v, %d bytes of %d", removed, c.Bytes(), c.MaxBytes())
	}
	c.Recharge(9, 100)
	if c.Len() != 2 {
		t.Errorf("recharging a key not cached changed the cache: %d values", c.Len())
	}
}
