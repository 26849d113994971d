package fusefs

import (
	"fmt"
	"hash/fnv"
	"path"
	"strings"

	"github.com/framefs/framefs/table"
)

// ino derives a stable inode number from a node's path in the mount.
func ino(path string) uint64 {
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
func videoColumnOf(e *table.EpisodeEntry, name string) (string, bool) {
	for col, ref := range e.Videos {
		if videoFileName(col, ref) == name {
			return col, true
		}
	}
	return "", false
}

// videoIno is the inode number of a stored video's file: every episode
// folder showing the same payload shows the same file.
func videoIno(ref table.VideoRef) uint64 {
	return ino(fmt.Sprintf("video|%s@%d+%d|%s", ref.Pack, ref.Offset, ref.Length, ref.SHA256))
}
