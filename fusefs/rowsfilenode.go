package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/table"
)

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
