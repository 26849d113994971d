package fusefs

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/framefs/framefs/internal/promtext"
	"github.com/framefs/framefs/mounttree"
)

// stats counts what the mount does; .stats shows them, with the rest of
// the mount's metrics registry, in the Prometheus text format.
type stats struct {
	framesServed atomic.Int64
	bytesServed  atomic.Int64
	frameErrors  atomic.Int64
	lookups      atomic.Int64
	lookupsKnown atomic.Int64
	// foldersOpened and listingsMade count a snapshot's or view's
	// folders opened for listing, and the listings made for READDIR.
	foldersOpened atomic.Int64
	listingsMade  atomic.Int64
	frameReads    atomic.Int64
	videoBytes    atomic.Int64
	nodesMade     atomic.Int64
	nodes         nodeCounts
	catalog       mounttree.Counters
}

// collectors are the mount's own metrics. They read the counters when the
// registry is gathered (an open of .stats, a scrape over HTTP), so the
// work they count only adds to an atomic.
func (m *mountFS) collectors() []prometheus.Collector {
	s := m.stats
	counter := func(name, help string, c *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "framefs_" + name, Help: help},
			func() float64 { return float64(c.Load()) })
	}
	return []prometheus.Collector{
		counter("frames_served_total", "Frame images opened.", &s.framesServed),
		counter("bytes_served_total", "Bytes of frame images handed to the kernel (at open, and for READs of dropped pages).", &s.bytesServed),
		counter("frame_errors_total", "Frames that failed to decode (served as EIO).", &s.frameErrors),
		counter("frames_sized_total", "Frame images made to learn their size at a stat (sizes not stored at ingest).", &s.catalog.FramesSized),
		counter("rows_files_made_total", "Rows files (frames.jsonl, frames.parquet) and clip.json files made from rows.", &s.catalog.RowsFilesMade),
		counter("manifests_listed_total", "Manifests read to list folders of episodes (a new head reads those its parent's folder did not).", &s.catalog.ManifestsListed),
		counter("lookups_total", "Directory lookups.", &s.lookups),
		counter("lookups_known_total", "Lookups of snapshot files and folders answered with the node the daemon had, and folders listed again without one (the kernel has theirs).", &s.lookupsKnown),
		counter("folders_opened_total", "Snapshot and view folders opened for listing.", &s.foldersOpened),
		counter("folder_listings_total", "Listings of snapshot and view folders made for READDIR (the kernel keeps a folder's listing: one opened again is listed from its cache).", &s.listingsMade),
		counter("frame_read_requests_total", "READ requests for frame images (most reads are served from the page cache).", &s.frameReads),
		counter("video_file_bytes_total", "Bytes read from the stored videos shown in episode folders.", &s.videoBytes),
		counter("nodes_made_total", "Snapshot files and folders given a node at a lookup (a lookup of one the daemon has reuses its node).", &s.nodesMade),
		counter("nodes_forgotten_total", "Snapshot files and folders released after the kernel forgot them.", &s.nodes.forgotten),
		counter("memory_trims_total", "Times memory was given back to the system after many nodes were released.", &s.nodes.trims),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "framefs_metadata_cache_bytes",
			Help: "What the tables' metadata caches hold (rows, rows files, sizes, open videos, trees, manifests, snapshots).",
		}, func() float64 { return float64(m.metadataCacheBytes()) }),
		stagingCollector{m},
	}
}

// registerMetrics adds the mount's metrics to its registry.
func (m *mountFS) registerMetrics() error {
	for _, c := range m.collectors() {
		if err := m.metrics.Register(c); err != nil {
			m.unregisterMetrics()
			return fmt.Errorf("registering the mount's metrics (is the registry shared with another mount?): %w", err)
		}
		m.registered = append(m.registered, c)
	}
	return nil
}

// unregisterMetrics removes the mount's metrics from its registry, which
// may outlive it.
func (m *mountFS) unregisterMetrics() {
	for _, c := range m.registered {
		m.metrics.Unregister(c)
	}
	m.registered = nil
}

// metadataCacheBytes is what the tables' metadata caches hold.
func (m *mountFS) metadataCacheBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var cached int64
	for _, c := range m.catalogs {
		cached += c.CacheBytes()
	}
	return cached
}

// statsText is the content of .stats: every metric of the registry.
func (m *mountFS) statsText() []byte {
	families, err := m.metrics.Gather()
	if err != nil {
		// Gather returns what it could gather with the error.
		slog.Warn("gathering the metrics of .stats", "err", err)
	}
	var b bytes.Buffer
	if err := promtext.Write(&b, families, stagingLabels...); err != nil {
		slog.Warn("writing .stats", "err", err)
	}
	return b.Bytes()
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
	return &bytesHandle{data: n.m.statsText()}, fuse.FOPEN_DIRECT_IO, 0
}
