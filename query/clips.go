package query

import (
	"context"

	"github.com/framefs/framefs/query/filter"
	"github.com/framefs/framefs/table"
)

// matchingStarts returns the starts of the windows w cuts from an episode
// of frames frames whose every frame is in ordinals (ascending; nil means
// every frame). It runs in time linear in the episode's length: run[i]
// counts the matching frames i, i+stride, i+2·stride, ... before the
// first that does not match, and a window at s is kept when run[s] ≥
// Length.
func matchingStarts(w table.Window, frames int64, ordinals []int64) []int64 {
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
	Window table.Window
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
	Entry table.EpisodeEntry
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
func (p ClipPart) Ordinals(w table.Window) []int64 {
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
func SelectClips(ctx context.Context, t *table.Table, snap *table.Snapshot, f *filter.Filter, w table.Window, opts SelectOptions) (*ClipSelection, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	opts.CountOnly = false
	sel, err := Select(ctx, t, snap, f, opts)
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
			starts := matchingStarts(w, se.Entry.Rows, p.Ordinals)
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
