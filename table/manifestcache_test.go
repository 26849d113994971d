package table

import (
	"fmt"
	"testing"

	"github.com/framefs/framefs/cache"
)

// TestManifestCacheBounded: the cache keeps the most recently used
// manifests within its byte bound, always the one just added if it fits.
func TestManifestCacheBounded(t *testing.T) {
	const entry = 300 + cache.EntryOverhead
	c := newManifestCache(3*entry + 10)
	for i := range 50 {
		c.add(fmt.Sprintf("m%d", i), &Manifest{}, 300)
		if b := c.lru.Bytes(); b > 3*entry+10 {
			t.Fatalf("after %d adds: %d bytes kept, bound %d", i+1, b, 3*entry+10)
		}
		// m0 is used after every add: it stays while others go.
		if i > 0 && c.get("m0") == nil {
			t.Fatalf("after %d adds: the most recently used manifest was evicted", i+1)
		}
		if c.get(fmt.Sprintf("m%d", i)) == nil {
			t.Fatalf("the manifest just added (m%d) was not kept", i)
		}
	}
	if n := c.len(); n != 3 {
		t.Errorf("%d manifests kept, want 3 of %d bytes under %d", n, entry, 3*entry+10)
	}
	if c.get("m49") == nil || c.get("m1") != nil {
		t.Error("want the newest and the recently used kept, the old ones gone")
	}
	c.add("big", &Manifest{}, 5000)
	if c.get("big") != nil || c.len() != 3 {
		t.Errorf("a manifest larger than the bound: kept %v, %d entries; want it dropped, the others kept", c.get("big") != nil, c.len())
	}
}
