package decoder

/*
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// FFmpeg, libx264 and libjpeg-turbo allocate with the C library's malloc.
// glibc gives each thread that allocates an arena of its own (up to 8 per
// core), and cgo calls run on whichever of the Go runtime's threads is
// free, so a long-running daemon would spread FFmpeg's short-lived buffers
// (decoder sessions, filter graphs, video encoders and their threads) over
// many arenas, where the memory freed in one serves no allocation made in
// another. The daemon keeps malloc to one arena. In a read-only mount
// following a table for 10 minutes, malloc's freed memory grew from 9 to
// 16-22 MiB with the arenas glibc chose, and stayed at 0.5-1.3 MiB with
// one; anonymous memory less the caches grew by 4.8 MiB instead of 7.5
// MiB. A shuffled epoch served frames as fast: the arena's lock is taken
// only by allocations that glibc's per-thread caches do not serve. The
// bound is set when the program is loaded: set from a Go init, it came
// after the Go runtime had started threads that took arenas of their own,
// and four were in use.
//
// Buffers above glibc's mmap threshold are mapped on their own and go back
// to the kernel when freed. glibc raises that threshold each time such a
// buffer is freed, up to 32 MiB, so after a while a decoder's picture
// buffers (300 KB to 3 MB) would be carved out of the arena instead and
// their memory stay there. The daemon fixes the threshold at 256 KiB,
// which also turns that adjustment off: in the 2-minute write soak the
// peak anonymous memory was 244-263 MiB in five runs against 260-274 MiB
// in five without it.
//
// MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES in the
// environment take precedence.
__attribute__((constructor)) static void framefs_malloc_setup(void) {
	if (getenv("GLIBC_TUNABLES") != NULL) {
		return;
	}
	if (getenv("MALLOC_ARENA_MAX") == NULL) {
		mallopt(M_ARENA_MAX, 1);
	}
	if (getenv("MALLOC_MMAP_THRESHOLD_") == NULL) {
		mallopt(M_MMAP_THRESHOLD, 256 << 10);
	}
}

// framefs_malloc_arenas counts malloc's arenas in malloc_info's report,
// -1 if it cannot be had.
static int framefs_malloc_arenas(void) {
	char *report = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&report, &size);
	if (f == NULL) {
		return -1;
	}
	int err = malloc_info(0, f);
	fclose(f);
	int n = 0;
	for (char *p = report; err == 0 && (p = strstr(p, "<heap nr=")) != NULL; p++) {
		n++;
	}
	free(report);
	return err == 0 ? n : -1;
}
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"time"
)

// trimDelay lets a burst of frees end before the trim.
const trimDelay = time.Second

// trimmer runs glibc's malloc_trim, which returns the free memory of the
// arena to the system, also free pages in the middle of it. It costs a
// walk of the free lists, a few milliseconds, so it runs after work that
// freed much (a video encoded, a session closed), once per burst of such
// work.
var trimmer struct {
	mu    sync.Mutex
	timer *time.Timer // pending trim, nil when none
	done  atomic.Int64
}

// releaseFreedMemory schedules a malloc_trim trimDelay from now, unless
// one is already pending.
func releaseFreedMemory() {
	trimmer.mu.Lock()
	defer trimmer.mu.Unlock()
	if trimmer.timer == nil {
		trimmer.timer = time.AfterFunc(trimDelay, trimNow)
	}
}

func trimNow() {
	trimmer.mu.Lock()
	trimmer.timer = nil
	trimmer.mu.Unlock()
	C.malloc_trim(0)
	trimmer.done.Add(1)
}

// MemoryTrims returns how many times the C heap was trimmed.
func MemoryTrims() int64 { return trimmer.done.Load() }

// CMemory is the memory FFmpeg and libjpeg-turbo hold outside the Go
// runtime.
type CMemory struct {
	// MallocInUse is allocated with malloc and not freed, in arenas and
	// mapped on its own; MallocFree is freed but still in the arenas
	// (whether trimmed pages of it are resident, malloc does not say).
	MallocInUse, MallocFree int64
	// Pictures is the memory mapped for picture buffers (picbuf.go): kept
	// pictures, pictures unpacked for rendering, and PicturesIdle, the idle
	// buffers kept for reuse.
	Pictures, PicturesIdle int64
	// Arenas is how many arenas malloc has made (one unless the
	// environment chose otherwise), -1 if it does not say.
	Arenas int
}

// ReadCMemory returns what the C side holds now. It walks every malloc
// arena's free lists under their locks, twice: a fraction of a
// millisecond, for .stats.
func ReadCMemory() CMemory {
	m := C.mallinfo2()
	pictures, idle := pictureMemory()
	return CMemory{MallocInUse: int64(m.uordblks + m.hblkhd), MallocFree: int64(m.fordblks), Pictures: pictures, PicturesIdle: idle,
		Arenas: int(C.framefs_malloc_arenas())}
}
