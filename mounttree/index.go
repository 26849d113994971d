package mounttree

import (
	"context"
	"errors"
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
	// list returns the names of the folders in the folder dir, sorted,
	// and its episodes, sorted by name. Both are the index's own, not to
	// be changed: listing a folder again copies nothing.
	list(ctx context.Context, dir string) (folders []string, episodes []*episode, err error)
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

func (x builtIndex) list(ctx context.Context, dir string) ([]string, []*episode, error) {
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

// snapshotIndex is the index of a snapshot's tree: its partition folders
// and episodes, read from the snapshot's manifests a folder at a time.
// Listing a folder reads the manifests whose summaries may hold its
// partition (table.PartitionValues, table.EachEpisodeIn), and keeps what
// it read: the folder's subfolder names, or the records of its episodes.
// Looking an episode up in a folder not listed yet reads the manifests
// that may hold that one episode (table.EpisodeIn), until
// lookupsBeforeLoad lookups made listing the whole folder the cheaper
// way.
type snapshotIndex struct {
	cat    *Catalog
	snap   *table.Snapshot
	schema *table.Schema
	// charge tells the catalog the index's new size after a folder was
	// read (the tree is charged its index).
	charge func()

	mu      sync.Mutex // guards folders (not what is in them)
	folders map[string]*snapshotFolder
}

// lookupsBeforeLoad is how many episodes are looked up one at a time in
// a folder not listed before the folder is read whole: a reader opening
// many paths of one folder (a loader with a file list) reads its
// manifests once rather than once per episode.
const lookupsBeforeLoad = 32

// snapshotFolder is a folder of a snapshot's tree, once asked about.
type snapshotFolder struct {
	// values are the partition values of the folder (as table.EpisodesIn
	// takes them); the folder holds partition folders if they are fewer
	// than the schema's partition columns, else episodes.
	values []string

	mu     sync.Mutex // guards the fields below, and reading them
	loaded bool
	// folders are the names of a loaded folder's subfolders, sorted;
	// episodes its episodes, sorted by name.
	folders  []string
	episodes []*episode
	// found are the episodes looked up one at a time before the folder
	// was loaded, by name; lookups counts those lookups.
	found   map[string]*episode
	lookups int
}

// folder returns the folder dir (its path from the root), or errNoEntry
// if dir does not name a partition folder of the schema's: "" or
// COL=VALUE components, one per partition column, in order.
func (x *snapshotIndex) folder(dir string) (*snapshotFolder, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if f := x.folders[dir]; f != nil {
		return f, nil
	}
	var values []string
	if dir != "" {
		parts := strings.Split(dir, "/")
		if len(parts) > len(x.schema.PartitionColumns) {
			return nil, errNoEntry
		}
		for k, part := range parts {
			v, ok := strings.CutPrefix(part, x.schema.PartitionColumns[k]+"=")
			if !ok {
				return nil, errNoEntry
			}
			values = append(values, v)
		}
	}
	if x.folders == nil {
		x.folders = map[string]*snapshotFolder{}
	}
	f := &snapshotFolder{values: values}
	x.folders[dir] = f
	return f, nil
}

// holdsEpisodes reports whether f holds episodes (not partition folders).
func (x *snapshotIndex) holdsEpisodes(f *snapshotFolder) bool {
	return len(f.values) == len(x.schema.PartitionColumns)
}

// load reads f whole, the first time; f.mu is held.
func (x *snapshotIndex) load(ctx context.Context, f *snapshotFolder) error {
	if f.loaded {
		return nil
	}
	ctx = uninterrupted(ctx)
	if !x.holdsEpisodes(f) {
		vals, err := x.cat.tbl.PartitionValues(ctx, x.snap, f.values)
		if err != nil {
			return fmt.Errorf("list snapshot %d: %w", x.snap.ID, err)
		}
		col := x.schema.PartitionColumns[len(f.values)]
		f.folders = make([]string, len(vals))
		for i, v := range vals {
			f.folders[i] = col + "=" + v
		}
	} else {
		eps, err := x.episodesIn(ctx, f.values)
		if err != nil {
			return fmt.Errorf("list snapshot %d: %w", x.snap.ID, err)
		}
		slices.SortFunc(eps, func(a, b *episode) int { return strings.Compare(a.name, b.name) })
		f.episodes = slices.Clip(eps)
	}
	f.loaded, f.found = true, nil
	return nil
}

// loaded returns folder dir, read whole.
func (x *snapshotIndex) loaded(ctx context.Context, dir string) (*snapshotFolder, error) {
	f, err := x.folder(dir)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	loaded := f.loaded
	err = x.load(ctx, f)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if !loaded {
		x.charge()
	}
	return f, nil
}

func (x *snapshotIndex) list(ctx context.Context, dir string) ([]string, []*episode, error) {
	if dir != "" {
		// A folder is listed only if its parent holds it.
		parent, name := "", dir
		if i := strings.LastIndexByte(dir, '/'); i >= 0 {
			parent, name = dir[:i], dir[i+1:]
		}
		p, err := x.loaded(ctx, parent)
		if err != nil {
			return nil, nil, err
		}
		if _, found := slices.BinarySearch(p.folders, name); !found {
			return nil, nil, errNoEntry
		}
	}
	f, err := x.loaded(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	return f.folders, f.episodes, nil
}

func (x *snapshotIndex) find(ctx context.Context, dir, name string) (bool, shownEpisode, error) {
	f, err := x.folder(dir)
	if err != nil {
		return false, shownEpisode{}, err
	}
	if !x.holdsEpisodes(f) {
		if f, err = x.loaded(ctx, dir); err != nil {
			return false, shownEpisode{}, err
		}
		_, found := slices.BinarySearch(f.folders, name)
		if !found {
			return false, shownEpisode{}, errNoEntry
		}
		return true, shownEpisode{}, nil
	}
	ep, err := x.findEpisode(ctx, f, name)
	if err != nil {
		return false, shownEpisode{}, err
	}
	return false, shownEpisode{e: ep}, nil
}

// findEpisode finds episode name in folder f: in f if it was read whole,
// else by itself (then it is kept in f.found), or, after
// lookupsBeforeLoad such lookups, by reading f whole.
func (x *snapshotIndex) findEpisode(ctx context.Context, f *snapshotFolder, name string) (*episode, error) {
	ep, loadedNow, err := x.findEpisodeLocked(ctx, f, name)
	if loadedNow {
		x.charge()
	}
	return ep, err
}

// findEpisodeLocked is findEpisode under f.mu; loadedNow says it read f
// whole.
func (x *snapshotIndex) findEpisodeLocked(ctx context.Context, f *snapshotFolder, name string) (ep *episode, loadedNow bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.loaded {
		if ep := f.found[name]; ep != nil {
			return ep, false, nil
		}
		f.lookups++
		if f.lookups <= lookupsBeforeLoad {
			e, err := x.cat.tbl.EpisodeIn(uninterrupted(ctx), x.snap, f.values, name)
			if errors.Is(err, table.ErrNotFound) {
				return nil, false, errNoEntry
			}
			if err != nil {
				return nil, false, fmt.Errorf("look up episode %q in snapshot %d: %w", name, x.snap.ID, err)
			}
			ep := x.cat.records.record(&e, nil)
			if f.found == nil {
				f.found = map[string]*episode{}
			}
			f.found[name] = ep
			return ep, false, nil
		}
		if err := x.load(ctx, f); err != nil {
			return nil, false, err
		}
		loadedNow = true
	}
	i, found := slices.BinarySearchFunc(f.episodes, name, func(e *episode, name string) int { return strings.Compare(e.name, name) })
	if !found {
		return nil, loadedNow, errNoEntry
	}
	return f.episodes[i], loadedNow, nil
}

// bytes estimates the memory of x, the records of its episodes left out
// (trees share them).
func (x *snapshotIndex) bytes() int64 {
	const str, ptr = int64(unsafe.Sizeof("")), 8
	x.mu.Lock()
	folders := make([]*snapshotFolder, 0, len(x.folders))
	var n int64
	for dir, f := range x.folders {
		folders = append(folders, f)
		n += 64 + str + int64(len(dir)) + int64(unsafe.Sizeof(*f))
	}
	x.mu.Unlock()
	for _, f := range folders {
		f.mu.Lock()
		n += int64(cap(f.values))*str + int64(cap(f.folders))*str + ptr*int64(cap(f.episodes)) + int64(len(f.found))*(2*str+ptr)
		for _, name := range f.folders {
			n += int64(len(name))
		}
		f.mu.Unlock()
	}
	return n
}
