// Package cache holds framefs's in-memory caches: a byte-bounded LRU of
// immutable byte slices (encoded frame images) whose concurrent misses on
// one key run the loader once, and a detector of sequential access that
// tells a caller when and what to read ahead.
//
// The package is pure Go: it knows nothing about video, FFmpeg, FUSE or
// storage, and callers bring their own key types and loaders. It must not
// import any other framefs package.
package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// EntryOverhead is the bytes each entry is charged for besides its value:
// the LRU list element, the map slot and the slice header, roughly. It
// keeps a cache of many tiny values bounded too.
const EntryOverhead = 128

// ErrAbandoned is the error of an in-flight load whose owner gave up on it
// (see Promise). Waiters that see it retry the load themselves.
var ErrAbandoned = errors.New("cache: in-flight load abandoned")

// Cache is a byte-bounded LRU cache of byte slices. Values are shared
// between callers and must never be modified. It is safe for concurrent
// use.
//
// Values demoted with Demote form a second, colder segment: they stay
// while there is room and are evicted before any other value (least
// recently used first among themselves). A caller demotes a value that has
// done its main job but may be asked for again.
//
// Memory: the cache holds at most MaxBytes of values plus EntryOverhead per
// entry, and at any moment additionally the values of loads in flight
// (which their callers hold anyway). A value larger than MaxBytes is
// returned to its caller but not kept.
type Cache[K comparable] struct {
	mu sync.Mutex
	// maxBytes is the bound. Guarded by mu.
	maxBytes int64
	// lru holds the cached values, cold the demoted ones; a key is in
	// one of them at most. Guarded by mu.
	lru, cold *simplelru.LRU[K, []byte]
	// bytes is the charged size of the values in lru and cold. Guarded
	// by mu.
	bytes int64
	// flights holds the loads in progress. Guarded by mu.
	flights map[K]*flight
	// stats are the counters. Guarded by mu.
	stats Stats
	// onEvict, if set, is told of every value evicted to stay within
	// maxBytes (not of values removed or replaced). Called with mu held.
	onEvict func(K, []byte)
}

// flight is one load in progress. done is closed when val and err are set;
// they are not written after that.
type flight struct {
	done chan struct{}
	val  []byte
	err  error
}

// Stats counts what a cache did.
type Stats struct {
	Entries   int   // values held now
	Bytes     int64 // their charged size (values + EntryOverhead each)
	Demoted   int   // of the Entries, those in the cold segment
	Hits      int64 // Get and Load calls answered from the cache
	ColdHits  int64 // of the Hits, those answered by a demoted value
	Misses    int64 // Load calls that ran their loader
	Shared    int64 // Load calls that waited for another caller's load
	Evictions int64 // values dropped to stay within MaxBytes
}

// New returns a cache holding at most maxBytes (values plus EntryOverhead
// per entry). maxBytes <= 0 gives a cache that keeps nothing but still
// de-duplicates concurrent loads.
func New[K comparable](maxBytes int64) *Cache[K] {
	c := &Cache[K]{maxBytes: max(maxBytes, 0), flights: map[K]*flight{}}
	c.lru, c.cold = c.newSegment(), c.newSegment()
	return c
}

// newSegment returns an LRU list whose removals uncharge their values.
func (c *Cache[K]) newSegment() *simplelru.LRU[K, []byte] {
	// Entries are bounded by bytes, not count; simplelru only needs a
	// positive size.
	lru, err := simplelru.NewLRU[K, []byte](math.MaxInt, func(_ K, v []byte) {
		c.bytes -= charge(v)
	})
	if err != nil {
		panic(fmt.Sprintf("cache: %v", err)) // only for a non-positive size
	}
	return lru
}

func charge(v []byte) int64 { return int64(len(v)) + EntryOverhead }

// OnEvict sets a function told of every value the cache evicts to stay
// within its bound (not of values removed with Remove or replaced). It is
// called with the cache's lock held, so it must be quick and must not call
// the cache. Set it before the cache is used.
func (c *Cache[K]) OnEvict(fn func(k K, v []byte)) { c.onEvict = fn }

// MaxBytes returns the cache's byte limit.
func (c *Cache[K]) MaxBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxBytes
}

// SetMaxBytes changes the cache's byte limit, evicting values beyond a
// lower one (demoted values first, then the least recently used), as a
// full cache would.
func (c *Cache[K]) SetMaxBytes(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxBytes = max(n, 0)
	c.evictBeyondBound()
}

// Get returns the value cached under k and marks it recently used.
func (c *Cache[K]) Get(k K) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.get(k)
}

// get is Get with c.mu held. A demoted value stays demoted.
func (c *Cache[K]) get(k K) ([]byte, bool) {
	if v, ok := c.lru.Get(k); ok {
		c.stats.Hits++
		return v, true
	}
	if v, ok := c.cold.Get(k); ok {
		c.stats.Hits++
		c.stats.ColdHits++
		return v, true
	}
	return nil, false
}

// holds reports whether k is cached, with c.mu held.
func (c *Cache[K]) holds(k K) bool { return c.lru.Contains(k) || c.cold.Contains(k) }

// Contains reports whether k is cached or being loaded, without touching
// its recency.
func (c *Cache[K]) Contains(k K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, inFlight := c.flights[k]
	return inFlight || c.holds(k)
}

// Add caches v under k, evicting the least recently used values as needed.
func (c *Cache[K]) Add(k K, v []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.add(k, v)
}

// add is Add with c.mu held.
func (c *Cache[K]) add(k K, v []byte) {
	c.remove(k) // the callbacks uncharge an old value
	if charge(v) > c.maxBytes {
		return
	}
	c.lru.Add(k, v)
	c.bytes += charge(v)
	c.evictBeyondBound()
}

// evictBeyondBound evicts values until the cache is within maxBytes,
// with c.mu held.
func (c *Cache[K]) evictBeyondBound() {
	for c.bytes > c.maxBytes {
		k, v, ok := c.cold.RemoveOldest()
		if !ok {
			k, v, ok = c.lru.RemoveOldest()
		}
		if !ok {
			break
		}
		c.stats.Evictions++
		if c.onEvict != nil {
			c.onEvict(k, v)
		}
	}
}

// Remove drops k from the cache.
func (c *Cache[K]) Remove(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(k)
}

func (c *Cache[K]) remove(k K) {
	c.lru.Remove(k)
	c.cold.Remove(k)
}

// Demote moves k's value, if cached, to the cold segment: it will be
// evicted before every value not demoted.
func (c *Cache[K]) Demote(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.lru.Peek(k); ok {
		c.lru.Remove(k) // uncharges v
		c.cold.Add(k, v)
		c.bytes += charge(v)
	}
}

// Stats returns a snapshot of the counters.
func (c *Cache[K]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Demoted = c.cold.Len()
	st.Entries = c.lru.Len() + st.Demoted
	st.Bytes = c.bytes
	return st
}

// Load returns the value of k: from the cache, from a load of k already in
// flight (waiting for it), or by calling load and caching its result.
// Concurrent misses on one key call load once. An error is returned to the
// caller whose load failed and to those waiting for it, and is not cached;
// but a waiter whose provider failed for a reason of its own (its context
// ended, or a Promise was abandoned) loads the value itself instead. ctx
// ends the wait, and is passed to load.
func (c *Cache[K]) Load(ctx context.Context, k K, load func(context.Context) ([]byte, error)) ([]byte, error) {
	for {
		c.mu.Lock()
		if v, ok := c.get(k); ok {
			c.mu.Unlock()
			return v, nil
		}
		if f, ok := c.flights[k]; ok {
			c.stats.Shared++
			c.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if f.err == nil {
				return f.val, nil
			}
			if errors.Is(f.err, ErrAbandoned) || errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded) {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				continue // the provider's own failure: load it here
			}
			return nil, f.err
		}
		f := &flight{done: make(chan struct{})}
		c.flights[k] = f
		c.stats.Misses++
		c.mu.Unlock()
		return c.run(ctx, k, f, load)
	}
}

// Wait returns k's value if it is cached, or waits for a load of k in
// flight and returns its value. ok is false when k is neither cached nor
// loading, or its load failed or was abandoned: the caller makes the value
// another way. Unlike Load, it never loads and counts no miss.
func (c *Cache[K]) Wait(ctx context.Context, k K) (v []byte, ok bool, err error) {
	c.mu.Lock()
	if v, ok := c.get(k); ok {
		c.mu.Unlock()
		return v, true, nil
	}
	f, inFlight := c.flights[k]
	if inFlight {
		c.stats.Shared++
	}
	c.mu.Unlock()
	if !inFlight {
		return nil, false, nil
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	return f.val, f.err == nil, nil
}

// run calls load for the flight f of k and publishes the result, also when
// load panics.
func (c *Cache[K]) run(ctx context.Context, k K, f *flight, load func(context.Context) ([]byte, error)) (v []byte, err error) {
	finished := false
	defer func() {
		if !finished {
			c.finish(k, f, nil, fmt.Errorf("%w: the loader panicked", ErrAbandoned))
		}
	}()
	v, err = load(ctx)
	finished = true
	c.finish(k, f, v, err)
	return v, err
}

// finish publishes the result of flight f and caches a value.
func (c *Cache[K]) finish(k K, f *flight, v []byte, err error) {
	c.mu.Lock()
	if c.flights[k] == f {
		delete(c.flights, k)
	}
	if err == nil {
		c.add(k, v)
	}
	f.val, f.err = v, err
	c.mu.Unlock()
	close(f.done)
}

// Promise is a load of one key that its owner performs outside Load (for
// example a read-ahead that decodes several frames in one pass). While it
// is open, Load calls on the key wait for it instead of loading.
type Promise[K comparable] struct {
	c    *Cache[K]
	k    K
	f    *flight
	once sync.Once
}

// Promise registers an in-flight load of k for the caller to complete with
// Fulfil or Abandon. ok is false, and nothing is registered, when k is
// already cached or in flight. The owner must complete every promise it
// gets, or Load calls on k wait until their contexts end.
func (c *Cache[K]) Promise(k K) (p *Promise[K], ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, inFlight := c.flights[k]; inFlight || c.holds(k) {
		return nil, false
	}
	f := &flight{done: make(chan struct{})}
	c.flights[k] = f
	return &Promise[K]{c: c, k: k, f: f}, true
}

// Key returns the promised key.
func (p *Promise[K]) Key() K { return p.k }

// Fulfil completes the promise: v is cached and handed to the waiters,
// or, with err != nil, the waiters get err. Later calls do nothing.
func (p *Promise[K]) Fulfil(v []byte, err error) {
	p.once.Do(func() { p.c.finish(p.k, p.f, v, err) })
}

// Abandon completes the promise without a value; waiters load the key
// themselves. Later calls do nothing.
func (p *Promise[K]) Abandon() { p.Fulfil(nil, ErrAbandoned) }
