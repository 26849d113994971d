package decoder

import (
	"encoding/binary"
	"fmt"

	"github.com/framefs/framefs/media"
)

// imageRevision changes whenever framefs changes how it makes the bytes of
// an image (filter chain, encoder options, header layout), so that it
// shows in Identity even when no library changed.
const imageRevision = 2

// scaledRevision changes whenever framefs changes how it scales (see
// filterChain); it shows in the Identity of scaled settings only, so that
// the stored sizes of native-size images stay valid. Revision 2 scales in
// the decoded pixel format before converting to RGB; revision 3 scales
// down bilinearly.
const scaledRevision = 3

// jpegPlanesRevision shows in the Identity of JPEG settings at the video's
// own size, which encode BT.601 4:2:0 pictures from their planes (see
// fromPlanes): revision 1 began doing so.
const jpegPlanesRevision = 1

// Identity names everything that determines the bytes of an image made
// with setting s: the normalized setting (ImageSetting.Canonical),
// framefs's own image revision and the versions of the libraries involved.
// Frame sizes stored next to a table are valid exactly as long as the
// identity they were computed under equals the current one.
func Identity(s media.ImageSetting) string {
	s = s.Normalize()
	id := fmt.Sprintf("%s;framefs-image=%d;%s", s.Canonical(), imageRevision, LibraryVersions())
	if s.Width != 0 || s.Height != 0 {
		id = fmt.Sprintf("%s;framefs-image=%d,scaled=%d;%s", s.Canonical(), imageRevision, scaledRevision, LibraryVersions())
	}
	if s.Format == media.FormatJPEG {
		id += "," + jpegIdentity()
		if s.Width == 0 && s.Height == 0 {
			id += fmt.Sprintf(",planes=%d", jpegPlanesRevision)
		}
	}
	return id
}

// The layouts of BMP and PPM files, whose sizes media.PredictSize works
// out from the picture size alone; TestImageSettingSizes holds the two to
// each other.
const bmpHeaderSize = 14 + 40

func bmpStride(w int) int { return (3*w + 3) &^ 3 }

// appendBMPHeader appends a BITMAPFILEHEADER and a BITMAPINFOHEADER for a
// bottom-up 24-bit image without palette or compression. The resolution
// fields stay 0 (unknown), so the header depends on the size alone.
func appendBMPHeader(b []byte, w, h int) []byte {
	imageSize := uint32(bmpStride(w) * h)
	le := binary.LittleEndian
	b = append(b, 'B', 'M')
	b = le.AppendUint32(b, bmpHeaderSize+imageSize) // file size
	b = le.AppendUint32(b, 0)                       // reserved
	b = le.AppendUint32(b, bmpHeaderSize)           // pixel data offset
	b = le.AppendUint32(b, 40)                      // info header size
	b = le.AppendUint32(b, uint32(w))
	b = le.AppendUint32(b, uint32(h)) // positive: rows bottom-up
	b = le.AppendUint16(b, 1)         // planes
	b = le.AppendUint16(b, 24)        // bits per pixel
	b = le.AppendUint32(b, 0)         // BI_RGB
	b = le.AppendUint32(b, imageSize)
	b = le.AppendUint32(b, 0) // horizontal resolution
	b = le.AppendUint32(b, 0) // vertical resolution
	b = le.AppendUint32(b, 0) // colours used
	b = le.AppendUint32(b, 0) // important colours
	return b
}

func ppmHeader(w, h int) string { return fmt.Sprintf("P6\n%d %d\n255\n", w, h) }
