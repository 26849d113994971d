package decoder

import (
	"context"
	"errors"
	"io"

	"github.com/framefs/framefs/videoidx"
)

// IndexVideo builds the frame index of a video: from the MP4 sample tables
// when the input is ISO-BMFF and its tables model it exactly, otherwise by
// demuxing its packets (ScanIndex). stream is an FFmpeg stream index, or
// videoidx.BestStream for the stream FFmpeg picks.
//
// An MP4 whose tables are damaged or point past the end of the file is an
// error, not a reason to fall back: the scan would index only the frames
// that survive, and a table must not silently store a partial video.
func IndexVideo(ctx context.Context, r io.ReaderAt, size int64, stream int) (*videoidx.Index, error) {
	ix, err := videoidx.ReadMP4(ctx, r, size, stream)
	if err == nil || !errors.Is(err, videoidx.ErrNotMP4) && !errors.Is(err, videoidx.ErrUnsupported) {
		return ix, err
	}
	opts := ScanOptions{}
	if stream != videoidx.BestStream {
		opts = ScanOptions{HasStream: true, Stream: stream}
	}
	return ScanIndex(ctx, r, size, opts)
}
