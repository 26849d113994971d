package decoder

import (
	"context"
	"errors"

	"github.com/asticode/go-astiav"

	"github.com/framefs/framefs/media"
)

// errOutOfMemory is FFmpeg failing to allocate a frame reference.
var errOutOfMemory = errors.New("decoder: reference a decoded picture: out of memory")

// Codec is the decoder as a media.Codec: what the frame server (package
// serving) schedules, caches and serves from. The zero value is ready to
// use and safe for concurrent use; it holds no state of its own.
type Codec struct{}

var (
	_ media.Codec    = Codec{}
	_ media.Session  = (*session)(nil)
	_ media.Picture  = (*picture)(nil)
	_ media.Renderer = (*renderer)(nil)
)

// OpenSession opens a decoder session of the stream of v's index.
func (Codec) OpenSession(ctx context.Context, v media.Video, threads int) (media.Session, error) {
	s, err := openSession(ctx, v, threads)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Identity is Identity(s).
func (Codec) Identity(s media.ImageSetting) string { return Identity(s) }

// errNotPicture is a renderer handed a picture this package did not make
// (or one already released).
var errNotPicture = errors.New("decoder: render: not a live picture of this decoder")

// NewRenderer returns a renderer of pictures this package made, of any
// stream.
func (Codec) NewRenderer() media.Renderer { return newRenderer() }

// picture is a decoded frame of a stream: one reference to an AVFrame's
// buffers.
type picture struct {
	f  *astiav.Frame
	st *stream
}

func (p *picture) Bytes() int64 { return frameBytes(p.f) }

func (p *picture) Ref() media.Picture {
	c := p.f.Clone()
	if c == nil {
		// Out of memory for a frame header: FFmpeg's own failure mode
		// for a reference; nothing is shared then.
		return nil
	}
	return &picture{c, p.st}
}

func (p *picture) Release() {
	if p.f != nil {
		p.f.Free()
		p.f = nil
	}
}

// Info returns the stream's display size, rotation and frame count.
func (s *session) Info() media.VideoInfo { return s.info }

// Reaches reports whether frame ordinal comes out by decoding on.
func (s *session) Reaches(ordinal int) bool {
	if ordinal < 0 || ordinal >= s.ix.Frames() {
		return false
	}
	return s.canContinue(s.ix.Frame(ordinal).PTS, s.ix.DecodeStart(ordinal))
}

// Decode decodes frame ordinal and returns a new reference to its
// picture, offering the pictures a seek passes on the way to passed.
func (s *session) Decode(ctx context.Context, ordinal int, passed media.PictureSink) (media.Picture, error) {
	s.sink = passed
	defer func() { s.sink = nil }()
	f, err := s.decodeTo(ctx, ordinal)
	if err != nil {
		return nil, err
	}
	// A new reference to the decoder's picture, not a copy: the decoder
	// takes fresh buffers from its pool while this one is held.
	ref := f.Clone()
	f.Unref()
	if ref == nil {
		s.broken = true
		return nil, errOutOfMemory
	}
	return &picture{ref, s.st}, nil
}

// SetSeekThreads sets the frame threads of a random request.
func (s *session) SetSeekThreads(n int) { s.seekThreads = n }

// Counters returns the seeks done and the pictures decoded.
func (s *session) Counters() (seeks, decoded int) { return s.seeks, s.decoded }

// Broken reports that the session met an error.
func (s *session) Broken() bool { return s.broken }
