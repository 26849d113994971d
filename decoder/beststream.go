package decoder

// #cgo pkg-config: libavformat libavutil
// #include <stdint.h>
// #include <libavformat/avformat.h>
//
// // framefs_format_context turns the address of an AVFormatContext back into
// // a pointer after checking that it is one: the AVClass at its start must be
// // libavformat's and its stream count the one go-astiav reported.
// static AVFormatContext *framefs_format_context(uintptr_t addr, unsigned nb_streams) {
// 	AVFormatContext *fc = (AVFormatContext *)addr;
// 	if (fc == NULL || fc->av_class != avformat_get_class() || fc->nb_streams != nb_streams)
// 		return NULL;
// 	return fc;
// }
//
// static int framefs_best_video_stream(uintptr_t addr, unsigned nb_streams) {
// 	AVFormatContext *fc = framefs_format_context(addr, nb_streams);
// 	if (fc == NULL)
// 		return AVERROR_BUG;
// 	return av_find_best_stream(fc, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
// }
//
// static int framefs_discard_other_streams(uintptr_t addr, unsigned nb_streams, int keep) {
// 	AVFormatContext *fc = framefs_format_context(addr, nb_streams);
// 	if (fc == NULL)
// 		return AVERROR_BUG;
// 	for (unsigned i = 0; i < fc->nb_streams; i++)
// 		fc->streams[i]->discard = (int)i == keep ? AVDISCARD_DEFAULT : AVDISCARD_ALL;
// 	return 0;
// }
//
// static int framefs_video_delay(uintptr_t addr, unsigned nb_streams, unsigned stream) {
// 	AVFormatContext *fc = framefs_format_context(addr, nb_streams);
// 	if (fc == NULL || stream >= fc->nb_streams)
// 		return AVERROR_BUG;
// 	return fc->streams[stream]->codecpar->video_delay;
// }
//
// typedef struct {
// 	int     stream;   // stream of the first entry reaching past the limit, or -1
// 	int     entry;    // its number in the stream's index
// 	int     entries;  // the number of entries in that stream's index
// 	int64_t pos;      // its position
// 	int64_t size;     // and size
// } framefs_index_check;
//
// static int framefs_check_index(uintptr_t addr, unsigned nb_streams, int64_t limit, framefs_index_check *out) {
// 	AVFormatContext *fc = framefs_format_context(addr, nb_streams);
// 	if (fc == NULL)
// 		return AVERROR_BUG;
// 	out->stream = -1;
// 	for (unsigned s = 0; s < fc->nb_streams; s++) {
// 		AVStream *st = fc->streams[s];
// 		int n = avformat_index_get_entries_count(st);
// 		for (int i = 0; i < n; i++) {
// 			const AVIndexEntry *e = avformat_index_get_entry(st, i);
// 			if (e == NULL || e->pos < 0)
// 				continue;
// 			if (e->pos > limit || e->size > limit - e->pos) {
// 				out->stream = (int)s;
// 				out->entry = i;
// 				out->entries = n;
// 				out->pos = e->pos;
// 				out->size = e->size;
// 				return 0;
// 			}
// 		}
// 	}
// 	return 0;
// }
import "C"

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/asticode/go-astiav"
)

// go-astiav v0.16.0 wraps neither av_find_best_stream nor AVStream.discard,
// and its FormatContext keeps the AVFormatContext pointer unexported. The one
// public way to that pointer is Class().String(), which v0.16.0 formats as
// "<item> [<class>] @ %p". formatContextAddr parses it, and the C side
// refuses the address unless it carries libavformat's AVClass and the stream
// count go-astiav reports, so a format change in go-astiav ends in an error,
// never in a stray pointer. Nothing here depends on go-astiav's struct
// layout. Replace this with FormatContext's own accessor if a go-astiav
// release that builds against FFmpeg 5.1 ever exports one.

// errNoFormatContextAddr means formatContextAddr could not find or verify
// the AVFormatContext; it indicates a go-astiav that formats Class.String
// differently, i.e. a bug in this package, not bad input.
var errNoFormatContextAddr = errors.New("decoder: internal error: cannot locate the AVFormatContext behind go-astiav's FormatContext (go-astiav changed?)")

func formatContextAddr(fc *astiav.FormatContext) (C.uintptr_t, C.uint, error) {
	cl := fc.Class()
	if cl == nil {
		return 0, 0, errNoFormatContextAddr
	}
	s := cl.String()
	i := strings.LastIndex(s, " @ 0x")
	if i < 0 {
		return 0, 0, errNoFormatContextAddr
	}
	addr, err := strconv.ParseUint(s[i+len(" @ 0x"):], 16, 64)
	if err != nil || addr == 0 {
		return 0, 0, errNoFormatContextAddr
	}
	return C.uintptr_t(addr), C.uint(fc.NbStreams()), nil
}

// bestVideoStream returns the stream av_find_best_stream(fc,
// AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0) picks (preferring default-disposition
// streams, then streams that yielded frames while probing, then higher bit
// rates). It is not always ffprobe's "v:0", which is simply the first video
// stream. It returns -1 if the file has no video stream.
func bestVideoStream(fc *astiav.FormatContext) (int, error) {
	addr, n, err := formatContextAddr(fc)
	if err != nil {
		return 0, err
	}
	ret := C.framefs_best_video_stream(addr, n)
	switch {
	case ret >= 0:
		return int(ret), nil
	case astiav.Error(ret) == astiav.ErrStreamNotFound:
		return -1, nil
	case astiav.Error(ret) == astiav.ErrBug:
		return 0, errNoFormatContextAddr
	}
	return 0, fmt.Errorf("decoder: find best video stream: %w", astiav.Error(ret))
}

// discardOtherStreams tells the demuxer to skip every stream but keep
// (AVStream.discard = AVDISCARD_ALL), so that it neither reads nor returns
// their packets. Packets buffered by find_stream_info may still come out.
func discardOtherStreams(fc *astiav.FormatContext, keep int) error {
	addr, n, err := formatContextAddr(fc)
	if err != nil {
		return err
	}
	if ret := C.framefs_discard_other_streams(addr, n, C.int(keep)); ret < 0 {
		return errNoFormatContextAddr
	}
	return nil
}

// videoDelay returns the stream's AVCodecParameters.video_delay: how many
// frames the codec may hold back to reorder them (non-zero with B-frames),
// as avformat_find_stream_info measured it.
func videoDelay(fc *astiav.FormatContext, stream int) (int, error) {
	addr, n, err := formatContextAddr(fc)
	if err != nil {
		return 0, err
	}
	ret := C.framefs_video_delay(addr, n, C.uint(stream))
	if ret < 0 {
		return 0, errNoFormatContextAddr
	}
	return int(ret), nil
}

// indexCheck reports the first entry of the demuxer's index (the sample
// tables of MP4, idx1 of AVI, cues of Matroska, entries added while
// demuxing) whose bytes reach past the end of the input, looking at every
// stream: a container that describes more bytes than there are is
// truncated, even if the stream being indexed happens to be complete.
type indexCheck struct {
	stream  int // -1 if no entry reaches past the end
	entry   int
	entries int
	pos     int64
	size    int64
}

func checkIndex(fc *astiav.FormatContext, inputSize int64) (indexCheck, error) {
	addr, n, err := formatContextAddr(fc)
	if err != nil {
		return indexCheck{}, err
	}
	var out C.framefs_index_check
	if ret := C.framefs_check_index(addr, n, C.int64_t(inputSize), &out); ret < 0 {
		return indexCheck{}, errNoFormatContextAddr
	}
	return indexCheck{
		stream:  int(out.stream),
		entry:   int(out.entry),
		entries: int(out.entries),
		pos:     int64(out.pos),
		size:    int64(out.size),
	}, nil
}
