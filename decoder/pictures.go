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
// encoding instead of decoding from the keyframe. Entries are copies
// (about 30 µs for a 640x480 picture), not references to the decoder's
// buffers: a decoder's buffer pool never gives memory back, so a
// reference would grow the pool of every decoder that kept pictures to
// the size of the cache, and those pools would hold that memory after
// the cache let the pictures go. Only reference
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

// add keeps a copy of f under k, unless f alone may exceed the bound or k
// is kept already. A picture that cannot be copied (out of memory) is not
// kept.
func (c *pictureCache) add(k pictureKey, f *astiav.Frame) {
	// The copy's buffers are no larger than the decoder's.
	if c == nil || frameBytes(f)+pictureOverhead > c.maxBytes || c.has(k) {
		return
	}
	cp, err := copyFrame(f)
	if err != nil {
		return
	}
	size := frameBytes(cp) + pictureOverhead
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.lru.Contains(k) {
		cp.Free()
		return
	}
	for c.bytes+size > c.maxBytes && c.lru.Len() > 0 {
		c.lru.RemoveOldest()
	}
	c.lru.Add(k, cp)
	c.bytes += size
	c.added++
}

// has reports whether a picture is kept under k, without making it more
// recently used.
func (c *pictureCache) has(k pictureKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Contains(k)
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
