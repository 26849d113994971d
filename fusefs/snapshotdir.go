package fusefs

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
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
