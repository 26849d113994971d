package table

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/google/uuid"

	"github.com/framefs/framefs/cache"
	"github.com/framefs/framefs/table/input"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// Indexer builds the frame index of a video read from r (size bytes).
type Indexer func(ctx context.Context, r io.ReaderAt, size int64) (*videoidx.Index, error)

// FrameSizer computes the encoded size of every frame of a video for the
// table's default image setting (decoding each frame once).
type FrameSizer interface {
	// Identity names the image setting and library versions the sizes
	// are valid for.
	Identity(img ImageOptions) string
	// FrameSizes returns one size per presented frame, in ordinal order.
	FrameSizes(ctx context.Context, r io.ReaderAt, size int64, ix *videoidx.Index, img ImageOptions) ([]int64, error)
}

// Options configure how a table is opened. The zero value works: MP4/MOV
// videos only, no stored frame sizes, wall-clock time.
type Options struct {
	// Indexer builds frame indexes of ingested videos. The default reads
	// MP4 sample tables (videoidx.ReadMP4); the command line passes
	// decoder.IndexVideo, which also indexes other containers.
	Indexer Indexer
	// Sizer, when set, stores per-frame image sizes at ingest for the
	// table's default image setting (and proves every frame decodes).
	Sizer FrameSizer
	// Now returns the commit time; tests pin it.
	Now func() time.Time
	// MaxCommitRetries bounds how often a commit is rebuilt on top of a
	// concurrent one before giving up (default 50).
	MaxCommitRetries int
	// Inputs opens the videos to ingest: local files, and S3 objects
	// (default: the AWS SDK's standard configuration).
	Inputs *input.Opener
}

func (o Options) withDefaults() Options {
	if o.Indexer == nil {
		o.Indexer = func(ctx context.Context, r io.ReaderAt, size int64) (*videoidx.Index, error) {
			return videoidx.ReadMP4(ctx, r, size, videoidx.BestStream)
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxCommitRetries == 0 {
		o.MaxCommitRetries = 50
	}
	if o.Inputs == nil {
		o.Inputs = input.NewOpener(storage.S3Options{})
	}
	return o
}

// Table is an open table. It is safe for concurrent use; it caches
// immutable metadata (schemas, snapshots, manifests) by key.
type Table struct {
	store storage.Store
	opts  Options
	meta  tableMeta

	// manifests holds manifests and manifest lists (manifests.go),
	// bounded in bytes (manifestcache.go); it has its own lock.
	manifests *manifestCache
	// merges decides the manifests commits write (tests shrink it).
	merges mergePolicy
	// snapshots caches the snapshots read or committed, bounded in bytes
	// (a mount that follows commits for days reads every one of them);
	// it has its own lock.
	snapshots *cache.Sized[int64, *Snapshot]

	// chunkIndexes serve filters (see chunks.go), bounded in bytes; a nil
	// index records that a data file has none. It has its own lock.
	chunkIndexes *cache.Sized[string, *ChunkIndex]
	// found keeps the entries EpisodeIn found (foundcache.go), bounded
	// in bytes; it has its own lock.
	found *cache.Sized[foundKey, EpisodeEntry]

	mu      sync.Mutex // guards the caches below
	schemas map[int]*Schema
	// parquetSchemas serve filters too (see chunks.go).
	parquetSchemas map[int]*schema.Schema
}

// Create makes a new table in store (which must be empty of tables) with
// the given schema, and returns it open.
func Create(ctx context.Context, store storage.Store, schema Schema, opts Options) (*Table, error) {
	schema, err := schema.withDefaults().foldEpisodeColumn()
	if err != nil {
		return nil, err
	}
	if err := schema.Validate(); err != nil {
		return nil, err
	}
	if err := checkReservedNames(nil, &schema); err != nil {
		return nil, err
	}
	meta := tableMeta{FormatVersion: FormatVersion, Features: []string{}, UUID: uuid.NewString(), Created: opts.withDefaults().Now().UTC()}
	// The schema goes first: a table.json without schema must not exist.
	// A schema already there without a table.json is what a killed Create
	// left: the same table's is taken, another's refused.
	data := marshal(schema)
	if err := store.PutIfAbsent(ctx, schemaKey(schema.ID), data); errors.Is(err, storage.ErrExists) {
		left, err := store.ReadAll(ctx, schemaKey(schema.ID))
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(left, data) {
			return nil, fmt.Errorf("%w: %s holds %s, the schema of another table whose creation did not finish: remove it, or create the table elsewhere",
				ErrExists, store, schemaKey(schema.ID))
		}
	} else if err != nil {
		return nil, err
	}
	if err := store.PutIfAbsent(ctx, keyTableMeta, marshal(meta)); err != nil {
		if errors.Is(err, storage.ErrExists) {
			return nil, fmt.Errorf("%w: a table exists at %s", ErrExists, store)
		}
		return nil, err
	}
	return Open(ctx, store, opts)
}

// Open opens an existing table.
func Open(ctx context.Context, store storage.Store, opts Options) (*Table, error) {
	data, err := store.ReadAll(ctx, keyTableMeta)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: no table at %s", ErrNotFound, store)
		}
		return nil, err
	}
	var meta tableMeta
	if err := json.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("%w: %s/%s: %v", ErrCorrupt, store, keyTableMeta, err)
	}
	if err := checkFormat("table "+store.String(), meta.FormatVersion, meta.Features); err != nil {
		return nil, err
	}
	return &Table{
		store:     store,
		opts:      opts.withDefaults(),
		meta:      meta,
		schemas:   map[int]*Schema{},
		snapshots: cache.NewSized[int64, *Snapshot](maxSnapshotBytes, 0, nil),
		manifests: newManifestCache(maxManifestBytes),
		merges:    defaultMergePolicy,

		chunkIndexes:   cache.NewSized[string, *ChunkIndex](maxChunkIndexBytes, 0, nil),
		found:          cache.NewSized[foundKey, EpisodeEntry](maxFoundBytes, 0, nil),
		parquetSchemas: map[int]*schema.Schema{},
	}, nil
}

// Store returns the table's object store.
func (t *Table) Store() storage.Store { return t.store }

// String names the table for messages.
func (t *Table) String() string { return t.store.String() }

// readJSON reads and decodes an immutable metadata object.
func (t *Table) readJSON(ctx context.Context, key string, v any) error {
	data, err := t.store.ReadAll(ctx, key)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("%w: %s", ErrNotFound, key)
		}
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
	}
	return nil
}

// Schema returns schema id.
func (t *Table) Schema(ctx context.Context, id int) (*Schema, error) {
	t.mu.Lock()
	s := t.schemas[id]
	t.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s = new(Schema)
	if err := t.readJSON(ctx, schemaKey(id), s); err != nil {
		return nil, err
	}
	if err := checkFormat(fmt.Sprintf("schema %d", id), s.FormatVersion, nil); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.schemas[id] = s
	t.mu.Unlock()
	return s, nil
}

// LatestSchema returns the schema with the highest id.
func (t *Table) LatestSchema(ctx context.Context) (*Schema, error) {
	objs, err := t.store.List(ctx, prefixSchema)
	if err != nil {
		return nil, err
	}
	best := 0
	for _, o := range objs {
		var id int
		if _, err := fmt.Sscanf(strings.TrimPrefix(o.Key, prefixSchema), "schema-%d.json", &id); err == nil && id > best {
			best = id
		}
	}
	if best == 0 {
		return nil, fmt.Errorf("%w: table %s has no schema", ErrCorrupt, t)
	}
	return t.Schema(ctx, best)
}

// SnapshotIDs lists the ids of all snapshots, ascending.
func (t *Table) SnapshotIDs(ctx context.Context) ([]int64, error) {
	objs, err := t.store.List(ctx, prefixSnapshot)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, o := range objs {
		if id, ok := parseSnapshotKey(o.Key); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Head returns the latest snapshot, or nil for a table without commits.
func (t *Table) Head(ctx context.Context) (*Snapshot, error) {
	ids, err := t.SnapshotIDs(ctx)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return t.Snapshot(ctx, ids[len(ids)-1])
}

// Snapshot returns snapshot id.
func (t *Table) Snapshot(ctx context.Context, id int64) (*Snapshot, error) {
	if s, ok := t.snapshots.Get(id); ok {
		return s, nil
	}
	s := new(Snapshot)
	if err := t.readJSON(ctx, snapshotKey(id), s); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("%w: snapshot %d of table %s", ErrNotFound, id, t)
		}
		return nil, err
	}
	if err := checkFormat(fmt.Sprintf("snapshot %d", id), s.FormatVersion, s.Features); err != nil {
		return nil, err
	}
	if s.ID != id {
		return nil, fmt.Errorf("%w: %s holds snapshot id %d", ErrCorrupt, snapshotKey(id), s.ID)
	}
	t.keepSnapshot(s)
	return s, nil
}

// maxSnapshotBytes bounds the snapshots a Table keeps decoded (a few
// hundred bytes for a snapshot of format version 2, which names its
// manifest list; about 3 KB for one of version 1 with 32 manifests): a
// few thousand, whatever the length of the table's history.
const maxSnapshotBytes = 8 << 20

// keepSnapshot adds s to the snapshot cache, charged its memory: the
// fixed fields plus its strings.
func (t *Table) keepSnapshot(s *Snapshot) {
	size := int64(unsafe.Sizeof(*s)) + int64(len(s.ManifestList))
	for _, list := range [][]string{s.Features, s.Manifests, s.Changed} {
		for _, v := range list {
			size += int64(unsafe.Sizeof(v)) + int64(len(v))
		}
	}
	t.snapshots.Add(s.ID, s, size)
}

// Resolve finds the snapshot for a time-travel request: a snapshot id, a
// tag name, or (both empty) the head.
func (t *Table) Resolve(ctx context.Context, snapshotID int64, tag string) (*Snapshot, error) {
	switch {
	case tag != "":
		tg, err := t.Tag(ctx, tag)
		if err != nil {
			return nil, err
		}
		return t.Snapshot(ctx, tg.Snapshot)
	case snapshotID > 0:
		return t.Snapshot(ctx, snapshotID)
	}
	head, err := t.Head(ctx)
	if err != nil {
		return nil, err
	}
	if head == nil {
		return nil, fmt.Errorf("%w: table %s has no snapshots yet", ErrNotFound, t)
	}
	return head, nil
}

// newObjectKey returns a unique key for a new data, pack or manifest file.
func newObjectKey(prefix, ext string) string {
	return prefix + uuid.NewString() + ext
}
