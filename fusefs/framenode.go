package fusefs

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/table"
)

// frameInode makes the node of row's frame of n's video column under
// parent: the same inode wherever the frame is shown.
func (n *dirNode) frameInode(ctx context.Context, parent *fs.Inode, row int64, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	e := n.d.episode
	f := &frameNode{s: n.s, e: e, column: n.d.column, row: row}
	size, err := f.frameSize(ctx)
	if err != nil {
		return nil, errno("frame size", err)
	}
	fileAttr(n.s, e, &out.Attr, size)
	return parent.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: n.frameIno(n.d.column, row)}), 0
}

// frameNode is one frame image.
type frameNode struct {
	fs.Inode
	readOnly
	s      *snapshotDir
	e      *table.EpisodeEntry
	column string
	row    int64

	mu   sync.Mutex // guards size
	size int64      // 0 until known (no image is empty)
	// cached says the image was handed to the kernel's page cache (see
	// Open).
	cached atomic.Bool
}

func (n *frameNode) OnForget() { n.s.t.m.stats.nodes.released() }

func (n *frameNode) ref() table.VideoRef { return n.e.Videos[n.column] }

func (n *frameNode) ordinal() int { return int(n.ref().FirstFrame + n.row) }

// frameSize is the exact byte size of the image, known without decoding
// it: stored sizes, or those the catalog worked out for the whole video.
func (n *frameNode) frameSize(ctx context.Context) (int64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.size > 0 {
		return n.size, nil
	}
	set, identity := n.s.setting(n.ref())
	sizes, err := n.s.t.cat.frameSizesFor(ctx, n.ref(), set, identity)
	if err != nil {
		return 0, err
	}
	if n.ordinal() >= len(sizes) {
		return 0, fmt.Errorf("%w: frame %d of a %d-frame video", table.ErrCorrupt, n.ordinal(), len(sizes))
	}
	n.size = sizes[n.ordinal()]
	return n.size, nil
}

// fileAttr fills the attributes of a read-only file of episode e.
func fileAttr(s *snapshotDir, e *table.EpisodeEntry, a *fuse.Attr, size int64) {
	a.Mode = fuse.S_IFREG | 0o444
	a.Nlink = 1
	a.Size = uint64(size)
	a.Blocks = (a.Size + 511) / 512
	s.t.m.owner(a)
	t := e.Time
	if t.IsZero() {
		t = s.snap.Time // written before episodes had their own time
	}
	a.SetTimes(nil, &t, &t)
}

func (n *frameNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if _, err := n.frameSize(ctx); err != nil {
		return errno("frame size", err)
	}
	fileAttr(n.s, n.e, &out.Attr, n.size)
	out.SetTimeout(immutableTimeout)
	return 0
}

func (n *frameNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	m := n.s.t.m
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
	m := n.s.t.m
	size, err := n.frameSize(ctx)
	if err != nil {
		return nil, errno("frame size", err)
	}
	set, _ := n.s.setting(n.ref())
	data, err := n.s.t.cat.frameFor(ctx, n.ref(), n.e.Rows, n.ordinal(), set)
	if err != nil {
		m.stats.frameErrors.Add(1)
		return nil, errno(fmt.Sprintf("decode %s frame %d of episode %q", n.column, n.row, n.e.Episode), err)
	}
	if int64(len(data)) != size {
		// The size promised at stat time and the bytes differ: the
		// sizes came from another encoder build. Refuse rather than
		// serve a file whose length lies.
		m.stats.frameErrors.Add(1)
		return nil, errno("frame size", fmt.Errorf("%w: episode %q %s frame %d is %d bytes, %d were announced",
			table.ErrCorrupt, n.e.Episode, n.column, n.row, len(data), size))
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
	m := h.n.s.t.m
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

// xattrs returns the row's columns as user.* extended attributes.
func (n *frameNode) xattrs(ctx context.Context) (map[string][]byte, error) {
	rows, err := n.s.t.cat.episodeRows(ctx, n.s.snap, *n.e)
	if err != nil {
		return nil, err
	}
	return rows.xattrs(n.e.Episode, n.row)
}

func (n *frameNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if !strings.HasPrefix(attr, userXattrPrefix) {
		return noXattrs{}.Getxattr(ctx, attr, dest)
	}
	attrs, err := n.xattrs(ctx)
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
	attrs, err := n.xattrs(ctx)
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
