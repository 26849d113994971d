package fusefs

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Frame and folder nodes of snapshots are released when the kernel forgets
// them (see the package doc). The Go runtime gives the memory of freed
// objects back to the system slowly, so after a burst of forgets (the kernel
// evicting a few hundred thousand inodes under memory pressure, or
// drop_caches) the daemon would keep its peak RSS for minutes; trimming it
// at once costs one garbage collection.
const (
	// trimAfterNodes is how many forgotten nodes make a trim worthwhile
	// (about 300 bytes each with go-fuse's bookkeeping).
	trimAfterNodes = 10000
	// trimDelay lets a burst of FORGETs end before the trim.
	trimDelay = time.Second
)

// nodeCounts counts the snapshot nodes released after a FORGET, for .stats
// and the memory trim.
type nodeCounts struct {
	forgotten atomic.Int64

	mu      sync.Mutex // guards pending and timer
	pending int64      // forgotten since the last trim
	timer   *time.Timer
	trims   atomic.Int64
}

// released counts a node the kernel forgot, and schedules a trim once
// enough have gone.
func (c *nodeCounts) released() {
	c.forgotten.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending++
	if c.pending >= trimAfterNodes {
		c.trimSoon()
	}
}

// largeListing trims at once, unless a trim is scheduled: it is told
// of a listing of more entries than nodes are made for, closed. Reading a
// folder of many episodes decodes their manifest entries, several times
// the records it keeps, and the heap grew with them before the
// collector's pacing (gcpace) took the records for the long-lived memory
// they are.
func (c *nodeCounts) largeListing() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer == nil {
		c.timer = time.AfterFunc(0, c.trim)
	}
}

// trimSoon schedules a trim unless one is; c.mu is held.
func (c *nodeCounts) trimSoon() {
	if c.timer == nil {
		c.timer = time.AfterFunc(trimDelay, c.trim)
	}
}

func (c *nodeCounts) trim() {
	c.mu.Lock()
	c.pending, c.timer = 0, nil
	c.mu.Unlock()
	c.trims.Add(1)
	debug.FreeOSMemory()
}

// stop cancels a pending trim (at unmount).
func (c *nodeCounts) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}
