// Package videoidx builds and stores the frame index of one video track: for
// every frame, where its bytes lie in the file, its timestamps, whether it is a
// sync sample, and its ordinal in presentation order.
//
// A frame row of a framefs table addresses a frame by its zero-based ordinal in
// presentation order, counting exactly the frames FFmpeg would output (the
// order `ffmpeg -vf select=eq(n\,N)` counts). The index lets a decoder jump to
// the keyframe before frame N and decode forward, without decoding from the
// start of the video.
//
// ReadMP4 builds an index from the sample tables of an ISO-BMFF (MP4/MOV) file
// without reading the media data. Other containers are indexed by demuxing
// their packets with FFmpeg, which lives in package decoder; this package owns
// only the index type and must not depend on FFmpeg.
//
// FastStart rewrites an MP4 written with its moov box last so that the box
// comes first, shifting the chunk offsets it holds. All MP4 box parsing of
// framefs is here, on go-mp4's box walker.
//
// Encode and Decode store an index in a compact, versioned, checksummed
// binary form (see encode.go): about 3 bytes per frame for a video-only
// H.264 file, 5-6 when its chunks interleave with audio.
package videoidx

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Errors returned by this package. Callers tell them apart with errors.Is.
var (
	// ErrNotMP4 means the input is not an ISO-BMFF file; a demuxing index
	// (package decoder) may still read it.
	ErrNotMP4 = errors.New("videoidx: not an ISO-BMFF (MP4/MOV) file")
	// ErrNoVideo means the file has no video track (or not the one asked for).
	ErrNoVideo = errors.New("videoidx: no video track")
	// ErrCorrupt marks a file whose structure is inconsistent: boxes larger
	// than the file, impossible counts, tables that disagree with each other.
	ErrCorrupt = errors.New("videoidx: corrupt file")
	// ErrTruncated means the tables refer to bytes past the end of the file.
	ErrTruncated = errors.New("videoidx: truncated file")
	// ErrBadEncoding is returned by Decode for bytes that are not a valid
	// encoded index (wrong magic, version, checksum or structure).
	ErrBadEncoding = errors.New("videoidx: invalid encoded index")
)

// Origin says how an index was built (not which video it indexes).
type Origin uint8

const (
	// OriginMP4 means the index was read from MP4 sample tables.
	OriginMP4 Origin = 1
	// OriginScan means the index was built by demuxing packets with FFmpeg.
	OriginScan Origin = 2
)

func (o Origin) String() string {
	switch o {
	case OriginMP4:
		return "mp4"
	case OriginScan:
		return "scan"
	}
	return fmt.Sprintf("origin(%d)", uint8(o))
}

// Sample is one coded frame (one packet) of the track, in decode order.
type Sample struct {
	// Offset is the byte offset of the sample's data in the file.
	Offset int64
	// Size is the length of the sample's data in bytes.
	Size uint32
	// DTS is the decode timestamp in Timescale units.
	DTS int64
	// PTS is the presentation timestamp in Timescale units, as FFmpeg
	// reports it: composition offset and edit list applied.
	PTS int64
	// Key marks a sync sample (a keyframe a decoder can start at).
	Key bool
	// Hidden marks a sample the edit list keeps out of the presentation:
	// it is still decoded (later frames may reference it) but gets no
	// ordinal.
	Hidden bool
}

// Index is the frame index of one video track.
type Index struct {
	// Origin says whether the index came from MP4 tables or a demux scan.
	// Its JSON name is Source, as the frozen v1 encodings (testdata/format)
	// spell it.
	Origin Origin `json:"Source"`
	// Stream is the FFmpeg stream index of the track (its position among
	// the file's tracks).
	Stream int
	// TrackID is the MP4 track_ID, or 0 for scanned indexes.
	TrackID uint32
	// Codec is FFmpeg's codec name: h264, hevc, av1, mpeg4, vp9, ...
	Codec string
	// Width and Height are the coded picture size from the sample entry.
	Width, Height int
	// Timescale is the number of timestamp units per second.
	Timescale uint32
	// EditList reports an edit list that shifts or trims the presentation.
	EditList bool
	// Fragmented reports a fragmented file (moof boxes).
	Fragmented bool
	// Samples lists every sample in decode order.
	Samples []Sample

	// order maps a presentation ordinal to an index into Samples.
	order []int32
	// keys lists the indexes of the sync samples in Samples, ascending.
	keys []int32
}

// finish validates the samples and computes the presentation order. Every
// constructor calls it before returning an index.
func (ix *Index) finish() error {
	if ix.Timescale == 0 {
		return fmt.Errorf("%w: timescale is zero", ErrCorrupt)
	}
	n := 0
	for i := range ix.Samples {
		if !ix.Samples[i].Hidden {
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("%w: the video track has no frames", ErrNoVideo)
	}
	order := make([]int32, 0, n)
	for i := range ix.Samples {
		if !ix.Samples[i].Hidden {
			order = append(order, int32(i))
		}
	}
	// Presentation order is PTS order; equal PTS keep decode order, as
	// FFmpeg outputs frames in decode order when timestamps tie.
	sort.SliceStable(order, func(a, b int) bool {
		return ix.Samples[order[a]].PTS < ix.Samples[order[b]].PTS
	})
	ix.order = order
	ix.keys = ix.keys[:0]
	for i := range ix.Samples {
		if ix.Samples[i].Key {
			ix.keys = append(ix.keys, int32(i))
		}
	}
	return nil
}

// Build validates samples assembled by another indexer (the FFmpeg scan in
// package decoder) and returns the finished index. The samples must be in
// decode order.
func Build(ix *Index) (*Index, error) {
	if ix.Origin == 0 {
		ix.Origin = OriginScan
	}
	if err := ix.finish(); err != nil {
		return nil, err
	}
	return ix, nil
}

// Frames returns the number of presented frames.
func (ix *Index) Frames() int { return len(ix.order) }

// SampleOf returns the index into Samples of the frame with the given
// presentation ordinal. It panics if ordinal is out of range, like a slice.
func (ix *Index) SampleOf(ordinal int) int { return int(ix.order[ordinal]) }

// Frame returns the sample presented as frame ordinal.
func (ix *Index) Frame(ordinal int) Sample { return ix.Samples[ix.order[ordinal]] }

// KeyFrames counts the presented frames that are sync samples.
func (ix *Index) KeyFrames() int {
	n := 0
	for _, s := range ix.order {
		if ix.Samples[s].Key {
			n++
		}
	}
	return n
}

// HasBFrames reports whether decode order differs from presentation order.
func (ix *Index) HasBFrames() bool {
	last := int32(-1)
	for _, s := range ix.order {
		if s < last {
			return true
		}
		last = s
	}
	return false
}

// LongestGOP returns the largest number of presented frames from one sync
// sample to the next, in decode order.
func (ix *Index) LongestGOP() int {
	longest, run := 0, 0
	for i := range ix.Samples {
		if ix.Samples[i].Key && run > 0 {
			longest = max(longest, run)
			run = 0
		}
		if !ix.Samples[i].Hidden {
			run++
		}
	}
	return max(longest, run)
}

// Duration returns the presentation duration in Timescale units: from the
// first frame's PTS to the end of the last frame, the last frame lasting as
// long as the one before it.
func (ix *Index) Duration() int64 {
	n := len(ix.order)
	first := ix.Frame(0).PTS
	last := ix.Frame(n - 1).PTS
	step := int64(0)
	if n > 1 {
		step = last - ix.Frame(n-2).PTS
	}
	return last - first + step
}

// Seconds converts a timestamp in Timescale units to seconds.
func (ix *Index) Seconds(ts int64) float64 { return float64(ts) / float64(ix.Timescale) }

// DecodeStart returns the sample index at which a decoder must start to
// output frame ordinal: the last sync sample at or before the frame in decode
// order whose PTS is not after the frame's. The PTS condition steps over
// keyframes of open GOPs whose leading frames reference the previous GOP.
func (ix *Index) DecodeStart(ordinal int) int {
	target := ix.order[ordinal]
	pts := ix.Samples[target].PTS
	// The last sync sample at or before the target, then back over any
	// whose PTS is later than the frame's (usually none, at most a few).
	k, _ := slices.BinarySearch(ix.keys, target+1)
	for k--; k >= 0; k-- {
		if s := ix.keys[k]; ix.Samples[s].PTS <= pts {
			return int(s)
		}
	}
	return 0
}
