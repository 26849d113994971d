package fusefs

import (
	"context"
	"log/slog"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/table"
)

type rootNode struct {
	fs.Inode
	readOnly
	m  *mountFS
	wh Warehouse

	mu     sync.Mutex // guards tables, and opening one
	tables map[string]*tableNode
}

const statsName = ".stats"

func (n *rootNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(n.m, &out.Attr, n.m.started)
	return 0
}

func (n *rootNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	names, err := n.wh.Tables(ctx)
	if err != nil {
		return nil, errno("list tables", err)
	}
	entries := []fuse.DirEntry{{Name: statsName, Mode: fuse.S_IFREG, Ino: ino("/" + statsName)}}
	for _, name := range names {
		entries = append(entries, fuse.DirEntry{Name: name, Mode: fuse.S_IFDIR, Ino: ino("/" + name)})
	}
	return fs.NewListDirStream(entries), 0
}

func (n *rootNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.m.stats.lookups.Add(1)
	if name == statsName {
		return n.NewInode(ctx, &statsNode{m: n.m}, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino("/" + statsName)}), 0
	}
	if table.CheckName("table", name) != nil {
		return nil, syscall.ENOENT
	}
	tn, err := n.table(ctx, name)
	if err != nil {
		return nil, errno("open table "+name, err)
	}
	dirAttr(n.m, &out.Attr, n.m.started)
	in := n.NewInode(ctx, tn, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: ino(tn.path)})
	tn.live.Store(true)
	return in, 0
}

// table returns the node of a table, opening the table on first use.
// There is one node per table for the life of the mount, so one set of
// write directories (two stagers on one directory would commit twice).
func (n *rootNode) table(ctx context.Context, name string) (*tableNode, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if tn := n.tables[name]; tn != nil {
		return tn, nil
	}
	tbl, err := n.wh.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	tn, err := newTableNode(ctx, n.m, tbl, "/"+name)
	if err != nil {
		return nil, err
	}
	n.tables[name] = tn
	return tn, nil
}

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
