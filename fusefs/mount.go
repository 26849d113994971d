package fusefs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/table"
)

// Server is a running mount.
type Server struct {
	*fuse.Server
	m *mountFS
}

// Wait blocks until the mount is unmounted, then releases the files the
// mount kept open.
func (s *Server) Wait() {
	s.Server.Wait()
	s.m.stopStaging()
	s.m.closeCatalogs()
}

// Unmount detaches the mount; it fails with EBUSY while files are open
// unless lazy is set.
func (s *Server) Unmount() error { return s.Server.Unmount() }

// MountWarehouse mounts every table of a warehouse at dir.
func MountWarehouse(dir, source string, wh Warehouse, frames FrameServer, opts Options) (*Server, error) {
	m := newMountFS(frames, opts)
	root := &rootNode{m: m, wh: wh, tables: map[string]*tableNode{}}
	return mount(dir, source, root, m)
}

// MountTable mounts one table at dir: its latest, snapshots and tags at
// the root.
func MountTable(dir, source string, tbl *table.Table, frames FrameServer, opts Options) (*Server, error) {
	m := newMountFS(frames, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tn, err := newTableNode(ctx, m, tbl, "")
	if err != nil {
		return nil, err
	}
	tn.withStats = true
	srv, err := mount(dir, source, tn, m)
	if err == nil {
		tn.live.Store(true)
	}
	return srv, err
}

func newMountFS(frames FrameServer, opts Options) *mountFS {
	uid, gid := currentOwner()
	bg, stop := context.WithCancel(context.Background())
	return &mountFS{opts: opts.withDefaults(), frames: frames, stats: &stats{}, started: time.Now(), uid: uid, gid: gid,
		extraStats: opts.ExtraStats, bg: bg, stop: stop}
}

func mount(dir, source string, root fs.InodeEmbedder, m *mountFS) (*Server, error) {
	if err := clearStaleMount(dir); err != nil {
		m.stopStaging()
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
	srv, err := fs.Mount(dir, root, opts)
	if err != nil {
		m.stopStaging()
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	return &Server{Server: srv, m: m}, nil
}

func haveFusermount() bool {
	_, err := exec.LookPath("fusermount3")
	return err == nil
}

// clearStaleMount detaches a dead FUSE mount left at dir by a daemon that
// crashed (its mount point answers ENOTCONN), so that a new mount can take
// its place.
func clearStaleMount(dir string) error {
	_, err := os.Stat(dir)
	if err == nil || !errors.Is(err, syscall.ENOTCONN) {
		return nil
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
