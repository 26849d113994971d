package fusefs

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/mounttree"
)

// stats counts what the mount does; .stats shows them in the Prometheus
// text format.
type stats struct {
	framesServed atomic.Int64
	bytesServed  atomic.Int64
	frameErrors  atomic.Int64
	lookups      atomic.Int64
	frameReads   atomic.Int64
	videoBytes   atomic.Int64
	nodesMade    atomic.Int64
	nodes        nodeCounts
	catalog      mounttree.Counters
}

func (s *stats) text(extra func(*strings.Builder)) []byte {
	var b strings.Builder
	counter := func(name, help string, v int64) {
		fmt.Fprintf(&b, "# HELP framefs_%s %s\n# TYPE framefs_%s counter\nframefs_%s %d\n", name, help, name, name, v)
	}
	counter("frames_served_total", "Frame images opened.", s.framesServed.Load())
	counter("bytes_served_total", "Bytes of frame images handed to the kernel (at open, and for READs of dropped pages).", s.bytesServed.Load())
	counter("frame_errors_total", "Frames that failed to decode (served as EIO).", s.frameErrors.Load())
	counter("size_computations_total", "Videos decoded to work out frame sizes not stored at ingest.", s.catalog.SizeComputations.Load())
	counter("rows_files_made_total", "Rows files (frames.jsonl, frames.parquet) and clip.json files made from rows.", s.catalog.RowsFilesMade.Load())
	counter("lookups_total", "Directory lookups.", s.lookups.Load())
	counter("frame_read_requests_total", "READ requests for frame images (most reads are served from the page cache).", s.frameReads.Load())
	counter("video_file_bytes_total", "Bytes read from the stored videos shown in episode folders.", s.videoBytes.Load())
	counter("nodes_made_total", "Snapshot files and folders given a node at a lookup (a lookup of one the daemon has reuses its node).", s.nodesMade.Load())
	counter("nodes_forgotten_total", "Snapshot files and folders released after the kernel forgot them.", s.nodes.forgotten.Load())
	counter("memory_trims_total", "Times memory was given back to the system after many nodes were released.", s.nodes.trims.Load())
	if extra != nil {
		extra(&b)
	}
	return []byte(b.String())
}

// statsNode is the .stats file; its content is made at open, so it is
// served with direct I/O (the size reported by stat is 0).
type statsNode struct {
	fs.Inode
	readOnly
	m *mountFS
}

func (n *statsNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = fuse.S_IFREG | 0o444
	n.m.owner(&out.Attr)
	out.SetTimes(nil, &n.m.started, nil)
	return 0
}

func (n *statsNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		return nil, 0, syscall.EROFS
	}
	return &bytesHandle{data: n.m.stats.text(n.m.statsExtra)}, fuse.FOPEN_DIRECT_IO, 0
}

// statsExtra adds the metadata caches' bytes, and the write directories'
// and the decoder's counters.
func (m *mountFS) statsExtra(b *strings.Builder) {
	m.mu.Lock()
	var cached int64
	for _, c := range m.catalogs {
		cached += c.CacheBytes()
	}
	m.mu.Unlock()
	fmt.Fprintf(b, "# HELP framefs_metadata_cache_bytes What the tables' metadata caches hold (rows, rows files, sizes, open videos, trees, manifests, snapshots).\n# TYPE framefs_metadata_cache_bytes gauge\nframefs_metadata_cache_bytes %d\n", cached)
	m.stagingStats(b)
	if m.extraStats != nil {
		m.extraStats(b)
	}
}
