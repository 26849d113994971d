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
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/table/storage"
)

// unseekable hides bytes.Reader's Seek/ReadAt so Put sees a plain stream.
type unseekable struct{ r io.Reader }

func (u unseekable) Read(p []byte) (int, error) { return u.r.Read(p) }

func TestS3MultipartPut(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	s := srv.Open(t, "mp", func(o *storage.S3Options) { o.PartSize = 5 << 20; o.UploadConcurrency = 3 })
	data := s3test.RandomBytes(21<<20+333, 11)
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
		data := s3test.RandomBytes(size, uint64(size))
		key := fmt.Sprintf("video/%d.video", size)
		if n, err := s.Put(ctx, key, unseekable{bytes.NewReader(data)}); err != nil || n != int64(size) {
			t.Fatalf("put %d bytes: %d %v", size, n, err)
		}
		if got, err := s.ReadAll(ctx, key); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d of %d bytes: %v", len(got), size, err)
		}
	}
	if ups, err := s.ListTemporaries(ctx); err != nil || len(ups) != 0 {
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
	data := s3test.RandomBytes(8<<20+5, 13)
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

func TestS3MultipartAbort(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	s := srv.Open(t, "abort", func(o *storage.S3Options) { o.PartSize = 5 << 20 })
	_, err := s.Put(ctx, "video/broken.video", &errAfter{r: bytes.NewReader(s3test.RandomBytes(13<<20, 5)), n: 12 << 20})
	if !errors.Is(err, errSourceBroke) {
		t.Fatalf("put from a failing source: %v", err)
	}
	if _, err := s.Open(ctx, "video/broken.video"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a failed put left an object: %v", err)
	}
	if ups, err := s.ListTemporaries(ctx); err != nil || len(ups) != 0 {
		t.Fatalf("failed put left uploads: %v %v", ups, err)
	}
	// A cancelled put aborts too.
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	slow := io.MultiReader(bytes.NewReader(s3test.RandomBytes(11<<20, 6)), readerFunc(func(p []byte) (int, error) {
		<-cctx.Done()
		return 0, cctx.Err()
	}))
	if _, err := s.Put(cctx, "video/cancelled.video", slow); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
	if ups, err := s.ListTemporaries(ctx); err != nil || len(ups) != 0 {
		t.Fatalf("cancelled put left uploads: %v %v", ups, err)
	}
}

type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// TestS3ReadStopsWithContext: a ranged read held up by a server that
// does not answer returns as soon as the context the object was opened
// with ends.
func TestS3ReadStopsWithContext(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	direct := srv.Open(t, "stall", nil)
	if _, err := direct.Put(ctx, "video/v.video", bytes.NewReader(s3test.RandomBytes(3<<20, 3))); err != nil {
		t.Fatal(err)
	}
	proxy := s3test.StartFaultProxy(t, srv.Endpoint, s3test.Faults{}, 1)
	for _, withCache := range []bool{false, true} {
		s := srv.Open(t, "stall", func(o *storage.S3Options) {
			o.Endpoint = proxy.Endpoint
			if withCache {
				o.CacheDir = t.TempDir()
			}
		})
		openCtx, cancel := context.WithCancel(ctx)
		obj, err := s.Open(openCtx, "video/v.video")
		if err != nil {
			t.Fatal(err)
		}
		proxy.SetFaults(s3test.Faults{Stall: 1})
		done := make(chan error, 1)
		go func() {
			_, err := obj.ReadAt(make([]byte, 4096), 1<<20)
			done <- err
		}()
		time.Sleep(100 * time.Millisecond)
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cache=%v: stalled read ended with %v", withCache, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("cache=%v: a stalled read did not stop when its context ended", withCache)
		}
		proxy.SetFaults(s3test.Faults{})
		obj.Close()
	}
	if proxy.Stalls.Load() == 0 {
		t.Fatal("no request reached the stalled proxy")
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
	data := s3test.RandomBytes(4<<20+999, 21)
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
