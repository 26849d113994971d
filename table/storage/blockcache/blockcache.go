// Package blockcache keeps fixed-size blocks of immutable remote objects in
// files under a local directory, so repeated and sequential reads of an S3
// object cost one ranged GET per block instead of one per read.
//
// It owns the cache directory and nothing else: it knows neither S3 nor the
// table format. Callers identify an object by key, size and ETag (an object
// that is replaced gets a new ETag and so new blocks) and supply a fetch
// function for the bytes of a block. Only immutable objects may be cached.
//
// Block files end in a CRC-32C of their content; a file that fails the
// check (a torn write, a disk error, someone editing the cache) is deleted
// and fetched again, so a damaged cache costs a GET, never wrong bytes.
// Block files are opened without following links and only if they are
// regular files of the block's size, so that nothing put in the directory
// (a FIFO, a link to a device or out of the directory, a huge sparse file)
// can block a reader or make it allocate more than a block.
package blockcache

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/framefs/framefs/table/storage/internal/readruns"

	"github.com/framefs/framefs/cache/fileindex"
	"github.com/framefs/framefs/internal/regfile"
)

// Options configure a Cache. The zero value of every field means its default.
type Options struct {
	// Dir is the cache directory (created if missing). Required.
	Dir string
	// MaxBytes bounds the bytes of block files kept (default 1 GiB).
	MaxBytes int64
	// BlockSize is the size of a block (default 1 MiB). Blocks cached
	// with another size are not found and age out.
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

func (o *Options) applyDefaults() {
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
	Evictions    int64 // block files removed to stay within MaxBytes
	Corrupt      int64 // block files that failed their checksum
	Bytes        int64 // bytes of block files now cached
	Blocks       int64 // block files now cached
}

const trailerSize = 4 // CRC-32C of the block data

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Cache is a directory of cached blocks shared by every reader of a
// process. It is safe for concurrent use.
type Cache struct {
	opts Options
	// dir is the open cache directory, held for the life of the process
	// (caches are shared, never closed): block files are reached from it
	// without following a link.
	dir *regfile.Dir
	// flightMu guards flights: the fetches in progress, by block name.
	flightMu sync.Mutex
	flights  map[string]*flight
	// prefetchSlots bounds background prefetches in flight.
	prefetchSlots chan struct{}
	prefetching   sync.WaitGroup

	// mu guards files and prefetchSet.
	mu          sync.Mutex
	files       *fileindex.Index // block files, sizes with their trailer
	prefetchSet map[string]bool  // blocks a background prefetch is fetching

	hits, misses, fetches, fetched, prefetches, evictions, corrupt atomic.Int64
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

// Open opens (or creates) the cache directory and rebuilds the index from
// the block files in it, oldest first, trimming it to MaxBytes.
func Open(opts Options) (*Cache, error) {
	if opts.Dir == "" {
		return nil, errors.New("blockcache: no cache directory given")
	}
	opts.applyDefaults()
	dir, err := regfile.OpenDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("blockcache: %w", err)
	}
	c := &Cache{
		opts:          opts,
		dir:           dir,
		prefetchSlots: make(chan struct{}, 4),
		files:         fileindex.New(opts.MaxBytes),
		prefetchSet:   map[string]bool{},
		flights:       map[string]*flight{},
	}
	files, err := c.scan()
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("blockcache: scan %s: %w", opts.Dir, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].ModTime.Before(files[j].ModTime) })
	c.mu.Lock()
	for _, f := range files {
		c.files.Put(f.Name, f.Size, 0)
	}
	victims := c.evictLocked()
	c.mu.Unlock()
	c.remove(victims)
	return c, nil
}

// scan lists the block files of the directory: regular files in real
// folders named by their first two characters. Links are neither followed
// nor counted, and temporary files of interrupted writes are removed.
func (c *Cache) scan() ([]regfile.FileInfo, error) {
	var files []regfile.FileInfo
	err := c.dir.WalkShards(func(shard *regfile.Dir, f regfile.FileInfo) {
		switch {
		case strings.HasPrefix(f.Name, regfile.TempPrefix):
			shard.Remove(f.Name) // a write interrupted by a crash
		case strings.HasSuffix(f.Name, ".blk"):
			files = append(files, f)
		}
	})
	return files, err
}

// Wait waits for the background prefetches in flight to finish.
func (c *Cache) Wait() { c.prefetching.Wait() }

// Dir returns the cache directory.
func (c *Cache) Dir() string { return c.opts.Dir }

// BlockSize returns the block size.
func (c *Cache) BlockSize() int64 { return c.opts.BlockSize }

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	bytes, blocks := c.files.Bytes(), int64(c.files.Len())
	c.mu.Unlock()
	return Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Fetches: c.fetches.Load(), BytesFetched: c.fetched.Load(),
		Prefetches: c.prefetches.Load(), Evictions: c.evictions.Load(), Corrupt: c.corrupt.Load(),
		Bytes: bytes, Blocks: blocks,
	}
}

// blockName names block idx of an object; the object part is a hash so
// any key is a safe file name.
func blockName(id ObjectID, idx int64) string {
	h := sha256.Sum256([]byte(id.Key + "\x00" + strconv.FormatInt(id.Size, 10) + "\x00" + id.ETag))
	return hex.EncodeToString(h[:16]) + "-" + strconv.FormatInt(idx, 10) + ".blk"
}

// path is the block file name's path, for messages and tests.
func (c *Cache) path(name string) string {
	return filepath.Join(c.opts.Dir, name[:2], name)
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
	name := blockName(id, idx)
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

// lookup reads a cached block and checks its length and checksum; a bad
// file is removed and reported as missing.
func (c *Cache) lookup(name string, want int64) ([]byte, bool) {
	c.mu.Lock()
	ok := c.files.Touch(name)
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	raw, err := c.readBlock(name, want)
	if err == nil {
		return raw[:want], true
	}
	if regfile.IsNotExist(err) {
		// Evicted meanwhile, or deleted behind our back.
		c.forget(name)
		return nil, false
	}
	c.corrupt.Add(1)
	slog.Warn("blockcache: damaged block file removed", "file", c.path(name), "problem", err)
	c.forget(name)
	c.dir.RemoveFromShard(name)
	return nil, false
}

// readBlock reads the block file name, which must be a regular file of a
// block of want bytes and its checksum; the size is checked before
// anything is allocated.
func (c *Cache) readBlock(name string, want int64) ([]byte, error) {
	folder, err := c.dir.Shard(name, false)
	if err != nil {
		return nil, err
	}
	defer folder.Close()
	f, err := folder.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() != want+trailerSize {
		return nil, fmt.Errorf("%d bytes, want %d", st.Size(), want+trailerSize)
	}
	raw := make([]byte, want+trailerSize)
	if _, err := io.ReadFull(f, raw); err != nil {
		return nil, err
	}
	if binary.BigEndian.Uint32(raw[want:]) != crc32.Checksum(raw[:want], castagnoli) {
		return nil, errors.New("checksum mismatch")
	}
	return raw, nil
}

func (c *Cache) forget(name string) {
	c.mu.Lock()
	c.files.Forget(name)
	c.mu.Unlock()
}

// store writes a block file (temporary name, then rename) and indexes it.
// Failing to cache is not an error for the reader: it logs and goes on.
func (c *Cache) store(name string, data []byte) {
	if err := c.writeFile(name, data); err != nil {
		slog.Warn("blockcache: cannot write block", "file", c.path(name), "err", err)
		return
	}
	size := int64(len(data)) + trailerSize
	c.mu.Lock()
	c.files.Put(name, size, 0)
	victims := c.evictLocked()
	c.mu.Unlock()
	c.remove(victims)
}

func (c *Cache) writeFile(name string, data []byte) error {
	folder, err := c.dir.Shard(name, true)
	if err != nil {
		return err
	}
	defer folder.Close()
	return folder.Replace(folder, name, func(f *os.File) error {
		var sum [trailerSize]byte
		binary.BigEndian.PutUint32(sum[:], crc32.Checksum(data, castagnoli))
		if _, err := f.Write(data); err != nil {
			return err
		}
		_, err := f.Write(sum[:])
		return err
	})
}

// evictLocked drops least recently used entries until the cache fits and
// returns their names; the caller removes the files without holding mu.
func (c *Cache) evictLocked() []string {
	return c.files.Evict()
}

func (c *Cache) remove(names []string) {
	for _, name := range names {
		c.evictions.Add(1)
		c.dir.RemoveFromShard(name)
	}
}

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
		name := blockName(r.id, idx)
		r.c.mu.Lock()
		cached := r.c.files.Has(name)
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
