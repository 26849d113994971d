package media

import (
	"fmt"
	"strconv"
	"strings"
)

// ImageFormat is the file format a frame is served as.
type ImageFormat uint8

// The image formats. The zero value is JPEG, the format a frame is served as
// when nothing else is asked for: it is what image-folder loaders expect
// and the smallest of the four.
const (
	// FormatJPEG is baseline JFIF, 4:2:0, BT.601 full range, encoded by
	// libjpeg-turbo at the IJG quality of the setting.
	FormatJPEG ImageFormat = iota
	// FormatPNG is 8-bit RGB PNG, lossless.
	FormatPNG
	// FormatBMP is a 24-bit bottom-up Windows bitmap; its size follows
	// from the picture size alone.
	FormatBMP
	// FormatPPM is binary PPM (P6), 8-bit RGB; its size follows from the
	// picture size alone.
	FormatPPM
	// FormatNPY is NumPy's .npy file of the RGB pixels, uint8 of shape
	// (height, width, 3): numpy.load reads it without an image library
	// (NPYHeader). Its size follows from the picture size alone.
	FormatNPY
)

// Extension returns the file name extension without the dot.
func (f ImageFormat) Extension() string {
	switch f {
	case FormatJPEG:
		return "jpg"
	case FormatPNG:
		return "png"
	case FormatBMP:
		return "bmp"
	case FormatPPM:
		return "ppm"
	case FormatNPY:
		return "npy"
	}
	return "format" + strconv.Itoa(int(f))
}

func (f ImageFormat) String() string {
	if f == FormatJPEG {
		return "jpeg"
	}
	return f.Extension()
}

// ParseImageFormat accepts a format name or extension: jpeg, jpg, png, bmp,
// ppm, npy (any case).
func ParseImageFormat(s string) (ImageFormat, error) {
	switch strings.ToLower(strings.TrimPrefix(s, ".")) {
	case "jpeg", "jpg":
		return FormatJPEG, nil
	case "png":
		return FormatPNG, nil
	case "bmp":
		return FormatBMP, nil
	case "ppm":
		return FormatPPM, nil
	case "npy":
		return FormatNPY, nil
	}
	return 0, fmt.Errorf("media: unknown image format %q (want jpeg, png, bmp, ppm or npy)", s)
}

// DefaultJPEGQuality is the JPEG quality used when ImageSetting.JPEGQuality
// is 0: compression artefacts are hard to see at normal viewing size.
const DefaultJPEGQuality = 95

// MaxImageDimension bounds the width and height an ImageSetting may ask
// for, so that a mistyped size cannot make the encoder allocate gigabytes.
const MaxImageDimension = 16384

// MaxImagePixels bounds the pixels of one image (and one picture):
// 8K UHD (7680x4320) fits, while a picture of twice its side would take
// 800 MB as RGB and minutes of work per video.
const MaxImagePixels = 1 << 25

// ImageSetting says how a frame is turned into an image file. The zero value
// is a JPEG of DefaultJPEGQuality at the video's display size. It is
// comparable and, after Normalize, usable as part of a map key.
type ImageSetting struct {
	// Format is the file format.
	Format ImageFormat
	// JPEGQuality, 1 to 100, is the IJG quality of JPEG images, the scale
	// of libjpeg, PIL (Image.save quality=) and OpenCV (IMWRITE_JPEG_QUALITY).
	// 0 means DefaultJPEGQuality. Ignored by the other formats.
	JPEGQuality int
	// Width and Height scale the image, in the decoded pixel format before
	// the conversion to RGB (twice as fast as ffmpeg's one-step conversion,
	// a few pixels rounded differently): down bilinearly, antialiased like
	// torchvision's Resize; up bicubic, as the ffmpeg command line scales.
	// Both 0 keep the display size; one 0
	// keeps the display aspect ratio, rounding the other to the nearest
	// pixel.
	Width, Height int
}

// SettingFor returns the normalised setting for an image format name (jpg,
// png, bmp, ppm, npy) and JPEG quality, as tables name their default setting;
// ingest stores frame sizes for it and mounts serve it.
func SettingFor(format string, jpegQuality int) (ImageSetting, error) {
	f, err := ParseImageFormat(format)
	if err != nil {
		return ImageSetting{}, err
	}
	return ImageSetting{Format: f, JPEGQuality: jpegQuality}.Normalize(), nil
}

// Normalize applies the defaults and clears fields the format ignores, so
// that two settings that produce the same bytes compare equal.
func (s ImageSetting) Normalize() ImageSetting {
	if s.Format != FormatJPEG {
		s.JPEGQuality = 0
	} else if s.JPEGQuality == 0 {
		s.JPEGQuality = DefaultJPEGQuality
	}
	return s
}

// Validate reports a setting that no image can be made with.
func (s ImageSetting) Validate() error {
	switch s.Format {
	case FormatJPEG, FormatPNG, FormatBMP, FormatPPM, FormatNPY:
	default:
		return fmt.Errorf("media: unknown image format %d", s.Format)
	}
	if s.JPEGQuality < 0 || s.JPEGQuality > 100 {
		return fmt.Errorf("media: JPEG quality %d is out of range (1 to 100, or 0 for the default %d)", s.JPEGQuality, DefaultJPEGQuality)
	}
	if s.Width < 0 || s.Height < 0 || s.Width > MaxImageDimension || s.Height > MaxImageDimension {
		return fmt.Errorf("media: image size %dx%d is out of range (0 to %d; 0 keeps the video's size)", s.Width, s.Height, MaxImageDimension)
	}
	if int64(s.Width)*int64(s.Height) > MaxImagePixels {
		return fmt.Errorf("media: image size %dx%d has more than %d pixels (8K UHD, 7680x4320, is the largest that fits)", s.Width, s.Height, MaxImagePixels)
	}
	return nil
}

// Canonical returns the normalized setting as text, such as
// "jpeg;q=95;size=native" or "png;size=640x0": settings that make the same
// images have the same text. It is the setting's part of the image
// identity (decoder.Identity) under which tables store frame sizes, so its
// form never changes.
func (s ImageSetting) Canonical() string {
	s = s.Normalize()
	var b strings.Builder
	b.WriteString(s.Format.String())
	if s.Format == FormatJPEG {
		fmt.Fprintf(&b, ";q=%d", s.JPEGQuality)
	}
	if s.Width != 0 || s.Height != 0 {
		fmt.Fprintf(&b, ";size=%dx%d", s.Width, s.Height)
	} else {
		b.WriteString(";size=native")
	}
	return b.String()
}

// CheckOutputSize reports an image of w x h that no image may be: wider or
// higher than MaxImageDimension or larger than MaxImagePixels. A setting
// that keeps the aspect ratio can ask for one from a video of an unusual
// shape.
func CheckOutputSize(w, h int) error {
	if w > MaxImageDimension || h > MaxImageDimension || int64(w)*int64(h) > MaxImagePixels {
		return fmt.Errorf("media: a %dx%d image is too large (at most %d pixels a side and %d in all)", w, h, MaxImageDimension, MaxImagePixels)
	}
	return nil
}

// OutputSize returns the width and height of images made with this setting
// from a video whose display size (after rotation) is displayWidth x
// displayHeight.
func (s ImageSetting) OutputSize(displayWidth, displayHeight int) (w, h int) {
	w, h = s.Width, s.Height
	switch {
	case w == 0 && h == 0:
		return displayWidth, displayHeight
	case h == 0 && displayWidth > 0:
		h = int((int64(w)*int64(displayHeight) + int64(displayWidth)/2) / int64(displayWidth))
	case w == 0 && displayHeight > 0:
		w = int((int64(h)*int64(displayWidth) + int64(displayHeight)/2) / int64(displayHeight))
	}
	return max(w, 1), max(h, 1)
}

// PredictSize returns the exact byte size of every image made with setting
// s from a video of the given display size, for the formats whose size
// depends on the picture size alone: BMP (a 54-byte header, then rows of
// 3 bytes a pixel padded to 4 bytes), PPM (a "P6\nW H\n255\n" header,
// then 3 bytes a pixel) and NPY (NPYHeader, then 3 bytes a pixel). ok is
// false for JPEG and PNG, whose sizes are known only after encoding.
func PredictSize(s ImageSetting, displayWidth, displayHeight int) (size int64, ok bool) {
	w, h := s.OutputSize(displayWidth, displayHeight)
	switch s.Format {
	case FormatBMP:
		return 14 + 40 + int64((3*w+3)&^3)*int64(h), true
	case FormatPPM:
		return int64(len(fmt.Sprintf("P6\n%d %d\n255\n", w, h))) + 3*int64(w)*int64(h), true
	case FormatNPY:
		return int64(len(NPYHeader(w, h))) + 3*int64(w)*int64(h), true
	}
	return 0, false
}

// NPYHeader is the header of the .npy file (format version 1.0) of a
// w x h RGB image: the magic string, the version, and the array's
// description as a Python dict literal, padded with spaces to a multiple of
// 64 bytes as NumPy writes it, so that the pixels that follow are aligned.
func NPYHeader(w, h int) string {
	dict := fmt.Sprintf("{'descr': '|u1', 'fortran_order': False, 'shape': (%d, %d, 3), }", h, w)
	const prefix = 6 + 2 + 2 // magic, version, header length
	n := prefix + len(dict) + 1
	pad := (64 - n%64) % 64
	header := dict + strings.Repeat(" ", pad) + "\n"
	return "\x93NUMPY\x01\x00" + string([]byte{byte(len(header)), byte(len(header) >> 8)}) + header
}
