package decoder

// #cgo pkg-config: libavutil
// #include <libavutil/frame.h>
// #include <libavutil/imgutils.h>
// #include <libavutil/pixdesc.h>
//
// // framefs_pic_props is everything about a picture besides its pixels
// // that converting it to RGB depends on: the scale filter reads the
// // colour description of each frame.
// typedef struct {
// 	int width, height, format;
// 	int color_range, colorspace, color_primaries, color_trc, chroma_location;
// 	int sar_num, sar_den;
// 	int interlaced, top_field_first;
// } framefs_pic_props;
//
// static void framefs_pic_get_props(void *p, framefs_pic_props *o) {
// 	AVFrame *f = p;
// 	o->width = f->width;
// 	o->height = f->height;
// 	o->format = f->format;
// 	o->color_range = f->color_range;
// 	o->colorspace = f->colorspace;
// 	o->color_primaries = f->color_primaries;
// 	o->color_trc = f->color_trc;
// 	o->chroma_location = f->chroma_location;
// 	o->sar_num = f->sample_aspect_ratio.num;
// 	o->sar_den = f->sample_aspect_ratio.den;
// 	o->interlaced = f->interlaced_frame;
// 	o->top_field_first = f->top_field_first;
// }
//
// // framefs_pic_planes_size is the size of a picture's planes stored one
// // after the other without padding, or a negative AVERROR.
// static int framefs_pic_planes_size(int format, int width, int height) {
// 	return av_image_get_buffer_size(format, width, height, 1);
// }
//
// static int framefs_pic_copy_out(void *p, uint8_t *dst, int size) {
// 	AVFrame *f = p;
// 	return av_image_copy_to_buffer(dst, size, (const uint8_t *const *)f->data, f->linesize,
// 		f->format, f->width, f->height, 1);
// }
//
// // framefs_pic_fill copies the planes of a picture, laid out as
// // framefs_pic_copy_out writes them, from src into the frame p, whose
// // planes are allocated for its format and size.
// static int framefs_pic_fill(void *p, const uint8_t *src, int size) {
// 	AVFrame *f = p;
// 	if (framefs_pic_planes_size(f->format, f->width, f->height) != size)
// 		return AVERROR(EINVAL);
// 	uint8_t *planes[4];
// 	int linesizes[4];
// 	int err = av_image_fill_arrays(planes, linesizes, src, f->format, f->width, f->height, 1);
// 	if (err < 0)
// 		return err;
// 	av_image_copy(f->data, f->linesize, (const uint8_t **)planes, linesizes, f->format, f->width, f->height);
// 	return 0;
// }
//
// // framefs_pic_set_props gives the frame p the colour description and
// // field order of a packed picture.
// static void framefs_pic_set_props(void *p, const framefs_pic_props *o) {
// 	AVFrame *f = p;
// 	f->color_range = o->color_range;
// 	f->colorspace = o->colorspace;
// 	f->color_primaries = o->color_primaries;
// 	f->color_trc = o->color_trc;
// 	f->chroma_location = o->chroma_location;
// 	f->sample_aspect_ratio = (AVRational){o->sar_num, o->sar_den};
// 	f->interlaced_frame = o->interlaced;
// 	f->top_field_first = o->top_field_first;
// }
//
// static uint8_t *framefs_pic_data(void *p) { return ((AVFrame *)p)->data[0]; }
//
// static const char *framefs_pix_fmt_name(int format) { return av_get_pix_fmt_name(format); }
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/asticode/go-astiav"
	"github.com/klauspost/compress/s2"

	"github.com/framefs/framefs/internal/scratch"
	"github.com/framefs/framefs/media"
)

// Packed pictures. A fill keeps the frames nobody has asked for yet; for
// raw image formats (a 640x480 BMP is 900 KB) the images would fill any
// cache, so the frame server keeps the decoded pictures packed instead:
// the picture's planes, exactly as decoded (YUV 4:2:0 is half the bytes of
// RGB), compressed with S2, a byte-oriented LZ77 that encodes and decodes
// at memory speed. Frames decoded from compressed video are smooth and
// pack to a fraction of their size (measured: 8x for a synthetic 640x480
// test pattern, 3x for a NASA clip). Rendering an unpacked picture gives
// the original's image byte for byte, since the pixels and every property
// the conversion reads come back as they were.
//
// Layout, little endian:
//
//	magic           [4]byte "FPK1"
//	width, height   uint32
//	format          uint8 length + name (FFmpeg's pixel format name)
//	color_range, colorspace, color_primaries, color_trc, chroma_location
//	                int32 each
//	sar             int32 numerator, int32 denominator
//	interlaced, top_field_first
//	                uint8 each
//	display size    uint32 width, uint32 height, uint32 frames
//	rotation        uint16 length + filter chain
//	planes          uint32 bytes unpacked, then the S2 block
//
// A stored picture ("FPS1") has the same layout with the planes as they
// are in place of the S2 block: for video that does not compress (noisy
// video, whose planes S2 brings to 92% of their size at 0.5 ms a 640x480
// picture) storing them saves that time and costs little room.
//
// Packed pictures live in memory only; Unpack still checks every field, so
// that damaged bytes end in an error, never a wrong picture or a crash.
const (
	packMagic   = "FPK1"
	storedMagic = "FPS1"
)

// maxPackedChain bounds the rotation filter chain of a packed picture.
const maxPackedChain = 256

var errPacked = errors.New("decoder: unpack picture: damaged bytes")

// Pack returns the picture as compact bytes that Unpack turns back into
// it (see media.Codec).
func (Codec) Pack(p media.Picture, compress bool) ([]byte, error) {
	pic, ok := p.(*picture)
	if !ok || pic.f == nil {
		return nil, errNotPicture
	}
	var props C.framefs_pic_props
	C.framefs_pic_get_props(pic.f.UnsafePointer(), &props)
	size := int(C.framefs_pic_planes_size(props.format, props.width, props.height))
	if size <= 0 {
		return nil, fmt.Errorf("decoder: pack picture: pixel format %d of %dx%d has no plane layout", props.format, props.width, props.height)
	}
	planes := scratch.Get(size)
	defer scratch.Put(planes)
	if ret := C.framefs_pic_copy_out(pic.f.UnsafePointer(), (*C.uint8_t)(unsafe.Pointer(&(*planes)[0])), C.int(size)); ret < 0 {
		return nil, fmt.Errorf("decoder: pack picture: %w", astiav.Error(ret))
	}
	name := C.GoString(C.framefs_pix_fmt_name(props.format))
	chain := pic.st.rot.filters
	if name == "" || len(name) > 255 || len(chain) > maxPackedChain {
		return nil, fmt.Errorf("decoder: pack picture: pixel format %q or rotation %q cannot be packed", name, chain)
	}
	le := binary.LittleEndian
	h := make([]byte, 0, 96+len(name)+len(chain))
	if compress {
		h = append(h, packMagic...)
	} else {
		h = append(h, storedMagic...)
	}
	h = le.AppendUint32(h, uint32(props.width))
	h = le.AppendUint32(h, uint32(props.height))
	h = append(h, byte(len(name)))
	h = append(h, name...)
	for _, v := range []C.int{props.color_range, props.colorspace, props.color_primaries, props.color_trc,
		props.chroma_location, props.sar_num, props.sar_den} {
		h = le.AppendUint32(h, uint32(int32(v)))
	}
	h = append(h, byte(props.interlaced&1), byte(props.top_field_first&1))
	info := pic.st.info
	h = le.AppendUint32(h, uint32(info.Width))
	h = le.AppendUint32(h, uint32(info.Height))
	h = le.AppendUint32(h, uint32(info.Frames))
	h = le.AppendUint16(h, uint16(len(chain)))
	h = append(h, chain...)
	h = le.AppendUint32(h, uint32(size))
	block := *planes
	if compress {
		enc := scratch.Get(s2.MaxEncodedLen(size))
		defer scratch.Put(enc)
		block = s2.Encode(*enc, *planes)
	}
	// An exact-size copy: the cache charges what it holds by length.
	out := make([]byte, len(h)+len(block))
	copy(out, h)
	copy(out[len(h):], block)
	return out, nil
}

// Unpack returns the picture Pack made b of (see media.Codec).
func (Codec) Unpack(b []byte) (media.Picture, error) {
	r := packReader{b: b}
	magic := string(r.next(4))
	if magic != packMagic && magic != storedMagic {
		return nil, fmt.Errorf("%w: no packed picture", errPacked)
	}
	compressed := magic == packMagic
	var props C.framefs_pic_props
	props.width, props.height = C.int(r.u32()), C.int(r.u32())
	name := string(r.next(int(r.u8())))
	for _, v := range []*C.int{&props.color_range, &props.colorspace, &props.color_primaries, &props.color_trc,
		&props.chroma_location, &props.sar_num, &props.sar_den} {
		*v = C.int(int32(r.u32()))
	}
	props.interlaced, props.top_field_first = C.int(r.u8()&1), C.int(r.u8()&1)
	st := &stream{info: media.VideoInfo{Width: int(r.u32()), Height: int(r.u32()), Frames: int(r.u32())}}
	st.rot.filters = string(r.next(int(r.u16())))
	st.info.Rotation = st.rot.filters
	size := int(r.u32())
	block := r.rest()
	if r.short || props.width <= 0 || props.height <= 0 || media.CheckOutputSize(int(props.width), int(props.height)) != nil ||
		st.info.Width <= 0 || st.info.Height <= 0 || media.CheckOutputSize(st.info.Width, st.info.Height) != nil {
		return nil, fmt.Errorf("%w: bad header", errPacked)
	}
	format := astiav.FindPixelFormatByName(name)
	if format == astiav.PixelFormatNone || int(C.framefs_pic_planes_size(C.int(format), props.width, props.height)) != size {
		return nil, fmt.Errorf("%w: pixel format %q of %dx%d does not take %d bytes", errPacked, name, props.width, props.height, size)
	}
	props.format = C.int(format)
	if compressed {
		if n, err := s2.DecodedLen(block); err != nil || n != size {
			return nil, fmt.Errorf("%w: the planes do not unpack to %d bytes", errPacked, size)
		}
	} else if len(block) != size {
		return nil, fmt.Errorf("%w: %d bytes of planes stored, want %d", errPacked, len(block), size)
	}
	f, tight, err := newPictureFrame(int(props.format), int(props.width), int(props.height))
	if err != nil {
		return nil, err
	}
	C.framefs_pic_set_props(f.UnsafePointer(), &props)
	// Stored planes are copied into the frame row by row. Compressed ones
	// are decoded in place when the frame lays its planes out as the block
	// holds them, and otherwise through a scratch buffer, copied the same
	// way.
	planes := block
	if compressed {
		var dst []byte
		if tight {
			dst = unsafe.Slice((*byte)(unsafe.Pointer(C.framefs_pic_data(f.UnsafePointer()))), size)
		} else {
			buf := scratch.Get(size)
			defer scratch.Put(buf)
			dst = *buf
		}
		if _, err := s2.Decode(dst, block); err != nil {
			f.Free()
			return nil, fmt.Errorf("%w: %v", errPacked, err)
		}
		if tight {
			return &picture{f, st}, nil
		}
		planes = dst
	}
	if ret := C.framefs_pic_fill(f.UnsafePointer(), (*C.uint8_t)(unsafe.Pointer(&planes[0])), C.int(size)); ret < 0 {
		f.Free()
		return nil, fmt.Errorf("decoder: unpack picture: %w", astiav.Error(ret))
	}
	return &picture{f, st}, nil
}

// packReader reads the fields of a packed picture; short is set once a
// read runs past the end.
type packReader struct {
	b     []byte
	short bool
}

func (r *packReader) next(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.short = true
		r.b = nil
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *packReader) u8() uint8 {
	if v := r.next(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *packReader) u16() uint16 {
	if v := r.next(2); v != nil {
		return binary.LittleEndian.Uint16(v)
	}
	return 0
}

func (r *packReader) u32() uint32 {
	if v := r.next(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (r *packReader) rest() []byte { v := r.b; r.b = nil; return v }
