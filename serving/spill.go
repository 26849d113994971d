package serving

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/framefs/framefs/media"
)

// Spilling. A shuffled epoch over a dataset larger than the image cache
// asks for a filled GOP's frames long after the fill: the cache evicts
// most of them unread, fills stop paying off, and every frame is decoded
// from its keyframe again (7.2 frames decoded per frame served with the
// frames of an epoch at 4x the cache, 0.42x the pace of decoding once).
// With Options.Spill, an image a fill made that the cache evicts before
// anyone asked for it goes to the spill store instead of being lost, and
// the request that wants it reads it from there.
//
// Siblings kept compressed or packed are spilled as the images they are:
// the writer renders a packed picture, as the request would have. A
// spill store gets nothing else: the frames of a dataset that fits the
// cache are never written, so spilling costs only where it saves the
// decoding (a 36 KB JPEG written to ext4 costs about 1 ms of CPU, a
// decode and an encode 1.6 ms). Options.Store, which keeps every image
// made for the next job on the node, writes each one instead.
//
// Writes happen on a goroutine of their own, since the cache evicts
// under its lock; evicted images wait for it in a queue bounded in bytes
// (maxSpillQueue) and in images (spillQueueLen), and one that does not
// fit is dropped and counted as wasted, as without a spill store. Fills
// make frames faster than a disk takes files (the first requests of an
// epoch each start one), so a fill waits, before it starts and before it
// adds each frame to the cache (which evicts), for the queue to be at most
// half full: the disk sets the pace, rather than drops.

// The bytes of evicted images waiting to be spilled are an eighth of the
// image cache, within these bounds: enough for what a fill evicts (29
// packed 640x480 pictures are 1.7 MB) while the queue is half full.
const (
	minSpillQueue = 4 << 20
	maxSpillQueue = 32 << 20
)

// spiller writes evicted images to the spill store in the background.
// It also counts each video's fills, for when to check its digest
// (fillsBeforeCheck).
// An image waiting in its queue is found there (get), so that a request
// for it does not decode it again.
type spiller struct {
	store    ImageStore
	queue    chan spilled
	maxBytes int64
	queued   atomic.Int64 // bytes in the queue
	// mu guards waiting, the queued images by key. A leaf lock: add takes
	// it under the cache's.
	mu      sync.Mutex
	waiting map[string]spilled
	seq     uint64 // numbers the images queued; mu held
	fills   *simplelru.LRU[media.VideoKey, int]
	// written counts the images spilled; dropped those that found the
	// queue full.
	written, dropped atomic.Int64
}

// spilled is an image to spill under its store key, or what makes it
// (a compressed image, a packed picture) and how (image).
type spilled struct {
	key   string
	value []byte
	image func([]byte) ([]byte, error) // nil: value is the image
	seq   uint64
}

// made returns the image to spill.
func (sp spilled) made() ([]byte, error) {
	if sp.image == nil {
		return sp.value, nil
	}
	return sp.image(sp.value)
}

func newSpiller(store ImageStore, cacheBytes int64) *spiller {
	maxBytes := min(max(cacheBytes/8, minSpillQueue), maxSpillQueue)
	fills, _ := simplelru.NewLRU[media.VideoKey, int](maxCountedVideos, nil)
	return &spiller{store: store, queue: make(chan spilled, spillQueueLen), maxBytes: maxBytes, waiting: map[string]spilled{}, fills: fills}
}

// maxCountedVideos bounds the videos whose fills are counted.
const maxCountedVideos = 4096

// fillsBeforeCheck is the fills of a video after which its digest is
// checked, so that its frames can be spilled: a reader that fills a
// second GOP of it is likely to read more of it. A sparse reader of a few
// frames of each of many large videos (on S3, say) does not have them
// read whole. The check also starts when a reader is first served a
// frame a fill made of the video (see Server.served): with long GOPs the
// cache may evict frames of a video's first fills before either happens,
// and those are lost as without spilling.
const fillsBeforeCheck = 2

// filled counts a fill of the video k and reports whether that makes
// fillsBeforeCheck of them.
func (s *spiller) filled(k media.VideoKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := s.fills.Get(k)
	n++
	s.fills.Add(k, n)
	return n == fillsBeforeCheck
}

// spillQueueLen bounds the images in the queue, whatever their size.
const spillQueueLen = 1024

// add queues value for the store under key: the image, or what image
// (if not nil) makes it of. It reports false, and drops it, if the queue
// is full. Called under the cache's lock: it never blocks, and image runs
// later, on the writer's goroutine or a request's. value must not change.
func (s *spiller) add(key string, value []byte, image func([]byte) ([]byte, error)) bool {
	n := int64(len(value))
	if s.queued.Add(n) > s.maxBytes {
		s.queued.Add(-n)
		s.dropped.Add(1)
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	sp := spilled{key, value, image, s.seq}
	select {
	case s.queue <- sp:
		s.waiting[key] = sp
		return true
	default:
		s.queued.Add(-n)
		s.dropped.Add(1)
		return false
	}
}

// waitRoom waits until the queue is at most half full, or ctx ends.
func (s *spiller) waitRoom(ctx context.Context) {
	for s.queued.Load() > s.maxBytes/2 || len(s.queue) > cap(s.queue)/2 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(spillPoll):
		}
	}
}

// spillPoll is how often waitRoom looks at the queue: a few writes' time.
const spillPoll = 2 * time.Millisecond

// get returns the image queued under key, if it is waiting.
func (s *spiller) get(key string) ([]byte, bool) {
	s.mu.Lock()
	sp, ok := s.waiting[key]
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	image, err := sp.made()
	return image, err == nil
}

// has reports whether an image is queued under key.
func (s *spiller) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.waiting[key]
	return ok
}

// run writes queued images until done is closed; what is still queued
// then is dropped, as a cache may.
func (s *spiller) run(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case sp := <-s.queue:
			// Never fails for what this process compressed or packed.
			image, err := sp.made()
			if err == nil {
				s.store.Put(sp.key, image)
				s.written.Add(1)
			} else {
				s.dropped.Add(1)
			}
			s.mu.Lock()
			if s.waiting[sp.key].seq == sp.seq { // not queued again since
				delete(s.waiting, sp.key)
			}
			s.mu.Unlock()
			s.queued.Add(-int64(len(sp.value)))
		}
	}
}
