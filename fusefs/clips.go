package fusefs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/table"
)

// A clip view (a view with a window) shows, in each episode folder, one
// folder per window of frames that all match:
//
//	[PART=VALUE/]EPISODE/clip-SSSSSS/00.jpg ...   the window starting at frame SSSSSS,
//	                                              its frames in window order
//	[PART=VALUE/]EPISODE/clip-SSSSSS/clip.json    episode, start, frame_indices, rows
//	[PART=VALUE/]EPISODE/video.mp4, frames.*      as in a plain view; the rows files
//	                                              hold the rows in at least one clip
//	clips.jsonl                                   at the view's root: one line per clip
//	clips.txt                                     at the view's root: MMAction2's raw-frame
//	                                              list, "PATH FRAMES LABEL" per clip
//
// A clip's frame is the same file (inode, bytes, caches) as that frame
// under snapshots/: a frame in two overlapping windows is one file shown
// twice, decoded once. With several video columns a clip folder holds a
// folder per column.

// Names of the files of clip views.
const (
	clipJSON   = "clip.json"
	clipsJSONL = "clips.jsonl"
	clipsTxt   = "clips.txt"
)

// clipWindow is one clip of an episode.
type clipWindow struct {
	start int64
	// frames are the episode's rows the clip holds, in window order.
	frames []int64
}

// clipName is the folder name of the clip starting at start of an
// episode of rows rows: zero-padded so that name order is start order.
func clipName(start, rows int64) string {
	width := max(6, len(strconv.FormatInt(rows-1, 10)))
	return fmt.Sprintf("clip-%0*d", width, start)
}

// clipFrameName is the name of the j-th frame of a window of length
// frames: zero-padded to the window length's width, at least 2 digits.
func clipFrameName(j, length int, ext string) string {
	width := max(2, len(strconv.Itoa(length-1)))
	return fmt.Sprintf("%0*d.%s", width, j, ext)
}

// parseClipFrameName is the inverse of clipFrameName.
func parseClipFrameName(name string, length int, ext string) (int, bool) {
	digits, ok := strings.CutSuffix(name, "."+ext)
	if !ok {
		return 0, false
	}
	j, err := strconv.Atoi(digits)
	if err != nil || j < 0 || j >= length || clipFrameName(j, length, ext) != name {
		return 0, false
	}
	return j, true
}

// clipRecord is a line of clips.jsonl.
type clipRecord struct {
	Path         string  `json:"path"`
	Episode      string  `json:"episode"`
	Start        int64   `json:"start"`
	FrameIndices []int64 `json:"frame_indices"`
	// top is the clip's top group-by folder; label, its class in
	// clips.txt, is the rank of top among the view's (0 without
	// group-by).
	top   string
	label int
	// columns are the folders of the clip's video columns, when there are
	// several.
	columns []string
}

// clipIndex holds a clip view's clips for its root files, which are
// rendered on first use.
type clipIndex struct {
	records []clipRecord
	once    sync.Once
	jsonl   []byte
	txt     []byte
}

func (x *clipIndex) render() {
	x.once.Do(func() {
		var jb, tb bytes.Buffer
		enc := json.NewEncoder(&jb)
		enc.SetEscapeHTML(false)
		for _, r := range x.records {
			enc.Encode(r)
			paths := []string{r.Path}
			if len(r.columns) > 0 {
				paths = paths[:0]
				for _, c := range r.columns {
					paths = append(paths, r.Path+"/"+c)
				}
			}
			for _, p := range paths {
				fmt.Fprintf(&tb, "%s %d %d\n", p, len(r.FrameIndices), r.label)
			}
		}
		x.jsonl, x.txt = jb.Bytes(), tb.Bytes()
	})
}

// file returns the content of clips.jsonl or clips.txt.
func (x *clipIndex) file(name string) ([]byte, bool) {
	x.render()
	switch name {
	case clipsJSONL:
		return x.jsonl, true
	case clipsTxt:
		return x.txt, true
	}
	return nil, false
}

// buildClipTree lays out a clip view: episodes under partition (or
// group-by) folders as in a plain view, each holding its clips' folders.
func buildClipTree(s *table.Schema, cs *query.ClipSelection, groupBy []string) (*treeDir, *clipIndex) {
	root := &treeDir{subdirs: map[string]*treeDir{}}
	idx := &clipIndex{}
	w := cs.Window
	tops := map[string]bool{} // top group-by folders, for clips.txt labels
	for i := range cs.Episodes {
		ce := &cs.Episodes[i]
		e := &ce.Entry
		for _, part := range ce.Parts {
			d := root
			var folders []string
			if len(groupBy) > 0 {
				folders = strings.Split(part.Group, "/")
				tops[folders[0]] = true
			} else {
				for _, p := range s.PartitionColumns {
					folders = append(folders, p+"="+e.Partition[p])
				}
			}
			for _, f := range folders {
				d = d.child(f)
			}
			ep := d.child(e.Episode)
			// The episode folder shows the rows files and videos; its
			// frames are in the clip folders.
			ep.episode, ep.rows = e, part.Ordinals(w)
			for _, start := range part.Starts {
				name := clipName(start, e.Rows)
				c := ep.child(name)
				c.episode, c.clip = e, &clipWindow{start: start, frames: w.Frames(start)}
				rec := clipRecord{Path: strings.Join(append(slices.Clone(folders), e.Episode, name), "/"),
					Episode: e.Episode, Start: start, FrameIndices: c.clip.frames}
				if len(groupBy) > 0 {
					rec.top = folders[0]
				}
				if len(s.VideoColumns) > 1 {
					for _, col := range s.VideoColumns {
						cc := c.child(col)
						cc.episode, cc.column, cc.clip = e, col, c.clip
					}
					rec.columns = s.VideoColumns
				} else {
					c.column = s.VideoColumns[0]
				}
				idx.records = append(idx.records, rec)
			}
		}
	}
	// Labels are the ranks of the top group-by folders in name order.
	labels := sortedKeys(tops)
	for i := range idx.records {
		if r := &idx.records[i]; r.top != "" {
			r.label, _ = slices.BinarySearch(labels, r.top)
		}
	}
	// Clips in the order find and ls show their folders.
	slices.SortFunc(idx.records, func(a, b clipRecord) int {
		if c := strings.Compare(a.Path[:strings.LastIndexByte(a.Path, '/')], b.Path[:strings.LastIndexByte(b.Path, '/')]); c != 0 {
			return c
		}
		return int(a.Start - b.Start)
	})
	return root, idx
}

// isClipFolder reports whether n is a clip's folder (which holds
// clip.json), rather than the frames folder of one of its video columns.
func (n *dirNode) isClipFolder() bool {
	return n.d.clip != nil && (n.d.column == "" || len(n.tree.schema.VideoColumns) == 1)
}

// clipEntries lists a clip folder: its frames, in window order, and
// clip.json.
func (n *dirNode) clipEntries() []fuse.DirEntry {
	var entries []fuse.DirEntry
	if n.d.column != "" {
		ext := n.ext()
		for j, row := range n.d.clip.frames {
			entries = append(entries, fuse.DirEntry{Name: clipFrameName(j, len(n.d.clip.frames), ext),
				Mode: fuse.S_IFREG, Ino: n.frameIno(n.d.column, row)})
		}
	}
	if n.isClipFolder() {
		entries = append(entries, fuse.DirEntry{Name: clipJSON, Mode: fuse.S_IFREG, Ino: n.clipJSONIno()})
	}
	return entries
}

// lookupClip resolves a name in a clip folder.
func (n *dirNode) lookupClip(ctx context.Context, parent *fs.Inode, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	e := n.d.episode
	if name == clipJSON && n.isClipFolder() {
		f := &clipJSONNode{s: n.s, e: e, clip: n.d.clip}
		size, err := n.s.t.cat.clipJSONSize(ctx, n.s.snap, *e, n.d.clip)
		if err != nil {
			return nil, errno(clipJSON, err)
		}
		fileAttr(n.s, e, &out.Attr, size)
		return parent.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: n.clipJSONIno()}), 0
	}
	if n.d.column == "" {
		return nil, syscall.ENOENT
	}
	j, ok := parseClipFrameName(name, len(n.d.clip.frames), n.ext())
	if !ok {
		return nil, syscall.ENOENT
	}
	return n.frameInode(ctx, parent, n.d.clip.frames[j], out)
}

// clipJSONIno is the inode number of a clip's clip.json: its content is
// the episode version's rows at the clip's frames.
func (n *dirNode) clipJSONIno() uint64 {
	return episodeFileIno(n.d.episode, n.s.snap.SchemaID, clipJSON, ordinalsKey(n.d.clip.frames))
}

// clipJSONNode is a clip's clip.json.
type clipJSONNode struct {
	fs.Inode
	readOnly
	s    *snapshotDir
	e    *table.EpisodeEntry
	clip *clipWindow
}

func (n *clipJSONNode) OnForget() { n.s.t.m.stats.nodes.released() }

func (n *clipJSONNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	size, err := n.s.t.cat.clipJSONSize(ctx, n.s.snap, *n.e, n.clip)
	if err != nil {
		return errno(clipJSON, err)
	}
	fileAttr(n.s, n.e, &out.Attr, size)
	out.SetTimeout(immutableTimeout)
	return 0
}

func (n *clipJSONNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	data, err := n.s.t.cat.clipJSON(ctx, n.s.snap, *n.e, n.clip)
	if err != nil {
		return nil, 0, errno(clipJSON, err)
	}
	return &bytesHandle{data: data}, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// clipListNode is a clip view's clips.jsonl or clips.txt.
type clipListNode struct {
	fs.Inode
	readOnly
	s    *snapshotDir
	data []byte
}

func (n *clipListNode) fill(a *fuse.Attr) {
	a.Mode = fuse.S_IFREG | 0o444
	a.Nlink = 1
	a.Size = uint64(len(n.data))
	a.Blocks = (a.Size + 511) / 512
	n.s.t.m.owner(a)
	a.SetTimes(nil, &n.s.snap.Time, &n.s.snap.Time)
}

func (n *clipListNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fill(&out.Attr)
	out.SetTimeout(immutableTimeout)
	return 0
}

func (n *clipListNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	return &bytesHandle{data: n.data}, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// clipListEntries are the root files of a clip view.
func (n *snapshotDir) clipListEntries(st *snapshotTree) []fuse.DirEntry {
	if st.clips == nil {
		return nil
	}
	return []fuse.DirEntry{
		{Name: clipsJSONL, Mode: fuse.S_IFREG, Ino: ino(n.path + "/" + clipsJSONL)},
		{Name: clipsTxt, Mode: fuse.S_IFREG, Ino: ino(n.path + "/" + clipsTxt)},
	}
}

// lookupClipList resolves clips.jsonl and clips.txt at a clip view's
// root; ok is false for other names.
func (n *snapshotDir) lookupClipList(ctx context.Context, st *snapshotTree, name string, out *fuse.EntryOut) (*fs.Inode, bool) {
	if st.clips == nil {
		return nil, false
	}
	data, ok := st.clips.file(name)
	if !ok {
		return nil, false
	}
	f := &clipListNode{s: n, data: data}
	f.fill(&out.Attr)
	out.SetEntryTimeout(immutableTimeout)
	out.SetAttrTimeout(immutableTimeout)
	return n.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino(n.path + "/" + name)}), true
}
