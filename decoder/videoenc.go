package decoder

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/asticode/go-astiav"

	"github.com/framefs/framefs/videoidx"
)

// ErrNotImage means a file given to EncodeImagesToVideo is not a PNG or
// JPEG image, or one FFmpeg cannot decode.
var ErrNotImage = errors.New("decoder: not a PNG or JPEG image")

// VideoEncodeOptions configures EncodeImagesToVideo. The zero value makes a
// 30 fps H.264 (libx264) yuv420p MP4 with a keyframe every 30 frames.
type VideoEncodeOptions struct {
	// FPS is the frame rate. 0 means 30. Rates like 29.97 are stored
	// exactly as 30000/1001.
	FPS float64
	// Codec is the FFmpeg encoder name. "" means "libx264".
	Codec string
	// PixFmt is the pixel format of the encoded video. "" means
	// "yuv420p", which every player decodes.
	PixFmt string
	// GOP is the number of frames from one keyframe to the next. framefs
	// decodes a frame from the keyframe before it, so short GOPs make
	// random access cheap. 0 means 30.
	GOP int
	// CodecOptions are passed to the encoder: its private options (crf,
	// preset, x264-params, ...) and generic ones (bf, threads, ...).
	// threads defaults to 1: ingest encodes several videos at once, one
	// core each. The output is not guaranteed to be the same bytes from
	// one run to the next: libx264's MB-tree rate control (x264 0.164, as
	// Debian 12 ships it) reads memory it has not written at small frame
	// sizes, so two encodes of the same images may differ slightly.
	CodecOptions map[string]string
}

func (o VideoEncodeOptions) withDefaults() VideoEncodeOptions {
	if o.FPS == 0 {
		o.FPS = 30
	}
	if o.Codec == "" {
		o.Codec = "libx264"
	}
	if o.PixFmt == "" {
		o.PixFmt = "yuv420p"
	}
	if o.GOP == 0 {
		o.GOP = 30
	}
	return o
}

// frameRate turns fps into a rational: integers exactly, NTSC-style rates
// given to two or three decimals (23.976, 29.97, 59.94) as n*1000/1001,
// anything else to a thousandth.
func frameRate(fps float64) (astiav.Rational, error) {
	if math.IsNaN(fps) || fps <= 0 || fps > 1000 {
		return astiav.Rational{}, fmt.Errorf("decoder: frame rate %v is out of range (0 to 1000 frames per second)", fps)
	}
	if n := math.Round(fps); math.Abs(fps-n) < 1e-9 {
		return astiav.NewRational(int(n), 1), nil
	}
	if n := math.Round(fps * 1.001); math.Abs(fps-n/1.001) < 0.0006 {
		return astiav.NewRational(int(n)*1000, 1001), nil
	}
	return astiav.NewRational(int(math.Round(fps*1000)), 1000), nil
}

// EncodeImagesToVideo encodes images (PNG or JPEG files, in order, all of
// one size) as the frames of an MP4 video at out, with the moov box at the
// front so that readers find the index in the first bytes. The images are
// converted to opts.PixFmt with BT.601 limited-range colours (tagged so).
// Nothing is left at out on error: the video is written to a temporary
// file next to it and renamed when complete. The images are read by Go and
// the video written through Go files, so FFmpeg opens no file itself.
func EncodeImagesToVideo(ctx context.Context, images []string, out string, opts VideoEncodeOptions) (err error) {
	if len(images) == 0 {
		return errors.New("decoder: encode video: no images")
	}
	if out == "" {
		return errors.New("decoder: encode video: no output path")
	}
	opts = opts.withDefaults()
	rate, err := frameRate(opts.FPS)
	if err != nil {
		return err
	}
	if opts.GOP < 0 {
		return fmt.Errorf("decoder: encode video: GOP %d is negative", opts.GOP)
	}
	pixFmt := astiav.FindPixelFormatByName(opts.PixFmt)
	if pixFmt == astiav.PixelFormatNone {
		return fmt.Errorf("decoder: encode video: unknown pixel format %q", opts.PixFmt)
	}
	codec := astiav.FindEncoderByName(opts.Codec)
	if codec == nil || codec.ID() == astiav.CodecIDNone {
		return fmt.Errorf("decoder: encode video: FFmpeg has no encoder %q", opts.Codec)
	}

	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return fmt.Errorf("decoder: encode video: %w", err)
	}
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()

	enc := &videoEncoder{opts: opts, rate: rate, pixFmt: pixFmt, codec: codec, file: tmp}
	defer enc.free()
	for i, path := range images {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := enc.addImage(path, int64(i)); err != nil {
			return err
		}
	}
	if err := enc.finish(); err != nil {
		return err
	}
	enc.free()
	name := tmp.Name()
	err = tmp.Close()
	tmp = nil
	if err == nil {
		err = moveIndexToFront(name)
	}
	if err == nil {
		err = os.Rename(name, out)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("decoder: encode video: %w", err)
	}
	return nil
}

// videoEncoder holds the FFmpeg state of one EncodeImagesToVideo call.
type videoEncoder struct {
	opts   VideoEncodeOptions
	rate   astiav.Rational
	pixFmt astiav.PixelFormat
	codec  *astiav.Codec
	file   *os.File

	width, height int
	first         string

	decoders map[astiav.CodecID]*astiav.CodecContext
	convs    map[convKey]*converter
	inPkt    *astiav.Packet
	inFrame  *astiav.Frame

	cc     *astiav.CodecContext
	fc     *astiav.FormatContext
	ioc    *astiav.IOContext
	stream *astiav.Stream
	outPkt *astiav.Packet
	header bool
	ioErr  error
}

// inputPadding is FFmpeg's AV_INPUT_BUFFER_PADDING_SIZE.
const inputPadding = 64

var (
	pngMagic  = []byte("\x89PNG\r\n\x1a\n")
	jpegMagic = []byte{0xFF, 0xD8, 0xFF}
)

// decodeImage decodes one image file into e.inFrame.
func (e *videoEncoder) decodeImage(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("decoder: encode video: %w", err)
	}
	var id astiav.CodecID
	switch {
	case bytes.HasPrefix(data, pngMagic):
		id = astiav.CodecIDPng
	case bytes.HasPrefix(data, jpegMagic):
		id = astiav.CodecIDMjpeg
	default:
		return fmt.Errorf("%w: %s", ErrNotImage, path)
	}
	if e.decoders == nil {
		e.decoders = map[astiav.CodecID]*astiav.CodecContext{}
		e.inPkt = astiav.AllocPacket()
		e.inFrame = astiav.AllocFrame()
	}
	dc := e.decoders[id]
	if dc == nil {
		codec := astiav.FindDecoder(id)
		if codec == nil {
			return fmt.Errorf("decoder: FFmpeg has no %s decoder", id.Name())
		}
		dc = astiav.AllocCodecContext(codec)
		if dc == nil {
			return errors.New("decoder: allocate image decoder: out of memory")
		}
		dc.SetThreadCount(1)
		if err := dc.Open(codec, nil); err != nil {
			dc.Free()
			return fmt.Errorf("decoder: open %s decoder: %w", id.Name(), err)
		}
		e.decoders[id] = dc
	}
	e.inPkt.Unref()
	// Decoders may read up to AV_INPUT_BUFFER_PADDING_SIZE bytes past the
	// end of a packet, which must be zeros; go-astiav copies the data
	// without that padding, so pass it in and cut the size back.
	padded := append(data, make([]byte, inputPadding)...)
	if err := e.inPkt.FromData(padded); err != nil {
		return fmt.Errorf("decoder: encode video: %s: %w", path, err)
	}
	e.inPkt.SetSize(len(data))
	// Every image stands alone; FFmpeg's PNG decoder applies a packet
	// without the key flag as a delta to the previous picture.
	e.inPkt.SetFlags(e.inPkt.Flags().Add(astiav.PacketFlagKey))
	e.inFrame.Unref()
	err = dc.SendPacket(e.inPkt)
	if err == nil {
		err = dc.ReceiveFrame(e.inFrame)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: FFmpeg cannot decode it: %v", ErrNotImage, path, err)
	}
	return nil
}

// addImage decodes the image at path and encodes it as frame pts.
func (e *videoEncoder) addImage(path string, pts int64) error {
	if err := e.decodeImage(path); err != nil {
		return err
	}
	f := e.inFrame
	if e.cc == nil {
		e.width, e.height, e.first = f.Width(), f.Height(), path
		if err := e.open(); err != nil {
			return err
		}
	} else if f.Width() != e.width || f.Height() != e.height {
		return fmt.Errorf("decoder: encode video: %s is %dx%d but %s, the first image, is %dx%d; all images of a video must have one size",
			path, f.Width(), f.Height(), e.first, e.width, e.height)
	}
	fi := getFrameInfo(f)
	k := convKey{width: fi.width, height: fi.height, format: fi.format, sarNum: fi.sarNum, sarDen: fi.sarDen, outWidth: e.width, outHeight: e.height}
	conv := e.convs[k]
	if conv == nil {
		var err error
		conv, err = newVideoConverter(k, e.pixFmt, e.rate)
		if err != nil {
			return fmt.Errorf("decoder: encode video: %s: %w", path, err)
		}
		e.convs[k] = conv
	}
	out, err := conv.convert(f)
	if err != nil {
		return fmt.Errorf("decoder: encode video: %s: %w", path, err)
	}
	out.SetPts(pts)
	out.SetPictureType(astiav.PictureTypeNone)
	err = e.cc.SendFrame(out)
	out.Unref()
	if err != nil {
		return fmt.Errorf("decoder: encode video: %s: %w", path, err)
	}
	return e.drain()
}

// newVideoConverter builds buffer -> scale -> format=pixFmt, converting
// RGB to BT.601 limited range (and JPEG's full range to limited).
func newVideoConverter(k convKey, pixFmt astiav.PixelFormat, rate astiav.Rational) (*converter, error) {
	desc := fmt.Sprintf("scale=flags=bicubic:out_color_matrix=bt601:out_range=tv,format=%s", pixFmt.String())
	return newConverterDesc(k, desc, astiav.NewRational(rate.Den(), rate.Num()))
}

// open sets up the encoder and the MP4 muxer for the first image's size.
func (e *videoEncoder) open() error {
	e.convs = map[convKey]*converter{}
	e.cc = astiav.AllocCodecContext(e.codec)
	if e.cc == nil {
		return errors.New("decoder: allocate encoder: out of memory")
	}
	e.cc.SetWidth(e.width)
	e.cc.SetHeight(e.height)
	e.cc.SetPixelFormat(e.pixFmt)
	e.cc.SetTimeBase(astiav.NewRational(e.rate.Den(), e.rate.Num()))
	e.cc.SetFramerate(e.rate)
	e.cc.SetGopSize(e.opts.GOP)
	e.cc.SetSampleAspectRatio(astiav.NewRational(1, 1))

	of := astiav.FindOutputFormat("mp4")
	if of == nil {
		return errors.New("decoder: FFmpeg has no mp4 muxer")
	}
	fc, err := astiav.AllocOutputFormatContext(of, "", "")
	if err != nil {
		return fmt.Errorf("decoder: allocate mp4 muxer: %w", err)
	}
	e.fc = fc
	fc.SetFlags(fc.Flags().Add(astiav.FormatContextFlagBitexact))
	flags := e.cc.Flags().Add(astiav.CodecContextFlagBitexact)
	if of.Flags().Has(astiav.IOFormatFlagGlobalheader) {
		flags = flags.Add(astiav.CodecContextFlagGlobalHeader)
	}
	e.cc.SetFlags(flags)

	dict := astiav.NewDictionary()
	defer dict.Free()
	set := map[string]string{
		"threads":         "1",
		"colorspace":      "smpte170m",
		"color_primaries": "smpte170m",
		"color_trc":       "smpte170m",
		"color_range":     "tv",
	}
	for k, v := range e.opts.CodecOptions {
		set[k] = v
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := dict.Set(k, set[k], 0); err != nil {
			return fmt.Errorf("decoder: encoder option %s=%s: %w", k, set[k], err)
		}
	}
	if err := e.cc.Open(e.codec, dict); err != nil {
		return fmt.Errorf("decoder: open %s encoder for %dx%d %s: %w", e.opts.Codec, e.width, e.height, e.opts.PixFmt, err)
	}
	if entry := dict.Get("", nil, astiav.NewDictionaryFlags(astiav.DictionaryFlagIgnoreSuffix)); entry != nil {
		return fmt.Errorf("decoder: encoder %s does not know option %q", e.opts.Codec, entry.Key())
	}

	e.stream = fc.NewStream(nil)
	if e.stream == nil {
		return errors.New("decoder: add video stream: out of memory")
	}
	if err := e.cc.ToCodecParameters(e.stream.CodecParameters()); err != nil {
		return fmt.Errorf("decoder: video stream parameters: %w", err)
	}
	e.stream.SetTimeBase(e.cc.TimeBase())
	e.stream.SetAvgFrameRate(e.rate)

	e.ioc, err = astiav.AllocIOContext(ioBufferSize, true, nil, e.seek, e.write)
	if err != nil {
		return fmt.Errorf("decoder: allocate output IO context: %w", err)
	}
	fc.SetPb(e.ioc)
	if err := fc.WriteHeader(nil); err != nil {
		return e.muxError("write header", err)
	}
	e.header = true
	e.outPkt = astiav.AllocPacket()
	return nil
}

func (e *videoEncoder) write(b []byte) (int, error) {
	n, err := e.file.Write(b)
	if err != nil {
		if e.ioErr == nil {
			e.ioErr = err
		}
		return n, astiav.ErrEio
	}
	return n, nil
}

func (e *videoEncoder) seek(offset int64, whence int) (int64, error) {
	switch whence &^ avseekForce {
	case avseekSize:
		st, err := e.file.Stat()
		if err != nil {
			return 0, astiav.ErrEio
		}
		return st.Size(), nil
	case io.SeekStart, io.SeekCurrent, io.SeekEnd:
		pos, err := e.file.Seek(offset, whence&^avseekForce)
		if err != nil {
			if e.ioErr == nil {
				e.ioErr = err
			}
			return 0, astiav.ErrEio
		}
		return pos, nil
	}
	return 0, errInvalidArgument
}

func (e *videoEncoder) muxError(step string, err error) error {
	if e.ioErr != nil {
		return fmt.Errorf("decoder: encode video: %s: %w", step, e.ioErr)
	}
	return fmt.Errorf("decoder: encode video: %s: %w", step, err)
}

// drain writes every packet the encoder has ready.
func (e *videoEncoder) drain() error {
	for {
		e.outPkt.Unref()
		err := e.cc.ReceivePacket(e.outPkt)
		if errors.Is(err, astiav.ErrEagain) || errors.Is(err, astiav.ErrEof) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("decoder: encode video: %w", err)
		}
		e.outPkt.RescaleTs(e.cc.TimeBase(), e.stream.TimeBase())
		e.outPkt.SetStreamIndex(e.stream.Index())
		if err := e.fc.WriteInterleavedFrame(e.outPkt); err != nil {
			return e.muxError("write packet", err)
		}
	}
}

// finish flushes the encoder and writes the MP4 trailer (the moov box).
func (e *videoEncoder) finish() error {
	if err := e.cc.SendFrame(nil); err != nil && !errors.Is(err, astiav.ErrEof) {
		return fmt.Errorf("decoder: encode video: flush encoder: %w", err)
	}
	if err := e.drain(); err != nil {
		return err
	}
	if err := e.fc.WriteTrailer(); err != nil {
		return e.muxError("write trailer", err)
	}
	e.header = false
	e.ioc.Flush()
	if e.ioErr != nil {
		return fmt.Errorf("decoder: encode video: %w", e.ioErr)
	}
	return nil
}

func (e *videoEncoder) free() {
	for id, dc := range e.decoders {
		dc.Free()
		delete(e.decoders, id)
	}
	for k, c := range e.convs {
		c.free()
		delete(e.convs, k)
	}
	if e.inPkt != nil {
		e.inPkt.Free()
		e.inPkt = nil
	}
	if e.inFrame != nil {
		e.inFrame.Free()
		e.inFrame = nil
	}
	if e.outPkt != nil {
		e.outPkt.Free()
		e.outPkt = nil
	}
	if e.fc != nil {
		// The muxer owns nothing of the IO context (custom IO); freeing
		// the format context frees the stream.
		e.fc.Free()
		e.fc = nil
	}
	if e.ioc != nil {
		e.ioc.Free()
		e.ioc = nil
	}
	if e.cc != nil {
		e.cc.Free()
		e.cc = nil
	}
	// go-astiav keeps the IO callbacks, and so e, reachable after Free
	// (see readerSource.detach); drop the file.
	e.file = nil
	releaseFreedMemory()
}

// moveIndexToFront rewrites the MP4 at path, written moov-last, with its
// moov box first (videoidx.FastStart), so that readers find the index in
// its first bytes. The rewrite goes to a new file that replaces path when
// complete; a file FastStart leaves as it is stays untouched.
func moveIndexToFront(path string) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	out, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.faststart")
	if err != nil {
		return err
	}
	defer func() {
		if out != nil {
			out.Close()
			os.Remove(out.Name())
		}
	}()
	w := bufio.NewWriterSize(out, 1<<20)
	rewritten, err := videoidx.FastStart(f, st.Size(), w)
	if err != nil || !rewritten {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	name := out.Name()
	err = out.Close()
	out = nil
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}
