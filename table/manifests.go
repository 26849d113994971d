package table

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	fastjson "github.com/goccy/go-json"
	"golang.org/x/sync/errgroup"

	"github.com/framefs/framefs/table/manifest"
	"github.com/framefs/framefs/table/storage"
)

// mergePolicy decides how many entries a manifest holds and when small
// manifests are merged (docs/FORMAT.md, "Manifests").
type mergePolicy struct {
	// target is the size manifests are cut to: a manifest holds at most
	// this many entries, and one that holds this many is full: never
	// merged again, only rewritten when one of its episodes changes. An
	// update of one episode rewrites at most this many entries, whatever
	// the table's size.
	target int64
	// fanIn is how many manifests of one size tier a snapshot may hold
	// before a commit merges them into one of a higher tier. Tiers are
	// powers of fanIn in entries (1-7, 8-63, ..., 4096-16383 for 8), so a
	// snapshot holds at most fanIn-1 manifests per tier besides the full
	// ones, and merges rewrite an entry at most once per tier.
	fanIn int64
}

// defaultMergePolicy: full manifests of 16,384 entries (about 1 MB of
// Parquet for a table of a few columns), and tiers of 8.
var defaultMergePolicy = mergePolicy{target: 16384, fanIn: 8}

// fullTier is the tier of full manifests.
const fullTier = -1

// tier is the size tier of a manifest of n entries.
func (p mergePolicy) tier(n int64) int {
	if n >= p.target {
		return fullTier
	}
	tier := 0
	for ; n >= p.fanIn; n /= p.fanIn {
		tier++
	}
	return tier
}

// ManifestInfo is one manifest of a snapshot.
type ManifestInfo struct {
	// Key is the manifest's object key.
	Key string
	// Summary describes the manifest: its counts, episode id range,
	// partition ranges and column bounds. Snapshots of format version 2
	// carry one per manifest (in their manifest list); it is nil for
	// version-1 snapshots, whose manifests must be read to know what they
	// hold. Shared: do not modify.
	Summary *manifest.Summary
}

// ManifestLayout is what the schema decides about the columns of the
// manifests written with it.
func (s *Schema) ManifestLayout() manifest.Layout { return layoutOf(s) }

// layoutOf is what a schema decides about manifests' columns.
func layoutOf(s *Schema) manifest.Layout {
	l := manifest.Layout{Videos: s.VideoColumns}
	for _, c := range s.Columns {
		col := manifest.Column{Name: c.Name, Type: string(c.Type)}
		if s.IsPartition(c.Name) {
			continue
		}
		l.Columns = append(l.Columns, col)
	}
	for _, p := range s.PartitionColumns {
		c, _ := s.Column(p)
		l.Partitions = append(l.Partitions, manifest.Column{Name: p, Type: string(c.Type)})
	}
	return l
}

// loadedManifest is a manifest or a manifest list as the cache keeps it.
type loadedManifest struct {
	entries []EpisodeEntry // a version-1 (JSON) manifest, decoded
	// json is the size of the JSON entries was decoded from: the decoder
	// keeps it, and the entries' strings point into it.
	json int64
	data []byte             // a version-2 (Parquet) manifest, as stored
	list []manifest.Summary // a manifest list, decoded
}

// load reads a manifest or a manifest list, through the cache.
func (t *Table) load(ctx context.Context, key string) (*loadedManifest, error) {
	return t.loadKeeping(ctx, key, true)
}

// loadKeeping is load, which adds what it reads to the cache only if keep.
func (t *Table) loadKeeping(ctx context.Context, key string, keep bool) (*loadedManifest, error) {
	if m := t.manifests.get(key); m != nil {
		return m, nil
	}
	data, err := t.store.ReadAll(ctx, key)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
		}
		return nil, err
	}
	m := &loadedManifest{}
	switch {
	case strings.HasSuffix(key, ".json"):
		var jm Manifest
		// Version-1 manifests are the bulk of what listing such a
		// snapshot reads (about a kilobyte per episode): decoded with a
		// faster decoder than encoding/json, which gives the same result
		// for this input.
		if err := fastjson.Unmarshal(data, &jm); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
		}
		if err := checkFormat("manifest "+key, jm.FormatVersion, nil); err != nil {
			return nil, err
		}
		m.entries, m.json = jm.Episodes, int64(len(data))
	case strings.HasPrefix(key, prefixManifestList):
		if m.list, err = manifest.DecodeList(data); err != nil {
			return nil, fmt.Errorf("%w: manifest list %s: %v", ErrCorrupt, key, err)
		}
	default:
		m.data = data
	}
	if keep {
		t.manifests.add(key, m)
	}
	return m, nil
}

// Manifests returns the manifests of a snapshot.
func (t *Table) Manifests(ctx context.Context, snap *Snapshot) ([]ManifestInfo, error) {
	if snap.ManifestList == "" {
		out := make([]ManifestInfo, len(snap.Manifests))
		for i, k := range snap.Manifests {
			out[i] = ManifestInfo{Key: k}
		}
		return out, nil
	}
	m, err := t.load(ctx, snap.ManifestList)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", snap.ID, err)
	}
	out := make([]ManifestInfo, len(m.list))
	for i := range m.list {
		out[i] = ManifestInfo{Key: m.list[i].Manifest, Summary: &m.list[i]}
	}
	return out, nil
}

// manifestFile is one manifest, of either version, ready to read. It is
// used by one goroutine.
type manifestFile struct {
	key    string
	layout manifest.Layout
	*loadedManifest
	r *manifest.Reader // a version-2 manifest's, once opened
}

func (t *Table) openManifest(ctx context.Context, key string, layout manifest.Layout) (*manifestFile, error) {
	return t.openManifestKeeping(ctx, key, layout, true)
}

// openManifestKeeping is openManifest, which keeps the manifest in the
// cache only if keep (a reader that reads each manifest once, as verify
// does, has no use for it there).
func (t *Table) openManifestKeeping(ctx context.Context, key string, layout manifest.Layout, keep bool) (*manifestFile, error) {
	m, err := t.loadKeeping(ctx, key, keep)
	if err != nil {
		return nil, err
	}
	if m.list != nil {
		return nil, fmt.Errorf("%w: %s is a manifest list, not a manifest", ErrCorrupt, key)
	}
	return &manifestFile{key: key, layout: layout, loadedManifest: m}, nil
}

// reader opens a version-2 manifest; nil for a version-1 one.
func (m *manifestFile) reader() (*manifest.Reader, error) {
	if m.data == nil || m.r != nil {
		return m.r, nil
	}
	r, err := manifest.NewReader(m.data)
	if err != nil {
		return nil, m.wrap(err)
	}
	m.r = r
	return r, nil
}

// len is the number of entries.
func (m *manifestFile) len() (int, error) {
	r, err := m.reader()
	if err != nil || r == nil {
		return len(m.entries), err
	}
	return r.Len(), nil
}

func (m *manifestFile) wrap(err error) error {
	if errors.Is(err, manifest.ErrCorrupt) {
		return fmt.Errorf("%w: manifest %s: %v", ErrCorrupt, m.key, err)
	}
	return fmt.Errorf("manifest %s: %w", m.key, err)
}

func (m *manifestFile) read(ctx context.Context, proj manifest.Projection) (*manifest.Batch, error) {
	r, err := m.reader()
	if err != nil || r == nil {
		return manifest.BatchOf(m.layout, m.entries, proj), err
	}
	b, err := r.Read(ctx, proj)
	if err != nil {
		return nil, m.wrap(err)
	}
	return b, nil
}

// entriesAt returns the entries at positions (ascending), or all of them.
func (m *manifestFile) entriesAt(ctx context.Context, positions []int) ([]EpisodeEntry, error) {
	return m.entriesOf(ctx, positions, true)
}

// entriesOf is entriesAt, without the entries' column statistics unless
// withStats.
func (m *manifestFile) entriesOf(ctx context.Context, positions []int, withStats bool) ([]EpisodeEntry, error) {
	r, err := m.reader()
	if err != nil {
		return nil, err
	}
	if r != nil {
		read := r.Entries
		if !withStats {
			read = r.EntriesWithoutStats
		}
		out, err := read(ctx, positions)
		if err != nil {
			return nil, m.wrap(err)
		}
		return out, nil
	}
	var out []EpisodeEntry
	if positions == nil {
		out = slices.Clone(m.entries)
	} else {
		out = make([]EpisodeEntry, len(positions))
		for i, p := range positions {
			if p < 0 || p >= len(m.entries) {
				return nil, fmt.Errorf("manifest %s has no entry %d", m.key, p)
			}
			out[i] = m.entries[p]
		}
	}
	if !withStats {
		for i := range out {
			out[i].Stats = nil
		}
	}
	return out, nil
}

// objects returns the data files, packs and sizes objects the entries
// reference.
func (m *manifestFile) objects(ctx context.Context) ([]string, error) {
	r, err := m.reader()
	if err != nil {
		return nil, err
	}
	if r != nil {
		out, err := r.Objects(ctx)
		if err != nil {
			return nil, m.wrap(err)
		}
		return out, nil
	}
	var out []string
	for _, e := range m.entries {
		out = append(out, e.DataFile)
		for _, v := range e.Videos {
			out = append(out, v.Pack)
			for _, sz := range v.Sizes {
				out = append(out, sz.Object)
			}
		}
	}
	return out, nil
}

// readManifest reads some columns of every entry of a manifest.
func (t *Table) readManifest(ctx context.Context, key string, layout manifest.Layout, proj manifest.Projection) (*manifest.Batch, error) {
	m, err := t.openManifest(ctx, key, layout)
	if err != nil {
		return nil, err
	}
	return m.read(ctx, proj)
}

// snapshotLayout returns the manifest layout of a snapshot's schema.
func (t *Table) snapshotLayout(ctx context.Context, snap *Snapshot) (manifest.Layout, error) {
	s, err := t.Schema(ctx, snap.SchemaID)
	if err != nil {
		return manifest.Layout{}, err
	}
	return layoutOf(s), nil
}

// ReadManifest reads some columns of every entry of one of snap's
// manifests (all its rows' counts, and what proj asks for), in manifest
// order: what a filter or a folder listing needs without decoding whole
// entries.
func (t *Table) ReadManifest(ctx context.Context, snap *Snapshot, key string, proj manifest.Projection) (*manifest.Batch, error) {
	layout, err := t.snapshotLayout(ctx, snap)
	if err != nil {
		return nil, err
	}
	return t.readManifest(ctx, key, layout, proj)
}

// ManifestEntries reads whole entries of one of snap's manifests: those
// at the given positions (ascending, as ReadManifest numbers them), or
// every entry when positions is nil.
func (t *Table) ManifestEntries(ctx context.Context, snap *Snapshot, key string, positions []int) ([]EpisodeEntry, error) {
	layout, err := t.snapshotLayout(ctx, snap)
	if err != nil {
		return nil, err
	}
	m, err := t.openManifest(ctx, key, layout)
	if err != nil {
		return nil, err
	}
	return m.entriesAt(ctx, positions)
}

// Episodes returns the episodes of a snapshot, sorted by partition values
// and episode id. It reads every manifest of the snapshot (never rows):
// for one partition or one episode, EpisodesIn and Episode read less.
func (t *Table) Episodes(ctx context.Context, snap *Snapshot) ([]EpisodeEntry, error) {
	return t.EpisodesIn(ctx, snap, nil)
}

// EpisodesIn returns the episodes of a snapshot whose first len(values)
// partition columns (in the schema's order) hold these values (written
// as partition folders name them), sorted by partition values and
// episode id. It reads the manifests whose summaries may hold such
// episodes, and of those whole entries only for the episodes it returns.
func (t *Table) EpisodesIn(ctx context.Context, snap *Snapshot, values []string) ([]EpisodeEntry, error) {
	var out []EpisodeEntry
	var mu sync.Mutex // guards out
	err := t.eachEpisodeIn(ctx, snap, values, true, func(batch []EpisodeEntry) error {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, batch...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	layout, err := t.snapshotLayout(ctx, snap)
	if err != nil {
		return nil, err
	}
	layout.Sort(out)
	return out, nil
}

// EachEpisodeIn calls fn with the episodes of a snapshot that EpisodesIn
// returns, without their column statistics (Stats is nil: a filter reads
// them with ReadManifest), a batch at a time (at most
// manifest.EntriesPerRowGroup entries of one manifest), in no particular
// order, so that a caller that keeps less of each episode than its whole
// entry never holds them all decoded. fn is called by several goroutines
// at once (manifests are read in parallel); the batch is its own. An
// error fn returns stops the reading and is returned.
func (t *Table) EachEpisodeIn(ctx context.Context, snap *Snapshot, values []string, fn func(batch []EpisodeEntry) error) error {
	return t.eachEpisodeIn(ctx, snap, values, false, fn)
}

// EachManifestEpisodeIn is EachEpisodeIn, a manifest at a time: for each
// of snap's manifests that may hold episodes of the partition values,
// skip(key) says whether the caller has what it needs of that manifest
// (manifests are immutable: what one yields is the same in every
// snapshot that lists it), and fn gets the episodes of those it does not
// skip with the key of their manifest. fn is called by several goroutines
// at once, for one manifest by one goroutine at a time.
func (t *Table) EachManifestEpisodeIn(ctx context.Context, snap *Snapshot, values []string, skip func(key string) bool, fn func(key string, batch []EpisodeEntry) error) error {
	return t.eachManifestEpisodeIn(ctx, snap, values, false, skip, fn)
}

// eachEpisodeIn is EachEpisodeIn, with the entries' statistics if
// withStats.
func (t *Table) eachEpisodeIn(ctx context.Context, snap *Snapshot, values []string, withStats bool, fn func(batch []EpisodeEntry) error) error {
	return t.eachManifestEpisodeIn(ctx, snap, values, withStats, nil, func(_ string, batch []EpisodeEntry) error { return fn(batch) })
}

// eachManifestEpisodeIn is EachManifestEpisodeIn, with the entries'
// statistics if withStats; a nil skip skips nothing.
func (t *Table) eachManifestEpisodeIn(ctx context.Context, snap *Snapshot, values []string, withStats bool,
	skip func(key string) bool, fn func(key string, batch []EpisodeEntry) error) error {
	layout, err := t.snapshotLayout(ctx, snap)
	if err != nil {
		return err
	}
	if len(values) > len(layout.Partitions) {
		return fmt.Errorf("%w: %d partition values for a table of %d partition columns", ErrInvalidInput, len(values), len(layout.Partitions))
	}
	infos, err := t.Manifests(ctx, snap)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	// Manifests are read and decoded in parallel (decoding is most of
	// the time a listing takes).
	g.SetLimit(4)
	for _, info := range infos {
		if info.Summary != nil && !info.Summary.MayHoldPartition(layout, values) || skip != nil && skip(info.Key) {
			continue
		}
		g.Go(func() error {
			m, err := t.openManifest(gctx, info.Key, layout)
			if err != nil {
				return err
			}
			return m.eachIn(gctx, values, withStats, func(batch []EpisodeEntry) error { return fn(info.Key, batch) })
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("snapshot %d: %w", snap.ID, err)
	}
	return nil
}

// eachIn calls fn with the entries whose first partition values are
// values (with their statistics if withStats), in batches of at most
// manifest.EntriesPerRowGroup.
func (m *manifestFile) eachIn(ctx context.Context, values []string, withStats bool, fn func([]EpisodeEntry) error) error {
	var positions []int
	if len(values) > 0 {
		b, err := m.read(ctx, manifest.Projection{Partitions: true})
		if err != nil {
			return err
		}
		positions = partitionPositions(m.layout, b, values)
		if len(positions) == 0 {
			return nil
		}
	} else {
		n, err := m.len()
		if err != nil {
			return err
		}
		positions = make([]int, n)
		for i := range positions {
			positions[i] = i
		}
	}
	r, err := m.reader()
	if err != nil {
		return err
	}
	if r != nil {
		// The columns are read once, the entries decoded a batch at a
		// time.
		if err := r.EntryBatches(ctx, positions, withStats, manifest.EntriesPerRowGroup, fn); err != nil {
			return m.wrap(err)
		}
		return nil
	}
	for start := 0; start < len(positions); start += manifest.EntriesPerRowGroup {
		batch, err := m.entriesOf(ctx, positions[start:min(start+manifest.EntriesPerRowGroup, len(positions))], withStats)
		if err != nil {
			return err
		}
		if err := fn(batch); err != nil {
			return err
		}
	}
	return nil
}

// partitionPositions returns the positions of a batch's entries whose
// first partition values are values.
func partitionPositions(layout manifest.Layout, b *manifest.Batch, values []string) []int {
	var out []int
next:
	for i := 0; i < b.Len; i++ {
		for k, v := range values {
			if b.Partitions[layout.Partitions[k].Name][i] != v {
				continue next
			}
		}
		out = append(out, i)
	}
	return out
}

// PartitionValues returns the values (as partition folders name them,
// sorted) of partition column len(prefix) among a snapshot's episodes
// whose first partition columns hold prefix. Manifests whose summaries
// show a single value for these columns are not read.
func (t *Table) PartitionValues(ctx context.Context, snap *Snapshot, prefix []string) ([]string, error) {
	layout, err := t.snapshotLayout(ctx, snap)
	if err != nil {
		return nil, err
	}
	if len(prefix) >= len(layout.Partitions) {
		return nil, fmt.Errorf("%w: the table has %d partition columns, no column after %d values", ErrInvalidInput, len(layout.Partitions), len(prefix))
	}
	infos, err := t.Manifests(ctx, snap)
	if err != nil {
		return nil, err
	}
	col := layout.Partitions[len(prefix)].Name
	seen := map[string]bool{}
	for _, info := range infos {
		if s := info.Summary; s != nil {
			if !s.MayHoldPartition(layout, prefix) {
				continue
			}
			if v, ok := singlePartition(layout, s, prefix); ok {
				seen[v] = true
				continue
			}
		}
		b, err := t.readManifest(ctx, info.Key, layout, manifest.Projection{Partitions: true})
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", snap.ID, err)
		}
		for _, i := range partitionPositions(layout, b, prefix) {
			seen[b.Partitions[col][i]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil
}

// singlePartition returns the value of partition column len(prefix) of
// every entry of a manifest whose summary shows one value for it and for
// each column of prefix (and that value is prefix's).
func singlePartition(layout manifest.Layout, s *manifest.Summary, prefix []string) (string, bool) {
	for k := 0; k <= len(prefix); k++ {
		r, ok := s.Partitions[layout.Partitions[k].Name]
		if !ok || r.Min.Compare(r.Max) != 0 {
			return "", false
		}
		if k == len(prefix) {
			return partitionText(r.Min), true
		}
	}
	return "", false
}

// partitionText writes a partition value as entries keep it (fmt.Sprint
// of the value).
func partitionText(b manifest.Bound) string {
	switch b.Kind {
	case manifest.KindInt:
		return strconv.FormatInt(b.Int, 10)
	case manifest.KindBool:
		return strconv.FormatBool(b.Bool)
	}
	return b.Str
}

// Episode returns one episode of a snapshot. It reads the manifests whose
// episode ranges hold the id, and one row group of the one that has it.
func (t *Table) Episode(ctx context.Context, snap *Snapshot, id string) (EpisodeEntry, error) {
	return t.EpisodeIn(ctx, snap, nil, id)
}

// EpisodeIn returns one episode of a snapshot if its first len(values)
// partition columns hold these values (as EpisodesIn takes them), and
// an error wrapping ErrNotFound if the snapshot has no such episode or
// has it in another partition. It reads the manifests whose summaries
// may hold the episode in that partition, and one row group of the one
// that has it.
func (t *Table) EpisodeIn(ctx context.Context, snap *Snapshot, values []string, id string) (EpisodeEntry, error) {
	layout, err := t.snapshotLayout(ctx, snap)
	if err != nil {
		return EpisodeEntry{}, err
	}
	if e, ok, err := t.foundIn(ctx, snap, layout, values, id); err != nil || ok {
		return e, err
	}
	found, err := t.locateIn(ctx, snap, layout, values, []string{id})
	if err != nil {
		return EpisodeEntry{}, err
	}
	for key, positions := range found {
		m, err := t.openManifest(ctx, key, layout)
		if err != nil {
			return EpisodeEntry{}, err
		}
		es, err := m.entriesAt(ctx, positions[:1])
		if err != nil {
			return EpisodeEntry{}, err
		}
		if inPartition(layout, &es[0], values) {
			t.found.Add(foundKey{manifest: key, episode: id, schema: snap.SchemaID}, es[0], foundBytes(&es[0]))
			return es[0], nil
		}
	}
	if len(values) > 0 {
		return EpisodeEntry{}, fmt.Errorf("%w: episode %q in partition %s of snapshot %d", ErrNotFound, id, strings.Join(values, "/"), snap.ID)
	}
	return EpisodeEntry{}, fmt.Errorf("%w: episode %q in snapshot %d", ErrNotFound, id, snap.ID)
}

// inPartition reports whether e's first len(values) partition values are
// values.
func inPartition(layout manifest.Layout, e *EpisodeEntry, values []string) bool {
	for k, v := range values {
		if e.Partition[layout.Partitions[k].Name] != v {
			return false
		}
	}
	return true
}

// locate finds the episodes of ids a snapshot holds: the positions of
// their entries, by manifest key. It reads the episode ids of the
// manifests whose ranges hold one of them.
func (t *Table) locate(ctx context.Context, snap *Snapshot, layout manifest.Layout, ids []string) (map[string][]int, error) {
	return t.locateIn(ctx, snap, layout, nil, ids)
}

// locateIn is locate among the manifests whose summaries may hold
// episodes of the partition values (as EpisodesIn takes them) too.
func (t *Table) locateIn(ctx context.Context, snap *Snapshot, layout manifest.Layout, values, ids []string) (map[string][]int, error) {
	if len(values) > len(layout.Partitions) {
		return nil, fmt.Errorf("%w: %d partition values for a table of %d partition columns", ErrInvalidInput, len(values), len(layout.Partitions))
	}
	infos, err := t.Manifests(ctx, snap)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	sorted := slices.Sorted(maps.Keys(want))
	out := map[string][]int{}
	for _, info := range infos {
		if s := info.Summary; s != nil {
			if !s.MayHoldPartition(layout, values) {
				continue
			}
			// The first id at or after the range's start must be inside.
			i, _ := slices.BinarySearch(sorted, s.EpisodeMin)
			if i == len(sorted) || !s.Covers(sorted[i]) {
				continue
			}
		}
		b, err := t.readManifest(ctx, info.Key, layout, manifest.Projection{Episodes: true})
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", snap.ID, err)
		}
		for i, ep := range b.Episodes {
			if want[ep] {
				out[info.Key] = append(out[info.Key], i)
			}
		}
	}
	return out, nil
}

// writeManifests writes entries as manifests of at most the merge
// policy's target entries each, in manifest order, and returns their
// summaries.
func (t *Table) writeManifests(ctx context.Context, layout manifest.Layout, entries []EpisodeEntry) ([]manifest.Summary, error) {
	layout.Sort(entries)
	var out []manifest.Summary
	target := int(t.merges.target)
	for start := 0; start < len(entries); start += target {
		chunk := entries[start:min(start+target, len(entries))]
		data, sum, err := manifest.Encode(layout, chunk)
		if err != nil {
			return nil, err
		}
		key := newObjectKey(prefixManifest, ".parquet")
		if err := t.store.PutIfAbsent(ctx, key, data); err != nil {
			return nil, fmt.Errorf("write manifest: %w", err)
		}
		t.manifests.add(key, &loadedManifest{data: data})
		sum.Manifest = key
		out = append(out, sum)
	}
	return out, nil
}

// mergeTiers merges the manifests of every size tier that holds the
// merge policy's fan-in or more into manifests of a higher tier, until
// none does.
func (t *Table) mergeTiers(ctx context.Context, layout manifest.Layout, sums []manifest.Summary) ([]manifest.Summary, error) {
	for {
		byTier := map[int][]int{}
		merge := -1
		for i, s := range sums {
			tier := t.merges.tier(s.Episodes)
			if tier == fullTier {
				continue
			}
			byTier[tier] = append(byTier[tier], i)
			if int64(len(byTier[tier])) >= t.merges.fanIn && (merge < 0 || tier < merge) {
				merge = tier
			}
		}
		if merge < 0 {
			return sums, nil
		}
		var entries []EpisodeEntry
		drop := map[int]bool{}
		for _, i := range byTier[merge] {
			m, err := t.openManifest(ctx, sums[i].Manifest, layout)
			if err != nil {
				return nil, err
			}
			es, err := m.entriesAt(ctx, nil)
			if err != nil {
				return nil, err
			}
			entries = append(entries, es...)
			drop[i] = true
		}
		merged, err := t.writeManifests(ctx, layout, entries)
		if err != nil {
			return nil, err
		}
		var next []manifest.Summary
		for i, s := range sums {
			if !drop[i] {
				next = append(next, s)
			}
		}
		sums = append(next, merged...)
	}
}
