package videoidx

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/abema/go-mp4"
)

// BestStream asks ReadMP4 for the video track FFmpeg picks by default.
const BestStream = -1

// ErrUnsupported means the file is valid ISO-BMFF but uses a feature this
// package does not model exactly (for example an edit list with several media
// segments). Callers fall back to the demuxing index of package decoder.
var ErrUnsupported = errors.New("videoidx: unsupported MP4 feature")

// topLevelBoxes are the box types an ISO-BMFF file may start with. Anything
// else at offset 0 means the file is in another container format.
var topLevelBoxes = map[string]bool{
	"ftyp": true, "styp": true, "moov": true, "mdat": true, "free": true,
	"skip": true, "wide": true, "pnot": true, "sidx": true, "uuid": true,
	"moof": true, "junk": true, "meta": true,
}

// ReadMP4 indexes a video track of the ISO-BMFF (MP4, MOV) file read from r,
// which holds size bytes. stream is the FFmpeg stream index of the track, or
// BestStream for the one FFmpeg would choose. Only box headers, moov and moof
// are read; media data is never touched.
func ReadMP4(ctx context.Context, r io.ReaderAt, size int64, stream int) (*Index, error) {
	if size < 8 {
		return nil, fmt.Errorf("%w: file is %d bytes long", ErrNotMP4, size)
	}
	var head [8]byte
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return nil, fmt.Errorf("videoidx: read header: %w", err)
	}
	if !topLevelBoxes[string(head[4:8])] {
		return nil, ErrNotMP4
	}
	p, err := parseMP4(ctx, r, size)
	if err != nil {
		return nil, err
	}
	t, err := p.chooseTrack(stream)
	if err != nil {
		return nil, err
	}
	return p.buildIndex(t)
}

// parseMP4 reads the boxes of the MP4 read from r (size bytes) into the
// tracks they describe.
func parseMP4(ctx context.Context, r io.ReaderAt, size int64) (*parser, error) {
	p := &parser{ctx: ctx, r: r, size: uint64(size)}
	_, err := mp4.ReadBoxStructure(io.NewSectionReader(r, 0, size), p.handle)
	if err != nil {
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTruncated) || errors.Is(err, ErrUnsupported) ||
			errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if !p.sawMoov {
		if p.truncatedBox != "" {
			return nil, fmt.Errorf("%w: no moov box before the end of the file (%s)", ErrTruncated, p.truncatedBox)
		}
		return nil, fmt.Errorf("%w: no moov box", ErrCorrupt)
	}
	return p, nil
}

// track collects what the boxes of one trak (and its fragments) say.
type track struct {
	stream    int
	id        uint32
	enabled   bool
	handler   string
	timescale uint32
	width     int
	height    int
	fourcc    string

	edits []edit

	stts      []uint32 // pairs: sample count, delta
	ctts      []int32  // pairs: sample count, offset (signed, as FFmpeg reads it)
	stss      []uint32
	hasStss   bool
	sizes     []uint32 // per-sample sizes, or nil when constSize applies
	constSize uint32
	count     uint32   // sample count from stsz/stz2
	stsc      []uint32 // triples: first chunk, samples per chunk, description index
	chunks    []uint64

	// Fragment defaults from trex and the samples of moof/traf/trun boxes.
	trex      defaults
	fragments []Sample
	fragDTS   int64
	fragCTS   []int32
}

type edit struct {
	duration  uint64 // movie timescale
	mediaTime int64  // media timescale, -1 for an empty edit
	rate      int16
}

type defaults struct {
	duration, size, flags uint32
}

type parser struct {
	ctx  context.Context
	r    io.ReaderAt
	size uint64

	sawMoov        bool
	movieTimescale uint32
	tracks         []*track
	truncatedBox   string

	// Fragment state: the current moof, traf and the running data offset.
	moofOffset uint64
	traf       *track
	tfhd       tfhdState
	dataEnd    uint64
}

type tfhdState struct {
	flags                 uint32
	baseOffset            uint64
	duration, size, sflag uint32
}

func (p *parser) cur() (*track, error) {
	if len(p.tracks) == 0 {
		return nil, fmt.Errorf("%w: sample table outside a trak box", ErrCorrupt)
	}
	return p.tracks[len(p.tracks)-1], nil
}

// payload reads the body of the box described by bi. The box was already
// checked to lie inside the file, so the allocation is bounded by its size.
func (p *parser) payload(bi *mp4.BoxInfo) ([]byte, error) {
	buf := make([]byte, bi.Size-bi.HeaderSize)
	if _, err := p.r.ReadAt(buf, int64(bi.Offset+bi.HeaderSize)); err != nil {
		return nil, fmt.Errorf("videoidx: read %s box at offset %d: %w", bi.Type, bi.Offset, err)
	}
	return buf, nil
}

func parentIs(path mp4.BoxPath, parent string) bool {
	return len(path) >= 2 && path[len(path)-2].String() == parent
}

var containers = map[string]string{
	"moov": "", "moof": "", "trak": "moov", "edts": "trak", "mdia": "trak",
	"minf": "mdia", "stbl": "minf", "mvex": "moov", "traf": "moof",
}

func (p *parser) handle(h *mp4.ReadHandle) (any, error) {
	if err := p.ctx.Err(); err != nil {
		return nil, err
	}
	bi := &h.BoxInfo
	typ := bi.Type.String()
	if bi.Size < bi.HeaderSize {
		return nil, fmt.Errorf("%w: %s box at offset %d claims %d bytes, less than its own header", ErrCorrupt, typ, bi.Offset, bi.Size)
	}
	if bi.Size > p.size || bi.Offset+bi.Size > p.size {
		if len(h.Path) == 1 && typ == "mdat" {
			// Samples past the end are reported when offsets are checked.
			p.truncatedBox = fmt.Sprintf("mdat at offset %d claims %d bytes, the file has %d", bi.Offset, bi.Size, p.size)
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %s box at offset %d claims %d bytes but the file ends at %d",
			ErrTruncated, typ, bi.Offset, bi.Size, p.size)
	}
	if parent, ok := containers[typ]; ok {
		if parent == "" && len(h.Path) != 1 || parent != "" && !parentIs(h.Path, parent) {
			return nil, nil
		}
		switch typ {
		case "moov":
			if p.sawMoov {
				return nil, fmt.Errorf("%w: second moov box at offset %d", ErrCorrupt, bi.Offset)
			}
			p.sawMoov = true
		case "trak":
			p.tracks = append(p.tracks, &track{stream: len(p.tracks)})
		case "moof":
			p.moofOffset = bi.Offset
			p.dataEnd = bi.Offset
		case "traf":
			p.traf = nil
		}
		return h.Expand()
	}
	switch typ {
	case "mvhd", "tkhd", "mdhd", "hdlr", "elst", "trex", "tfhd", "tfdt":
		return nil, p.smallBox(h, typ)
	case "stsd", "stts", "ctts", "stss", "stsz", "stz2", "stsc", "stco", "co64":
		if !parentIs(h.Path, "stbl") {
			return nil, nil
		}
		t, err := p.cur()
		if err != nil {
			return nil, err
		}
		body, err := p.payload(bi)
		if err != nil {
			return nil, err
		}
		if err := t.sampleTable(typ, body); err != nil {
			return nil, fmt.Errorf("%w: track %d %s box at offset %d: %v", ErrCorrupt, t.stream, typ, bi.Offset, err)
		}
	case "trun":
		if !parentIs(h.Path, "traf") || p.traf == nil {
			return nil, nil
		}
		body, err := p.payload(bi)
		if err != nil {
			return nil, err
		}
		if err := p.trun(body); err != nil {
			return nil, fmt.Errorf("%w: trun box at offset %d: %v", ErrCorrupt, bi.Offset, err)
		}
	}
	return nil, nil
}

// smallBox decodes a fixed-layout box with go-mp4.
func (p *parser) smallBox(h *mp4.ReadHandle, typ string) error {
	box, _, err := h.ReadPayload()
	if err != nil {
		return fmt.Errorf("%w: %s box at offset %d: %v", ErrCorrupt, typ, h.BoxInfo.Offset, err)
	}
	switch b := box.(type) {
	case *mp4.Mvhd:
		if parentIs(h.Path, "moov") {
			p.movieTimescale = b.Timescale
		}
	case *mp4.Tkhd:
		if t, err := p.cur(); err == nil && parentIs(h.Path, "trak") {
			t.id = b.TrackID
			t.enabled = b.GetFlags()&1 != 0
		}
	case *mp4.Mdhd:
		if t, err := p.cur(); err == nil && parentIs(h.Path, "mdia") {
			t.timescale = b.Timescale
		}
	case *mp4.Hdlr:
		if t, err := p.cur(); err == nil && parentIs(h.Path, "mdia") {
			t.handler = string(b.HandlerType[:])
		}
	case *mp4.Elst:
		if t, err := p.cur(); err == nil && parentIs(h.Path, "edts") {
			t.edits = t.edits[:0]
			for _, e := range b.Entries {
				ed := edit{rate: e.MediaRateInteger}
				if b.GetVersion() == 1 {
					ed.duration, ed.mediaTime = e.SegmentDurationV1, e.MediaTimeV1
				} else {
					ed.duration, ed.mediaTime = uint64(e.SegmentDurationV0), int64(e.MediaTimeV0)
				}
				t.edits = append(t.edits, ed)
			}
		}
	case *mp4.Trex:
		if t := p.trackByID(b.TrackID); t != nil {
			t.trex = defaults{b.DefaultSampleDuration, b.DefaultSampleSize, b.DefaultSampleFlags}
		}
	case *mp4.Tfhd:
		p.traf = p.trackByID(b.TrackID)
		if p.traf == nil {
			return nil
		}
		flags := b.GetFlags()
		st := tfhdState{flags: flags, duration: p.traf.trex.duration, size: p.traf.trex.size, sflag: p.traf.trex.flags}
		switch {
		case flags&mp4.TfhdBaseDataOffsetPresent != 0:
			st.baseOffset = b.BaseDataOffset
		case flags&mp4.TfhdDefaultBaseIsMoof != 0:
			st.baseOffset = p.moofOffset
		default:
			// The first traf of a moof starts at the moof; later ones
			// continue where the previous traf's data ended.
			st.baseOffset = p.dataEnd
		}
		if flags&mp4.TfhdDefaultSampleDurationPresent != 0 {
			st.duration = b.DefaultSampleDuration
		}
		if flags&mp4.TfhdDefaultSampleSizePresent != 0 {
			st.size = b.DefaultSampleSize
		}
		if flags&mp4.TfhdDefaultSampleFlagsPresent != 0 {
			st.sflag = b.DefaultSampleFlags
		}
		p.tfhd = st
		p.dataEnd = st.baseOffset
	case *mp4.Tfdt:
		if p.traf != nil {
			p.traf.fragDTS = int64(b.GetBaseMediaDecodeTime())
		}
	}
	return nil
}

func (p *parser) trackByID(id uint32) *track {
	for _, t := range p.tracks {
		if t.id == id {
			return t
		}
	}
	return nil
}

// sampleTable parses the large sample tables by hand: they can hold hundreds
// of thousands of entries, and go-mp4's reflection-based decoding costs
// about a microsecond per entry, which would dominate indexing time.
func (t *track) sampleTable(typ string, b []byte) error {
	if len(b) < 8 && typ != "stsz" && typ != "stz2" {
		return fmt.Errorf("box too short (%d bytes)", len(b))
	}
	switch typ {
	case "stsd":
		return t.sampleEntry(b)
	case "stts", "ctts":
		n := be32(b[4:])
		if uint64(n)*8 > uint64(len(b)-8) {
			return fmt.Errorf("%d entries do not fit in %d bytes", n, len(b))
		}
		if typ == "stts" {
			t.stts = readU32s(b[8:], int(n)*2)
		} else {
			raw := readU32s(b[8:], int(n)*2)
			t.ctts = make([]int32, len(raw))
			for i, v := range raw {
				t.ctts[i] = int32(v) // FFmpeg reads offsets as signed in both versions
			}
		}
	case "stss":
		n := be32(b[4:])
		if uint64(n)*4 > uint64(len(b)-8) {
			return fmt.Errorf("%d entries do not fit in %d bytes", n, len(b))
		}
		t.stss, t.hasStss = readU32s(b[8:], int(n)), true
	case "stsz":
		if len(b) < 12 {
			return fmt.Errorf("box too short (%d bytes)", len(b))
		}
		t.constSize, t.count = be32(b[4:]), be32(b[8:])
		if t.constSize == 0 {
			if uint64(t.count)*4 > uint64(len(b)-12) {
				return fmt.Errorf("%d sample sizes do not fit in %d bytes", t.count, len(b))
			}
			t.sizes = readU32s(b[12:], int(t.count))
		}
	case "stz2":
		if len(b) < 12 {
			return fmt.Errorf("box too short (%d bytes)", len(b))
		}
		field, count := b[7], be32(b[8:])
		if field != 4 && field != 8 && field != 16 {
			return fmt.Errorf("field size %d is not 4, 8 or 16", field)
		}
		if (uint64(count)*uint64(field)+7)/8 > uint64(len(b)-12) {
			return fmt.Errorf("%d sample sizes do not fit in %d bytes", count, len(b))
		}
		t.count, t.constSize = count, 0
		t.sizes = make([]uint32, count)
		body := b[12:]
		for i := range t.sizes {
			switch field {
			case 4:
				v := body[i/2]
				if i%2 == 0 {
					v >>= 4
				}
				t.sizes[i] = uint32(v & 0xf)
			case 8:
				t.sizes[i] = uint32(body[i])
			case 16:
				t.sizes[i] = uint32(binary.BigEndian.Uint16(body[2*i:]))
			}
		}
	case "stsc":
		n := be32(b[4:])
		if uint64(n)*12 > uint64(len(b)-8) {
			return fmt.Errorf("%d entries do not fit in %d bytes", n, len(b))
		}
		t.stsc = readU32s(b[8:], int(n)*3)
	case "stco":
		n := be32(b[4:])
		if uint64(n)*4 > uint64(len(b)-8) {
			return fmt.Errorf("%d entries do not fit in %d bytes", n, len(b))
		}
		t.chunks = make([]uint64, n)
		for i := range t.chunks {
			t.chunks[i] = uint64(be32(b[8+4*i:]))
		}
	case "co64":
		n := be32(b[4:])
		if uint64(n)*8 > uint64(len(b)-8) {
			return fmt.Errorf("%d entries do not fit in %d bytes", n, len(b))
		}
		t.chunks = make([]uint64, n)
		for i := range t.chunks {
			t.chunks[i] = binary.BigEndian.Uint64(b[8+8*i:])
		}
	}
	return nil
}

// sampleEntry reads the codec four-character code and the coded size from
// the first entry of an stsd box (a VisualSampleEntry for video tracks).
func (t *track) sampleEntry(b []byte) error {
	if be32(b[4:]) == 0 {
		return fmt.Errorf("no sample description")
	}
	if len(b) < 16 {
		return fmt.Errorf("sample description too short")
	}
	t.fourcc = string(b[12:16])
	entry := b[8:]
	if len(entry) >= 36 {
		// size, type, 6 reserved, data reference index, 16 bytes of
		// pre_defined and reserved fields, then width and height.
		t.width = int(binary.BigEndian.Uint16(entry[32:]))
		t.height = int(binary.BigEndian.Uint16(entry[34:]))
	}
	return nil
}

// Track run flags and the non-sync bit of fragment sample flags
// (ISO/IEC 14496-12, 8.8.8 and 8.8.3.1).
const (
	trunDataOffset       = 0x000001
	trunFirstSampleFlags = 0x000004
	trunSampleDuration   = 0x000100
	trunSampleSize       = 0x000200
	trunSampleFlags      = 0x000400
	trunSampleCTS        = 0x000800
	sampleIsNonSync      = 0x00010000
)

// trun appends the samples of one track run to the current fragment track.
func (p *parser) trun(b []byte) error {
	if len(b) < 8 {
		return fmt.Errorf("box too short (%d bytes)", len(b))
	}
	t := p.traf
	flags := be32(b) & 0xffffff
	count := be32(b[4:])
	pos := 8
	offset := p.dataEnd
	if flags&trunDataOffset != 0 {
		if len(b) < pos+4 {
			return fmt.Errorf("box too short for its data offset")
		}
		offset = uint64(int64(p.tfhd.baseOffset) + int64(int32(be32(b[pos:]))))
		pos += 4
	}
	firstFlags, hasFirst := uint32(0), false
	if flags&trunFirstSampleFlags != 0 {
		if len(b) < pos+4 {
			return fmt.Errorf("box too short for its first sample flags")
		}
		firstFlags, hasFirst = be32(b[pos:]), true
		pos += 4
	}
	per := 0
	for _, f := range []uint32{trunSampleDuration, trunSampleSize,
		trunSampleFlags, trunSampleCTS} {
		if flags&f != 0 {
			per += 4
		}
	}
	if per > 0 && uint64(count)*uint64(per) > uint64(len(b)-pos) {
		return fmt.Errorf("%d samples do not fit in %d bytes", count, len(b))
	}
	if per == 0 && uint64(count) > p.size {
		return fmt.Errorf("%d samples in a file of %d bytes", count, p.size)
	}
	for i := uint32(0); i < count; i++ {
		dur, size, sflags, cts := p.tfhd.duration, p.tfhd.size, p.tfhd.sflag, int32(0)
		if i == 0 && hasFirst {
			sflags = firstFlags
		}
		if flags&trunSampleDuration != 0 {
			dur = be32(b[pos:])
			pos += 4
		}
		if flags&trunSampleSize != 0 {
			size = be32(b[pos:])
			pos += 4
		}
		if flags&trunSampleFlags != 0 {
			sflags = be32(b[pos:])
			pos += 4
		}
		if flags&trunSampleCTS != 0 {
			// Signed in version 1; FFmpeg reads version 0 as signed too.
			cts = int32(be32(b[pos:]))
			pos += 4
		}
		if uint64(len(t.fragments)) >= p.size {
			return fmt.Errorf("more samples than bytes in the file")
		}
		t.fragments = append(t.fragments, Sample{
			Offset: int64(offset),
			Size:   size,
			DTS:    t.fragDTS,
			Key:    sflags&sampleIsNonSync == 0,
		})
		t.fragCTS = append(t.fragCTS, cts)
		t.fragDTS += int64(dur)
		offset += uint64(size)
	}
	p.dataEnd = offset
	return nil
}

// chooseTrack returns the requested video track, or the one FFmpeg's
// av_find_best_stream picks: prefer enabled tracks (FFmpeg marks them
// default), then tracks with at least five samples, then the higher bit
// rate; ties go to the earlier track.
func (p *parser) chooseTrack(stream int) (*track, error) {
	if stream != BestStream {
		if stream < 0 || stream >= len(p.tracks) {
			return nil, fmt.Errorf("%w: stream %d does not exist (the file has %d tracks)", ErrNoVideo, stream, len(p.tracks))
		}
		t := p.tracks[stream]
		if t.handler != "vide" {
			return nil, fmt.Errorf("%w: stream %d is not a video track (handler %q)", ErrNoVideo, stream, t.handler)
		}
		return t, nil
	}
	var best *track
	var bestKey [3]int64
	for _, t := range p.tracks {
		if t.handler != "vide" {
			continue
		}
		key := [3]int64{1, min(5, int64(t.sampleCount())), t.bitRate()}
		if t.enabled {
			key[0] = 2
		}
		if best == nil || key[0] > bestKey[0] ||
			key[0] == bestKey[0] && (key[1] > bestKey[1] || key[1] == bestKey[1] && key[2] > bestKey[2]) {
			best, bestKey = t, key
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: the file has %d tracks and none is video", ErrNoVideo, len(p.tracks))
	}
	return best, nil
}

func (t *track) sampleCount() uint64 { return uint64(t.count) + uint64(len(t.fragments)) }

// bitRate mirrors how FFmpeg's mov demuxer derives a stream's bit rate: all
// sample bytes over the summed sample durations.
func (t *track) bitRate() int64 {
	var bytes, duration uint64
	if t.sizes != nil {
		for _, s := range t.sizes {
			bytes += uint64(s)
		}
	} else {
		bytes = uint64(t.constSize) * uint64(t.count)
	}
	for i := 0; i+1 < len(t.stts); i += 2 {
		duration += uint64(t.stts[i]) * uint64(t.stts[i+1])
	}
	for _, s := range t.fragments {
		bytes += uint64(s.Size)
	}
	if len(t.fragments) > 0 {
		duration += uint64(t.fragDTS - t.fragments[0].DTS)
	}
	if duration == 0 || t.timescale == 0 {
		return 0
	}
	return int64(bytes * 8 * uint64(t.timescale) / duration)
}

func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

func readU32s(b []byte, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = be32(b[4*i:])
	}
	return out
}
