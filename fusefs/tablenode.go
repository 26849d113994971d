package fusefs

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/table"
)

// --- root: the warehouse ------------------------------------------------

// --- a table ----------------------------------------------------------------

// tableNode is TABLE/ (or the root of a one-table mount).
type tableNode struct {
	fs.Inode
	readOnly
	m    *mountFS
	tbl  *table.Table
	cat  *mounttree.Catalog
	path string
	// withStats adds .stats (the root of a one-table mount).
	withStats bool
	// staging holds the write directories (ingest, replace) unless the
	// mount is read-only.
	staging map[string]*stagingNode
	// live is set once the kernel knows the node.
	live atomic.Bool
	// viewList holds the views as last listed (see views.go).
	viewList viewList

	mu        sync.Mutex // guards the fields below
	ids       []int64
	tags      []table.Tag
	refreshed time.Time
	// former are the former heads whose folders the kernel has not yet
	// been asked to drop, oldest first (see forgetFolder).
	former []int64
}

// maxFormerHeads is how many former heads keep their folders in the
// kernel while they linger: a table that commits faster than the linger
// (a commit every 2 seconds against 10 seconds) would otherwise have
// its readers hold a folder per episode for each of five heads or more.
// One is enough for readers of latest to have moved on to the head: a
// reader opening paths through latest reaches the head at each open, and
// one that still walks an older head's folder finds it again with a
// lookup. In a 10-minute follower soak (a commit every 2 seconds, a
// reader of every episode of latest), two kept the nodes of 4 folders
// and files per episode and memory less the caches grew 13-16 KB per
// episode added; one, 3 and 7-8 KB (least squares after the warm-up).
const maxFormerHeads = 1

func newTableNode(ctx context.Context, m *mountFS, tbl *table.Table, path string) (*tableNode, error) {
	schema, err := tbl.LatestSchema(ctx)
	if err != nil {
		return nil, err
	}
	setting, err := m.opts.Image.settingFor(schema.Image)
	if err != nil {
		return nil, err
	}
	tn := &tableNode{m: m, tbl: tbl, path: path}
	tn.cat = mounttree.NewCatalog(m.bg, tbl, m.frames, setting.Normalize(), mounttree.CatalogOptions{
		Counters: &m.stats.catalog, Budgets: m.opts.metadataBudgets, TreeDropped: tn.treeDropped})
	m.mu.Lock()
	m.catalogs = append(m.catalogs, tn.cat)
	m.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.startStaging(tn); err != nil {
		return nil, fmt.Errorf("write directories of %s: %w", tbl, err)
	}
	return tn, nil
}

// committed makes a commit from a write directory visible at once:
// latest moves without waiting for the refresh interval.
func (n *tableNode) committed() {
	n.refresh(context.Background(), true)
	if n.live.Load() {
		go n.NotifyEntry(nameLatest)
	}
}

// refresh re-reads the snapshot and tag lists when they are older than
// the refresh interval (or force is set) and returns them.
func (n *tableNode) refresh(ctx context.Context, force bool) ([]int64, []table.Tag, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !force && time.Since(n.refreshed) < n.m.opts.Refresh && n.refreshed.After(time.Time{}) {
		return n.ids, n.tags, nil
	}
	ids, err := n.tbl.SnapshotIDs(ctx)
	if err != nil {
		return nil, nil, err
	}
	tags, err := n.tbl.Tags(ctx)
	if err != nil {
		return nil, nil, err
	}
	if prev := head(n.ids); prev != 0 && prev != head(ids) && n.live.Load() {
		n.former = append(n.former, prev)
		go n.lingerThenForget(prev)
		if len(n.former) > maxFormerHeads {
			// The notifications are sent apart: a lookup may hold
			// the kernel's lock of the folder they are about.
			go n.forgetFolder(n.former[0])
			n.former = slices.Delete(n.former, 0, 1)
		}
	}
	n.ids, n.tags, n.refreshed = ids, tags, time.Now()
	return ids, tags, nil
}

// lingerThenForget drops former head id's folder once it has lingered
// (forgetFormer), unless the mount is released first. It waits apart
// rather than on a timer's callback, which would keep the released
// mount's trees reachable until it fired.
func (n *tableNode) lingerThenForget(id int64) {
	t := time.NewTimer(n.m.opts.formerHeadLinger)
	defer t.Stop()
	select {
	case <-t.C:
		n.forgetFormer(id)
	case <-n.m.bg.Done():
	}
}

// forgetFormer asks the kernel to drop the folder of id, a former head,
// unless it was asked already (a head leaves former when it lingered
// long enough or when newer heads pushed it out, whichever comes first).
func (n *tableNode) forgetFormer(id int64) {
	n.mu.Lock()
	i := slices.Index(n.former, id)
	if i >= 0 {
		n.former = slices.Delete(n.former, i, i+1)
	}
	n.mu.Unlock()
	if i >= 0 {
		n.forgetFolder(id)
	}
}

// head is the newest of ids (ascending), or 0.
func head(ids []int64) int64 {
	if len(ids) == 0 {
		return 0
	}
	return ids[len(ids)-1]
}

// forgetFolder asks the kernel to drop its entry of snapshots/ID, a
// former head, some time after latest moved on. The entry is not stale
// (snapshots never change), but what readers of latest looked up under it
// is seldom used again, and the kernel would keep those entries, and the
// daemon their nodes and the snapshot's folder tree, until memory runs
// short: a mount that commits all day would hold the nodes of every head.
// The kernel drops the unused entries under it and forgets their nodes;
// open files stay open, files readers have since reached through the new
// head stay (they are one inode, with their page cache), and a reader still
// under the old folder finds it again with a lookup.
func (n *tableNode) forgetFolder(id int64) {
	if n.m.bg.Err() != nil {
		return // unmounted
	}
	sn := n.GetChild(nameSnapshots)
	if sn == nil {
		return
	}
	name := strconv.FormatInt(id, 10)
	if dir := sn.GetChild(name); dir != nil {
		invalidateTree(dir)
	}
	if sn.NotifyEntry(name) == 0 {
		sn.RmChild(name)
	}
}

// treeDropped is told when the catalog drops snapshot id's folder tree to
// keep at most MaxTrees. Folders the kernel still holds under snapshots/ID
// keep the tree alive through their nodes, and the kernel keeps them
// until memory runs short: a reader travelling through hundreds of
// snapshots would hold all their trees. So the kernel is asked to drop
// snapshots/ID as well (forgetFolder), unless it is the head, which
// latest shows. The cache's lock may be held here: the work is done apart.
func (n *tableNode) treeDropped(id int64) {
	if !n.live.Load() {
		return
	}
	go func() {
		if n.cat.KeepsTree(id) {
			return // looked up again meanwhile
		}
		n.mu.Lock()
		isHead := id == head(n.ids)
		n.mu.Unlock()
		if !isHead {
			n.forgetFolder(id)
		}
	}()
}

// invalidateTree asks the kernel to drop every entry under dir, deepest
// first: an entry the kernel drops is freed, and its node forgotten, only
// if nothing under it is left (invalidating a folder alone would leave
// its unused children cached until memory runs short).
func invalidateTree(dir *fs.Inode) {
	for name, child := range dir.Children() {
		if child.IsDir() {
			invalidateTree(child)
		}
		if dir.NotifyEntry(name) == 0 {
			// The kernel no longer has the name: unlink the node here
			// too, or a file also reached through the new head would
			// keep this folder, and its snapshot's tree, alive.
			dir.RmChild(name)
		}
	}
}

// snapshot returns a live snapshot, or ENOENT once expire removed it.
func (n *tableNode) snapshot(ctx context.Context, id int64) (*table.Snapshot, syscall.Errno) {
	ids, _, err := n.refresh(ctx, false)
	if err != nil {
		return nil, errno("list snapshots", err)
	}
	if !slices.Contains(ids, id) {
		if ids, _, err = n.refresh(ctx, true); err != nil {
			return nil, errno("list snapshots", err)
		}
		if !slices.Contains(ids, id) {
			return nil, syscall.ENOENT
		}
	}
	// The table keeps the snapshots it read, within a byte bound.
	s, err := n.tbl.Snapshot(ctx, id)
	if err != nil {
		return nil, errno(fmt.Sprintf("read snapshot %d", id), err)
	}
	return s, 0
}

func (n *tableNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(n.m, &out.Attr, n.m.started)
	return 0
}

const (
	nameLatest    = "latest"
	nameSnapshots = "snapshots"
	nameTags      = "tags"
)

func (n *tableNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	ids, _, err := n.refresh(ctx, false)
	if err != nil {
		return nil, errno("list snapshots", err)
	}
	var entries []fuse.DirEntry
	if len(ids) > 0 {
		entries = append(entries, fuse.DirEntry{Name: nameLatest, Mode: fuse.S_IFLNK, Ino: ino(n.path + "/" + nameLatest)})
	}
	entries = append(entries,
		fuse.DirEntry{Name: nameSnapshots, Mode: fuse.S_IFDIR, Ino: ino(n.path + "/" + nameSnapshots)},
		fuse.DirEntry{Name: nameTags, Mode: fuse.S_IFDIR, Ino: ino(n.path + "/" + nameTags)},
		fuse.DirEntry{Name: nameViews, Mode: fuse.S_IFDIR, Ino: ino(n.path + "/" + nameViews)})
	for _, name := range []string{nameIngest, nameReplace} {
		if n.staging[name] != nil {
			entries = append(entries, fuse.DirEntry{Name: name, Mode: fuse.S_IFDIR, Ino: ino(n.path + "/" + name)})
		}
	}
	if n.withStats {
		entries = append(entries, fuse.DirEntry{Name: statsName, Mode: fuse.S_IFREG, Ino: ino("/" + statsName)})
	}
	return fs.NewListDirStream(entries), 0
}

func (n *tableNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.m.stats.lookups.Add(1)
	path := n.path + "/" + name
	switch name {
	case nameLatest:
		ln := &latestNode{t: n}
		target, errno := ln.target(ctx)
		if errno != 0 {
			return nil, errno
		}
		ln.fill(ctx, &out.Attr)
		out.SetEntryTimeout(n.m.opts.Refresh / 2)
		out.SetAttrTimeout(n.m.opts.Refresh / 2)
		// The kernel caches symlink targets by inode, so each target gets
		// an inode of its own: a new head is a new inode, found at the
		// next lookup.
		return n.NewInode(ctx, ln, fs.StableAttr{Mode: fuse.S_IFLNK, Ino: ino(path + "->" + target)}), 0
	case nameSnapshots:
		dirAttr(n.m, &out.Attr, n.m.started)
		return n.NewInode(ctx, &snapshotsNode{t: n, path: path}, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: ino(path)}), 0
	case nameTags:
		dirAttr(n.m, &out.Attr, n.m.started)
		return n.NewInode(ctx, &tagsNode{t: n, path: path}, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: ino(path)}), 0
	case nameViews:
		vn := &viewsNode{t: n, path: path}
		vn.attr(&out.Attr)
		return n.NewInode(ctx, vn, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: ino(path)}), 0
	case nameIngest, nameReplace:
		if root := n.staging[name]; root != nil {
			var st syscall.Stat_t
			if err := syscall.Stat(root.st.Dir(), &st); err != nil {
				return nil, errno("staging directory", err)
			}
			out.Attr.FromStat(&st)
			return n.NewInode(ctx, root, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: ino(path)}), 0
		}
	case statsName:
		if n.withStats {
			return n.NewInode(ctx, &statsNode{m: n.m}, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino("/" + statsName)}), 0
		}
	}
	return nil, syscall.ENOENT
}

// latestNode is the symlink latest -> snapshots/HEAD.
type latestNode struct {
	fs.Inode
	readOnly
	t *tableNode
}

func (n *latestNode) target(ctx context.Context) (string, syscall.Errno) {
	ids, _, err := n.t.refresh(ctx, false)
	if err != nil {
		return "", errno("list snapshots", err)
	}
	if len(ids) == 0 {
		return "", syscall.ENOENT
	}
	return nameSnapshots + "/" + strconv.FormatInt(ids[len(ids)-1], 10), 0
}

func (n *latestNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	t, errno := n.target(ctx)
	return []byte(t), errno
}

func (n *latestNode) fill(ctx context.Context, a *fuse.Attr) {
	t, _ := n.target(ctx)
	a.Mode = fuse.S_IFLNK | 0o777
	a.Size = uint64(len(t))
	n.t.m.owner(a)
	a.SetTimes(nil, &n.t.m.started, &n.t.m.started)
}

func (n *latestNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if _, errno := n.target(ctx); errno != 0 {
		return errno
	}
	n.fill(ctx, &out.Attr)
	out.SetTimeout(n.t.m.opts.Refresh / 2)
	return 0
}

// snapshotsNode is snapshots/: one directory per live snapshot.
type snapshotsNode struct {
	fs.Inode
	readOnly
	t    *tableNode
	path string
}

func (n *snapshotsNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(n.t.m, &out.Attr, n.t.m.started)
	return 0
}

func (n *snapshotsNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	ids, _, err := n.t.refresh(ctx, false)
	if err != nil {
		return nil, errno("list snapshots", err)
	}
	entries := make([]fuse.DirEntry, len(ids))
	for i, id := range ids {
		name := strconv.FormatInt(id, 10)
		entries[i] = fuse.DirEntry{Name: name, Mode: fuse.S_IFDIR, Ino: ino(n.path + "/" + name)}
	}
	return fs.NewListDirStream(entries), 0
}

func (n *snapshotsNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.t.m.stats.lookups.Add(1)
	id, err := strconv.ParseInt(name, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != name {
		return nil, syscall.ENOENT
	}
	snap, errno := n.t.snapshot(ctx, id)
	if errno != 0 {
		return nil, errno
	}
	path := n.path + "/" + name
	// The snapshot's tree is built once, from its manifests, on first use.
	return n.t.m.child(ctx, &n.Inode, ino(path), fuse.S_IFDIR, out, func() treeNode { return &snapshotDir{t: n.t, snap: snap, path: path} })
}
