package cache

import (
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// CursorsPerKey is how many sequential readers of one key Readahead tells
// apart. Readers are not identified, so a key read by several readers at
// different positions (data loader workers each walking a clip of the same
// video) is followed by matching each read to the reader whose last item
// it continues.
const CursorsPerKey = 4

// sequentialRun is the number of consecutive items (N, N+1, N+2) that make
// a reader sequential.
const sequentialRun = 3

// maxStride is the largest forward step that still counts as sequential:
// two data loader workers splitting a folder read frames 0, 2, 4 and
// 1, 3, 5, often a little out of order, and together they read everything,
// so fetching ahead for them is as useful as for a single reader.
const maxStride = 2

// Readahead detects readers that walk the items of a key (the frames of a
// video) in order and says which items to fetch before they are asked for.
// It only decides; fetching is the caller's. It is safe for concurrent use.
//
// Memory: it tracks at most maxKeys keys with CursorsPerKey small cursors
// each, forgetting the least recently read keys.
type Readahead[K comparable] struct {
	window int

	mu   sync.Mutex
	keys *simplelru.LRU[K, *cursors] // guarded by mu
}

type cursors [CursorsPerKey]cursor

// cursor follows one sequential reader. last is the item it read last,
// run how many consecutive items it has read, ahead the end (exclusive) of
// what has been handed out for fetching; used orders cursors by recency.
type cursor struct {
	last, run, ahead int
	used             uint64
	valid            bool
}

// NewReadahead returns a detector that keeps up to window items fetched
// ahead of each sequential reader, following the readers of at most
// maxKeys keys.
func NewReadahead[K comparable](window, maxKeys int) *Readahead[K] {
	lru, err := simplelru.NewLRU[K, *cursors](max(maxKeys, 1), nil)
	if err != nil {
		panic(err) // only for a non-positive size
	}
	return &Readahead[K]{window: window, keys: lru}
}

// Observe records that item n of key k was read and returns the items to
// fetch ahead now, [from, to), empty (from == to) when the reader is not
// sequential or enough is fetched already. Once a reader has read three
// consecutive items, the first call returns the next window items and
// later calls top the window up in steps of at least half a window, so
// fetches come in batches rather than one item at a time. Items past the
// end of the key are the caller's to clip.
func (r *Readahead[K]) Observe(k K, n int) (from, to int) {
	if r.window <= 0 || n < 0 || n >= math.MaxInt-r.window-1 {
		return 0, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cs, ok := r.keys.Get(k)
	if !ok {
		cs = &cursors{}
		r.keys.Add(k, cs)
	}
	var clock uint64
	for i := range cs {
		clock = max(clock, cs[i].used)
	}
	clock++

	// The cursor this read continues: the one just behind it, within
	// maxStride, or one that read this very item.
	c := -1
	for i := range cs {
		if !cs[i].valid || n < cs[i].last || n-cs[i].last > maxStride {
			continue
		}
		if c < 0 || n-cs[i].last < n-cs[c].last {
			c = i
		}
	}
	if c < 0 {
		// A new reader, or a jump: replace the least recently used cursor.
		c = 0
		for i := range cs {
			if !cs[i].valid {
				c = i
				break
			}
			if cs[i].used < cs[c].used {
				c = i
			}
		}
		cs[c] = cursor{last: n, run: 1, ahead: n + 1, used: clock, valid: true}
		return 0, 0
	}
	cur := &cs[c]
	cur.used = clock
	if cur.last == n {
		return 0, 0 // a repeated read
	}
	cur.last = n
	cur.run++
	if cur.run < sequentialRun {
		return 0, 0
	}
	want := n + 1 + r.window
	cur.ahead = max(cur.ahead, n+1)
	if cur.run > sequentialRun && want-cur.ahead < (r.window+1)/2 {
		return 0, 0
	}
	from, to = cur.ahead, want
	cur.ahead = want
	return from, to
}
