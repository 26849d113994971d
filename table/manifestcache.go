package table

import (
	"sync"

	lru "github.com/hashicorp/golang-lru/v2/simplelru"
)

// maxManifestBytes bounds the manifests a Table keeps decoded, counted by
// the size of their JSON (a decoded manifest takes a few times that). A
// mount lives through thousands of commits; every commit writes manifests
// and most are soon only in old snapshots, so an unbounded cache grew with
// the table's history. 64 MiB holds the manifests of the snapshots a mount
// reads (a snapshot lists at most maxManifests of them) for tables of tens of
// thousands of episodes.
const maxManifestBytes = 64 << 20

// manifestCache is a least-recently-used cache of decoded manifests by key,
// bounded by maxBytes of their encoded size. It is safe for concurrent use.
type manifestCache struct {
	mu       sync.Mutex
	lru      *lru.LRU[string, cachedManifest]
	bytes    int64
	maxBytes int64
}

type cachedManifest struct {
	m    *Manifest
	size int64
}

func newManifestCache(maxBytes int64) *manifestCache {
	c := &manifestCache{maxBytes: maxBytes}
	// The entry count is not the bound (bytes are); the LRU needs one.
	c.lru, _ = lru.NewLRU[string, cachedManifest](1<<30, func(_ string, v cachedManifest) { c.bytes -= v.size })
	return c
}

func (c *manifestCache) get(key string) *Manifest {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.lru.Get(key)
	if !ok {
		return nil
	}
	return v.m
}

// add keeps m, whose encoded form is size bytes, evicting the least
// recently used manifests beyond the bound (never m itself).
func (c *manifestCache) add(key string, m *Manifest, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.Peek(key); ok {
		c.bytes -= old.size
	}
	c.lru.Add(key, cachedManifest{m: m, size: size})
	c.bytes += size
	for c.bytes > c.maxBytes && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

func (c *manifestCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
