package decoder

import (
	"math"
	"sync"

	"github.com/asticode/go-astiav"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// pictureKey identifies one decoded picture: a presented frame of a stream.
type pictureKey struct {
	video   VideoKey
	stream  int
	ordinal int
}

// pictureOverhead is charged per picture on top of its buffers (the
// AVFrame and the cache's bookkeeping).
const pictureOverhead = 1024

// pictureCache keeps the pictures that requests which had to seek decoded
// on their way to the frame they wanted: a random reader's next request
// often falls on one of them (any frame of a GOP that a later frame needs
// as a reference), and rendering a kept picture costs a conversion and an
// encoding instead of decoding from the keyframe. Entries are references
// to the decoder's buffers, not copies, so keeping one costs no CPU; the
// decoder takes fresh buffers from its pool instead. Only reference
// pictures pass through a seeking request (the others are skipped, see
// session.send), and sequential readers, which decode without seeking,
// add nothing. Bounded in bytes, least recently used first out. Safe for
// concurrent use.
type pictureCache struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[pictureKey, *astiav.Frame]
	bytes    int64
	maxBytes int64
	hits     int
	added    int
	closed   bool // nothing is kept after close
}

// newPictureCache returns a cache of at most maxBytes, or nil (a cache
// that keeps nothing) when maxBytes <= 0.
func newPictureCache(maxBytes int64) *pictureCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &pictureCache{maxBytes: maxBytes}
	// The count limit never binds: bytes do.
	c.lru, _ = simplelru.NewLRU(math.MaxInt32, func(_ pictureKey, f *astiav.Frame) {
		c.bytes -= frameBytes(f) + pictureOverhead
		f.Free()
	})
	return c
}

// add keeps a new reference to f under k, unless f alone exceeds the
// bound or k is kept already.
func (c *pictureCache) add(k pictureKey, f *astiav.Frame) {
	if c == nil {
		return
	}
	size := frameBytes(f) + pictureOverhead
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.lru.Contains(k) {
		return
	}
	ref := f.Clone()
	if ref == nil {
		return
	}
	for c.bytes+size > c.maxBytes && c.lru.Len() > 0 {
		c.lru.RemoveOldest()
	}
	c.lru.Add(k, ref)
	c.bytes += size
	c.added++
}

// get returns a new reference to the picture kept under k, which the
// caller must Free, or nil.
func (c *pictureCache) get(k pictureKey) *astiav.Frame {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.lru.Get(k)
	if !ok {
		return nil
	}
	c.hits++
	// The clone is made under the lock, so that an eviction cannot free
	// the picture between the lookup and the new reference.
	return f.Clone()
}

// stats returns the bytes held and the counters.
func (c *pictureCache) stats() (bytes int64, added, hits int) {
	if c == nil {
		return 0, 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes, c.added, c.hits
}

// close drops every picture and keeps none from now on.
func (c *pictureCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.lru.Purge()
}
