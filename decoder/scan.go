package decoder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/asticode/go-astiav"

	"github.com/framefs/framefs/videoidx"
)

// Errors returned by this package besides those of package videoidx
// (ErrNoVideo, ErrCorrupt, ErrTruncated), which scan errors wrap where they
// apply. Callers tell them apart with errors.Is.
var (
	// ErrUnrecognized means FFmpeg could not open the input as a media
	// container: empty input, an unknown format, or a header it cannot
	// parse. Errors of the io.ReaderAt itself are returned as they are
	// instead, so a storage failure is not mistaken for a bad file.
	ErrUnrecognized = errors.New("decoder: not a media file FFmpeg can read")
	// ErrUnsupported means the file is readable but cannot be indexed
	// exactly by a demux scan (for example, reordered frames without
	// presentation timestamps).
	ErrUnsupported = errors.New("decoder: video cannot be indexed by demuxing")
)

// ScanOptions configures ScanIndex. The zero value indexes the default
// video stream.
type ScanOptions struct {
	// HasStream makes ScanIndex index Stream. When false, ScanIndex
	// indexes the video stream FFmpeg's av_find_best_stream picks (the
	// default of torchcodec, for one), which is not necessarily the first
	// video stream that ffprobe's "v:0" names.
	HasStream bool
	// Stream is the FFmpeg stream index to index when HasStream is set:
	// the stream's position among all the file's streams, as in
	// `ffprobe -select_streams 3`. It must be a video stream.
	Stream int
}

// maxInitialSamples caps the capacity preallocated from the frame count a
// container declares, which an attacker controls.
const maxInitialSamples = 1 << 16

// ScanIndex builds the frame index of one video stream of the container in
// the first size bytes of r by demuxing its packets with FFmpeg, without
// decoding them (FFmpeg's stream probing, avformat_find_stream_info, still
// decodes the first few frames to learn the codec parameters). It reads any
// container FFmpeg can demux; for MP4/MOV, videoidx.ReadMP4 builds the
// index from the sample tables without reading the media data.
//
// The index has one Sample per packet of the stream, in demux (decode)
// order, with timestamps in units of 1/Timescale second, where Timescale is
// the stream time base's denominator and timestamps are multiplied by its
// numerator (1001/30000 gives Timescale 30000 and steps of 1001):
//   - Offset is FFmpeg's packet position (AVPacket.pos): the sample's file
//     offset in MP4, where the SimpleBlock/BlockGroup element starts in
//     Matroska (a few bytes before the frame data); -1 if the demuxer
//     does not know it.
//   - A packet without PTS gets PTS = DTS, which is exact when the codec
//     does not reorder frames (no B-frames, video_delay 0). If it does
//     reorder, presentation order cannot be known without decoding and
//     ScanIndex fails with ErrUnsupported. A packet without DTS gets DTS =
//     PTS. A packet with neither continues from the previous packet's DTS
//     and duration; without those, ScanIndex fails with ErrCorrupt.
//   - Key is AV_PKT_FLAG_KEY; Hidden is AV_PKT_FLAG_DISCARD, which the MP4
//     demuxer sets on samples an edit list keeps out of the presentation.
//
// A file cut short fails with videoidx.ErrTruncated whenever the demuxer
// gives evidence of it: FFmpeg meets the end of the input inside the
// container header; the demuxer's index of any stream (MP4 sample tables,
// AVI idx1) places bytes past the end; a packet extends past
// the end or was cut off by it (AV_PKT_FLAG_CORRUPT on a short read); or
// the container declares more frames for the stream than could be read and
// the demuxer ran into the end of the input while reading them. A moov-last
// MP4 cut before its moov has no header at all and fails with
// ErrUnrecognized. Containers that neither declare frame counts nor index
// every frame (Matroska/WebM, MPEG-TS) cannot be checked: cut between or
// inside packets, they are indexed as the frames they still have, which
// are exactly the frames FFmpeg decodes from them. Demuxer errors other
// than end of file fail with videoidx.ErrCorrupt, and so does a demuxer
// that returns more packets than the input has bytes.
//
// A file without a video stream, or whose chosen stream is not video, fails
// with an error wrapping videoidx.ErrNoVideo; one FFmpeg cannot open fails
// with ErrUnrecognized. ctx cancels the scan between packets and inside
// FFmpeg's reads.
func ScanIndex(ctx context.Context, r io.ReaderAt, size int64, opts ScanOptions) (*videoidx.Index, error) {
	d, err := openInput(ctx, r, size)
	if err != nil {
		return nil, err
	}
	defer d.Close()

	stream, err := d.chooseVideoStream(opts)
	if err != nil {
		return nil, err
	}
	st := d.fc.Streams()[stream]
	par := st.CodecParameters()
	tb := st.TimeBase()
	if tb.Num() <= 0 || tb.Den() <= 0 || int64(tb.Den()) > math.MaxUint32 {
		return nil, fmt.Errorf("decoder: stream %d has an invalid time base %d/%d: %w",
			stream, tb.Num(), tb.Den(), videoidx.ErrCorrupt)
	}
	delay, err := videoDelay(d.fc, stream)
	if err != nil {
		return nil, err
	}
	if err := discardOtherStreams(d.fc, stream); err != nil {
		return nil, err
	}

	sc := scanner{
		d:         d,
		stream:    stream,
		tbNum:     int64(tb.Num()),
		reorders:  delay > 0,
		declared:  st.NbFrames(),
		inputSize: size,
	}
	samples, err := sc.run(ctx)
	if err != nil {
		return nil, err
	}
	ix, err := videoidx.Build(&videoidx.Index{
		Origin:    videoidx.OriginScan,
		Stream:    stream,
		Codec:     par.CodecID().Name(),
		Width:     par.Width(),
		Height:    par.Height(),
		Timescale: uint32(tb.Den()),
		Samples:   samples,
	})
	if err != nil {
		return nil, fmt.Errorf("decoder: stream %d: %w", stream, err)
	}
	return ix, nil
}

// chooseVideoStream returns the index of the stream to scan: opts.Stream if
// set, else FFmpeg's best video stream.
func (d *demuxer) chooseVideoStream(opts ScanOptions) (int, error) {
	streams := d.fc.Streams()
	if !opts.HasStream {
		best, err := bestVideoStream(d.fc)
		if err != nil {
			return 0, err
		}
		if best < 0 {
			return 0, fmt.Errorf("decoder: no video stream (file has %s): %w",
				describeStreams(streams), videoidx.ErrNoVideo)
		}
		return best, nil
	}
	if opts.Stream < 0 || opts.Stream >= len(streams) {
		return 0, fmt.Errorf("decoder: stream %d is not a video stream (file has %s): %w",
			opts.Stream, describeStreams(streams), videoidx.ErrNoVideo)
	}
	if t := streams[opts.Stream].CodecParameters().MediaType(); t != astiav.MediaTypeVideo {
		return 0, fmt.Errorf("decoder: stream %d is not a video stream but %s (file has %s): %w",
			opts.Stream, t, describeStreams(streams), videoidx.ErrNoVideo)
	}
	return opts.Stream, nil
}

// describeStreams says how many streams there are and of which types, for
// error messages: "2 streams: #0 audio, #1 subtitle".
func describeStreams(streams []*astiav.Stream) string {
	if len(streams) == 0 {
		return "no streams"
	}
	var b strings.Builder
	if len(streams) == 1 {
		b.WriteString("1 stream: ")
	} else {
		fmt.Fprintf(&b, "%d streams: ", len(streams))
	}
	const maxListed = 16 // a hostile file may declare thousands
	for i, s := range streams {
		if i == maxListed {
			b.WriteString(", ...")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		t := s.CodecParameters().MediaType().String()
		if t == "" {
			t = "unknown"
		}
		fmt.Fprintf(&b, "#%d %s", i, t)
	}
	return b.String()
}

// scanner demuxes the packets of one stream into samples.
type scanner struct {
	d         *demuxer
	stream    int
	tbNum     int64 // time base numerator: timestamps are multiplied by it
	reorders  bool  // the codec reorders frames (video_delay > 0)
	declared  int64 // frame count the container declares, 0 if none
	inputSize int64

	prevDTS      int64 // in time base units; valid if len(samples) > 0
	prevDuration int64 // in time base units; 0 if unknown
}

func (sc *scanner) run(ctx context.Context) ([]videoidx.Sample, error) {
	pkt := astiav.AllocPacket()
	if pkt == nil {
		return nil, errors.New("decoder: allocate packet: out of memory")
	}
	defer pkt.Free()

	var samples []videoidx.Sample
	if sc.declared > 0 {
		samples = make([]videoidx.Sample, 0, min(sc.declared, maxInitialSamples))
	}
	if err := sc.checkIndex(); err != nil {
		return nil, err
	}
	// Only ends of input met while reading packets count as evidence of
	// truncation; probing the header may legitimately read to the end.
	sc.d.src.resetHitEnd()
	var packets int64 // of all streams
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("decoder: scan stream %d: %w", sc.stream, err)
		}
		err := sc.d.fc.ReadFrame(pkt)
		if err != nil {
			// FFmpeg's IO layer turns a failing read into end of file, so
			// look at the source's own error before believing EOF.
			if serr := sc.d.src.sourceErr(); serr != nil {
				return nil, fmt.Errorf("decoder: scan stream %d after %d packets: %w", sc.stream, len(samples), serr)
			}
			if errors.Is(err, astiav.ErrEof) {
				break
			}
			return nil, fmt.Errorf("decoder: scan stream %d: demuxing failed after %d packets: %w: %w",
				sc.stream, len(samples), videoidx.ErrCorrupt, err)
		}
		packets++
		if packets > sc.inputSize {
			pkt.Unref()
			return nil, fmt.Errorf("decoder: scan stream %d: the demuxer returned more packets than the input has bytes (%d): %w",
				sc.stream, sc.inputSize, videoidx.ErrCorrupt)
		}
		if pkt.StreamIndex() != sc.stream {
			pkt.Unref()
			continue
		}
		s, err := sc.sample(pkt, len(samples))
		pkt.Unref()
		if err != nil {
			return nil, err
		}
		samples = append(samples, s)
	}

	// Demuxers that build their index while reading (fragmented MP4)
	// may have learnt of more samples since the first check.
	if err := sc.checkIndex(); err != nil {
		return nil, err
	}
	if sc.declared > 0 && int64(len(samples)) < sc.declared && sc.d.src.sawEnd() {
		return nil, fmt.Errorf("decoder: stream %d: the container declares %d frames but only %d could be read before the end of the input (%d bytes): the file is truncated: %w",
			sc.stream, sc.declared, len(samples), sc.inputSize, videoidx.ErrTruncated)
	}
	return samples, nil
}

// checkIndex fails with videoidx.ErrTruncated if the demuxer's index of any
// stream places bytes past the end of the input: the container's tables
// describe more file than there is.
func (sc *scanner) checkIndex() error {
	c, err := checkIndex(sc.d.fc, sc.inputSize)
	if err != nil {
		return err
	}
	if c.stream >= 0 {
		return fmt.Errorf("decoder: the container's index places entry %d of %d of stream %d at bytes %d to %d, past the end of the input (%d bytes): the file is truncated: %w",
			c.entry, c.entries, c.stream, c.pos, c.pos+c.size, sc.inputSize, videoidx.ErrTruncated)
	}
	return nil
}

// sample converts the packet, the n-th of the stream, into a Sample.
func (sc *scanner) sample(pkt *astiav.Packet, n int) (videoidx.Sample, error) {
	size := int64(pkt.Size())
	pos := pkt.Pos()
	if size < 0 {
		return videoidx.Sample{}, fmt.Errorf("decoder: stream %d: packet %d has negative size %d: %w",
			sc.stream, n, size, videoidx.ErrCorrupt)
	}
	if pos < -1 {
		pos = -1
	}
	if pos >= 0 && (pos > sc.inputSize || size > sc.inputSize-pos) {
		return videoidx.Sample{}, fmt.Errorf("decoder: stream %d: packet %d (bytes %d to %d) extends past the end of the input (%d bytes): the file is truncated: %w",
			sc.stream, n, pos, pos+size, sc.inputSize, videoidx.ErrTruncated)
	}

	flags := pkt.Flags()
	if flags.Has(astiav.PacketFlagCorrupt) && pos >= 0 && pos+size == sc.inputSize {
		// FFmpeg flags a packet corrupt when the read of its data came up
		// short; ending exactly at the end of the input, it was cut off.
		return videoidx.Sample{}, fmt.Errorf("decoder: stream %d: packet %d (bytes %d to %d) is cut off by the end of the input: the file is truncated: %w",
			sc.stream, n, pos, pos+size, videoidx.ErrTruncated)
	}

	dts, pts := pkt.Dts(), pkt.Pts()
	switch {
	case pts != astiav.NoPtsValue && dts != astiav.NoPtsValue:
	case pts != astiav.NoPtsValue:
		dts = pts
	case dts != astiav.NoPtsValue:
		if sc.reorders {
			return videoidx.Sample{}, fmt.Errorf("decoder: stream %d: packet %d has no presentation timestamp and the codec reorders frames, so their order is unknown without decoding: %w",
				sc.stream, n, ErrUnsupported)
		}
		pts = dts
	default:
		if n == 0 || sc.prevDuration <= 0 || sc.reorders {
			return videoidx.Sample{}, fmt.Errorf("decoder: stream %d: packet %d has no timestamps: %w",
				sc.stream, n, videoidx.ErrCorrupt)
		}
		dts = sc.prevDTS + sc.prevDuration
		pts = dts
	}
	sc.prevDTS, sc.prevDuration = dts, pkt.Duration()

	sDTS, ok1 := scaleTimestamp(dts, sc.tbNum)
	sPTS, ok2 := scaleTimestamp(pts, sc.tbNum)
	if !ok1 || !ok2 {
		return videoidx.Sample{}, fmt.Errorf("decoder: stream %d: packet %d has an out-of-range timestamp (dts %d, pts %d): %w",
			sc.stream, n, dts, pts, videoidx.ErrCorrupt)
	}
	return videoidx.Sample{
		Offset: pos,
		Size:   uint32(size),
		DTS:    sDTS,
		PTS:    sPTS,
		Key:    flags.Has(astiav.PacketFlagKey),
		Hidden: flags.Has(astiav.PacketFlagDiscard),
	}, nil
}

// scaleTimestamp returns ts*num and whether it fits in an int64 without
// touching AV_NOPTS_VALUE (math.MinInt64).
func scaleTimestamp(ts, num int64) (int64, bool) {
	if num == 1 {
		return ts, true
	}
	if ts > math.MaxInt64/num || ts < -math.MaxInt64/num {
		return 0, false
	}
	return ts * num, true
}
