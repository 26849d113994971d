package serving

import (
	"math"
	"sync"
	"time"

	"github.com/framefs/framefs/cache"
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
//
// What a fill keeps of a sibling is its image, its packed picture
// (media.Codec.Pack) or its compressed image (compress.go); see
// fillPolicy.form. Images of raw formats are large (a 640x480 BMP is
// 900 KB, a GOP of them 27 MB): kept as images, the fills of a shuffled
// epoch would not fit any cache and would be declined, and each frame
// would be decoded from its keyframe (8 pictures per frame at GOP 30).
// Packed, a picture is its YUV planes losslessly compressed, a fraction of
// that (or stored as they are, where they do not compress: compressPacks);
// a request renders its image from it. A raw image scaled well down is
// smaller than the packed picture; it is kept compressed, or as it is
// where it does not compress.

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
	// they made for requests still to come (not the requested ones), of
	// which FramesPacked were kept as packed pictures and FramesCompressed
	// as compressed images.
	Fills, FramesFilled, FramesPacked, FramesCompressed int64
	// PackedBytes is the size of every picture packed, in total;
	// Unpacked counts the images rendered from packed pictures.
	PackedBytes, Unpacked int64
	// CompressedBytes is the size of every image compressed, in total;
	// Decompressed counts the images served from compressed ones.
	CompressedBytes, Decompressed int64
	// FramesSized counts the frames FrameSizes kept in the cache (as
	// images or packed) for the requests to come.
	FramesSized int64
	// Useful counts filled frames later served from the cache; Wasted
	// those evicted from it unserved and not kept by the ImageStore.
	Useful, Wasted int64
	// Declined counts requests that decoded their frame alone because
	// fills were not paying off.
	Declined int64
	// Spilled counts filled frames the cache evicted unserved that went
	// to the spill store (Options.Spill); SpillDropped those that found
	// its queue full and were lost. SpillQueueBytes is what waits in the
	// queue now.
	Spilled, SpillDropped, SpillQueueBytes int64
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
	// decodeNs, encodeNs and packNs are moving averages of the time to
	// decode a picture, to convert and encode an image and to pack a
	// picture.
	decodeNs, encodeNs, packNs float64
	// packedRatio is the size of a packed picture relative to the coded
	// picture size in YUV 4:2:0, compressedRatio the size of a compressed
	// image relative to the image.
	packedRatio, compressedRatio sizeRatio
	// imageBytes is the moving average of the size of the images served,
	// by setting (bounded: maxSettings).
	imageBytes map[media.ImageSetting]float64
	// sinceProbe counts the fills of raw images kept uncompressed since
	// one was last compressed to measure compressedRatio again, and
	// storedSinceProbe the pictures packed without compression since one
	// was compressed to measure packedRatio.
	sinceProbe, storedSinceProbe int
	stats                        FillStats
}

// maxSettings bounds the settings whose image sizes are followed; more
// in use at once is unusual, and forgetting one costs a less exact guess.
const maxSettings = 64

const (
	// priorUseful counts as that many useful filled frames before any
	// evidence: fills start on, and a few wasted frames do not stop them.
	priorUseful = 8
	// worthCompressing is the largest compressedRatio at which raw images
	// are kept compressed. Compressing a frame costs more than anything
	// else the fill does with it but decoding when the image does not
	// compress: S2 takes 0.27 ms to bring a 224x224 BMP of noisy video to
	// 73% of its size (and 0.07 ms to restore it), against
	// 0.05 ms to bring one of a test pattern to 16%. Below half, room
	// matters more: an uncompressed image takes at most twice the room.
	worthCompressing = 0.5
	// probeEvery is how often raw images (one fill in probeEvery) and
	// pictures (one in probeEvery) are compressed anyway while compression
	// does not pay, so that the ratio follows videos that change.
	probeEvery = 16
	// usefulnessWindow is the count of evidence after which older evidence
	// is halved, so the estimate follows a reader that changes its ways.
	usefulnessWindow = 8192
	// costSmoothing is the weight of a new cost measurement.
	costSmoothing = 0.05
)

func newFillPolicy() *fillPolicy {
	// Costs before the first measurement: decoding and encoding a 640x480
	// frame take about a millisecond each, packing a picture a third of
	// that, and a packed picture (or a compressed image) is a third of the
	// raw one.
	return &fillPolicy{decodeNs: 1e6, encodeNs: 1e6, packNs: 0.3e6,
		packedRatio: sizeRatio{v: 1.0 / 3}, compressedRatio: sizeRatio{v: 1.0 / 3},
		imageBytes: map[media.ImageSetting]float64{}}
}

// imageSize is the expected size of an image of setting from v. p.mu held.
func (p *fillPolicy) imageSize(v media.Video, setting media.ImageSetting) float64 {
	if n, ok := media.PredictSize(setting, v.Index.Width, v.Index.Height); ok {
		return float64(n)
	}
	if n, ok := p.imageBytes[setting]; ok {
		return n
	}
	// Before the first image of a setting: a JPEG or PNG is about a
	// tenth of the RGB picture (40 KB at 640x480).
	w, h := setting.OutputSize(v.Index.Width, v.Index.Height)
	return float64(w*h*3) / 8
}

// packedSize is the expected size of a packed picture of v: stored when
// compression does not pay (compressPacks). p.mu held.
func (p *fillPolicy) packedSize(v media.Video) float64 {
	ratio := 1.0
	if p.packedRatio.pays() {
		ratio = p.packedRatio.v
	}
	return float64(v.Index.Width*v.Index.Height*3/2) * ratio
}

// form returns the form in which a fill of v's frames for setting keeps
// its siblings. Raw images (BMP, PPM, NPY) are kept compressed or packed,
// whichever is expected to be smaller: compressed when scaled well down,
// packed at full size (YUV 4:2:0 planes are half the bytes of RGB).
// Serving a compressed image costs a decompression only; its conversion
// and scaling were done by the fill. Images that compression does not
// halve (worthCompressing) are kept as they are instead, where they are
// smaller than a packed picture.
//
// JPEG siblings stay images unless a packed picture is smaller. A
// shuffled epoch, the way training reads, asks for every frame of a GOP,
// so every sibling's JPEG is made anyway: packing it first only adds the
// packing, the unpacking and the room a packed picture takes, and where
// an epoch's siblings fill the cache, larger packed ones are evicted
// unread and their GOPs decoded again (docs/CACHES.md has the figures).
// The sparse random reader pays: it leaves most siblings unread, encoded
// for nothing. No reader tells early whether it will ask for a GOP's
// other frames: a shuffled epoch asks for all of them, a random reader
// for a few, and both look alike until the epoch ends. So the form is the
// one training needs.
//
// PNG siblings, whose encoding costs several times a packing, are packed
// unless an image is less than half a packed picture (a PNG scaled well
// down). Packed pictures also let one fill serve every image setting.
func (p *fillPolicy) form(v media.Video, setting media.ImageSetting) form {
	p.mu.Lock()
	defer p.mu.Unlock()
	image, packed := p.imageSize(v, setting), p.packedSize(v)
	if _, raw := media.PredictSize(setting, 1, 1); raw {
		switch {
		case image*p.compressedRatio.v >= packed:
			return formPicture
		case p.compressedRatio.pays():
			return formCompressed
		case p.sinceProbe >= probeEvery-1:
			p.sinceProbe = 0
			return formCompressed
		case image <= packed:
			p.sinceProbe++
			return formImage
		}
		return formPicture
	}
	if image <= 0.5*packed || setting.Format == media.FormatJPEG && image <= packed {
		return formImage
	}
	return formPicture
}

// usefulness is the estimated share of filled frames that are served.
// p.mu held.
func (p *fillPolicy) usefulness() float64 {
	return (p.useful + priorUseful) / (p.useful + p.wasted + priorUseful)
}

// budget returns how many frames of v a fill for setting may leave in a
// memory cache of cacheBytes without an ImageStore, in form f: a quarter
// of what it holds, so that a fill does not evict the frames of the fills
// before it (nor its own) before they are asked for.
func (p *fillPolicy) budget(cacheBytes int64, v media.Video, setting media.ImageSetting, f form) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	size := p.imageSize(v, setting)
	switch f {
	case formPicture:
		size = p.packedSize(v)
	case formCompressed:
		size *= p.compressedRatio.v
	}
	return int(float64(cacheBytes) / 4 / max(size+cache.EntryOverhead, 1))
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
func (p *fillPolicy) worthIt(ix *videoidx.Index, ordinal int, missing []int, f form) bool {
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
	// A sibling costs its encoding now (compressed or not), or its
	// packing now and its rendering when it is asked for.
	keepNs := p.encodeNs
	if f == formPicture {
		keepNs = p.packNs
	}
	benefit := u * saved * p.decodeNs
	cost := extraDecode*p.decodeNs + (1-u)*siblings*keepNs
	if benefit >= cost {
		return true
	}
	p.stats.Declined++
	return false
}

// filled counts a fill and the sibling frames it makes in form f.
func (p *fillPolicy) filled(siblings int, f form) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Fills++
	p.stats.FramesFilled += int64(siblings)
	switch f {
	case formPicture:
		p.stats.FramesPacked += int64(siblings)
	case formCompressed:
		p.stats.FramesCompressed += int64(siblings)
	}
}

// sized counts a frame FrameSizes kept for the requests to come.
func (p *fillPolicy) sized() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.FramesSized++
}

// unpacked counts an image rendered from a packed picture.
func (p *fillPolicy) unpacked() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Unpacked++
}

// decompressed counts an image served from a compressed one.
func (p *fillPolicy) decompressed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Decompressed++
}

// served and evicted record the fate of a filled frame.
func (p *fillPolicy) served()  { p.record(true) }
func (p *fillPolicy) evicted() { p.record(false) }

// spilled records a filled frame evicted unserved but spilled: partly
// wasted (spilledWaste) until it is read from the spill store
// (unspilled), which a sparse reader never does. Counted so at once, a
// spill store cannot hide from the estimate that fills do not pay off; a
// shuffled epoch reads its spilled frames back, and the estimate
// recovers.
func (p *fillPolicy) spilled() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wasted += spilledWaste
	p.decay()
}

// spilledWaste is what a spilled frame weighs as wasted until it is read.
// A shuffled epoch spills frames long before it reads them back, and
// each fill declined meanwhile decodes its GOP again: at 0.5, epochs of
// latest/ through a 16 MiB cache declined 3-8 fills and decoded
// 1.01-1.03 frames per frame served, at 0.25 none and 1.00. A sparse
// reader still stops fills (124 fills at 0.25, 84 at 0.5; see
// TestSpillDoesNotHideWaste).
const spilledWaste = 0.25

// unspilled records a spilled frame read back from the spill store.
func (p *fillPolicy) unspilled() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wasted = max(p.wasted-spilledWaste, 0)
	p.useful++
	p.stats.Useful++
	p.decay()
}

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
	p.decay()
}

// decay halves the evidence once there is more than usefulnessWindow of
// it. p.mu held.
func (p *fillPolicy) decay() {
	if p.useful+p.wasted > usefulnessWindow {
		p.useful /= 2
		p.wasted /= 2
	}
}

// measured folds the time of one decoded picture or one encoded image into
// the cost estimates.
func (p *fillPolicy) measuredDecode(d time.Duration) { p.measure(&p.decodeNs, float64(d)) }
func (p *fillPolicy) measuredEncode(d time.Duration) { p.measure(&p.encodeNs, float64(d)) }

// compressPacks reports whether the next picture packed is compressed:
// while compression at least halves pictures (worthCompressing), and one
// picture in probeEvery otherwise. A stored picture takes a copy of its
// planes, where S2 takes 0.5 ms to bring the planes of a noisy 640x480
// picture to 92% of their size.
func (p *fillPolicy) compressPacks() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.packedRatio.pays() || p.storedSinceProbe >= probeEvery-1 {
		p.storedSinceProbe = 0
		return true
	}
	p.storedSinceProbe++
	return false
}

// measuredPack folds the time and size of one packed picture of a video
// whose coded pictures are w x h into the estimates; only compressed ones
// say how well pictures compress.
func (p *fillPolicy) measuredPack(d time.Duration, n, w, h int, compressed bool) {
	p.measure(&p.packNs, float64(d))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.PackedBytes += int64(n)
	if compressed {
		p.packedRatio.fold(n, w*h*3/2)
	}
}

// measuredCompress folds the size of one image compressed to n bytes from
// raw into the estimates.
func (p *fillPolicy) measuredCompress(n, raw int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.CompressedBytes += int64(n)
	p.compressedRatio.fold(n, raw)
}

// sizeRatio is a moving average of the size of a compact form relative to
// what it was made of, starting from a prior.
type sizeRatio struct {
	v        float64
	measured bool // v is measured, not the prior
}

// pays reports whether compression at this ratio is worth its CPU
// (worthCompressing).
func (r sizeRatio) pays() bool { return r.v <= worthCompressing }

// fold takes in one form of n bytes made of raw; the first measurement
// replaces the prior.
func (r *sizeRatio) fold(n, raw int) {
	if n <= 0 || raw <= 0 {
		return
	}
	x := float64(n) / float64(raw)
	if !r.measured {
		r.v, r.measured = x, true
	}
	r.v += costSmoothing * (x - r.v)
}

// servedBytes folds the size of an image of setting served into its
// average; the first image of a setting is its first estimate.
func (p *fillPolicy) servedBytes(setting media.ImageSetting, n int) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	avg, ok := p.imageBytes[setting]
	if !ok {
		if len(p.imageBytes) >= maxSettings {
			clear(p.imageBytes)
		}
		p.imageBytes[setting] = float64(n)
		return
	}
	p.imageBytes[setting] = avg + costSmoothing*(float64(n)-avg)
}

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
