package fusefs

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/table"
)

// immutableTimeout is how long the kernel may cache entries and attributes
// of snapshot contents, which never change.
const immutableTimeout = time.Hour

// snapshotDir is snapshots/N/. Its tree comes from the catalog, which
// reads the snapshot's manifests when its folders are first listed or
// looked up.
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
	view *mounttree.View
}

// root returns the top folder of n's tree.
func (n *snapshotDir) root(ctx context.Context) (*mounttree.Folder, syscall.Errno) {
	if n.view != nil {
		st, err := n.t.cat.ViewTree(ctx, n.view, n.snap)
		if err != nil {
			return nil, errno(fmt.Sprintf("view %s of snapshot %d", n.view.Def.Name, n.snap.ID), err)
		}
		return st.Root(n.path), 0
	}
	st, err := n.t.cat.SnapshotTree(ctx, n.snap)
	if err != nil {
		return nil, errno(fmt.Sprintf("list snapshot %d", n.snap.ID), err)
	}
	return st.Root(n.path), 0
}

func (n *snapshotDir) attr(ctx context.Context, a *fuse.Attr) syscall.Errno {
	dirAttr(n.t.m, a, n.snap.Time)
	return 0
}

func (n *snapshotDir) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	return n.attr(ctx, &out.Attr)
}

// OnForget drops the node from the live nodes.
func (n *snapshotDir) OnForget() { n.t.m.live.forget(n.StableAttr().Ino) }

func (n *snapshotDir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	return dirStream(n.entries(ctx))
}

// entries lists the top folder of n's tree.
func (n *snapshotDir) entries(ctx context.Context) ([]fuse.DirEntry, syscall.Errno) {
	root, errno := n.root(ctx)
	if errno != 0 {
		return nil, errno
	}
	return listFolder(ctx, root)
}

// OpendirHandle opens n for listing (see treeDir).
func (n *snapshotDir) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return &treeDir{m: n.t.m, list: n.entries, lookup: n.Lookup}, 0, 0
}

func (n *snapshotDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	root, errno := n.root(ctx)
	if errno != 0 {
		return nil, errno
	}
	return lookupIn(ctx, n.t.m, &n.Inode, root, name, out)
}

// folderNode is a folder inside a snapshot's or view's folder: a
// partition, an episode, an episode's video column, or a clip.
type folderNode struct {
	fs.Inode
	readOnly
	m *mountFS
	f *mounttree.Folder
}

// OnForget releases the node's memory accounting; see nodeCounts.
func (n *folderNode) OnForget() { n.m.forgotten(n) }

func (n *folderNode) attr(ctx context.Context, a *fuse.Attr) syscall.Errno {
	dirAttr(n.m, a, n.f.Time())
	return 0
}

func (n *folderNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	return n.attr(ctx, &out.Attr)
}

func (n *folderNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	return dirStream(listFolder(ctx, n.f))
}

// OpendirHandle opens n for listing (see treeDir).
func (n *folderNode) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	list := func(ctx context.Context) ([]fuse.DirEntry, syscall.Errno) { return listFolder(ctx, n.f) }
	return &treeDir{m: n.m, list: list, lookup: n.Lookup}, 0, 0
}

func (n *folderNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return lookupIn(ctx, n.m, &n.Inode, n.f, name, out)
}

// listFolder lists a folder of a tree.
func listFolder(ctx context.Context, f *mounttree.Folder) ([]fuse.DirEntry, syscall.Errno) {
	list, err := f.List(ctx)
	if err != nil {
		return nil, errno("list "+f.Path(), err)
	}
	entries := make([]fuse.DirEntry, len(list))
	for i, e := range list {
		mode := uint32(fuse.S_IFREG)
		if e.Folder {
			mode = fuse.S_IFDIR
		}
		entries[i] = fuse.DirEntry{Name: e.Name, Mode: mode, Ino: e.Ino}
	}
	return entries, 0
}

func dirStream(entries []fuse.DirEntry, errno syscall.Errno) (fs.DirStream, syscall.Errno) {
	if errno != 0 {
		return nil, errno
	}
	return fs.NewListDirStream(entries), 0
}

// defaultMaxListedNodes is the largest listing whose entries are looked
// up as they are listed: READDIRPLUS hands the kernel every entry's
// attributes with its name, and the kernel keeps an inode, the daemon a
// node (about 600 bytes), for each. A larger folder, a partition of many
// episodes or an episode of many frames, is listed with names and types
// only: the kernel looks up the entries it then uses, one at a time, and
// listing costs no node per entry.
const defaultMaxListedNodes = 4096

// errNotLookedUp answers READDIRPLUS's lookup of an entry of a listing
// larger than the mount's maxListedNodes: the entry goes to the kernel
// without attributes (node id 0, which Linux takes as "not looked up",
// not as ENOENT).
const errNotLookedUp = syscall.EAGAIN

// treeDir is an open folder of a tree: its listing, made when it is first
// read, and the lookups READDIRPLUS asks for each entry listed, which it
// declines for a listing of more than the mount's maxListedNodes entries
// (and has the memory trimmed when such a listing is closed). go-fuse
// calls a handle's methods one at a time.
type treeDir struct {
	m      *mountFS
	list   func(ctx context.Context) ([]fuse.DirEntry, syscall.Errno)
	lookup func(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno)
	ds     fs.DirStream
	large  bool // more than maxListedNodes entries
}

// open makes the listing, once.
func (d *treeDir) open(ctx context.Context) syscall.Errno {
	if d.ds != nil {
		return 0
	}
	entries, errno := d.list(ctx)
	if errno != 0 {
		return errno
	}
	d.ds, d.large = fs.NewListDirStream(entries), len(entries) > d.m.maxListedNodes
	return 0
}

func (d *treeDir) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if errno := d.open(ctx); errno != 0 {
		return nil, errno
	}
	if !d.ds.HasNext() {
		return nil, 0
	}
	e, errno := d.ds.Next()
	return &e, errno
}

func (d *treeDir) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if errno := d.open(ctx); errno != 0 {
		return errno
	}
	return d.ds.(fs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *treeDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.large {
		return nil, errNotLookedUp
	}
	return d.lookup(ctx, name, out)
}

func (d *treeDir) Releasedir(ctx context.Context, releaseFlags uint32) {
	if d.ds != nil {
		d.ds.Close()
	}
	if d.large {
		d.m.stats.nodes.largeListing()
	}
}

// lookupIn resolves name in folder f, whose node is parent: the node of
// what it names, with its attributes in out.
func lookupIn(ctx context.Context, m *mountFS, parent *fs.Inode, f *mounttree.Folder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	m.stats.lookups.Add(1)
	item, err := f.Lookup(ctx, name)
	if err != nil {
		return nil, errno("look up "+name+" in "+f.Path(), err)
	}
	// Snapshot contents never change: let the kernel cache them.
	out.SetEntryTimeout(immutableTimeout)
	out.SetAttrTimeout(immutableTimeout)
	if folder, ok := item.(*mounttree.Folder); ok {
		return m.child(ctx, parent, folder.Ino(), fuse.S_IFDIR, out, func() treeNode { return &folderNode{m: m, f: folder} })
	}
	file := item.(*mounttree.File)
	return m.child(ctx, parent, file.Ino(), fuse.S_IFREG, out, func() treeNode {
		switch file.Kind() {
		case mounttree.FrameFile:
			return &frameNode{m: m, f: file}
		case mounttree.VideoFile:
			return &videoFileNode{m: m, f: file}
		}
		return &metadataFileNode{m: m, f: file}
	})
}

// treeNode is a node of a snapshot's or view's folder.
type treeNode interface {
	fs.InodeEmbedder
	// attr fills the node's attributes.
	attr(ctx context.Context, a *fuse.Attr) syscall.Errno
}

// child returns the node of inode ino (of type mode) for a lookup under
// parent, with its attributes in out: the node the daemon has for the
// inode if it has one, else the one newNode makes.
func (m *mountFS) child(ctx context.Context, parent *fs.Inode, ino uint64, mode uint32, out *fuse.EntryOut, newNode func() treeNode) (*fs.Inode, syscall.Errno) {
	if in := m.live.get(ino); in != nil {
		if node, ok := in.Operations().(treeNode); ok && in.StableAttr().Mode == mode {
			if errno := node.attr(ctx, &out.Attr); errno != 0 {
				return nil, errno
			}
			return in, 0
		}
	}
	node := newNode()
	if errno := node.attr(ctx, &out.Attr); errno != 0 {
		return nil, errno
	}
	m.stats.nodesMade.Add(1)
	return m.live.add(parent.NewInode(ctx, node, fs.StableAttr{Mode: mode, Ino: ino})), 0
}

// forgotten is told of a node of a tree the kernel forgot: it leaves the
// live nodes and counts for the memory trim (see nodeCounts).
func (m *mountFS) forgotten(node fs.InodeEmbedder) {
	m.live.forget(node.EmbeddedInode().StableAttr().Ino)
	m.stats.nodes.released()
}

// fileAttr fills the attributes of a read-only file of a tree.
func fileAttr(ctx context.Context, m *mountFS, f *mounttree.File, a *fuse.Attr) syscall.Errno {
	size, err := f.Size(ctx)
	if err != nil {
		return errno("size of "+f.String(), err)
	}
	a.Mode = fuse.S_IFREG | 0o444
	a.Nlink = 1
	a.Size = uint64(size)
	a.Blocks = (a.Size + 511) / 512
	m.owner(a)
	mtime := f.Time()
	a.SetTimes(nil, &mtime, &mtime)
	return 0
}
