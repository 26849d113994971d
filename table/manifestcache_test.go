package table

import (
	"fmt"
	"testing"
)

// TestManifestCacheBounded: the cache keeps the most recently used
// manifests within its byte bound, and always the one just added.
func TestManifestCacheBounded(t *testing.T) {
	c := newManifestCache(1000)
	for i := range 50 {
		c.add(fmt.Sprintf("m%d", i), &Manifest{}, 300)
		if c.bytes > 1000 {
			t.Fatalf("after %d adds: %d bytes kept, bound 1000", i+1, c.bytes)
		}
		// m0 is used after every add: it stays while others go.
		if i > 0 && c.get("m0") == nil {
			t.Fatalf("after %d adds: the most recently used manifest was evicted", i+1)
		}
	}
	if n := c.len(); n != 3 {
		t.Errorf("%d manifests kept, want 3 of 300 bytes under 1000", n)
	}
	if c.get("m49") == nil || c.get("m1") != nil {
		t.Error("want the newest and the recently used kept, the old ones gone")
	}
	c.add("big", &Manifest{}, 5000)
	if c.get("big") == nil || c.len() != 1 {
		t.Errorf("a manifest larger than the bound: kept %v, %d entries; want it alone", c.get("big") != nil, c.len())
	}
	c.add("big", &Manifest{}, 100) // replaced: its old size is not counted twice
	if c.bytes != 100 {
		t.Errorf("%d bytes after replacing an entry, want 100", c.bytes)
	}
}
