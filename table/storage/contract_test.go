package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/table/storage"
)

// backend is a kind of store the contract tests run against.
type backend struct {
	name string
	// open returns a store at location loc (a name unique within the
	// test). Opening the same loc again gives another store (another
	// client) over the same objects.
	open func(t *testing.T, loc string) storage.Store
	// leaveTemporary leaves what a writer that crashed while writing key
	// leaves behind.
	leaveTemporary func(t *testing.T, loc, key string)
}

// backends returns every store kind: a local directory, and a bucket
// prefix on a real S3 server (versitygw) without and with the block
// cache. The S3 kinds skip without versitygw, unless FRAMEFS_REQUIRE_S3=1.
func backends(t *testing.T) []backend {
	local := t.TempDir()
	// The server lives as long as the whole test; without versitygw the
	// S3 kinds skip (or fail, when FRAMEFS_REQUIRE_S3=1) in s3test.Start.
	var srv *s3test.Server
	if s3test.Binary() != "" {
		srv = s3test.Start(t)
	}
	server := func(t *testing.T) *s3test.Server {
		if srv == nil {
			return s3test.Start(t)
		}
		return srv
	}
	s3kind := func(name, cacheDir string) backend {
		return backend{
			name: name,
			open: func(t *testing.T, loc string) storage.Store {
				return server(t).Open(t, name+"/"+loc, func(o *storage.S3Options) { o.CacheDir = cacheDir })
			},
			leaveTemporary: func(t *testing.T, loc, key string) {
				server(t).StartUpload(t, name+"/"+loc+"/"+key)
			},
		}
	}
	return []backend{
		{
			name: "local",
			open: func(t *testing.T, loc string) storage.Store {
				s, err := storage.NewLocal(filepath.Join(local, loc))
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			leaveTemporary: func(t *testing.T, loc, key string) {
				dir := filepath.Join(local, loc, filepath.FromSlash(path.Dir(key)))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, ".tmp-crashed"), []byte("partial"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
		},
		s3kind("s3", ""),
		s3kind("s3-cached", filepath.Join(t.TempDir(), "cache")),
	}
}

// TestStoreContract checks what the table format relies on from every
// store: ranged reads, whole reads, replacing puts, create-if-absent with
// one winner, sorted prefix listings, sub-stores, sentinel errors, the
// temporaries a crashed writer leaves, and contexts that stop calls and
// the reads of opened objects.
func TestStoreContract(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Run("ranged reads", func(t *testing.T) { contractReads(t, b) })
			t.Run("missing and invalid keys", func(t *testing.T) { contractErrors(t, b) })
			t.Run("listings", func(t *testing.T) { contractListings(t, b) })
			t.Run("create if absent", func(t *testing.T) { contractPutIfAbsent(t, b) })
			t.Run("temporaries", func(t *testing.T) { contractTemporaries(t, b) })
			t.Run("contexts", func(t *testing.T) { contractContexts(t, b) })
		})
	}
}

func contractReads(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t, "reads")
	data := s3test.RandomBytes(3<<20+12345, 7)
	if n, err := s.Put(ctx, "video/a.video", bytes.NewReader(data)); err != nil || n != int64(len(data)) {
		t.Fatalf("put: %d %v", n, err)
	}
	obj, err := s.Open(ctx, "video/a.video")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if obj.Size() != int64(len(data)) {
		t.Fatalf("size %d, want %d", obj.Size(), len(data))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 40; i++ {
		off := rng.Int64N(int64(len(data)))
		n := 1 + rng.IntN(1<<20+17)
		buf := make([]byte, n)
		got, err := obj.ReadAt(buf, off)
		want := min(n, len(data)-int(off))
		// io.ReaderAt: all n bytes, or fewer with an error (io.EOF at the end).
		if got != want || (got < n && !errors.Is(err, io.EOF)) || (got == n && err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d, %d) = %d, %v; want %d", n, off, got, err, want)
		}
		if !bytes.Equal(buf[:got], data[off:off+int64(got)]) {
			t.Fatalf("ReadAt(%d, %d): wrong bytes", n, off)
		}
	}
	if n, err := obj.ReadAt(make([]byte, 1), int64(len(data))); n != 0 || err != io.EOF {
		t.Fatalf("read at the end: %d %v", n, err)
	}
	// Put replaces the whole object; an object opened before keeps
	// reading the old content or fails, never mixes.
	small := []byte("replaced")
	if _, err := s.Put(ctx, "video/a.video", bytes.NewReader(small)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadAll(ctx, "video/a.video"); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("read after replace: %q %v", got, err)
	}
	buf := make([]byte, 100)
	if n, err := obj.ReadAt(buf, 1000); err == nil && !bytes.Equal(buf[:n], data[1000:1000+n]) {
		t.Fatalf("an object opened before a replace read new bytes: %q", buf[:n])
	}
	// Empty objects exist.
	if _, err := s.Put(ctx, "empty", bytes.NewReader(nil)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadAll(ctx, "empty"); err != nil || len(got) != 0 {
		t.Fatalf("empty object: %q %v", got, err)
	}
}

func contractErrors(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t, "errors")
	for _, missing := range []string{"snapshot/0000000009.json", "video/none.video"} {
		if _, err := s.ReadAll(ctx, missing); !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), missing) {
			t.Fatalf("ReadAll(%s): %v", missing, err)
		}
		if _, err := s.Open(ctx, missing); !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), missing) {
			t.Fatalf("Open(%s): %v", missing, err)
		}
		if err := s.Delete(ctx, missing); err != nil {
			t.Fatalf("deleting a missing object: %v", err)
		}
	}
	if _, err := s.Put(ctx, "tag/x.json", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "tag/x.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadAll(ctx, "tag/x.json"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted object: %v", err)
	}
	for _, bad := range []string{"", "/abs", "a/../b", "a//b", "a\x00b", "a\\b", "./a", ".tmp-x", "d/.tmp-x"} {
		if _, err := s.Put(ctx, bad, strings.NewReader("")); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Put(%q): %v", bad, err)
		}
		if err := s.PutIfAbsent(ctx, bad, nil); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("PutIfAbsent(%q): %v", bad, err)
		}
		if _, err := s.Open(ctx, bad); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Open(%q): %v", bad, err)
		}
		if _, err := s.ReadAll(ctx, bad); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("ReadAll(%q): %v", bad, err)
		}
		if err := s.Delete(ctx, bad); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Delete(%q): %v", bad, err)
		}
	}
}

func contractListings(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t, "wh")
	keys := []string{"b/table.json", "a/table.json", "a/snapshot/0000000002.json", "a/snapshot/0000000001.json", "a/snapshotx", "c.json"}
	for _, key := range keys {
		if _, err := s.Put(ctx, key, strings.NewReader(key)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List(ctx, "a/snapshot/")
	if err != nil || len(list) != 2 || list[0].Key != "a/snapshot/0000000001.json" || list[1].Key != "a/snapshot/0000000002.json" ||
		list[1].Size != int64(len("a/snapshot/0000000002.json")) || time.Since(list[0].ModTime) > time.Hour {
		t.Fatalf("List(a/snapshot/): %+v %v", list, err)
	}
	if list, err := s.List(ctx, "a/snapshot"); err != nil || len(list) != 3 {
		t.Fatalf("List(a/snapshot) takes keys by prefix, not by directory: %+v %v", list, err)
	}
	all, err := s.List(ctx, "")
	if err != nil || len(all) != len(keys) {
		t.Fatalf("List(\"\"): %+v %v", all, err)
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].Key >= all[i].Key {
			t.Fatalf("List is not sorted: %q before %q", all[i-1].Key, all[i].Key)
		}
	}
	if none, err := s.List(ctx, "zz/"); err != nil || len(none) != 0 {
		t.Fatalf("List of an empty prefix: %v %v", none, err)
	}
	dirs, err := storage.ListDirs(ctx, s, "")
	if err != nil || strings.Join(dirs, ",") != "a,b" {
		t.Fatalf("ListDirs: %v %v", dirs, err)
	}
	sub, err := storage.Sub(s, "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSuffix(s.String(), "/") + "/a"; sub.String() != want {
		t.Fatalf("Sub(a).String() = %q, want %q", sub.String(), want)
	}
	list, err = sub.List(ctx, "")
	if err != nil || len(list) != 4 || list[0].Key != "snapshot/0000000001.json" {
		t.Fatalf("sub-store listing: %+v %v", list, err)
	}
	if got, err := sub.ReadAll(ctx, "table.json"); err != nil || string(got) != "a/table.json" {
		t.Fatalf("sub-store read: %q %v", got, err)
	}
}

// contractPutIfAbsent: of eight racers (each with its own store over the
// same location) for one key, exactly one wins, round after round, and
// the object holds the winner's bytes.
func contractPutIfAbsent(t *testing.T, b backend) {
	ctx := context.Background()
	var stores []storage.Store
	for w := 0; w < 8; w++ {
		stores = append(stores, b.open(t, "race"))
	}
	for round := 0; round < 10; round++ {
		key := fmt.Sprintf("snapshot/%010d.json", round)
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			wins   int
			winner string
		)
		start := make(chan struct{})
		for w, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				body := fmt.Sprintf("writer %d round %d", w, round)
				err := s.PutIfAbsent(ctx, key, []byte(body))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
					winner = body
				case !errors.Is(err, storage.ErrExists):
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins != 1 {
			t.Fatalf("round %d: %d winners", round, wins)
		}
		if data, err := stores[0].ReadAll(ctx, key); err != nil || string(data) != winner {
			t.Fatalf("round %d: stored %q, the winner wrote %q (%v)", round, data, winner, err)
		}
	}
	if err := stores[0].PutIfAbsent(ctx, "snapshot/0000000000.json", []byte("other")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("create of a taken key: %v", err)
	}
}

// errAfter is a reader that fails after n bytes.
type errAfter struct {
	r io.Reader
	n int
}

var errSourceBroke = errors.New("the source broke")

func (f *errAfter) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errSourceBroke
	}
	p = p[:min(len(p), f.n)]
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

func contractTemporaries(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t, "temps")
	tl, ok := s.(storage.Temporaries)
	if !ok {
		t.Fatalf("%T does not list temporaries", s)
	}
	// A failed write leaves neither an object nor a temporary.
	_, err := s.Put(ctx, "video/broken.video", &errAfter{r: bytes.NewReader(s3test.RandomBytes(2<<20, 5)), n: 1 << 20})
	if !errors.Is(err, errSourceBroke) {
		t.Fatalf("put from a failing reader: %v", err)
	}
	if _, err := s.Open(ctx, "video/broken.video"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a failed put left an object: %v", err)
	}
	if temps, err := tl.ListTemporaries(ctx); err != nil || len(temps) != 0 {
		t.Fatalf("a failed put left temporaries: %v %v", temps, err)
	}
	// A crashed writer's leftovers: invisible to List, listed (only those
	// under this store) by ListTemporaries, removed by DeleteTemporary.
	if _, err := s.Put(ctx, "video/ok.video", strings.NewReader("ok")); err != nil {
		t.Fatal(err)
	}
	b.leaveTemporary(t, "temps", "video/crashed.video")
	b.leaveTemporary(t, "temps-other", "video/crashed.video")
	if list, err := s.List(ctx, "video/"); err != nil || len(list) != 1 || list[0].Key != "video/ok.video" {
		t.Fatalf("List shows a temporary: %+v %v", list, err)
	}
	temps, err := tl.ListTemporaries(ctx)
	if err != nil || len(temps) != 1 || !strings.HasPrefix(temps[0].Key, "video/") || time.Since(temps[0].ModTime) > time.Hour {
		t.Fatalf("ListTemporaries: %+v %v", temps, err)
	}
	if err := tl.DeleteTemporary(ctx, temps[0]); err != nil {
		t.Fatal(err)
	}
	if temps, err := tl.ListTemporaries(ctx); err != nil || len(temps) != 0 {
		t.Fatalf("after DeleteTemporary: %+v %v", temps, err)
	}
	other := b.open(t, "temps-other").(storage.Temporaries)
	if temps, err := other.ListTemporaries(ctx); err != nil || len(temps) != 1 {
		t.Fatalf("another location's temporary: %+v %v", temps, err)
	}
	if err := tl.DeleteTemporary(ctx, storage.ObjectInfo{Key: "video/ok.video"}); !errors.Is(err, storage.ErrInvalidKey) {
		t.Fatalf("DeleteTemporary of an object: %v", err)
	}
}

// contractContexts: a call whose context has ended fails with its error
// and changes nothing; the reads of an opened object stop when the
// context it was opened with ends, a read in flight included.
func contractContexts(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t, "ctx")
	data := s3test.RandomBytes(2<<20, 9)
	if _, err := s.Put(ctx, "video/v.video", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	openCtx, cancel := context.WithCancel(ctx)
	obj, err := s.Open(openCtx, "video/v.video")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if _, err := obj.ReadAt(make([]byte, 10), 0); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := obj.ReadAt(make([]byte, 10), 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after the opener's context ended: %v", err)
	}
	if _, err := obj.ReadAt(make([]byte, 10), 1<<20); !errors.Is(err, context.Canceled) {
		t.Fatalf("read of another block after the opener's context ended: %v", err)
	}

	dead, kill := context.WithCancel(ctx)
	kill()
	if _, err := s.Open(dead, "video/v.video"); !errors.Is(err, context.Canceled) {
		t.Errorf("Open: %v", err)
	}
	if _, err := s.ReadAll(dead, "video/v.video"); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadAll: %v", err)
	}
	if _, err := s.List(dead, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("List: %v", err)
	}
	if _, err := storage.ListDirs(dead, s, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("ListDirs: %v", err)
	}
	if _, err := s.Put(dead, "video/new.video", bytes.NewReader(data)); !errors.Is(err, context.Canceled) {
		t.Errorf("Put: %v", err)
	}
	if err := s.PutIfAbsent(dead, "snapshot/0000000001.json", []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("PutIfAbsent: %v", err)
	}
	if err := s.Delete(dead, "video/v.video"); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete: %v", err)
	}
	if _, err := s.(storage.Temporaries).ListTemporaries(dead); !errors.Is(err, context.Canceled) {
		t.Errorf("ListTemporaries: %v", err)
	}
	if err := s.(storage.Temporaries).DeleteTemporary(dead, storage.ObjectInfo{Key: "video/x#upload=1"}); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("DeleteTemporary: %v", err)
	}
	list, err := s.List(ctx, "")
	if err != nil || len(list) != 1 || list[0].Key != "video/v.video" {
		t.Fatalf("calls with an ended context changed the store: %+v %v", list, err)
	}
	if temps, err := s.(storage.Temporaries).ListTemporaries(ctx); err != nil || len(temps) != 0 {
		t.Fatalf("calls with an ended context left temporaries: %+v %v", temps, err)
	}
}
