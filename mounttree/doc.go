// Package mounttree is the mount's model: what the folder of a snapshot
// (snapshots/N/), of a view (views/.NAME@N-V/) or of a clip view shows,
// as plain Go values. A Catalog, one per table, gives a snapshot's or a
// view's Tree; a Tree's Folders list their Entries and look names up,
// finding Folders or Files; a File knows its inode number, times, exact
// size, content (a frame's image, a rows file, clip.json), stored video
// and extended attributes. The Catalog caches what it learns (frame
// sizes, rows, rows files, open videos, trees), bounded in bytes.
//
// Layout of a tree (a table with partition column task and one video
// column; with several, an episode folder holds a folder of frames per
// column):
//
//	task=pick/                        partition folders (a view's group-by
//	  ep1/                            folders), then episode folders
//	    000000.jpg ...                frames, named by row (FrameName)
//	    video.mp4                     the stored video, byte for byte
//	    frames.jsonl, frames.parquet  the episode's rows
//	    clip-000010/00.jpg ... clip.json   a clip view's clips, instead
//	                                       of frames
//	clips.jsonl, clips.txt            at a clip view's root
//
// A tree's folders above its episodes come from an index (index.go),
// asked about one folder when that folder is listed or looked up; what is
// below an episode folder is made from the episode alone. A snapshot's
// index reads, for each folder it is asked about, only the manifests whose
// summaries may hold that folder's episodes (for a lookup of one episode
// in a folder not listed, those that may hold that episode), and keeps
// what the folder holds: a compact record per episode (episode.go).
//
// It knows nothing of FUSE: package fusefs turns these values into nodes,
// attributes, reads and errno values (errors here wrap the sentinels of
// package table: a name a folder does not hold is table.ErrNotFound). It
// reaches FFmpeg only through the FrameServer interface, so it builds and
// tests without cgo; internal/layering keeps it from importing go-fuse or
// the decoder.
//
// Locking: Files guard their own cached size; a snapshot's index its
// building; the catalog's caches have their own locks. No lock is held
// while decoding or reading storage, except a snapshot index folder's
// while it reads that folder's manifests (concurrent first uses of a
// folder wait for one read).
package mounttree
