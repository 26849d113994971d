package videoidx

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/abema/go-mp4"
)

// FastStart writes to w the MP4 read from r (size bytes), written moov-last
// (ftyp, ..., mdat, moov), with moov moved right after ftyp and the chunk
// offsets in its stco and co64 boxes shifted by the size of moov: what
// `ffmpeg -movflags +faststart` does, so that a reader finds the index in
// the first bytes. Nothing is written and rewritten is false when the file
// is not in that order (already fast-start, fragmented, no moov or mdat),
// when a sample lies outside the bytes between ftyp and moov, or when a
// 32-bit chunk offset would overflow. Malformed box structure or sample
// tables are an error.
func FastStart(r io.ReaderAt, size int64, w io.Writer) (rewritten bool, err error) {
	top, err := fileBoxes(r, size)
	if err != nil {
		return false, fmt.Errorf("videoidx: fast start: %w", err)
	}
	moovAt, mdatAt := -1, -1
	for i, b := range top {
		switch b.Type {
		case mp4.BoxTypeMoov():
			if moovAt >= 0 {
				return false, nil // several moov boxes: not ours to reorder
			}
			moovAt = i
		case mp4.BoxTypeMdat():
			if mdatAt < 0 {
				mdatAt = i
			}
		}
	}
	if moovAt < 0 || mdatAt < 0 || moovAt < mdatAt || top[0].Type != mp4.BoxTypeFtyp() {
		return false, nil
	}
	if top[moovAt].Size > maxMoovBytes {
		return false, fmt.Errorf("videoidx: fast start: moov box of %d bytes is larger than %d", top[moovAt].Size, maxMoovBytes)
	}
	// The rewrite moves the bytes between ftyp and moov by moov's size,
	// and shifts every chunk offset by as much: a sample elsewhere (after
	// moov, or running into it) would not be where its offset then says.
	if ok, err := samplesBetween(r, size, top[0].Size, top[moovAt].Offset); err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("videoidx: fast start: %w", err)
		}
		return false, err
	}
	moov := make([]byte, top[moovAt].Size)
	if _, err := r.ReadAt(moov, int64(top[moovAt].Offset)); err != nil {
		return false, fmt.Errorf("videoidx: fast start: read moov: %w", err)
	}
	if ok, err := shiftChunkOffsets(moov, int64(len(moov))); err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("videoidx: fast start: %w", err)
		}
		return false, err
	}
	// New order: ftyp, moov, then every other box in its old order.
	copyBox := func(b mp4.BoxInfo) error {
		_, err := io.Copy(w, io.NewSectionReader(r, int64(b.Offset), int64(b.Size)))
		return err
	}
	if err := copyBox(top[0]); err != nil {
		return true, err
	}
	if _, err := w.Write(moov); err != nil {
		return true, err
	}
	for i, b := range top[1:] {
		if i+1 != moovAt {
			if err := copyBox(b); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}

// samplesBetween reports whether every sample of every track of the MP4
// read from r (size bytes) lies within the bytes [from, to).
func samplesBetween(r io.ReaderAt, size int64, from, to uint64) (bool, error) {
	p, err := parseMP4(context.Background(), r, size)
	if err != nil {
		return false, err
	}
	for _, t := range p.tracks {
		samples, err := t.tableSamples(uint64(size))
		if err != nil {
			return false, fmt.Errorf("track %d: %w", t.id, err)
		}
		for _, s := range samples {
			if s.Offset < 0 || uint64(s.Offset) < from || uint64(s.Offset)+uint64(s.Size) > to {
				return false, nil
			}
		}
	}
	return true, nil
}

// maxMoovBytes bounds the moov box FastStart loads into memory (an hour
// of 30 fps video needs a few MB).
const maxMoovBytes = 1 << 30

// fileBoxes lists the top-level boxes of a file, which must tile it
// exactly.
func fileBoxes(r io.ReaderAt, size int64) ([]mp4.BoxInfo, error) {
	var boxes []mp4.BoxInfo
	_, err := mp4.ReadBoxStructure(io.NewSectionReader(r, 0, size), func(h *mp4.ReadHandle) (any, error) {
		boxes = append(boxes, h.BoxInfo)
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	return boxes, checkTiling(boxes, 0, uint64(size))
}

// checkTiling reports boxes that do not follow each other from start to
// end without gaps, overlaps or overruns.
func checkTiling(boxes []mp4.BoxInfo, start, end uint64) error {
	pos := start
	for _, b := range boxes {
		if b.Offset != pos || b.Size < b.HeaderSize || b.Size > end-pos {
			return fmt.Errorf("box %q at %d has a bad size %d", b.Type.String(), b.Offset, b.Size)
		}
		pos += b.Size
	}
	if pos != end {
		return fmt.Errorf("%d bytes after the last box at %d", end-pos, pos)
	}
	return nil
}

// offsetContainers are the boxes on the path from moov to the chunk offset
// tables.
var offsetContainers = map[mp4.BoxType]bool{
	mp4.BoxTypeMoov(): true, mp4.BoxTypeTrak(): true, mp4.BoxTypeMdia(): true,
	mp4.BoxTypeMinf(): true, mp4.BoxTypeStbl(): true,
}

// shiftChunkOffsets adds shift to every entry of the stco and co64 boxes
// inside moov (the whole moov box, header included), in place. ok is false,
// and moov unchanged, when a 32-bit offset would overflow.
func shiftChunkOffsets(moov []byte, shift int64) (ok bool, err error) {
	type table struct {
		body  []byte
		width int
	}
	var tables []table
	_, err = mp4.ReadBoxStructure(bytes.NewReader(moov), func(h *mp4.ReadHandle) (any, error) {
		b := h.BoxInfo
		if b.Offset+b.Size > uint64(len(moov)) || b.Size < b.HeaderSize {
			return nil, fmt.Errorf("box %q at %d of moov has a bad size %d", b.Type.String(), b.Offset, b.Size)
		}
		switch {
		case offsetContainers[b.Type]:
			return h.Expand()
		case b.Type == mp4.BoxTypeStco() && parentIs(h.Path, "stbl"):
			tables = append(tables, table{moov[b.Offset+b.HeaderSize : b.Offset+b.Size], 4})
		case b.Type == mp4.BoxTypeCo64() && parentIs(h.Path, "stbl"):
			tables = append(tables, table{moov[b.Offset+b.HeaderSize : b.Offset+b.Size], 8})
		}
		return nil, nil
	})
	if err != nil {
		return false, err
	}
	// Check every table before changing any, so that a refusal leaves
	// moov as it was.
	for _, t := range tables {
		if len(t.body) < 8 {
			return false, fmt.Errorf("chunk offset box of %d bytes is too short", len(t.body))
		}
		n := uint64(binary.BigEndian.Uint32(t.body[4:8]))
		if uint64(len(t.body)-8) < n*uint64(t.width) {
			return false, fmt.Errorf("chunk offset box has %d entries but %d bytes", n, len(t.body))
		}
		if t.width == 4 {
			for i := range n {
				if int64(binary.BigEndian.Uint32(t.body[8+4*i:]))+shift > math.MaxUint32 {
					return false, nil
				}
			}
		}
	}
	for _, t := range tables {
		n := uint64(binary.BigEndian.Uint32(t.body[4:8]))
		for i := range n {
			e := t.body[8+i*uint64(t.width):]
			if t.width == 4 {
				binary.BigEndian.PutUint32(e, binary.BigEndian.Uint32(e)+uint32(shift))
			} else {
				binary.BigEndian.PutUint64(e, binary.BigEndian.Uint64(e)+uint64(shift))
			}
		}
	}
	return true, nil
}
