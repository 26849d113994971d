package decoder

// #cgo pkg-config: libavformat
// #include <errno.h>
// #include <libavformat/avio.h>
import "C"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/asticode/go-astiav"

	"github.com/framefs/framefs/videoidx"
)

// ioBufferSize is the size of the buffer FFmpeg reads through. Every refill
// is one ReadAt call, so on object storage it is one ranged request; 64 KiB
// is twice FFmpeg's default and keeps small-packet demuxing from issuing a
// request per packet.
const ioBufferSize = 64 << 10

// Whence values FFmpeg passes to a custom seek callback besides the io.Seek*
// ones: AVSEEK_SIZE asks for the size without moving; AVSEEK_FORCE may be
// or'ed into any whence and only asks to seek even if it is expensive, which
// never applies to a ReaderAt.
const (
	avseekSize  = C.AVSEEK_SIZE
	avseekForce = C.AVSEEK_FORCE
)

// errInvalidArgument is AVERROR(EINVAL).
const errInvalidArgument = astiav.Error(-C.EINVAL)

// readerSource is the state behind one custom AVIOContext: a read position
// over an io.ReaderAt limited to size bytes. FFmpeg calls read and seek one
// at a time from the goroutine that called into it; mu still guards every
// field because the scanner inspects err and hitEnd between calls, and
// go-astiav v0.16.0 keeps the callbacks reachable after Close (see detach).
type readerSource struct {
	mu   sync.Mutex
	r    io.ReaderAt     // guarded by mu; nil after detach
	ctx  context.Context // guarded by mu; nil after detach
	size int64
	pos  int64

	// err is the first error that did not come from FFmpeg itself: a
	// failing ReaderAt or a cancelled context. FFmpeg only sees an AVERROR
	// code, so callers report err instead when it is set.
	err error
	// hitEnd records that FFmpeg asked for bytes at or past the end of the
	// input since the last resetHitEnd. A demuxer whose container still
	// promised more frames when that happened was cut short.
	hitEnd bool
}

func (s *readerSource) read(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r == nil {
		return 0, astiav.ErrEio
	}
	if err := s.ctx.Err(); err != nil {
		s.setErr(err)
		return 0, astiav.ErrExit
	}
	if s.pos >= s.size {
		s.hitEnd = true
		return 0, astiav.ErrEof
	}
	if rest := s.size - s.pos; int64(len(b)) > rest {
		b = b[:rest]
	}
	n, err := s.r.ReadAt(b, s.pos)
	s.pos += int64(n)
	if n > 0 {
		// ReadAt may return io.EOF with the last bytes; FFmpeg gets them
		// now and AVERROR_EOF on the next call.
		return n, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		// The ReaderAt ends before size: the object is shorter than the
		// caller said, which to the demuxer looks like a truncated file.
		s.hitEnd = true
		return 0, astiav.ErrEof
	}
	s.setErr(fmt.Errorf("read at offset %d: %w", s.pos, err))
	return 0, astiav.ErrEio
}

func (s *readerSource) seek(offset int64, whence int) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var base int64
	switch whence &^ avseekForce {
	case avseekSize:
		return s.size, nil
	case io.SeekStart:
	case io.SeekCurrent:
		base = s.pos
	case io.SeekEnd:
		base = s.size
	default:
		return 0, errInvalidArgument
	}
	pos := base + offset
	if (offset > 0 && pos < base) || pos < 0 {
		return 0, errInvalidArgument // overflow, or before the start
	}
	// Seeking past the end is allowed, as with lseek; the next read
	// reports end of file.
	if pos > s.size {
		s.hitEnd = true
	}
	s.pos = pos
	return pos, nil
}

func (s *readerSource) setErr(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *readerSource) resetHitEnd() {
	s.mu.Lock()
	s.hitEnd = false
	s.mu.Unlock()
}

func (s *readerSource) sawEnd() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hitEnd
}

// sourceErr returns the ReaderAt or context error that made FFmpeg fail, if
// any.
func (s *readerSource) sourceErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// detach drops the references to the caller's reader and context. go-astiav
// v0.16.0 keeps every read/seek callback in a package-level map forever
// (IOContext.Free does not delete the entry), so without this a closed
// demuxer would pin the caller's ReaderAt, and whatever buffer backs it, for
// the life of the process. After detach only this small struct leaks.
func (s *readerSource) detach() {
	s.mu.Lock()
	s.r, s.ctx = nil, nil
	s.mu.Unlock()
}

// bind points the source at another reader and context: a decoder session
// outlives the request that opened it and reads, for each later request,
// through that request's reader (the same bytes, possibly another handle)
// under that request's context. detach drops both between requests so an
// idle session pins neither; reads then fail with EIO.
func (s *readerSource) bind(ctx context.Context, r io.ReaderAt) {
	s.mu.Lock()
	s.r, s.ctx = r, ctx
	s.mu.Unlock()
}

// demuxer is an opened FFmpeg input reading from an io.ReaderAt through a
// custom AVIOContext. It is not safe for concurrent use; Close releases
// every FFmpeg resource it holds.
type demuxer struct {
	fc  *astiav.FormatContext
	ioc *astiav.IOContext
	src *readerSource
}

// openInput opens the container in the first size bytes of r (which may be
// a section of a larger object), reads its header and runs FFmpeg's stream
// probing (avformat_find_stream_info). Nothing is written to disk. ctx
// cancels the reads FFmpeg makes while opening, and later ones until Close.
func openInput(ctx context.Context, r io.ReaderAt, size int64) (d *demuxer, err error) {
	if r == nil {
		return nil, errors.New("decoder: open input: nil reader")
	}
	if size < 0 {
		return nil, fmt.Errorf("decoder: open input: negative size %d", size)
	}
	if size == 0 {
		return nil, fmt.Errorf("%w: the input is empty (0 bytes)", ErrUnrecognized)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("decoder: open input: %w", err)
	}

	src := &readerSource{r: r, ctx: ctx, size: size}
	ioc, err := astiav.AllocIOContext(ioBufferSize, false, src.read, src.seek, nil)
	if err != nil {
		src.detach()
		return nil, fmt.Errorf("decoder: open input: allocate IO context: %w", err)
	}
	fc := astiav.AllocFormatContext()
	if fc == nil {
		ioc.Free()
		src.detach()
		return nil, errors.New("decoder: open input: allocate format context: out of memory")
	}
	// With pb set before avformat_open_input, FFmpeg marks the context
	// AVFMT_FLAG_CUSTOM_IO and never closes or frees the IO context: that
	// stays our job on every path below.
	fc.SetPb(ioc)

	if err := fc.OpenInput("", nil, nil); err != nil {
		// avformat_open_input has already freed the format context (and
		// go-astiav set its pointer to nil, making Free a no-op).
		fc.Free()
		ioc.Free()
		src.detach()
		return nil, openError("open input", src, err)
	}
	if err := fc.FindStreamInfo(nil); err != nil {
		fc.CloseInput()
		ioc.Free()
		src.detach()
		return nil, openError("find stream info", src, err)
	}
	return &demuxer{fc: fc, ioc: ioc, src: src}, nil
}

// openError builds the error for a failed open step. An error of the
// ReaderAt or the context wins over FFmpeg's code, which would only say
// "I/O error" or "exit". FFmpeg meeting the end of the input inside the
// header means truncation; any other verdict on the bytes wraps
// ErrUnrecognized.
func openError(step string, src *readerSource, err error) error {
	if serr := src.sourceErr(); serr != nil {
		return fmt.Errorf("decoder: %s: %w", step, serr)
	}
	if errors.Is(err, astiav.ErrEof) {
		return fmt.Errorf("decoder: %s: the input (%d bytes) ends inside the container header: the file is truncated: %w (%w)",
			step, src.size, videoidx.ErrTruncated, err)
	}
	return fmt.Errorf("%w (unknown format, or a damaged or truncated file; FFmpeg %s: %v)", ErrUnrecognized, step, err)
}

// Close frees the format context and the IO context. It is safe to call
// more than once.
func (d *demuxer) Close() {
	if d.fc != nil {
		// Closes the input but, because of AVFMT_FLAG_CUSTOM_IO, leaves
		// the IO context alone.
		d.fc.CloseInput()
		d.fc = nil
	}
	if d.ioc != nil {
		d.ioc.Free()
		d.ioc = nil
	}
	if d.src != nil {
		d.src.detach()
	}
}
