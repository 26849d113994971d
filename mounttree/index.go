package mounttree

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/framefs/framefs/table"
)

// An index says what a tree's folders above its episodes hold: partition
// (or a view's group-by) folders and episodes. A folder is named by its
// path from the tree's root: "" for the root, "task=pick", ...
//
// A tree asks its index when a folder is listed or looked up, about that
// folder only, so that an index may read only the metadata of the folders
// it is asked about.
type index interface {
	// list returns the names of the folders and of the episodes in the
	// folder dir, each sorted.
	list(ctx context.Context, dir string) (folders, episodes []string, err error)
	// find returns the folder (isFolder) or the episode called name in
	// the folder dir; errNoEntry if there is neither.
	find(ctx context.Context, dir, name string) (isFolder bool, ep shownEpisode, err error)
}

// shownEpisode is an episode as a tree shows it.
type shownEpisode struct {
	e *episode
	episodePart
}

// episodePart is what a view shows of an episode.
type episodePart struct {
	// rows are the rows a view shows, ascending; nil shows every row.
	rows []int64
	// clips are the first rows of a clip view's clips, ascending.
	clips []int64
}

// builtIndex is an index held whole in memory, built from a list of
// episodes and the folders they go in.
type builtIndex map[string]*indexFolder

// indexFolder is a folder of a builtIndex.
type indexFolder struct {
	folders  []string   // sorted
	episodes []*episode // sorted by name
	// parts are what a view shows of each of episodes; nil in a
	// snapshot's index, which shows every row.
	parts []episodePart
}

func (x builtIndex) list(ctx context.Context, dir string) ([]string, []string, error) {
	d := x[dir]
	if d == nil {
		if dir == "" {
			return nil, nil, nil // a tree without episodes
		}
		return nil, nil, errNoEntry
	}
	names := make([]string, len(d.episodes))
	for i, e := range d.episodes {
		names[i] = e.name
	}
	return d.folders, names, nil
}

func (x builtIndex) find(ctx context.Context, dir, name string) (bool, shownEpisode, error) {
	d := x[dir]
	if d == nil {
		return false, shownEpisode{}, errNoEntry
	}
	if _, found := slices.BinarySearch(d.folders, name); found {
		return true, shownEpisode{}, nil
	}
	i, found := slices.BinarySearchFunc(d.episodes, name, func(e *episode, name string) int { return strings.Compare(e.name, name) })
	if !found {
		return false, shownEpisode{}, errNoEntry
	}
	ep := shownEpisode{e: d.episodes[i]}
	if d.parts != nil {
		ep.episodePart = d.parts[i]
	}
	return false, ep, nil
}

// bytes estimates the memory of x, the records of its episodes left out
// (trees share them).
func (x builtIndex) bytes() int64 {
	const str, folder = int64(unsafe.Sizeof("")), int64(unsafe.Sizeof(indexFolder{}))
	var n int64
	for dir, d := range x {
		n += 64 + str + int64(len(dir)) + folder + int64(cap(d.folders))*str + 8*int64(cap(d.episodes))
		for _, f := range d.folders {
			n += int64(len(f))
		}
		n += int64(cap(d.parts)) * int64(unsafe.Sizeof(episodePart{}))
		for _, p := range d.parts {
			n += 8 * int64(cap(p.rows)+cap(p.clips))
		}
	}
	return n
}

// indexBuilder gathers the folders and episodes of a builtIndex.
type indexBuilder struct {
	folders  map[string]map[string]bool
	episodes map[string]map[string]shownEpisode
	parts    bool // some episode has a part
}

func newIndexBuilder() *indexBuilder {
	return &indexBuilder{folders: map[string]map[string]bool{"": {}}, episodes: map[string]map[string]shownEpisode{}}
}

// add puts ep in the folder whose path from the root is folders (a later
// episode of the same name in the same folder replaces an earlier one).
func (b *indexBuilder) add(folders []string, ep shownEpisode) {
	dir := ""
	for _, name := range folders {
		b.folders[dir][name] = true
		if dir != "" {
			dir += "/"
		}
		dir += name
		if b.folders[dir] == nil {
			b.folders[dir] = map[string]bool{}
		}
	}
	if b.episodes[dir] == nil {
		b.episodes[dir] = map[string]shownEpisode{}
	}
	b.episodes[dir][ep.e.name] = ep
	b.parts = b.parts || ep.rows != nil || ep.clips != nil
}

func (b *indexBuilder) build() builtIndex {
	x := builtIndex{}
	for dir, names := range b.folders {
		d := &indexFolder{folders: sortedKeys(names)}
		eps := b.episodes[dir]
		d.episodes = make([]*episode, 0, len(eps))
		if b.parts {
			d.parts = make([]episodePart, 0, len(eps))
		}
		for _, name := range sortedKeys(eps) {
			d.episodes = append(d.episodes, eps[name].e)
			if b.parts {
				d.parts = append(d.parts, eps[name].episodePart)
			}
		}
		x[dir] = d
	}
	return x
}

// snapshotIndex is the index of a snapshot's tree: its episodes under
// their partition folders, read from the snapshot's manifests when a
// folder is first listed or looked up.
type snapshotIndex struct {
	cat    *Catalog
	snap   *table.Snapshot
	schema *table.Schema

	mu    sync.Mutex // guards built, and building it
	built builtIndex
}

// load returns the index, reading the snapshot's manifests the first
// time (concurrent first calls read them once).
func (x *snapshotIndex) load(ctx context.Context) (builtIndex, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.built != nil {
		return x.built, nil
	}
	eps, err := x.cat.tbl.Episodes(uninterrupted(ctx), x.snap)
	if err != nil {
		return nil, fmt.Errorf("list snapshot %d: %w", x.snap.ID, err)
	}
	x.built = buildSnapshotIndex(&x.cat.records, x.schema, eps)
	x.cat.trees.Recharge(x.snap.ID, x.built.bytes())
	return x.built, nil
}

// buildSnapshotIndex indexes a snapshot's episodes under their partition
// folders.
func buildSnapshotIndex(records *episodeRecords, schema *table.Schema, eps []table.EpisodeEntry) builtIndex {
	b := newIndexBuilder()
	folders := make([]string, len(schema.PartitionColumns))
	for i := range eps {
		e := &eps[i]
		for k, p := range schema.PartitionColumns {
			folders[k] = p + "=" + e.Partition[p]
		}
		b.add(folders, shownEpisode{e: records.record(e)})
	}
	return b.build()
}

func (x *snapshotIndex) list(ctx context.Context, dir string) ([]string, []string, error) {
	built, err := x.load(ctx)
	if err != nil {
		return nil, nil, err
	}
	return built.list(ctx, dir)
}

func (x *snapshotIndex) find(ctx context.Context, dir, name string) (bool, shownEpisode, error) {
	built, err := x.load(ctx)
	if err != nil {
		return false, shownEpisode{}, err
	}
	return built.find(ctx, dir, name)
}
