package decoder

// #include <malloc.h>
import "C"

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// FFmpeg, libx264 and libjpeg-turbo allocate with the C library's malloc.
// glibc gives each thread that allocates its own arena (up to 8 per core),
// and cgo calls run on whichever of the Go runtime's threads is free, so a
// long-running daemon spreads FFmpeg's short-lived buffers (decoder
// sessions, filter graphs, video encoders and their threads) over many
// arenas, and the memory they free stays mapped inside them: after a few
// minutes of ingesting and decoding, the resident set is hundreds of
// megabytes above what is in use. glibc's malloc_trim returns the free
// memory of every arena to the system, also free pages in the middle of
// an arena; it costs a walk of the free lists, a few milliseconds, so it
// runs after work that freed much (a video encoded, a session closed),
// once per burst of such work.

// Buffers above glibc's mmap threshold are mapped on their own and go back
// to the kernel when freed. glibc raises that threshold each time such a
// buffer is freed, up to 32 MiB, so after a while a decoder's picture
// buffers (300 KB to 3 MB) are carved out of arenas instead and their
// memory stays there. The daemon fixes the threshold at 256 KiB, which
// also turns that adjustment off: in the 2-minute write soak the peak
// anonymous memory was 244-263 MiB in five runs against 260-274 MiB in
// five without it. MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES in the environment
// take precedence.
func init() {
	if os.Getenv("MALLOC_MMAP_THRESHOLD_") == "" && os.Getenv("GLIBC_TUNABLES") == "" {
		C.mallopt(C.M_MMAP_THRESHOLD, mmapThreshold)
	}
}

// mmapThreshold is the size from which malloc maps a buffer on its own.
const mmapThreshold = 256 << 10

// trimDelay lets a burst of frees end before the trim.
const trimDelay = time.Second

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
}

// ReadCMemory returns what the C side holds now. It walks every malloc
// arena's free lists under their locks: a fraction of a millisecond, for
// .stats.
func ReadCMemory() CMemory {
	m := C.mallinfo2()
	pictures, idle := pictureMemory()
	return CMemory{MallocInUse: int64(m.uordblks + m.hblkhd), MallocFree: int64(m.fordblks), Pictures: pictures, PicturesIdle: idle}
}
