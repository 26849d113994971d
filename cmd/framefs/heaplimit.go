package main

import (
	"os"
	"runtime/debug"
)

// batchHeapLimit is the soft limit on the Go heap of the commands that
// read through a table once (verify, ls --where), unless GOMEMLIMIT sets
// one. Their working sets are bounded: for a table of a million episodes,
// about 60-80 MB for ls --where (the manifests read at once, chunk
// indexes) and 115 MB for verify (the footer of one data file, 16 to 32
// bytes per row group referenced). Near the limit the collector runs more
// often rather than let the heap grow to a multiple of what is live (ls
// --where lets it grow to five times, for speed on smaller tables); a
// larger working set runs past it, the collector taking at most half the
// CPU.
const batchHeapLimit = 160 << 20

// limitBatchHeap sets batchHeapLimit, unless GOMEMLIMIT sets a limit, and
// returns what puts the previous limit back.
func limitBatchHeap() (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	previous := debug.SetMemoryLimit(batchHeapLimit)
	return func() { debug.SetMemoryLimit(previous) }
}
