package decoder

// #cgo pkg-config: libavcodec libavfilter libswscale libavutil zlib
// #include <stdint.h>
// #include <string.h>
// #include <zlib.h>
// #include <libavcodec/avcodec.h>
// #include <libavfilter/avfilter.h>
// #include <libswscale/swscale.h>
// #include <libavutil/frame.h>
//
// // framefs_codec_context turns the address of an AVCodecContext back into a
// // pointer after checking that libavcodec's AVClass sits at its start.
// static AVCodecContext *framefs_codec_context(uintptr_t addr) {
// 	AVCodecContext *cc = (AVCodecContext *)addr;
// 	if (cc == NULL || cc->av_class != avcodec_get_class())
// 		return NULL;
// 	return cc;
// }
//
// static int framefs_flush_decoder(uintptr_t addr) {
// 	AVCodecContext *cc = framefs_codec_context(addr);
// 	if (cc == NULL)
// 		return AVERROR_BUG;
// 	avcodec_flush_buffers(cc);
// 	return 0;
// }
//
// static int framefs_set_pkt_timebase(uintptr_t addr, int num, int den) {
// 	AVCodecContext *cc = framefs_codec_context(addr);
// 	if (cc == NULL)
// 		return AVERROR_BUG;
// 	cc->pkt_timebase = (AVRational){num, den};
// 	return 0;
// }
//
// static int framefs_set_skip_nonref(uintptr_t addr, int skip) {
// 	AVCodecContext *cc = framefs_codec_context(addr);
// 	if (cc == NULL)
// 		return AVERROR_BUG;
// 	cc->skip_frame = skip ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
// 	return 0;
// }
//
// typedef struct {
// 	int64_t pts;
// 	int64_t best_effort;
// 	int     corrupt;
// 	int     decode_errors;
// 	int     width, height, format;
// 	int     sar_num, sar_den;
// 	int     color_range, colorspace, color_primaries, color_trc;
// } framefs_frame_info;
//
// static void framefs_frame_get_info(void *p, framefs_frame_info *out) {
// 	AVFrame *f = p;
// 	out->pts = f->pts;
// 	out->best_effort = f->best_effort_timestamp;
// 	out->corrupt = (f->flags & AV_FRAME_FLAG_CORRUPT) != 0;
// 	out->decode_errors = f->decode_error_flags;
// 	out->width = f->width;
// 	out->height = f->height;
// 	out->format = f->format;
// 	out->sar_num = f->sample_aspect_ratio.num;
// 	out->sar_den = f->sample_aspect_ratio.den;
// 	out->color_range = f->color_range;
// 	out->colorspace = f->colorspace;
// 	out->color_primaries = f->color_primaries;
// 	out->color_trc = f->color_trc;
// }
//
// // framefs_frame_plain_rgb drops the colour description of an RGB frame so
// // that image encoders write no gamma or chromaticity chunks: the pixels are
// // already what a viewer should show.
// static void framefs_frame_plain_rgb(void *p) {
// 	AVFrame *f = p;
// 	f->color_primaries = AVCOL_PRI_UNSPECIFIED;
// 	f->color_trc = AVCOL_TRC_UNSPECIFIED;
// 	f->colorspace = AVCOL_SPC_RGB;
// 	f->color_range = AVCOL_RANGE_JPEG;
// 	f->sample_aspect_ratio = (AVRational){0, 1};
// 	av_dict_free(&f->metadata);
// 	while (f->nb_side_data > 0)
// 		av_frame_remove_side_data(f, f->side_data[f->nb_side_data - 1]->type);
// }
//
// // framefs_frame_bytes is the size of the buffers a frame holds.
// static int64_t framefs_frame_bytes(void *p) {
// 	AVFrame *f = p;
// 	int64_t n = 0;
// 	for (int i = 0; i < AV_NUM_DATA_POINTERS && f->buf[i]; i++)
// 		n += f->buf[i]->size;
// 	for (int i = 0; i < f->nb_extended_buf; i++)
// 		n += f->extended_buf[i]->size;
// 	return n;
// }
//
// static uint8_t *framefs_frame_plane(void *p, int plane, int *linesize) {
// 	AVFrame *f = p;
// 	*linesize = f->linesize[plane];
// 	return f->data[plane];
// }
//
// // framefs_copy_rows_bottom_up writes the rows of a packed 24-bit frame
// // bottom-up into dst, each padded with zeros to dst_stride, swapping the
// // first and third byte of every pixel if swap is set (RGB to BGR). The
// // swap moves four pixels (three words) at a time.
// static void framefs_copy_rows_bottom_up(void *p, uint8_t *dst, int w, int h, int dst_stride, int swap) {
// 	AVFrame *f = p;
// 	for (int y = 0; y < h; y++) {
// 		const uint8_t *s = f->data[0] + (ptrdiff_t)y * f->linesize[0];
// 		uint8_t *d = dst + (ptrdiff_t)(h - 1 - y) * dst_stride;
// 		if (!swap) {
// 			memcpy(d, s, 3 * w);
// 			memset(d + 3 * w, 0, dst_stride - 3 * w);
// 			continue;
// 		}
// 		int x = 0;
// 		for (; x + 4 <= w; x += 4, s += 12, d += 12) {
// 			uint32_t a, b, c, o0, o1, o2;
// 			memcpy(&a, s, 4);
// 			memcpy(&b, s + 4, 4);
// 			memcpy(&c, s + 8, 4);
// 			// little endian: a = r0 g0 b0 r1, b = g1 b1 r2 g2, c = b2 r3 g3 b3
// 			o0 = ((a >> 16) & 0xff) | (a & 0xff00) | ((a & 0xff) << 16) | (((b >> 8) & 0xff) << 24);
// 			o1 = (b & 0xff) | ((a >> 24) << 8) | ((c & 0xff) << 16) | ((b >> 24) << 24);
// 			o2 = ((b >> 16) & 0xff) | ((c >> 24) << 8) | (c & 0xff0000) | (((c >> 8) & 0xff) << 24);
// 			memcpy(d, &o0, 4);
// 			memcpy(d + 4, &o1, 4);
// 			memcpy(d + 8, &o2, 4);
// 		}
// 		for (; x < w; x++, s += 3, d += 3) {
// 			d[0] = s[2];
// 			d[1] = s[1];
// 			d[2] = s[0];
// 		}
// 		memset(d, 0, dst_stride - 3 * w);
// 	}
// }
//
// static void framefs_copy_rows(void *p, uint8_t *dst, int row_bytes, int h) {
// 	AVFrame *f = p;
// 	for (int y = 0; y < h; y++)
// 		memcpy(dst + (ptrdiff_t)y * row_bytes, f->data[0] + (ptrdiff_t)y * f->linesize[0], row_bytes);
// }
import "C"

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/asticode/go-astiav"
)

// go-astiav v0.16.0 has no avcodec_flush_buffers, no pkt_timebase or
// global_quality setters and exposes only a few AVFrame fields. Like
// formatContextAddr (beststream.go), codecContextAddr recovers the
// AVCodecContext pointer from Class().String() and the C side refuses it
// unless libavcodec's AVClass is at its start; frames come with a public
// UnsafePointer.

var errNoCodecContextAddr = errors.New("decoder: internal error: cannot locate the AVCodecContext behind go-astiav's CodecContext (go-astiav changed?)")

func codecContextAddr(cc *astiav.CodecContext) (C.uintptr_t, error) {
	cl := cc.Class()
	if cl == nil {
		return 0, errNoCodecContextAddr
	}
	s := cl.String()
	i := strings.LastIndex(s, " @ 0x")
	if i < 0 {
		return 0, errNoCodecContextAddr
	}
	addr, err := strconv.ParseUint(s[i+len(" @ 0x"):], 16, 64)
	if err != nil || addr == 0 {
		return 0, errNoCodecContextAddr
	}
	if C.framefs_codec_context(C.uintptr_t(addr)) == nil {
		return 0, errNoCodecContextAddr
	}
	return C.uintptr_t(addr), nil
}

// flushDecoder drops every frame and reference the decoder holds, as a seek
// requires; without it the first frames after a seek would be predicted
// from pictures of the old position.
func flushDecoder(cc *astiav.CodecContext) error {
	addr, err := codecContextAddr(cc)
	if err != nil {
		return err
	}
	if C.framefs_flush_decoder(addr) < 0 {
		return errNoCodecContextAddr
	}
	return nil
}

// setPacketTimeBase tells the decoder the packets' time base, as the ffmpeg
// command line does; some decoders use it to compute frame timestamps.
func setPacketTimeBase(cc *astiav.CodecContext, tb astiav.Rational) error {
	addr, err := codecContextAddr(cc)
	if err != nil {
		return err
	}
	if C.framefs_set_pkt_timebase(addr, C.int(tb.Num()), C.int(tb.Den())) < 0 {
		return errNoCodecContextAddr
	}
	return nil
}

// setSkipNonRef makes the decoder skip (or stop skipping) pictures no other
// picture references. The decoder reads the setting for each packet sent.
func setSkipNonRef(addr uintptr, skip bool) {
	v := C.int(0)
	if skip {
		v = 1
	}
	C.framefs_set_skip_nonref(C.uintptr_t(addr), v)
}

// decoderAddr returns the verified address of the AVCodecContext behind
// cc, for the calls made per packet.
func decoderAddr(cc *astiav.CodecContext) (uintptr, error) {
	addr, err := codecContextAddr(cc)
	return uintptr(addr), err
}

// frameInfo is what the decoder and the converters need to know about a
// frame beyond what go-astiav exposes.
type frameInfo struct {
	pts, bestEffort      int64
	corrupt              bool
	decodeErrors         int
	width, height        int
	format               astiav.PixelFormat
	sarNum, sarDen       int
	colorRange           int
	colorspace           int
	colorPrimaries       int
	colorTransfer        int
	timestampUnavailable bool
}

func getFrameInfo(f *astiav.Frame) frameInfo {
	var ci C.framefs_frame_info
	C.framefs_frame_get_info(f.UnsafePointer(), &ci)
	fi := frameInfo{
		pts:            int64(ci.pts),
		bestEffort:     int64(ci.best_effort),
		corrupt:        ci.corrupt != 0,
		decodeErrors:   int(ci.decode_errors),
		width:          int(ci.width),
		height:         int(ci.height),
		format:         astiav.PixelFormat(ci.format),
		sarNum:         int(ci.sar_num),
		sarDen:         int(ci.sar_den),
		colorRange:     int(ci.color_range),
		colorspace:     int(ci.colorspace),
		colorPrimaries: int(ci.color_primaries),
		colorTransfer:  int(ci.color_trc),
	}
	return fi
}

// timestamp returns the frame's presentation timestamp the way ffprobe
// reports it: pts, or the decoder's best-effort guess when the packet had
// none.
func (fi frameInfo) timestamp() (int64, bool) {
	if fi.pts != astiav.NoPtsValue {
		return fi.pts, true
	}
	if fi.bestEffort != astiav.NoPtsValue {
		return fi.bestEffort, true
	}
	return 0, false
}

func makePlainRGB(f *astiav.Frame) { C.framefs_frame_plain_rgb(f.UnsafePointer()) }

// appendBMPPixels appends the rows of a packed 24-bit frame (rgb24 or
// bgr24) as BMP stores them: bottom-up, BGR, each row padded with zeros to
// a multiple of 4 bytes.
func appendBMPPixels(dst []byte, f *astiav.Frame, w, h, stride int) []byte {
	n := len(dst)
	dst = grow(dst, stride*h)
	swap := C.int(1)
	if f.PixelFormat() == astiav.PixelFormatBgr24 {
		swap = 0
	}
	if w > 0 && h > 0 {
		C.framefs_copy_rows_bottom_up(f.UnsafePointer(), (*C.uint8_t)(unsafe.Pointer(&dst[n])), C.int(w), C.int(h), C.int(stride), swap)
	}
	return dst
}

// appendRGBPixels appends the rows of an RGB24 frame top-down without
// padding, as PPM stores them.
func appendRGBPixels(dst []byte, f *astiav.Frame, w, h int) []byte {
	n := len(dst)
	dst = grow(dst, 3*w*h)
	if w > 0 && h > 0 {
		C.framefs_copy_rows(f.UnsafePointer(), (*C.uint8_t)(unsafe.Pointer(&dst[n])), C.int(3*w), C.int(h))
	}
	return dst
}

// grow extends b by n bytes, reallocating only if its capacity is short.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		b = append(make([]byte, 0, len(b)+n), b...)
	}
	return b[:len(b)+n]
}

// frameBytes returns the size of the buffers f holds a reference to.
func frameBytes(f *astiav.Frame) int64 { return int64(C.framefs_frame_bytes(f.UnsafePointer())) }

// framePlane returns the address of a plane of a frame and its line size,
// for code that reads the pixels directly (the JPEG encoder).
func framePlane(f *astiav.Frame, plane int, linesize *int) unsafe.Pointer {
	var ls C.int
	p := C.framefs_frame_plane(f.UnsafePointer(), C.int(plane), &ls)
	*linesize = int(ls)
	return unsafe.Pointer(p)
}

// LibraryVersions names the versions of the FFmpeg libraries (and zlib)
// that determine the bytes of a decoded and encoded frame. Two builds that
// agree on all of them produce identical images; a stored size made with
// different ones may no longer match.
func LibraryVersions() string {
	return fmt.Sprintf("lavc%s,lavfi%s,sws%s,zlib%s",
		versionString(uint(C.avcodec_version())),
		versionString(uint(C.avfilter_version())),
		versionString(uint(C.swscale_version())),
		C.GoString(C.zlibVersion()))
}

func versionString(v uint) string {
	return fmt.Sprintf("%d.%d.%d", v>>16, (v>>8)&0xff, v&0xff)
}
