package ingest

import (
	"context"
	"sync"
	"time"
)

// The mount tells the stager about every open file description of a
// staged file that may write (a Writer). A file is open while any of them
// is: the kernel sends a release once per open file description, after
// the last descriptor sharing it is closed, while it sends a flush at
// every close(2) of any copy. A shell that runs
// `( cmd1; sleep 5; cmd2 ) > f` shares one file description among three
// processes, and cmd1's exit flushes it while the subshell still holds
// it open; only the release ends the writing.

// inodeState is what the mount reported about one staged inode.
type inodeState struct {
	// handles counts the open file descriptions that may write.
	handles int
	// busy counts those of them opened or written since their last
	// flush. A handle that was flushed and not written since is most
	// likely being released: its last descriptor was closed, and the
	// kernel sends the release right after, asynchronously.
	busy int
	// released is when the last handle was released.
	released time.Time
	// noSpace records a write that failed for lack of room, until the
	// file is written past it again or truncated.
	noSpace *noSpace
}

// noSpace is a write into a staged file that failed for lack of room.
type noSpace struct {
	offset int64 // where the failed write began
	limit  bool  // the staging limit refused it (else the disk was full)
}

// inode returns the state of ino, made on first use. s.mu must be held.
func (s *Stager) inode(ino uint64) *inodeState {
	st := s.inodes[ino]
	if st == nil {
		st = &inodeState{}
		s.inodes[ino] = st
	}
	return st
}

// Writer is one open file description of a staged file that may write.
// Its methods are called by the mount for the requests the kernel sends
// on that handle; all of them are safe for concurrent use.
type Writer struct {
	s   *Stager
	ino uint64

	mu       sync.Mutex // guards dirty and released
	dirty    bool       // opened or written since the last flush
	released bool
}

// OpenWriter records a handle opened for writing on ino. truncated says
// the file was created or truncated by the open (O_TRUNC): it starts
// over, and a write that failed for lack of room before is forgotten.
func (s *Stager) OpenWriter(ino uint64, truncated bool) *Writer {
	s.mu.Lock()
	st := s.inode(ino)
	st.handles++
	st.busy++
	if truncated {
		s.clearNoSpace(st)
	}
	s.mu.Unlock()
	return &Writer{s: s, ino: ino, dirty: true}
}

// Writing is called before every write through the handle.
func (w *Writer) Writing() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dirty || w.released {
		return
	}
	w.dirty = true
	w.s.mu.Lock()
	w.s.inode(w.ino).busy++
	w.s.mu.Unlock()
}

// Wrote is called after a write of n bytes at off succeeded. A write
// reaching past where an earlier one failed for lack of room means the
// file is being written again.
func (w *Writer) Wrote(off, n int64) {
	if w.s.noSpaceCount.Load() == 0 {
		return // the usual case: no lock per write
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if st := w.s.inodes[w.ino]; st != nil && st.noSpace != nil && off+n > st.noSpace.offset {
		w.s.clearNoSpace(st)
	}
}

// NoSpace records that a write at off failed for lack of room: the
// staging limit refused it (limit) or the disk was full. The file is
// then incomplete, and says so in its error file once closed instead of
// being committed.
func (w *Writer) NoSpace(off int64, limit bool) {
	w.s.mu.Lock()
	st := w.s.inode(w.ino)
	if st.noSpace == nil {
		w.s.noSpaceCount.Add(1)
	}
	st.noSpace = &noSpace{offset: off, limit: limit}
	w.s.mu.Unlock()
	w.s.log.Warn("a staged file could not be written for lack of room", "ino", w.ino, "offset", off, "limit", limit)
}

// Flushed is called at every close(2) of a descriptor of the handle
// (FLUSH). It does not end the writing: other copies of the descriptor
// may still be open.
func (w *Writer) Flushed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.dirty || w.released {
		return
	}
	w.dirty = false
	w.s.mu.Lock()
	w.s.inode(w.ino).busy--
	w.s.mu.Unlock()
	w.s.Kick()
}

// Release is called once, when the handle's last descriptor is gone
// (RELEASE). The file is closed when every handle on it is released.
func (w *Writer) Release() {
	w.mu.Lock()
	if w.released {
		w.mu.Unlock()
		return
	}
	w.released = true
	dirty := w.dirty
	w.mu.Unlock()

	s := w.s
	s.mu.Lock()
	st := s.inode(w.ino)
	if dirty {
		st.busy--
	}
	if st.handles--; st.handles <= 0 {
		st.handles = 0
		st.released = time.Now()
	}
	close(s.releasedCh)
	s.releasedCh = make(chan struct{})
	s.mu.Unlock()
	s.Kick()
}

// Truncated is called when ino's size is set through the mount (truncate,
// ftruncate). A file truncated to nothing starts over.
func (s *Stager) Truncated(ino uint64, size int64) {
	if size == 0 {
		s.mu.Lock()
		if st := s.inodes[ino]; st != nil {
			s.clearNoSpace(st)
		}
		s.mu.Unlock()
	}
	s.Kick()
}

// clearNoSpace forgets st's failed write. s.mu must be held.
func (s *Stager) clearNoSpace(st *inodeState) {
	if st.noSpace != nil {
		st.noSpace = nil
		s.noSpaceCount.Add(-1)
	}
}

// forgetInodes drops the state of inodes no longer in the staging
// directory and not open. s.mu must be held.
func (s *Stager) forgetInodes(present map[uint64]bool) {
	for ino, st := range s.inodes {
		if st.handles == 0 && !present[ino] {
			s.clearNoSpace(st)
			delete(s.inodes, ino)
		}
	}
}

// maxReleaseWait bounds how long CommitNow waits for handles that were
// closed but not yet released.
const maxReleaseWait = 2 * time.Second

// awaitReleases waits, up to maxReleaseWait, until no handle is being
// released: one whose descriptors were all closed (flushed) with no write
// since. The kernel sends the release after close(2) has returned, so a
// script's `cp f ingest/ && touch ingest/.commit` may ask for the commit
// before cp's release arrives. Handles still written are not waited for.
func (s *Stager) awaitReleases(ctx context.Context) {
	deadline := time.NewTimer(maxReleaseWait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		closing := false
		for _, st := range s.inodes {
			if st.handles > 0 && st.busy == 0 {
				closing = true
				break
			}
		}
		released := s.releasedCh
		s.mu.Unlock()
		if !closing {
			return
		}
		select {
		case <-released:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
