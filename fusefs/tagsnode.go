package fusefs

import (
	"context"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/table"
)

// Managing tables and tags from the mount: mkdir MOUNT/NEWTABLE creates
// a table, ln -s ../snapshots/N TABLE/tags/NAME creates a tag and
// rm TABLE/tags/NAME deletes one. Read-only mounts refuse all three.

// tagsNode is tags/: one symlink per tag.
type tagsNode struct {
	fs.Inode
	readOnly
	t    *tableNode
	path string
}

func (n *tagsNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(n.t.m, &out.Attr, n.t.m.started)
	return 0
}

func (n *tagsNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	_, tags, err := n.t.refresh(ctx, false)
	if err != nil {
		return nil, errno("list tags", err)
	}
	entries := make([]fuse.DirEntry, len(tags))
	for i, tg := range tags {
		entries[i] = fuse.DirEntry{Name: tg.Name, Mode: fuse.S_IFLNK, Ino: ino(n.path + "/" + tg.Name)}
	}
	return fs.NewListDirStream(entries), 0
}

func (n *tagsNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.t.m.stats.lookups.Add(1)
	_, tags, err := n.t.refresh(ctx, false)
	if err != nil {
		return nil, errno("list tags", err)
	}
	i := slices.IndexFunc(tags, func(tg table.Tag) bool { return tg.Name == name })
	if i < 0 {
		_, tags, err = n.t.refresh(ctx, true)
		if err != nil {
			return nil, errno("list tags", err)
		}
		if i = slices.IndexFunc(tags, func(tg table.Tag) bool { return tg.Name == name }); i < 0 {
			return nil, syscall.ENOENT
		}
	}
	target := "../" + nameSnapshots + "/" + strconv.FormatInt(tags[i].Snapshot, 10)
	ln := &symlinkNode{m: n.t.m, target: target, mtime: tags[i].Time}
	ln.fill(&out.Attr)
	return n.NewInode(ctx, ln, fs.StableAttr{Mode: fuse.S_IFLNK, Ino: ino(n.path + "/" + name + "->" + target)}), 0
}

// Symlink creates a tag for the snapshot the target names.
func (n *tagsNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.t.m.opts.ReadOnly || n.t.m.opts.StagingDir == "" {
		return nil, syscall.EROFS
	}
	id, ok := tagTarget(target)
	if !ok {
		slog.Info("framefs: refused tag", "tag", name, "target", target, "why", "a tag links to ../snapshots/N")
		return nil, syscall.EINVAL
	}
	if _, err := n.t.tbl.CreateTag(ctx, name, id); err != nil {
		return nil, errno("create tag "+name, err)
	}
	if _, _, err := n.t.refresh(ctx, true); err != nil {
		return nil, errno("list tags", err)
	}
	return n.Lookup(ctx, name, out)
}

// Unlink deletes a tag (the snapshot stays).
func (n *tagsNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if n.t.m.opts.ReadOnly || n.t.m.opts.StagingDir == "" {
		return syscall.EROFS
	}
	if err := n.t.tbl.DeleteTag(ctx, name); err != nil {
		return errno("delete tag "+name, err)
	}
	n.t.refresh(ctx, true)
	return 0
}

// tagTarget reads the snapshot id from a symlink target: ../snapshots/N
// as tags show them, snapshots/N, a path ending in snapshots/N, or N.
func tagTarget(target string) (int64, bool) {
	clean := path.Clean(target)
	last := path.Base(clean)
	if dir := path.Dir(clean); dir != "." && path.Base(dir) != nameSnapshots {
		return 0, false
	}
	id, err := strconv.ParseInt(last, 10, 64)
	return id, err == nil && id > 0
}

// symlinkNode is a fixed symlink.
type symlinkNode struct {
	fs.Inode
	readOnly
	m      *mountFS
	target string
	mtime  time.Time
}

func (n *symlinkNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	return []byte(n.target), 0
}

func (n *symlinkNode) fill(a *fuse.Attr) {
	a.Mode = fuse.S_IFLNK | 0o777
	a.Size = uint64(len(n.target))
	n.m.owner(a)
	a.SetTimes(nil, &n.mtime, &n.mtime)
}

func (n *symlinkNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fill(&out.Attr)
	return 0
}
