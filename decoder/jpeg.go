package decoder

// #cgo pkg-config: libturbojpeg
// #include <stdlib.h>
// #include <turbojpeg.h>
import "C"

import (
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"unsafe"

	"github.com/asticode/go-astiav"

	"github.com/framefs/framefs/media"
)

// JPEG images are encoded by libjpeg-turbo's TurboJPEG API: baseline
// JFIF, YCbCr 4:2:0 (BT.601 full range, what every JPEG decoder assumes),
// the accurate integer DCT and standard Huffman tables, at the IJG quality
// scale that libjpeg, PIL and OpenCV share. Starting from the same RGB frame
// as every other format keeps the colours of BT.709 and 10-bit video right.
//
// It replaced FFmpeg's mjpeg encoder, which with our own RGB to YCbCr pass
// took 2.2 ms per 640x480 frame against libjpeg-turbo's 1.0 ms; serving
// JPEG frames is most of what a mount's CPU does.
//
// The bytes depend only on the frame, the quality and the library build:
// libjpeg-turbo's SIMD paths for the integer DCT, colour conversion,
// downsampling and Huffman coding are bit-exact with its C code (the tests
// check that with SIMD disabled), and the encoder keeps no state between
// images. jpegIdentity fingerprints the build for ImageSetting.Identity.

// jpegEncoder encodes rgb24 frames. Not safe for concurrent use.
type jpegEncoder struct {
	h             C.tjhandle
	buf           *C.uchar // TurboJPEG output buffer of bufSize bytes
	bufSize       C.ulong
	quality       int
	width, height int
}

func newJPEGEncoder(k encKey) (*jpegEncoder, error) {
	if k.width <= 0 || k.height <= 0 {
		return nil, fmt.Errorf("decoder: JPEG encoder for %dx%d images", k.width, k.height)
	}
	h := C.tjInitCompress()
	if h == nil {
		return nil, fmt.Errorf("decoder: start JPEG encoder: %s", C.GoString(C.tjGetErrorStr2(nil)))
	}
	e := &jpegEncoder{h: h, quality: k.quality, width: k.width, height: k.height}
	size := C.tjBufSize(C.int(k.width), C.int(k.height), C.TJSAMP_420)
	if size == C.ulong(^uint32(0)) || size == 0 {
		e.free()
		return nil, fmt.Errorf("decoder: JPEG encoder: %dx%d is too large", k.width, k.height)
	}
	e.bufSize = size
	if e.buf = C.tjAlloc(C.int(size)); e.buf == nil {
		e.free()
		return nil, errors.New("decoder: JPEG encoder: out of memory")
	}
	return e, nil
}

func (e *jpegEncoder) encode(dst []byte, f *astiav.Frame) ([]byte, error) {
	if err := checkFrameSize(f, e.width, e.height, astiav.PixelFormatRgb24); err != nil {
		return nil, err
	}
	var pitch int
	p := framePlane(f, 0, &pitch)
	return e.compress(dst, p, pitch)
}

// compress encodes the rgb24 picture whose top row starts at p, rows
// pitch bytes apart (negative for a picture stored bottom up, as vflip
// leaves it), and appends the JPEG to dst.
func (e *jpegEncoder) compress(dst []byte, p unsafe.Pointer, pitch int) ([]byte, error) {
	flags := C.int(C.TJFLAG_NOREALLOC)
	if pitch < 0 {
		// TurboJPEG takes positive pitches only: hand it the bottom row,
		// the lowest address, and say the rows run upwards.
		p = unsafe.Add(p, (e.height-1)*pitch)
		pitch = -pitch
		flags |= C.TJFLAG_BOTTOMUP
	}
	buf := e.buf
	size := e.bufSize
	if C.tjCompress2(e.h, (*C.uchar)(p), C.int(e.width), C.int(pitch), C.int(e.height), C.TJPF_RGB,
		&buf, &size, C.TJSAMP_420, C.int(e.quality), flags) != 0 {
		return nil, fmt.Errorf("decoder: encode JPEG: %s", C.GoString(C.tjGetErrorStr2(e.h)))
	}
	return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(size))...), nil
}

func (e *jpegEncoder) free() {
	if e.buf != nil {
		C.tjFree(e.buf)
		e.buf = nil
	}
	if e.h != nil {
		C.tjDestroy(e.h)
		e.h = nil
	}
}

var jpegIdentity = sync.OnceValue(func() string {
	return "libjpeg-turbo:" + jpegFingerprint()
})

// jpegFingerprint encodes a fixed test picture and names the result: two
// builds of libjpeg-turbo that give the same bytes for it are taken to
// encode alike, and an upgrade that changes its output changes the
// identity of every JPEG setting, so that stored sizes are recomputed. The
// TurboJPEG API of Debian 12 has no run-time version to ask instead.
func jpegFingerprint() string {
	const w, h = 48, 32
	pic := make([]byte, w*h*3)
	for y := range h {
		for x := range w {
			i := (y*w + x) * 3
			pic[i], pic[i+1], pic[i+2] = byte(x*5+y*3), byte(x*x+y*7), byte((x^y)*9)
		}
	}
	e, err := newJPEGEncoder(encKey{format: media.FormatJPEG, quality: 75, width: w, height: h})
	if err != nil {
		return "unavailable"
	}
	defer e.free()
	c := C.CBytes(pic)
	defer C.free(c)
	b, err := e.compress(nil, c, w*3)
	if err != nil {
		return "unavailable"
	}
	return fmt.Sprintf("%08x", crc32.ChecksumIEEE(b))
}
