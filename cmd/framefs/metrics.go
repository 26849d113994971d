package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/framefs/framefs/cache"
	"github.com/framefs/framefs/cache/diskcache"
	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/internal/gcpace"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table/storage"
)

// statsCollector shows the fields of a stats value as metrics. read is
// called once each time the registry is gathered (an open of .stats, a
// scrape of --metrics-addr), so the values of one gathering agree and the
// counting itself stays what it was.
type statsCollector[S any] struct {
	read    func() S
	metrics []statMetric[S]
}

// statMetric is one metric of a statsCollector.
type statMetric[S any] struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(S) float64
}

func (c statsCollector[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

func (c statsCollector[S]) Collect(ch chan<- prometheus.Metric) {
	s := c.read()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(s))
	}
}

// number is what a stats field counts in.
type number interface {
	~int | ~int64 | ~uint64 | ~float64
}

// counter and gauge make a metric of a stats field. These metrics have
// never had help text in .stats, and keep their text.
func counter[S any, N number](name string, field func(S) N) statMetric[S] {
	return statMetric[S]{prometheus.NewDesc(name, "", nil, nil), prometheus.CounterValue, func(s S) float64 { return float64(field(s)) }}
}

func gauge[S any, N number](name string, field func(S) N) statMetric[S] {
	return statMetric[S]{prometheus.NewDesc(name, "", nil, nil), prometheus.GaugeValue, func(s S) float64 { return float64(field(s)) }}
}

// thousandths rounds x to three decimals, as .stats has always shown
// fractional values.
func thousandths(x float64) float64 { return math.Round(x*1000) / 1000 }

// readGoMemory is what .stats shows of the Go runtime's memory: zeros
// from a runtime without the metrics.
func readGoMemory() gcpace.Memory {
	m, _ := gcpace.ReadMemory()
	return m
}

// diskTier is what .stats shows of --cache-dir.
type diskTier struct {
	diskcache.Stats
	// served counts frames served from the disk tier.
	served int64
	// Videos are read once before the disk tier is used for them, to
	// check the digest their table records (see serving/digests.go):
	// hashed bytes, and mismatches found.
	hashed, mismatched int64
}

// registerServingMetrics adds to reg the metrics of what a mount command
// runs besides the mount's tree: the frame server (image cache, decoder
// sessions, picture cache, GOP fills), FFmpeg's heap trims, the Go
// runtime's memory, and the disk tier (disk, if not nil) and the S3 store
// (if store is one).
func registerServingMetrics(reg prometheus.Registerer, frames *serving.Server, disk *diskcache.Cache, store storage.Store) error {
	collectors := []prometheus.Collector{
		statsCollector[cache.Stats]{read: frames.CacheStats, metrics: []statMetric[cache.Stats]{
			counter("framefs_image_cache_hits_total", func(s cache.Stats) int64 { return s.Hits }),
			counter("framefs_image_cache_misses_total", func(s cache.Stats) int64 { return s.Misses }),
			gauge("framefs_image_cache_bytes", func(s cache.Stats) int64 { return s.Bytes }),
			// Served frames asked for again: the kernel's page cache had
			// lost them (see docs/CACHES.md).
			counter("framefs_image_cache_served_again_total", func(s cache.Stats) int64 { return s.ColdHits }),
			gauge("framefs_image_cache_served_entries", func(s cache.Stats) int { return s.Demoted }),
		}},
		statsCollector[serving.PoolStats]{read: frames.PoolStats, metrics: []statMetric[serving.PoolStats]{
			gauge("framefs_decoder_sessions_open", func(s serving.PoolStats) int { return s.Open }),
			counter("framefs_decoder_frames_decoded_total", func(s serving.PoolStats) int { return s.Decoded }),
			counter("framefs_decoder_seeks_total", func(s serving.PoolStats) int { return s.Seeks }),
			gauge("framefs_picture_cache_bytes", func(s serving.PoolStats) int64 { return s.PictureBytes }),
			counter("framefs_picture_cache_hits_total", func(s serving.PoolStats) int { return s.PictureHits }),
		}},
		// The image cache's bound in force: below --cache-bytes while the
		// mount is short of memory (see internal/gcpace).
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "framefs_image_cache_bound_bytes"}, func() float64 {
			bound, _ := frames.ImageCacheBytes()
			return float64(bound)
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "framefs_c_heap_trims_total"}, func() float64 { return float64(decoder.MemoryTrims()) }),
		// What FFmpeg and libjpeg-turbo hold: with the Go runtime's
		// memory, it says where the anonymous memory outside the Go
		// heap is.
		statsCollector[decoder.CMemory]{read: decoder.ReadCMemory, metrics: []statMetric[decoder.CMemory]{
			gauge("framefs_c_heap_in_use_bytes", func(s decoder.CMemory) int64 { return s.MallocInUse }),
			gauge("framefs_c_heap_free_bytes", func(s decoder.CMemory) int64 { return s.MallocFree }),
			gauge("framefs_picture_buffer_bytes", func(s decoder.CMemory) int64 { return s.Pictures }),
			gauge("framefs_picture_buffer_idle_bytes", func(s decoder.CMemory) int64 { return s.PicturesIdle }),
			gauge("framefs_c_heap_arenas", func(s decoder.CMemory) int { return s.Arenas }),
		}},
		statsCollector[gcpace.Memory]{read: readGoMemory, metrics: []statMetric[gcpace.Memory]{
			gauge("framefs_go_heap_object_bytes", func(s gcpace.Memory) int64 { return s.Objects }),
			gauge("framefs_go_mapped_bytes", func(s gcpace.Memory) int64 { return s.Resident }),
			gauge("framefs_go_gc_percent", func(s gcpace.Memory) int64 { return s.GCPercent }),
			gauge("framefs_go_heap_goal_bytes", func(s gcpace.Memory) int64 { return s.Goal }),
			gauge("framefs_go_heap_live_bytes", func(s gcpace.Memory) int64 { return s.Live }),
			gauge("framefs_go_heap_unused_bytes", func(s gcpace.Memory) int64 { return s.Unused }),
			gauge("framefs_go_heap_free_bytes", func(s gcpace.Memory) int64 { return s.Free }),
			gauge("framefs_go_stack_bytes", func(s gcpace.Memory) int64 { return s.Stacks }),
			gauge("framefs_go_metadata_bytes", func(s gcpace.Memory) int64 { return s.Metadata }),
			gauge("framefs_go_memory_limit_bytes", func(s gcpace.Memory) int64 { return s.Limit }),
			counter("framefs_go_gc_cpu_seconds_total", func(s gcpace.Memory) float64 { return thousandths(s.GCCPUSeconds) }),
		}},
		statsCollector[serving.FillStats]{read: frames.FillStats, metrics: []statMetric[serving.FillStats]{
			counter("framefs_gop_fills_total", func(s serving.FillStats) int64 { return s.Fills }),
			counter("framefs_gop_fill_frames_total", func(s serving.FillStats) int64 { return s.FramesFilled }),
			counter("framefs_gop_fill_frames_served_total", func(s serving.FillStats) int64 { return s.Useful }),
			counter("framefs_gop_fill_frames_wasted_total", func(s serving.FillStats) int64 { return s.Wasted }),
			counter("framefs_gop_fills_declined_total", func(s serving.FillStats) int64 { return s.Declined }),
			counter("framefs_gop_fill_frames_packed_total", func(s serving.FillStats) int64 { return s.FramesPacked }),
			counter("framefs_packed_picture_bytes_total", func(s serving.FillStats) int64 { return s.PackedBytes }),
			counter("framefs_images_from_packed_pictures_total", func(s serving.FillStats) int64 { return s.Unpacked }),
			counter("framefs_gop_fill_frames_compressed_total", func(s serving.FillStats) int64 { return s.FramesCompressed }),
			counter("framefs_compressed_image_bytes_total", func(s serving.FillStats) int64 { return s.CompressedBytes }),
			counter("framefs_images_from_compressed_images_total", func(s serving.FillStats) int64 { return s.Decompressed }),
			counter("framefs_frame_sizes_frames_kept_total", func(s serving.FillStats) int64 { return s.FramesSized }),
			counter("framefs_gop_fill_frames_spilled_total", func(s serving.FillStats) int64 { return s.Spilled }),
			counter("framefs_gop_fill_frames_spill_dropped_total", func(s serving.FillStats) int64 { return s.SpillDropped }),
			gauge("framefs_spill_queue_bytes", func(s serving.FillStats) int64 { return s.SpillQueueBytes }),
			gauge("framefs_gop_fill_usefulness", func(s serving.FillStats) float64 { return thousandths(s.Usefulness) }),
		}},
	}
	if disk != nil {
		read := func() diskTier {
			hashed, mismatched := frames.DigestChecks()
			return diskTier{Stats: disk.Stats(), served: frames.StoreHits(), hashed: hashed, mismatched: mismatched}
		}
		collectors = append(collectors, statsCollector[diskTier]{read: read, metrics: []statMetric[diskTier]{
			counter("framefs_disk_cache_frames_served_total", func(s diskTier) int64 { return s.served }),
			counter("framefs_disk_cache_writes_total", func(s diskTier) int64 { return s.Writes }),
			counter("framefs_disk_cache_evictions_total", func(s diskTier) int64 { return s.Evictions }),
			counter("framefs_disk_cache_corrupt_total", func(s diskTier) int64 { return s.Corrupt }),
			counter("framefs_disk_cache_write_errors_total", func(s diskTier) int64 { return s.Errors }),
			gauge("framefs_disk_cache_bytes", func(s diskTier) int64 { return s.Bytes }),
			gauge("framefs_disk_cache_entries", func(s diskTier) int64 { return s.Entries }),
			counter("framefs_disk_cache_digest_checked_bytes_total", func(s diskTier) int64 { return s.hashed }),
			counter("framefs_disk_cache_digest_mismatches_total", func(s diskTier) int64 { return s.mismatched }),
		}})
	}
	if s3, ok := store.(*storage.S3); ok {
		collectors = append(collectors, statsCollector[storage.S3Stats]{read: s3.Stats, metrics: []statMetric[storage.S3Stats]{
			counter("framefs_s3_get_requests_total", func(s storage.S3Stats) int64 { return s.GETs }),
			counter("framefs_s3_head_requests_total", func(s storage.S3Stats) int64 { return s.HEADs }),
			counter("framefs_s3_put_requests_total", func(s storage.S3Stats) int64 { return s.PUTs }),
			counter("framefs_s3_list_requests_total", func(s storage.S3Stats) int64 { return s.LISTs }),
			counter("framefs_s3_read_bytes_total", func(s storage.S3Stats) int64 { return s.BytesRead }),
			counter("framefs_s3_read_retries_total", func(s storage.S3Stats) int64 { return s.ReadRetries }),
			counter("framefs_s3_metadata_cache_hits_total", func(s storage.S3Stats) int64 { return s.MetadataHits }),
			counter("framefs_s3_block_cache_hits_total", func(s storage.S3Stats) int64 { return s.Cache.Hits }),
			counter("framefs_s3_block_cache_misses_total", func(s storage.S3Stats) int64 { return s.Cache.Misses }),
			counter("framefs_s3_block_cache_prefetches_total", func(s storage.S3Stats) int64 { return s.Cache.Prefetches }),
			counter("framefs_s3_block_cache_evictions_total", func(s storage.S3Stats) int64 { return s.Cache.Evictions }),
			counter("framefs_s3_block_cache_corrupt_total", func(s storage.S3Stats) int64 { return s.Cache.Corrupt }),
			gauge("framefs_s3_block_cache_bytes", func(s storage.S3Stats) int64 { return s.Cache.Bytes }),
		}})
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering metrics: %w", err)
		}
	}
	return nil
}

// metricsServer serves a registry at http://ADDR/metrics.
type metricsServer struct {
	srv *http.Server
	l   net.Listener
}

// listenMetrics takes addr (--metrics-addr) for the metrics of reg; they
// are served from start until stop. Taking the address first makes a bad
// or busy one an error before anything is mounted.
func listenMetrics(addr string, reg prometheus.Gatherer) (*metricsServer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %q: %w (want HOST:PORT, e.g. localhost:9464)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn)}))
	return &metricsServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, l: l}, nil
}

// start serves in the background.
func (s *metricsServer) start() {
	slog.Info("serving metrics", "url", "http://"+s.l.Addr().String()+"/metrics")
	go func() {
		if err := s.srv.Serve(s.l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Warn("metrics server", "err", err)
		}
	}()
}

// stop closes the listener and every connection.
func (s *metricsServer) stop() {
	s.srv.Close()
	s.l.Close() // if it was never served
}
