package table

import (
	"unsafe"

	"github.com/framefs/framefs/cache"
)

// maxManifestBytes bounds the memory of the manifests a Table keeps
// decoded (manifestBytes estimates it: about 3.4 times their JSON, 2.8 KB
// an episode with two column statistics). A mount lives through thousands
// of commits; every commit writes manifests and most are soon only in old
// snapshots, so an unbounded cache grew with the table's history. 16 MiB
// holds the manifests of a snapshot of about 5,000 episodes; a larger
// snapshot reads its manifests again when it is listed.
const maxManifestBytes = 16 << 20

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

// CacheBytes is what the table's caches of decoded metadata (manifests
// and snapshots) hold, by the sizes they are charged.
func (t *Table) CacheBytes() int64 { return t.manifests.lru.Bytes() + t.snapshots.Bytes() }

// add keeps m, evicting the least recently used manifests beyond the
// bound. A manifest larger than the whole bound is not kept.
func (c *manifestCache) add(key string, m *Manifest) { c.lru.Add(key, m, manifestBytes(m)) }

// manifestBytes estimates the memory of a decoded manifest: its entries,
// their strings, and their maps, which take most of it (Go's maps hold
// their entries in groups of 8 slots with a header).
func manifestBytes(m *Manifest) int64 {
	const str = int64(unsafe.Sizeof(""))
	n := int64(unsafe.Sizeof(*m)) + int64(cap(m.Episodes))*int64(unsafe.Sizeof(EpisodeEntry{}))
	for i := range m.Episodes {
		e := &m.Episodes[i]
		n += int64(len(e.Episode) + len(e.DataFile))
		n += mapBytes(len(e.Partition), 2*str)
		for k, v := range e.Partition {
			n += int64(len(k) + len(v))
		}
		n += mapBytes(len(e.Videos), str+int64(unsafe.Sizeof(VideoRef{})))
		for k, v := range e.Videos {
			n += int64(len(k)+len(v.Pack)+len(v.SHA256)+len(v.Codec)+len(v.SourceName)) + int64(cap(v.Sizes))*int64(unsafe.Sizeof(SizesRef{}))
			for _, sz := range v.Sizes {
				n += int64(len(sz.Identity) + len(sz.Object))
			}
		}
		n += mapBytes(len(e.Stats), str+int64(unsafe.Sizeof(ColumnStats{})))
		for k, v := range e.Stats {
			n += int64(len(k) + cap(v.Min) + cap(v.Max))
		}
	}
	return n
}

// mapBytes estimates the memory of a map of n entries of slot bytes each.
func mapBytes(n int, slot int64) int64 {
	if n == 0 {
		return 0
	}
	const header, group = 48, 8
	groups := int64((n + group - 1) / group)
	return header + groups*(8+group*slot)
}

func (c *manifestCache) len() int { return c.lru.Len() }
