package media

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/framefs/framefs/videoidx"
)

// ErrFrameRange means the ordinal asked for is not a frame of the video.
var ErrFrameRange = errors.New("media: no such frame")

// Video is one stored video as the decoder reads it.
type Video struct {
	// Key identifies the video's bytes; sessions and cached images are
	// shared between requests with equal keys, so two different videos
	// must never share a key.
	Key VideoKey
	// R reads the video; only its first Size bytes are used. Sessions keep
	// no reference to R after the call that passed it returns, so R may be
	// closed then.
	R io.ReaderAt
	// Size is the video's length in bytes.
	Size int64
	// Index is the frame index of the stream to decode, from
	// videoidx.ReadMP4 or the decoder's ScanIndex (decoder.IndexVideo
	// picks). It must not be modified while the decoder uses it.
	Index *videoidx.Index
	// Digest names the video's content wherever it is stored (a checksum
	// of its bytes, such as "sha256:..."): images kept in a frame
	// server's ImageStore (package serving) are keyed by it, so they stay valid across
	// copies, snapshots and restarts. Empty: none are kept.
	Digest string
	// From and To bound the frames [From, To) that requests of this
	// caller may ask for (an episode's rows in a longer video): fills and
	// read-ahead stay within them. To == 0 means every frame.
	From, To int
	// Shown, when not nil, are the frames of the span requests are
	// expected to ask for, as rows of it (frame From+row), ascending: a
	// view that shows some of an episode's frames. Fills and read-ahead
	// decode what those need and keep only them; a request for another
	// frame is still served. nil: every frame of the span.
	Shown []int64
}

// Shows reports whether requests are expected to ask for frame ordinal
// (see Shown).
func (v Video) Shows(ordinal int) bool {
	if v.Shown == nil {
		return true
	}
	_, found := slices.BinarySearch(v.Shown, int64(ordinal-v.From))
	return found
}

// Span returns the frames [from, to) requests may ask for: [From, To)
// clipped to the index's frames.
func (v Video) Span() (from, to int) {
	n := v.Index.Frames()
	if v.To <= 0 || v.To > n {
		return max(0, min(v.From, n)), n
	}
	return max(0, min(v.From, v.To)), v.To
}

// VideoKey names the physical bytes of a video: an object of the caller's
// storage and a byte range in it. The decoder only compares keys.
type VideoKey struct {
	Object         string
	Offset, Length int64
}

func (k VideoKey) String() string {
	return fmt.Sprintf("%s[%d:+%d]", k.Object, k.Offset, k.Length)
}
