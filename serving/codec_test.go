package serving

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/videoidx"
)

// countingCodec is a media.Codec that decodes nothing but walks a stream
// the way a decoder does, and counts its work: a session decodes on from
// where it stands within a group of pictures and seeks to the keyframe
// otherwise, decoding every picture from there to the one asked for; its
// images name their video, frame and setting, so that a test can tell
// which frame it was served. The policy tests of this package run against
// it without cgo; package decoder's tests run the same policy over FFmpeg.
type countingCodec struct {
	// pictureBytes is the size of every picture (0: 460 KiB, a 640x480
	// YUV 4:2:0 frame).
	pictureBytes int64
	// decodeDelay is how long decoding one picture takes.
	decodeDelay time.Duration
	// failFrames are frames whose decoding fails (media.ErrFrameDecode).
	failFrames map[int]bool
	// noisy makes images that do not compress (noisyImage), as the frames
	// of a noisy camera do, instead of countingImage's.
	noisy bool

	opened, decoded, encoded, seeks atomic.Int64
	packed, unpacked                atomic.Int64
	stored                          atomic.Int64 // packed without compression
	live                            atomic.Int64 // pictures not yet released
}

func (c *countingCodec) OpenSession(ctx context.Context, v media.Video, threads int) (media.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.opened.Add(1)
	return &countingSession{c: c, v: v, ix: v.Index, last: -1}, nil
}

func (c *countingCodec) Identity(s media.ImageSetting) string {
	return "counting;" + s.Normalize().Canonical()
}

// countingSession is a session of a countingCodec. Frames are samples in
// decode order (no B-frames).
type countingSession struct {
	c  *countingCodec
	v  media.Video
	ix *videoidx.Index
	// running: pictures from sample start up to next-1 were decoded
	// without a gap; last is the last frame output.
	running     bool
	start, next int
	last        int
	seeks, dec  int
	broken      bool
	bound       bool
}

func (s *countingSession) Info() media.VideoInfo {
	return media.VideoInfo{Width: s.ix.Width, Height: s.ix.Height, Frames: s.ix.Frames()}
}
func (s *countingSession) Bind(ctx context.Context, r io.ReaderAt) { s.bound = true }
func (s *countingSession) Unbind()                                 { s.bound = false }
func (s *countingSession) ReadOn()                                 {}
func (s *countingSession) SetSeekThreads(int)                      {}
func (s *countingSession) Counters() (int, int)                    { return s.seeks, s.dec }
func (s *countingSession) Broken() bool                            { return s.broken }
func (s *countingSession) Close()                                  {}

func (s *countingSession) Reaches(ordinal int) bool {
	ds := s.ix.DecodeStart(ordinal)
	return s.running && ordinal > s.last && ds >= s.start && ds <= s.next
}

func (s *countingSession) Decode(ctx context.Context, ordinal int, passed media.PictureSink) (media.Picture, error) {
	if !s.bound {
		panic("countingSession: Decode on an unbound session")
	}
	if ordinal < 0 || ordinal >= s.ix.Frames() {
		s.broken = true
		return nil, fmt.Errorf("%w: frame %d", media.ErrFrameRange, ordinal)
	}
	sought := !s.Reaches(ordinal)
	if sought {
		s.seeks++
		s.c.seeks.Add(1)
		s.start = s.ix.DecodeStart(ordinal)
		s.next, s.running = s.start, true
	}
	for ; s.next <= ordinal; s.next++ {
		if err := ctx.Err(); err != nil {
			s.broken = true
			return nil, err
		}
		if s.c.decodeDelay > 0 {
			time.Sleep(s.c.decodeDelay)
		}
		s.dec++
		s.c.decoded.Add(1)
		if s.c.failFrames[s.next] {
			s.broken = true
			return nil, fmt.Errorf("%w: frame %d is damaged", media.ErrFrameDecode, s.next)
		}
		if sought && s.next < ordinal && passed != nil && passed.Wants(s.next, s.c.bytes()) {
			passed.Keep(s.next, s.c.newPicture(s.v.Key, s.next), s.next-s.start+1)
		}
	}
	s.last = ordinal
	return s.c.newPicture(s.v.Key, ordinal), nil
}

func (c *countingCodec) NewRenderer() media.Renderer { return countingRenderer{c} }

// Pack packs a picture to an eighth of its size, compressed (to 95%,
// noisy), or to its size, stored: its video and frame, padded.
func (c *countingCodec) Pack(p media.Picture, compress bool) ([]byte, error) {
	cp, ok := p.(*countingPicture)
	if !ok || cp.released {
		return nil, errors.New("countingCodec: pack: not a live picture of this codec")
	}
	c.packed.Add(1)
	size := c.bytes()
	switch {
	case !compress:
		c.stored.Add(1)
	case c.noisy:
		size = size * 95 / 100
	default:
		size /= 8
	}
	text := fmt.Sprintf("packed|%s|%d|%d|", cp.video.Object, cp.video.Length, cp.ordinal)
	return []byte(text + strings.Repeat(".", max(0, int(size)-len(text)))), nil
}

func (c *countingCodec) Unpack(b []byte) (media.Picture, error) {
	var k media.VideoKey
	var ordinal int
	f := strings.Split(string(b), "|")
	if len(f) != 5 || f[0] != "packed" {
		return nil, errors.New("countingCodec: unpack: not a packed picture")
	}
	k.Object = f[1]
	if _, err := fmt.Sscan(f[2], &k.Length); err != nil {
		return nil, err
	}
	if _, err := fmt.Sscan(f[3], &ordinal); err != nil {
		return nil, err
	}
	c.unpacked.Add(1)
	return c.newPicture(k, ordinal), nil
}

func (c *countingCodec) bytes() int64 {
	if c.pictureBytes > 0 {
		return c.pictureBytes
	}
	return 460 << 10
}

func (c *countingCodec) newPicture(k media.VideoKey, ordinal int) *countingPicture {
	c.live.Add(1)
	return &countingPicture{c: c, video: k, ordinal: ordinal, refs: new(atomic.Int32)}
}

// countingPicture is a picture of a countingCodec; its references share
// one count.
type countingPicture struct {
	c        *countingCodec
	video    media.VideoKey
	ordinal  int
	refs     *atomic.Int32 // extra references
	released bool
}

func (p *countingPicture) Bytes() int64 { return p.c.bytes() }

func (p *countingPicture) Ref() media.Picture {
	p.refs.Add(1)
	return &countingPicture{c: p.c, video: p.video, ordinal: p.ordinal, refs: p.refs}
}

func (p *countingPicture) Release() {
	if p.released {
		panic("countingPicture released twice")
	}
	p.released = true
	if p.refs.Add(-1) < 0 {
		p.c.live.Add(-1)
	}
}

// countingRenderer makes the image of a countingPicture: its video, frame
// and setting as text, padded to a size that depends on the format the
// way real images do (raw formats are much larger than JPEG).
type countingRenderer struct{ c *countingCodec }

func (r countingRenderer) Encode(p media.Picture, s media.ImageSetting) ([]byte, error) {
	return r.AppendEncoded(nil, p, s)
}

func (r countingRenderer) AppendEncoded(dst []byte, p media.Picture, s media.ImageSetting) ([]byte, error) {
	cp, ok := p.(*countingPicture)
	if !ok || cp.released {
		return nil, errors.New("countingRenderer: not a live picture of this codec")
	}
	r.c.encoded.Add(1)
	return append(dst, r.c.image(cp.video, cp.ordinal, s)...), nil
}

// image is the image c makes of frame ordinal of video k with setting s.
func (c *countingCodec) image(k media.VideoKey, ordinal int, s media.ImageSetting) []byte {
	if c.noisy {
		return noisyImage(k, ordinal, s)
	}
	return countingImage(k, ordinal, s)
}

func (countingRenderer) Close() {}

// countingImage is the image a countingCodec makes of frame ordinal of
// video k with setting s: for JPEG and PNG an eighth of the RGB picture,
// about what a JPEG takes (38 KB at 640x480), and for the raw formats
// their size.
func countingImage(k media.VideoKey, ordinal int, s media.ImageSetting) []byte {
	s = s.Normalize()
	text := countingText(k, ordinal, s)
	w, h := s.OutputSize(640, 480)
	size := w * h * 3 / 8
	if n, ok := media.PredictSize(s, 640, 480); ok {
		size = int(n)
	}
	return []byte(text + strings.Repeat(".", max(0, size-len(text))))
}

// noisyImage is countingImage with random bytes, drawn from a seed of the
// frame, instead of its padding: an image that compression cannot shrink.
func noisyImage(k media.VideoKey, ordinal int, s media.ImageSetting) []byte {
	b := countingImage(k, ordinal, s)
	text := countingText(k, ordinal, s.Normalize())
	rng := rand.New(rand.NewPCG(uint64(crc32.ChecksumIEEE([]byte(text))), uint64(ordinal)))
	for i := len(text); i < len(b); i++ {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// countingText names frame ordinal of video k with setting s, normalized.
func countingText(k media.VideoKey, ordinal int, s media.ImageSetting) string {
	return fmt.Sprintf("%s#%d@%s;", k, ordinal, s.Canonical())
}

// gopIndex returns a frame index of frames frames in groups of gop, one
// sample a frame in presentation order.
func gopIndex(t testing.TB, frames, gop int) *videoidx.Index {
	t.Helper()
	ix := &videoidx.Index{Origin: videoidx.OriginScan, Codec: "counting", Width: 640, Height: 480, Timescale: 30}
	for i := range frames {
		ix.Samples = append(ix.Samples, videoidx.Sample{Offset: int64(i) * 100, Size: 100, DTS: int64(i), PTS: int64(i), Key: i%gop == 0})
	}
	built, err := videoidx.Build(ix)
	if err != nil {
		t.Fatal(err)
	}
	return built
}

// countingVideo is a video of the counting codec named name.
func countingVideo(t testing.TB, name string, frames, gop int) media.Video {
	ix := gopIndex(t, frames, gop)
	return media.Video{Key: media.VideoKey{Object: name, Length: int64(frames) * 100}, R: strings.NewReader(""), Size: int64(frames) * 100, Index: ix}
}
