package decoder

import (
	"errors"
	"fmt"
	"slices"

	"github.com/asticode/go-astiav"

	"github.com/framefs/framefs/media"
)

// PNG images use zlib level 2 and the Sub filter on every row. Measured on
// 640x480 and 480x270 frames, that is 3.0-3.5 ms per frame and 10-25%
// larger than FFmpeg's default (level 6, no filter: 6-8 ms) or the best
// (level 6, Paeth: 11 ms); Go's image/png needs 8-14 ms at BestSpeed. A
// served frame is usually read once, so speed wins.
const (
	pngCompressionLevel = "2"
	pngPrediction       = "sub"
)

// encKey identifies an image encoder of a session.
type encKey struct {
	format        media.ImageFormat
	quality       int
	width, height int
}

// imageEncoder turns a converted rgb24 frame (bgr24 also for BMP) into
// the bytes of an image file, appended to dst (nil for a slice of its
// own). Not safe for concurrent use.
type imageEncoder interface {
	encode(dst []byte, f *astiav.Frame) ([]byte, error)
	free()
}

func newImageEncoder(k encKey) (imageEncoder, error) {
	switch k.format {
	case media.FormatJPEG:
		return newJPEGEncoder(k)
	case media.FormatPNG:
		return newPNGEncoder(k)
	case media.FormatBMP:
		return bmpEncoder{k.width, k.height}, nil
	case media.FormatPPM:
		return ppmEncoder{k.width, k.height}, nil
	case media.FormatNPY:
		return npyEncoder{k.width, k.height}, nil
	}
	return nil, fmt.Errorf("decoder: unknown image format %d", k.format)
}

// pngEncoder encodes with FFmpeg's png encoder, opened single-threaded
// and bit-exact (no encoder version string in the file), so that an image
// depends on its frame alone: not on the frames encoded before it, the
// number of threads or the order of requests.
type pngEncoder struct {
	cc  *astiav.CodecContext
	pkt *astiav.Packet
}

func newPNGEncoder(k encKey) (e *pngEncoder, err error) {
	codec := astiav.FindEncoder(astiav.CodecIDPng)
	if codec == nil {
		return nil, errors.New("decoder: FFmpeg has no png encoder")
	}
	cc := astiav.AllocCodecContext(codec)
	if cc == nil {
		return nil, errors.New("decoder: allocate encoder: out of memory")
	}
	e = &pngEncoder{cc: cc}
	defer func() {
		if err != nil {
			e.free()
			e = nil
		}
	}()
	cc.SetWidth(k.width)
	cc.SetHeight(k.height)
	cc.SetPixelFormat(astiav.PixelFormatRgb24)
	cc.SetTimeBase(astiav.NewRational(1, 25))
	cc.SetSampleAspectRatio(astiav.NewRational(1, 1))
	cc.SetThreadCount(1)
	cc.SetFlags(astiav.NewCodecContextFlags(astiav.CodecContextFlagBitexact))
	opts := astiav.NewDictionary()
	defer opts.Free()
	if err := opts.Set("compression_level", pngCompressionLevel, 0); err != nil {
		return nil, fmt.Errorf("decoder: png options: %w", err)
	}
	if err := opts.Set("pred", pngPrediction, 0); err != nil {
		return nil, fmt.Errorf("decoder: png options: %w", err)
	}
	if err := cc.Open(codec, opts); err != nil {
		return nil, fmt.Errorf("decoder: open png encoder for %dx%d: %w", k.width, k.height, err)
	}
	e.pkt = astiav.AllocPacket()
	return e, nil
}

func (e *pngEncoder) encode(dst []byte, f *astiav.Frame) ([]byte, error) {
	if err := checkFrameSize(f, int(e.cc.Width()), int(e.cc.Height()), astiav.PixelFormatRgb24); err != nil {
		return nil, err
	}
	// Images are encoded in any order; the encoder insists on increasing
	// timestamps when there are any.
	f.SetPts(astiav.NoPtsValue)
	makePlainRGB(f)
	if err := e.cc.SendFrame(f); err != nil {
		return nil, fmt.Errorf("decoder: encode image: %w", err)
	}
	e.pkt.Unref()
	if err := e.cc.ReceivePacket(e.pkt); err != nil {
		return nil, fmt.Errorf("decoder: encode image: %w", err)
	}
	b := append(dst, e.pkt.Data()...)
	e.pkt.Unref()
	return b, nil
}

func (e *pngEncoder) free() {
	if e.pkt != nil {
		e.pkt.Free()
		e.pkt = nil
	}
	if e.cc != nil {
		e.cc.Free()
		e.cc = nil
	}
}

type bmpEncoder struct{ width, height int }

func (e bmpEncoder) encode(dst []byte, f *astiav.Frame) ([]byte, error) {
	pf := astiav.PixelFormatRgb24
	if f.PixelFormat() == astiav.PixelFormatBgr24 {
		pf = astiav.PixelFormatBgr24
	}
	if err := checkFrameSize(f, e.width, e.height, pf); err != nil {
		return nil, err
	}
	stride := bmpStride(e.width)
	b := slices.Grow(dst, bmpHeaderSize+stride*e.height)
	b = appendBMPHeader(b, e.width, e.height)
	return appendBMPPixels(b, f, e.width, e.height, stride), nil
}

func (bmpEncoder) free() {}

type ppmEncoder struct{ width, height int }

func (e ppmEncoder) encode(dst []byte, f *astiav.Frame) ([]byte, error) {
	if err := checkFrameSize(f, e.width, e.height, astiav.PixelFormatRgb24); err != nil {
		return nil, err
	}
	h := ppmHeader(e.width, e.height)
	b := slices.Grow(dst, len(h)+3*e.width*e.height)
	b = append(b, h...)
	return appendRGBPixels(b, f, e.width, e.height), nil
}

func (ppmEncoder) free() {}

// npyEncoder writes NumPy's .npy format: media.NPYHeader, then the RGB
// rows top-down, as PPM stores them.
type npyEncoder struct{ width, height int }

func (e npyEncoder) encode(dst []byte, f *astiav.Frame) ([]byte, error) {
	if err := checkFrameSize(f, e.width, e.height, astiav.PixelFormatRgb24); err != nil {
		return nil, err
	}
	h := media.NPYHeader(e.width, e.height)
	b := slices.Grow(dst, len(h)+3*e.width*e.height)
	b = append(b, h...)
	return appendRGBPixels(b, f, e.width, e.height), nil
}

func (npyEncoder) free() {}

// checkFrameSize guards the Go-side writers, which read the frame's memory
// directly: the filter graph must have produced exactly the promised size.
func checkFrameSize(f *astiav.Frame, w, h int, pf astiav.PixelFormat) error {
	if f.Width() != w || f.Height() != h || f.PixelFormat() != pf {
		return fmt.Errorf("decoder: internal error: converted frame is %dx%d %s, want %dx%d %s",
			f.Width(), f.Height(), f.PixelFormat(), w, h, pf)
	}
	return nil
}
