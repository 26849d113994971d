package decoder

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/asticode/go-astiav"
)

// Colour conversion runs through a libavfilter graph, the way the ffmpeg
// command line does it, rather than through a bare SoftwareScaleContext:
// the scale filter passes the frame's colour matrix and range to swscale
// (sws_setColorspaceDetails), which go-astiav v0.16.0 cannot do, and a
// BT.709 clip converted without them is off by up to 24 levels. With the
// graph, decoded frames match the ffmpeg command line's PNGs bit for bit.
//
// The chain is: buffer -> [rotation] -> scale (bicubic, to the output size)
// -> format=rgb24 -> buffersink (a scaled picture takes another route, see
// filterChain). Rotation comes first and the scaler uses
// bicubic interpolation because that is what the ffmpeg command line does
// (autorotate filters are inserted before the user's, and ffmpeg sets
// sws_flags=bicubic on every graph). Every format starts from this one
// RGB frame, with one exception: for BMP, swscale writes bgr24 directly
// when that is known to be its rgb24 output with the channels swapped (see
// session.convert); otherwise BMP swaps them itself.
//
// JPEG starts from the same RGB frame too (see jpeg.go), so that its
// colours are the RGB formats' colours even for BT.709 video; only an
// 8-bit BT.601 4:2:0 picture at its own size, whose planes are JPEG's
// YCbCr but for the range, goes to the encoder as planes (fromPlanes).

// rotation is the display transform the container asks for, as the
// ffmpeg command line applies it with -autorotate (its default).
type rotation struct {
	filters string // comma-separated filter chain, "" for none
	swap    bool   // width and height trade places
}

// rotationFromDisplayMatrix reproduces ffmpeg 5.1's autorotate decision
// (fftools/ffmpeg_filter.c): the angle from av_display_rotation_get,
// normalized to [0, 360), picks transpose for quarter turns (flipped
// variants when the matrix mirrors), hflip+vflip for a half turn, vflip for
// a mirrored upright picture and the rotate filter for any other angle.
func rotationFromDisplayMatrix(b []byte) (rotation, error) {
	if len(b) == 0 {
		return rotation{}, nil
	}
	m, err := astiav.NewDisplayMatrixFromBytes(b)
	if err != nil {
		return rotation{}, fmt.Errorf("decoder: display matrix: %w", err)
	}
	theta := m.Rotation()
	if math.IsNaN(theta) || math.IsInf(theta, 0) {
		return rotation{}, nil
	}
	theta -= 360 * math.Floor(theta/360+0.9/360)
	m3, m0, m4 := int32(m[3]), int32(m[0]), int32(m[4])
	switch {
	case math.Abs(theta-90) < 1:
		if m3 > 0 {
			return rotation{filters: "transpose=cclock_flip", swap: true}, nil
		}
		return rotation{filters: "transpose=clock", swap: true}, nil
	case math.Abs(theta-180) < 1:
		var f string
		if m0 < 0 {
			f = "hflip"
		}
		if m4 < 0 {
			if f != "" {
				f += ","
			}
			f += "vflip"
		}
		return rotation{filters: f}, nil
	case math.Abs(theta-270) < 1:
		if m3 < 0 {
			return rotation{filters: "transpose=clock_flip", swap: true}, nil
		}
		return rotation{filters: "transpose=cclock", swap: true}, nil
	case math.Abs(theta) > 1:
		return rotation{filters: "rotate=" + strconv.FormatFloat(theta, 'f', 6, 64) + "*PI/180"}, nil
	case m4 < 0:
		return rotation{filters: "vflip"}, nil
	}
	return rotation{}, nil
}

// convKey identifies a converter: the properties of the input frames the
// graph was configured for, and the output it makes. A frame with other
// properties (a resolution change mid-stream) gets a new graph.
type convKey struct {
	width, height  int
	format         astiav.PixelFormat
	sarNum, sarDen int
	rotation       string // the stream's display transform (rotation.filters)
	outWidth       int
	outHeight      int
	// scaled says the output size is not the display size: the picture is
	// scaled in its own pixel format first, then converted (filterChain).
	// shrink says neither side grows.
	scaled, shrink bool
	bgr            bool // bgr24 output, see renderer.convert
}

// converter is one configured filter graph. Not safe for concurrent use.
type converter struct {
	graph *astiav.FilterGraph
	src   *astiav.FilterContext
	sink  *astiav.FilterContext
	out   *astiav.Frame
}

// converterTimeBase is the time base converters' graphs are configured
// with: none of their filters uses time, and a fixed one lets pictures of
// every stream share a graph.
var converterTimeBase = astiav.NewRational(1, 1)

func newConverter(k convKey) (*converter, error) {
	return newConverterDesc(k, filterChain(k), converterTimeBase)
}

// newConverterDesc builds a graph for frames described by k with the
// filter chain desc between its source and sink.
func newConverterDesc(k convKey, desc string, tb astiav.Rational) (c *converter, err error) {
	c = &converter{graph: astiav.AllocFilterGraph()}
	if c.graph == nil {
		return nil, errors.New("decoder: allocate filter graph: out of memory")
	}
	defer func() {
		if err != nil {
			c.free()
			c = nil
		}
	}()
	// One thread: the graph runs inside a decoder session, and sessions
	// are the unit of parallelism.
	c.graph.SetThreadCount(1)

	sarNum, sarDen := k.sarNum, k.sarDen
	if sarDen <= 0 {
		sarNum, sarDen = 0, 1
	}
	src, err := c.graph.NewFilterContext(astiav.FindFilterByName("buffer"), "in", astiav.FilterArgs{
		"video_size":   fmt.Sprintf("%dx%d", k.width, k.height),
		"pix_fmt":      strconv.Itoa(int(k.format)),
		"time_base":    fmt.Sprintf("%d/%d", tb.Num(), tb.Den()),
		"pixel_aspect": fmt.Sprintf("%d/%d", sarNum, sarDen),
	})
	if err != nil {
		return nil, fmt.Errorf("decoder: create buffer source: %w", err)
	}
	c.src = src
	sink, err := c.graph.NewFilterContext(astiav.FindFilterByName("buffersink"), "out", nil)
	if err != nil {
		return nil, fmt.Errorf("decoder: create buffer sink: %w", err)
	}
	c.sink = sink

	outputs := astiav.AllocFilterInOut()
	inputs := astiav.AllocFilterInOut()
	defer outputs.Free()
	defer inputs.Free()
	outputs.SetName("in")
	outputs.SetFilterContext(src)
	outputs.SetPadIdx(0)
	outputs.SetNext(nil)
	inputs.SetName("out")
	inputs.SetFilterContext(sink)
	inputs.SetPadIdx(0)
	inputs.SetNext(nil)
	if err := c.graph.Parse(desc, inputs, outputs); err != nil {
		return nil, fmt.Errorf("decoder: parse filter graph %q: %w", desc, err)
	}
	if err := c.graph.Configure(); err != nil {
		return nil, fmt.Errorf("decoder: configure filter graph %q: %w", desc, err)
	}
	c.out = astiav.AllocFrame()
	return c, nil
}

// filterChain returns the graph description between the buffer source and
// the sink.
func filterChain(k convKey) string {
	chain := ""
	if k.rotation != "" {
		chain = k.rotation + ","
	}
	format := "rgb24"
	if k.bgr {
		format = "bgr24"
	}
	if k.scaled {
		// Scaling in the decoded pixel format (YUV 4:2:0, usually) and
		// converting afterwards runs swscale's SIMD planar scaler and its
		// unscaled converter, the one native-size images use: twice as
		// fast as scaling straight to RGB, whose vertical filter has only
		// C code for packed RGB output. The pixels differ from that one-step
		// conversion by rounding; scaledRevision names the choice.
		//
		// A picture made smaller is scaled bilinearly: swscale widens the
		// filter with the scale factor, so this is the antialiased
		// triangle filter of PIL's BILINEAR, what torchvision's Resize
		// applies, at half the cost of bicubic (640x480 to 224x224 with the
		// conversion to BGR: 0.17 against 0.31-0.34 ms a frame, where the
		// whole scaled frame costs the daemon about 1.9 ms). Both are as
		// far from torchvision's Resize of the full RGB frame (a mean
		// absolute difference of 3.2 levels, from the 4:2:0 chroma).
		// A picture made larger keeps bicubic, the sharper of the two.
		flags := "bicubic"
		if k.shrink {
			flags = "bilinear"
		}
		return chain + fmt.Sprintf("scale=w=%d:h=%d:flags=%s,format=%s,scale=flags=bicubic,format=%s",
			k.outWidth, k.outHeight, flags, k.format.Name(), format)
	}
	return chain + fmt.Sprintf("scale=w=%d:h=%d:flags=bicubic,format=%s", k.outWidth, k.outHeight, format)
}

// convert runs f through the graph and returns the converted frame, owned
// by the converter and valid until the next call. f is left untouched.
func (c *converter) convert(f *astiav.Frame) (*astiav.Frame, error) {
	c.out.Unref()
	if err := c.src.BuffersrcAddFrame(f, astiav.NewBuffersrcFlags(astiav.BuffersrcFlagKeepRef)); err != nil {
		return nil, fmt.Errorf("decoder: filter graph input: %w", err)
	}
	if err := c.sink.BuffersinkGetFrame(c.out, astiav.NewBuffersinkFlags()); err != nil {
		return nil, fmt.Errorf("decoder: filter graph output: %w", err)
	}
	return c.out, nil
}

func (c *converter) free() {
	if c.out != nil {
		c.out.Free()
		c.out = nil
	}
	// Freeing the two contexts go-astiav created drops them from its
	// registry of live objects; the graph frees the rest.
	if c.src != nil {
		c.src.Free()
		c.src = nil
	}
	if c.sink != nil {
		c.sink.Free()
		c.sink = nil
	}
	if c.graph != nil {
		c.graph.Free()
		c.graph = nil
	}
}
