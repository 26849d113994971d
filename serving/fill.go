package serving

import (
	"math"
	"sync"
	"time"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/videoidx"
)

// GOP fills.
//
// A request for a frame that is neither cached nor reached by decoding on
// (a shuffled loader's request, a random reader's) must decode from the
// keyframe of its GOP. A training epoch later asks for every other frame of
// that GOP too, in random order; decoding the GOP's prefix again for each
// of them is what made shuffled epochs slow (about 8 pictures decoded per
// frame served at GOP 30). A fill decodes the whole GOP once instead, in
// order, and encodes every frame of it not cached yet on the read-ahead
// machinery's encoder goroutines; the frames nobody asked for wait in the
// image cache, 15x smaller than pictures, for the requests to come.
//
// A fill costs the decoding of the frames after the requested one and the
// encoding of its siblings; it pays off when enough siblings are asked for
// before the cache evicts them. fillPolicy measures that: siblings served
// from the cache count as useful, siblings evicted unserved (and not kept
// by an ImageStore) as wasted. With an optimistic prior, fills run until
// evidence says they do not pay off: a dataset much larger than the cache,
// read without a disk tier, or a reader that never comes back to a GOP.

// group returns the frames [from, to) of v that share frame ordinal's
// decode start, within the frames requests may ask for (v's span): the
// frames a fill decodes and encodes. It stops at maxGroup frames on either
// side, so that a video with very long GOPs (or one keyframe) fills a
// bounded window around the request.
func group(v media.Video, ordinal int) (from, to int) {
	ix := v.Index
	lo, hi := v.Span()
	ds := ix.DecodeStart(ordinal)
	from, to = ordinal, ordinal+1
	for from > lo && ordinal-from < maxGroup && ix.DecodeStart(from-1) == ds {
		from--
	}
	for to < hi && to-ordinal < maxGroup && ix.DecodeStart(to) == ds {
		to++
	}
	return from, to
}

// maxGroup bounds the frames a fill takes on either side of the request:
// 300 is 10 s at 30 fps, more than the usual GOP, and keeps a fill's work
// (and the cache it takes) bounded for videos with a keyframe every few
// minutes.
const maxGroup = 300

// FillStats counts what GOP fills did.
type FillStats struct {
	// Fills is the number of GOP fills started; FramesFilled the frames
	// they encoded for requests still to come (not the requested ones).
	Fills, FramesFilled int64
	// Useful counts filled frames later served from the cache; Wasted
	// those evicted from it unserved and not kept by the ImageStore.
	Useful, Wasted int64
	// Declined counts requests that decoded their frame alone because
	// fills were not paying off.
	Declined int64
	// Usefulness is the current estimate of the share of filled frames
	// that are served (see fillPolicy).
	Usefulness float64
}

// fillPolicy decides whether a request fills its GOP, from the measured
// usefulness of earlier fills and the measured costs of decoding and
// encoding a frame. Safe for concurrent use.
type fillPolicy struct {
	mu sync.Mutex
	// useful and wasted are decayed counts of filled frames served and
	// evicted unserved.
	useful, wasted float64
	// decodeNs and encodeNs are moving averages of the time to decode a
	// picture and to convert and encode an image; imageBytes of the size of
	// an image served.
	decodeNs, encodeNs, imageBytes float64
	stats                          FillStats
}

const (
	// priorUseful counts as that many useful filled frames before any
	// evidence: fills start on, and a few wasted frames do not stop them.
	priorUseful = 8
	// usefulnessWindow is the count of evidence after which older evidence
	// is halved, so the estimate follows a reader that changes its ways.
	usefulnessWindow = 8192
	// costSmoothing is the weight of a new cost measurement.
	costSmoothing = 0.05
)

func newFillPolicy() *fillPolicy {
	// Costs before the first measurement: decoding and encoding a 640x480
	// frame take about a millisecond each.
	return &fillPolicy{decodeNs: 1e6, encodeNs: 1e6, imageBytes: 40 << 10}
}

// usefulness is the estimated share of filled frames that are served.
// p.mu held.
func (p *fillPolicy) usefulness() float64 {
	return (p.useful + priorUseful) / (p.useful + p.wasted + priorUseful)
}

// budget returns how many frames a fill may leave in a memory cache of
// cacheBytes without an ImageStore: a quarter of what it holds, so that a
// fill does not evict the frames of the fills before it (nor its own)
// before they are asked for.
func (p *fillPolicy) budget(cacheBytes int64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(float64(cacheBytes) / 4 / max(p.imageBytes, 1))
}

// window trims missing (ascending) to the n frames nearest to ordinal.
func window(missing []int, ordinal, n int) []int {
	if len(missing) <= n {
		return missing
	}
	i := 0
	for i < len(missing) && missing[i] < ordinal {
		i++
	}
	lo, hi := i, i // missing[lo:hi] is the window
	for hi-lo < n {
		switch {
		case lo == 0:
			hi++
		case hi == len(missing):
			lo--
		case ordinal-missing[lo-1] <= missing[hi]-ordinal:
			lo--
		default:
			hi++
		}
	}
	return missing[lo:hi]
}

// worthIt reports whether a fill of the missing frames (ordinal among them)
// pays off for a request of frame ordinal: the decoding that
// serving the missing siblings alone would take, weighted by how likely
// they are to be asked for, against the decoding of the group past what the
// request needs and the encoding of siblings that may never be served.
func (p *fillPolicy) worthIt(ix *videoidx.Index, ordinal int, missing []int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := p.usefulness()
	start := ix.DecodeStart(ordinal)
	// What serving a sibling alone would decode, counted in samples from
	// the keyframe, though a lone request skips the pictures nothing
	// references: where the estimate is rough, it leans to filling.
	var saved float64
	for _, o := range missing {
		if o != ordinal {
			saved += float64(ix.SampleOf(o) - start + 1)
		}
	}
	siblings := float64(len(missing) - 1)
	last := ix.SampleOf(ordinal)
	for _, o := range missing {
		last = max(last, ix.SampleOf(o))
	}
	extraDecode := float64(last - ix.SampleOf(ordinal))
	benefit := u * saved * p.decodeNs
	cost := extraDecode*p.decodeNs + (1-u)*siblings*p.encodeNs
	if benefit >= cost {
		return true
	}
	p.stats.Declined++
	return false
}

// filled counts a fill and the sibling frames it encodes.
func (p *fillPolicy) filled(siblings int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Fills++
	p.stats.FramesFilled += int64(siblings)
}

// served and evicted record the fate of a filled frame.
func (p *fillPolicy) served()  { p.record(true) }
func (p *fillPolicy) evicted() { p.record(false) }

func (p *fillPolicy) record(useful bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if useful {
		p.useful++
		p.stats.Useful++
	} else {
		p.wasted++
		p.stats.Wasted++
	}
	if p.useful+p.wasted > usefulnessWindow {
		p.useful /= 2
		p.wasted /= 2
	}
}

// measured folds the time of one decoded picture or one encoded image into
// the cost estimates.
func (p *fillPolicy) measuredDecode(d time.Duration) { p.measure(&p.decodeNs, float64(d)) }
func (p *fillPolicy) measuredEncode(d time.Duration) { p.measure(&p.encodeNs, float64(d)) }

// servedBytes folds the size of an image served into its average.
func (p *fillPolicy) servedBytes(n int) { p.measure(&p.imageBytes, float64(n)) }

func (p *fillPolicy) measure(avg *float64, v float64) {
	if v <= 0 || math.IsNaN(v) {
		return
	}
	p.mu.Lock()
	*avg += costSmoothing * (v - *avg)
	p.mu.Unlock()
}

func (p *fillPolicy) snapshot() FillStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Usefulness = p.usefulness()
	return st
}
