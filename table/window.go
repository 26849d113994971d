package table

import "fmt"

// Window describes the clips a clip view cuts from each episode: fixed
// windows of Length frames, taking every (FrameSkip+1)-th frame, starting
// at every multiple of Hop from the episode's first frame. These are the
// three numbers of Lance's video-frame windows (window_length, frame_skip,
// hop_size) and of DALI's sequence reader (sequence_length, stride - 1,
// step). Windows never cross episodes.
type Window struct {
	// Length is the number of frames in a clip (≥ 1).
	Length int64 `json:"length"`
	// FrameSkip is the number of frames skipped between two frames of a
	// clip (≥ 0): the stride is FrameSkip+1.
	FrameSkip int64 `json:"frame_skip"`
	// Hop is the distance between the first frames of consecutive clips
	// (≥ 1).
	Hop int64 `json:"hop"`
}

// Limits of clip windows. They keep every count and index well inside
// int64 and refuse values no video model uses (a clip of 10^9 frames is
// a typing error, not a request).
const (
	MaxWindowLength = 10_000
	MaxFrameSkip    = 1_000_000
	MaxHop          = 1_000_000_000
	// MaxWindowSpan bounds the frames a clip spans, first to last: ten
	// million frames is over three days at 30 frames per second.
	MaxWindowSpan = 10_000_000
)

// Validate checks a window's numbers against their limits.
func (w Window) Validate() error {
	switch {
	case w.Length < 1:
		return fmt.Errorf("%w: window length %d: a clip holds at least 1 frame", ErrInvalidInput, w.Length)
	case w.Length > MaxWindowLength:
		return fmt.Errorf("%w: window length %d is over the limit of %d frames per clip", ErrInvalidInput, w.Length, MaxWindowLength)
	case w.FrameSkip < 0:
		return fmt.Errorf("%w: frame skip %d is negative (0 takes consecutive frames)", ErrInvalidInput, w.FrameSkip)
	case w.FrameSkip > MaxFrameSkip:
		return fmt.Errorf("%w: frame skip %d is over the limit of %d", ErrInvalidInput, w.FrameSkip, MaxFrameSkip)
	case w.Hop < 1:
		return fmt.Errorf("%w: hop %d: clips start at least 1 frame apart", ErrInvalidInput, w.Hop)
	case w.Hop > MaxHop:
		return fmt.Errorf("%w: hop %d is over the limit of %d", ErrInvalidInput, w.Hop, MaxHop)
	}
	// Length and FrameSkip are bounded, so the product cannot overflow.
	if span := w.Span(); span > MaxWindowSpan {
		return fmt.Errorf("%w: a window of %d frames with frame skip %d spans %d frames, over the limit of %d",
			ErrInvalidInput, w.Length, w.FrameSkip, span, MaxWindowSpan)
	}
	return nil
}

// Stride is the distance between two frames of a clip.
func (w Window) Stride() int64 { return w.FrameSkip + 1 }

// Span is the number of frames from a clip's first frame to its last,
// both included: (Length − 1) × Stride + 1.
func (w Window) Span() int64 { return (w.Length-1)*w.Stride() + 1 }

// Starts returns the first frames of the windows of an episode of
// frames frames: every multiple of Hop from 0 while start + Span ≤
// frames. w must be valid.
func (w Window) Starts(frames int64) []int64 {
	var starts []int64
	for s := int64(0); s+w.Span() <= frames; s += w.Hop {
		starts = append(starts, s)
	}
	return starts
}

// Frames returns the frames of the window starting at start.
func (w Window) Frames(start int64) []int64 {
	out := make([]int64, w.Length)
	for j := range out {
		out[j] = start + int64(j)*w.Stride()
	}
	return out
}
