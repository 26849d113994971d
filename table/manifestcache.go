package table

import "github.com/framefs/framefs/cache"

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
	lru *cache.Sized[string, *Manifest]
}

func newManifestCache(maxBytes int64) *manifestCache {
	return &manifestCache{lru: cache.NewSized[string, *Manifest](maxBytes, 0, nil)}
}

func (c *manifestCache) get(key string) *Manifest {
	m, _ := c.lru.Get(key)
	return m
}

// add keeps m, whose encoded form is size bytes, evicting the least
// recently used manifests beyond the bound. A manifest larger than the
// whole bound is not kept.
func (c *manifestCache) add(key string, m *Manifest, size int64) { c.lru.Add(key, m, size) }

func (c *manifestCache) len() int { return c.lru.Len() }
