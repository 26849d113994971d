package decoder

import (
	"github.com/asticode/go-astiav"

	"github.com/framefs/framefs/media"
)

// renderer turns decoded pictures into image files: it keeps the filter
// graphs and encoders of the picture shapes and settings in use, so that a
// goroutine rendering the frames of a few videos rebuilds neither. It
// renders the pictures of any stream: what a stream adds (its rotation and
// display size) comes with each picture. Not safe for concurrent use.
type renderer struct {
	convs map[convKey]*converter
	encs  map[encKey]imageEncoder
}

// stream is what rendering a stream's pictures depends on beyond their
// pixels: the display transform and the display size that image sizes are
// worked out from. Every picture of a session shares its stream.
type stream struct {
	rot  rotation
	info media.VideoInfo
}

// maxConverters bounds the filter graphs (and encoders) a renderer keeps;
// more distinct settings than this in use at once on one video is unusual,
// and the cost of rebuilding a graph is small.
const maxConverters = 4

func newRenderer() *renderer {
	return &renderer{convs: map[convKey]*converter{}, encs: map[encKey]imageEncoder{}}
}

// convert converts a decoded frame of stream st, whose info is fi, for an
// image of setting (normalized), whose output size the caller has checked
// (encode). The result belongs to the renderer's converter and is valid
// until its next use; Clone it to keep it.
func (r *renderer) convert(f *astiav.Frame, fi frameInfo, st *stream, setting media.ImageSetting) (*astiav.Frame, error) {
	ow, oh := setting.OutputSize(st.info.Width, st.info.Height)
	ck := convKey{
		width: fi.width, height: fi.height, format: fi.format,
		sarNum: fi.sarNum, sarDen: fi.sarDen,
		rotation: st.rot.filters,
		outWidth: ow, outHeight: oh,
		scaled: ow != st.info.Width || oh != st.info.Height,
		shrink: ow <= st.info.Width && oh <= st.info.Height,
	}
	// BMP stores BGR. swscale's unscaled 8-bit 4:2:0 converter writes
	// bgr24 as exactly its rgb24 with the channels swapped, which saves
	// BMP a pass over the pixels; its scaled and 10-bit paths do not (the
	// tests compare BMP and PPM pixels on every fixture), so those stay
	// rgb24 and get swapped in C.
	ck.bgr = setting.Format == media.FormatBMP && st.rot.filters == "" && (ck.scaled || ow == fi.width && oh == fi.height) &&
		(fi.format == astiav.PixelFormatYuv420P || fi.format == astiav.PixelFormatYuvj420P)
	conv := r.convs[ck]
	if conv == nil {
		if len(r.convs) >= maxConverters {
			r.freeConverters()
		}
		var err error
		if conv, err = newConverter(ck); err != nil {
			return nil, err
		}
		r.convs[ck] = conv
	}
	return conv.convert(f)
}

// encoderFor returns the renderer's encoder for images of setting from
// stream st.
func (r *renderer) encoderFor(setting media.ImageSetting, st *stream) (imageEncoder, error) {
	k := newEncKey(setting, st.info)
	enc := r.encs[k]
	if enc == nil {
		if len(r.encs) >= maxConverters {
			r.freeEncoders()
		}
		var err error
		if enc, err = newImageEncoder(k); err != nil {
			return nil, err
		}
		r.encs[k] = enc
	}
	return enc, nil
}

func newEncKey(setting media.ImageSetting, info media.VideoInfo) encKey {
	ow, oh := setting.OutputSize(info.Width, info.Height)
	return encKey{format: setting.Format, quality: setting.JPEGQuality, width: ow, height: oh}
}

// encode converts a decoded frame of stream st, encodes it with setting
// (normalized) and appends the image to dst. f is left untouched.
func (r *renderer) encode(dst []byte, f *astiav.Frame, st *stream, setting media.ImageSetting) ([]byte, error) {
	if err := media.CheckOutputSize(setting.OutputSize(st.info.Width, st.info.Height)); err != nil {
		return nil, err
	}
	enc, err := r.encoderFor(setting, st)
	if err != nil {
		return nil, err
	}
	fi := getFrameInfo(f)
	if je, ok := enc.(*jpegEncoder); ok {
		if planes, limited := fromPlanes(fi, st, setting); planes {
			return je.encodePlanes(dst, f, limited)
		}
	}
	out, err := r.convert(f, fi, st, setting)
	if err != nil {
		return nil, err
	}
	defer out.Unref()
	return enc.encode(dst, out)
}

func (r *renderer) freeConverters() {
	for k, c := range r.convs {
		c.free()
		delete(r.convs, k)
	}
}

func (r *renderer) freeEncoders() {
	for k, e := range r.encs {
		e.free()
		delete(r.encs, k)
	}
}

// free frees every graph and encoder; the renderer stays usable.
func (r *renderer) free() {
	r.freeConverters()
	r.freeEncoders()
}

// Encode makes the image file of a picture this package decoded
// (media.Renderer).
func (r *renderer) Encode(p media.Picture, setting media.ImageSetting) ([]byte, error) {
	return r.AppendEncoded(nil, p, setting)
}

// AppendEncoded appends the image file of a picture this package decoded
// to dst (media.Renderer).
func (r *renderer) AppendEncoded(dst []byte, p media.Picture, setting media.ImageSetting) ([]byte, error) {
	pic, ok := p.(*picture)
	if !ok || pic.f == nil {
		return nil, errNotPicture
	}
	return r.encode(dst, pic.f, pic.st, setting)
}

// Close frees the renderer's graphs and encoders (media.Renderer).
func (r *renderer) Close() { r.free() }
