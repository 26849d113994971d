package fusefs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/internal/safetext"
	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/query/filter"
	"github.com/framefs/framefs/table"
)

// TABLE/views/ shows the table's views:
//
//	NAME -> .NAME@N-V     a symlink to the view's folder for snapshot N (the
//	                      head for a view that follows it, which moves like
//	                      latest); V names the version of the view object
//	NAME.where            the view's filter; writing a new NAME.where
//	                      creates view NAME (following the head)
//	NAME.error            why the filter written to NAME.where made no view
//	.NAME@N-V/            the view's frames: a snapshot folder holding only
//	                      the matching ones (not listed; reached through
//	                      the symlink)
//
// NAME is a symlink so that `rm -r views/NAME` deletes the view (rm removes
// a symlink without descending into it); `rm NAME.where` does too. Inside a
// view's folder everything is read-only.
const nameViews = "views"

// Suffixes of the files beside views.
const (
	whereSuffix = ".where"
	errorSuffix = ".error"
)

// viewList is a table's views as last listed, with the errors of filters
// written from a shell that made no view.
type viewList struct {
	mu        sync.Mutex // guards the fields below
	refreshed time.Time
	views     map[string]*mounttree.View
	broken    map[string]string // views this framefs cannot read: why
	failed    map[string]string // NAME -> NAME.error content
}

// views returns the table's views, re-listed when older than the refresh
// interval (or force is set).
func (n *tableNode) views(ctx context.Context, force bool) (map[string]*mounttree.View, error) {
	l := &n.viewList
	l.mu.Lock()
	defer l.mu.Unlock()
	if !force && l.views != nil && time.Since(l.refreshed) < n.m.opts.Refresh {
		return l.views, nil
	}
	views, errs, err := n.tbl.Views(ctx)
	if err != nil {
		return nil, err
	}
	fresh := map[string]*mounttree.View{}
	broken := map[string]string{}
	for i, v := range views {
		if errs[i] != nil {
			broken[v.Name] = errs[i].Error()
			continue
		}
		if old := l.views[v.Name]; old != nil && old.Def.Time.Equal(v.Time) && old.Def.Where == v.Where {
			fresh[v.Name] = old // keep its cached trees' identity
			continue
		}
		fresh[v.Name] = mounttree.NewView(v)
	}
	l.views, l.broken, l.refreshed = fresh, broken, time.Now()
	return fresh, nil
}

// viewFailed sets the text of NAME.error ("" removes it); what it echoes
// of the user's filter or name is escaped, so that cat NAME.error shows
// control characters rather than acting on them.
func (n *tableNode) viewFailed(name, msg string) {
	msg = safetext.Escape(msg)
	n.viewList.mu.Lock()
	defer n.viewList.mu.Unlock()
	if n.viewList.failed == nil {
		n.viewList.failed = map[string]string{}
	}
	if msg == "" {
		delete(n.viewList.failed, name)
	} else {
		n.viewList.failed[name] = msg
	}
}

func (n *tableNode) viewFailure(name string) (string, bool) {
	n.viewList.mu.Lock()
	defer n.viewList.mu.Unlock()
	msg, ok := n.viewList.failed[name]
	return msg, ok
}

// viewSnapshot returns the snapshot a view shows now.
func (n *tableNode) viewSnapshot(ctx context.Context, vc *mounttree.View) (int64, syscall.Errno) {
	if vc.Def.Snapshot != 0 {
		return vc.Def.Snapshot, 0
	}
	ids, _, err := n.refresh(ctx, false)
	if err != nil {
		return 0, errno("list snapshots", err)
	}
	if len(ids) == 0 {
		return 0, syscall.ENOENT
	}
	return ids[len(ids)-1], 0
}

// viewsNode is TABLE/views/.
type viewsNode struct {
	fs.Inode
	readOnly
	t    *tableNode
	path string
}

func (n *viewsNode) writable() bool { return !n.t.m.opts.ReadOnly }

func (n *viewsNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.attr(&out.Attr)
	return 0
}

func (n *viewsNode) attr(a *fuse.Attr) {
	dirAttr(n.t.m, a, n.t.m.started)
	if n.writable() {
		a.Mode = fuse.S_IFDIR | 0o755
	}
}

func (n *viewsNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	views, err := n.t.views(ctx, false)
	if err != nil {
		return nil, errno("list views", err)
	}
	names := make([]string, 0, len(views))
	for name := range views {
		names = append(names, name)
	}
	n.t.viewList.mu.Lock()
	for name := range n.t.viewList.failed {
		if views[name] == nil {
			names = append(names, name)
		}
	}
	n.t.viewList.mu.Unlock()
	slices.Sort(names)
	var entries []fuse.DirEntry
	for _, name := range names {
		if views[name] != nil {
			entries = append(entries,
				fuse.DirEntry{Name: name, Mode: fuse.S_IFLNK, Ino: ino(n.path + "/" + name)},
				fuse.DirEntry{Name: name + whereSuffix, Mode: fuse.S_IFREG, Ino: ino(n.path + "/" + name + whereSuffix)})
		} else {
			entries = append(entries, fuse.DirEntry{Name: name + errorSuffix, Mode: fuse.S_IFREG, Ino: ino(n.path + "/" + name + errorSuffix)})
		}
	}
	return fs.NewListDirStream(entries), 0
}

// view returns a view by name, listing the views again if it is not
// known yet.
func (n *viewsNode) view(ctx context.Context, name string) (*mounttree.View, syscall.Errno) {
	views, err := n.t.views(ctx, false)
	if err != nil {
		return nil, errno("list views", err)
	}
	if vc := views[name]; vc != nil {
		return vc, 0
	}
	if views, err = n.t.views(ctx, true); err != nil {
		return nil, errno("list views", err)
	}
	if vc := views[name]; vc != nil {
		return vc, 0
	}
	return nil, syscall.ENOENT
}

func (n *viewsNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	m := n.t.m
	m.stats.lookups.Add(1)
	path := n.path + "/" + name
	if view, snapID, version, ok := mounttree.ParseViewFolder(name); ok {
		vc, errno := n.view(ctx, view)
		if errno != 0 {
			return nil, errno
		}
		if vc.Version != version {
			return nil, syscall.ENOENT // an earlier view of that name
		}
		if vc.Def.Snapshot != 0 && vc.Def.Snapshot != snapID {
			return nil, syscall.ENOENT
		}
		snap, errno := n.t.snapshot(ctx, snapID)
		if errno != 0 {
			return nil, errno
		}
		// A view of one snapshot never changes: let the kernel cache it.
		out.SetEntryTimeout(immutableTimeout)
		out.SetAttrTimeout(immutableTimeout)
		return m.child(ctx, &n.Inode, ino(path), fuse.S_IFDIR, out, func() treeNode { return &snapshotDir{t: n.t, snap: snap, path: path, view: vc} })
	}
	out.SetEntryTimeout(m.opts.Refresh / 2)
	out.SetAttrTimeout(m.opts.Refresh / 2)
	if base, ok := strings.CutSuffix(name, errorSuffix); ok {
		msg, failed := n.t.viewFailure(base)
		if !failed {
			return nil, syscall.ENOENT
		}
		f := &viewTextNode{m: m, text: msg, mtime: time.Now()}
		f.fill(&out.Attr)
		return n.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino(path + "#" + msg)}), 0
	}
	if base, ok := strings.CutSuffix(name, whereSuffix); ok {
		vc, errno := n.view(ctx, base)
		if errno != 0 {
			return nil, errno
		}
		f := &viewTextNode{m: m, text: vc.Def.Where + "\n", mtime: vc.Def.Time}
		f.fill(&out.Attr)
		return n.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino(path + "@" + vc.Version)}), 0
	}
	vc, errno := n.view(ctx, name)
	if errno != 0 {
		return nil, errno
	}
	snapID, errno := n.t.viewSnapshot(ctx, vc)
	if errno != 0 {
		return nil, errno
	}
	target := vc.FolderName(snapID)
	ln := &symlinkNode{m: m, target: target, mtime: vc.Def.Time}
	ln.fill(&out.Attr)
	// One inode per target, as for latest: the kernel caches symlink
	// targets by inode.
	return n.NewInode(ctx, ln, fs.StableAttr{Mode: fuse.S_IFLNK, Ino: ino(path + "->" + target)}), 0
}

// Create makes NAME.where: what is written to it becomes view NAME's
// filter when the file is closed.
func (n *viewsNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if !n.writable() {
		return nil, nil, 0, syscall.EROFS
	}
	base, ok := strings.CutSuffix(name, whereSuffix)
	if !ok {
		return nil, nil, 0, syscall.EPERM // only NAME.where files are made here
	}
	if err := table.CheckViewName(base); err != nil {
		// A name that changes how listings read (U+202E, ...) gets no
		// NAME.error beside it: it is not shown at all.
		if !strings.ContainsFunc(base, safetext.Hidden) {
			n.t.viewFailed(base, err.Error()+"\n")
		}
		return nil, nil, 0, syscall.EINVAL
	}
	if _, errno := n.view(ctx, base); errno == 0 {
		return nil, nil, 0, syscall.EEXIST
	}
	f := &whereFileNode{views: n, name: base, created: time.Now()}
	f.fill(&out.Attr)
	inode := n.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino(n.path + "/" + name + "#new" + strconv.FormatInt(f.created.UnixNano(), 10))})
	return inode, &whereHandle{f: f}, fuse.FOPEN_DIRECT_IO, 0
}

// Unlink deletes a view (NAME, or NAME.where) or dismisses NAME.error.
func (n *viewsNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if !n.writable() {
		return syscall.EROFS
	}
	if base, ok := strings.CutSuffix(name, errorSuffix); ok {
		if _, failed := n.t.viewFailure(base); !failed {
			return syscall.ENOENT
		}
		n.t.viewFailed(base, "")
		return 0
	}
	base := strings.TrimSuffix(name, whereSuffix)
	if _, errno := n.view(ctx, base); errno != 0 {
		return errno
	}
	if err := n.t.tbl.DeleteView(ctx, base); err != nil {
		return errno("delete view "+base, err)
	}
	if _, err := n.t.views(ctx, true); err != nil {
		return errno("list views", err)
	}
	n.forget(base)
	return 0
}

// forget tells the kernel that a view's entries changed.
func (n *viewsNode) forget(name string) {
	for _, e := range []string{name, name + whereSuffix, name + errorSuffix} {
		go n.NotifyEntry(e)
	}
}

func (n *viewsNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if !n.writable() {
		return nil, syscall.EROFS
	}
	return nil, syscall.EPERM // views are made by writing NAME.where
}

// viewTextNode is a read-only text file: NAME.where or NAME.error.
type viewTextNode struct {
	fs.Inode
	readOnly
	m     *mountFS
	text  string
	mtime time.Time
}

func (n *viewTextNode) fill(a *fuse.Attr) {
	a.Mode = fuse.S_IFREG | 0o444
	a.Nlink = 1
	a.Size = uint64(len(n.text))
	n.m.owner(a)
	a.SetTimes(nil, &n.mtime, &n.mtime)
}

func (n *viewTextNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fill(&out.Attr)
	return 0
}

func (n *viewTextNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		// A view's filter is part of the immutable view: delete the view
		// and write the file anew to change it.
		return nil, 0, syscall.EEXIST
	}
	return &bytesHandle{data: []byte(n.text)}, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// whereFileNode is a NAME.where being written.
type whereFileNode struct {
	fs.Inode
	readOnly
	views   *viewsNode
	name    string
	created time.Time

	mu   sync.Mutex // guards the fields below
	data []byte
	// refused is the largest size a write or truncation asked for that
	// went over maxWhereBytes (0: none): the file holds a part of what was
	// written, which must not become a view.
	refused int64
	// done is set once the view was created: the file is its filter now.
	done bool
}

// maxWhereBytes bounds what a NAME.where takes (a filter is at most
// filter.MaxLength; a little more is accepted so that the error says so).
const maxWhereBytes = filter.MaxLength + 1024

func (n *whereFileNode) fill(a *fuse.Attr) {
	n.mu.Lock()
	size := len(n.data)
	n.mu.Unlock()
	a.Mode = fuse.S_IFREG | 0o644
	a.Nlink = 1
	a.Size = uint64(size)
	n.views.t.m.owner(a)
	a.SetTimes(nil, &n.created, &n.created)
}

func (n *whereFileNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fill(&out.Attr)
	return 0
}

// Setattr accepts truncation (shells truncate files they write to).
func (n *whereFileNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		n.mu.Lock()
		if n.done {
			n.mu.Unlock()
			return syscall.EEXIST
		}
		if size > maxWhereBytes {
			n.refused = max(n.refused, int64(size))
			n.mu.Unlock()
			return syscall.EFBIG
		}
		if int(size) <= len(n.data) {
			n.data = n.data[:size]
		} else {
			n.data = append(n.data, make([]byte, int(size)-len(n.data))...)
		}
		n.mu.Unlock()
	}
	n.fill(&out.Attr)
	return 0
}

func (n *whereFileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return &whereHandle{f: n}, fuse.FOPEN_DIRECT_IO, 0
}

// whereHandle writes a NAME.where; the filter is checked, and the view
// created, when the file is closed (at FLUSH, so before close returns).
type whereHandle struct {
	f *whereFileNode
}

func (h *whereHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n := h.f
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done {
		return 0, syscall.EEXIST
	}
	end := off + int64(len(data))
	if end > maxWhereBytes {
		n.refused = max(n.refused, end)
		return 0, syscall.EFBIG
	}
	if end > int64(len(n.data)) {
		n.data = append(n.data, make([]byte, end-int64(len(n.data)))...)
	}
	copy(n.data[off:], data)
	return uint32(len(data)), 0
}

func (h *whereHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n := h.f
	n.mu.Lock()
	defer n.mu.Unlock()
	return fuse.ReadResultData(sliceAt(n.data, dest, off)), 0
}

func (h *whereHandle) Flush(ctx context.Context) syscall.Errno {
	n := h.f
	n.mu.Lock()
	if n.done {
		n.mu.Unlock()
		return 0
	}
	text := strings.TrimSpace(string(n.data))
	refused := n.refused
	n.mu.Unlock()
	t := n.views.t
	if refused > 0 {
		// What the file holds is a part of the filter: no view.
		t.viewFailed(n.name, fmt.Sprintf("the filter written to %s.where is longer than the %d bytes a filter may have (a write up to byte %d was refused with EFBIG); no view was made\n",
			n.name, filter.MaxLength, refused))
	} else if _, err := query.CreateView(ctx, t.tbl, table.View{Name: n.name, Where: text}); err != nil {
		msg := err.Error()
		if errors.Is(err, table.ErrExists) {
			msg = fmt.Sprintf("view %q exists already; delete it (rm -r views/%s) to define it anew", n.name, n.name)
		}
		t.viewFailed(n.name, fmt.Sprintf("%s\nfilter: %s\n", msg, clipText(text)))
	} else {
		t.viewFailed(n.name, "")
		n.mu.Lock()
		n.done = true
		n.mu.Unlock()
	}
	if _, err := t.views(ctx, true); err != nil {
		return errno("list views", err)
	}
	n.views.forget(n.name)
	return 0
}

func (h *whereHandle) Release(ctx context.Context) syscall.Errno { return 0 }

// clipText shortens a filter quoted in a NAME.error file.
func clipText(s string) string {
	if len(s) <= 200 {
		return s
	}
	return s[:200] + fmt.Sprintf("... (%d bytes)", len(s))
}
