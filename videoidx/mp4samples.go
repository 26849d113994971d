package videoidx

import "fmt"

// codecNames maps sample entry codes to FFmpeg's codec names.
var codecNames = map[string]string{
	"avc1": "h264", "avc3": "h264", "hvc1": "hevc", "hev1": "hevc",
	"av01": "av1", "vp09": "vp9", "vp08": "vp8", "mp4v": "mpeg4",
	"jpeg": "mjpeg", "mjpa": "mjpeg", "mjpb": "mjpegb", "s263": "h263", "h263": "h263",
	"apch": "prores", "apcn": "prores", "apcs": "prores", "apco": "prores", "ap4h": "prores",
	"dvh1": "hevc", "dvhe": "hevc", "dva1": "h264", "dvav": "h264",
}

// buildIndex turns the boxes of track t into an index.
func (p *parser) buildIndex(t *track) (*Index, error) {
	if t.timescale == 0 {
		return nil, fmt.Errorf("%w: track %d has no media timescale (mdhd)", ErrCorrupt, t.stream)
	}
	samples, err := t.tableSamples(p.size)
	if err != nil {
		return nil, fmt.Errorf("%w: track %d: %v", ErrCorrupt, t.stream, err)
	}
	shift, start, end, edited, err := p.editWindow(t)
	if err != nil {
		return nil, err
	}
	for i := range samples {
		s := &samples[i]
		s.Hidden = s.PTS < start || end >= 0 && s.PTS >= end
		s.PTS += shift
	}
	// FFmpeg shifts fragment timestamps by the edit list but does not drop
	// any of their frames.
	for i, s := range t.fragments {
		s.PTS = s.DTS + int64(t.fragCTS[i]) + shift
		samples = append(samples, s)
	}
	for i, s := range samples {
		if uint64(s.Offset)+uint64(s.Size) > p.size || s.Offset < 0 {
			return nil, fmt.Errorf("%w: sample %d of track %d (%d bytes at offset %d) lies past the end of the file (%d bytes)",
				ErrTruncated, i, t.stream, s.Size, s.Offset, p.size)
		}
	}
	codec, ok := codecNames[t.fourcc]
	if !ok {
		codec = t.fourcc
	}
	ix := &Index{
		Origin:     OriginMP4,
		Stream:     t.stream,
		TrackID:    t.id,
		Codec:      codec,
		Width:      t.width,
		Height:     t.height,
		Timescale:  t.timescale,
		EditList:   edited,
		Fragmented: len(t.fragments) > 0,
		Samples:    samples,
	}
	if err := ix.finish(); err != nil {
		return nil, err
	}
	return ix, nil
}

// tableSamples expands the stbl tables of t into samples in decode order,
// with PTS = DTS + composition offset (no edit list applied yet). Every count
// is checked against the file size before anything is allocated.
func (t *track) tableSamples(fileSize uint64) ([]Sample, error) {
	n := uint64(t.count)
	if n == 0 {
		return nil, nil
	}
	if t.sizes == nil && n*uint64(t.constSize) > fileSize || n > fileSize {
		return nil, fmt.Errorf("stsz claims %d samples, more than a file of %d bytes can hold", n, fileSize)
	}
	samples := make([]Sample, n)
	for i := range samples {
		if t.sizes != nil {
			samples[i].Size = t.sizes[i]
		} else {
			samples[i].Size = t.constSize
		}
	}

	i, dts := uint64(0), int64(0)
	for e := 0; e+1 < len(t.stts) && i < n; e += 2 {
		count, delta := uint64(t.stts[e]), int64(t.stts[e+1])
		for k := uint64(0); k < count && i < n; k++ {
			samples[i].DTS, samples[i].PTS = dts, dts
			dts += delta
			i++
		}
	}
	if i < n {
		return nil, fmt.Errorf("stts gives timestamps for %d of %d samples", i, n)
	}

	i = 0
	for e := 0; e+1 < len(t.ctts) && i < n; e += 2 {
		count, offset := uint64(uint32(t.ctts[e])), int64(t.ctts[e+1])
		for k := uint64(0); k < count && i < n; k++ {
			samples[i].PTS += offset
			i++
		}
	}

	if !t.hasStss {
		for i := range samples {
			samples[i].Key = true
		}
	}
	for _, s := range t.stss {
		if s >= 1 && uint64(s) <= n {
			samples[s-1].Key = true
		}
	}

	i = 0
	entries := len(t.stsc) / 3
	for e := 0; e < entries && i < n; e++ {
		first, perChunk := uint64(t.stsc[3*e]), uint64(t.stsc[3*e+1])
		last := uint64(len(t.chunks))
		if e+1 < entries {
			last = uint64(t.stsc[3*(e+1)]) - 1
		}
		if first < 1 || first > uint64(len(t.chunks)) || last > uint64(len(t.chunks)) || last+1 < first {
			return nil, fmt.Errorf("stsc entry %d names chunks %d to %d, the file has %d chunks", e, first, last, len(t.chunks))
		}
		for c := first; c <= last && i < n; c++ {
			offset := t.chunks[c-1]
			for k := uint64(0); k < perChunk && i < n; k++ {
				samples[i].Offset = int64(offset)
				offset += uint64(samples[i].Size)
				i++
			}
		}
	}
	if i < n {
		return nil, fmt.Errorf("stsc and chunk offsets place %d of %d samples", i, n)
	}
	return samples, nil
}

// editWindow interprets the track's edit list the way FFmpeg's mov demuxer
// does: leading empty edits delay the presentation, one media edit selects
// the composition time window [start, end) (end < 0: open), and presented
// timestamps are shifted so that the window starts after the empty edits.
// Edit lists beyond that (several separate media segments, rates other than
// 1) return ErrUnsupported so that callers fall back to demuxing.
func (p *parser) editWindow(t *track) (shift, start, end int64, edited bool, err error) {
	end = -1
	var empty uint64
	media := 0
	for i, e := range t.edits {
		if e.mediaTime == -1 {
			if media > 0 {
				return 0, 0, 0, false, fmt.Errorf("%w: track %d has an empty edit after a media edit", ErrUnsupported, t.stream)
			}
			empty += e.duration
			continue
		}
		if e.rate != 1 {
			return 0, 0, 0, false, fmt.Errorf("%w: track %d edit %d plays at rate %d", ErrUnsupported, t.stream, i, e.rate)
		}
		if e.mediaTime < 0 {
			return 0, 0, 0, false, fmt.Errorf("%w: track %d edit %d has media time %d", ErrCorrupt, t.stream, i, e.mediaTime)
		}
		dur := int64(-1)
		if e.duration > 0 && p.movieTimescale > 0 {
			dur = rescale(e.duration, t.timescale, p.movieTimescale)
		}
		if media > 0 {
			// A second segment is fine only when it continues the first.
			if end < 0 || e.mediaTime != end {
				return 0, 0, 0, false, fmt.Errorf("%w: track %d has an edit list with %d separate media segments", ErrUnsupported, t.stream, media+1)
			}
			if dur < 0 {
				end = -1
			} else {
				end += dur
			}
			media++
			continue
		}
		start = e.mediaTime
		if dur >= 0 {
			end = start + dur
		}
		media++
	}
	if media == 0 {
		start = 0
		if len(t.edits) == 0 || empty == 0 {
			return 0, start, -1, false, nil
		}
	}
	emptyMedia := int64(0)
	if empty > 0 && p.movieTimescale > 0 {
		emptyMedia = rescale(empty, t.timescale, p.movieTimescale)
	}
	if len(t.fragments) > 0 && t.count == 0 {
		// Fragmented files often carry an edit whose duration covers only
		// the (empty) moov; FFmpeg applies just its offset.
		end = -1
	}
	edited = start != 0 || emptyMedia != 0 || end >= 0
	return emptyMedia - start, start, end, edited, nil
}

// rescale converts v from timescale from to timescale to, rounding down,
// without overflowing for any 32-bit timescales and durations below 2^63/2^32.
func rescale(v uint64, to, from uint32) int64 {
	hi, lo := v/uint64(from), v%uint64(from)
	return int64(hi*uint64(to) + lo*uint64(to)/uint64(from))
}
