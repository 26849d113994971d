package storage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/table/storage"
)

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	rand.NewChaCha8(key).Read(b)
	return b
}

func TestS3Basics(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	for _, withCache := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%v", withCache), func(t *testing.T) {
			prefix := fmt.Sprintf("basics-%v/tbl", withCache)
			s := srv.Open(t, prefix, func(o *storage.S3Options) {
				if withCache {
					o.CacheDir = t.TempDir()
				}
			})
			if got, want := s.String(), "s3://"+srv.Bucket+"/"+prefix; got != want {
				t.Fatalf("String() = %q, want %q", got, want)
			}
			data := randomBytes(3<<20+12345, 7)
			if n, err := s.Put(ctx, "video/a.video", bytes.NewReader(data)); err != nil || n != int64(len(data)) {
				t.Fatalf("put: %d %v", n, err)
			}
			obj, err := s.Open(ctx, "video/a.video")
			if err != nil {
				t.Fatal(err)
			}
			defer obj.Close()
			if obj.Size() != int64(len(data)) {
				t.Fatalf("size %d", obj.Size())
			}
			rng := rand.New(rand.NewPCG(3, 4))
			for i := 0; i < 40; i++ {
				off := rng.Int64N(int64(len(data)))
				n := 1 + rng.IntN(1<<20+17)
				buf := make([]byte, n)
				got, err := obj.ReadAt(buf, off)
				want := min(n, len(data)-int(off))
				if got != want || (err != nil && !(errors.Is(err, io.EOF) && got < n)) {
					t.Fatalf("ReadAt(%d, %d) = %d, %v; want %d", n, off, got, err, want)
				}
				if !bytes.Equal(buf[:got], data[off:off+int64(got)]) {
					t.Fatalf("ReadAt(%d, %d): wrong bytes", n, off)
				}
			}
			if _, err := obj.ReadAt(make([]byte, 1), int64(len(data))); err != io.EOF {
				t.Fatalf("read at the end: %v", err)
			}
			for _, key := range []string{"snapshot/0000000001.json", "snapshot/0000000002.json", "tag/x.json", "table.json"} {
				if _, err := s.Put(ctx, key, strings.NewReader(key)); err != nil {
					t.Fatal(err)
				}
			}
			list, err := s.List(ctx, "snapshot/")
			if err != nil || len(list) != 2 || list[0].Key != "snapshot/0000000001.json" || list[1].Size != int64(len("snapshot/0000000002.json")) {
				t.Fatalf("list: %v %v", list, err)
			}
			all, _ := s.List(ctx, "")
			if len(all) != 5 {
				t.Fatalf("list all: %v", all)
			}
			b, err := s.ReadAll(ctx, "tag/x.json")
			if err != nil || string(b) != "tag/x.json" {
				t.Fatalf("read all: %q %v", b, err)
			}
			for _, missing := range []string{"snapshot/0000000009.json", "video/none.video"} {
				if _, err := s.ReadAll(ctx, missing); !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), missing) {
					t.Fatalf("ReadAll(%s): %v", missing, err)
				}
				if _, err := s.Open(ctx, missing); !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), missing) {
					t.Fatalf("Open(%s): %v", missing, err)
				}
			}
			if err := s.Delete(ctx, "tag/x.json"); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, "tag/x.json"); err != nil {
				t.Fatalf("deleting a missing object: %v", err)
			}
			if _, err := s.ReadAll(ctx, "tag/x.json"); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("deleted tag: %v", err)
			}
			for _, bad := range []string{"", "/abs", "a/../b", "a//b", "a\x00b", "a\\b", "./a", ".tmp-x"} {
				if _, err := s.Put(ctx, bad, strings.NewReader("")); !errors.Is(err, storage.ErrInvalidKey) {
					t.Errorf("key %q: %v", bad, err)
				}
			}
			st := s.Stats()
			t.Logf("stats: %+v", st)
			if withCache && st.Cache.Hits == 0 {
				t.Errorf("40 reads of a 3 MiB object never hit the cache: %+v", st.Cache)
			}
		})
	}
}

// TestS3PutIfAbsentRace: of eight racers (each with its own client) for
// one key, exactly one wins, round after round.
func TestS3PutIfAbsentRace(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	var stores []*storage.S3
	for w := 0; w < 8; w++ {
		stores = append(stores, srv.Open(t, "race", nil))
	}
	for round := 0; round < 15; round++ {
		key := fmt.Sprintf("snapshot/%010d.json", round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var wins int
		var winner string
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
		data, err := stores[0].ReadAll(ctx, key)
		if err != nil || string(data) != winner {
			t.Fatalf("round %d: stored %q, winner wrote %q (%v)", round, data, winner, err)
		}
	}
	// The same content again is "already there", not a win: ErrExists.
	if err := stores[0].PutIfAbsent(ctx, "snapshot/0000000000.json", []byte("other")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second create: %v", err)
	}
}

// unseekable hides bytes.Reader's Seek/ReadAt so Put sees a plain stream.
type unseekable struct{ r io.Reader }

func (u unseekable) Read(p []byte) (int, error) { return u.r.Read(p) }

func TestS3MultipartPut(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	s := srv.Open(t, "mp", func(o *storage.S3Options) { o.PartSize = 5 << 20; o.UploadConcurrency = 3 })
	data := randomBytes(21<<20+333, 11)
	start := time.Now()
	n, err := s.Put(ctx, "video/big.video", unseekable{bytes.NewReader(data)})
	elapsed := time.Since(start)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("put: %d %v", n, err)
	}
	t.Logf("multipart put of %d MiB in 5 MiB parts: %v (%.0f MiB/s), %d PUT requests",
		len(data)>>20, elapsed.Round(time.Millisecond), float64(len(data))/(1<<20)/elapsed.Seconds(), s.Stats().PUTs)
	if puts := s.Stats().PUTs; puts != 7 { // create + 5 parts + complete
		t.Errorf("%d PUT requests, want 7", puts)
	}
	got, err := s.ReadAll(ctx, "video/big.video")
	if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("read back %d bytes: %v", len(got), err)
	}
	// Streams of exactly one and two parts end on a part boundary.
	for _, size := range []int{5 << 20, 10 << 20} {
		data := randomBytes(size, uint64(size))
		key := fmt.Sprintf("video/%d.video", size)
		if n, err := s.Put(ctx, key, unseekable{bytes.NewReader(data)}); err != nil || n != int64(size) {
			t.Fatalf("put %d bytes: %d %v", size, n, err)
		}
		if got, err := s.ReadAll(ctx, key); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d of %d bytes: %v", len(got), size, err)
		}
	}
	if ups, err := s.ListTemporaries(); err != nil || len(ups) != 0 {
		t.Fatalf("uploads left: %v %v", ups, err)
	}
}

// TestS3CachedSequentialRead: a sequential reader costs one GET per 1 MiB
// block (prefetched ahead), and another store with the same cache
// directory none.
func TestS3CachedSequentialRead(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	cacheDir := t.TempDir()
	s := srv.Open(t, "seq", func(o *storage.S3Options) { o.CacheDir = cacheDir })
	data := randomBytes(8<<20+5, 13)
	if _, err := s.Put(ctx, "video/v.video", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	read := func(s *storage.S3) {
		obj, err := s.Open(ctx, "video/v.video")
		if err != nil {
			t.Fatal(err)
		}
		defer obj.Close()
		got, err := io.ReadAll(io.NewSectionReader(obj, 0, obj.Size()))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("sequential read: %d bytes, %v", len(got), err)
		}
	}
	start := time.Now()
	read(s)
	st := s.Stats()
	t.Logf("cold sequential read of 8 MiB in %v: %d GETs, %d bytes fetched, %d prefetches, %d hits",
		time.Since(start).Round(time.Millisecond), st.GETs, st.Cache.BytesFetched, st.Cache.Prefetches, st.Cache.Hits)
	if st.GETs > 9 || st.Cache.BytesFetched != int64(len(data)) {
		t.Errorf("%d GETs and %d bytes for 9 blocks", st.GETs, st.Cache.BytesFetched)
	}
	// The block cache is shared per directory within a process; the same
	// directory after a restart is covered by the blockcache tests.
	warm := srv.Open(t, "seq", func(o *storage.S3Options) { o.CacheDir = cacheDir })
	read(warm)
	if got := warm.Stats().GETs; got != 0 {
		t.Errorf("warm read made %d GETs", got)
	}
}

// failingReader returns an error after n bytes.
type failingReader struct {
	r io.Reader
	n int
}

var errReader = errors.New("the source broke")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errReader
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

func TestS3MultipartAbort(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	s := srv.Open(t, "abort", func(o *storage.S3Options) { o.PartSize = 5 << 20 })
	_, err := s.Put(ctx, "video/broken.video", &failingReader{r: bytes.NewReader(randomBytes(13<<20, 5)), n: 12 << 20})
	if !errors.Is(err, errReader) {
		t.Fatalf("put from a failing source: %v", err)
	}
	if _, err := s.Open(ctx, "video/broken.video"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a failed put left an object: %v", err)
	}
	if ups, err := s.ListTemporaries(); err != nil || len(ups) != 0 {
		t.Fatalf("failed put left uploads: %v %v", ups, err)
	}
	// A cancelled put aborts too.
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	slow := io.MultiReader(bytes.NewReader(randomBytes(11<<20, 6)), readerFunc(func(p []byte) (int, error) {
		<-cctx.Done()
		return 0, cctx.Err()
	}))
	if _, err := s.Put(cctx, "video/cancelled.video", slow); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
	if ups, err := s.ListTemporaries(); err != nil || len(ups) != 0 {
		t.Fatalf("cancelled put left uploads: %v %v", ups, err)
	}
}

type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestS3StaleUploads(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	s := srv.Open(t, "stale/t1", nil)
	other := srv.Open(t, "stale/t2", nil)
	srv.StartUpload(t, "stale/t1/video/crashed.video")
	srv.StartUpload(t, "stale/t2/video/other.video")
	ups, err := s.ListTemporaries()
	if err != nil || len(ups) != 1 || !strings.HasPrefix(ups[0].Key, "video/crashed.video#") {
		t.Fatalf("uploads %v %v", ups, err)
	}
	if n, err := s.AbortStaleUploads(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("a young upload was aborted: %d %v", n, err)
	}
	if n, err := s.AbortStaleUploads(ctx, -time.Minute); err != nil || n != 1 {
		t.Fatalf("abort stale: %d %v", n, err)
	}
	if ups, _ := s.ListTemporaries(); len(ups) != 0 {
		t.Fatalf("left %v", ups)
	}
	if ups, _ := other.ListTemporaries(); len(ups) != 1 {
		t.Fatalf("another prefix's upload was touched: %v", ups)
	}
}

func TestS3ListDirsAndSub(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	wh := srv.Open(t, "wh", nil)
	for _, key := range []string{"a/table.json", "a/snapshot/0000000001.json", "b/x/y", "c.json"} {
		if _, err := wh.Put(ctx, key, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	dirs, err := storage.ListDirs(ctx, wh, "")
	if err != nil || strings.Join(dirs, ",") != "a,b" {
		t.Fatalf("dirs %v %v", dirs, err)
	}
	sub, err := storage.Sub(wh, "a")
	if err != nil {
		t.Fatal(err)
	}
	if sub.String() != "s3://"+srv.Bucket+"/wh/a" {
		t.Fatalf("sub %s", sub)
	}
	list, err := sub.List(ctx, "")
	if err != nil || len(list) != 2 || list[0].Key != "snapshot/0000000001.json" {
		t.Fatalf("sub list %v %v", list, err)
	}
}

// TestS3NoSecretInErrors: errors and names never carry the secret key,
// whatever fails.
func TestS3NoSecretInErrors(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	good := srv.Open(t, "sec", nil)
	bad := srv.Open(t, "sec", func(o *storage.S3Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey+"WRONG", "")
		o.MaxAttempts = 2
	})
	var errs []error
	for _, s := range []*storage.S3{good, bad} {
		_, err := s.ReadAll(ctx, "missing.json")
		errs = append(errs, err)
		_, err = s.Open(ctx, "missing.json")
		errs = append(errs, err)
		_, err = s.Put(ctx, "x.json", strings.NewReader("x"))
		errs = append(errs, err)
		errs = append(errs, s.PutIfAbsent(ctx, "y.json", []byte("y")))
		_, err = s.List(ctx, "")
		errs = append(errs, err)
		errs = append(errs, fmt.Errorf("%s", s.String()))
	}
	offline := srv.Open(t, "sec", func(o *storage.S3Options) { o.Endpoint = "http://127.0.0.1:1"; o.MaxAttempts = 1 })
	_, err := offline.ReadAll(ctx, "x.json")
	errs = append(errs, err)
	denied := 0
	for _, err := range errs {
		if err == nil {
			continue
		}
		if strings.Contains(err.Error(), srv.SecretKey) {
			t.Errorf("error shows the secret: %v", err)
		}
		if strings.Contains(err.Error(), "SignatureDoesNotMatch") || strings.Contains(err.Error(), "403") {
			denied++
		}
		t.Log(err)
	}
	if denied == 0 {
		t.Error("the wrong secret was never refused")
	}
}

// TestS3FaultyNetwork reads and writes through a proxy that drops
// connections, truncates bodies, delays and answers 500/503 at random:
// every call returns the right bytes or an error, never wrong bytes.
func TestS3FaultyNetwork(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	data := randomBytes(4<<20+999, 21)
	direct := srv.Open(t, "faulty", nil)
	if _, err := direct.Put(ctx, "video/v.video", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	proxy := s3test.StartFaultProxy(t, srv.Endpoint, s3test.Faults{
		Error: 0.1, DropBefore: 0.05, DropAfter: 0.05, Truncate: 0.15, MaxDelay: 5 * time.Millisecond,
	}, 99)
	for _, withCache := range []bool{false, true} {
		s := srv.Open(t, "faulty", func(o *storage.S3Options) {
			o.Endpoint = proxy.Endpoint
			o.MaxBackoff = 20 * time.Millisecond
			if withCache {
				o.CacheDir = t.TempDir()
			}
		})
		obj, err := s.Open(ctx, "video/v.video")
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(5, 6))
		var ok, failed int
		for i := 0; i < 150; i++ {
			off := rng.Int64N(int64(len(data)))
			buf := make([]byte, 1+rng.IntN(300<<10))
			n, err := obj.ReadAt(buf, off)
			if !bytes.Equal(buf[:n], data[off:off+int64(n)]) {
				t.Fatalf("read %d at %d: wrong bytes (err %v)", len(buf), off, err)
			}
			if err != nil && err != io.EOF {
				failed++
				continue
			}
			ok++
		}
		for i := 0; i < 20; i++ {
			key := fmt.Sprintf("snapshot/%010d.json", i)
			body := []byte(fmt.Sprintf("cache=%v %d", withCache, i))
			err := s.PutIfAbsent(ctx, key, body)
			switch {
			case err == nil && withCache:
				t.Fatalf("%s: a second create won", key)
			case err == nil:
				if got, err := direct.ReadAll(ctx, key); err != nil || !bytes.Equal(got, body) {
					t.Fatalf("%s: %q (%v), wrote %q and was told it won", key, got, err, body)
				}
			case errors.Is(err, storage.ErrExists) && !withCache:
				t.Fatalf("%s: first create told the key was taken", key)
			case errors.Is(err, storage.ErrExists):
			default:
				failed++
			}
		}
		st := s.Stats()
		t.Logf("cache=%v: %d reads right, %d failed cleanly; proxy: %d requests, %d errors, %d drops, %d truncations; read retries %d",
			withCache, ok, failed, proxy.Requests.Load(), proxy.Errors.Load(), proxy.Drops.Load(), proxy.Truncations.Load(), st.ReadRetries)
		if ok < 100 {
			t.Errorf("only %d of 150 reads succeeded: retries do not work", ok)
		}
	}
}
