package mounttree

import (
	"context"
	"strings"
	"sync"

	"github.com/framefs/framefs/table"
)

// Episodes listed, by manifest.
//
// Listing a folder of episodes reads the manifests that may hold its
// partition and makes a record of each episode. A table that takes
// commits while a reader lists it (a training job following latest, a
// write directory's own listings) has a new head every commit, and each
// new head's folders were read whole again: in the 2-minute write soak,
// decoding manifests a head at a time was 39% of what the mount
// allocated, and the collector's work grew with it. A new head lists
// almost the same manifests as its parent, and a manifest never changes,
// so the episodes a folder finds in one are the same in every snapshot
// that lists it: the catalog keeps them by manifest and partition
// (manifestPart), and a listing decodes only the manifests it has not
// seen.

// manifestPart names the episodes of one manifest in one partition
// folder, under one schema.
type manifestPart struct {
	manifest string
	values   string // the folder's partition values, joined by "\x00"
	schema   int
}

// in returns the name of p's episodes in manifest key.
func (p manifestPart) in(key string) manifestPart {
	p.manifest = key
	return p
}

// maxListedBytes bounds the episodes kept by manifest: about 10,000
// episodes with listedRecordBytes each.
const maxListedBytes = 4 << 20

// listedRecordBytes is what each episode kept is charged: its pointer,
// and its record (about 400 bytes, docs/CACHES.md), which the trees
// showing it share but which the cache keeps alive once none does.
const listedRecordBytes = 8 + 400

func listedBytes(eps []*episode) int64 { return 64 + listedRecordBytes*int64(len(eps)) }

// episodesIn returns the records of the episodes of x's snapshot whose
// first partition values are values, in no particular order: those of
// the manifests listed before from the catalog, the others read.
func (x *snapshotIndex) episodesIn(ctx context.Context, values []string) ([]*episode, error) {
	part := manifestPart{values: strings.Join(values, "\x00"), schema: x.snap.SchemaID}
	var mu sync.Mutex // guards eps and read: the manifests are read in parallel
	var eps []*episode
	read := map[string][]*episode{} // by manifest, those read now
	skip := func(key string) bool {
		kept, ok := x.cat.listed.Get(part.in(key))
		mu.Lock()
		defer mu.Unlock()
		if ok {
			eps = append(eps, kept...)
		} else {
			read[key] = nil
		}
		return ok
	}
	err := x.cat.tbl.EachManifestEpisodeIn(ctx, x.snap, values, skip, func(key string, batch []table.EpisodeEntry) error {
		// Batches come from several goroutines: their records are made
		// in parallel, each batch's sharing strings.
		recs := x.cat.records.appendRecords(nil, batch, &dedupe{})
		mu.Lock()
		defer mu.Unlock()
		read[key] = append(read[key], recs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	x.cat.counters.ManifestsListed.Add(int64(len(read)))
	for key, recs := range read {
		x.cat.listed.keep(part.in(key), recs)
		eps = append(eps, recs...)
	}
	return eps, nil
}
