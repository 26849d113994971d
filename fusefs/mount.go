package fusefs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/framefs/framefs/internal/mountinfo"
	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/table"
)

// Server is a running mount. A program that reads files of a mount it
// serves itself (a test) calls WaitMount once first: Go's runtime asks the
// kernel to poll every file it opens, which sends the mount a POLL request
// and waits for it holding a scheduler slot; with every slot so held,
// nothing is left to answer. WaitMount opens a file of the mount and polls
// it, and the answer (not supported) stops the kernel from asking again.
// The framefs daemon reads nothing of its own mount and does not call it
// (see mount).
type Server struct {
	*fuse.Server
	m *mountFS
}

// Wait blocks until the mount is unmounted, then releases the files the
// mount kept open.
func (s *Server) Wait() {
	s.Server.Wait()
	s.m.release()
}

// Unmount detaches the mount, retrying for a moment while the kernel still
// counts files open; it fails (EBUSY) if they stay open. It never detaches
// lazily: a caller that must go anyway falls back to `fusermount3 -u -z`,
// as the mount command does on SIGTERM.
func (s *Server) Unmount() error { return s.Server.Unmount() }

// MetadataCacheBytes is what the mounted tables' metadata caches hold
// (rows, rows files, sizes, trees, manifests, snapshots), by the sizes
// they are charged: memory the mount keeps on purpose, within bounds.
func (s *Server) MetadataCacheBytes() int64 { return s.m.metadataCacheBytes() }

// MountWarehouse mounts every table of a warehouse at dir.
func MountWarehouse(dir, source string, wh Warehouse, frames mounttree.FrameServer, opts Options) (*Server, error) {
	m, err := newMountFS(frames, opts)
	if err != nil {
		return nil, err
	}
	root := &rootNode{m: m, wh: wh, tables: map[string]*tableNode{}}
	srv, err := mount(dir, source, root, m)
	if err == nil {
		go root.resumeStaging()
	}
	return srv, err
}

// MountTable mounts one table at dir: its latest, snapshots and tags at
// the root.
func MountTable(dir, source string, tbl *table.Table, frames mounttree.FrameServer, opts Options) (*Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root, err := NewTableRoot(ctx, tbl, frames, opts)
	if err != nil {
		return nil, err
	}
	srv, err := mount(dir, source, root.node, root.m)
	if err == nil {
		root.node.live.Store(true)
	}
	return srv, err
}

// TableRoot is the node tree MountTable serves, built but not mounted.
// Tests serve it in process (fs.NewNodeFS) and call go-fuse's operations
// on it directly, without a kernel mount.
type TableRoot struct {
	node *tableNode
	m    *mountFS
}

// NewTableRoot builds the tree of a one-table mount of tbl, reading its
// latest schema for the image setting; with opts.StagingDir set, its write
// directories start staging. Close releases it.
func NewTableRoot(ctx context.Context, tbl *table.Table, frames mounttree.FrameServer, opts Options) (*TableRoot, error) {
	m, err := newMountFS(frames, opts)
	if err != nil {
		return nil, err
	}
	tn, err := newTableNode(ctx, m, tbl, "")
	if err != nil {
		m.release()
		return nil, err
	}
	tn.withStats = true
	return &TableRoot{node: tn, m: m}, nil
}

// Node is the root directory's node, for fs.NewNodeFS.
func (r *TableRoot) Node() fs.InodeEmbedder { return r.node }

// Close stops the tree's write directories and releases the videos it
// holds open; the tree must no longer be served. (A mounted tree is
// released by Server.Wait.)
func (r *TableRoot) Close() { r.m.release() }

func newMountFS(frames mounttree.FrameServer, opts Options) (*mountFS, error) {
	uid, gid := currentOwner()
	bg, stop := context.WithCancel(context.Background())
	m := &mountFS{opts: opts.withDefaults(), frames: frames, stats: &stats{}, started: time.Now(), uid: uid, gid: gid,
		metrics: opts.Metrics, bg: bg, stop: stop, maxListedNodes: defaultMaxListedNodes}
	if m.metrics == nil {
		m.metrics = prometheus.NewRegistry()
	}
	if err := m.registerMetrics(); err != nil {
		stop()
		return nil, err
	}
	return m, nil
}

// release stops what a mount runs in the background and closes what its
// catalogs hold open, once nothing serves the tree any more.
func (m *mountFS) release() {
	m.stats.nodes.stop()
	m.stopStaging()
	m.closeCatalogs()
	m.unregisterMetrics()
}

func mount(dir, source string, root fs.InodeEmbedder, m *mountFS) (*Server, error) {
	if err := clearStaleMount(dir); err != nil {
		m.release()
		return nil, err
	}
	one := time.Second
	opts := &fs.Options{
		EntryTimeout:    &one,
		AttrTimeout:     &one,
		NegativeTimeout: &one,
		UID:             m.uid,
		GID:             m.gid,
		MountOptions: fuse.MountOptions{
			FsName:        source,
			Name:          "framefs",
			AllowOther:    m.opts.AllowOther,
			Debug:         m.opts.Debug,
			MaxReadAhead:  1 << 20,
			DisableXAttrs: false,
			// Without fusermount3, mount(2) directly (we may be root).
			DirectMount: !haveFusermount(),
			// Paths through latest and tags resolve a symlink at every
			// step; cached targets spare a round trip per file (ls -l of
			// latest/EPISODE took twice as long without).
			EnableSymlinkCaching: true,
		},
	}
	if m.opts.ReadOnly {
		opts.MountOptions.Options = append(opts.MountOptions.Options, "ro")
	}
	if !m.opts.AllowOther {
		// Only the mounting user may read; the kernel enforces the mode bits.
		opts.MountOptions.Options = append(opts.MountOptions.Options, "default_permissions")
	}
	// Not fs.Mount: after mounting, it opens a file in the new mount from
	// this process (go-fuse's poll hack, for servers that open their own
	// files, which this one never does). A daemon killed with SIGKILL while
	// one of its threads waits on its own mount cannot exit: the waiting
	// thread keeps /dev/fuse open, so the kernel never aborts the request,
	// and only the dead threads could have answered it. Killed right after
	// mounting, 5 daemons in 60 hung so, and their mounts with them.
	// Requests made before Serve reads the kernel's INIT wait for it.
	srv, err := fuse.NewServer(fs.NewNodeFS(root, opts), dir, &opts.MountOptions)
	if err != nil {
		m.release()
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	go srv.Serve()
	return &Server{Server: srv, m: m}, nil
}

func haveFusermount() bool {
	_, err := exec.LookPath("fusermount3")
	return err == nil
}

// mountAnswerTimeout bounds how long clearStaleMount waits for the
// daemon of a mount already at the mount point to answer.
var mountAnswerTimeout = 5 * time.Second

// clearStaleMount detaches a dead FUSE mount left at dir by a daemon that
// crashed, so that a new mount can take its place. A dead mount answers
// ENOTCONN, but only to requests that reach the kernel's FUSE
// connection: stat of the mount point may still be served from cached
// attributes, so the directory is opened to find out. A daemon that is
// alive but does not answer (stopped, or stuck) would hold the open
// forever, and SIGTERM would not end the wait: after mountAnswerTimeout
// that is the error. (The open is left waiting; a process that exits
// takes it with it.)
func clearStaleMount(dir string) error {
	if !IsMounted(dir) {
		return nil
	}
	opened := make(chan error, 1)
	go func() {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		opened <- err
	}()
	var err error
	select {
	case err = <-opened:
	case <-time.After(mountAnswerTimeout):
		return fmt.Errorf("%s is mounted, and its daemon has not answered for %v (stopped or stuck?): "+
			"end it, or detach its mount with fusermount3 -u -z %s, then mount again", dir, mountAnswerTimeout, dir)
	}
	if err == nil {
		return fmt.Errorf("%s is already mounted (by a running framefs?); unmount it first", dir)
	}
	if !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if haveFusermount() {
		if exec.Command("fusermount3", "-u", "-z", dir).Run() == nil {
			return nil
		}
	}
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("%s is a stale mount and could not be detached: %w", dir, err)
	}
	return nil
}

// IsMounted reports whether dir is the mount point of a FUSE file system.
func IsMounted(dir string) bool {
	m, ok := mountinfo.At(dir)
	return ok && strings.HasPrefix(m.FSType, "fuse")
}

// Warehouse is what a mount of several tables needs from them.
type Warehouse interface {
	// Tables lists the table names.
	Tables(ctx context.Context) ([]string, error)
	// Open opens a table by name.
	Open(ctx context.Context, name string) (*table.Table, error)
	// Create makes a new, empty table (no columns but the episode id
	// and the video; its first sidecars add the rest).
	Create(ctx context.Context, name string) (*table.Table, error)
	// Location names a table's storage as its Table.String() does,
	// without opening it.
	Location(name string) string
}

// mountFS holds what every node of one mount shares.
type mountFS struct {
	opts    Options
	frames  mounttree.FrameServer
	stats   *stats
	started time.Time
	uid     uint32
	gid     uint32
	// metrics is the registry .stats shows (Options.Metrics); registered
	// are the mount's own metrics in it.
	metrics    *prometheus.Registry
	registered []prometheus.Collector

	// live are the nodes of snapshot and view folders the kernel holds.
	live liveNodes
	// leaving are the former heads' entries being dropped (formerhead.go).
	leaving leavingEntries
	// maxListedNodes is the largest listing of a tree's folder whose
	// entries are looked up as they are listed (defaultMaxListedNodes;
	// tests lower it).
	maxListedNodes int

	mu       sync.Mutex // guards catalogs
	catalogs []*mounttree.Catalog

	// The stagers of write directories run until bg ends (at unmount).
	bg      context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	stagers []stagerRef
}

// closeCatalogs releases what the tables' catalogs hold open.
func (m *mountFS) closeCatalogs() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.catalogs {
		c.Close()
	}
	m.catalogs = nil
}

// ino is the inode number of the node at path in the mount, derived from
// the path as the trees' folders derive theirs (PathIno).
func ino(path string) uint64 { return mounttree.PathIno(path) }

func (m *mountFS) owner(a *fuse.Attr) {
	a.Uid, a.Gid = m.uid, m.gid
}

func dirAttr(m *mountFS, out *fuse.Attr, mtime time.Time) {
	out.Mode = fuse.S_IFDIR | 0o555
	out.Nlink = 2
	m.owner(out)
	out.SetTimes(nil, &mtime, &mtime)
}

func currentOwner() (uint32, uint32) {
	return uint32(os.Getuid()), uint32(os.Getgid())
}
