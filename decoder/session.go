package decoder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"

	"github.com/asticode/go-astiav"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/videoidx"
)

// ErrIndexMismatch means the packets FFmpeg demuxes are not the ones the
// frame index lists: the index was built for other bytes or another
// stream. Rebuild the index from the video. (A frame that cannot be
// decoded is media.media.ErrFrameDecode; one that does not exist is
// media.media.ErrFrameRange.)
var ErrIndexMismatch = errors.New("decoder: the frame index does not match the video")

// session is one open decoder for one stream of one video: demuxer, codec,
// filter graphs and image encoders, plus where the decoder stands, so that
// the next frame of the same GOP is reached by decoding on instead of
// seeking. It is the decoder's media.Session: used by one goroutine at a
// time (the frame server's pool hands it out exclusively).
type session struct {
	key    sessionKey
	ix     *videoidx.Index
	d      *demuxer
	stream int
	tb     astiav.Rational
	// dec is the decoder in use. spare, if open, is the other one: a
	// session decodes with threads threads, but a random request while
	// the pool has idle cores uses seekThreads (see decodeTo). The one
	// not in use stands flushed.
	dec, spare           decoderCtx
	threads, seekThreads int
	codec                *astiav.Codec
	par                  *astiav.CodecParameters
	pkt                  *astiav.Packet
	frame                *astiav.Frame
	rot                  rotation
	info                 media.VideoInfo

	// Index timestamps are stream ticks times mul/div (see toIndexUnits).
	mul, div int64
	// dtsShift is FFmpeg's DTS minus the index's DTS of the same packet,
	// in index units: the mov demuxer shifts decode timestamps by the edit
	// list and the composition offsets, the index keeps the stts values.
	// Seeking asks for FFmpeg's DTS of a keyframe.
	dtsShift  int64
	haveShift bool
	// keyAt finds a sync sample by file offset, to tell where a seek
	// landed.
	keyAt map[int64]int

	// Decoder position. running means the decoder has been fed every
	// packet from sample start up to (excluding) sample next, without a
	// gap, after a flush; held means pkt holds sample next-1, read but not
	// yet sent. lastPTS is the PTS (index units) of the last frame the
	// decoder output, lastOrdinal its ordinal. inputEOF means the demuxer
	// ended and the decoder was sent the end-of-stream flush.
	running     bool
	held        bool
	start, next int
	haveLast    bool
	lastPTS     int64
	lastOrdinal int
	inputEOF    bool
	// drained means the decoder was sent the end-of-stream flush right
	// after the target's packet (see decodeTo); it holds no position.
	drained bool
	// lastFar says whether the previous request was one that no session
	// position could have reached by decoding on; a second such request
	// in a row marks a random reader (see decodeTo). draining is the
	// decision of the last request.
	lastFar, draining bool
	// alwaysDrain makes every request that seeks drain (tests).
	alwaysDrain bool

	// broken is set after any error: the demuxer and decoder are in an
	// unknown state and the session must be closed, not reused.
	broken bool

	// st is the stream the session's pictures render as.
	st *stream
	// sink, if not nil, takes the pictures that the request in progress
	// passes on its way when it seeks (Decode's PictureSink).
	sink media.PictureSink

	// Counters for tests and statistics.
	seeks, decoded, drains int
}

type sessionKey struct {
	video  media.VideoKey
	stream int
}

// openSession opens the video and prepares a decoder for the stream of its
// index. ctx and v.R are used only during the call.
func openSession(ctx context.Context, v media.Video, threads int) (s *session, err error) {
	ix := v.Index
	if ix == nil || ix.Frames() == 0 {
		return nil, fmt.Errorf("decoder: open %s: no frame index", v.Key)
	}
	d, err := openInput(ctx, v.R, v.Size)
	if err != nil {
		return nil, err
	}
	s = &session{
		key: sessionKey{v.Key, ix.Stream},
		ix:  ix,
		d:   d,
	}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		} else {
			d.src.detach()
		}
	}()

	streams := d.fc.Streams()
	if ix.Stream < 0 || ix.Stream >= len(streams) {
		return nil, fmt.Errorf("%w: the index is of stream %d, the file has %d streams", ErrIndexMismatch, ix.Stream, len(streams))
	}
	st := streams[ix.Stream]
	par := st.CodecParameters()
	if par.MediaType() != astiav.MediaTypeVideo {
		return nil, fmt.Errorf("%w: stream %d is not video", ErrIndexMismatch, ix.Stream)
	}
	s.stream = ix.Stream
	s.tb = st.TimeBase()
	if err := s.setUnits(); err != nil {
		return nil, err
	}
	if err := discardOtherStreams(d.fc, s.stream); err != nil {
		return nil, err
	}

	s.codec = astiav.FindDecoder(par.CodecID())
	if s.codec == nil {
		return nil, fmt.Errorf("decoder: FFmpeg has no decoder for %s (stream %d): %w", par.CodecID().Name(), s.stream, ErrUnsupported)
	}
	s.par, s.threads, s.seekThreads = par, threads, threads
	if s.dec, err = s.openDecoder(threads); err != nil {
		return nil, err
	}
	s.pkt = astiav.AllocPacket()
	s.frame = astiav.AllocFrame()

	if s.rot, err = rotationFromDisplayMatrix(st.SideData(astiav.PacketSideDataTypeDisplaymatrix)); err != nil {
		return nil, err
	}
	w, h := par.Width(), par.Height()
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("decoder: stream %d has no picture size (%dx%d): %w", s.stream, w, h, videoidx.ErrCorrupt)
	}
	if s.rot.swap {
		w, h = h, w
	}
	s.info = media.VideoInfo{Width: w, Height: h, Rotation: s.rot.filters, Frames: ix.Frames()}
	s.st = &stream{rot: s.rot, info: s.info}

	s.keyAt = make(map[int64]int)
	for i := range ix.Samples {
		if ix.Samples[i].Key && ix.Samples[i].Offset >= 0 {
			s.keyAt[ix.Samples[i].Offset] = i
		}
	}

	// The demuxer stands at the start of the file: the first packet of the
	// stream is sample 0. Keep it for a request that starts decoding there
	// and learn FFmpeg's DTS shift from it.
	eof, err := s.readPacket()
	if err != nil {
		return nil, err
	}
	if !eof && s.packetIs(0) {
		if ts := s.packetDTS(); ts != astiav.NoPtsValue {
			if u, ok := s.toIndexUnits(ts); ok {
				s.dtsShift, s.haveShift = u-ix.Samples[0].DTS, true
			}
		}
		s.running, s.held, s.start, s.next = true, true, 0, 1
	}
	return s, nil
}

// decoderCtx is one opened decoder of a session's stream.
type decoderCtx struct {
	cc      *astiav.CodecContext
	addr    uintptr // the AVCodecContext behind cc, verified
	threads int
	// skipping says whether the decoder is set to skip non-reference
	// pictures (see send).
	skipping bool
}

func (d *decoderCtx) free() {
	if d.cc != nil {
		d.cc.Free()
	}
	*d = decoderCtx{}
}

// openDecoder opens a decoder of the session's stream with threads frame
// threads (1: none).
func (s *session) openDecoder(threads int) (d decoderCtx, err error) {
	d.cc = astiav.AllocCodecContext(s.codec)
	if d.cc == nil {
		return d, errors.New("decoder: allocate decoder: out of memory")
	}
	defer func() {
		if err != nil {
			d.free()
		}
	}()
	if err := d.cc.FromCodecParameters(s.par); err != nil {
		return d, fmt.Errorf("decoder: stream %d codec parameters: %w", s.stream, err)
	}
	if err := setPacketTimeBase(d.cc, s.tb); err != nil {
		return d, err
	}
	d.cc.SetThreadCount(threads)
	if threads > 1 {
		d.cc.SetThreadType(astiav.ThreadTypeFrame)
	}
	if err := d.cc.Open(s.codec, nil); err != nil {
		return d, fmt.Errorf("decoder: open %s decoder: %w", s.codec.Name(), err)
	}
	if d.addr, err = decoderAddr(d.cc); err != nil {
		return d, err
	}
	d.threads = threads
	return d, nil
}

// useDecoder makes the decoder with the given number of threads the one
// in use, opening it if need be. The decoder in use must stand flushed.
func (s *session) useDecoder(threads int) error {
	if s.dec.threads == threads {
		return nil
	}
	if s.spare.threads != threads {
		s.spare.free()
		d, err := s.openDecoder(threads)
		if err != nil {
			return err
		}
		s.spare = d
	}
	s.dec, s.spare = s.spare, s.dec
	return nil
}

// setUnits derives mul and div from the stream time base and the index
// timescale: index units = ticks * (num * Timescale / den). MP4 indexes
// count in the media timescale, which is the stream time base (1/den);
// scanned ones count 1/den seconds with ticks multiplied by num.
func (s *session) setUnits() error {
	num, den, ts := int64(s.tb.Num()), int64(s.tb.Den()), int64(s.ix.Timescale)
	if num <= 0 || den <= 0 || ts <= 0 {
		return fmt.Errorf("decoder: stream %d has an invalid time base %d/%d: %w", s.stream, num, den, videoidx.ErrCorrupt)
	}
	if num > math.MaxInt32 || ts > math.MaxUint32 {
		return fmt.Errorf("decoder: stream %d time base %d/%d is out of range: %w", s.stream, num, den, videoidx.ErrCorrupt)
	}
	m, d := num*ts, den
	g := gcd(m, d)
	s.mul, s.div = m/g, d/g
	return nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// toIndexUnits converts stream ticks to index units; ok is false when the
// result is not an integer or does not fit.
func (s *session) toIndexUnits(ticks int64) (int64, bool) {
	neg := ticks < 0
	a := uint64(ticks)
	if neg {
		a = uint64(-ticks)
	}
	hi, lo := bits.Mul64(a, uint64(s.mul))
	if hi >= uint64(s.div) {
		return 0, false
	}
	q, r := bits.Div64(hi, lo, uint64(s.div))
	if r != 0 || q > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(q), true
	}
	return int64(q), true
}

// fromIndexUnits converts index units to stream ticks, rounding down.
func (s *session) fromIndexUnits(u int64) int64 {
	if s.mul == 1 {
		return u * s.div
	}
	v := math.Floor(float64(u) * float64(s.div) / float64(s.mul))
	if v > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	if v < math.MinInt64/2 {
		return math.MinInt64 / 2
	}
	return int64(v)
}

// Bind attaches the caller's reader and context to the demuxer for the
// calls that follow; Unbind detaches them so an idle session pins neither.
func (s *session) Bind(ctx context.Context, r io.ReaderAt) { s.d.src.bind(ctx, r) }
func (s *session) Unbind()                                 { s.d.src.detach() }

// readPacket reads the next packet of the stream into s.pkt.
func (s *session) readPacket() (eof bool, err error) {
	for {
		s.pkt.Unref()
		if err := s.d.fc.ReadFrame(s.pkt); err != nil {
			if serr := s.d.src.sourceErr(); serr != nil {
				return false, fmt.Errorf("decoder: read %s: %w", s.key.video, serr)
			}
			if errors.Is(err, astiav.ErrEof) {
				return true, nil
			}
			return false, fmt.Errorf("%w: demuxing %s: %v", media.ErrFrameDecode, s.key.video, err)
		}
		if s.pkt.StreamIndex() == s.stream {
			return false, nil
		}
	}
}

func (s *session) packetDTS() int64 {
	if ts := s.pkt.Dts(); ts != astiav.NoPtsValue {
		return ts
	}
	return s.pkt.Pts()
}

// packetIs reports whether s.pkt is sample i of the index. Offsets and
// sizes identify samples exactly (the index records FFmpeg's packet
// positions); packets without a position are matched by PTS.
func (s *session) packetIs(i int) bool {
	if i < 0 || i >= len(s.ix.Samples) {
		return false
	}
	sm := &s.ix.Samples[i]
	if int64(s.pkt.Size()) != int64(sm.Size) {
		return false
	}
	if pos := s.pkt.Pos(); pos >= 0 && sm.Offset >= 0 {
		return pos == sm.Offset
	}
	pts, ok := s.toIndexUnits(s.pkt.Pts())
	return ok && pts == sm.PTS
}

// unexpectedPacket explains why s.pkt is not sample i, on the way to frame
// ordinal: the packet is cut short by the end of the input (the video is
// truncated, so the frame cannot be decoded) or it is another packet (the
// index describes other bytes).
func (s *session) unexpectedPacket(i, ordinal int) error {
	sm := s.ix.Samples[min(max(i, 0), len(s.ix.Samples)-1)]
	pos, size := s.pkt.Pos(), int64(s.pkt.Size())
	if pos == sm.Offset && size < int64(sm.Size) && (s.pkt.Flags().Has(astiav.PacketFlagCorrupt) || pos+size >= s.d.src.size) {
		return fmt.Errorf("%w: frame %d of %s: sample %d (%d bytes at offset %d) is cut off by the end of the input (%d bytes): %w",
			media.ErrFrameDecode, ordinal, s.key.video, i, sm.Size, sm.Offset, s.d.src.size, videoidx.ErrTruncated)
	}
	return fmt.Errorf("%w: %s stream %d: on the way to frame %d, a packet of %d bytes at offset %d comes where sample %d (%d bytes at offset %d) should",
		ErrIndexMismatch, s.key.video, s.stream, ordinal, size, pos, i, sm.Size, sm.Offset)
}

// endOfInput is the error for the demuxer ending before sample i, on the
// way to frame ordinal.
func (s *session) endOfInput(i, ordinal int) error {
	return fmt.Errorf("%w: frame %d of %s: the input ends (%d bytes) before sample %d at offset %d: %w",
		media.ErrFrameDecode, ordinal, s.key.video, s.d.src.size, i, s.ix.Samples[min(i, len(s.ix.Samples)-1)].Offset, videoidx.ErrTruncated)
}

// resetPosition forgets where the decoder stands and flushes it.
func (s *session) resetPosition() error {
	if s.drained && s.sink != nil {
		s.keepDrained()
	}
	s.running, s.held, s.haveLast, s.inputEOF, s.drained = false, false, false, false, false
	s.pkt.Unref()
	s.frame.Unref()
	return flushDecoder(s.dec.cc)
}

// keepDrained hands the pictures a drained decoder still holds to the
// picture cache before they are flushed: pictures decoded before the last
// target (in decode order) but presented after it, such as the reference
// picture a B-frame target was predicted from. They were decoded anyway;
// taking them costs nothing.
func (s *session) keepDrained() {
	defer s.frame.Unref()
	for {
		s.frame.Unref()
		if err := s.dec.cc.ReceiveFrame(s.frame); err != nil {
			return // end of stream (or an error the flush clears)
		}
		fi := getFrameInfo(s.frame)
		if fi.corrupt || fi.decodeErrors != 0 {
			continue
		}
		if pts, ord, ok := s.presented(fi); ok {
			s.haveLast, s.lastPTS, s.lastOrdinal = true, pts, ord
			s.pass(ord)
		}
	}
}

// pass offers the picture in s.frame, frame ord, to the sink, copying it
// out of the decoder's buffers if the sink wants it: a reference would
// keep the decoder's buffer pool as large as whatever holds the picture,
// and the pool never gives memory back. A picture that cannot be copied
// (out of memory) is not offered.
func (s *session) pass(ord int) {
	if s.sink == nil || !s.sink.Wants(ord, frameBytes(s.frame)) {
		return
	}
	cp, err := copyFrame(s.frame)
	if err != nil {
		return
	}
	s.sink.Keep(ord, &picture{cp, s.st}, s.chainLength(ord))
}

// chainLength is the number of samples decoded from the keyframe to reach
// frame ordinal: what a kept picture of it saves a later request.
func (s *session) chainLength(ordinal int) int {
	return s.ix.SampleOf(ordinal) - s.ix.DecodeStart(ordinal) + 1
}

// presented returns the PTS (index units) and ordinal of a decoded frame,
// or false for a frame that is not presented (a frame of an
// edit-list-hidden sample that the decoder did not drop, or one without a
// timestamp).
func (s *session) presented(fi frameInfo) (pts int64, ord int, ok bool) {
	ts, ok := fi.timestamp()
	if !ok {
		return 0, 0, false
	}
	if pts, ok = s.toIndexUnits(ts); !ok {
		return 0, 0, false
	}
	ord, ok = s.ordinalOf(pts)
	return pts, ord, ok
}

// canContinue reports whether frame ordinal, whose decoding must start at
// sample start, will come out of the decoder by decoding on from where it
// stands: decoding ran without a gap from a sync sample at or before start,
// has not gone past start by more than the GOP it is in, and the frame has
// not been output yet.
func (s *session) canContinue(target int64, start int) bool {
	return s.running && start >= s.start && start <= s.next && (!s.haveLast || target > s.lastPTS)
}

// seekTo positions the demuxer so that the next packet is sync sample k,
// with a flushed decoder of the given number of threads.
func (s *session) seekTo(k, ordinal, threads int) error {
	s.seeks++
	if err := s.resetPosition(); err != nil {
		return err
	}
	if err := s.useDecoder(threads); err != nil {
		return err
	}
	sm := &s.ix.Samples[k]
	ts := sm.PTS
	if s.haveShift {
		ts = sm.DTS + s.dtsShift
	}
	err := s.d.fc.SeekFrame(s.stream, s.fromIndexUnits(ts), astiav.NewSeekFlags(astiav.SeekFlagBackward))
	if err == nil {
		var landed bool
		landed, err = s.land(k, false, ordinal)
		if err != nil || landed {
			return err
		}
	} else if serr := s.d.src.sourceErr(); serr != nil {
		return fmt.Errorf("decoder: seek in %s: %w", s.key.video, serr)
	}
	// The demuxer went past the keyframe or could not seek there: read
	// from the first packet instead.
	if err := s.resetPosition(); err != nil {
		return err
	}
	first := s.ix.Samples[0].PTS
	if s.haveShift {
		first = min(first, s.ix.Samples[0].DTS+s.dtsShift)
	}
	if err := s.d.fc.SeekFrame(s.stream, s.fromIndexUnits(first)-1, astiav.NewSeekFlags(astiav.SeekFlagBackward)); err != nil {
		if serr := s.d.src.sourceErr(); serr != nil {
			return fmt.Errorf("decoder: seek in %s: %w", s.key.video, serr)
		}
		return fmt.Errorf("%w: %s: cannot seek to the start of stream %d: %v", media.ErrFrameDecode, s.key.video, s.stream, err)
	}
	landed, err := s.land(k, true, ordinal)
	if err != nil {
		return err
	}
	if !landed {
		return s.unexpectedPacket(0, ordinal)
	}
	return nil
}

// land reads the first packet after a seek and, if the demuxer stopped at
// a sync sample at or before k (fromStart: at sample 0), skips packets up
// to k, leaving k held. landed is false when the demuxer went past k.
func (s *session) land(k int, fromStart bool, ordinal int) (landed bool, err error) {
	eof, err := s.readPacket()
	if err != nil {
		return false, err
	}
	if eof {
		if fromStart {
			return false, s.endOfInput(0, ordinal)
		}
		return false, nil
	}
	j := -1
	switch {
	case s.packetIs(k):
		j = k
	case fromStart:
		if !s.packetIs(0) {
			return false, nil
		}
		j = 0
	default:
		if i, ok := s.keyAt[s.pkt.Pos()]; ok && s.packetIs(i) && i < k {
			j = i
		}
	}
	if j < 0 {
		return false, nil
	}
	for i := j + 1; i <= k; i++ {
		eof, err := s.readPacket()
		if err != nil {
			return false, err
		}
		if eof {
			return false, s.endOfInput(i, ordinal)
		}
		if !s.packetIs(i) {
			return false, s.unexpectedPacket(i, ordinal)
		}
	}
	s.running, s.held, s.start, s.next = true, true, k, k+1
	return true, nil
}

// ReadOn tells the session that the caller will read the frames after the
// next one in order (read-ahead, frame sizes), so that the next request does
// not drain whatever random requests the session served before.
func (s *session) ReadOn() { s.lastFar = false }

// ordinalOf returns the ordinal of the presented frame with PTS pts (index
// units). Frames with equal PTS come out in decode order and take
// consecutive ordinals.
func (s *session) ordinalOf(pts int64) (int, bool) {
	n := s.ix.Frames()
	i := sort.Search(n, func(i int) bool { return s.ix.Frame(i).PTS >= pts })
	if i >= n || s.ix.Frame(i).PTS != pts {
		return 0, false
	}
	if s.haveLast && s.lastOrdinal >= i && s.lastPTS == pts && s.lastOrdinal+1 < n && s.ix.Frame(s.lastOrdinal+1).PTS == pts {
		i = s.lastOrdinal + 1
	}
	return i, true
}

// decodeTo decodes frame ordinal into s.frame, continuing from the
// decoder's position when that reaches it, else seeking to its decode
// start. When it seeks, the pictures decoded on the way go to the picture
// cache as they are (converting and encoding a GOP prefix per random
// request would cost more than most of it is worth); sequential readers get
// theirs from read-ahead instead. Any error breaks the session.
//
// A request that seeks right after another request that had to seek
// comes from a random reader, which is unlikely to continue from here.
// Such a request drains: once the target's own packet has been sent, the decoder gets the
// end-of-stream flush instead of the packets after it, which it would
// otherwise need (and fully decode) before it outputs the target through
// its reorder delay (and the frame-threading delay); and every picture
// before the target in decode order other than the target itself is
// decoded only if others reference it. The decoded pixels are the same
// (a picture depends only on the packets before it in decode order); the
// session just loses its position, so the next request seeks, as it would
// have anyway. If the reader was not random after all (the next request
// could have decoded on), that costs one seek, and that request neither
// drains nor counts as random.
//
// A draining request decodes with s.seekThreads frame threads, which the
// pool raises when no other request is using it: the chain of reference
// pictures from the keyframe is serial, but frame threading overlaps each
// picture with the next one's rows that only need the rows already done.
// A request that does not drain keeps the session's own decoder, whose
// position the next request may decode on from (frame threading would
// delay every frame it outputs).
func (s *session) decodeTo(ctx context.Context, ordinal int) (f *astiav.Frame, err error) {
	defer func() {
		if err != nil {
			s.broken = true
		}
	}()
	if ordinal < 0 || ordinal >= s.ix.Frames() {
		return nil, fmt.Errorf("%w: frame %d of %s (the video has %d frames)", media.ErrFrameRange, ordinal, s.key.video, s.ix.Frames())
	}
	target := s.ix.Frame(ordinal).PTS
	targetSample := s.ix.SampleOf(ordinal)
	start := s.ix.DecodeStart(ordinal)
	sought := !s.canContinue(target, start)
	// near: decoding on would have reached the frame, but for a drain.
	near := !sought || s.drained && start >= s.start && start <= s.next && (!s.haveLast || target > s.lastPTS)
	drain := sought && (s.alwaysDrain || s.lastFar && !near)
	s.lastFar, s.draining = !near, drain
	if sought {
		threads := s.threads
		if drain {
			threads = max(threads, s.seekThreads)
		}
		if err := s.seekTo(start, ordinal, threads); err != nil {
			return nil, err
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.frame.Unref()
		err := s.dec.cc.ReceiveFrame(s.frame)
		switch {
		case err == nil:
			s.decoded++
			fi := getFrameInfo(s.frame)
			pts, ord, ok := s.presented(fi)
			if !ok {
				continue
			}
			s.haveLast, s.lastPTS, s.lastOrdinal = true, pts, ord
			if sought && ord != ordinal && pts < target && !fi.corrupt && fi.decodeErrors == 0 {
				s.pass(ord)
			}
			if ord == ordinal {
				if fi.corrupt || fi.decodeErrors != 0 {
					return nil, fmt.Errorf("%w: frame %d of %s: the decoder reports damage in it (corrupt flag %v, error flags %#x)",
						media.ErrFrameDecode, ordinal, s.key.video, fi.corrupt, fi.decodeErrors)
				}
				return s.frame, nil
			}
			if pts > target {
				return nil, fmt.Errorf("%w: frame %d of %s: the decoder skipped it (went on to frame %d); the data around it is damaged",
					media.ErrFrameDecode, ordinal, s.key.video, ord)
			}
			continue
		case errors.Is(err, astiav.ErrEof):
			s.running = false
			if s.drained {
				return nil, fmt.Errorf("%w: frame %d of %s: the decoder did not produce it from the packets up to its own; the video is damaged",
					media.ErrFrameDecode, ordinal, s.key.video)
			}
			if s.next < len(s.ix.Samples) {
				return nil, s.endOfInput(s.next, ordinal)
			}
			return nil, fmt.Errorf("%w: frame %d of %s: the decoder reached the end of the stream without producing it; the video is damaged or truncated",
				media.ErrFrameDecode, ordinal, s.key.video)
		case !errors.Is(err, astiav.ErrEagain):
			return nil, fmt.Errorf("%w: frame %d of %s: %v", media.ErrFrameDecode, ordinal, s.key.video, err)
		}

		// The decoder wants input.
		if s.held {
			s.held = false
			if err := s.send(ordinal, target, drain, targetSample); err != nil {
				return nil, err
			}
			continue
		}
		if drain && !s.inputEOF && s.next > targetSample {
			// The target's packet is in: flush rather than decode on.
			s.inputEOF, s.drained, s.running = true, true, false
			s.drains++
			if err := s.dec.cc.SendPacket(nil); err != nil && !errors.Is(err, astiav.ErrEof) {
				return nil, fmt.Errorf("%w: frame %d of %s: flush decoder: %v", media.ErrFrameDecode, ordinal, s.key.video, err)
			}
			continue
		}
		if s.inputEOF {
			return nil, fmt.Errorf("%w: frame %d of %s: the decoder wants input after the end of the stream", media.ErrFrameDecode, ordinal, s.key.video)
		}
		eof, err := s.readPacket()
		if err != nil {
			return nil, err
		}
		if eof {
			s.inputEOF = true
			if err := s.dec.cc.SendPacket(nil); err != nil && !errors.Is(err, astiav.ErrEof) {
				return nil, fmt.Errorf("%w: frame %d of %s: flush decoder: %v", media.ErrFrameDecode, ordinal, s.key.video, err)
			}
			continue
		}
		if !s.packetIs(s.next) {
			return nil, s.unexpectedPacket(s.next, ordinal)
		}
		s.next++
		if err := s.send(ordinal, target, drain, targetSample); err != nil {
			return nil, err
		}
	}
}

// send sends s.pkt, sample s.next-1, to the decoder. A sample presented
// before the target frame (or not at all) is decoded only if other
// pictures reference it: its own picture would be dropped anyway, and no
// later request can want it from this position (canContinue requires a
// frame after the last one output). Skipping those pictures saves about a
// third of the work of reaching a frame in the middle of a GOP with
// B-frames. Pictures after the target are all decoded, so that the
// session can continue to them, unless the request drains (see decodeTo):
// then no picture but the target is wanted for itself.
func (s *session) send(ordinal int, target int64, drain bool, targetSample int) error {
	i := s.next - 1
	sm := &s.ix.Samples[i]
	if skip := sm.Hidden || sm.PTS < target || (drain && i != targetSample); skip != s.dec.skipping {
		setSkipNonRef(s.dec.addr, skip)
		s.dec.skipping = skip
	}
	err := s.dec.cc.SendPacket(s.pkt)
	s.pkt.Unref()
	if err != nil {
		return fmt.Errorf("%w: frame %d of %s: the packet of sample %d is corrupt: %v", media.ErrFrameDecode, ordinal, s.key.video, s.next-1, err)
	}
	return nil
}

// Close frees every FFmpeg resource of the session.
func (s *session) Close() {
	if s.frame != nil {
		s.frame.Free()
		s.frame = nil
	}
	if s.pkt != nil {
		s.pkt.Free()
		s.pkt = nil
	}
	s.dec.free()
	s.spare.free()
	if s.d != nil {
		s.d.Close()
		s.d = nil
	}
	releaseFreedMemory()
}
