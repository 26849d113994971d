// Package blockcache keeps fixed-size blocks of immutable remote objects on
// the local disk, so repeated and sequential reads of an S3 object cost one
// ranged GET per block instead of one per read.
//
// It knows neither S3 nor the table format. Callers identify an object by
// key, size and ETag (an object that is replaced gets a new ETag and so new
// blocks) and supply a fetch function for the bytes of a block. Only
// immutable objects may be cached. What the package adds is the reading:
// blocks fetched once however many readers miss them together, readers
// told apart by their runs of reads, sequential ones read ahead of.
//
// The blocks are entries of a diskcache.Cache (one disk LRU for every
// cache of framefs): an entry that fails its check (a torn write, a disk
// error, someone editing the cache) is deleted and the block fetched
// again, so a damaged cache costs a GET, never wrong bytes. The disk cache
// also keeps what is put in the directory (a FIFO, a link to a device or
// out of the directory, a huge sparse file) from blocking a reader or
// making it allocate more than a block.
package blockcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/framefs/framefs/cache/diskcache"
	"github.com/framefs/framefs/internal/readruns"
	"github.com/framefs/framefs/internal/regfile"
)

// Options configure a Cache. The zero value of every field means its default.
type Options struct {
	// Dir is the cache directory (created if missing). Required.
	Dir string
	// MaxBytes bounds the bytes of the blocks kept, with their entry
	// headers (default 1 GiB).
	MaxBytes int64
	// BlockSize is the size of a block (default 1 MiB). Blocks cached
	// with another size are other entries, which age out.
	BlockSize int64
	// Prefetch is how many blocks past a sequential reader's position are
	// fetched ahead in the background (default 2; negative disables). A
	// reader counts as sequential once it has read a block's worth of
	// bytes in order; shorter runs (a decoder seeking to a random frame
	// reads one GOP) prefetch nothing.
	Prefetch int
	// FetchConcurrency bounds the blocks one read fetches at once when it
	// spans several missing blocks (default 4).
	FetchConcurrency int
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 30
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 1 << 20
	}
	if o.Prefetch == 0 {
		o.Prefetch = 2
	}
	if o.FetchConcurrency <= 0 {
		o.FetchConcurrency = 4
	}
	return o
}

// ObjectID identifies one immutable version of an object.
type ObjectID struct {
	Key  string
	Size int64
	ETag string
}

// FetchFunc fills p with the object's bytes [off, off+len(p)); it returns
// an error rather than fewer bytes.
type FetchFunc func(ctx context.Context, off int64, p []byte) error

// Stats are counters since the cache was opened.
type Stats struct {
	Hits         int64 // blocks served from the cache directory
	Misses       int64 // blocks that had to be fetched (prefetches included)
	Fetches      int64 // fetch calls made
	BytesFetched int64 // bytes fetched
	Prefetches   int64 // blocks fetched ahead of a sequential reader
	Evictions    int64 // blocks removed to stay within MaxBytes
	Corrupt      int64 // blocks that failed their check
	Bytes        int64 // bytes of the block entries now cached
	Blocks       int64 // blocks now cached
}

// Cache is a directory of cached blocks shared by every reader of a
// process. It is safe for concurrent use.
type Cache struct {
	opts Options
	// flightMu guards flights: the fetches in progress, by block name.
	flightMu sync.Mutex
	flights  map[string]*flight
	// prefetchSlots bounds background prefetches in flight.
	prefetchSlots chan struct{}
	prefetching   sync.WaitGroup
	// disk holds the blocks; it has its own lock.
	disk *diskcache.Cache

	// mu guards prefetchSet.
	mu          sync.Mutex
	prefetchSet map[string]bool // blocks a background prefetch is fetching

	hits, misses, fetches, fetched, prefetches atomic.Int64
}

var (
	sharedMu sync.Mutex
	shared   = map[string]*Cache{}
)

// Shared returns the process's cache for opts.Dir, opening it on first
// use; later calls with the same directory get the same Cache (and its
// first options).
func Shared(opts Options) (*Cache, error) {
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("blockcache: %w", err)
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if c := shared[dir]; c != nil {
		return c, nil
	}
	opts.Dir = dir
	c, err := Open(opts)
	if err != nil {
		return nil, err
	}
	shared[dir] = c
	return c, nil
}

// Open opens (or creates) the cache directory, finds the blocks already
// in it and trims it to MaxBytes. The directory is private to the process
// while it is open (diskcache.Options.Private): blocks another process
// writes meanwhile are not looked for.
func Open(opts Options) (*Cache, error) {
	if opts.Dir == "" {
		return nil, errors.New("blockcache: no cache directory given")
	}
	opts = opts.withDefaults()
	if err := removeOldBlockFiles(opts.Dir); err != nil {
		return nil, fmt.Errorf("blockcache: %w", err)
	}
	// A value is a block: an entry file claiming more is refused before
	// anything of it is read.
	disk, err := diskcache.Open(diskcache.Options{
		Dir: opts.Dir, MaxBytes: opts.MaxBytes, MaxValueBytes: opts.BlockSize, Private: true, KeepPages: true,
	})
	if err != nil {
		return nil, fmt.Errorf("blockcache: %w", err)
	}
	disk.WaitScan()
	return &Cache{
		opts:          opts,
		prefetchSlots: make(chan struct{}, 4),
		disk:          disk,
		prefetchSet:   map[string]bool{},
		flights:       map[string]*flight{},
	}, nil
}

// removeOldBlockFiles removes the files of the layout before blocks were
// disk cache entries, which nothing reads any more and nothing else would
// remove: NAME.blk (the block and its CRC-32C) and the temporary files of
// writes a crash interrupted, both in the folder named by NAME's first two
// characters. They are reached as the disk cache reaches its entries,
// without following a link, so nothing put in the directory can make this
// remove a file elsewhere.
func removeOldBlockFiles(path string) error {
	dir, err := regfile.OpenDir(path)
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.WalkShards(func(shard *regfile.Dir, f regfile.FileInfo) {
		if strings.HasSuffix(f.Name, ".blk") || strings.HasPrefix(f.Name, regfile.TempPrefix) {
			shard.Remove(f.Name)
		}
	})
}

// Wait waits for the background prefetches in flight to finish.
func (c *Cache) Wait() { c.prefetching.Wait() }

// Dir returns the cache directory.
func (c *Cache) Dir() string { return c.opts.Dir }

// BlockSize returns the block size.
func (c *Cache) BlockSize() int64 { return c.opts.BlockSize }

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	d := c.disk.Stats()
	return Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Fetches: c.fetches.Load(), BytesFetched: c.fetched.Load(),
		Prefetches: c.prefetches.Load(), Evictions: d.Evictions, Corrupt: d.Corrupt,
		Bytes: d.Bytes, Blocks: d.Entries,
	}
}

// blockName is the cache key of block idx of an object: a hash of the
// object's identity (any key, short), the block size and the index, so a
// block cached with another block size is another entry.
func (c *Cache) blockName(id ObjectID, idx int64) string {
	h := sha256.Sum256([]byte(id.Key + "\x00" + strconv.FormatInt(id.Size, 10) + "\x00" + id.ETag))
	return hex.EncodeToString(h[:16]) + "-" + strconv.FormatInt(c.opts.BlockSize, 10) + "-" + strconv.FormatInt(idx, 10)
}

// blockLen is the number of object bytes in block idx.
func (c *Cache) blockLen(id ObjectID, idx int64) int64 {
	return min(c.opts.BlockSize, id.Size-idx*c.opts.BlockSize)
}

// flight is one fetch of a block, shared by every read that misses the
// block while it runs. It runs under its own context, cancelled when the
// last read waiting for it gives up: one reader's cancellation never fails
// another's read, and a fetch nobody waits for stops.
type flight struct {
	done    chan struct{} // closed when data and err are set
	data    []byte
	err     error
	waiters int // guarded by Cache.flightMu
	cancel  context.CancelFunc
}

// block returns the bytes of block idx, from the cache or fetched. It
// returns ctx's error as soon as ctx ends.
func (c *Cache) block(ctx context.Context, id ObjectID, idx int64, fetch FetchFunc) ([]byte, error) {
	name := c.blockName(id, idx)
	want := c.blockLen(id, idx)
	if data, ok := c.lookup(name, want); ok {
		c.hits.Add(1)
		return data, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.flightMu.Lock()
	f := c.flights[name]
	if f == nil {
		// The fetch keeps ctx's values, not its cancellation: other
		// readers may come to depend on it.
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		c.flights[name] = f
		go c.run(fctx, f, name, idx*c.opts.BlockSize, want, fetch)
	}
	f.waiters++
	c.flightMu.Unlock()
	select {
	case <-f.done:
		c.flightMu.Lock()
		f.waiters--
		c.flightMu.Unlock()
		return f.data, f.err
	case <-ctx.Done():
		c.flightMu.Lock()
		if f.waiters--; f.waiters == 0 {
			f.cancel()
			if c.flights[name] == f {
				delete(c.flights, name) // a later read starts afresh
			}
		}
		c.flightMu.Unlock()
		return nil, ctx.Err()
	}
}

// run fetches a block for a flight and stores it.
func (c *Cache) run(ctx context.Context, f *flight, name string, off, want int64, fetch FetchFunc) {
	defer f.cancel()
	// Another flight may have stored it since the caller looked.
	data, ok := c.lookup(name, want)
	if !ok {
		c.misses.Add(1)
		data = make([]byte, want)
		c.fetches.Add(1)
		if err := fetch(ctx, off, data); err != nil {
			data, f.err = nil, err
		} else {
			c.fetched.Add(want)
			c.store(name, data)
		}
	}
	f.data = data
	c.flightMu.Lock()
	if c.flights[name] == f {
		delete(c.flights, name)
	}
	c.flightMu.Unlock()
	close(f.done)
}

// lookup returns a cached block. The disk cache checks the entry and
// removes a damaged one; a block of another length than the object's
// cannot be under its name, and is taken for missing.
func (c *Cache) lookup(name string, want int64) ([]byte, bool) {
	data, ok := c.disk.Get(name)
	if !ok || int64(len(data)) != want {
		return nil, false
	}
	return data, true
}

// store keeps a block. Failing to cache is not an error for the reader:
// the disk cache counts and logs it.
func (c *Cache) store(name string, data []byte) { c.disk.Put(name, data) }

// Reader reads one object through the cache. It is an io.ReaderAt and is
// safe for concurrent use.
type Reader struct {
	c     *Cache
	ctx   context.Context
	id    ObjectID
	fetch FetchFunc

	mu   sync.Mutex // guards runs
	runs readruns.Set
}

// NewReader returns a reader of the object id whose missing blocks come
// from fetch. Its reads, and the prefetches they start, run under ctx and
// fail with ctx's error once it ends.
func (c *Cache) NewReader(ctx context.Context, id ObjectID, fetch FetchFunc) *Reader {
	// A read up to a quarter block before or after a run's end continues
	// it (a demuxer skipping another track's packets).
	return &Reader{c: c, ctx: ctx, id: id, fetch: fetch, runs: readruns.Set{Gap: c.opts.BlockSize / 4}}
}

// ReadAt implements io.ReaderAt.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("blockcache: %s: negative offset %d", r.id.Key, off)
	}
	if off >= r.id.Size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.id.Size-off))
	bs := r.c.opts.BlockSize
	first, last := off/bs, (off+int64(n)-1)/bs
	blocks := make([][]byte, last-first+1)
	errs := make([]error, len(blocks))
	if len(blocks) == 1 {
		blocks[0], errs[0] = r.c.block(r.ctx, r.id, first, r.fetch)
	} else {
		var wg sync.WaitGroup
		sem := make(chan struct{}, r.c.opts.FetchConcurrency)
		for i := range blocks {
			wg.Add(1)
			sem <- struct{}{}
			go func(i int) {
				defer func() { <-sem; wg.Done() }()
				blocks[i], errs[i] = r.c.block(r.ctx, r.id, first+int64(i), r.fetch)
			}(i)
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	copied := 0
	for i, b := range blocks {
		start := int64(0)
		if i == 0 {
			start = off - first*bs
		}
		copied += copy(p[copied:n], b[start:])
	}
	r.readAhead(off, off+int64(n), last)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// readAhead records the read [off, end), whose last block is last, in the
// stream it continues (or a new one, replacing the least recently used),
// and once that stream has read a block's worth of bytes in order starts
// background fetches of the blocks after last.
func (r *Reader) readAhead(off, end, last int64) {
	if r.c.opts.Prefetch < 0 {
		return
	}
	bs := r.c.opts.BlockSize
	r.mu.Lock()
	run, _ := r.runs.Read(off, end)
	sequential := run.End-run.Start >= bs
	r.mu.Unlock()
	if !sequential {
		return
	}
	nblocks := (r.id.Size + bs - 1) / bs
	for idx := last + 1; idx <= last+int64(r.c.opts.Prefetch) && idx < nblocks; idx++ {
		name := r.c.blockName(r.id, idx)
		cached := r.c.disk.Contains(name)
		r.c.mu.Lock()
		busy := r.c.prefetchSet[name]
		if !cached && !busy {
			r.c.prefetchSet[name] = true
		}
		r.c.mu.Unlock()
		if cached || busy {
			continue
		}
		select {
		case r.c.prefetchSlots <- struct{}{}:
		default:
			r.c.mu.Lock()
			delete(r.c.prefetchSet, name)
			r.c.mu.Unlock()
			return // enough in flight already
		}
		r.c.prefetches.Add(1)
		r.c.prefetching.Add(1)
		go func(idx int64) {
			defer func() {
				r.c.mu.Lock()
				delete(r.c.prefetchSet, name)
				r.c.mu.Unlock()
				<-r.c.prefetchSlots
				r.c.prefetching.Done()
			}()
			_, _ = r.c.block(r.ctx, r.id, idx, r.fetch)
		}(idx)
	}
}
