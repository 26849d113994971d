package fusefs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/table"
)

// The memory targets of a long-running mount, which the soaks check and
// print every minute and at their end (anonymous memory: the process's
// private pages, Go's and FFmpeg's heaps and the stacks; memory mapped
// from files is shared and reclaimable, and is reported beside it):
//
//   - bound: anonymous memory ≤ the caches configured (--cache-bytes +
//     --picture-cache-bytes) + 150 MB + bytes per head episode × episodes
//     in the head;
//   - no growth (soak-write): the peak of the second half of the run ≤
//     1.1 × the peak of its second to fifth tenth (minutes 2-5 of 10),
//     after subtracting the head-episode term (and, in runs shorter than
//     10 minutes, whose caches are still filling in their second tenth,
//     what the caches hold);
//   - follower: after the first minute, anonymous memory less what the
//     caches hold (image, picture and metadata caches) grows by no more
//     than 10% plus 2 KB per episode added.
const (
	memorySlack             = 150 << 20
	memoryGrowth            = 1.1
	followerBytesPerEpisode = 2 << 10
	// shortGrowth is the growth the rules allow in runs shorter than 10
	// minutes (make test's 2-minute ones): the decoder's sessions and
	// reused picture buffers and the collector's headroom fill during the
	// first 2 or 3 minutes, which such runs cannot tell from growth with
	// time. It still fails a mount that grows as before these rules (1.5x
	// to 1.6x from the second to the third minute of soak-write).
	shortGrowth = 1.5
)

// memorySample is what memoryWatch saw at one time.
type memorySample struct {
	at         time.Duration
	anon, file int64 // RssAnon and RssFile
	episodes   int64 // in the head
	// parts is where the memory was, from .stats.
	parts memoryParts
}

// caches is what the image, picture and metadata caches held.
func (s memorySample) caches() int64 { return s.parts.image + s.parts.picture + s.parts.metadata }

// memoryParts is what .stats says of where a daemon's memory is: its
// caches apart, and the Go runtime's share of its anonymous memory (what
// it has mapped, of which heap objects, and the collector's goal); the
// rest is FFmpeg's heap (decoders, kept pictures) and other C memory.
type memoryParts struct {
	image, picture, metadata int64
	// spillQueue is what waits to be spilled (serving/spill.go).
	spillQueue int64
	// imageBound is the image cache's bound in force, below the one
	// configured while the daemon is short of memory.
	imageBound                int64
	goMapped, goObjects, goal int64
	// goLive is what the last collection found live, and gcPercent the
	// GOGC the goal was set from.
	goLive, gcPercent int64
	// goUnused, goFree and goStacks are the heap's room in its spans,
	// its free pages not given back, and the stacks.
	goUnused, goFree, goStacks int64
	// goMetadata is the runtime's bookkeeping (spans, the collector's
	// work buffers).
	goMetadata int64
	// gcCPU is the CPU time the collector took so far, as the runtime
	// estimates it.
	gcCPU time.Duration
	// nodes are the snapshot files and folders the daemon has a node
	// for: made, less those the kernel forgot.
	nodes int64
	// cInUse and cFree are what malloc holds in use and free, and
	// pictureBuffers (idle of them) what kept pictures are mapped in:
	// FFmpeg's side of "the rest".
	cInUse, cFree, pictureBuffers, pictureIdle int64
}

// readMemoryParts reads a daemon's memoryParts from its .stats, 0 for
// what it cannot read.
func readMemoryParts(stats string) memoryParts {
	v, _ := readStats(stats)
	return memoryPartsOf(v)
}

// memoryPartsOf is the memoryParts of the values of a .stats (readStats).
func memoryPartsOf(v map[string]float64) memoryParts {
	return memoryParts{
		image: int64(v["framefs_image_cache_bytes"]), picture: int64(v["framefs_picture_cache_bytes"]),
		imageBound: int64(v["framefs_image_cache_bound_bytes"]),
		metadata:   int64(v["framefs_metadata_cache_bytes"]), goMapped: int64(v["framefs_go_mapped_bytes"]),
		goObjects: int64(v["framefs_go_heap_object_bytes"]), goal: int64(v["framefs_go_heap_goal_bytes"]),
		goLive: int64(v["framefs_go_heap_live_bytes"]), gcPercent: int64(v["framefs_go_gc_percent"]),
		goUnused: int64(v["framefs_go_heap_unused_bytes"]), goFree: int64(v["framefs_go_heap_free_bytes"]), goStacks: int64(v["framefs_go_stack_bytes"]),
		goMetadata: int64(v["framefs_go_metadata_bytes"]),
		gcCPU:      time.Duration(v["framefs_go_gc_cpu_seconds_total"] * float64(time.Second)),
		nodes:      int64(v["framefs_nodes_made_total"] - v["framefs_nodes_forgotten_total"]),
		cInUse:     int64(v["framefs_c_heap_in_use_bytes"]), cFree: int64(v["framefs_c_heap_free_bytes"]),
		pictureBuffers: int64(v["framefs_picture_buffer_bytes"]), pictureIdle: int64(v["framefs_picture_buffer_idle_bytes"]),
		spillQueue: int64(v["framefs_spill_queue_bytes"]),
	}
}

func (p memoryParts) String() string {
	return fmt.Sprintf("image cache %s (bound %s), picture cache %s, metadata caches %s, spill queue %s; Go runtime %s (heap objects %s, unused %s, free %s, stacks %s, metadata %s; goal %s from live %s at GOGC %d; collector CPU so far %.1f s); %d nodes",
		mib(p.image), mib(p.imageBound), mib(p.picture), mib(p.metadata), mib(p.spillQueue), mib(p.goMapped), mib(p.goObjects), mib(p.goUnused), mib(p.goFree), mib(p.goStacks), mib(p.goMetadata), mib(p.goal), mib(p.goLive), p.gcPercent, p.gcCPU.Seconds(), p.nodes)
}

// where says where the sample's memory was: its parts, and the rest of
// its anonymous memory, outside the Go runtime.
func (s memorySample) where() string {
	return fmt.Sprintf("%v; the rest %s (malloc in use %s, free %s; picture buffers %s, idle %s)", s.parts, mib(s.anon-s.parts.goMapped),
		mib(s.parts.cInUse), mib(s.parts.cFree), mib(s.parts.pictureBuffers), mib(s.parts.pictureIdle))
}

// headTerm is the memory the head's episodes may take.
func (s memorySample) headTerm() int64 { return s.episodes * mounttree.BytesPerHeadEpisode }

// memoryWatch samples a daemon's memory while a soak runs.
type memoryWatch struct {
	t          *testing.T
	name       string
	pid        int
	stats      string // the mount's .stats
	configured int64  // the caches the daemon was given
	tbl        *table.Table
	start      time.Time

	mu      sync.Mutex // guards samples
	samples []memorySample
}

func newMemoryWatch(t *testing.T, name string, pid int, mnt string, configured int64, tbl *table.Table) *memoryWatch {
	return &memoryWatch{t: t, name: name, pid: pid, stats: filepath.Join(mnt, statsName), configured: configured, tbl: tbl, start: time.Now()}
}

// run samples every half second, and logs a summary every minute, until
// stop is closed.
func (w *memoryWatch) run(stop chan struct{}) {
	var episodes int64
	lastEpisodes, lastLog := time.Time{}, time.Now()
	for {
		select {
		case <-stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
		if time.Since(lastEpisodes) > 2*time.Second {
			if head, err := w.tbl.Head(context.Background()); err == nil {
				episodes = head.Episodes
			}
			lastEpisodes = time.Now()
		}
		s := memorySample{at: time.Since(w.start), anon: procStatusBytes(w.pid, "RssAnon"), file: procStatusBytes(w.pid, "RssFile"),
			episodes: episodes, parts: readMemoryParts(w.stats)}
		if s.anon == 0 {
			continue // the daemon is gone
		}
		w.mu.Lock()
		w.samples = append(w.samples, s)
		w.mu.Unlock()
		if time.Since(lastLog) >= time.Minute {
			lastLog = time.Now()
			w.t.Log(w.report(false))
		}
	}
}

// memoryRules is how the samples of a run fare against the targets.
type memoryRules struct {
	last memorySample
	// peak is the sample of most anonymous memory over its bound, and
	// bound that bound.
	peak  memorySample
	bound int64
	// early and late are the peaks, less the head-episode term, of the
	// run's second to fifth tenth and of its second half; earlyLessCaches
	// and lateLessCaches the same less what the caches hold.
	early, late, earlyLessCaches, lateLessCaches int64
	// firstMinute is the peak of anonymous memory less the caches in the
	// first minute (or half of a shorter run), at firstEpisodes episodes;
	// follower is the sample after it that grew most over what the
	// follower rule allows, by followerExcess bytes (≤ 0: within).
	firstMinute, firstEpisodes int64
	follower                   memorySample
	followerExcess             int64
	// warm is how anonymous memory less the caches moved per episode
	// added after the run's first three tenths, when the caches, the
	// decoders' buffers and the collector's headroom have filled: the
	// least-squares slope over those samples (warmSamples of them, from
	// warmFrom to warmTo episodes).
	warm             float64
	warmSamples      int
	warmFrom, warmTo int64
}

func (w *memoryWatch) rules() (memoryRules, bool) {
	w.mu.Lock()
	samples := append([]memorySample(nil), w.samples...)
	w.mu.Unlock()
	if len(samples) == 0 {
		return memoryRules{}, false
	}
	r := memoryRules{last: samples[len(samples)-1]}
	end := r.last.at
	first := min(time.Minute, end/2)
	r.followerExcess = -1 << 62
	worst := int64(-1 << 62)
	for _, s := range samples {
		if over := s.anon - (w.configured + memorySlack + s.headTerm()); over > worst {
			worst, r.peak, r.bound = over, s, w.configured+memorySlack+s.headTerm()
		}
		v := s.anon - s.headTerm()
		switch {
		case s.at >= end/2:
			r.late, r.lateLessCaches = max(r.late, v), max(r.lateLessCaches, v-s.caches())
		case s.at >= end/5:
			r.early, r.earlyLessCaches = max(r.early, v), max(r.earlyLessCaches, v-s.caches())
		}
		if s.at <= first && s.anon-s.caches() > r.firstMinute {
			r.firstMinute, r.firstEpisodes = s.anon-s.caches(), s.episodes
		}
	}
	r.warm, r.warmSamples, r.warmFrom, r.warmTo = perEpisodeSlope(samples, end*3/10)
	for _, s := range samples {
		if s.at <= first {
			continue
		}
		allowed := int64(memoryGrowth*float64(r.firstMinute)) + followerBytesPerEpisode*(s.episodes-r.firstEpisodes)
		if excess := s.anon - s.caches() - allowed; excess > r.followerExcess {
			r.follower, r.followerExcess = s, excess
		}
	}
	return r, true
}

// perEpisodeSlope is the least-squares slope of anonymous memory less the
// caches against the episodes in the head, over the samples from time
// from on, with how many there were and the episodes they span; 0 when
// the episodes did not change.
func perEpisodeSlope(samples []memorySample, from time.Duration) (slope float64, n int, lo, hi int64) {
	var sx, sy float64
	lo, hi = 1<<62, -1
	for _, s := range samples {
		if s.at >= from {
			n++
			sx, sy = sx+float64(s.episodes), sy+float64(s.anon-s.caches())
			lo, hi = min(lo, s.episodes), max(hi, s.episodes)
		}
	}
	if n < 2 || hi <= lo {
		return 0, n, lo, hi
	}
	mx, my := sx/float64(n), sy/float64(n)
	var sxy, sxx float64
	for _, s := range samples {
		if s.at >= from {
			dx := float64(s.episodes) - mx
			sxy += dx * (float64(s.anon-s.caches()) - my)
			sxx += dx * dx
		}
	}
	return sxy / sxx, n, lo, hi
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// report describes the run so far against the targets.
func (w *memoryWatch) report(final bool) string {
	r, ok := w.rules()
	if !ok {
		return w.name + ": no memory samples"
	}
	when := fmt.Sprintf("at %s", r.last.at.Round(time.Second))
	if final {
		when = "at the end"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s memory %s: anonymous %s (mapped from files %s), caches hold %s, %d episodes in the head\n", w.name, when,
		mib(r.last.anon), mib(r.last.file), mib(r.last.caches()), r.last.episodes)
	fmt.Fprintf(&b, "  where: %s\n", r.last.where())
	fmt.Fprintf(&b, "  bound: peak anonymous %s at %s ≤ caches %s + 150 MB + %d B × %d head episodes = %s: %v\n",
		mib(r.peak.anon), r.peak.at.Round(time.Second), mib(w.configured), mounttree.BytesPerHeadEpisode, r.peak.episodes, mib(r.bound), r.peak.anon <= r.bound)
	fmt.Fprintf(&b, "    where at that peak: %s\n", r.peak.where())
	if r.early > 0 && r.late > 0 {
		fmt.Fprintf(&b, "  no growth: peak of the second half %s ≤ %.1f × peak of the second to fifth tenth %s (head term subtracted): %v (%.2fx); less the caches %s ≤ %.1f × %s: %v (%.2fx)\n",
			mib(r.late), memoryGrowth, mib(r.early), float64(r.late) <= memoryGrowth*float64(r.early), float64(r.late)/float64(r.early),
			mib(r.lateLessCaches), memoryGrowth, mib(r.earlyLessCaches), float64(r.lateLessCaches) <= memoryGrowth*float64(r.earlyLessCaches),
			float64(r.lateLessCaches)/float64(r.earlyLessCaches))
	}
	if r.follower.at > 0 {
		fmt.Fprintf(&b, "  follower: anonymous less caches %s at %s (%d episodes) ≤ %.1f × %s (first minute, %d episodes) + 2 KB per episode added: %v (%s over)",
			mib(r.follower.anon-r.follower.caches()), r.follower.at.Round(time.Second), r.follower.episodes, memoryGrowth, mib(r.firstMinute), r.firstEpisodes,
			r.followerExcess <= 0, mib(r.followerExcess))
		fmt.Fprintf(&b, "\n    where then: %s", r.follower.where())
		if r.warmTo > r.warmFrom {
			fmt.Fprintf(&b, "\n  after the first three tenths: anonymous less caches moved %+.1f KB per episode added (least squares over %d samples, %d to %d episodes)",
				r.warm/1000, r.warmSamples, r.warmFrom, r.warmTo)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// check fails the test for the targets the soak holds to: the bound,
// and the no-growth rule (growth) or the follower rule (follower), with
// shortGrowth for memoryGrowth in runs planned shorter than 10 minutes.
// (The run's plan decides, not its last sample: a 10-minute run's last
// sample may come a moment before 10 minutes.)
func (w *memoryWatch) check(planned time.Duration, growth, follower bool) {
	t := w.t
	t.Log(w.report(true))
	r, ok := w.rules()
	if !ok {
		t.Error("no memory samples were taken")
		return
	}
	if r.peak.anon > r.bound {
		t.Errorf("%s: anonymous memory %d bytes at %s exceeds its bound %d", w.name, r.peak.anon, r.peak.at, r.bound)
	}
	late, early, allowed := r.late, r.early, memoryGrowth
	short := planned < 10*time.Minute
	if short {
		late, early, allowed = r.lateLessCaches, r.earlyLessCaches, shortGrowth
	}
	if growth && float64(late) > allowed*float64(early) {
		t.Errorf("%s: memory grew with time: peak %d bytes in the second half, %d in the second to fifth tenth", w.name, late, early)
	}
	excess := r.followerExcess
	if short {
		excess -= int64((shortGrowth - memoryGrowth) * float64(r.firstMinute))
	}
	if follower && excess > 0 {
		t.Errorf("%s: anonymous memory less caches grew %d bytes more than the follower rule allows", w.name, excess)
	}
}

// TestPerEpisodeSlope: the slope the follower soak prints is that of the
// samples after the time given, caches subtracted.
func TestPerEpisodeSlope(t *testing.T) {
	var samples []memorySample
	for i := range 20 {
		s := memorySample{at: time.Duration(i) * time.Second, episodes: int64(10 * i)}
		s.parts.image = int64(i) << 20 // caches filling do not count
		s.anon = 50<<20 + s.parts.image + 1500*s.episodes
		if i < 5 {
			s.anon += 8 << 20 // a warm-up that is left out
		}
		samples = append(samples, s)
	}
	slope, n, lo, hi := perEpisodeSlope(samples, 5*time.Second)
	if slope < 1499.9 || slope > 1500.1 || n != 15 || lo != 50 || hi != 190 {
		t.Errorf("slope %.1f B per episode over %d samples, %d to %d episodes; want 1500 over 15, 50 to 190", slope, n, lo, hi)
	}
}
