package decoder

// #cgo pkg-config: libturbojpeg libavutil
// #include <libavutil/pixfmt.h>
// #include <stdint.h>
// #include <stdlib.h>
// #include <turbojpeg.h>
//
// // framefs_full_range expands the w x h samples of src (rows sstride
// // bytes apart) into dst (rows w bytes apart) from the limited range of
// // video to the full range JPEG takes: luma by 255/219 about 16, chroma
// // by 255/224 about 128, in 8.8 fixed point (298 = 256 + 42, 291 = 256 +
// // 35), rounded and clamped, in 16-bit arithmetic that the compiler
// // vectorizes (at -O3; cgo builds -O2): 0.12 ms a 640x480 picture.
// __attribute__((optimize("O3"))) static void framefs_full_row(uint8_t *restrict d, const uint8_t *restrict s, int n, int luma) {
// 	if (luma) {
// 		for (int x = 0; x < n; x++) {
// 			int16_t u = s[x] < 16 ? 0 : (int16_t)(s[x] - 16);
// 			int16_t v = (int16_t)(u + ((u * 42 + 128) >> 8));
// 			d[x] = v > 255 ? 255 : (uint8_t)v;
// 		}
// 	} else {
// 		for (int x = 0; x < n; x++) {
// 			int16_t c = (int16_t)(s[x] - 128);
// 			int16_t v = (int16_t)(c + ((c * 35 + 128) >> 8) + 128);
// 			d[x] = v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
// 		}
// 	}
// }
//
// static void framefs_full_range(uint8_t *dst, const uint8_t *src, int sstride, int w, int h, int luma) {
// 	for (int y = 0; y < h; y++)
// 		framefs_full_row(dst + (intptr_t)y * w, src + (intptr_t)y * sstride, w, luma);
// }
//
// static int framefs_tj_planes(tjhandle h, const unsigned char *y, const unsigned char *u, const unsigned char *v,
//                              int ys, int us, int vs, int w, int hh, int quality, unsigned char **buf, unsigned long *size) {
// 	const unsigned char *planes[3] = {y, u, v};
// 	int strides[3] = {ys, us, vs};
// 	return tjCompressFromYUVPlanes(h, planes, w, strides, hh, TJSAMP_420, buf, size, quality, TJFLAG_NOREALLOC);
// }
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
// as every other format keeps the colours of BT.709 and 10-bit video right;
// 8-bit BT.601 4:2:0 pictures, already JPEG's YCbCr but for the range,
// skip the round trip through RGB (see fromPlanes).
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
	// planes holds the full-range planes encodePlanes makes of a
	// limited-range picture (nil until then).
	planes *C.uchar
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
		return nil, e.failed()
	}
	return appendOutput(dst, buf, size), nil
}

// failed is the error of the TurboJPEG call that just failed.
func (e *jpegEncoder) failed() error {
	return fmt.Errorf("decoder: encode JPEG: %s", C.GoString(C.tjGetErrorStr2(e.h)))
}

// appendOutput appends the size bytes TurboJPEG wrote at buf to dst.
func appendOutput(dst []byte, buf *C.uchar, size C.ulong) []byte {
	return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(size))...)
}

// Planes: most video is 8-bit YUV 4:2:0 in the BT.601 matrix (or none
// named, which means BT.601 to swscale), and that is JPEG's own YCbCr
// 4:2:0 but for the range of its samples. Such a picture at its own size
// goes to TurboJPEG as planes: no conversion to RGB and back, no chroma
// resampled. A 640x480 frame then takes 0.44 ms (full range) or 0.57 ms
// (limited) instead of 0.71 ms through RGB, and a mount serving JPEGs
// through latest/ spends 9% less CPU.
// The colours are those of the RGB route within rounding: JPEG's chroma
// is then the video's own, where the RGB route rebuilds it from RGB
// values it had clamped. Any other picture (BT.709, 10-bit, 4:2:2,
// rotated, scaled, non-square pixels) takes the RGB route, which knows
// its matrix and range.

// fromPlanes reports whether a picture of stream st, frame info fi, is
// encoded from its planes for setting (normalized, JPEG), and whether its
// samples are limited range.
func fromPlanes(fi frameInfo, st *stream, setting media.ImageSetting) (ok, limited bool) {
	if setting.Width != 0 || setting.Height != 0 || st.rot.filters != "" ||
		fi.width != st.info.Width || fi.height != st.info.Height || fi.width <= 0 || fi.height <= 0 {
		return false, false
	}
	switch fi.colorspace {
	case C.AVCOL_SPC_UNSPECIFIED, C.AVCOL_SPC_BT470BG, C.AVCOL_SPC_SMPTE170M:
	default:
		return false, false
	}
	switch fi.format {
	case astiav.PixelFormatYuvj420P:
		return true, false
	case astiav.PixelFormatYuv420P:
		return true, fi.colorRange != C.AVCOL_RANGE_JPEG
	}
	return false, false
}

// encodePlanes encodes a YUV 4:2:0 picture (see fromPlanes) from its
// planes, expanding limited-range samples first, and appends the JPEG to
// dst.
func (e *jpegEncoder) encodePlanes(dst []byte, f *astiav.Frame, limited bool) ([]byte, error) {
	w, h := e.width, e.height
	cw, ch := (w+1)/2, (h+1)/2
	var strides [3]int
	var planes [3]unsafe.Pointer
	for i := range planes {
		planes[i] = framePlane(f, i, &strides[i])
		if planes[i] == nil || strides[i] < 0 {
			return nil, fmt.Errorf("decoder: encode JPEG: picture plane %d missing", i)
		}
	}
	if limited {
		if e.planes == nil {
			if e.planes = (*C.uchar)(C.malloc(C.size_t(w*h + 2*cw*ch))); e.planes == nil {
				return nil, errors.New("decoder: JPEG encoder: out of memory")
			}
		}
		y := unsafe.Pointer(e.planes)
		u := unsafe.Add(y, w*h)
		v := unsafe.Add(u, cw*ch)
		C.framefs_full_range((*C.uint8_t)(y), (*C.uint8_t)(planes[0]), C.int(strides[0]), C.int(w), C.int(h), 1)
		C.framefs_full_range((*C.uint8_t)(u), (*C.uint8_t)(planes[1]), C.int(strides[1]), C.int(cw), C.int(ch), 0)
		C.framefs_full_range((*C.uint8_t)(v), (*C.uint8_t)(planes[2]), C.int(strides[2]), C.int(cw), C.int(ch), 0)
		planes = [3]unsafe.Pointer{y, u, v}
		strides = [3]int{w, cw, cw}
	}
	buf, size := e.buf, e.bufSize
	if C.framefs_tj_planes(e.h, (*C.uchar)(planes[0]), (*C.uchar)(planes[1]), (*C.uchar)(planes[2]),
		C.int(strides[0]), C.int(strides[1]), C.int(strides[2]), C.int(w), C.int(h), C.int(e.quality), &buf, &size) != 0 {
		return nil, e.failed()
	}
	return appendOutput(dst, buf, size), nil
}

func (e *jpegEncoder) free() {
	if e.planes != nil {
		C.free(unsafe.Pointer(e.planes))
		e.planes = nil
	}
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
