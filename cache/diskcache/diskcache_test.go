package diskcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// value is the deterministic value of key i, of a size that depends on i.
func value(i int) []byte {
	h := sha256.Sum256([]byte(strconv.Itoa(i)))
	return bytes.Repeat(h[:], 10+i%50)
}

func key(i int) string { return fmt.Sprintf("frame/sha256:abc/0/%d/jpeg;q=95", i) }

func open(t testing.TB, dir string, max int64) *Cache {
	t.Helper()
	c, err := Open(Options{Dir: dir, MaxBytes: max})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestPutGet(t *testing.T) {
	c := open(t, t.TempDir(), 0)
	if _, ok := c.Get(key(1)); ok || c.Contains(key(1)) {
		t.Fatal("an empty cache has an entry")
	}
	c.Put(key(1), value(1))
	c.Put(key(2), nil)
	if v, ok := c.Get(key(1)); !ok || !bytes.Equal(v, value(1)) || !c.Contains(key(1)) {
		t.Fatalf("Get after Put: %v", ok)
	}
	if v, ok := c.Get(key(2)); !ok || len(v) != 0 {
		t.Fatalf("empty value: %v %d", ok, len(v))
	}
	st := c.Stats()
	if st.Hits != 2 || st.Misses != 1 || st.Writes != 2 || st.Entries != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestBoundedLRU fills a cache past its bound: it stays within it, and
// what was used recently survives.
func TestBoundedLRU(t *testing.T) {
	dir := t.TempDir()
	one := int64(headerSize + len(key(0)) + len(value(0)))
	c := open(t, dir, 40*one)
	c.WaitScan()
	for i := range 200 {
		c.Put(key(i), value(i))
		if _, ok := c.Get(key(0)); !ok {
			t.Fatalf("the most recently used entry was evicted after %d puts", i)
		}
	}
	c.WaitScan()
	st := c.Stats()
	if st.Bytes > 40*one || st.Evictions == 0 {
		t.Errorf("stats %+v: want at most %d bytes and evictions", st, 40*one)
	}
	var onDisk int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			info, _ := d.Info()
			onDisk += info.Size()
		}
		return nil
	})
	if onDisk != st.Bytes {
		t.Errorf("%d bytes of files on disk, %d counted", onDisk, st.Bytes)
	}
}

// TestReopen: a new process finds what an earlier one stored, at once and
// in its accounting once the scan ends.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 0)
	for i := range 20 {
		c.Put(key(i), value(i))
	}
	c.Close()
	d := open(t, dir, 0)
	for i := range 20 {
		if v, ok := d.Get(key(i)); !ok || !bytes.Equal(v, value(i)) {
			t.Fatalf("entry %d not found after reopening", i)
		}
	}
	d.WaitScan()
	if st := d.Stats(); st.Entries != 20 {
		t.Errorf("stats %+v after reopening: want 20 entries", st)
	}
}

// TestPrivate: a private cache knows the entries it found when it opened
// and those it wrote, nothing another writer added since; evicting an
// entry while a reader asks for it never indexes it again, so the
// entries counted are the files on disk.
func TestPrivate(t *testing.T) {
	dir := t.TempDir()
	other := open(t, dir, 0)
	other.Put(key(1), value(1))
	c, err := Open(Options{Dir: dir, MaxBytes: 8 << 10, Private: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.WaitScan()
	other.Put(key(2), value(2))
	if v, ok := c.Get(key(1)); !ok || !bytes.Equal(v, value(1)) {
		t.Fatal("an entry present at opening is not found")
	}
	if _, ok := c.Get(key(2)); ok || c.Contains(key(2)) {
		t.Fatal("a private cache found an entry written after it opened")
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := 10 + (i*7+g)%40
				if v, ok := c.Get(key(k)); ok && !bytes.Equal(v, value(k)) {
					t.Errorf("entry %d has the wrong value", k)
				}
				c.Put(key(k), value(k))
			}
		}()
	}
	wg.Wait()
	files := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == entryExt {
			files++
		}
		return nil
	})
	// The other cache's two entries are files the private one does not
	// count (entry 1 unless it was evicted).
	st := c.Stats()
	if st.Bytes > 8<<10 || int64(files) < st.Entries || int64(files) > st.Entries+2 {
		t.Errorf("%d entry files; the private cache counts %d entries, %d bytes", files, st.Entries, st.Bytes)
	}
}

// TestDamagedEntries: an entry cut short, with a flipped bit, or with
// garbage is never returned, and is removed.
func TestDamagedEntries(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 0)
	damage := map[string]func([]byte) []byte{
		"truncated":  func(b []byte) []byte { return b[:len(b)-3] },
		"bit flip":   func(b []byte) []byte { b[len(b)-5] ^= 0x10; return b },
		"header":     func(b []byte) []byte { return b[:headerSize-2] },
		"long value": func(b []byte) []byte { return append(b, 0) },
		"bad magic":  func(b []byte) []byte { b[0] = 'X'; return b },
	}
	i := 0
	for name, fn := range damage {
		i++
		c.Put(key(i), value(i))
		p := c.path(fileName(key(i)))
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, fn(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if v, ok := c.Get(key(i)); ok {
			t.Errorf("%s: a damaged entry was returned (%d bytes)", name, len(v))
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s: the damaged entry is still there", name)
		}
		c.Put(key(i), value(i))
		if v, ok := c.Get(key(i)); !ok || !bytes.Equal(v, value(i)) {
			t.Errorf("%s: not stored again after the damage was found", name)
		}
	}
	if st := c.Stats(); st.Corrupt != int64(len(damage)) {
		t.Errorf("%d damaged entries counted, want %d", st.Corrupt, len(damage))
	}
}

// sparseEntry makes path a valid entry of key whose value is valueLen zero
// bytes, without writing them: a sparse file with the right header,
// checksum included.
func sparseEntry(t testing.TB, path, key string, valueLen int64) {
	t.Helper()
	crc := crc32.Update(0, castagnoli, []byte(key))
	zeros := make([]byte, 1<<20)
	for left := valueLen; left > 0; left -= int64(len(zeros)) {
		crc = crc32.Update(crc, castagnoli, zeros[:min(left, int64(len(zeros)))])
	}
	hdr := make([]byte, headerSize, headerSize+len(key))
	copy(hdr, magic)
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(key)))
	binary.BigEndian.PutUint64(hdr[8:], uint64(valueLen))
	binary.BigEndian.PutUint32(hdr[16:], crc)
	if err := os.WriteFile(path, append(hdr, key...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(headerSize+len(key))+valueLen); err != nil {
		t.Fatal(err)
	}
}

// getPromptly calls Get in the background and fails the test if it does
// not return within 10 s; unblock is called then (to open a FIFO's other
// end, say), so that the test ends either way.
func getPromptly(t *testing.T, c *Cache, key string, unblock func()) ([]byte, bool) {
	t.Helper()
	type result struct {
		v  []byte
		ok bool
	}
	done := make(chan result, 1)
	go func() {
		v, ok := c.Get(key)
		done <- result{v, ok}
	}()
	select {
	case r := <-done:
		return r.v, r.ok
	case <-time.After(10 * time.Second):
		t.Errorf("Get(%q) blocked for 10 s", key)
		unblock()
		r := <-done
		return r.v, r.ok
	}
}

// TestHostileEntries: what someone else put in the directory under an
// entry's name (a FIFO, links out of the directory, a link in place of a
// folder, a sparse file of 1 GiB with a valid header, another key's
// valid entry) is neither waited on, followed, allocated nor returned; it
// is removed (the link, not its target) and the frame is stored again.
func TestHostileEntries(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	c := open(t, dir, 0)
	c.WaitScan()
	// entryOf returns the bytes Put writes for key i, from another cache.
	other := open(t, t.TempDir(), 0)
	entryOf := func(i int) []byte {
		other.Put(key(i), value(i))
		b, err := os.ReadFile(other.path(fileName(key(i))))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		// plant puts something at the entry file p of key i; it returns
		// a function that unblocks a stuck reader.
		plant func(t *testing.T, i int, p string) (unblock func())
		// damaged is the number of damaged entries the case counts.
		damaged int64
	}{
		{"FIFO", func(t *testing.T, i int, p string) func() {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			return func() {
				if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
			}
		}, 1},
		{"link to a valid entry outside", func(t *testing.T, i int, p string) func() {
			target := filepath.Join(outside, "entry")
			if err := os.WriteFile(target, entryOf(i), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			return func() {}
		}, 1},
		{"link to /dev/zero", func(t *testing.T, i int, p string) func() {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
			return func() {}
		}, 1},
		{"folder linked outside", func(t *testing.T, i int, p string) func() {
			folder := filepath.Dir(p)
			moved := filepath.Join(outside, "folder")
			if err := os.MkdirAll(moved, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(moved, filepath.Base(p)), entryOf(i), 0o600); err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(folder)
			if err := os.Symlink(moved, folder); err != nil {
				t.Fatal(err)
			}
			return func() {}
		}, 0},
		{"sparse 1 GiB entry with a valid header", func(t *testing.T, i int, p string) func() {
			sparseEntry(t, p, key(i), 1<<30)
			return func() {}
		}, 1},
		{"another key's valid entry", func(t *testing.T, i int, p string) func() {
			// A key of the same length: only the key itself differs.
			if err := os.WriteFile(p, entryOf(i+1), 0o600); err != nil {
				t.Fatal(err)
			}
			return func() {}
		}, 1},
	}
	for n, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i := 1 + n
			p := c.path(fileName(key(i)))
			os.MkdirAll(filepath.Dir(p), 0o700)
			unblock := tc.plant(t, i, p)
			before := c.Stats()
			var mem runtime.MemStats
			runtime.ReadMemStats(&mem)
			allocated := mem.TotalAlloc
			if v, ok := getPromptly(t, c, key(i), unblock); ok {
				t.Fatalf("Get returned %d bytes", len(v))
			}
			runtime.ReadMemStats(&mem)
			if grew := mem.TotalAlloc - allocated; grew > 16<<20 {
				t.Errorf("Get allocated %d MiB", grew>>20)
			}
			if got := c.Stats().Corrupt - before.Corrupt; got != tc.damaged {
				t.Errorf("%d damaged entries counted, want %d", got, tc.damaged)
			}
			if tc.damaged > 0 {
				if _, err := os.Lstat(p); err == nil {
					t.Error("what was planted is still there")
				}
			}
			c.Put(key(i), value(i))
			if v, ok := c.Get(key(i)); !ok || !bytes.Equal(v, value(i)) {
				t.Fatal("the entry was not stored again")
			}
			if st, err := os.Lstat(filepath.Dir(p)); err != nil || !st.IsDir() {
				t.Errorf("the entry's folder is not a folder: %v", err)
			}
			if c.Contains(key(i + 2000)) {
				t.Error("Contains found an entry never stored")
			}
		})
	}
	// Nothing outside was removed or written.
	var names []string
	filepath.WalkDir(outside, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p[len(outside):])
		}
		return nil
	})
	if fmt.Sprint(names) != "[/entry /folder/"+fileName(key(4))+"]" {
		t.Errorf("outside the cache: %v", names)
	}
}

// TestScanSkipsLinks: a rescan counts regular entry files only, not links
// (to large files or out of the directory) nor what is behind a linked
// folder.
func TestScanSkipsLinks(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 0)
	c.Put(key(1), value(1))
	c.Close()
	big := filepath.Join(t.TempDir(), "big")
	sparseEntry(t, big, key(2), 1<<30)
	p := filepath.Join(dir, fileName(key(2))[:2], fileName(key(2)))
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.Symlink(big, p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(big), filepath.Join(dir, "zz")); err != nil {
		t.Fatal(err)
	}
	d := open(t, dir, 0)
	d.WaitScan()
	if st := d.Stats(); st.Entries != 1 || st.Bytes != int64(headerSize+len(key(1))+len(value(1))) {
		t.Errorf("stats after a scan %+v: want the one entry written", st)
	}
}

// TestScanSkipsForeignNames: files in the entry folders whose names the
// cache does not give (another name ending in .ent, a digest in capitals)
// are not its: a scan neither counts nor evicts them.
func TestScanSkipsForeignNames(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 0)
	c.Put(key(1), value(1))
	name := fileName(key(1))
	c.Close()
	foreign := []string{filepath.Join(dir, name[:2], "notes.ent"), filepath.Join(dir, name[:2], strings.ToUpper(name[:40])+entryExt)}
	for _, p := range foreign {
		if err := os.WriteFile(p, value(2), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	one := int64(headerSize + len(key(1)) + len(value(1)))
	d := open(t, dir, one) // room for the one entry: nothing else may be evicted for the others
	d.WaitScan()
	if st := d.Stats(); st.Entries != 1 || st.Bytes != one || st.Evictions != 0 {
		t.Errorf("stats after a scan %+v: want the one entry written, nothing evicted", st)
	}
	for _, p := range foreign {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a file the cache did not write was removed: %v", err)
		}
	}
	if v, ok := d.Get(key(1)); !ok || !bytes.Equal(v, value(1)) {
		t.Error("the entry is gone")
	}
}

// TestValueBound: a value over MaxValueBytes is not stored.
func TestValueBound(t *testing.T) {
	c, err := Open(Options{Dir: t.TempDir(), MaxValueBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Put(key(1), make([]byte, 101))
	c.Put(key(2), make([]byte, 100))
	if _, ok := c.Get(key(1)); ok {
		t.Error("a value over the bound was stored")
	}
	if _, ok := c.Get(key(2)); !ok {
		t.Error("a value at the bound was not stored")
	}
}

// TestProcessesShareADirectory runs several processes that write and read
// the same keys of one small cache at once, evicting each other's entries:
// every value read is the right one, and every file left is whole.
func TestProcessesShareADirectory(t *testing.T) {
	dir := t.TempDir()
	const procs = 3
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSharedWorker$")
		cmd.Env = append(os.Environ(), "DISKCACHE_WORKER_DIR="+dir, "DISKCACHE_WORKER_SEED="+strconv.Itoa(p))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := sharedWork(dir, 99); err != nil {
			t.Error(err)
		}
	}()
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("worker: %v", err)
		}
	}
	wg.Wait()
	c := open(t, dir, 0)
	for i := range 300 {
		if v, ok := c.Get(key(i)); ok && !bytes.Equal(v, value(i)) {
			t.Fatalf("entry %d holds another value", i)
		}
	}
	if st := c.Stats(); st.Corrupt != 0 {
		t.Errorf("%d damaged entries after concurrent use", st.Corrupt)
	}
}

// TestSharedWorker is the body of a worker process of
// TestProcessesShareADirectory; in any other run it has nothing to do (the
// helper-process pattern of os/exec's tests).
func TestSharedWorker(t *testing.T) {
	dir := os.Getenv("DISKCACHE_WORKER_DIR")
	if dir == "" {
		return
	}
	seed, _ := strconv.Atoi(os.Getenv("DISKCACHE_WORKER_SEED"))
	if err := sharedWork(dir, uint64(seed)); err != nil {
		t.Fatal(err)
	}
}

func sharedWork(dir string, seed uint64) error {
	one := int64(headerSize + len(key(0)) + 40*32)
	c, err := Open(Options{Dir: dir, MaxBytes: 60 * one})
	if err != nil {
		return err
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(seed, seed))
	for range 2000 {
		i := rng.IntN(300)
		if rng.IntN(2) == 0 {
			c.Put(key(i), value(i))
		} else if v, ok := c.Get(key(i)); ok && !bytes.Equal(v, value(i)) {
			return fmt.Errorf("entry %d read back wrong", i)
		}
	}
	if st := c.Stats(); st.Corrupt != 0 {
		return fmt.Errorf("%d damaged entries seen", st.Corrupt)
	}
	return nil
}

// FuzzEntry feeds arbitrary bytes as an entry file, placed as a regular
// file or, by place, behind a link to a file outside the directory, in a
// folder linked outside, or replaced by a FIFO. Reading must not panic,
// block or allocate more than the value bound; what it returns must be
// exactly what Put would have written for that key and value, from a
// regular file; anything it refuses is removed from the directory, and
// nothing outside is touched.
func FuzzEntry(f *testing.F) {
	const maxValue = 1 << 10
	dir := f.TempDir()
	c, err := Open(Options{Dir: dir, MaxValueBytes: maxValue})
	if err != nil {
		f.Fatal(err)
	}
	c.Put("k", []byte("value"))
	good, _ := os.ReadFile(c.path(fileName("k")))
	c.Put("j", []byte("value"))
	otherKey, _ := os.ReadFile(c.path(fileName("j")))
	for place := range uint8(4) {
		f.Add(good, place)
	}
	f.Add(good[:headerSize], uint8(0))
	f.Add(otherKey, uint8(0))
	f.Add([]byte{}, uint8(0))
	huge := bytes.Clone(good)
	binary.BigEndian.PutUint64(huge[8:], maxValue+1)
	f.Add(append(huge, make([]byte, maxValue+1-len("value"))...), uint8(0))
	outside := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, place uint8) {
		p := c.path(fileName("k"))
		folder := filepath.Dir(p)
		os.RemoveAll(folder)
		os.MkdirAll(folder, 0o700)
		target := filepath.Join(outside, filepath.Base(p))
		if err := os.WriteFile(target, data, 0o600); err != nil {
			t.Fatal(err)
		}
		unblock := func() {}
		switch place % 4 {
		case 0:
			err = os.WriteFile(p, data, 0o600)
		case 1:
			err = os.Symlink(target, p)
		case 2:
			os.Remove(folder)
			err = os.Symlink(outside, folder)
		case 3:
			err = syscall.Mkfifo(p, 0o600)
			unblock = func() {
				if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		v, ok := getPromptly(t, c, "k", unblock)
		if after, err := os.ReadFile(target); err != nil || !bytes.Equal(after, data) {
			t.Fatalf("the file outside the cache changed: %v", err)
		}
		if !ok {
			if _, err := os.Lstat(p); place%4 != 2 && err == nil {
				t.Fatal("a refused entry was left in place")
			}
			return
		}
		if place%4 != 0 {
			t.Fatalf("returned %q through a link or from a FIFO", v)
		}
		if len(v) > maxValue {
			t.Fatalf("returned %d bytes, over the bound", len(v))
		}
		other := t.TempDir()
		d, err := Open(Options{Dir: other})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		d.Put("k", v)
		want, _ := os.ReadFile(d.path(fileName("k")))
		if !bytes.Equal(want, data) {
			t.Fatalf("returned %q from an entry Put would not write", v)
		}
	})
}

// TestScanSkipsWhatWasRemoved: an entry the scan listed and that was then
// found damaged and removed is not indexed by the scan, so that storing
// it again writes it.
func TestScanSkipsWhatWasRemoved(t *testing.T) {
	c := open(t, t.TempDir(), 0)
	c.WaitScan()
	c.Put(key(1), value(1))
	epoch, done, ok := c.beginScan()
	if !ok {
		t.Fatal("no scan could begin")
	}
	listed := c.listEntries()
	p := c.EntryFile(key(1))
	if err := os.WriteFile(p, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(key(1)); ok {
		t.Fatal("a damaged entry was returned")
	}
	c.index(listed, epoch)
	close(done)
	c.Put(key(1), value(1))
	if v, ok := c.Get(key(1)); !ok || !bytes.Equal(v, value(1)) {
		t.Fatal("an entry removed during a scan is not stored again")
	}
}
