package table

import (
	"context"

	"github.com/framefs/framefs/table/manifest"
)

// Entries found one at a time.
//
// EpisodeIn finds one episode of a snapshot by reading the episode ids of
// the manifests whose ranges may hold it, then the row of the one that
// does: a Parquet page of every column of that manifest. A job that
// follows a growing table (a loader re-reading `latest`, a file manager
// left open on it) looks the same episodes up again in every new head,
// and a new head's manifest list holds most of its parent's manifests:
// the 30-frame episodes of the follower soak, with a commit every 2
// seconds, spent 17% of the mount's allocations (2.4 GB in 5 minutes) on
// decoding the same entries again.
//
// A manifest is immutable, and an episode appears in a snapshot at most
// once, so the entry an episode has in a manifest, decoded under a schema,
// is its entry in every snapshot whose manifest list holds that manifest.
// foundEntries keeps the last entries EpisodeIn found by that key. Like the
// entries of decoded version-1 manifests, they are shared with callers,
// who must not modify their maps.

// foundKey names the entry of episode in manifest, decoded under the
// layout of schema.
type foundKey struct {
	manifest, episode string
	schema            int
}

// maxFoundBytes bounds the entries kept: about 1,000 entries of one video
// and two column statistics.
const maxFoundBytes = 2 << 20

// foundBytes estimates the memory of e as the found entries keep it: the
// entry and its maps (entriesBytes), and its strings, which a version-2
// manifest decodes into allocations of their own.
func foundBytes(e *EpisodeEntry) int64 {
	n := entriesBytes([]EpisodeEntry{*e}) + int64(len(e.Episode)+len(e.DataFile))
	for k, v := range e.Partition {
		n += int64(len(k) + len(v))
	}
	for col, v := range e.Videos {
		n += int64(len(col) + len(v.Pack) + len(v.SHA256) + len(v.Codec) + len(v.SourceName))
		for _, s := range v.Sizes {
			n += int64(len(s.Identity) + len(s.Object))
		}
	}
	for col, s := range e.Stats {
		n += int64(len(col) + len(s.Min) + len(s.Max))
	}
	return n
}

// foundIn returns episode id of snap from the entries found before
// (foundcache.go), if one of them is in a manifest of snap that may hold
// it in the partition of values.
func (t *Table) foundIn(ctx context.Context, snap *Snapshot, layout manifest.Layout, values []string, id string) (EpisodeEntry, bool, error) {
	infos, err := t.Manifests(ctx, snap)
	if err != nil {
		return EpisodeEntry{}, false, err
	}
	for _, info := range infos {
		if s := info.Summary; s != nil && (!s.MayHoldPartition(layout, values) || !s.Covers(id)) {
			continue
		}
		if e, ok := t.found.Get(foundKey{manifest: info.Key, episode: id, schema: snap.SchemaID}); ok && inPartition(layout, &e, values) {
			return e, true, nil
		}
	}
	return EpisodeEntry{}, false, nil
}
