package fusefs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/framefs/framefs/table"
)

// treeDir is a directory of a snapshot's tree: partition folders hold
// folders; an episode folder holds frames (or one folder per video column)
// and its row files.
type treeDir struct {
	subdirs map[string]*treeDir
	episode *table.EpisodeEntry
	// column is set on the folder that holds one video column's frames.
	column string
	// rows are the episode's rows the folder shows, ascending (a view's
	// selection); nil shows every row.
	rows []int64
	// clip is set on a clip view's clip folder (and its video column
	// folders): the folder shows the clip's frames instead of rows.
	clip *clipWindow
}

func buildTree(s *table.Schema, eps []table.EpisodeEntry) *treeDir {
	root := &treeDir{subdirs: map[string]*treeDir{}}
	for i := range eps {
		e := &eps[i]
		d := root
		for _, p := range s.PartitionColumns {
			d = d.child(p + "=" + e.Partition[p])
		}
		ep := d.child(e.Episode)
		ep.episode = e
		if len(s.VideoColumns) > 1 {
			for _, col := range s.VideoColumns {
				c := ep.child(col)
				c.episode, c.column = e, col
			}
		} else {
			ep.column = s.VideoColumns[0]
		}
	}
	return root
}

func (d *treeDir) child(name string) *treeDir {
	c := d.subdirs[name]
	if c == nil {
		c = &treeDir{subdirs: map[string]*treeDir{}}
		d.subdirs[name] = c
	}
	return c
}

// frameName is the file name of row i: a zero-padded ordinal, so that name
// order is frame order.
func frameName(i, rows int64, ext string) string {
	width := max(6, len(strconv.FormatInt(rows-1, 10)))
	return fmt.Sprintf("%0*d.%s", width, i, ext)
}

// parseFrameName is the inverse of frameName.
func parseFrameName(name string, rows int64, ext string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, "."+ext)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || i < 0 || i >= rows || frameName(i, rows, ext) != name {
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
func episodeFileIno(e *table.EpisodeEntry, schemaID int, parts ...string) uint64 {
	var b strings.Builder
	fmt.Fprintf(&b, "episode|%s|%s#%d|%d|%d|%d", e.Episode, e.DataFile, e.RowGroup, e.FirstRowID, e.Rows, schemaID)
	for _, col := range sortedKeys(e.Videos) {
		r := e.Videos[col]
		fmt.Fprintf(&b, "|%s=%s@%d+%d:%d", col, r.Pack, r.Offset, r.Length, r.FirstFrame)
	}
	for _, p := range parts {
		b.WriteString("|" + p)
	}
	return ino(b.String())
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
