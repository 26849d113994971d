package table

import (
	"math/bits"
	"strings"
	"unsafe"

	"github.com/framefs/framefs/cache"
	"github.com/framefs/framefs/table/manifest"
)

// maxManifestBytes bounds the memory of the manifests and manifest lists
// a Table keeps (loadedBytes estimates what each takes). A mount lives
// through thousands of commits; every commit writes a manifest list and
// manifests, and most are soon only in old snapshots, so an unbounded
// cache grew with the table's history. 16 MiB holds the manifests of a
// version-2 snapshot of about 100,000 episodes (kept as stored, about
// 150 bytes an episode), or the decoded manifests of a version-1 snapshot
// of about 5,000 (2.8 KB an episode with two column statistics); a larger
// snapshot reads its manifests again when it is listed.
const maxManifestBytes = 16 << 20

// maxManifestLists bounds the manifest lists a Table keeps. Each commit
// writes a list of every manifest of its snapshot, so a mount following a
// table that commits every few seconds decoded one list per head, each as
// long as the head, and kept them all until they filled the manifests'
// byte bound (9 MiB of a 10-minute follower's 10 MiB of metadata caches
// was theirs and the manifests'). Lists of the snapshots in use are read
// again on most lookups in them: 32 is twice the snapshot trees a mount
// keeps (mounttree.MaxTrees), so the head and the snapshots being read
// keep theirs.
const maxManifestLists = 32

// manifestCache is a least-recently-used cache of manifests and manifest
// lists by key: manifests bounded by maxBytes of the memory they take,
// lists by maxBytes too (a list over it is read again at every use, as
// before they were apart) and maxManifestLists. It is safe for
// concurrent use.
type manifestCache struct {
	manifests *cache.Sized[string, *loadedManifest]
	lists     *cache.Sized[string, *loadedManifest]
}

func newManifestCache(maxBytes int64) *manifestCache {
	return &manifestCache{manifests: cache.NewSized[string, *loadedManifest](maxBytes, 0, nil),
		lists: cache.NewSized[string, *loadedManifest](maxBytes, maxManifestLists, nil)}
}

func (c *manifestCache) get(key string) *loadedManifest {
	if m, ok := c.manifests.Get(key); ok {
		return m
	}
	m, _ := c.lists.Get(key)
	return m
}

// add keeps m, evicting the least recently used manifests (or lists)
// beyond the bounds. One larger than the whole bound is not kept.
func (c *manifestCache) add(key string, m *loadedManifest) {
	if strings.HasPrefix(key, prefixManifestList) {
		c.lists.Add(key, m, loadedBytes(m))
		return
	}
	c.manifests.Add(key, m, loadedBytes(m))
}

func (c *manifestCache) len() int { return c.manifests.Len() + c.lists.Len() }

// bytes is what the manifests and lists kept are charged.
func (c *manifestCache) bytes() int64 { return c.manifests.Bytes() + c.lists.Bytes() }

// CacheBytes is what the table's caches of decoded metadata (manifests,
// snapshots, chunk indexes and entries found) hold, by the sizes they are
// charged.
func (t *Table) CacheBytes() int64 {
	return t.manifests.bytes() + t.snapshots.Bytes() + t.chunkIndexes.Bytes() + t.found.Bytes()
}

// loadedBytes estimates the memory of a loaded manifest: a version-2
// manifest is kept as stored (each read decodes the columns it needs, and
// drops them), so it takes its Parquet bytes; a version-1 manifest and a
// manifest list are kept decoded, and take their decoded form (for a
// version-1 manifest, also the JSON its strings point into).
func loadedBytes(m *loadedManifest) int64 {
	return int64(unsafe.Sizeof(*m)) + int64(cap(m.data)) + m.json + entriesBytes(m.entries) + summariesBytes(m.list)
}

const stringBytes = int64(unsafe.Sizeof(""))

// entriesBytes estimates the memory of decoded manifest entries besides
// their strings' bytes (which point into the JSON they were decoded
// from): the entries, and their maps, which take most of it.
func entriesBytes(entries []EpisodeEntry) int64 {
	n := int64(cap(entries)) * int64(unsafe.Sizeof(EpisodeEntry{}))
	for i := range entries {
		e := &entries[i]
		n += mapBytes(len(e.Partition), stringBytes, stringBytes)
		n += mapBytes(len(e.Videos), stringBytes, int64(unsafe.Sizeof(VideoRef{})))
		for _, v := range e.Videos {
			n += int64(cap(v.Sizes)) * int64(unsafe.Sizeof(SizesRef{}))
		}
		n += mapBytes(len(e.Stats), stringBytes, int64(unsafe.Sizeof(ColumnStats{})))
	}
	return n
}

// summariesBytes estimates the memory of a decoded manifest list. The
// column names its maps are keyed by are the list schema's, shared.
func summariesBytes(list []manifest.Summary) int64 {
	n := int64(cap(list)) * int64(unsafe.Sizeof(manifest.Summary{}))
	for i := range list {
		s := &list[i]
		n += int64(len(s.Manifest) + len(s.EpisodeMin) + len(s.EpisodeMax))
		n += mapBytes(len(s.Partitions), stringBytes, int64(unsafe.Sizeof(manifest.Range{})))
		for _, r := range s.Partitions {
			n += int64(len(r.Min.Str) + len(r.Max.Str))
		}
		n += mapBytes(len(s.Stats), stringBytes, int64(unsafe.Sizeof(manifest.Stats{})))
		for _, st := range s.Stats {
			n += int64(len(st.Min.Str) + len(st.Max.Str))
		}
	}
	return n
}

// mapBytes estimates the memory of a map of n entries whose keys and
// values take key and value bytes, as Go lays maps out: a header, and
// groups of 8 slots behind 8 control bytes; a value of more than 128
// bytes is kept in an allocation of its own, its slot holding a pointer.
func mapBytes(n int, key, value int64) int64 {
	if n == 0 {
		return 0
	}
	const header, group, maxInline = 48, 8, 128
	slot, outside := key+value, int64(0)
	if value > maxInline {
		slot, outside = key+8, allocBytes(value)
	}
	groups := int64((n + group - 1) / group)
	return header + groups*allocBytes(8+group*slot) + int64(n)*outside
}

// allocBytes rounds an allocation up as Go's allocator does, roughly: to
// one of 16 size classes per power of two.
func allocBytes(n int64) int64 {
	step := max(int64(16), int64(1)<<max(0, bits.Len64(uint64(n-1))-4))
	return (n + step - 1) / step * step
}
