package media

import (
	"context"
	"errors"
	"io"
)

// The codec contract: what the frame server (package serving) needs from
// FFmpeg, which package decoder implements behind cgo. It is written down
// here, below both, so that the server's policy builds and is tested
// without cgo against a codec that only counts its work, and so that the
// decoder does not depend on the server.
//
// A session decodes one stream of one video, in presentation order, and
// remembers where it stands: the next frame of the same group of pictures
// comes out by decoding on. Whoever schedules sessions (the server's pool)
// asks a session whether it reaches a frame without seeking, and hands each
// session to one goroutine at a time. Decoded pictures are reference
// counted; images are made from them by renderers, one per goroutine.

// ErrFrameDecode means a frame could not be decoded: a packet on its
// decode path is corrupt, the decoder rejected it or concealed damage in
// the frame, or the decoder never produced the frame. The video may still
// have other good frames.
var ErrFrameDecode = errors.New("decoder: frame cannot be decoded")

// VideoInfo describes a video stream as images are made from it.
type VideoInfo struct {
	// Width and Height are the display size: the decoded picture size,
	// swapped for quarter-turn rotations. Images at native size have it.
	Width, Height int
	// Rotation is the display transform applied to every frame, as an
	// FFmpeg filter chain ("transpose=clock", ...), or "" for none.
	Rotation string
	// Frames is the number of frames.
	Frames int
}

// Codec opens decoder sessions and names what the bytes of its images
// depend on. Safe for concurrent use.
type Codec interface {
	// OpenSession opens a decoder of the stream of v's index, decoding
	// with threads frame threads (1: none). ctx and v.R are used only
	// during the call; Session.Bind attaches them for later calls.
	OpenSession(ctx context.Context, v Video, threads int) (Session, error)
	// Identity names everything the bytes of an image made with s depend
	// on: the normalized setting and the versions of the code and
	// libraries that make it. Frame sizes stored under an identity are
	// valid exactly as long as it is the current one.
	Identity(s ImageSetting) string
	// NewRenderer returns a renderer of the pictures of any of the
	// codec's sessions; the caller closes it.
	NewRenderer() Renderer
	// Pack returns a picture as compact bytes that Unpack turns back into
	// the same picture: its pixels, losslessly compressed if compress is
	// set and stored as they are otherwise, with everything rendering it
	// depends on. A picture kept packed costs a fraction of its image in a
	// raw format (a half, stored).
	Pack(p Picture, compress bool) ([]byte, error)
	// Unpack returns the picture Pack made b of, a reference the caller
	// releases. Images rendered from it are those of the original picture,
	// byte for byte.
	Unpack(b []byte) (Picture, error)
}

// Session is one open decoder of one video stream. It is used by one
// goroutine at a time. Any error a method returns leaves it Broken.
type Session interface {
	// Info returns the stream's display size, rotation and frame count.
	Info() VideoInfo
	// Bind attaches the reader and context the next calls read with;
	// Unbind detaches them, so that an idle session pins neither.
	Bind(ctx context.Context, r io.ReaderAt)
	Unbind()
	// Reaches reports whether frame ordinal comes out by decoding on from
	// where the session stands, without a seek.
	Reaches(ordinal int) bool
	// Decode decodes frame ordinal (presentation order) and returns its
	// picture, a reference the caller releases. Pictures of earlier frames
	// that a seek decodes on the way are offered to passed (nil: none are
	// kept). An error wrapping ErrFrameDecode concerns this frame only;
	// ErrFrameRange means there is no such frame.
	Decode(ctx context.Context, ordinal int, passed PictureSink) (Picture, error)
	// ReadOn says that the frames after the next one will be read in
	// order (read-ahead, fills, sizes): the session then keeps its
	// position instead of treating the next request as a random one.
	ReadOn()
	// SetSeekThreads sets the frame threads a random request (one that
	// seeks and keeps no position) may use: more when no other session
	// is busy.
	SetSeekThreads(n int)
	// Counters returns the seeks done and the pictures decoded so far.
	Counters() (seeks, decoded int)
	// Broken reports that the session met an error and must be closed,
	// not reused.
	Broken() bool
	// Close frees the session.
	Close()
}

// Picture is a decoded frame, reference counted.
type Picture interface {
	// Bytes is the memory the picture holds.
	Bytes() int64
	// Ref returns a new reference to the same picture.
	Ref() Picture
	// Release drops this reference.
	Release()
}

// PictureSink takes pictures a session decodes on its way to a frame it
// seeks to, for later requests of those frames.
type PictureSink interface {
	// Wants reports whether a picture of frame ordinal, of the given size,
	// would be kept; only then is it copied out of the decoder's buffers.
	Wants(ordinal int, bytes int64) bool
	// Keep takes ownership of a copy of frame ordinal's picture.
	Keep(ordinal int, p Picture, cost int)
}

// Renderer turns pictures of one stream into image files (colour
// conversion, rotation, scaling and encoding). Not safe for concurrent
// use.
type Renderer interface {
	// Encode makes the image file of p with setting s (normalized).
	Encode(p Picture, s ImageSetting) ([]byte, error)
	// AppendEncoded appends the image file of p with setting s to dst
	// and returns the extended slice: an image made only to be
	// compressed can reuse one buffer.
	AppendEncoded(dst []byte, p Picture, s ImageSetting) ([]byte, error)
	// Close frees the renderer.
	Close()
}
