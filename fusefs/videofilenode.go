package fusefs

import (
	"context"
	"fmt"
	"io"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/table"
)

// An episode folder shows each of its stored videos as a file,
// VIDEOCOLUMN.mp4 (video.mp4 for the default column): the payload byte for
// byte, read by ranges from its pack, for GPU decoders and video readers
// (DALI, torchcodec, PyAV, ffprobe) and for copying the original out. When
// several episodes share one stored video (each from its own first frame),
// the file is the whole video; frames.jsonl says which frames are the
// episode's.

// videoFileNode is one stored video.
type videoFileNode struct {
	fs.Inode
	readOnly
	m *mountFS
	f *mounttree.File
}

func (n *videoFileNode) OnForget() { n.m.forgotten(n) }

func (n *videoFileNode) attr(ctx context.Context, a *fuse.Attr) syscall.Errno {
	return fileAttr(ctx, n.m, n.f, a)
}

func (n *videoFileNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.SetTimeout(immutableTimeout)
	return n.attr(ctx, &out.Attr)
}

func (n *videoFileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	size, err := n.f.Size(ctx)
	if err != nil {
		return nil, 0, errno(n.f.String(), err)
	}
	r, err := n.f.Video(ctx)
	if err != nil {
		return nil, 0, errno("open stored video", err)
	}
	return &videoHandle{n: n, r: r, size: size}, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// videoHandle reads an open stored video from its pack.
type videoHandle struct {
	n    *videoFileNode
	r    io.ReaderAt
	size int64
}

func (h *videoHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= h.size {
		return fuse.ReadResultData(nil), 0
	}
	want := min(int64(len(dest)), h.size-off)
	got, err := h.r.ReadAt(dest[:want], off)
	if int64(got) < want {
		if err == nil {
			err = fmt.Errorf("%w: short read of a stored video", table.ErrCorrupt)
		}
		return nil, errno("read "+h.n.f.String(), err)
	}
	h.n.m.stats.videoBytes.Add(int64(got))
	return fuse.ReadResultData(dest[:got]), 0
}
