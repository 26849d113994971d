// Package gcpace gives the Go garbage collector headroom in proportion to
// the part of the heap that is not cache.
//
// With GOGC=100 the runtime lets the heap grow to twice what was live after
// the last collection before it collects again. Most of a mount's live heap
// is its image cache: encoded frames kept on purpose and bounded by
// --cache-bytes. They are byte slices, so the collector marks them without
// scanning them, and they are not where garbage comes from (FUSE requests,
// directory listings and commits are). Doubling them buys nothing: with a
// full 64 MiB image cache and 30 MiB of other live objects the heap would
// grow to 188 MiB between collections, where 124 MiB gives the rest of the
// heap the same room.
//
// Run lowers GOGC so that the headroom is Percent of the heap that is not
// cache, never less than MinHeadroom: the collector runs as often as it
// would without the cache, and a cache costs its size once.
package gcpace

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Options configure Run. Zero values take the defaults.
type Options struct {
	// Cached returns how many bytes of the Go heap caches hold.
	Cached func() int64
	// Percent is the headroom of the rest of the heap, as GOGC states it
	// (100).
	Percent int
	// MinHeadroom is the least headroom in bytes (32 MiB), so that a heap
	// that is nearly all cache is not collected after every few
	// allocations.
	MinHeadroom int64
	// Every is how often GOGC is worked out again (1 s).
	Every time.Duration
}

func (o Options) withDefaults() Options {
	if o.Percent <= 0 {
		o.Percent = 100
	}
	if o.MinHeadroom <= 0 {
		o.MinHeadroom = 32 << 20
	}
	if o.Every <= 0 {
		o.Every = time.Second
	}
	return o
}

// Percent returns the GOGC that lets a heap of live bytes, cached of them
// held by caches, grow by percent of its uncached part (at least
// minHeadroom bytes) before the next collection. It is never above
// percent; with nothing live yet it is percent.
func Percent(live, cached int64, percent int, minHeadroom int64) int {
	if live <= 0 {
		return percent
	}
	headroom := max((live-min(max(cached, 0), live))*int64(percent)/100, minHeadroom)
	// The runtime's goal is live + live*GOGC/100 (plus stacks and
	// globals, small here), so GOGC = 100*headroom/live, rounded up.
	p := (headroom*100 + live - 1) / live
	return int(min(max(p, 1), int64(percent)))
}

// Run sets GOGC from the live heap and opts.Cached every opts.Every until
// ctx is done, then puts back the GOGC it found. It does nothing when the
// GOGC environment variable is set: the user chose.
func Run(ctx context.Context, opts Options) {
	if os.Getenv("GOGC") != "" || opts.Cached == nil {
		return
	}
	opts = opts.withDefaults()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := debug.SetGCPercent(opts.Percent)
	defer debug.SetGCPercent(current)
	current = opts.Percent
	tick := time.NewTicker(opts.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return // a runtime without the metric: keep GOGC as it is
		}
		p := Percent(int64(sample[0].Value.Uint64()), opts.Cached(), opts.Percent, opts.MinHeadroom)
		// Small moves are not worth a change of the pacer's goal.
		if diff := p - current; diff*20 > current || -diff*20 > current {
			debug.SetGCPercent(p)
			current = p
		}
	}
}
