package decoder

// #cgo pkg-config: libavutil
// #include <errno.h>
// #include <pthread.h>
// #include <stdint.h>
// #include <sys/mman.h>
// #include <libavutil/buffer.h>
// #include <libavutil/error.h>
// #include <libavutil/frame.h>
// #include <libavutil/imgutils.h>
//
// // Buffers of kept pictures (and of pictures unpacked for rendering) are
// // mapped from the kernel, not taken from malloc, and recycled through a
// // short list of idle ones. malloc would
// // spread them over one arena per thread that copied a picture, each of
// // which keeps what is freed in it, so the memory of a bounded cache grew
// // by a third; mapped buffers go back to the kernel when they are dropped.
// // 8 MiB of idle buffers (17 pictures at 640x480) spare a burst of
// // evictions and additions the mapping and zeroing of fresh pages; they
// // count beyond the picture cache's bound, so no more are kept.
// #define FRAMEFS_PIC_IDLE_MAX (8u << 20)
//
// typedef struct framefs_idle_buf {
// 	struct framefs_idle_buf *next;
// 	size_t size;
// } framefs_idle_buf;
//
// static pthread_mutex_t framefs_pic_mu = PTHREAD_MUTEX_INITIALIZER;
// static framefs_idle_buf *framefs_pic_idle; // most recently released first
// static size_t framefs_pic_idle_bytes, framefs_pic_mapped_bytes;
//
// // framefs_pic_release is the AVBuffer free callback: the buffer joins
// // the idle list, and the oldest idle buffers beyond the limit go back to
// // the kernel.
// static void framefs_pic_release(void *opaque, uint8_t *data) {
// 	size_t size = (size_t)(uintptr_t)opaque;
// 	framefs_idle_buf *b = (framefs_idle_buf *)data, *unmap = NULL;
// 	pthread_mutex_lock(&framefs_pic_mu);
// 	b->size = size;
// 	b->next = framefs_pic_idle;
// 	framefs_pic_idle = b;
// 	framefs_pic_idle_bytes += size;
// 	if (framefs_pic_idle_bytes > FRAMEFS_PIC_IDLE_MAX) {
// 		// Cut the list after the longest prefix within the limit.
// 		size_t kept = 0;
// 		framefs_idle_buf **p = &framefs_pic_idle;
// 		while (*p && kept + (*p)->size <= FRAMEFS_PIC_IDLE_MAX) {
// 			kept += (*p)->size;
// 			p = &(*p)->next;
// 		}
// 		unmap = *p;
// 		*p = NULL;
// 		framefs_pic_idle_bytes = kept;
// 	}
// 	for (framefs_idle_buf *u = unmap; u; u = u->next)
// 		framefs_pic_mapped_bytes -= u->size;
// 	pthread_mutex_unlock(&framefs_pic_mu);
// 	while (unmap) {
// 		framefs_idle_buf *next = unmap->next;
// 		munmap(unmap, unmap->size);
// 		unmap = next;
// 	}
// }
//
// // framefs_pic_get returns an idle buffer of exactly size bytes, or a new
// // mapping, or NULL.
// static uint8_t *framefs_pic_get(size_t size) {
// 	pthread_mutex_lock(&framefs_pic_mu);
// 	for (framefs_idle_buf **p = &framefs_pic_idle; *p; p = &(*p)->next) {
// 		if ((*p)->size == size) {
// 			framefs_idle_buf *b = *p;
// 			*p = b->next;
// 			framefs_pic_idle_bytes -= size;
// 			pthread_mutex_unlock(&framefs_pic_mu);
// 			return (uint8_t *)b;
// 		}
// 	}
// 	framefs_pic_mapped_bytes += size;
// 	pthread_mutex_unlock(&framefs_pic_mu);
// 	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
// 	if (m == MAP_FAILED) {
// 		pthread_mutex_lock(&framefs_pic_mu);
// 		framefs_pic_mapped_bytes -= size;
// 		pthread_mutex_unlock(&framefs_pic_mu);
// 		return NULL;
// 	}
// 	return m;
// }
//
// // framefs_pic_alloc gives the empty frame p planes for a picture of the
// // given format and size, 64-byte aligned rows in a buffer from
// // framefs_pic_get. Unless tight is NULL, *tight is set when that layout
// // is also av_image_copy_to_buffer's (rows and planes back to back, as a
// // packed picture holds them), so that the planes can be written as one
// // block.
// static int framefs_pic_alloc(void *p, int format, int width, int height, int *tight) {
// 	AVFrame *f = p;
// 	const int align = 64;
// 	int size = av_image_get_buffer_size(format, width, height, align);
// 	if (size < 0)
// 		return size;
// 	size = size < (int)sizeof(framefs_idle_buf) ? (int)sizeof(framefs_idle_buf) : size;
// 	uint8_t *data = framefs_pic_get(size);
// 	if (data == NULL)
// 		return AVERROR(ENOMEM);
// 	f->buf[0] = av_buffer_create(data, size, framefs_pic_release, (void *)(uintptr_t)size, 0);
// 	if (f->buf[0] == NULL) {
// 		framefs_pic_release((void *)(uintptr_t)size, data);
// 		return AVERROR(ENOMEM);
// 	}
// 	f->format = format;
// 	f->width = width;
// 	f->height = height;
// 	int err = av_image_fill_arrays(f->data, f->linesize, data, format, width, height, align);
// 	if (err < 0) {
// 		av_frame_unref(f);
// 		return err;
// 	}
// 	if (tight) {
// 		// Plane offsets follow from the row sizes, so equal row sizes
// 		// mean equal layouts.
// 		int rows[4];
// 		*tight = av_image_fill_linesizes(rows, format, width) >= 0;
// 		for (int i = 0; i < 4 && *tight; i++)
// 			*tight = rows[i] == f->linesize[i];
// 	}
// 	return 0;
// }
//
// // framefs_frame_copy makes the empty frame d a copy of the picture s in
// // a buffer from framefs_pic_get.
// static int framefs_frame_copy(void *d, const void *s) {
// 	AVFrame *dst = d;
// 	const AVFrame *src = s;
// 	int err = framefs_pic_alloc(dst, src->format, src->width, src->height, NULL);
// 	if (err < 0)
// 		return err;
// 	err = av_frame_copy(dst, src);
// 	if (err >= 0)
// 		err = av_frame_copy_props(dst, src);
// 	if (err < 0)
// 		av_frame_unref(dst);
// 	return err < 0 ? err : 0;
// }
//
// static void framefs_pic_stats(size_t *mapped, size_t *idle) {
// 	pthread_mutex_lock(&framefs_pic_mu);
// 	*mapped = framefs_pic_mapped_bytes;
// 	*idle = framefs_pic_idle_bytes;
// 	pthread_mutex_unlock(&framefs_pic_mu);
// }
import "C"

import (
	"errors"
	"fmt"

	"github.com/asticode/go-astiav"
)

// pictureIdleMax is how many bytes of released picture buffers are kept
// for reuse; the rest go back to the kernel.
const pictureIdleMax = C.FRAMEFS_PIC_IDLE_MAX

// copyFrame returns a copy of the picture f in a buffer of its own, not
// from the decoder's pool (see pictureCache).
func copyFrame(f *astiav.Frame) (*astiav.Frame, error) {
	c := astiav.AllocFrame()
	if c == nil {
		return nil, errors.New("decoder: copy picture: out of memory")
	}
	if ret := C.framefs_frame_copy(c.UnsafePointer(), f.UnsafePointer()); ret < 0 {
		c.Free()
		return nil, fmt.Errorf("decoder: copy picture: %w", astiav.Error(ret))
	}
	return c, nil
}

// newPictureFrame returns a frame with planes for a picture of format
// (an FFmpeg pixel format) and size, laid out as copyFrame lays them out,
// in a buffer recycled like theirs (unpacking a picture into fresh memory
// cost as much in page faults as in decompression). tight says the planes
// lie back to back as in av_image_copy_to_buffer, one block.
func newPictureFrame(format, width, height int) (f *astiav.Frame, tight bool, err error) {
	f = astiav.AllocFrame()
	if f == nil {
		return nil, false, errors.New("decoder: picture buffer: out of memory")
	}
	var t C.int
	if ret := C.framefs_pic_alloc(f.UnsafePointer(), C.int(format), C.int(width), C.int(height), &t); ret < 0 {
		f.Free()
		return nil, false, fmt.Errorf("decoder: picture buffer: %w", astiav.Error(ret))
	}
	return f, t != 0, nil
}

// pictureMemory returns the bytes of picture buffers mapped in the process
// (kept pictures, copies still referenced, idle buffers) and of those the
// idle ones.
func pictureMemory() (mapped, idle int64) {
	var m, i C.size_t
	C.framefs_pic_stats(&m, &i)
	return int64(m), int64(i)
}
