// Package table is the framefs table format: versioned tables of episodes,
// each episode one or more videos stored byte for byte plus one Parquet row
// per frame, read and written through an object store. docs/FORMAT.md
// describes the layout precisely enough for another implementation; this
// package is the one that writes it. It never imports FFmpeg or go-fuse:
// indexing videos other than MP4 and computing frame sizes come in through
// Options.Indexer and Options.Sizer, which the command line fills from
// package decoder. Selecting rows by a filter is not its job: package
// query, above it, reads snapshots through this package's API (and checks
// the filters of the views this package stores, see ViewCheck).
//
// # Layers
//
// From the bottom up:
//
//   - storage (table/storage): a flat namespace of immutable objects with
//     ranged reads, Put, Delete, List and an atomic PutIfAbsent, on a local
//     directory or S3. The table layer assumes nothing else of a store,
//     except that GC also removes the temporaries a crashed writer left
//     when the store can list them.
//   - inputs (table/input): the files and S3 objects ingest reads videos
//     from, pinned to the version first seen.
//   - the format (format.go, schema.go, stats.go, views.go, window.go,
//     chunks.go, and table/manifest): object keys, the format version and
//     features a reader must know, and the metadata: table.json, schemas,
//     snapshots, manifest lists and manifests (episodes with their row and
//     video locations and column statistics), tags, views, chunk indexes.
//     Package manifest encodes manifests and manifest lists (format
//     version 2, Parquet); this package reads version-1 JSON manifests
//     too, and decides which entries go into which manifest.
//   - reading (table.go, manifests.go, video.go, rows.go): a Table opens a
//     store, resolves a snapshot (by id, tag or head), lists its episodes
//     from manifests alone (all of them, one partition's, or one episode,
//     reading only the manifests whose summaries may hold them), opens
//     stored videos with their frame index, and reads rows.
//   - the commit protocol (commit.go): how one change becomes the next
//     snapshot when other writers commit at the same time.
//   - operations (ops.go, pack.go, evolve.go, warm.go, tags.go, views.go,
//     maintenance.go, verify.go, upgrade.go): add, update, replace and
//     delete episodes, evolve the schema, store frame sizes, tag, store
//     views, expire, collect garbage, verify, upgrade the format. Each
//     validates all its input, writes new objects, and lands through the
//     commit protocol.
//   - Warehouse (warehouse.go): a store whose child prefixes are tables.
//
// Input from users is parsed at the edge: sidecar.go reads JSONL, JSON,
// CSV and Parquet sidecars (untrusted bytes, fuzzed) into typed rows, and
// names.go decides which table, tag, episode and column names are allowed.
//
// # The commit protocol
//
// No object is ever changed once written, except table.json when a commit
// upgrades the table's format version (upgrade.go). Data files (Parquet),
// packs (.video), manifests and manifest lists go under fresh random
// keys; table.json, schemas, snapshots and tags are created with
// PutIfAbsent under fixed names. A commit (Table.commit in commit.go)
// first writes its new objects, then the manifests of its change applied
// to the current head (rewriting only the manifests that hold a changed
// episode, and merging small manifests by size tiers, manifests.go) and
// a manifest list, then creates
// snapshot/N+1.json with PutIfAbsent: that single create is the atomic
// step, and a snapshot only ever refers to objects complete before it. If
// another writer created N+1 first, the commit reads the new head and
// rebuilds its manifests on top of it, after checking for conflicts: an
// append of an episode the new head already has fails with ErrExists, and
// a change based on an older snapshot fails with ErrConflict when a
// snapshot committed since then changed one of its episodes
// (Snapshot.Changed). Retries back off with jitter and stop after
// Options.MaxCommitRetries. An interrupted or retried commit leaves only
// unreferenced objects, which GC removes after its grace period.
//
// Only deletions change what a store holds: Expire deletes snapshot files
// (readers then get ErrNotFound for them), DeleteTag deletes tags, GC
// deletes unreferenced objects.
//
// # Concurrency
//
// A *Table is safe for concurrent use by many goroutines, and many
// processes on many machines may commit to one table at once (the commit
// protocol above is their only coordination; there are no locks in the
// store). Table.mu guards only the in-memory caches of schemas, snapshots,
// chunk indexes and Parquet schemas (manifests have a cache with its own
// lock), all immutable once written and cached by key; it is never held
// during I/O. The *Schema, *Snapshot and manifest values the
// Table returns are shared by every caller and must not be modified.
// GC lists candidate objects before it reads the live set, so an object
// committed meanwhile is either seen as live or young enough for the
// grace period.
//
// # Files
//
//	doc.go           this overview
//	errors.go        the errors at the package boundary (errors.Is) and InputError
//	format.go        format versions, object keys, metadata types (Snapshot, Manifest, EpisodeEntry, VideoRef, Tag)
//	schema.go        Schema, Column, Type, defaults and validation, ImageOptions
//	stats.go         ColumnStats: the per-episode column statistics manifests carry
//	names.go         CheckName: the names users may choose
//	table.go         Options, Create, Open, cached metadata reads, Resolve
//	manifests.go     reading a snapshot's manifests of either version (Episodes, EpisodesIn, EachEpisodeIn, PartitionValues, Episode, EpisodeIn, ReadManifest); writing and merging them by size tiers
//	manifestcache.go the byte-bounded cache of manifests and manifest lists, charged the memory each takes
//	foundcache.go    the entries EpisodeIn found, by manifest: a new head's lookups skip the manifests it shares with its parent
//	commit.go        the commit protocol: change, commit, conflicts, building a snapshot
//	upgrade.go       Upgrade: a version-1 table to the current format version
//	ops.go           AddEpisodes, UpdateRows, ReplaceVideo, DeleteEpisode, AddImagesAsVideo
//	pack.go          checking, hashing and indexing videos; packing them into .video objects; sizes blocks
//	video.go         OpenVideo (payload and frame index), StoredSizes
//	rows.go          Parquet data files: writing rows, reading them back, EpisodeParquet, RowValue
//	chunks.go        chunk indexes (data/UUID.chunks): encoding, decoding, ChunkIndex
//	sidecar.go       parsing sidecars into rows
//	evolve.go        schema evolution: new sidecar columns, Redefine
//	warm.go          Warm: frame sizes for videos ingested without them
//	tags.go          CreateTag, DeleteTag, Tag, Tags
//	views.go         View, CreateView (with a ViewCheck), DeleteView, Views, ResolveView
//	window.go        Window: the clips of a clip view, and their limits
//	maintenance.go   Expire, GC
//	verify.go        Verify: every live snapshot checked in one pass over manifests, data files and payloads
//	warehouse.go     Warehouse and IsTable
package table
