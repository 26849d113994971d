package diskcache

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
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

// FuzzEntry feeds arbitrary bytes as an entry file: reading it must not
// panic, and whatever it returns must be exactly what Put would have
// written for that key and value.
func FuzzEntry(f *testing.F) {
	dir := f.TempDir()
	c, err := Open(Options{Dir: dir})
	if err != nil {
		f.Fatal(err)
	}
	c.Put("k", []byte("value"))
	good, _ := os.ReadFile(c.path(fileName("k")))
	f.Add(good)
	f.Add(good[:headerSize])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := c.path(fileName("k"))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		v, ok := c.Get("k")
		if !ok {
			return
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
