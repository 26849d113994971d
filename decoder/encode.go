package decoder

import (
	"errors"
	"fmt"

	"github.com/asticode/go-astiav"
)

// lambdaPerQscale is FFmpeg's FF_QP2LAMBDA: the mpegvideo encoders take a
// frame's quality as a Lagrange multiplier in these units.
const lambdaPerQscale = 118

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
	format        ImageFormat
	quality       int
	width, height int
}

// imageEncoder turns a converted rgb24 frame (bgr24 also for BMP) into
// the bytes of an image file. Not safe for concurrent use.
type imageEncoder interface {
	encode(f *astiav.Frame) ([]byte, error)
	free()
}

func newImageEncoder(k encKey) (imageEncoder, error) {
	switch k.format {
	case FormatJPEG:
		e, err := newCodecEncoder(k, astiav.CodecIDMjpeg, astiav.PixelFormatYuvj420P)
		if err != nil {
			return nil, err
		}
		return &jpegEncoder{codec: e, yuv: nil, width: k.width, height: k.height}, nil
	case FormatPNG:
		return newCodecEncoder(k, astiav.CodecIDPng, astiav.PixelFormatRgb24)
	case FormatBMP:
		return bmpEncoder{k.width, k.height}, nil
	case FormatPPM:
		return ppmEncoder{k.width, k.height}, nil
	}
	return nil, fmt.Errorf("decoder: unknown image format %d", k.format)
}

// codecEncoder encodes with an FFmpeg image codec (mjpeg, png). The codec
// is opened single-threaded, bit-exact (no encoder version string in the
// file) and, for JPEG, at a fixed quantiser with no rate control, so an
// image depends on its frame alone: not on the frames encoded before it,
// the number of threads or the order of requests.
type codecEncoder struct {
	cc     *astiav.CodecContext
	pkt    *astiav.Packet
	lambda int // frame quality for JPEG, 0 otherwise
}

func newCodecEncoder(k encKey, id astiav.CodecID, pixFmt astiav.PixelFormat) (e *codecEncoder, err error) {
	codec := astiav.FindEncoder(id)
	if codec == nil {
		return nil, fmt.Errorf("decoder: FFmpeg has no %s encoder", id.Name())
	}
	cc := astiav.AllocCodecContext(codec)
	if cc == nil {
		return nil, errors.New("decoder: allocate encoder: out of memory")
	}
	e = &codecEncoder{cc: cc}
	defer func() {
		if err != nil {
			e.free()
			e = nil
		}
	}()
	cc.SetWidth(k.width)
	cc.SetHeight(k.height)
	cc.SetPixelFormat(pixFmt)
	cc.SetTimeBase(astiav.NewRational(1, 25))
	// Square pixels. The mjpeg encoder writes the JFIF marker only with a
	// known aspect ratio, and decoders need JFIF to know the file is YCbCr.
	cc.SetSampleAspectRatio(astiav.NewRational(1, 1))
	cc.SetThreadCount(1)
	flags := astiav.NewCodecContextFlags(astiav.CodecContextFlagBitexact)
	opts := astiav.NewDictionary()
	defer opts.Free()
	if k.format == FormatJPEG {
		flags = flags.Add(astiav.CodecContextFlagQscale)
		e.lambda = jpegQscale(k.quality) * lambdaPerQscale
		if err := setGlobalQuality(cc, e.lambda); err != nil {
			return nil, err
		}
	} else {
		if err := opts.Set("compression_level", pngCompressionLevel, 0); err != nil {
			return nil, fmt.Errorf("decoder: png options: %w", err)
		}
		if err := opts.Set("pred", pngPrediction, 0); err != nil {
			return nil, fmt.Errorf("decoder: png options: %w", err)
		}
	}
	cc.SetFlags(flags)
	if err := cc.Open(codec, opts); err != nil {
		return nil, fmt.Errorf("decoder: open %s encoder for %dx%d: %w", id.Name(), k.width, k.height, err)
	}
	e.pkt = astiav.AllocPacket()
	return e, nil
}

func (e *codecEncoder) encode(f *astiav.Frame) ([]byte, error) {
	// Images are encoded in any order; the encoders insist on increasing
	// timestamps when there are any.
	f.SetPts(astiav.NoPtsValue)
	if e.lambda != 0 {
		// With AV_CODEC_FLAG_QSCALE the mpegvideo encoders take the
		// quantiser from each frame, as `ffmpeg -q:v` sets it.
		setFrameQuality(f, e.lambda)
	} else {
		makePlainRGB(f)
	}
	if err := e.cc.SendFrame(f); err != nil {
		return nil, fmt.Errorf("decoder: encode image: %w", err)
	}
	e.pkt.Unref()
	if err := e.cc.ReceivePacket(e.pkt); err != nil {
		return nil, fmt.Errorf("decoder: encode image: %w", err)
	}
	b := append([]byte(nil), e.pkt.Data()...)
	e.pkt.Unref()
	return b, nil
}

func (e *codecEncoder) free() {
	if e.pkt != nil {
		e.pkt.Free()
		e.pkt = nil
	}
	if e.cc != nil {
		e.cc.Free()
		e.cc = nil
	}
}

// jpegEncoder converts the rgb24 frame to JFIF's YCbCr 4:2:0 and encodes
// it with mjpeg.
type jpegEncoder struct {
	codec         *codecEncoder
	yuv           *astiav.Frame
	width, height int
}

func (e *jpegEncoder) encode(f *astiav.Frame) ([]byte, error) {
	if err := checkFrameSize(f, e.width, e.height, astiav.PixelFormatRgb24); err != nil {
		return nil, err
	}
	if e.yuv == nil {
		e.yuv = astiav.AllocFrame()
		e.yuv.SetWidth(e.width)
		e.yuv.SetHeight(e.height)
		e.yuv.SetPixelFormat(astiav.PixelFormatYuvj420P)
		e.yuv.SetColorRange(astiav.ColorRangeJpeg)
		if err := e.yuv.AllocBuffer(0); err != nil {
			return nil, fmt.Errorf("decoder: allocate %dx%d frame: %w", e.width, e.height, err)
		}
	}
	if err := rgbToJPEGYCbCr(f, e.yuv); err != nil {
		return nil, err
	}
	return e.codec.encode(e.yuv)
}

func (e *jpegEncoder) free() {
	if e.yuv != nil {
		e.yuv.Free()
		e.yuv = nil
	}
	e.codec.free()
}

type bmpEncoder struct{ width, height int }

func (e bmpEncoder) encode(f *astiav.Frame) ([]byte, error) {
	pf := astiav.PixelFormatRgb24
	if f.PixelFormat() == astiav.PixelFormatBgr24 {
		pf = astiav.PixelFormatBgr24
	}
	if err := checkFrameSize(f, e.width, e.height, pf); err != nil {
		return nil, err
	}
	stride := bmpStride(e.width)
	b := make([]byte, 0, bmpHeaderSize+stride*e.height)
	b = appendBMPHeader(b, e.width, e.height)
	return appendBMPPixels(b, f, e.width, e.height, stride), nil
}

func (bmpEncoder) free() {}

type ppmEncoder struct{ width, height int }

func (e ppmEncoder) encode(f *astiav.Frame) ([]byte, error) {
	if err := checkFrameSize(f, e.width, e.height, astiav.PixelFormatRgb24); err != nil {
		return nil, err
	}
	h := ppmHeader(e.width, e.height)
	b := make([]byte, 0, len(h)+3*e.width*e.height)
	b = append(b, h...)
	return appendRGBPixels(b, f, e.width, e.height), nil
}

func (ppmEncoder) free() {}

// checkFrameSize guards the Go-side writers, which read the frame's memory
// directly: the filter graph must have produced exactly the promised size.
func checkFrameSize(f *astiav.Frame, w, h int, pf astiav.PixelFormat) error {
	if f.Width() != w || f.Height() != h || f.PixelFormat() != pf {
		return fmt.Errorf("decoder: internal error: converted frame is %dx%d %s, want %dx%d %s",
			f.Width(), f.Height(), f.PixelFormat(), w, h, pf)
	}
	return nil
}
