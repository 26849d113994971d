package fusefs

import (
	"slices"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
)

// A file of a snapshot (a frame, a stored video, a rows file) is one inode
// in every snapshot that holds the same episode version, so a reader of
// latest that reaches a file again through a new head gets the node it
// had through the former head, now with a parent in each. The former
// head's folders linger (see tableNode.refresh) so that such files keep
// their page cache: the kernel forgets an inode, and drops its pages, when
// its last entry goes. Once the file has its entry under the new head, its
// entry under the former head serves nothing: it is dropped, and with it
// each folder of the former head left with nothing the kernel holds under
// it. A reader that goes through every episode of latest after each commit
// then has the daemon hold the new head's folders and the files, not the
// former head's folders besides (TestBytesPerFollowedEpisode: 2.1-2.5 KB
// per episode, 3.2-4.1 KB with them).

// leaveDelay is how long after a file was looked up under a new parent its
// entry under the former one is dropped: the kernel adds the new entry
// when the lookup's reply reaches it, after the lookup returned.
const leaveDelay = 100 * time.Millisecond

// reachedAgain is told that the file node in, which the daemon had, was
// looked up under parent. If its entry until now was under a former head's
// folder, that entry is dropped once the new one is in place.
func (m *mountFS) reachedAgain(in, parent *fs.Inode) {
	name, former := in.Parent()
	if former == nil || former == parent || formerHeadFolder(former) == nil {
		return
	}
	time.AfterFunc(leaveDelay, func() { m.leaveFormerHead(in, former, name) })
}

// leaveFormerHead drops the entry name of file in under dir, if dir is
// still in a former head and the file has since been looked up elsewhere,
// and then every folder above it in that head left holding nothing, up to
// the snapshot's own folder, which waits for the linger.
func (m *mountFS) leaveFormerHead(in, dir *fs.Inode, name string) {
	if m.bg.Err() != nil {
		return // unmounted
	}
	snap := formerHeadFolder(dir)
	if _, newest := in.Parent(); newest == dir || dir.GetChild(name) != in || snap == nil {
		return
	}
	// dir is nil once a folder was taken out of its parent meanwhile (its
	// head's folder dropped whole, see tableNode.forgetFolder).
	for dir != nil {
		if dir.NotifyEntry(name) != 0 {
			return // the kernel has no such entry, or is gone
		}
		dir.RmChild(name)
		if dir == snap || len(dir.Children()) > 0 {
			return
		}
		name, dir = dir.Parent()
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
