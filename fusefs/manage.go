package fusefs

import (
	"context"
	"log/slog"
	"path"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/table"
)

// Managing tables and tags from the mount: mkdir MOUNT/NEWTABLE creates
// a table, ln -s ../snapshots/N TABLE/tags/NAME creates a tag and
// rm TABLE/tags/NAME deletes one. Read-only mounts refuse all three.

// Mkdir creates an empty table; its columns come from its first sidecar
// (or a schema.json) dropped into NEWTABLE/ingest/.
func (n *rootNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.m.opts.ReadOnly || n.m.opts.StagingDir == "" {
		return nil, syscall.EROFS
	}
	if err := table.CheckName("table", name); err != nil {
		return nil, errno("create table", err)
	}
	if _, err := n.wh.Create(ctx, name); err != nil {
		return nil, errno("create table "+name, err)
	}
	slog.Info("created table", "table", name)
	return n.Lookup(ctx, name, out)
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
