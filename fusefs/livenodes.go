package fusefs

import (
	"sync"

	"github.com/hanwen/go-fuse/v2/fs"
)

// liveNodes maps the inode numbers of the nodes of snapshot and view
// folders that the kernel holds to those nodes. A lookup of an inode the
// daemon already has returns its node rather than allocating one that
// go-fuse would drop for it: a frame or rows file reached through the new
// head after a commit is the same inode as before (its number names the
// episode version), and listing a folder of a new head looks up every
// file in it, so a mount following commits made and dropped a node per
// file of every folder listed after every commit.
type liveNodes struct {
	mu    sync.Mutex // guards nodes
	nodes map[uint64]*fs.Inode
}

// get returns the node of inode ino, or nil.
func (l *liveNodes) get(ino uint64) *fs.Inode {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodes[ino]
}

// add records in as the node of its inode. (If a concurrent lookup made
// go-fuse keep another node for the inode, in is never used and goes when
// that node is forgotten; a lookup given in meanwhile gets go-fuse's.)
func (l *liveNodes) add(in *fs.Inode) *fs.Inode {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nodes == nil {
		l.nodes = map[uint64]*fs.Inode{}
	}
	l.nodes[in.StableAttr().Ino] = in
	return in
}

// forget drops the node of inode ino, which the kernel forgot.
func (l *liveNodes) forget(ino uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.nodes, ino)
}
