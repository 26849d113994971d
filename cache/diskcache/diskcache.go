// Package diskcache keeps byte values in files under a local directory,
// bounded in bytes and evicted least recently used: framefs's one disk
// LRU. It is the disk tier under the memory cache of encoded frame images
// (a training node's local disk holds far more frames than its memory,
// and what one job made serves the next job on the node), and it holds
// the blocks of S3 objects that package blockcache reads.
//
// Keys are strings that name everything that makes a value's bytes, so an
// entry is valid for as long as it exists, across restarts and for every
// process using the directory. Several processes may share one directory:
// entries are written under a temporary name and renamed into place, so a
// reader sees a whole entry or none; each entry carries its key and a
// CRC-32C, and one that fails the check (a torn write, a disk error,
// someone editing the cache) is deleted and reported missing, never
// returned.
//
// What is in the directory is not trusted: entry files are opened without
// following links and only if they are regular files (a FIFO would block
// the reader, a link could lead out of the directory), the size a header
// claims is checked against the file and against MaxValueBytes before
// anything is allocated, and an entry that does not hold the key it is
// named after is removed like a damaged one.
//
// Each process bounds the directory from what it knows: the entries it
// found when it opened the directory, rescanned after it has written an
// eighth of the bound (unless Options.Private), plus its own. Processes
// sharing a directory can overshoot the bound by what the others wrote
// since the last rescan.
//
// The package is pure Go and knows nothing of what it stores.
package diskcache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/framefs/framefs/cache/fileindex"
	"github.com/framefs/framefs/internal/regfile"
)

// Options configure a Cache. Zero values mean the defaults.
type Options struct {
	// Dir is the cache directory, created if missing. Required.
	Dir string
	// MaxBytes bounds the bytes of the entry files (default 10 GiB).
	MaxBytes int64
	// MaxValueBytes bounds one value (default DefaultMaxValueBytes, and
	// never more than MaxBytes). A larger value is not stored, and an
	// entry file whose header claims one is removed before anything of
	// it is read: a file planted in the directory cannot make a reader
	// allocate more than this.
	MaxValueBytes int64
	// Private says that only this process uses the directory while the
	// cache is open: it is scanned once, when the cache opens, and an
	// entry the cache does not know of is not looked for on disk. Without
	// it, entries other processes write are found when they are asked
	// for, and the directory is scanned again each time this process has
	// written an eighth of MaxBytes.
	Private bool
	// KeepPages leaves the pages of the entries read and written in the
	// kernel's page cache. By default they are dropped: the encoded frames
	// of the disk tier go on to the mount, whose page cache keeps them.
	KeepPages bool
}

// DefaultMaxBytes is the bound of a cache opened without one.
const DefaultMaxBytes = 10 << 30

// DefaultMaxValueBytes is the value bound of a cache opened without one:
// an 8K frame (7680x4320) as PPM or BMP, the largest of the image formats,
// is 100 MB.
const DefaultMaxValueBytes = 128 << 20

// Stats are counters since the cache was opened, and its size.
type Stats struct {
	Hits      int64 // Get calls answered
	Misses    int64 // Get calls not answered
	Writes    int64 // entries written
	Evictions int64 // entries removed to stay within MaxBytes
	Corrupt   int64 // entries that failed their check and were removed
	Errors    int64 // writes that failed (full disk, permissions)
	Bytes     int64 // bytes of the entries known now
	Entries   int64 // entries known now
}

// Entry file layout: a header, the key, the value.
//
//	magic    [4]byte "FDC1"
//	keyLen   uint32 big endian
//	valueLen uint64 big endian
//	crc      uint32 big endian, CRC-32C of key and value
//	key      [keyLen]byte
//	value    [valueLen]byte
const (
	magic      = "FDC1"
	headerSize = 4 + 4 + 8 + 4
	// maxKeyLen bounds a key, so that a damaged header cannot make a
	// reader allocate much.
	maxKeyLen = 4096
	// entryExt names entry files, which are in a folder named by the
	// first two characters of their name; temporary files start with
	// tmpPrefix and are in tmpDir.
	entryExt  = ".ent"
	tmpPrefix = regfile.TempPrefix
	tmpDir    = "tmp"
	// staleTemp is the age after which a temporary file is taken for a
	// crashed writer's and removed.
	staleTemp = 10 * time.Minute
	// touchAfter is how old an entry's modification time must be before
	// a hit renews it: the time is what orders entries for other
	// processes, and renewing it on every hit would write to the disk on
	// every read.
	touchAfter = 10 * time.Minute
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Cache is an open cache directory. It is safe for concurrent use.
type Cache struct {
	opts Options
	// dir is the open cache directory: every entry is reached from it
	// without following a link.
	dir *regfile.Dir

	// mu guards files, scanning, removed and written.
	mu      sync.Mutex
	files   *fileindex.Index[digest]
	written int64 // bytes written since the last scan
	// scanning is set while a scan of the directory runs; eviction waits
	// for it, since the bytes are not known until then.
	scanning bool
	scanned  chan struct{} // closed when the current scan ends
	// removed holds, while a scan runs, the entries this process found
	// gone or removed since the scan began: the scan may have listed
	// their files before, and must not index them again (Put would then
	// take the entry for stored and skip it).
	removed map[string]bool
	// epoch counts scans; an entry indexed before the current scan began
	// and not found by it was removed by another process.
	epoch  uint64
	closed bool

	hits, misses, writes, evictions, corrupt, errs atomic.Int64
}

// Open opens (or creates) a cache directory. The entries already in it are
// found by a scan in the background; until it ends, Get and Contains find
// them on disk all the same.
func Open(opts Options) (*Cache, error) {
	if opts.Dir == "" {
		return nil, errors.New("diskcache: no directory given")
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxValueBytes <= 0 {
		opts.MaxValueBytes = DefaultMaxValueBytes
	}
	opts.MaxValueBytes = min(opts.MaxValueBytes, opts.MaxBytes)
	path, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("diskcache: %w", err)
	}
	opts.Dir = path
	dir, err := regfile.OpenDir(path)
	if err != nil {
		return nil, fmt.Errorf("diskcache: %w", err)
	}
	tmp, err := dir.Sub(tmpDir, true)
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("diskcache: %w", err)
	}
	tmp.Close()
	c := &Cache{opts: opts, dir: dir, files: fileindex.New[digest](opts.MaxBytes)}
	c.startScan()
	return c, nil
}

// Dir returns the cache directory.
func (c *Cache) Dir() string { return c.opts.Dir }

// MaxBytes returns the bound.
func (c *Cache) MaxBytes() int64 { return c.opts.MaxBytes }

// Close waits for a scan in progress; the cache must not be used after.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.WaitScan()
	return c.dir.Close()
}

// WaitScan waits for the scan of the directory in progress, if any (the
// one Open starts, or a rescan): once it returns, the entries other
// processes wrote before the scan began are known, and the cache has
// been trimmed to its bound.
func (c *Cache) WaitScan() {
	c.mu.Lock()
	ch := c.scanned
	c.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	bytes, entries := c.files.Bytes(), int64(c.files.Len())
	c.mu.Unlock()
	return Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Writes: c.writes.Load(), Evictions: c.evictions.Load(),
		Corrupt: c.corrupt.Load(), Errors: c.errs.Load(), Bytes: bytes, Entries: entries,
	}
}

// fileName names the entry of key: a hash, so that any key is a safe name.
func fileName(key string) string {
	h := sha256.Sum256([]byte(key))
	return nameOf(digest(h[:20]))
}

// digest is what an entry file's name encodes: the first 20 bytes of its
// key's SHA-256. The index keeps digests rather than names, 20 bytes
// against a 44-byte string and its pointer.
type digest [20]byte

// nameOf returns the entry file name of d.
func nameOf(d digest) string { return hex.EncodeToString(d[:]) + entryExt }

// digestOf returns the digest an entry file name encodes; ok is false for
// a name fileName does not make (a file the cache did not write).
func digestOf(name string) (d digest, ok bool) {
	if len(name) != 2*len(d)+len(entryExt) || !strings.HasSuffix(name, entryExt) {
		return d, false
	}
	if _, err := hex.Decode(d[:], []byte(name[:2*len(d)])); err != nil || nameOf(d) != name {
		return d, false
	}
	return d, true
}

// indexKey is the index's name of an entry file name that fileName made.
func indexKey(name string) digest {
	d, _ := digestOf(name)
	return d
}

// path is the entry file name's path, for messages and tests.
func (c *Cache) path(name string) string {
	return filepath.Join(c.opts.Dir, name[:2], name)
}

// EntryFile returns the path of the file that holds key's entry, which
// may not exist: for tests and tools that look into the directory.
func (c *Cache) EntryFile(key string) string { return c.path(fileName(key)) }

// Get returns the value stored under key, checked.
func (c *Cache) Get(key string) ([]byte, bool) {
	name := fileName(key)
	if c.opts.Private {
		// Only entries the index holds exist: looking for others would
		// find the file of an entry being evicted and index it again.
		c.mu.Lock()
		known := c.files.Touch(indexKey(name))
		c.mu.Unlock()
		if !known {
			c.misses.Add(1)
			return nil, false
		}
	}
	v, size, ok := c.read(name, key)
	if !ok {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	c.mu.Lock()
	if !c.files.Touch(indexKey(name)) {
		// Written by another process.
		c.files.Put(indexKey(name), size, c.epoch)
	}
	c.mu.Unlock()
	return v, true
}

// read reads and checks the entry file name for key. Anything at the
// name that is not a whole entry for key is removed.
func (c *Cache) read(name, key string) (value []byte, size int64, ok bool) {
	miss := func(err error) ([]byte, int64, bool) {
		if !regfile.IsNotExist(err) {
			slog.Warn("diskcache: cannot read an entry", "file", c.path(name), "err", err)
		}
		c.forget(name)
		return nil, 0, false
	}
	folder, err := c.dir.Shard(name, false)
	if err != nil {
		// A link where the folder belongs is not followed; Put
		// replaces it.
		return miss(err)
	}
	defer folder.Close()
	bad := func(why string) ([]byte, int64, bool) {
		c.corrupt.Add(1)
		slog.Warn("diskcache: damaged entry removed", "file", c.path(name), "problem", why)
		c.forget(name)
		folder.Remove(name)
		return nil, 0, false
	}
	f, err := folder.Open(name)
	if errors.Is(err, regfile.ErrNotRegular) {
		return bad(err.Error())
	}
	if err != nil {
		return miss(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return miss(err)
	}
	size = st.Size()
	if size < headerSize {
		return bad("shorter than its header")
	}
	var hdr [headerSize]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return bad(err.Error())
	}
	keyLen := int64(binary.BigEndian.Uint32(hdr[4:]))
	valueLen := binary.BigEndian.Uint64(hdr[8:])
	switch {
	case string(hdr[:4]) != magic:
		return bad("bad magic")
	case keyLen != int64(len(key)):
		return bad(fmt.Sprintf("holds a key of %d bytes, not the %d of the key it is named after", keyLen, len(key)))
	case valueLen > uint64(c.opts.MaxValueBytes):
		return bad(fmt.Sprintf("claims a value of %d bytes, more than the %d a value may have", valueLen, c.opts.MaxValueBytes))
	case valueLen != uint64(size-headerSize-keyLen):
		return bad(fmt.Sprintf("claims a value of %d bytes in a file of %d", valueLen, size))
	}
	buf := make([]byte, keyLen+int64(valueLen))
	if _, err := f.ReadAt(buf, headerSize); err != nil {
		return bad(err.Error())
	}
	if crc32.Checksum(buf, castagnoli) != binary.BigEndian.Uint32(hdr[16:]) {
		return bad("checksum mismatch")
	}
	if string(buf[:keyLen]) != key {
		// Entries are named after a hash of their key, so this one is
		// found under no key: it was moved or copied here.
		return bad("holds the entry of another key")
	}
	if !c.opts.KeepPages {
		// The value goes on to a caller that keeps it (the kernel's page
		// cache of a mount): the cache file's pages are not needed twice.
		_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	}
	if time.Since(st.ModTime()) > touchAfter {
		_ = folder.Touch(name)
	}
	return buf[keyLen:], size, true
}

// Contains reports whether an entry for key exists, without reading it.
func (c *Cache) Contains(key string) bool {
	name := fileName(key)
	c.mu.Lock()
	known := c.files.Has(indexKey(name))
	c.mu.Unlock()
	if known || c.opts.Private {
		return known
	}
	folder, err := c.dir.Shard(name, false)
	if err != nil {
		return false
	}
	defer folder.Close()
	_, err = folder.Stat(name)
	return err == nil
}

// Put stores value under key, unless an entry for it exists. A failure to
// write (a full disk) is counted and logged, not returned: the cache is an
// optimisation.
func (c *Cache) Put(key string, value []byte) {
	if len(key) > maxKeyLen || int64(len(value)) > c.opts.MaxValueBytes {
		return
	}
	name := fileName(key)
	c.mu.Lock()
	known := c.files.Has(indexKey(name))
	c.mu.Unlock()
	if known {
		return
	}
	size, err := c.write(name, key, value)
	if err != nil {
		c.errs.Add(1)
		slog.Debug("diskcache: cannot write an entry", "dir", c.opts.Dir, "err", err)
		return
	}
	c.writes.Add(1)
	c.mu.Lock()
	c.files.Put(indexKey(name), size, c.epoch)
	c.written += size
	rescan := !c.scanning && !c.opts.Private && c.written > c.opts.MaxBytes/8
	victims := c.evictLocked()
	c.mu.Unlock()
	c.remove(victims)
	if rescan {
		c.startScan()
	}
}

// write writes an entry file under a temporary name and renames it into
// place, so that readers in any process see all of it or nothing.
func (c *Cache) write(name, key string, value []byte) (int64, error) {
	folder, err := c.dir.Shard(name, true)
	if err != nil {
		return 0, err
	}
	defer folder.Close()
	tmp, err := c.dir.Sub(tmpDir, true)
	if err != nil {
		return 0, err
	}
	defer tmp.Close()
	buf := make([]byte, headerSize, headerSize+len(key)+len(value))
	copy(buf, magic)
	binary.BigEndian.PutUint32(buf[4:], uint32(len(key)))
	binary.BigEndian.PutUint64(buf[8:], uint64(len(value)))
	buf = append(append(buf, key...), value...)
	binary.BigEndian.PutUint32(buf[16:], crc32.Checksum(buf[headerSize:], castagnoli))
	err = folder.Replace(tmp, name, func(f *os.File) error {
		if _, err := f.Write(buf); err != nil {
			return err
		}
		if !c.opts.KeepPages {
			// Start writing the pages back and let the clean ones go:
			// the value is about to be served from memory, not from
			// this file.
			_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return int64(len(buf)), nil
}

func (c *Cache) forget(name string) {
	c.mu.Lock()
	c.files.Forget(indexKey(name))
	if c.scanning {
		c.removed[name] = true
	}
	c.mu.Unlock()
}

// evictLocked drops least recently used entries until the cache fits and
// returns their names; the caller removes the files without holding mu.
// Nothing is evicted while a scan runs: the total is not known yet.
func (c *Cache) evictLocked() []digest {
	if c.scanning {
		return nil
	}
	return c.files.Evict()
}

func (c *Cache) remove(victims []digest) {
	for _, d := range victims {
		c.evictions.Add(1)
		c.dir.RemoveFromShard(nameOf(d))
	}
}

// startScan scans the directory in the background, unless a scan is
// running or the cache is closed.
func (c *Cache) startScan() {
	epoch, done, ok := c.beginScan()
	if !ok {
		return
	}
	go func() {
		defer close(done)
		c.scan(epoch)
	}()
}

// beginScan marks a scan begun and returns its epoch and the channel to
// close when it ends; ok is false if a scan runs or the cache is closed.
func (c *Cache) beginScan() (epoch uint64, done chan struct{}, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scanning || c.closed {
		return 0, nil, false
	}
	c.scanning = true
	c.removed = map[string]bool{}
	c.written = 0
	c.epoch++
	done = make(chan struct{})
	c.scanned = done
	return c.epoch, done, true
}

// scan indexes every entry file in the directory (what other processes
// wrote too), oldest first behind what this process used, forgets entries
// removed by others, removes temporary files of crashed writers, and
// evicts down to the bound. epoch is the scan's. Only regular files in
// real folders are indexed: links are neither followed nor counted.
func (c *Cache) scan(epoch uint64) {
	c.index(c.listEntries(), epoch)
}

// listEntries lists the entry files in the directory and removes stale
// temporary files.
func (c *Cache) listEntries() []regfile.FileInfo {
	var files []regfile.FileInfo
	_ = c.dir.WalkShards(func(_ *regfile.Dir, f regfile.FileInfo) {
		if strings.HasSuffix(f.Name, entryExt) {
			files = append(files, f)
		}
	})
	if tmp, err := c.dir.Sub(tmpDir, false); err == nil {
		entries, _ := tmp.Entries()
		for _, e := range entries {
			if info, err := tmp.Stat(e.Name); err == nil && strings.HasPrefix(e.Name, tmpPrefix) && time.Since(info.ModTime) > staleTemp {
				tmp.Remove(e.Name)
			}
		}
		tmp.Close()
	}
	return files
}

// index ends the scan of epoch: it indexes the files listed, less those
// removed since, and evicts down to the bound.
func (c *Cache) index(files []regfile.FileInfo, epoch uint64) {
	sort.Slice(files, func(i, j int) bool { return files[i].ModTime.After(files[j].ModTime) })
	onDisk := make(map[digest]bool, len(files))
	c.mu.Lock()
	for _, f := range files {
		d, ok := digestOf(f.Name)
		if !ok || c.removed[f.Name] {
			// Not a name the cache gives its entries: not its file.
			continue
		}
		onDisk[d] = true
		c.files.PutOldest(d, f.Size, epoch)
	}
	c.files.ForgetMissing(onDisk, epoch)
	c.scanning = false
	c.removed = nil
	victims := c.evictLocked()
	c.mu.Unlock()
	c.remove(victims)
}
