package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/table"
)

// isClipFolder reports whether n is a clip's folder (which holds
// clip.json), rather than the frames folder of one of its video columns.
func (n *dirNode) isClipFolder() bool {
	return n.d.clip != nil && (n.d.column == "" || len(n.tree.schema.VideoColumns) == 1)
}

// clipEntries lists a clip folder: its frames, in window order, and
// clip.json.
func (n *dirNode) clipEntries() []fuse.DirEntry {
	var entries []fuse.DirEntry
	if n.d.column != "" {
		ext := n.ext()
		for j, row := range n.d.clip.frames {
			entries = append(entries, fuse.DirEntry{Name: clipFrameName(j, len(n.d.clip.frames), ext),
				Mode: fuse.S_IFREG, Ino: n.frameIno(n.d.column, row)})
		}
	}
	if n.isClipFolder() {
		entries = append(entries, fuse.DirEntry{Name: clipJSON, Mode: fuse.S_IFREG, Ino: n.clipJSONIno()})
	}
	return entries
}

// lookupClip resolves a name in a clip folder.
func (n *dirNode) lookupClip(ctx context.Context, parent *fs.Inode, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	e := n.d.episode
	if name == clipJSON && n.isClipFolder() {
		f := &clipJSONNode{s: n.s, e: e, clip: n.d.clip}
		size, err := n.s.t.cat.clipJSONSize(ctx, n.s.snap, *e, n.d.clip)
		if err != nil {
			return nil, errno(clipJSON, err)
		}
		fileAttr(n.s, e, &out.Attr, size)
		return parent.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: n.clipJSONIno()}), 0
	}
	if n.d.column == "" {
		return nil, syscall.ENOENT
	}
	j, ok := parseClipFrameName(name, len(n.d.clip.frames), n.ext())
	if !ok {
		return nil, syscall.ENOENT
	}
	return n.frameInode(ctx, parent, n.d.clip.frames[j], out)
}

// clipJSONIno is the inode number of a clip's clip.json: its content is
// the episode version's rows at the clip's frames.
func (n *dirNode) clipJSONIno() uint64 {
	return episodeFileIno(n.d.episode, n.s.snap.SchemaID, clipJSON, ordinalsKey(n.d.clip.frames))
}

// clipJSONNode is a clip's clip.json.
type clipJSONNode struct {
	fs.Inode
	readOnly
	s    *snapshotDir
	e    *table.EpisodeEntry
	clip *clipWindow
}

func (n *clipJSONNode) OnForget() { n.s.t.m.stats.nodes.released() }

func (n *clipJSONNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	size, err := n.s.t.cat.clipJSONSize(ctx, n.s.snap, *n.e, n.clip)
	if err != nil {
		return errno(clipJSON, err)
	}
	fileAttr(n.s, n.e, &out.Attr, size)
	out.SetTimeout(immutableTimeout)
	return 0
}

func (n *clipJSONNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	data, err := n.s.t.cat.clipJSON(ctx, n.s.snap, *n.e, n.clip)
	if err != nil {
		return nil, 0, errno(clipJSON, err)
	}
	return &bytesHandle{data: data}, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// clipListNode is a clip view's clips.jsonl or clips.txt.
type clipListNode struct {
	fs.Inode
	readOnly
	s    *snapshotDir
	data []byte
}

func (n *clipListNode) fill(a *fuse.Attr) {
	a.Mode = fuse.S_IFREG | 0o444
	a.Nlink = 1
	a.Size = uint64(len(n.data))
	a.Blocks = (a.Size + 511) / 512
	n.s.t.m.owner(a)
	a.SetTimes(nil, &n.s.snap.Time, &n.s.snap.Time)
}

func (n *clipListNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fill(&out.Attr)
	out.SetTimeout(immutableTimeout)
	return 0
}

func (n *clipListNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	return &bytesHandle{data: n.data}, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// clipListEntries are the root files of a clip view.
func (n *snapshotDir) clipListEntries(st *snapshotTree) []fuse.DirEntry {
	if st.clips == nil {
		return nil
	}
	return []fuse.DirEntry{
		{Name: clipsJSONL, Mode: fuse.S_IFREG, Ino: ino(n.path + "/" + clipsJSONL)},
		{Name: clipsTxt, Mode: fuse.S_IFREG, Ino: ino(n.path + "/" + clipsTxt)},
	}
}

// lookupClipList resolves clips.jsonl and clips.txt at a clip view's
// root; ok is false for other names.
func (n *snapshotDir) lookupClipList(ctx context.Context, st *snapshotTree, name string, out *fuse.EntryOut) (*fs.Inode, bool) {
	if st.clips == nil {
		return nil, false
	}
	data, ok := st.clips.file(name)
	if !ok {
		return nil, false
	}
	f := &clipListNode{s: n, data: data}
	f.fill(&out.Attr)
	out.SetEntryTimeout(immutableTimeout)
	out.SetAttrTimeout(immutableTimeout)
	return n.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino(n.path + "/" + name)}), true
}
