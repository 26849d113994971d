package fusefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/ingest"
	"github.com/framefs/framefs/table"
)

// Names in a staging directory that are not files on disk.
const (
	nameStatus = ".status" // what is staged, waiting and committed
	nameCommit = ".commit" // touch it to commit what is staged now
)

// stagingNode serves TABLE/ingest/ and TABLE/replace/ (and their image
// folders): a loopback of the stager's directory on local disk, so that
// every POSIX operation file managers, cp and rsync use works as on a
// local disk. It tells the stager which files are open for writing and
// which writes failed for lack of room, enforces the staging limit, and
// adds .status, .commit and the stager's NAME.error files at the top.
//
// The stager deletes what it commits behind the kernel's back, so entries
// here are never cached: every path walk asks again. (Telling the kernel
// instead, with an invalidation, would have to take the directory's lock,
// which a request such as touch .commit holds while it commits.)
type stagingNode struct {
	*fs.LoopbackNode
	st   *ingest.Stager
	m    *mountFS
	root bool
}

func newStagingRoot(st *ingest.Stager, m *mountFS) (*stagingNode, error) {
	var s syscall.Stat_t
	if err := syscall.Stat(st.Dir(), &s); err != nil {
		return nil, err
	}
	lr := &fs.LoopbackRoot{Path: st.Dir(), Dev: uint64(s.Dev)}
	n := &stagingNode{LoopbackNode: &fs.LoopbackNode{RootData: lr}, st: st, m: m, root: true}
	lr.RootNode = n
	return n, nil
}

// WrapChild makes every file and folder below a staging directory a
// stagingNode too.
func (n *stagingNode) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if lb, ok := ops.(*fs.LoopbackNode); ok {
		return &stagingNode{LoopbackNode: lb, st: n.st, m: n.m}
	}
	return ops
}

func (n *stagingNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.root {
		switch name {
		case nameStatus:
			out.Mode = fuse.S_IFREG | 0o444
			n.m.owner(&out.Attr)
			uncached(out)
			status := func() (string, bool) { return n.st.Status(), true }
			return n.NewInode(ctx, &stagingTextNode{m: n.m, text: status}, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino(n.st.Dir() + "/" + nameStatus)}), 0
		case nameCommit:
			return nil, syscall.ENOENT
		}
		if ingest.IsErrorFile(name) {
			return n.lookupError(ctx, name, out)
		}
	}
	child, errno := n.LoopbackNode.Lookup(ctx, name, out)
	uncached(out)
	return child, errno
}

func uncached(out *fuse.EntryOut) {
	out.SetEntryTimeout(0)
	out.SetAttrTimeout(0)
}

// lookupError finds NAME.error, which the stager keeps in memory.
func (n *stagingNode) lookupError(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	text, ok := n.st.ErrorText(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	out.Mode = fuse.S_IFREG | 0o444
	out.Size = uint64(len(text))
	n.m.owner(&out.Attr)
	uncached(out)
	node := &stagingTextNode{m: n.m, text: func() (string, bool) { return n.st.ErrorText(name) }}
	return n.NewInode(ctx, node, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino(n.st.Dir() + "/" + name)}), 0
}

// reserved tells whether name at the top of a staging directory belongs
// to the mount: .status, .commit and the error files.
func (n *stagingNode) reserved(name string) bool {
	return n.root && (name == nameStatus || name == nameCommit || ingest.IsErrorFile(name))
}

// OpendirHandle lists the directory on disk, plus .status and the error
// files at the top.
func (n *stagingNode) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if !n.root {
		return n.LoopbackNode.OpendirHandle(ctx, flags)
	}
	ds, errno := fs.NewLoopbackDirStream(n.st.Dir())
	if errno != 0 {
		return nil, 0, errno
	}
	defer ds.Close()
	entries := []fuse.DirEntry{{Name: nameStatus, Mode: fuse.S_IFREG, Ino: ino(n.st.Dir() + "/" + nameStatus)}}
	for _, name := range n.st.ErrorFiles() {
		entries = append(entries, fuse.DirEntry{Name: name, Mode: fuse.S_IFREG, Ino: ino(n.st.Dir() + "/" + name)})
	}
	for ds.HasNext() {
		e, errno := ds.Next()
		if errno != 0 {
			return nil, 0, errno
		}
		entries = append(entries, e)
	}
	return fs.NewListDirStream(entries), 0, 0
}

func (n *stagingNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if n.root {
		switch name {
		case nameCommit:
			return n.commitNow(ctx, out)
		case nameStatus:
			return nil, nil, 0, syscall.EEXIST
		}
		if ingest.IsErrorFile(name) {
			return nil, nil, 0, syscall.EPERM
		}
	}
	inode, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	uncached(out)
	return inode, n.track(fh, out.Attr.Ino, true), fl, 0
}

// commitNow runs for `touch .commit`: it commits what is staged before
// returning, so that a script can look under latest/ right after.
func (n *stagingNode) commitNow(ctx context.Context, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	// A commit must not stop halfway because the caller was interrupted.
	if err := n.st.CommitNow(context.WithoutCancel(ctx)); err != nil {
		slog.Error("commit requested through .commit failed", "dir", n.st.Dir(), "err", err)
		return nil, nil, 0, syscall.EIO
	}
	out.Mode = fuse.S_IFREG | 0o644
	n.m.owner(&out.Attr)
	uncached(out)
	node := n.NewInode(ctx, &commitNode{m: n.m}, fs.StableAttr{Mode: fuse.S_IFREG, Ino: ino(n.st.Dir() + "/" + nameCommit)})
	return node, discardHandle{}, fuse.FOPEN_DIRECT_IO, 0
}

func (n *stagingNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 || flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) == 0 {
		return fh, fl, errno
	}
	return n.track(fh, n.StableAttr().Ino, flags&syscall.O_TRUNC != 0), fl, 0
}

// Setattr refuses to grow a file past the staging limit (truncate up).
func (n *stagingNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	size, resized := in.GetSize()
	if resized && n.st.Limited() {
		var cur fuse.AttrOut
		if errno := n.LoopbackNode.Getattr(ctx, nil, &cur); errno == 0 && size > cur.Size {
			if err := n.st.Grow(int64(size - cur.Size)); err != nil {
				return syscall.ENOSPC
			}
		}
	}
	errno := n.LoopbackNode.Setattr(ctx, f, in, out)
	if resized && errno == 0 {
		n.st.Truncated(n.StableAttr().Ino, int64(size))
	}
	n.st.Kick()
	return errno
}

func (n *stagingNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if n.reserved(name) {
		return syscall.EPERM
	}
	if np, ok := newParent.(*stagingNode); ok && np.reserved(newName) {
		return syscall.EPERM
	}
	errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	n.st.Kick()
	return errno
}

// Unlink removes a staged file; removing NAME.error dismisses the
// message.
func (n *stagingNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if n.root && ingest.IsErrorFile(name) {
		if !n.st.Dismiss(name) {
			return syscall.ENOENT
		}
		return 0
	}
	errno := n.LoopbackNode.Unlink(ctx, name)
	n.st.Kick()
	return errno
}

// Link makes another name for a staged file.
func (n *stagingNode) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.reserved(name) {
		return nil, syscall.EPERM
	}
	child, errno := n.LoopbackNode.Link(ctx, target, name, out)
	uncached(out)
	n.st.Kick()
	return child, errno
}

// Symlinks and device nodes have no place among staged media.
func (n *stagingNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (n *stagingNode) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// stagedFile is what go-fuse's loopback file handles implement.
type stagedFile interface {
	fs.FileReader
	fs.FileWriter
	fs.FileFlusher
	fs.FileFsyncer
	fs.FileReleaser
	fs.FileGetattrer
	fs.FileSetattrer
	fs.FileLseeker
	fs.FileAllocater
	fs.FileGetlker
	fs.FileSetlker
	fs.FileSetlkwer
}

// writeHandle is a staged file open for writing. It tells the stager
// about the requests the kernel sends on it (see ingest.Writer): writes,
// FLUSH at every close(2) of one of its descriptors, and the single
// RELEASE once the last descriptor sharing it is closed, which alone
// ends the writing. Writes past the staging limit fail with ENOSPC, and
// a write that fails for lack of room marks the file incomplete.
//
// It has no PassthroughFd: with kernel passthrough, writes would bypass
// the daemon and be neither counted nor limited.
type writeHandle struct {
	stagedFile
	st *ingest.Stager
	w  *ingest.Writer
}

// track wraps a handle opened for writing; truncated says the open
// created or truncated the file.
func (n *stagingNode) track(fh fs.FileHandle, ino uint64, truncated bool) fs.FileHandle {
	sf, ok := fh.(stagedFile)
	if !ok {
		return fh
	}
	return &writeHandle{stagedFile: sf, st: n.st, w: n.st.OpenWriter(ino, truncated)}
}

func (f *writeHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f.w.Writing()
	if errno := f.grow(ctx, off+int64(len(data))); errno != 0 {
		if errno == syscall.ENOSPC {
			f.w.NoSpace(off, true)
		}
		return 0, errno
	}
	n, errno := f.stagedFile.Write(ctx, data, off)
	switch {
	case errno == 0:
		f.w.Wrote(off, int64(n))
	case ingest.IsNoSpace(errno):
		f.w.NoSpace(off, false)
	}
	return n, errno
}

func (f *writeHandle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	f.w.Writing()
	if errno := f.grow(ctx, int64(off+size)); errno != 0 {
		if errno == syscall.ENOSPC {
			f.w.NoSpace(int64(off), true)
		}
		return errno
	}
	errno := f.stagedFile.Allocate(ctx, off, size, mode)
	if ingest.IsNoSpace(errno) {
		f.w.NoSpace(int64(off), false)
	}
	return errno
}

// grow reserves what a write up to end adds to the file. Without a
// staging limit there is nothing to reserve, and no stat per write.
func (f *writeHandle) grow(ctx context.Context, end int64) syscall.Errno {
	if !f.st.Limited() {
		return 0
	}
	var a fuse.AttrOut
	if errno := f.stagedFile.Getattr(ctx, &a); errno != 0 {
		return errno
	}
	if err := f.st.Grow(end - int64(a.Size)); errors.Is(err, ingest.ErrNoSpace) {
		return syscall.ENOSPC
	}
	return 0
}

func (f *writeHandle) Flush(ctx context.Context) syscall.Errno {
	errno := f.stagedFile.Flush(ctx)
	f.w.Flushed()
	return errno
}

func (f *writeHandle) Release(ctx context.Context) syscall.Errno {
	errno := f.stagedFile.Release(ctx)
	f.w.Release()
	return errno
}

// stagingTextNode is a read-only file made by the mount: .status, or
// NAME.error. Its text is made when it is looked at.
type stagingTextNode struct {
	fs.Inode
	readOnly
	m    *mountFS
	text func() (string, bool)
}

func (n *stagingTextNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	text, ok := n.text()
	if !ok {
		return syscall.ENOENT
	}
	out.Mode = fuse.S_IFREG | 0o444
	out.Size = uint64(len(text))
	n.m.owner(&out.Attr)
	return 0
}

func (n *stagingTextNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		return nil, 0, syscall.EPERM
	}
	text, ok := n.text()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	return &bytesHandle{data: []byte(text)}, fuse.FOPEN_DIRECT_IO, 0
}

// commitNode is what `touch .commit` created; it is empty and forgotten.
type commitNode struct {
	fs.Inode
	m *mountFS
}

func (n *commitNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = fuse.S_IFREG | 0o644
	n.m.owner(&out.Attr)
	return 0
}

// Setattr accepts touch's timestamps (and echo's truncation).
func (n *commitNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return n.Getattr(ctx, f, out)
}

// discardHandle takes what is written to .commit and drops it.
type discardHandle struct{}

func (discardHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return uint32(len(data)), 0
}

// Staging directory kinds under a table.
const (
	nameIngest  = "ingest"
	nameReplace = "replace"
)

// startStaging makes and starts the stagers of a table's write
// directories, under the mount's staging area.
func (m *mountFS) startStaging(tn *tableNode) error {
	if m.opts.ReadOnly || m.opts.StagingDir == "" {
		return nil
	}
	base := filepath.Join(m.opts.StagingDir, stagingKey(tn.tbl.String()))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	// Which table this is, for resumeStaging after a restart. Written
	// once: a staging disk that user data filled must not stop the mount.
	owner := []byte(tn.tbl.String() + "\n")
	if have, err := os.ReadFile(filepath.Join(base, ownerFile)); err != nil || !bytes.Equal(have, owner) {
		if err := os.WriteFile(filepath.Join(base, ownerFile), owner, 0o644); err != nil {
			return err
		}
	}
	tn.staging = map[string]*stagingNode{}
	for _, mode := range []ingest.Mode{ingest.Add, ingest.Replace} {
		name := mode.String()
		st, err := ingest.New(ingest.Options{
			Mode: mode, Dir: filepath.Join(base, name), WorkDir: filepath.Join(base, ".work-"+name),
			Table:        func(context.Context) (*table.Table, error) { return tn.tbl, nil },
			Settle:       m.opts.Settle,
			LimitBytes:   m.opts.StagingLimit,
			EncodeImages: m.opts.EncodeImages,
			AddOptions:   table.AddOptions{NoSizes: m.opts.IngestNoSizes},
			Committed:    func(*table.Snapshot) { tn.committed() },
			Logger:       slog.Default().With("table", tn.tbl.String()),
		})
		if err != nil {
			return err
		}
		root, err := newStagingRoot(st, m)
		if err != nil {
			return err
		}
		tn.staging[name] = root
		m.stagers = append(m.stagers, stagerRef{table: tn.tbl.String(), st: st})
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			st.Run(m.bg)
		}()
	}
	return nil
}

// ownerFile, in a table's staging area, names the table.
const ownerFile = ".table"

// resumeStaging opens, in the background, every table of the warehouse
// that has files staged from an earlier mount (a crash, or an unmount
// before they committed), so that they commit without waiting for
// someone to look at the table.
func (n *rootNode) resumeStaging() {
	if n.m.opts.ReadOnly || n.m.opts.StagingDir == "" {
		return
	}
	areas, err := os.ReadDir(n.m.opts.StagingDir)
	if err != nil {
		return
	}
	pending := map[string]bool{}
	for _, a := range areas {
		base := filepath.Join(n.m.opts.StagingDir, a.Name())
		owner, err := os.ReadFile(filepath.Join(base, ownerFile))
		if err != nil {
			continue
		}
		for _, dir := range []string{nameIngest, nameReplace} {
			if entries, _ := os.ReadDir(filepath.Join(base, dir)); len(entries) > 0 {
				pending[strings.TrimSpace(string(owner))] = true
			}
		}
	}
	if len(pending) == 0 {
		return
	}
	ctx := n.m.bg
	names, err := n.wh.Tables(ctx)
	if err != nil {
		slog.Warn("looking for staged files of earlier mounts", "err", err)
		return
	}
	for _, name := range names {
		if !pending[n.wh.Location(name)] {
			continue
		}
		if _, err := n.table(ctx, name); err != nil {
			slog.Warn("resuming staged files", "table", name, "err", err)
		}
	}
}

// stagingKey names a table's staging area: readable, and unique per
// table location.
func stagingKey(location string) string {
	h := fnv.New64a()
	h.Write([]byte(location))
	base := filepath.Base(location)
	if table.CheckName("table", base) != nil {
		base = "table"
	}
	return fmt.Sprintf("%s-%016x", base, h.Sum64())
}

type stagerRef struct {
	table string
	st    *ingest.Stager
}

// stagingStats adds the stagers' counters to .stats.
func (m *mountFS) stagingStats(b *strings.Builder) {
	m.mu.Lock()
	stagers := m.stagers
	m.mu.Unlock()
	if len(stagers) == 0 {
		return
	}
	metrics := []struct {
		name, help, typ string
		value           func(ingest.Stats) int64
	}{
		{"ingest_commits_total", "Snapshots committed from write directories.", "counter", func(s ingest.Stats) int64 { return s.Commits }},
		{"ingest_episodes_total", "Episodes added, replaced or updated from write directories.", "counter", func(s ingest.Stats) int64 { return s.Episodes }},
		{"ingest_failures_total", "Staged groups rejected with an .error file.", "counter", func(s ingest.Stats) int64 { return s.Failures }},
		{"ingest_staged_bytes", "Bytes held in the staging area.", "gauge", func(s ingest.Stats) int64 { return s.Staged }},
		{"ingest_writing_files", "Staged files open for writing.", "gauge", func(s ingest.Stats) int64 { return s.Writing }},
	}
	for _, mt := range metrics {
		fmt.Fprintf(b, "# HELP framefs_%s %s\n# TYPE framefs_%s %s\n", mt.name, mt.help, mt.name, mt.typ)
		for _, r := range stagers {
			fmt.Fprintf(b, "framefs_%s{table=%q,dir=%q} %d\n", mt.name, r.table, r.st.Mode(), mt.value(r.st.Stats()))
		}
	}
}

// stopStaging stops the stagers at unmount.
func (m *mountFS) stopStaging() {
	if m.stop != nil {
		m.stop()
	}
	m.wg.Wait()
}

// Mkdir makes an image folder.
func (n *stagingNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.reserved(name) {
		return nil, syscall.EPERM
	}
	child, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	uncached(out)
	n.st.Kick()
	return child, errno
}
