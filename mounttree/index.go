package mounttree

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

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
	// list returns the folders and the episodes in the folder dir, each
	// sorted by name.
	list(ctx context.Context, dir string) (folders []string, episodes []shownEpisode, err error)
	// find returns the folder (isFolder) or the episode called name in
	// the folder dir; errNoEntry if there is neither.
	find(ctx context.Context, dir, name string) (isFolder bool, ep shownEpisode, err error)
}

// shownEpisode is an episode as a tree shows it.
type shownEpisode struct {
	e *table.EpisodeEntry
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
	folders  []string       // sorted
	episodes []shownEpisode // sorted by name
}

func (x builtIndex) list(ctx context.Context, dir string) ([]string, []shownEpisode, error) {
	d := x[dir]
	if d == nil {
		if dir == "" {
			return nil, nil, nil // a tree without episodes
		}
		return nil, nil, errNoEntry
	}
	return d.folders, d.episodes, nil
}

func (x builtIndex) find(ctx context.Context, dir, name string) (bool, shownEpisode, error) {
	d := x[dir]
	if d == nil {
		return false, shownEpisode{}, errNoEntry
	}
	if _, found := slices.BinarySearch(d.folders, name); found {
		return true, shownEpisode{}, nil
	}
	i, found := slices.BinarySearchFunc(d.episodes, name, func(ep shownEpisode, name string) int { return strings.Compare(ep.e.Episode, name) })
	if !found {
		return false, shownEpisode{}, errNoEntry
	}
	return false, d.episodes[i], nil
}

// indexBuilder gathers the folders and episodes of a builtIndex.
type indexBuilder struct {
	folders  map[string]map[string]bool
	episodes map[string]map[string]shownEpisode
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
	b.episodes[dir][ep.e.Episode] = ep
}

func (b *indexBuilder) build() builtIndex {
	x := builtIndex{}
	for dir, names := range b.folders {
		d := &indexFolder{folders: sortedKeys(names)}
		for _, name := range sortedKeys(b.episodes[dir]) {
			d.episodes = append(d.episodes, b.episodes[dir][name])
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
	b := newIndexBuilder()
	folders := make([]string, len(x.schema.PartitionColumns))
	for i := range eps {
		e := &eps[i]
		for k, p := range x.schema.PartitionColumns {
			folders[k] = p + "=" + e.Partition[p]
		}
		b.add(folders, shownEpisode{e: e})
	}
	x.built = b.build()
	return x.built, nil
}

func (x *snapshotIndex) list(ctx context.Context, dir string) ([]string, []shownEpisode, error) {
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
