package table

import (
	"context"
	"fmt"

	"github.com/framefs/framefs/query/filter"
)

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

// matchingStarts returns the starts of the windows of an episode of
// frames frames whose every frame is in ordinals (ascending; nil means
// every frame). It runs in time linear in the episode's length: run[i]
// counts the matching frames i, i+stride, i+2·stride, ... before the
// first that does not match, and a window at s is kept when run[s] ≥
// Length.
func (w Window) matchingStarts(frames int64, ordinals []int64) []int64 {
	if ordinals == nil {
		return w.Starts(frames)
	}
	if int64(len(ordinals)) < w.Length {
		return nil
	}
	matches := make([]bool, frames)
	for _, o := range ordinals {
		if o >= 0 && o < frames {
			matches[o] = true
		}
	}
	run := make([]int32, frames)
	stride := w.Stride()
	for i := frames - 1; i >= 0; i-- {
		if !matches[i] {
			continue
		}
		run[i] = 1
		if i+stride < frames {
			run[i] += run[i+stride]
		}
	}
	var starts []int64
	for s := int64(0); s+w.Span() <= frames; s += w.Hop {
		if int64(run[s]) >= w.Length {
			starts = append(starts, s)
		}
	}
	return starts
}

// ClipSelection is the result of SelectClips: the windows of a snapshot's
// episodes whose frames all match a filter.
type ClipSelection struct {
	Window Window
	// Episodes with at least one clip, in snapshot order.
	Episodes []ClipEpisode
	// Clips counts the windows.
	Clips int64
	// Frames counts the distinct frames in at least one window.
	Frames int64
	Stats  SelectStats
}

// ClipEpisode is an episode's clips, by group.
type ClipEpisode struct {
	Entry EpisodeEntry
	Parts []ClipPart
}

// ClipPart is the clips of one group of an episode's rows (all of them
// without GroupBy): a window is kept only if all its frames are in the
// part.
type ClipPart struct {
	// Group is as in SelectedPart.
	Group string
	// Starts are the first frames of the part's windows, ascending.
	Starts []int64
}

// Ordinals returns the rows in at least one of the part's windows,
// ascending.
func (p ClipPart) Ordinals(w Window) []int64 {
	if len(p.Starts) == 0 {
		return nil
	}
	// Windows may interleave (a stride above the hop), so mark the rows
	// between the first window's start and the last one's end.
	first := p.Starts[0]
	in := make([]bool, p.Starts[len(p.Starts)-1]+w.Span()-first)
	for _, s := range p.Starts {
		for f := s; f < s+w.Span(); f += w.Stride() {
			in[f-first] = true
		}
	}
	var out []int64
	for i, ok := range in {
		if ok {
			out = append(out, first+int64(i))
		}
	}
	return out
}

// SelectClips finds the windows of a snapshot's episodes whose frames all
// match f (after opts, as in Select).
func (t *Table) SelectClips(ctx context.Context, snap *Snapshot, f *filter.Filter, w Window, opts SelectOptions) (*ClipSelection, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	opts.CountOnly = false
	sel, err := t.Select(ctx, snap, f, opts)
	if err != nil {
		return nil, err
	}
	out := &ClipSelection{Window: w, Stats: sel.Stats}
	for _, se := range sel.Episodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ce := ClipEpisode{Entry: se.Entry}
		for _, p := range se.Parts {
			starts := w.matchingStarts(se.Entry.Rows, p.Ordinals)
			if len(starts) == 0 {
				continue
			}
			part := ClipPart{Group: p.Group, Starts: starts}
			ce.Parts = append(ce.Parts, part)
			out.Clips += int64(len(starts))
			out.Frames += int64(len(part.Ordinals(w)))
		}
		if len(ce.Parts) > 0 {
			out.Episodes = append(out.Episodes, ce)
		}
	}
	return out, nil
}
