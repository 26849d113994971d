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

// OnForget drops the node from the live nodes, and counts it forgotten as
// every node of a tree is.
func (n *snapshotDir) OnForget() { n.t.m.forgotten(n) }

func (n *snapshotDir) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	root, errno := n.root(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	return openFolder(n.t.m, &n.Inode, root)
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

func (n *folderNode) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return openFolder(n.m, &n.Inode, n.f)
}

func (n *folderNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return lookupIn(ctx, n.m, &n.Inode, n.f, name, out)
}

// defaultMaxListedNodes is the largest listing whose entries are looked
// up as they are listed: READDIRPLUS hands the kernel every entry's
// attributes with its name, and the kernel keeps an inode, the daemon a
// node (about 600 bytes), for each. A larger folder, such as a partition
// of many episodes, is listed with names and types only: the kernel looks
// up the entries it then uses, one at a time, and listing costs no node
// per entry. Files are always listed so (folderHandle.Lookup).
const defaultMaxListedNodes = 4096

// errNotLookedUp answers READDIRPLUS's lookup of an entry it does not
// look up: the entry goes to the kernel without attributes (node id 0,
// which Linux takes as "not looked up", not as ENOENT), and the kernel
// asks for it by LOOKUP when a program stats it.
const errNotLookedUp = syscall.EAGAIN

// folderHandle is an open folder of a tree, whose node is parent. It lists
// the folder for READDIR and READDIRPLUS. READDIRPLUS also hands the
// kernel each entry's node and attributes, except in a listing of more
// than the mount's maxListedNodes entries (see defaultMaxListedNodes),
// for files, and for folders the kernel has already (see Lookup): listing
// an episode, as image-folder loaders and file managers do, decodes
// nothing and leaves no node per file.
// go-fuse calls a handle's methods one at a time.
type folderHandle struct {
	m      *mountFS
	parent *fs.Inode
	f      *mounttree.Folder
	// l is the listing's state, made at the first READDIR: an open of a
	// folder the kernel has listed before makes none (see openFolder).
	l *folderListing
}

// folderListing is where an open folder's listing is.
type folderListing struct {
	list  mounttree.Listing
	next  int  // index of the next entry to list
	large bool // more than maxListedNodes entries
	// listed is the entry Readdirent handed out last: go-fuse copies
	// what it keeps of it, so one serves the whole listing.
	listed fuse.DirEntry
}

// openFolder opens folder f of a tree, whose node is parent, for listing.
//
// A snapshot's or view's folder never changes, so the kernel may keep its
// listing (FOPEN_CACHE_DIR, with FOPEN_KEEP_CACHE so that a later open
// does not drop it): listing it again costs an OPENDIR and a RELEASEDIR,
// and no READDIR. A job that lists every episode folder of latest over
// and over, as a reader following a growing table does, no longer makes
// the daemon build and send each listing again: in the 2-minute follower
// soak the daemon allocated 1.9 KB per frame read instead of 3.4 KB.
func openFolder(m *mountFS, parent *fs.Inode, f *mounttree.Folder) (fs.FileHandle, uint32, syscall.Errno) {
	m.stats.foldersOpened.Add(1)
	return &folderHandle{m: m, parent: parent, f: f}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// listing returns the folder's listing, made once per handle.
func (h *folderHandle) listing(ctx context.Context) (*folderListing, syscall.Errno) {
	if h.l != nil {
		return h.l, 0
	}
	list, err := h.f.Listing(ctx)
	if err != nil {
		return nil, errno("list "+h.f.Path(), err)
	}
	h.l = &folderListing{list: list, large: list.Len() > h.m.maxListedNodes}
	h.m.stats.listingsMade.Add(1)
	return h.l, 0
}

// Readdirent returns the next entry; its offset is its position plus one.
// The listing's entries (mounttree.Listing) are made one at a time, into
// go-fuse's entry in listed: a reader that lists every episode folder of
// a growing table over and over allocates no entry per frame.
func (h *folderHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	l, errno := h.listing(ctx)
	if errno != 0 {
		return nil, errno
	}
	if l.next >= l.list.Len() {
		return nil, 0
	}
	e := l.list.At(l.next)
	l.next++
	mode := uint32(fuse.S_IFREG)
	if e.Folder {
		mode = fuse.S_IFDIR
	}
	l.listed = fuse.DirEntry{Name: e.Name, Mode: mode, Ino: e.Ino, Off: uint64(l.next)}
	return &l.listed, 0
}

// Seekdir continues the listing after the entry of offset off.
func (h *folderHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	l, errno := h.listing(ctx)
	if errno != 0 {
		return errno
	}
	if off > uint64(l.list.Len()) {
		return syscall.EINVAL
	}
	l.next = int(off)
	return 0
}

// Releasedir has the memory trimmed after a large listing (see
// nodeCounts.largeListing).
func (h *folderHandle) Releasedir(ctx context.Context, flags uint32) {
	if h.l != nil && h.l.large {
		h.m.stats.nodes.largeListing()
	}
}

// Lookup gives READDIRPLUS the node and attributes of the folder just
// listed, unless the listing is large.
//
// Files (frames, stored videos, rows files) are listed with names and
// types only. A node handed out with a listing lives until the kernel
// forgets it, which it does only under memory pressure: a job that lists
// every episode of a growing table and reads a few frames of each would
// otherwise keep a node (about 1.2 KB in the daemon, with the GC's
// headroom for it) for every file it ever listed, 280 KB per 30-frame
// episode in the follower soak when frames had nodes, 3 KB with its video
// and rows files alone. A program that stats or opens a file looks it up
// then; `ls -l` of an episode costs a LOOKUP per file instead of none (see
// README, Mounting). Folders keep their nodes: a program that lists a
// folder usually goes into its subfolders next.
//
// A folder whose node the daemon has is in the kernel already, with the
// same attributes (a snapshot's folders never change): listed again, it
// is left out too, which spares go-fuse the bookkeeping of another
// lookup of it (a third of what the mount allocated while readers listed
// partitions of a table taking commits) and the kernel a FORGET.
//
// go-fuse asks for the entry Readdirent returned last, whose type the
// listing has: a file costs no lookup at all.
func (h *folderHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if l := h.l; l == nil || l.large || l.next > 0 && l.listed.Name == name && l.listed.Mode&fuse.S_IFDIR == 0 {
		return nil, errNotLookedUp
	}
	if h.parent.GetChild(name) != nil {
		h.m.stats.lookupsKnown.Add(1)
		return nil, errNotLookedUp
	}
	item, err := h.f.Lookup(ctx, name)
	if err != nil {
		return nil, errno("look up "+name+" in "+h.f.Path(), err)
	}
	if _, ok := item.(*mounttree.File); ok {
		return nil, errNotLookedUp // an entry listed earlier (not expected)
	}
	return nodeOf(ctx, h.m, h.parent, item, out)
}

// lookupIn resolves name in folder f, whose node is parent: the node of
// what it names, with its attributes in out.
func lookupIn(ctx context.Context, m *mountFS, parent *fs.Inode, f *mounttree.Folder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if in := knownChild(ctx, m, parent, name, out); in != nil {
		return in, 0
	}
	item, err := f.Lookup(ctx, name)
	if err != nil {
		m.stats.lookups.Add(1)
		return nil, errno("look up "+name+" in "+f.Path(), err)
	}
	return nodeOf(ctx, m, parent, item, out)
}

// knownChild returns parent's node named name, with its attributes in
// out, if the daemon has one. A snapshot's or view's folder never
// changes, so the node is what looking the name up would find: a reader
// that goes through a partition of a growing table again and again would
// otherwise make a folder of the tree for each name, only to find its
// node.
func knownChild(ctx context.Context, m *mountFS, parent *fs.Inode, name string, out *fuse.EntryOut) *fs.Inode {
	in := parent.GetChild(name)
	if in == nil {
		return nil
	}
	node, ok := in.Operations().(treeNode)
	if !ok || node.attr(ctx, &out.Attr) != 0 {
		return nil // a lookup says what is wrong
	}
	m.stats.lookupsKnown.Add(1)
	found(m, out)
	return in
}

// found counts a lookup that found a snapshot's file or folder, and lets
// the kernel cache the entry and its attributes: snapshot contents never
// change.
func found(m *mountFS, out *fuse.EntryOut) {
	m.stats.lookups.Add(1)
	out.SetEntryTimeout(immutableTimeout)
	out.SetAttrTimeout(immutableTimeout)
}

// nodeOf returns the node of item, a folder or file found under parent,
// with its attributes in out.
func nodeOf(ctx context.Context, m *mountFS, parent *fs.Inode, item mounttree.Item, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	found(m, out)
	if folder, ok := item.(*mounttree.Folder); ok {
		return m.child(ctx, parent, folder.Ino(), fuse.S_IFDIR, out, func() treeNode { return &folderNode{m: m, f: folder} })
	}
	file := item.(*mounttree.File)
	in, errno := m.child(ctx, parent, file.Ino(), fuse.S_IFREG, out, func() treeNode {
		switch file.Kind() {
		case mounttree.FrameFile:
			return newFrameNode(m, file)
		case mounttree.VideoFile:
			return &videoFileNode{m: m, f: file}
		}
		return &metadataFileNode{m: m, f: file}
	})
	if errno != 0 {
		return nil, errno
	}
	if n, ok := in.Operations().(*frameNode); ok {
		// The node may have been made from a view's folder.
		n.showEveryFrame(file)
	}
	return in, 0
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
			if mode == fuse.S_IFREG {
				m.reachedAgain(in, parent)
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
