package fusefs

import (
	"context"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/mounttree"
)

// frameNode is one frame image.
type frameNode struct {
	fs.Inode
	readOnly
	m *mountFS
	// f is the frame's file, as the folder it was found in shows it
	// (see showEveryFrame).
	f atomic.Pointer[mounttree.File]
	// cached says the image was handed to the kernel's page cache (see
	// Open).
	cached atomic.Bool
}

func newFrameNode(m *mountFS, f *mounttree.File) *frameNode {
	n := &frameNode{m: m}
	n.f.Store(f)
	return n
}

// showEveryFrame has the node serve its frame as f, the same frame found
// in a folder that shows every frame of its episode, where the node was
// made from a view's folder that shows some (mounttree.File.Subsampled):
// a frame a view shares with its snapshot is one node, and the frame
// server then fills its GOPs for a reader of every frame.
func (n *frameNode) showEveryFrame(f *mounttree.File) {
	if old := n.f.Load(); old.Subsampled() && !f.Subsampled() {
		n.f.CompareAndSwap(old, f)
	}
}

func (n *frameNode) OnForget() { n.m.forgotten(n) }

func (n *frameNode) attr(ctx context.Context, a *fuse.Attr) syscall.Errno {
	return fileAttr(ctx, n.m, n.f.Load(), a)
}

func (n *frameNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.SetTimeout(immutableTimeout)
	return n.attr(ctx, &out.Attr)
}

func (n *frameNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	m := n.m
	const openFlags = fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH
	if n.cached.Load() {
		// An earlier open gave the kernel the image, which it keeps
		// (FOPEN_KEEP_CACHE) unless it needed the memory: make the
		// image again only if a READ asks for it. A loader's second
		// epoch decodes nothing while the page cache holds the frames.
		m.stats.framesServed.Add(1)
		return &frameHandle{n: n}, openFlags, 0
	}
	data, errno := n.image(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	m.stats.framesServed.Add(1)
	m.stats.bytesServed.Add(int64(len(data)))
	if !n.cached.Swap(true) {
		// Store the whole image in the page cache now: the reader's
		// reads are then served by the kernel, instead of a READ
		// round trip per readahead window (2 for a 40 KB JPEG, 10 for a
		// 900 KB BMP). If the kernel drops the pages later, READ
		// serves them again.
		n.WriteCache(0, data)
	}
	return &frameHandle{n: n, data: data}, openFlags, 0
}

// image returns the frame's encoded image, checked against the size stat
// announced.
func (n *frameNode) image(ctx context.Context) ([]byte, syscall.Errno) {
	f := n.f.Load()
	if _, err := f.Size(ctx); err != nil {
		return nil, errno("frame size", err)
	}
	data, err := f.Content(ctx)
	if err != nil {
		n.m.stats.frameErrors.Add(1)
		return nil, errno(f.String(), err)
	}
	return data, 0
}

// frameHandle serves an open frame. READs come only for pages the kernel
// does not hold: after the image stored at the first open was dropped, or
// when the store failed. data is the image made at open, if it was; a
// handle opened without one makes the image for each READ (usually from
// the image cache).
type frameHandle struct {
	n    *frameNode
	data []byte
}

func (h *frameHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	m := h.n.m
	m.stats.frameReads.Add(1)
	if h.data != nil {
		return fuse.ReadResultData(sliceAt(h.data, dest, off)), 0
	}
	data, errno := h.n.image(ctx)
	if errno != 0 {
		return nil, errno
	}
	part := sliceAt(data, dest, off)
	m.stats.bytesServed.Add(int64(len(part)))
	return fuse.ReadResultData(part), 0
}

func (n *frameNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if !strings.HasPrefix(attr, mounttree.UserXattrPrefix) {
		return noXattrs{}.Getxattr(ctx, attr, dest)
	}
	attrs, err := n.f.Load().Xattrs(ctx)
	if err != nil {
		return 0, errno("xattrs", err)
	}
	v, ok := attrs[attr]
	if !ok {
		return 0, syscall.ENODATA
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

func (n *frameNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	attrs, err := n.f.Load().Xattrs(ctx)
	if err != nil {
		return 0, errno("xattrs", err)
	}
	names := make([]string, 0, len(attrs))
	for k := range attrs {
		names = append(names, k)
	}
	sort.Strings(names)
	var b []byte
	for _, k := range names {
		b = append(append(b, k...), 0)
	}
	if len(dest) < len(b) {
		return uint32(len(b)), syscall.ERANGE
	}
	return uint32(copy(dest, b)), 0
}
