package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/mounttree"
)

// metadataFileNode is a file of a tree whose bytes the catalog makes from
// rows: an episode's frames.jsonl or frames.parquet, a clip's clip.json,
// a clip view's clips.jsonl or clips.txt.
type metadataFileNode struct {
	fs.Inode
	readOnly
	m *mountFS
	f *mounttree.File
}

func (n *metadataFileNode) OnForget() { n.m.forgotten(n) }

func (n *metadataFileNode) attr(ctx context.Context, a *fuse.Attr) syscall.Errno {
	return fileAttr(ctx, n.m, n.f, a)
}

func (n *metadataFileNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.SetTimeout(immutableTimeout)
	return n.attr(ctx, &out.Attr)
}

func (n *metadataFileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	data, err := n.f.Content(ctx)
	if err != nil {
		return nil, 0, errno(n.f.String(), err)
	}
	return &bytesHandle{data: data}, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}
