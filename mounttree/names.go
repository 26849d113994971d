package mounttree

import (
	"fmt"
	"hash/fnv"
	"path"
	"strconv"
	"strings"

	"github.com/framefs/framefs/table"
)

// PathIno derives a stable inode number from a node's path in the mount.
func PathIno(path string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(path))
	v := h.Sum64()
	if v <= 1 {
		v += 2 // 1 is the root
	}
	return v
}

// videoFileName is the name of a video column's file: the column and the
// extension of the file it was ingested from (MP4 and its kin, Matroska,
// WebM), .mp4 when that is unknown.
func videoFileName(column string, ref table.VideoRef) string {
	switch ext := strings.ToLower(path.Ext(ref.SourceName)); ext {
	case ".mp4", ".m4v", ".mov", ".mkv", ".webm":
		return column + ext
	}
	return column + ".mp4"
}

// videoColumnOf returns the video column whose file is name in an episode
// folder of e.
func videoColumnOf(e *episode, name string) (string, bool) {
	for _, v := range e.videos {
		if videoFileName(v.column, v.ref) == name {
			return v.column, true
		}
	}
	return "", false
}

// videoIno is the inode number of a stored video's file: every episode
// folder showing the same payload shows the same file.
func videoIno(ref table.VideoRef) uint64 {
	return PathIno(fmt.Sprintf("video|%s@%d+%d|%s", ref.Pack, ref.Offset, ref.Length, ref.SHA256))
}

// FrameName is the file name of row i: a zero-padded ordinal, so that name
// order is frame order.
func FrameName(i, rows int64, ext string) string {
	width := max(6, len(strconv.FormatInt(rows-1, 10)))
	return fmt.Sprintf("%0*d.%s", width, i, ext)
}

// parseFrameName is the inverse of FrameName.
func parseFrameName(name string, rows int64, ext string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, "."+ext)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || i < 0 || i >= rows || FrameName(i, rows, ext) != name {
		return 0, false
	}
	return i, true
}

// A file of an episode is the same file in every snapshot (and view) that
// holds the same version of the episode: its inode number names what makes
// its bytes, attributes and extended attributes (the episode version's rows
// and video, the schema they are read with, the image setting), not its
// path, and its times are the episode version's commit time. So the kernel
// keeps one inode, and one copy in its page cache, for a frame read through
// latest before and after a commit that did not change its episode, or
// through a tag, a snapshot and a view; and the daemon one node. (Such
// files report one link: they are not hard links to tools that copy
// trees.)
func episodeFileIno(e *episode, schemaID int, parts ...string) uint64 {
	var b strings.Builder
	fmt.Fprintf(&b, "episode|%s|%s#%d|%d|%d|%d", e.name, e.dataFile, e.rowGroup, e.firstRowID, e.rows, schemaID)
	for _, v := range e.videos { // sorted by column
		r := v.ref
		fmt.Fprintf(&b, "|%s=%s@%d+%d:%d", v.column, r.Pack, r.Offset, r.Length, r.FirstFrame)
	}
	for _, p := range parts {
		b.WriteString("|" + p)
	}
	return PathIno(b.String())
}

// UserXattrPrefix is the only extended attribute namespace of the mount:
// frames carry their row's columns as user.COLUMN.
const UserXattrPrefix = "user."
