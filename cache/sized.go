package cache

import (
	"fmt"
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Sized is a least-recently-used cache of values of any type, bounded by
// the sizes its caller gives them (their real or carefully estimated memory)
// plus EntryOverhead each, and optionally by a number of entries. It is for
// decoded metadata (manifests, an episode's rows, frame size tables) whose
// size only the caller can tell; Cache is the one for byte slices. A value
// larger than the bound is not kept. It is safe for concurrent use.
type Sized[K comparable, V any] struct {
	maxBytes int64

	mu sync.Mutex
	// lru holds the values with their charged sizes. Guarded by mu.
	lru *simplelru.LRU[K, sizedEntry[V]]
	// bytes is the charged size of the values in lru. Guarded by mu.
	bytes int64
}

type sizedEntry[V any] struct {
	v      V
	charge int64
}

// NewSized returns a cache holding at most maxBytes (sizes plus
// EntryOverhead per entry) in at most maxEntries values (0: no count
// bound). onRemove, if not nil, is told of every value that leaves the
// cache (evicted, replaced, removed or purged), with the cache's lock held:
// it must be quick and must not call the cache.
func NewSized[K comparable, V any](maxBytes int64, maxEntries int, onRemove func(K, V)) *Sized[K, V] {
	c := &Sized[K, V]{maxBytes: max(maxBytes, 0)}
	if maxEntries <= 0 {
		maxEntries = math.MaxInt
	}
	lru, err := simplelru.NewLRU[K, sizedEntry[V]](maxEntries, func(k K, e sizedEntry[V]) {
		c.bytes -= e.charge
		if onRemove != nil {
			onRemove(k, e.v)
		}
	})
	if err != nil {
		panic(fmt.Sprintf("cache: %v", err)) // only for a non-positive size
	}
	c.lru = lru
	return c
}

// Get returns the value cached under k and marks it recently used.
func (c *Sized[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(k)
	return e.v, ok
}

// Add caches v, of size bytes, under k as the most recently used value,
// evicting the least recently used ones beyond the bounds. It reports
// whether v was kept: a value larger than the whole bound is not (and an
// older value under k is dropped).
func (c *Sized[K, V]) Add(k K, v V, size int64) bool { return c.add(k, v, size, false) }

// AddOwned is Add for a value the cache must own once added, such as an
// open file that onRemove closes: it is kept even when it alone exceeds
// the bound (the others are evicted), until a later value evicts it.
func (c *Sized[K, V]) AddOwned(k K, v V, size int64) { c.add(k, v, size, true) }

func (c *Sized[K, V]) add(k K, v V, size int64, owned bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	charge := max(size, 0) + EntryOverhead
	c.lru.Remove(k) // the callback uncharges an old value
	if charge > c.maxBytes && !owned {
		return false
	}
	c.lru.Add(k, sizedEntry[V]{v: v, charge: charge})
	c.bytes += charge
	for c.bytes > c.maxBytes && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
	return true
}

// Recharge sets the size of the value cached under k, if there is one,
// and marks it recently used, evicting the least recently used others
// beyond the bounds: for a value whose size is known only after it was
// added (a value alone over the bound stays until another evicts it).
func (c *Sized[K, V]) Recharge(k K, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Peek(k)
	if !ok {
		return
	}
	charge := max(size, 0) + EntryOverhead
	c.bytes += charge - e.charge
	e.charge = charge
	c.lru.Add(k, e)
	for c.bytes > c.maxBytes && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

// Remove drops k from the cache.
func (c *Sized[K, V]) Remove(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k)
}

// Purge drops every value.
func (c *Sized[K, V]) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Purge()
}

// Len returns the number of values held; Bytes their charged size; MaxBytes
// the bound.
func (c *Sized[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

func (c *Sized[K, V]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

func (c *Sized[K, V]) MaxBytes() int64 { return c.maxBytes }
