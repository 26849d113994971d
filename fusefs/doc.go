// Package fusefs serves framefs tables as a FUSE filesystem. It is a thin
// adapter: the table package says what exists (snapshots, tags, views),
// package mounttree what the folders of a snapshot or view hold (folders,
// frames, rows files, stored videos, clips, with their sizes, inode
// numbers and contents), and this package maps them to go-fuse nodes,
// attributes, reads and errno values (errno.go). It is the only package
// that imports go-fuse. It reaches the decoder only through the
// mounttree.FrameServer interface, in the values of package media, so it
// builds without cgo and its tree can be tested in process (NewTableRoot;
// fusefs/inprocess).
//
// Files are named after the nodes they hold: rootnode.go, tablenode.go
// (TABLE/, latest, snapshots/), tagsnode.go, viewsnode.go (views/ and its
// files), snapshotdir.go (a snapshot's or view's folder, and every folder
// in it), framenode.go, videofilenode.go, metadatafilenode.go (rows files
// and clip files), statsnode.go, stagingnode.go (write directories).
//
// Layout of a mount of a warehouse (one table mounted alone puts the
// table's entries at the root):
//
//	MOUNT/
//	  .stats                          counters, Prometheus text format
//	  TABLE/
//	    latest -> snapshots/N         the head, follows new commits
//	    snapshots/N/                  every live snapshot, read-only
//	      [COL=VALUE/...]EPISODE/     partition folders, then episodes
//	        000000.jpg ...            frames (one folder per video column
//	        frames.jsonl              when the table has several)
//	        frames.parquet
//	        video.mp4                 the stored video, byte for byte
//	    tags/NAME -> ../snapshots/N
//	    views/NAME -> .NAME@N-V       a view: snapshot N's matching frames
//	    views/NAME.where              its filter (writing one creates a view)
//	    views/NAME.error              why a written filter made no view
//	    views/NAME/.../EPISODE/clip-SSSSSS/00.jpg ... clip.json
//	                                  a clip view: windows of frames,
//	                                  with clips.jsonl and clips.txt at
//	                                  the view's root
//
// A view's folder is a snapshot folder whose tree holds only the matching
// rows, or the matching windows of a clip view: the same node types and
// caches, so a frame under a view is the frame under snapshots/.
//
// Snapshot contents never change, so their files open with
// FOPEN_KEEP_CACHE (and FOPEN_NOFLUSH) and their inode numbers are derived
// from their paths (folders) or from what makes their bytes (files), so
// they are stable across lookups and remounts. Opening a frame
// stores its whole image in the kernel's page cache, so reading it takes no
// READ round trip. Their inodes are not persistent: a node the kernel
// forgets (FORGET, when it evicts the inode, e.g. after drop_caches) is
// released, so the daemon's memory does not grow with the frames visited;
// a later lookup makes a new node from the snapshot's tree, which the
// catalog keeps for its most recently used snapshots.
//
// Locking: each node guards its own mutable fields with its own mutex (no
// tree-wide lock); the catalog's caches have their own locks. No lock is
// held while decoding or reading storage.
package fusefs
