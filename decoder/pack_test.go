package decoder

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/framefs/framefs/media"
)

// TestPackRendersTheSameImages: a picture packed and unpacked renders the
// images of the picture itself, byte for byte, in every format and size,
// for 8- and 10-bit video, BT.709 and full-range colour and a rotated
// stream; and packing makes it smaller than its planes.
func TestPackRendersTheSameImages(t *testing.T) {
	t.Parallel()
	rotated := ffmpegTo(t, filepath.Join(t.TempDir(), "rotated.mp4"),
		"-i", "../testdata/video/h264_bframes_gop30.mp4", "-c", "copy", "-metadata:s:v:0", "rotate=90")
	settings := []media.ImageSetting{
		{}, {Format: media.FormatPNG}, {Format: media.FormatBMP}, {Format: media.FormatPPM},
		{Format: media.FormatBMP, Width: 224, Height: 224}, {JPEGQuality: 75, Width: 100},
	}
	var codec Codec
	for _, path := range []string{"../testdata/video/h264_bframes_gop30.mp4", "../testdata/video/hevc.mp4", rotated,
		realDir + "/bt709_full_range.mp4", realDir + "/h264_10bits.mp4", realDir + "/h265_10bits.mp4", realDir + "/nasa_13013.mp4"} {
		v := openVideo(t, path, -1)
		s, err := codec.OpenSession(context.Background(), v, 1)
		if err != nil {
			t.Fatal(err)
		}
		s.Bind(context.Background(), v.R)
		r := codec.NewRenderer()
		for _, ord := range []int{0, 5, v.Index.Frames() - 1} {
			pic, err := s.Decode(context.Background(), ord, nil)
			if err != nil {
				t.Fatalf("%s frame %d: %v", path, ord, err)
			}
			for _, compress := range []bool{true, false} {
				packed, err := codec.Pack(pic, compress)
				if err != nil {
					t.Fatalf("%s frame %d: pack (compress %v): %v", path, ord, compress, err)
				}
				if n := pic.Bytes(); compress && int64(len(packed)) >= n {
					t.Errorf("%s frame %d: packed to %d bytes, the picture holds %d", path, ord, len(packed), n)
				}
				back, err := codec.Unpack(packed)
				if err != nil {
					t.Fatalf("%s frame %d: unpack (compress %v): %v", path, ord, compress, err)
				}
				for _, setting := range settings {
					setting = setting.Normalize()
					want, err := r.Encode(pic, setting)
					if err != nil {
						t.Fatal(err)
					}
					got, err := r.Encode(back, setting)
					if err != nil {
						t.Fatalf("%s frame %d %+v: render the unpacked picture (compress %v): %v", path, ord, setting, compress, err)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("%s frame %d %+v: the unpacked picture (compress %v) renders other bytes", path, ord, setting, compress)
					}
				}
				back.Release()
			}
			pic.Release()
		}
		r.Close()
		s.Close()
	}
}

// TestUnpackRefusesDamage: every truncation and many bit flips of a
// packed picture end in an error or a picture that renders (a flipped
// pixel byte is still a picture), never a crash.
func TestUnpackRefusesDamage(t *testing.T) {
	t.Parallel()
	for _, compress := range []bool{true, false} {
		unpackRefusesDamage(t, packedFixture(t, compress))
	}
}

func unpackRefusesDamage(t *testing.T, packed []byte) {
	var codec Codec
	for n := range len(packed) {
		if pic, err := codec.Unpack(packed[:n]); err == nil {
			pic.Release()
			t.Fatalf("a packed picture cut to %d of %d bytes unpacked", n, len(packed))
		} else if !errors.Is(err, errPacked) {
			t.Fatalf("cut to %d bytes: %v, want errPacked", n, err)
		}
	}
	r := codec.NewRenderer()
	defer r.Close()
	for i := range min(len(packed), 200) {
		b := bytes.Clone(packed)
		b[i] ^= 0x5a
		if pic, err := codec.Unpack(b); err == nil {
			if _, err := r.Encode(pic, media.ImageSetting{Format: media.FormatPPM}); err != nil {
				t.Errorf("byte %d flipped: unpacked, but does not render: %v", i, err)
			}
			pic.Release()
		}
	}
}

// packedFixture returns a packed picture of a small fixture frame,
// compressed or stored.
func packedFixture(t testing.TB, compress bool) []byte {
	t.Helper()
	v := openVideo(t, "../testdata/video/hevc.mp4", 0)
	var codec Codec
	s, err := codec.OpenSession(context.Background(), v, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Bind(context.Background(), v.R)
	pic, err := s.Decode(context.Background(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pic.Release()
	packed, err := codec.Pack(pic, compress)
	if err != nil {
		t.Fatal(err)
	}
	return packed
}

// FuzzUnpack: bytes that are no packed picture end in an error, never a
// crash or a picture that cannot be rendered.
func FuzzUnpack(f *testing.F) {
	f.Add(packedFixture(f, true))
	f.Add(packedFixture(f, false))
	f.Add([]byte(packMagic))
	f.Add([]byte(storedMagic))
	var codec Codec
	r := codec.NewRenderer()
	defer r.Close()
	f.Fuzz(func(t *testing.T, b []byte) {
		pic, err := codec.Unpack(b)
		if err != nil {
			return
		}
		defer pic.Release()
		if pic.Bytes() > 4<<20 {
			return // a large picture unpacks; rendering it only takes time
		}
		if _, err := r.Encode(pic, media.ImageSetting{Format: media.FormatPPM, Width: 32}); err != nil {
			t.Errorf("unpacked, but does not render: %v", err)
		}
	})
}

// BenchmarkPack and BenchmarkUnpack time packing a 640x480 picture and
// unpacking it, against BenchmarkRenderJPEG, encoding it as a JPEG: what a
// fill's sibling costs kept packed or as an image.
func BenchmarkPack(b *testing.B)         { benchmarkPicture(b, "pack") }
func BenchmarkUnpack(b *testing.B)       { benchmarkPicture(b, "unpack") }
func BenchmarkRenderJPEG(b *testing.B)   { benchmarkPicture(b, "jpeg") }
func BenchmarkRenderBMP224(b *testing.B) { benchmarkPicture(b, "bmp224") }

func benchmarkPicture(b *testing.B, what string) {
	path := ffmpegTo(b, filepath.Join(b.TempDir(), "640x480.mp4"), "-f", "lavfi", "-i", "testsrc2=size=640x480:rate=30",
		"-frames:v", "30", "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p")
	v := openVideo(b, path, 0)
	var codec Codec
	s, err := codec.OpenSession(context.Background(), v, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.Bind(context.Background(), v.R)
	pic, err := s.Decode(context.Background(), 10, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer pic.Release()
	packed, err := codec.Pack(pic, true)
	if err != nil {
		b.Fatal(err)
	}
	r := codec.NewRenderer()
	defer r.Close()
	b.ReportMetric(float64(len(packed)), "packed-bytes")
	for b.Loop() {
		switch what {
		case "pack":
			_, err = codec.Pack(pic, true)
		case "unpack":
			var p media.Picture
			if p, err = codec.Unpack(packed); err == nil {
				p.Release()
			}
		case "jpeg":
			_, err = r.Encode(pic, media.ImageSetting{}.Normalize())
		case "bmp224":
			_, err = r.Encode(pic, media.ImageSetting{Format: media.FormatBMP, Width: 224, Height: 224})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
