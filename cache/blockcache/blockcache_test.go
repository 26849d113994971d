package blockcache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// source is an in-memory object with a fetch function that counts calls.
type source struct {
	data  []byte
	calls atomic.Int64
	delay time.Duration
	fail  atomic.Bool
}

func newSource(n int, seed uint64) *source {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return &source{data: b}
}

func (s *source) fetch(ctx context.Context, off int64, p []byte) error {
	s.calls.Add(1)
	time.Sleep(s.delay)
	if s.fail.Load() {
		return errors.New("source down")
	}
	if off+int64(len(p)) > int64(len(s.data)) {
		return fmt.Errorf("fetch past the end: %d+%d", off, len(p))
	}
	copy(p, s.data[off:])
	return nil
}

func (s *source) id(key string) ObjectID {
	return ObjectID{Key: key, Size: int64(len(s.data)), ETag: "e1"}
}

// blockEntry is about the size of the file of a 4 KiB block: the block,
// its key and the disk cache's entry header.
const blockEntry = 4096 + 64

func checkRead(t *testing.T, r io.ReaderAt, src *source, off int64, n int) {
	t.Helper()
	buf := make([]byte, n)
	got, err := r.ReadAt(buf, off)
	want := min(n, len(src.data)-int(off))
	if got != want || (got < n && err != io.EOF) || (got == n && err != nil) {
		t.Fatalf("ReadAt(%d, %d) = %d, %v; want %d", n, off, got, err, want)
	}
	if !bytes.Equal(buf[:got], src.data[off:off+int64(got)]) {
		t.Fatalf("ReadAt(%d, %d): wrong bytes", n, off)
	}
}

func TestReadsAndEviction(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(Options{Dir: dir, BlockSize: 4096, MaxBytes: 10 * blockEntry, Prefetch: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Wait)
	src := newSource(100*4096+77, 1)
	r := c.NewReader(context.Background(), src.id("a"), src.fetch)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 300; i++ {
		checkRead(t, r, src, rng.Int64N(int64(len(src.data))), 1+rng.IntN(3*4096))
		if st := c.Stats(); st.Bytes > 10*blockEntry {
			t.Fatalf("cache holds %d bytes, limit %d", st.Bytes, 10*blockEntry)
		}
	}
	checkRead(t, r, src, int64(len(src.data))-10, 100) // short read at the end
	st := c.Stats()
	if st.Evictions == 0 || st.Hits == 0 {
		t.Fatalf("stats %+v", st)
	}
	var files, bytesOnDisk int64
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files++
			bytesOnDisk += info.Size()
		}
		return nil
	})
	if bytesOnDisk > 10*blockEntry || files != st.Blocks {
		t.Fatalf("%d files, %d bytes on disk; index says %d blocks", files, bytesOnDisk, st.Blocks)
	}
	// A new Cache on the directory finds the blocks again: no fetches.
	c2, err := Open(Options{Dir: dir, BlockSize: 4096, MaxBytes: 10 * blockEntry, Prefetch: -1})
	if err != nil {
		t.Fatal(err)
	}
	if c2.Stats().Blocks != st.Blocks {
		t.Fatalf("reopened with %d blocks, had %d", c2.Stats().Blocks, st.Blocks)
	}
	before := src.calls.Load()
	r2 := c2.NewReader(context.Background(), src.id("a"), src.fetch)
	checkRead(t, r2, src, int64(len(src.data))-10, 10)
	if src.calls.Load() != before {
		t.Fatal("a block cached before the restart was fetched again")
	}
	// A smaller limit on reopen trims the directory.
	c3, err := Open(Options{Dir: dir, BlockSize: 4096, MaxBytes: 3 * blockEntry})
	if err != nil || c3.Stats().Bytes > 3*blockEntry {
		t.Fatalf("reopen with a smaller limit: %+v %v", c3.Stats(), err)
	}
}

// TestOldBlockFilesRemoved: the block files of the layout before blocks
// were disk cache entries, and the temporary files of its interrupted
// writes, are removed when the cache opens; the entries stay, and so does
// what a folder linked out of the directory holds.
func TestOldBlockFilesRemoved(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	c, err := Open(Options{Dir: dir, BlockSize: 4096, Prefetch: -1})
	if err != nil {
		t.Fatal(err)
	}
	src := newSource(4096, 8)
	checkRead(t, c.NewReader(context.Background(), src.id("k"), src.fetch), src, 0, 4096)
	old := []string{filepath.Join(dir, "ab", "abcdef-0.blk"), filepath.Join(dir, "ab", ".tmp-0123456789abcdef")}
	if err := os.MkdirAll(filepath.Dir(old[0]), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range old {
		if err := os.WriteFile(p, make([]byte, 4100), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	elsewhere := filepath.Join(outside, "cdef01-0.blk")
	if os.WriteFile(elsewhere, nil, 0o600) != nil || os.Symlink(outside, filepath.Join(dir, "cd")) != nil {
		t.Fatal("cannot plant the linked folder")
	}
	c2, err := Open(Options{Dir: dir, BlockSize: 4096, Prefetch: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range old {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("an old file is still there: %v", err)
		}
	}
	if _, err := os.Stat(elsewhere); err != nil {
		t.Errorf("a file in a folder linked outside was removed: %v", err)
	}
	before := src.calls.Load()
	checkRead(t, c2.NewReader(context.Background(), src.id("k"), src.fetch), src, 0, 4096)
	if src.calls.Load() != before || c2.Stats().Blocks != 1 {
		t.Errorf("the cached block was lost: %d fetches, %+v", src.calls.Load()-before, c2.Stats())
	}
}

func TestSingleflight(t *testing.T) {
	c, err := Open(Options{Dir: t.TempDir(), BlockSize: 1 << 16, Prefetch: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Wait)
	src := newSource(1<<16, 2)
	src.delay = 50 * time.Millisecond
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := c.NewReader(context.Background(), src.id("k"), src.fetch)
			checkRead(t, r, src, int64(i*100), 1000)
		}(i)
	}
	wg.Wait()
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("16 concurrent misses of one block made %d fetches", n)
	}
}

// TestCancelledReader: a reader whose context ends gets its error at
// once, while a fetch it shared goes on for the other reader waiting for
// it; a fetch that every waiting reader gave up is cancelled.
func TestCancelledReader(t *testing.T) {
	c, err := Open(Options{Dir: t.TempDir(), BlockSize: 1 << 16, Prefetch: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Wait)
	src := newSource(1<<17, 4)
	release := make(chan struct{})
	var fetchCancelled atomic.Bool
	slow := func(ctx context.Context, off int64, p []byte) error {
		select {
		case <-release:
			return src.fetch(ctx, off, p)
		case <-ctx.Done():
			fetchCancelled.Store(true)
			return ctx.Err()
		}
	}
	// Two readers wait for block 0; the first gives up.
	ctx1, cancel1 := context.WithCancel(context.Background())
	r1 := c.NewReader(ctx1, src.id("c"), slow)
	r2 := c.NewReader(context.Background(), src.id("c"), slow)
	done1, done2 := make(chan error, 1), make(chan error, 1)
	go func() { _, err := r1.ReadAt(make([]byte, 100), 0); done1 <- err }()
	time.Sleep(20 * time.Millisecond)
	go func() { _, err := r2.ReadAt(make([]byte, 100), 0); done2 <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel1()
	select {
	case err := <-done1:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled reader: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled read did not return")
	}
	if _, err := r1.ReadAt(make([]byte, 1), 1<<16); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v", err)
	}
	close(release)
	if err := <-done2; err != nil {
		t.Fatalf("the other reader of the shared fetch: %v", err)
	}
	if fetchCancelled.Load() {
		t.Fatal("the shared fetch was cancelled while a reader still waited for it")
	}
	// A fetch whose only reader gives up stops.
	stuck := func(ctx context.Context, off int64, p []byte) error {
		<-ctx.Done()
		fetchCancelled.Store(true)
		return ctx.Err()
	}
	ctx3, cancel3 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel3()
	r3 := c.NewReader(ctx3, src.id("stuck"), stuck)
	if _, err := r3.ReadAt(make([]byte, 10), 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !fetchCancelled.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !fetchCancelled.Load() {
		t.Fatal("a fetch nobody waits for kept running")
	}
}

// TestDamagedFiles: flipped, truncated and emptied block files are
// detected, deleted and fetched again; reads never return wrong bytes.
func TestDamagedFiles(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(Options{Dir: dir, BlockSize: 4096, Prefetch: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Wait)
	src := newSource(8*4096, 3)
	r := c.NewReader(context.Background(), src.id("d"), src.fetch)
	checkRead(t, r, src, 0, len(src.data))
	damage := []func(p string){
		func(p string) { b, _ := os.ReadFile(p); b[100] ^= 1; os.WriteFile(p, b, 0o600) },
		func(p string) { os.Truncate(p, 1000) },
		func(p string) { os.WriteFile(p, nil, 0o600) },
		func(p string) { b, _ := os.ReadFile(p); b[len(b)-1] ^= 0x80; os.WriteFile(p, b, 0o600) },
	}
	for i, hurt := range damage {
		hurt(c.disk.EntryFile(c.blockName(src.id("d"), int64(i))))
	}
	before := src.calls.Load()
	checkRead(t, r, src, 0, len(src.data))
	if got := src.calls.Load() - before; got != int64(len(damage)) {
		t.Fatalf("%d refetches for %d damaged blocks", got, len(damage))
	}
	if st := c.Stats(); st.Corrupt != int64(len(damage)) {
		t.Fatalf("corrupt count %d", st.Corrupt)
	}
	// The rewritten blocks are good again.
	before = src.calls.Load()
	checkRead(t, r, src, 0, len(src.data))
	if src.calls.Load() != before {
		t.Fatal("repaired blocks fetched again")
	}
	// A failing source is an error, and nothing is cached for it.
	src2 := newSource(4096, 4)
	src2.fail.Store(true)
	r2 := c.NewReader(context.Background(), src2.id("f"), src2.fetch)
	if _, err := r2.ReadAt(make([]byte, 10), 0); err == nil {
		t.Fatal("read through a failing source succeeded")
	}
	src2.fail.Store(false)
	checkRead(t, r2, src2, 0, 10)
}

// TestHostileFiles: what someone else put in the directory in place of
// cached blocks (a FIFO, links to /dev/zero and to a good entry outside,
// an entry whose header claims a value of 64 MiB, a folder linked
// outside) is neither waited on, followed nor allocated for: reads return
// the right bytes promptly, fetching those blocks again, and a reopened
// cache counts none of it.
func TestHostileFiles(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	opts := Options{Dir: dir, BlockSize: 4096, Prefetch: -1}
	c, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Wait)
	src := newSource(5*4096, 5)
	r := c.NewReader(context.Background(), src.id("h"), src.fetch)
	checkRead(t, r, src, 0, len(src.data))
	other := newSource(4096, 6)
	ro := c.NewReader(context.Background(), other.id("o"), other.fetch)
	checkRead(t, ro, other, 0, len(other.data))
	block := func(id ObjectID, i int64) string { return c.disk.EntryFile(c.blockName(id, i)) }

	good := filepath.Join(outside, "good")
	goodEntry, err := os.ReadFile(block(src.id("h"), 2))
	if err != nil || os.WriteFile(good, goodEntry, 0o600) != nil {
		t.Fatal(err)
	}
	fifo := block(src.id("h"), 0)
	os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, link := range []struct {
		i      int64
		target string
	}{{1, "/dev/zero"}, {2, good}} {
		os.Remove(block(src.id("h"), link.i))
		if err := os.Symlink(link.target, block(src.id("h"), link.i)); err != nil {
			t.Fatal(err)
		}
	}
	// The disk cache's entry header holds the value's length in bytes 8
	// to 16: claim 64 MiB, less than a disk cache allows by default but
	// far more than a block, and make the file that long (sparse).
	huge := block(src.id("h"), 3)
	entry, err := os.ReadFile(huge)
	if err != nil {
		t.Fatal(err)
	}
	keyEnd := len(entry) - 4096
	binary.BigEndian.PutUint64(entry[8:16], 64<<20)
	if os.WriteFile(huge, entry[:keyEnd], 0o600) != nil || os.Truncate(huge, int64(keyEnd)+64<<20) != nil {
		t.Fatal("cannot plant the long entry")
	}
	folder := filepath.Dir(block(other.id("o"), 0))
	for i := range int64(5) {
		if folder == filepath.Dir(block(src.id("h"), i)) {
			t.Fatal("both objects' blocks share a folder; pick other keys")
		}
	}
	moved := filepath.Join(outside, "folder")
	if err := os.Rename(folder, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, folder); err != nil {
		t.Fatal(err)
	}

	before := src.calls.Load() + other.calls.Load()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	allocated := mem.TotalAlloc
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkRead(t, r, src, 0, len(src.data))
		checkRead(t, ro, other, 0, len(other.data))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("reads blocked for 10 s")
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
	}
	runtime.ReadMemStats(&mem)
	if grew := mem.TotalAlloc - allocated; grew > 16<<20 {
		t.Errorf("the reads allocated %d MiB", grew>>20)
	}
	if got := src.calls.Load() + other.calls.Load() - before; got != 5 {
		t.Errorf("%d blocks fetched again, want the 5 planted", got)
	}
	if st, err := os.Lstat(fifo); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the FIFO was not replaced by the block: %v", err)
	}
	if data, err := os.ReadFile(good); err != nil || !bytes.Equal(data, goodEntry) {
		t.Errorf("the entry outside the cache changed: %v", err)
	}
	if entries, _ := os.ReadDir(moved); len(entries) != 1 {
		t.Errorf("the folder outside holds %d files, want its one block", len(entries))
	}
	// A reopened cache counts the real entry files only: plant a link to
	// a huge file again, and a folder linked outside.
	entrySize := func(i int64) int64 {
		st, err := os.Lstat(block(src.id("h"), i))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	want := entrySize(0) + entrySize(1) + entrySize(2) + entrySize(4)
	if st, err := os.Stat(block(other.id("o"), 0)); err != nil {
		t.Fatal(err)
	} else {
		want += st.Size()
	}
	bigFile := filepath.Join(outside, "huge")
	os.Remove(huge)
	if os.WriteFile(bigFile, nil, 0o600) != nil || os.Truncate(bigFile, 1<<30) != nil || os.Symlink(bigFile, huge) != nil ||
		os.Symlink(moved, filepath.Join(dir, "zz")) != nil {
		t.Fatal("cannot plant the links")
	}
	c2, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if st := c2.Stats(); st.Blocks != 5 || st.Bytes != want {
		t.Errorf("reopened: %+v, want the 5 regular entry files, %d bytes", st, want)
	}
}

func TestSequentialPrefetch(t *testing.T) {
	c, err := Open(Options{Dir: t.TempDir(), BlockSize: 4096, Prefetch: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Wait)
	src := newSource(64*4096, 5)
	r := c.NewReader(context.Background(), src.id("s"), src.fetch)
	for off := 0; off < len(src.data); off += 1000 {
		checkRead(t, r, src, int64(off), 1000)
	}
	st := c.Stats()
	if st.Prefetches == 0 {
		t.Fatalf("a sequential reader never prefetched: %+v", st)
	}
	if st.Misses > 64+2 {
		t.Fatalf("%d block fetches for 64 blocks", st.Misses)
	}
	t.Logf("sequential read of 64 blocks: %+v", st)
}

func TestKeysAreIsolated(t *testing.T) {
	c, err := Open(Options{Dir: t.TempDir(), BlockSize: 4096, Prefetch: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Wait)
	a, b := newSource(4096, 6), newSource(4096, 7)
	checkRead(t, c.NewReader(context.Background(), a.id("x"), a.fetch), a, 0, 4096)
	// Same key, another ETag (the object was replaced): other blocks.
	idB := b.id("x")
	idB.ETag = "e2"
	r := c.NewReader(context.Background(), idB, b.fetch)
	checkRead(t, r, b, 0, 4096)
}
