package fusefs

import (
	"slices"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
)

// A file of a snapshot (a frame, a stored video, a rows file) is one inode
// in every snapshot that holds the same episode version, so a reader of
// latest that reaches a file again through a new head gets the node it
// had through the former head. The former head's folders linger (see
// tableNode.refresh) so that such files keep their page cache: the kernel
// forgets an inode, and drops its pages, when its last entry goes. Once
// the file has its entry under the new head, its entry under the former
// head serves nothing: it is dropped, and with it each folder of the
// former head left with nothing the kernel holds under it. A reader that
// goes through every episode of latest after each commit then has the
// daemon hold the new head's folders and the files, not the former head's
// folders besides (TestBytesPerFollowedEpisode).
//
// The entry leaves go-fuse's tree at once, in the lookup that reaches the
// file again, before go-fuse adds the new one: a node given a second
// parent keeps a map for its other parents for the rest of its life
// (about 250 bytes a frame), one with its parent replaced does not. The
// kernel is asked to drop its entry a moment later (leaveDelay).

// leaveDelay is how long after a file was looked up under a new parent the
// kernel is asked to drop its entry under the former one: the kernel adds
// the new entry when the lookup's reply reaches it, after the lookup
// returned, and until then the old entry is what keeps the file's pages.
const leaveDelay = 100 * time.Millisecond

// leavingEntries counts, for each folder of a former head, the entries
// taken out of go-fuse's tree whose kernel entries are still to be
// dropped. A folder is dropped after its last one: one that looks empty
// to go-fuse may still hold, in the kernel, the only entry of a file whose
// new entry is on its way.
type leavingEntries struct {
	mu      sync.Mutex // guards pending
	pending map[*fs.Inode]int
}

func (l *leavingEntries) add(dir *fs.Inode) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[*fs.Inode]int{}
	}
	l.pending[dir]++
}

// done counts one of dir's entries dropped, and reports whether it was
// the last one pending.
func (l *leavingEntries) done(dir *fs.Inode) (last bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending[dir]--; l.pending[dir] > 0 {
		return false
	}
	delete(l.pending, dir)
	return true
}

// any reports whether dir has entries pending.
func (l *leavingEntries) any(dir *fs.Inode) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending[dir] > 0
}

// reachedAgain is told that the file node in, which the daemon had, is
// being looked up under parent. If its entry until now was under a former
// head's folder, that entry leaves go-fuse's tree now and the kernel's
// once the new one is in place.
func (m *mountFS) reachedAgain(in, parent *fs.Inode) {
	name, former := in.Parent()
	if former == nil || former == parent || formerHeadFolder(former) == nil {
		return
	}
	if removed, _ := former.RmChild(name); !removed {
		return // taken out meanwhile
	}
	m.leaving.add(former)
	time.AfterFunc(leaveDelay, func() { m.leaveFormerHead(former, name) })
}

// leaveFormerHead asks the kernel to drop the entry name under dir, which
// reachedAgain took out of go-fuse's tree, and, once dir has no such entry
// left to drop, drops every folder above it in that head left holding
// nothing, up to the snapshot's own folder, which waits for the linger.
func (m *mountFS) leaveFormerHead(dir *fs.Inode, name string) {
	last := m.leaving.done(dir)
	if m.bg.Err() != nil || dir.NotifyEntry(name) != 0 {
		return // unmounted, or the kernel is gone
	}
	snap := formerHeadFolder(dir)
	if !last || snap == nil {
		return // the last of dir's entries to drop climbs
	}
	// dir is nil once a folder was taken out of its parent meanwhile (its
	// head's folder dropped whole, see tableNode.forgetFolder).
	for dir != snap && len(dir.Children()) == 0 && !m.leaving.any(dir) {
		name, dir = dir.Parent()
		if dir == nil || dir.NotifyEntry(name) != 0 {
			return
		}
		dir.RmChild(name)
	}
}

// formerHeadFolder returns the folder of the snapshot that dir is in (or
// is), if that snapshot is a former head of its table whose folders still
// linger; else nil (a view's folder, the head's, a snapshot travelled to).
func formerHeadFolder(dir *fs.Inode) *fs.Inode {
	for n := dir; n != nil; _, n = n.Parent() {
		switch node := n.Operations().(type) {
		case *folderNode:
			continue
		case *snapshotDir:
			if node.view == nil && node.t.isFormer(node.snap.ID) {
				return n
			}
		}
		return nil
	}
	return nil
}

// isFormer reports whether snapshot id is a former head whose folders
// linger.
func (n *tableNode) isFormer(id int64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Contains(n.former, id)
}
