package fusefs

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/table"
)

// immutableTimeout is how long the kernel may cache entries and attributes
// of snapshot contents, which never change.
const immutableTimeout = time.Hour

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

// snapshotDir is snapshots/N/. Its tree comes from the catalog, which
// builds it from the snapshot's manifests the first time it is needed.
//
// The folder of a view (views/.NAME@N-V/) is a snapshotDir too, whose tree
// holds the view's frames only: its frames are the same nodes, made with
// the same caches, as under snapshots/.
type snapshotDir struct {
	fs.Inode
	readOnly
	t    *tableNode
	snap *table.Snapshot
	path string
	// view is set on a view's folder.
	view *viewContent
}

func (n *snapshotDir) tree(ctx context.Context) (*snapshotTree, syscall.Errno) {
	if n.view != nil {
		st, err := n.t.cat.viewTree(ctx, n.view, n.snap)
		if err != nil {
			return nil, errno(fmt.Sprintf("view %s of snapshot %d", n.view.def.Name, n.snap.ID), err)
		}
		return st, 0
	}
	st, err := n.t.cat.snapshotTree(ctx, n.snap)
	if err != nil {
		return nil, errno(fmt.Sprintf("list snapshot %d", n.snap.ID), err)
	}
	return st, 0
}

// setting returns the image setting frames of a video are served with,
// and its identity: the table's, or the view's own.
func (n *snapshotDir) setting(ref table.VideoRef) (media.ImageSetting, string) {
	if n.view == nil || n.view.image == nil {
		return n.t.cat.setting, n.t.cat.identity
	}
	set := n.view.image.forVideo(n.t.cat.setting, ref.Width, ref.Height)
	return set, n.t.cat.identityOf(set)
}

// ext is the file name extension of frames.
func (n *snapshotDir) ext() string {
	if n.view != nil && n.view.image != nil {
		return n.view.image.format(n.t.cat.setting).Extension()
	}
	return n.t.cat.setting.Format.Extension()
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

func (n *snapshotDir) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(n.t.m, &out.Attr, n.snap.Time)
	return 0
}

func (n *snapshotDir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	st, errno := n.tree(ctx)
	if errno != 0 {
		return nil, errno
	}
	stream, errno := (&dirNode{s: n, tree: st, d: st.root, path: n.path}).Readdir(ctx)
	if errno != 0 || st.clips == nil {
		return stream, errno
	}
	var entries []fuse.DirEntry
	for stream.HasNext() {
		e, _ := stream.Next()
		entries = append(entries, e)
	}
	return fs.NewListDirStream(append(entries, n.clipListEntries(st)...)), 0
}

func (n *snapshotDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	st, errno := n.tree(ctx)
	if errno != 0 {
		return nil, errno
	}
	if in, ok := n.lookupClipList(ctx, st, name, out); ok {
		return in, 0
	}
	return (&dirNode{s: n, tree: st, d: st.root, path: n.path}).lookupIn(ctx, &n.Inode, name, out)
}

// dirNode is a folder inside a snapshot: a partition, an episode, or an
// episode's video column.
type dirNode struct {
	fs.Inode
	readOnly
	s    *snapshotDir
	tree *snapshotTree
	d    *treeDir
	path string
}

// OnForget releases the node's memory accounting; see nodeCounts.
func (n *dirNode) OnForget() { n.s.t.m.stats.nodes.released() }

func (n *dirNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(n.s.t.m, &out.Attr, n.s.snap.Time)
	return 0
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

func (n *dirNode) ext() string { return n.s.ext() }

func (n *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	var entries []fuse.DirEntry
	names := make([]string, 0, len(n.d.subdirs))
	for name := range n.d.subdirs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		entries = append(entries, fuse.DirEntry{Name: name, Mode: fuse.S_IFDIR, Ino: ino(n.path + "/" + name)})
	}
	if n.d.clip != nil {
		return fs.NewListDirStream(append(entries, n.clipEntries()...)), 0
	}
	if e := n.d.episode; e != nil && n.d.column != "" {
		ext := n.ext()
		add := func(i int64) {
			name := frameName(i, e.Rows, ext)
			entries = append(entries, fuse.DirEntry{Name: name, Mode: fuse.S_IFREG, Ino: n.frameIno(n.d.column, i)})
		}
		if n.d.rows == nil {
			for i := int64(0); i < e.Rows; i++ {
				add(i)
			}
		}
		for _, i := range n.d.rows {
			add(i)
		}
	}
	if n.isEpisodeFolder() {
		for _, col := range sortedKeys(n.d.episode.Videos) {
			ref := n.d.episode.Videos[col]
			entries = append(entries, fuse.DirEntry{Name: videoFileName(col, ref), Mode: fuse.S_IFREG, Ino: videoIno(ref)})
		}
		for _, name := range []string{rowsJSONL, rowsParquet} {
			entries = append(entries, fuse.DirEntry{Name: name, Mode: fuse.S_IFREG, Ino: n.rowsIno(name)})
			// ls -l stats the rows files last, after every frame: render
			// them meanwhile on another core (their size is their content).
			go n.s.t.cat.rowsFileSize(n.s.t.m.bg, n.s.snap, *n.d.episode, name, n.d.rows)
		}
	}
	return fs.NewListDirStream(entries), 0
}

// isEpisodeFolder reports whether n is an episode's folder (which holds
// its rows files and videos), rather than a partition folder or the frames
// folder of one of several video columns.
func (n *dirNode) isEpisodeFolder() bool {
	return n.d.episode != nil && n.d.clip == nil && (n.d.column == "" || len(n.tree.schema.VideoColumns) == 1)
}

func (n *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.lookupIn(ctx, &n.Inode, name, out)
}

// lookupIn resolves name in n's folder, creating the child under parent.
func (n *dirNode) lookupIn(ctx context.Context, parent *fs.Inode, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	m := n.s.t.m
	m.stats.lookups.Add(1)
	path := n.path + "/" + name
	// Snapshot contents never change: let the kernel cache them.
	out.SetEntryTimeout(immutableTimeout)
	out.SetAttrTimeout(immutableTimeout)
	if sub := n.d.subdirs[name]; sub != nil {
		dirAttr(m, &out.Attr, n.s.snap.Time)
		return parent.NewInode(ctx, &dirNode{s: n.s, tree: n.tree, d: sub, path: path}, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: ino(path)}), 0
	}
	e := n.d.episode
	if e == nil {
		return nil, syscall.ENOENT
	}
	if n.d.clip != nil {
		return n.lookupClip(ctx, parent, name, out)
	}
	if col, ok := videoColumnOf(e, name); ok && n.isEpisodeFolder() {
		f := &videoFileNode{s: n.s, e: e, column: col, ref: e.Videos[col]}
		fileAttr(n.s, e, &out.Attr, f.ref.Length)
		return parent.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: videoIno(f.ref)}), 0
	}
	if (name == rowsJSONL || name == rowsParquet) && n.isEpisodeFolder() {
		size, err := n.s.t.cat.rowsFileSize(ctx, n.s.snap, *e, name, n.d.rows)
		if err != nil {
			return nil, errno(name, err)
		}
		f := &rowsFileNode{s: n.s, e: e, name: name, rows: n.d.rows}
		fileAttr(n.s, e, &out.Attr, size)
		return parent.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: n.rowsIno(name)}), 0
	}
	if n.d.column == "" {
		return nil, syscall.ENOENT
	}
	row, ok := parseFrameName(name, e.Rows, n.ext())
	if !ok {
		return nil, syscall.ENOENT
	}
	if n.d.rows != nil {
		if _, found := slices.BinarySearch(n.d.rows, row); !found {
			return nil, syscall.ENOENT // a frame the view leaves out
		}
	}
	return n.frameInode(ctx, parent, row, out)
}

// frameInode makes the node of row's frame of n's video column under
// parent: the same inode wherever the frame is shown.
func (n *dirNode) frameInode(ctx context.Context, parent *fs.Inode, row int64, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	e := n.d.episode
	f := &frameNode{s: n.s, e: e, column: n.d.column, row: row}
	size, err := f.frameSize(ctx)
	if err != nil {
		return nil, errno("frame size", err)
	}
	fileAttr(n.s, e, &out.Attr, size)
	return parent.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: n.frameIno(n.d.column, row)}), 0
}

// frameNode is one frame image.
type frameNode struct {
	fs.Inode
	readOnly
	s      *snapshotDir
	e      *table.EpisodeEntry
	column string
	row    int64

	mu   sync.Mutex // guards size
	size int64      // 0 until known (no image is empty)
	// cached says the image was handed to the kernel's page cache (see
	// Open).
	cached atomic.Bool
}

func (n *frameNode) OnForget() { n.s.t.m.stats.nodes.released() }

func (n *frameNode) ref() table.VideoRef { return n.e.Videos[n.column] }

func (n *frameNode) ordinal() int { return int(n.ref().FirstFrame + n.row) }

// frameSize is the exact byte size of the image, known without decoding
// it: stored sizes, or those the catalog worked out for the whole video.
func (n *frameNode) frameSize(ctx context.Context) (int64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.size > 0 {
		return n.size, nil
	}
	set, identity := n.s.setting(n.ref())
	sizes, err := n.s.t.cat.frameSizesFor(ctx, n.ref(), set, identity)
	if err != nil {
		return 0, err
	}
	if n.ordinal() >= len(sizes) {
		return 0, fmt.Errorf("%w: frame %d of a %d-frame video", table.ErrCorrupt, n.ordinal(), len(sizes))
	}
	n.size = sizes[n.ordinal()]
	return n.size, nil
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

// frameIno is the inode number of row's frame of a video column in n's
// episode, as served with the table's image setting (or a view's own).
func (n *dirNode) frameIno(column string, row int64) uint64 {
	_, identity := n.s.setting(n.d.episode.Videos[column])
	return episodeFileIno(n.d.episode, n.s.snap.SchemaID, "frame", column, strconv.FormatInt(row, 10), identity)
}

// rowsIno is the inode number of one of n's episode's rows files.
func (n *dirNode) rowsIno(name string) uint64 {
	if n.d.rows != nil {
		// A view's rows file holds its rows only.
		return episodeFileIno(n.d.episode, n.s.snap.SchemaID, name, ordinalsKey(n.d.rows))
	}
	return episodeFileIno(n.d.episode, n.s.snap.SchemaID, name)
}

// fileAttr fills the attributes of a read-only file of episode e.
func fileAttr(s *snapshotDir, e *table.EpisodeEntry, a *fuse.Attr, size int64) {
	a.Mode = fuse.S_IFREG | 0o444
	a.Nlink = 1
	a.Size = uint64(size)
	a.Blocks = (a.Size + 511) / 512
	s.t.m.owner(a)
	t := e.Time
	if t.IsZero() {
		t = s.snap.Time // written before episodes had their own time
	}
	a.SetTimes(nil, &t, &t)
}

func (n *frameNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if _, err := n.frameSize(ctx); err != nil {
		return errno("frame size", err)
	}
	fileAttr(n.s, n.e, &out.Attr, n.size)
	out.SetTimeout(immutableTimeout)
	return 0
}

func (n *frameNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	m := n.s.t.m
	const openFlags = fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH
	if n.cached.Load() {
		// An earlier open gave the kernel the image, which it keeps
		// (FOPEN_KEEP_CACHE) unless it needed the memory: make the
		// image again only if a READ asks for it. A loader's second
		// epoch decodes nothing while the page cache holds the frames.
		m.stats.framesServed.Add(1)
		return &frameHandle{n: n}, openFlags, 0
	}
	data, errno := n.image(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	m.stats.framesServed.Add(1)
	m.stats.bytesServed.Add(int64(len(data)))
	if !n.cached.Swap(true) {
		// Store the whole image in the page cache now: the reader's
		// reads are then served by the kernel, instead of a READ
		// round trip per readahead window (2 for a 40 KB JPEG, 10 for a
		// 900 KB BMP). If the kernel drops the pages later, READ
		// serves them again.
		n.WriteCache(0, data)
	}
	return &frameHandle{n: n, data: data}, openFlags, 0
}

// image returns the frame's encoded image, checked against the size stat
// announced.
func (n *frameNode) image(ctx context.Context) ([]byte, syscall.Errno) {
	m := n.s.t.m
	size, err := n.frameSize(ctx)
	if err != nil {
		return nil, errno("frame size", err)
	}
	set, _ := n.s.setting(n.ref())
	data, err := n.s.t.cat.frameFor(ctx, n.ref(), n.e.Rows, n.ordinal(), set)
	if err != nil {
		m.stats.frameErrors.Add(1)
		return nil, errno(fmt.Sprintf("decode %s frame %d of episode %q", n.column, n.row, n.e.Episode), err)
	}
	if int64(len(data)) != size {
		// The size promised at stat time and the bytes differ: the
		// sizes came from another encoder build. Refuse rather than
		// serve a file whose length lies.
		m.stats.frameErrors.Add(1)
		return nil, errno("frame size", fmt.Errorf("%w: episode %q %s frame %d is %d bytes, %d were announced",
			table.ErrCorrupt, n.e.Episode, n.column, n.row, len(data), size))
	}
	return data, 0
}

// frameHandle serves an open frame. READs come only for pages the kernel
// does not hold: after the image stored at the first open was dropped, or
// when the store failed. data is the image made at open, if it was; a
// handle opened without one makes the image for each READ (usually from
// the image cache).
type frameHandle struct {
	n    *frameNode
	data []byte
}

func (h *frameHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	m := h.n.s.t.m
	m.stats.frameReads.Add(1)
	if h.data != nil {
		return fuse.ReadResultData(sliceAt(h.data, dest, off)), 0
	}
	data, errno := h.n.image(ctx)
	if errno != 0 {
		return nil, errno
	}
	part := sliceAt(data, dest, off)
	m.stats.bytesServed.Add(int64(len(part)))
	return fuse.ReadResultData(part), 0
}

// xattrs returns the row's columns as user.* extended attributes.
func (n *frameNode) xattrs(ctx context.Context) (map[string][]byte, error) {
	rows, err := n.s.t.cat.episodeRows(ctx, n.s.snap, *n.e)
	if err != nil {
		return nil, err
	}
	return rows.xattrs(n.e.Episode, n.row)
}

func (n *frameNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if !strings.HasPrefix(attr, userXattrPrefix) {
		return noXattrs{}.Getxattr(ctx, attr, dest)
	}
	attrs, err := n.xattrs(ctx)
	if err != nil {
		return 0, errno("xattrs", err)
	}
	v, ok := attrs[attr]
	if !ok {
		return 0, syscall.ENODATA
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

func (n *frameNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	attrs, err := n.xattrs(ctx)
	if err != nil {
		return 0, errno("xattrs", err)
	}
	names := make([]string, 0, len(attrs))
	for k := range attrs {
		names = append(names, k)
	}
	sort.Strings(names)
	var b []byte
	for _, k := range names {
		b = append(append(b, k...), 0)
	}
	if len(dest) < len(b) {
		return uint32(len(b)), syscall.ERANGE
	}
	return uint32(copy(dest, b)), 0
}

// rowsFileNode is an episode's frames.jsonl or frames.parquet.
type rowsFileNode struct {
	fs.Inode
	readOnly
	s    *snapshotDir
	e    *table.EpisodeEntry
	name string
	rows []int64 // a view's rows; nil: all
}

func (n *rowsFileNode) OnForget() { n.s.t.m.stats.nodes.released() }

func (n *rowsFileNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	size, err := n.s.t.cat.rowsFileSize(ctx, n.s.snap, *n.e, n.name, n.rows)
	if err != nil {
		return errno(n.name, err)
	}
	fileAttr(n.s, n.e, &out.Attr, size)
	return 0
}

func (n *rowsFileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	data, err := n.s.t.cat.rowsFile(ctx, n.s.snap, *n.e, n.name, n.rows)
	if err != nil {
		return nil, 0, errno(n.name, err)
	}
	return &bytesHandle{data: data}, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}
