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
// Run sets GOGC so that the headroom is Percent of the heap that is not
// cache, never less than MinHeadroom: the collector runs as often as it
// would without the cache, and a cache costs its size once. On a small
// heap that is a GOGC above 100; a cap at 100 gave the heap headroom in
// proportion to its caches again, and a mount whose caches filled over
// its first minutes grew by twice what they took.
//
// The Go heap is not all of a mount's memory: FFmpeg's decoders and the
// decoded pictures it keeps are allocated in C, where the collector cannot
// see them. Given a Budget for the process's anonymous memory, Run also
// sets the Go heap's soft limit to what the C side leaves of it, read
// again after each collection, so that the collector works harder when
// the decoders need more rather than let the two add up past the budget.
//
// The goal bounds the heap's objects, not the memory the runtime keeps
// for them: it holds on to freed pages up to a tenth above the goal and
// gives back the rest slowly, and a cycle that overshoots its goal leaves
// its pages behind. In a read-only mount following a table for 10
// minutes, the Go runtime kept 1.16 times its goal at its peak, where it
// had kept 1.02 times it in the first minute. So Run also sets the soft
// limit, after each collection, to the goal it paced plus the runtime's
// memory besides the heap (see PacedLimit): the heap's free pages past
// the goal are given back, and the room left between objects in the
// heap's spans comes out of the headroom instead of adding to it. The
// collector then runs more often on a fragmented heap: in the 10-minute
// write soak, whose heap is short of its budget, it took 127 s of CPU
// where it took 97 s, and the mount's peak was 7 MiB lower.
//
// When even that leaves the heap less than MinHeadroom above its live
// bytes, the collector would run without pause and the process would
// still outgrow its budget: the memory it cannot drop (nodes the kernel
// holds, decoders at work) has outgrown the room the caches left it. Run
// then tells the caches, through Yield, how much to give way, and how much
// room they may take back once the pressure is gone.
package gcpace

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/framefs/framefs/internal/procstatus"
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
	// Every is how often Run looks at the runtime's metrics (100 ms).
	// It works GOGC and the limit out again after each collection, as
	// soon as it sees one, and at least every ten looks.
	Every time.Duration
	// Budget, when positive, bounds the process's anonymous memory (the
	// Go runtime's and C libraries'): the Go heap's soft limit is set to
	// Budget less the anonymous memory outside the Go runtime, never
	// below the live heap plus half of MinHeadroom: past the budget, the
	// collector runs up to twice as often as the pacing alone has it.
	Budget int64
	// Yield, when set with Budget, is told after each collection how
	// many bytes the caches should give up (positive) for the Go heap to
	// keep MinHeadroom above its live bytes within the budget, or may
	// take back (negative). See CacheBound.
	Yield func(short int64)
}

func (o Options) withDefaults() Options {
	if o.Percent <= 0 {
		o.Percent = 100
	}
	if o.MinHeadroom <= 0 {
		o.MinHeadroom = 32 << 20
	}
	if o.Every <= 0 {
		o.Every = 100 * time.Millisecond
	}
	return o
}

// Percent returns the GOGC that lets a heap of live bytes, cached of them
// held by caches, grow by percent of its uncached part (at least
// minHeadroom bytes) before the next collection. With nothing live yet it
// is percent.
func Percent(live, cached int64, percent int, minHeadroom int64) int {
	if live <= 0 {
		return percent
	}
	headroom := max((live-min(max(cached, 0), live))*int64(percent)/100, minHeadroom)
	// The runtime's goal is live + live*GOGC/100 (plus stacks and
	// globals, small here), so GOGC = 100*headroom/live, rounded up.
	p := (headroom*100 + live - 1) / live
	// The runtime collects no heap smaller than 4 MiB x GOGC/100: a GOGC
	// that puts that above minHeadroom would let a heap that is still
	// small (one just started) grow past its floor.
	ceiling := max(int64(percent), 100*minHeadroom/runtimeHeapMinimum)
	return int(min(max(p, 1), ceiling))
}

// runtimeHeapMinimum is the Go runtime's least heap goal at GOGC=100.
const runtimeHeapMinimum = 4 << 20

// Limit returns the Go heap's soft limit that keeps a process within
// budget bytes of anonymous memory when outside bytes of it are not the
// Go runtime's: the rest of the budget, but never less than the live heap
// plus minHeadroom, so that a heap which has outgrown the budget is
// collected as often as with a small GOGC, not continuously.
func Limit(budget, outside, live, minHeadroom int64) int64 {
	return max(budget-max(outside, 0), live+minHeadroom)
}

// PacedLimit returns the soft limit that holds the Go runtime's memory to
// what the pacing allows: the heap goal that GOGC percent gives a heap of
// live bytes, plus nonHeap bytes of the runtime's memory that is not heap
// (stacks, its own bookkeeping). Without it the runtime keeps free pages
// up to a tenth above the goal, and more after a cycle that overshot it.
// The runtime counts the room between objects in the heap's spans, unused
// bytes, against such a limit but not in its goal: the room comes out of
// the headroom, so the collector runs more often on a fragmented heap,
// but never more than half of minHeadroom of it, so that the collector
// runs at most about twice as often as the pacing has it, not without
// pause.
func PacedLimit(live int64, percent int, unused, nonHeap, minHeadroom int64) int64 {
	goal := live + live*int64(percent)/100
	return max(goal, live+unused+minHeadroom/2) + nonHeap
}

// budgetLimit returns the soft limit that keeps the process's anonymous
// memory, anon, within opts.Budget, given the Go runtime's memory m; after
// a collection (collected) it first tells the caches, through opts.Yield,
// what the heap is short of MinHeadroom.
func budgetLimit(opts Options, m Memory, anon int64, collected bool) int64 {
	// Pages the Go runtime has mapped but never touched (a large slice it
	// zeroed by mapping fresh memory, then freed) count as its memory but
	// are not resident: what is outside it is then under nothing, not
	// below zero.
	outside := max(anon-m.Resident, 0)
	// Once per collection, so that what the caches gave up is seen before
	// they are asked again: the heap holds its live objects and the room
	// left in its spans between them (which it cannot give back, and which
	// grew to a fifth of the heap in the write soak), and the runtime's
	// memory besides the heap needs room too.
	if opts.Yield != nil && collected {
		opts.Yield(m.Live + m.Unused + opts.MinHeadroom + m.Overhead() - (opts.Budget - outside))
	}
	return Limit(opts.Budget, outside, m.Live, opts.MinHeadroom/2)
}

// CacheBound returns a cache's new bound, from its bound in force, the
// size it was configured with and the bytes the caches are short (as
// Yield is told): lower by what is short, or higher by half the room
// there is, so that a cache grows back over a few collections rather
// than into the next shortage; never below a quarter of its configured
// size (what it holds is wanted again, and fills need room) nor above it.
func CacheBound(bound, configured, short int64) int64 {
	if short < 0 {
		short /= 2
	}
	return min(max(bound-short, configured/4), configured)
}

// Run sets GOGC from the live heap and opts.Cached, and the soft limit
// from the goal that gives and from opts.Budget, the lower of the two,
// after each collection until ctx is done, then puts back the GOGC and
// limit it found. It leaves GOGC alone when the GOGC
// environment variable is set, and the limit when GOMEMLIMIT is: the user
// chose.
//
// The runtime sets a cycle's goal from the live heap the last collection
// found, times 1+GOGC/100, so a GOGC worked out for an older live heap
// gives the wrong headroom: 2.5 times what the live heap grew by at a
// GOGC of 150. Set once a second, GOGC lagged collections that came
// faster (a 5% change was also needed to move it), and a follower's goal
// went up to 5 MiB past the live heap plus the floor; the memory the heap
// then took was kept after the goal came back down. Set as soon as a
// collection is seen, the goal is off only by what the heap allocated
// before the new GOGC reached it.
func Run(ctx context.Context, opts Options) {
	pace := os.Getenv("GOGC") == "" && opts.Cached != nil
	userLimit := os.Getenv("GOMEMLIMIT") != ""
	bound := !userLimit && opts.Budget > 0
	// paceLimit: the soft limit follows the paced goal (PacedLimit).
	paceLimit := pace && !userLimit
	if !pace && !bound {
		return
	}
	opts = opts.withDefaults()
	cyclesSample := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	current := opts.Percent
	if pace {
		defer debug.SetGCPercent(debug.SetGCPercent(current))
	}
	// limit is the soft limit set last; ceiling, the budget once the
	// memory outside the Go runtime cannot be read.
	var limit, ceiling int64 = math.MaxInt64, math.MaxInt64
	if bound || paceLimit {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	}
	tick := time.NewTicker(opts.Every)
	defer tick.Stop()
	var paced uint64 // the collections counted when last paced
	for looks := 0; ; looks++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(cyclesSample)
		if cyclesSample[0].Value.Kind() != metrics.KindUint64 {
			return // a runtime without the metrics: keep things as they are
		}
		cycles := cyclesSample[0].Value.Uint64()
		collected := cycles != paced
		if !collected && looks%10 != 0 {
			continue // no collection since the last pacing
		}
		paced = cycles
		m, ok := ReadMemory()
		if !ok {
			return
		}
		if pace {
			if p := Percent(m.Live, opts.Cached(), opts.Percent, opts.MinHeadroom); p != current {
				debug.SetGCPercent(p)
				current = p
			}
		}
		l := ceiling
		if paceLimit {
			l = min(l, PacedLimit(m.Live, current, m.Unused, m.Overhead(), opts.MinHeadroom))
		}
		if bound {
			if anon, err := procstatus.Bytes(0, "RssAnon"); err == nil {
				l = min(l, budgetLimit(opts, m, anon, collected))
			} else {
				bound, ceiling = false, opts.Budget // the budget for the Go runtime alone
				l = min(l, ceiling)
			}
		}
		// Moves of less than 1 MiB are noise of the sampling.
		if d := l - limit; l != math.MaxInt64 && (d > 1<<20 || -d > 1<<20) {
			debug.SetMemoryLimit(l)
			limit = l
		}
	}
}
