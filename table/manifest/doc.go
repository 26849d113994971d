// Package manifest is the binary form of a table's manifests (format
// version 2, docs/FORMAT.md): Parquet files listing episodes with where
// their rows and videos are and statistics of their columns, and the
// manifest lists that carry a summary of each manifest of a snapshot. It
// owns the entry types (Entry, VideoRef, SizesRef, ColumnStats), their
// encoding and decoding, and the summaries; package table decides which
// entries go into which manifest and when manifests are merged.
//
// Manifests are read from object stores that others may write to:
// decoding checks the footer before allocating and fails with ErrCorrupt
// on damaged or foreign files, never crashes (fuzzed: FuzzManifest,
// FuzzManifestList).
//
// Readers read only what they need: Reader.Read decodes a few columns of
// every entry (what a filter or a partition listing needs),
// Reader.Entries whole entries of the row groups that hold them.
package manifest
