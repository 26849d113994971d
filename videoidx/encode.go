package videoidx

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Encoded index layout, format version 1. All integers are unsigned LEB128
// varints ("uv") or zigzag-encoded signed varints ("sv") unless noted.
//
//	magic      "FVIX"
//	version    uv    format version, currently 1
//	origin     uv    1 = MP4 tables, 2 = FFmpeg scan
//	stream     uv    FFmpeg stream index
//	track_id   uv    MP4 track_ID (0 for scans)
//	codec      uv length (at most 32) + bytes
//	width      uv
//	height     uv
//	timescale  uv    (non-zero)
//	flags      uv    bit 0: edit list, bit 1: fragmented
//	n          uv    number of samples (decode order)
//	sizes      n x uv
//	jumps      uv count, then per jump: uv sample index delta from the
//	           previous jump, sv offset minus the expected offset (the end of
//	           the previous sample; 0 for sample 0). Samples without a jump
//	           follow the previous sample directly.
//	dts        sv first DTS, uv unit (common divisor of the n-1 DTS
//	           differences, 1 if none), one byte mode, then the differences
//	           divided by unit: mode 0 as runs (uv run count, then per run uv
//	           length and sv difference), mode 1 one sv per sample after
//	           the first
//	cts_unit   uv    common divisor of every PTS-DTS offset (1 when all are 0)
//	cts        n x sv (PTS-DTS)/cts_unit
//	keys       uv count, then uv deltas of the key sample indices
//	hidden     uv count, then uv deltas of the hidden sample indices
//	crc        4 bytes, little-endian CRC-32C of everything before it
//
// For a video-only H.264 file this comes to about 3 bytes per frame: 2 for
// the size, 1 for the composition offset, next to nothing for offsets, DTS
// and flags. Interleaved audio adds an offset jump per chunk (5-6 bytes per
// frame in all); variable frame rate adds a byte per frame.
const (
	encodingMagic   = "FVIX"
	encodingVersion = 1
	maxCodecName    = 32
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode returns the compact binary form of ix. Decode(Encode(ix)) gives an
// index equal to ix.
func (ix *Index) Encode() []byte {
	n := len(ix.Samples)
	b := make([]byte, 0, 64+4*n)
	b = append(b, encodingMagic...)
	b = binary.AppendUvarint(b, encodingVersion)
	b = binary.AppendUvarint(b, uint64(ix.Origin))
	b = binary.AppendUvarint(b, uint64(ix.Stream))
	b = binary.AppendUvarint(b, uint64(ix.TrackID))
	codec := ix.Codec
	if len(codec) > maxCodecName {
		codec = codec[:maxCodecName]
	}
	b = binary.AppendUvarint(b, uint64(len(codec)))
	b = append(b, codec...)
	b = binary.AppendUvarint(b, uint64(ix.Width))
	b = binary.AppendUvarint(b, uint64(ix.Height))
	b = binary.AppendUvarint(b, uint64(ix.Timescale))
	var flags uint64
	if ix.EditList {
		flags |= 1
	}
	if ix.Fragmented {
		flags |= 2
	}
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendUvarint(b, uint64(n))
	for _, s := range ix.Samples {
		b = binary.AppendUvarint(b, uint64(s.Size))
	}

	var jumps []byte
	count, last, expected := 0, 0, int64(0)
	for i, s := range ix.Samples {
		if s.Offset != expected {
			jumps = binary.AppendUvarint(jumps, uint64(i-last))
			jumps = binary.AppendVarint(jumps, s.Offset-expected)
			count, last = count+1, i
		}
		expected = s.Offset + int64(s.Size)
	}
	b = binary.AppendUvarint(b, uint64(count))
	b = append(b, jumps...)

	b = appendDTS(b, ix.Samples)

	unit := int64(0)
	for _, s := range ix.Samples {
		unit = gcd(unit, s.PTS-s.DTS)
	}
	if unit == 0 {
		unit = 1
	}
	b = binary.AppendUvarint(b, uint64(unit))
	for _, s := range ix.Samples {
		b = binary.AppendVarint(b, (s.PTS-s.DTS)/unit)
	}

	b = appendSampleSet(b, ix.Samples, func(s *Sample) bool { return s.Key })
	b = appendSampleSet(b, ix.Samples, func(s *Sample) bool { return s.Hidden })
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// appendDTS writes the first DTS, the common divisor of the DTS differences
// and then those differences, run-length encoded for constant frame rates or
// one by one for variable ones, whichever is shorter.
func appendDTS(b []byte, samples []Sample) []byte {
	if len(samples) == 0 {
		b = binary.AppendVarint(b, 0)
		return append(b, 1, dtsRuns, 0)
	}
	b = binary.AppendVarint(b, samples[0].DTS)
	unit := int64(0)
	for i := 1; i < len(samples); i++ {
		unit = gcd(unit, samples[i].DTS-samples[i-1].DTS)
	}
	if unit == 0 {
		unit = 1
	}
	b = binary.AppendUvarint(b, uint64(unit))
	var runs, each []byte
	count := 0
	for i := 1; i < len(samples); {
		delta := samples[i].DTS - samples[i-1].DTS
		j := i + 1
		for j < len(samples) && samples[j].DTS-samples[j-1].DTS == delta {
			j++
		}
		runs = binary.AppendUvarint(runs, uint64(j-i))
		runs = binary.AppendVarint(runs, delta/unit)
		count++
		for ; i < j; i++ {
			each = binary.AppendVarint(each, delta/unit)
		}
	}
	runs = append(binary.AppendUvarint(nil, uint64(count)), runs...)
	if len(each) < len(runs) {
		return append(append(b, dtsEach), each...)
	}
	return append(append(b, dtsRuns), runs...)
}

// DTS column modes.
const (
	dtsRuns = 0
	dtsEach = 1
)

func appendSampleSet(b []byte, samples []Sample, member func(*Sample) bool) []byte {
	var set []byte
	count, last := 0, 0
	for i := range samples {
		if member(&samples[i]) {
			set = binary.AppendUvarint(set, uint64(i-last))
			count, last = count+1, i
		}
	}
	b = binary.AppendUvarint(b, uint64(count))
	return append(b, set...)
}

func gcd(a, b int64) int64 {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Decode parses an index written by Encode. Any damage (wrong magic,
// unknown version, checksum mismatch, counts that the data cannot hold)
// returns an error wrapping ErrBadEncoding; the memory it allocates is
// bounded by len(data).
func Decode(data []byte) (*Index, error) {
	if len(data) < len(encodingMagic)+4 || string(data[:len(encodingMagic)]) != encodingMagic {
		return nil, fmt.Errorf("%w: missing FVIX magic", ErrBadEncoding)
	}
	body := data[:len(data)-4]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(data[len(data)-4:]); got != want {
		return nil, fmt.Errorf("%w: checksum mismatch (%08x, stored %08x)", ErrBadEncoding, got, want)
	}
	d := decoder{buf: body[len(encodingMagic):]}
	if v := d.uv(); d.err == nil && v != encodingVersion {
		return nil, fmt.Errorf("%w: format version %d is not supported (this build reads version %d)", ErrBadEncoding, v, encodingVersion)
	}
	ix := &Index{}
	ix.Origin = Origin(d.small(255))
	ix.Stream = int(d.small(1 << 20))
	ix.TrackID = uint32(d.small(1<<32 - 1))
	codecLen := d.small(maxCodecName)
	ix.Codec = string(d.bytes(int(codecLen)))
	ix.Width = int(d.small(1 << 20))
	ix.Height = int(d.small(1 << 20))
	ix.Timescale = uint32(d.small(1<<32 - 1))
	flags := d.small(3)
	ix.EditList, ix.Fragmented = flags&1 != 0, flags&2 != 0
	// Every sample takes at least one byte (its size), which bounds n.
	n := int(d.small(uint64(len(d.buf))))
	if d.err != nil {
		return nil, d.err
	}
	samples := make([]Sample, n)
	for i := range samples {
		samples[i].Size = uint32(d.small(1<<32 - 1))
	}

	jumps := int(d.small(uint64(n)))
	next, offset := -1, int64(0)
	readJump := func(at int) {
		next = at + int(d.small(uint64(n-at)))
		offset = d.sv()
	}
	if jumps > 0 {
		readJump(0)
		jumps--
	}
	expected := int64(0)
	for i := range samples {
		if i == next && d.err == nil {
			expected += offset
			if jumps > 0 {
				readJump(i)
				jumps--
				if next == i {
					d.fail("two offset jumps at one sample")
				}
			}
		}
		if expected < 0 {
			d.fail("negative sample offset")
		}
		samples[i].Offset = expected
		expected += int64(samples[i].Size)
	}

	d.readDTS(samples)

	unit := d.nonZero(d.small(1<<62 - 1))
	for i := range samples {
		samples[i].PTS = samples[i].DTS + d.sv()*unit
	}
	d.readSet(samples, func(s *Sample) { s.Key = true })
	d.readSet(samples, func(s *Sample) { s.Hidden = true })
	if d.err == nil && len(d.buf) != 0 {
		d.fail("%d trailing bytes", len(d.buf))
	}
	if d.err != nil {
		return nil, d.err
	}
	ix.Samples = samples
	if err := ix.finish(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadEncoding, err)
	}
	return ix, nil
}

// decoder reads varints from buf; the first error sticks and later reads
// return zero, so callers check err once.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrBadEncoding, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uv() uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.buf)
	if k <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.buf = d.buf[k:]
	return v
}

func (d *decoder) sv() int64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Varint(d.buf)
	if k <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.buf = d.buf[k:]
	return v
}

// small reads an unsigned varint that must not exceed limit.
func (d *decoder) small(limit uint64) uint64 {
	v := d.uv()
	if v > limit {
		d.fail("value %d exceeds %d", v, limit)
		return 0
	}
	return v
}

// nonZero checks that a decoded multiplier is not zero.
func (d *decoder) nonZero(v uint64) int64 {
	if v == 0 {
		d.fail("composition offset unit is zero")
		return 1
	}
	return int64(v)
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.buf) {
		d.fail("string of %d bytes past the end", n)
		return nil
	}
	b := d.buf[:n]
	d.buf = d.buf[n:]
	return b
}

func (d *decoder) readDTS(samples []Sample) {
	n := len(samples)
	dts := d.sv()
	unit := d.nonZero(d.small(1<<62 - 1))
	mode := d.small(dtsEach)
	if d.err != nil || n == 0 {
		if n == 0 && d.err == nil && mode == dtsRuns {
			d.small(0)
		}
		return
	}
	samples[0].DTS = dts
	if mode == dtsEach {
		for i := 1; i < n; i++ {
			dts += d.sv() * unit
			samples[i].DTS = dts
		}
		return
	}
	i := 1
	for runs := d.small(uint64(n)); runs > 0 && d.err == nil; runs-- {
		length := int(d.small(uint64(n - i)))
		if length == 0 {
			d.fail("empty DTS run")
		}
		delta := d.sv() * unit
		for k := 0; k < length; k++ {
			dts += delta
			samples[i].DTS = dts
			i++
		}
	}
	if i != n {
		d.fail("DTS runs cover %d of %d samples", i, n)
	}
}

func (d *decoder) readSet(samples []Sample, mark func(*Sample)) {
	count := d.small(uint64(len(samples)))
	at := 0
	for k := uint64(0); k < count && d.err == nil; k++ {
		delta := d.small(uint64(len(samples) - at))
		if k > 0 && delta == 0 {
			d.fail("repeated sample in a set")
			return
		}
		at += int(delta)
		if at >= len(samples) {
			d.fail("sample %d out of range", at)
			return
		}
		mark(&samples[at])
	}
}
