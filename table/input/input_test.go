package input_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/table/input"
	"github.com/framefs/framefs/table/storage"
)

// sourceKind makes a source of some bytes: a local file or an S3 object.
type sourceKind struct {
	name string
	// put stores data under name and returns its path or URI.
	put     func(t *testing.T, name string, data []byte) string
	sources *input.Opener
}

func sourceKinds(t *testing.T) []sourceKind {
	dir := t.TempDir()
	kinds := []sourceKind{{
		name: "local",
		put: func(t *testing.T, name string, data []byte) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		},
		sources: input.NewOpener(storage.S3Options{}),
	}}
	srv := s3test.Start(t)
	kinds = append(kinds, sourceKind{
		name: "s3",
		put: func(t *testing.T, name string, data []byte) string {
			srv.PutObject(t, "sources/"+name, data)
			return srv.URI("sources/" + name)
		},
		sources: input.NewOpener(srv.Options()),
	})
	return kinds
}

func readStream(ctx context.Context, src input.File) ([]byte, error) {
	rc := src.Stream(ctx)
	defer rc.Close()
	return io.ReadAll(rc)
}

// copySource returns the S3 range an input reads, which a store copies.
func copySource(t *testing.T, f input.File) storage.CopySource {
	t.Helper()
	cs, ok := input.CopySourceOf(f)
	if !ok {
		t.Fatalf("%s is not an S3 input", f.Name())
	}
	return cs
}

// TestSourceRanges: a source is its whole file or object or a range of
// it, read at random or streamed; ranges that do not fit and missing
// sources are refused with errors that name them.
func TestSourceRanges(t *testing.T) {
	ctx := context.Background()
	data := s3test.RandomBytes(10<<20+4321, 1) // streams of two chunks and more
	for _, k := range sourceKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			uri := k.put(t, "data.bin", data)
			for _, r := range []input.Range{{}, {Offset: 1000, Length: 9<<20 + 1}, {Offset: 5000}, {Offset: int64(len(data)) - 1, Length: 1}} {
				src, err := k.sources.Open(ctx, uri, r)
				if err != nil {
					t.Fatalf("%v: %v", r, err)
				}
				want := data[r.Offset:]
				if r.Length > 0 {
					want = want[:r.Length]
				}
				if src.Size() != int64(len(want)) || src.Name() != uri {
					t.Fatalf("%v: size %d name %q", r, src.Size(), src.Name())
				}
				rng := rand.New(rand.NewPCG(1, 2))
				for i := 0; i < 30; i++ {
					off := rng.Int64N(int64(len(want)))
					buf := make([]byte, 1+rng.IntN(300<<10))
					n, err := src.ReadAt(buf, off)
					if n != min(len(buf), len(want)-int(off)) || (n < len(buf) && err != io.EOF) || !bytes.Equal(buf[:n], want[off:off+int64(n)]) {
						t.Fatalf("%v: ReadAt(%d, %d) = %d, %v", r, len(buf), off, n, err)
					}
				}
				if n, err := src.ReadAt(make([]byte, 1), int64(len(want))); n != 0 || err != io.EOF {
					t.Fatalf("%v: read past the range: %d %v", r, n, err)
				}
				got, err := readStream(ctx, src)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%v: stream of %d bytes (want %d): %v", r, len(got), len(want), err)
				}
				src.Close()
				// Readable again after Close.
				if got, err := readStream(ctx, src); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%v: stream after Close: %v", r, err)
				}
			}
			size := int64(len(data))
			for _, r := range []input.Range{{Offset: size}, {Offset: size - 10, Length: 11}, {Offset: -1}, {Length: -5}, {Offset: size + 100, Length: 1}} {
				_, err := k.sources.Open(ctx, uri, r)
				if !errors.Is(err, input.ErrOutOfRange) || !strings.Contains(err.Error(), uri) {
					t.Errorf("range %+v: %v", r, err)
				}
			}
			missing := strings.Replace(uri, "data.bin", "missing.bin", 1)
			if _, err := k.sources.Open(ctx, missing, input.Range{}); !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), missing) {
				t.Errorf("missing source: %v", err)
			}
			if ok, err := k.sources.Exists(ctx, missing); ok || err != nil {
				t.Errorf("Exists(missing) = %v, %v", ok, err)
			}
			if ok, err := k.sources.Exists(ctx, uri); !ok || err != nil {
				t.Errorf("Exists(%s) = %v, %v", uri, ok, err)
			}
		})
	}
}

// TestSourceChanged: a source replaced after it was opened is refused by
// its stream and (S3) by its reads, never read as a mix of versions.
func TestSourceChanged(t *testing.T) {
	ctx := context.Background()
	data := s3test.RandomBytes(3<<20, 2)
	for _, k := range sourceKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			uri := k.put(t, "v.bin", data)
			src, err := k.sources.Open(ctx, uri, input.Range{Offset: 100})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := src.ReadAt(make([]byte, 10), 0); err != nil {
				t.Fatal(err)
			}
			src.Close()
			time.Sleep(10 * time.Millisecond) // a new modification time
			k.put(t, "v.bin", s3test.RandomBytes(len(data), 3))
			if _, err := readStream(ctx, src); !errors.Is(err, storage.ErrChanged) || !strings.Contains(err.Error(), uri) {
				t.Fatalf("stream of a replaced source: %v", err)
			}
			if _, err := src.ReadAt(make([]byte, 10), 2<<20); !errors.Is(err, storage.ErrChanged) {
				t.Fatalf("read of a replaced source: %v", err)
			}
		})
	}
}

// TestLocalFileFIFO: a FIFO given as a video is refused at once, with
// an error naming it, never opened (which would wait for a writer).
func TestLocalFileFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "cam.mp4")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := input.NewOpener(storage.S3Options{}).Open(context.Background(), fifo, input.Range{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+" is a FIFO") {
			t.Fatalf("open of a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("open of a FIFO blocked for 10 s (then: %v)", <-done)
	}
}

// TestS3SourceSmallReads: reads that jump cost small GETs; reads that go
// on sequentially are served by growing blocks, so a demuxer reading
// 64 KiB at a time makes a handful of GETs.
func TestS3SourceSmallReads(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	data := s3test.RandomBytes(8<<20, 4)
	srv.PutObject(t, "small/v.bin", data)
	sources := input.NewOpener(srv.Options())
	src, err := sources.Open(ctx, srv.URI("small/v.bin"), input.Range{Offset: 12345, Length: 7 << 20})
	if err != nil {
		t.Fatal(err)
	}
	// Box headers: 8 bytes here and there, each at a place far from the last.
	for _, off := range []int64{0, 8, 16, 2 << 20, 2<<20 + 8, 5 << 20, 5<<20 + 100, 7<<20 - 8} {
		buf := make([]byte, 8)
		if _, err := src.ReadAt(buf, off); err != nil || !bytes.Equal(buf, data[12345+off:12345+off+8]) {
			t.Fatalf("ReadAt(8, %d): %v", off, err)
		}
	}
	st := sources.Stats()
	t.Logf("8 scattered header reads: %d GETs, %d bytes", st.GETs, st.BytesRead)
	if st.GETs > 4 || st.BytesRead > 4*16<<10 {
		t.Errorf("8 header reads in 4 places cost %d GETs and %d bytes", st.GETs, st.BytesRead)
	}
	// A demuxer reading on from 1 MiB, 64 KiB at a time.
	before := st
	for off := int64(1 << 20); off < 5<<20; off += 64 << 10 {
		buf := make([]byte, 64<<10)
		if _, err := src.ReadAt(buf, off); err != nil || !bytes.Equal(buf, data[12345+off:12345+off+64<<10]) {
			t.Fatalf("sequential ReadAt at %d: %v", off, err)
		}
	}
	st = sources.Stats()
	gets, read := st.GETs-before.GETs, st.BytesRead-before.BytesRead
	t.Logf("4 MiB read on in 64 KiB reads: %d GETs, %d bytes", gets, read)
	if gets > 12 || read > 8<<20 {
		t.Errorf("4 MiB of sequential reads cost %d GETs and %d bytes", gets, read)
	}
}

// TestS3SourceFaults: streams and reads through a proxy that drops
// connections, cuts answers short and answers 500/503 at random return
// the right bytes or an error naming the source, never wrong bytes; a
// stalled stream stops when its context ends.
func TestS3SourceFaults(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	data := s3test.RandomBytes(17<<20, 5)
	srv.PutObject(t, "faulty/v.bin", data)
	proxy := s3test.StartFaultProxy(t, srv.Endpoint, s3test.Faults{
		Error: 0.1, DropBefore: 0.05, DropAfter: 0.05, Truncate: 0.2, MaxDelay: 5 * time.Millisecond,
	}, 11)
	opts := srv.Options()
	opts.Endpoint, opts.MaxBackoff = proxy.Endpoint, 20*time.Millisecond
	sources := input.NewOpener(opts)
	uri := srv.URI("faulty/v.bin")
	ok := 0
	for i := 0; i < 4; i++ {
		src, err := sources.Open(ctx, uri, input.Range{Offset: 777})
		if err != nil {
			t.Logf("open: %v", err)
			continue
		}
		got, err := readStream(ctx, src)
		if err != nil {
			if !strings.Contains(err.Error(), uri) {
				t.Errorf("stream error does not name the source: %v", err)
			}
			t.Logf("stream: %v", err)
			continue
		}
		if !bytes.Equal(got, data[777:]) {
			t.Fatalf("stream through faults: %d bytes, wrong content", len(got))
		}
		ok++
	}
	t.Logf("%d of 4 streams whole; proxy: %d requests, %d errors, %d drops, %d truncations; %d retries",
		ok, proxy.Requests.Load(), proxy.Errors.Load(), proxy.Drops.Load(), proxy.Truncations.Load(), sources.Stats().ReadRetries)
	if ok < 2 || proxy.Truncations.Load() == 0 {
		t.Errorf("retries do not carry streams through faults: %d of 4", ok)
	}
	proxy.SetFaults(s3test.Faults{})
	src, err := sources.Open(ctx, uri, input.Range{})
	if err != nil {
		t.Fatal(err)
	}
	proxy.SetFaults(s3test.Faults{Stall: 1})
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := readStream(sctx, src); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled stream: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a stalled stream took %v to stop", d)
	}
}

// TestS3PutPieces: copied pieces (a whole object and a range of another)
// and streamed bytes make one object; the node reads none of the copied
// bytes, the server's SHA-256 of each copied piece is returned, and a
// source replaced after it was opened fails the write, leaving nothing.
func TestS3PutPieces(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	a, b := s3test.RandomBytes(6<<20, 6), s3test.RandomBytes(9<<20, 7)
	srv.PutObject(t, "src/a.bin", a)
	srv.PutObject(t, "src/b.bin", b)
	sources := input.NewOpener(srv.Options())
	store := srv.Open(t, "tbl", func(o *storage.S3Options) { o.PartSize = 5 << 20 })
	srcA, err := sources.Open(ctx, srv.URI("src/a.bin"), input.Range{})
	if err != nil {
		t.Fatal(err)
	}
	srcB, err := sources.Open(ctx, srv.URI("src/b.bin"), input.Range{Offset: 1 << 20, Length: 7 << 20})
	if err != nil {
		t.Fatal(err)
	}
	small, _ := sources.Open(ctx, srv.URI("src/b.bin"), input.Range{Length: 1 << 20})
	copyA, copyB, copySmall := copySource(t, srcA), copySource(t, srcB), copySource(t, small)
	if !store.CanCopy(copyA) || !store.CanCopy(copyB) || store.CanCopy(copySmall) {
		t.Fatal("CanCopy: copies need S3 ranges of 5 MiB to 5 GiB on the same server")
	}
	tail := s3test.RandomBytes(6<<20+99, 8)
	pieces := []storage.Piece{
		{Copy: &copyA, Size: srcA.Size()},
		{Copy: &copyB, Size: srcB.Size()},
		{R: bytes.NewReader(tail[:1<<20]), Size: 1 << 20},
		{R: bytes.NewReader(tail[1<<20:]), Size: int64(len(tail) - 1<<20)},
	}
	digests, err := store.PutPieces(ctx, "video/p.video", pieces)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte{}, a...), b[1<<20:8<<20]...), tail...)
	got, err := store.ReadAll(ctx, "video/p.video")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (want %d): %v", len(got), len(want), err)
	}
	hexSum := func(p []byte) string { s := sha256.Sum256(p); return hex.EncodeToString(s[:]) }
	if digests[0] != hexSum(a) || digests[1] != hexSum(b[1<<20:8<<20]) || digests[2] != "" {
		t.Fatalf("digests %q", digests)
	}
	st, srcStats := store.Stats(), sources.Stats()
	t.Logf("table store: %+v; sources: %d GETs, %d bytes read", st, srcStats.GETs, srcStats.BytesRead)
	if st.Copies != 2 || st.BytesCopied != int64(len(a)+7<<20) || srcStats.BytesRead != 0 || st.BytesRead != int64(len(got)) {
		t.Fatalf("copied bytes went through the node: %+v, sources read %d", st, srcStats.BytesRead)
	}

	// A source replaced between its opening and the copy: refused.
	srv.PutObject(t, "src/a.bin", s3test.RandomBytes(6<<20, 9))
	_, err = store.PutPieces(ctx, "video/q.video", []storage.Piece{{Copy: &copyA, Size: srcA.Size()}, {R: bytes.NewReader(tail), Size: int64(len(tail))}})
	if !errors.Is(err, storage.ErrChanged) || !strings.Contains(err.Error(), srv.URI("src/a.bin")) {
		t.Fatalf("copy of a replaced source: %v", err)
	}
	if _, err := store.Open(ctx, "video/q.video"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a refused copy left an object: %v", err)
	}
	if ups, err := store.ListTemporaries(ctx); err != nil || len(ups) != 0 {
		t.Fatalf("a refused copy left uploads: %v %v", ups, err)
	}
	// Pieces out of order are refused before anything is written.
	if _, err := store.PutPieces(ctx, "video/r.video", []storage.Piece{{R: bytes.NewReader(tail), Size: int64(len(tail))}, {Copy: &copyB, Size: srcB.Size()}}); err == nil {
		t.Fatal("a copy after streamed bytes was accepted")
	}
}

// TestS3CopyOfChecksummedSource: a source stored with its own SHA-256
// checksum; the digest of a copied range is the range's, or none, never
// the whole object's.
func TestS3CopyOfChecksummedSource(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	data := s3test.RandomBytes(8<<20, 10)
	sum := sha256.Sum256(data)
	key := "src/checksummed.bin"
	_, err := srv.Client(t).PutObject(ctx, &s3.PutObjectInput{
		Bucket: &srv.Bucket, Key: &key, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256, ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum[:])),
	})
	if err != nil {
		t.Fatal(err)
	}
	sources := input.NewOpener(srv.Options())
	store := srv.Open(t, "tbl", nil)
	for _, r := range []input.Range{{}, {Offset: 1 << 20, Length: 6 << 20}} {
		src, err := sources.Open(ctx, srv.URI(key), r)
		if err != nil {
			t.Fatal(err)
		}
		cs := copySource(t, src)
		digests, err := store.PutPieces(ctx, "video/c.video", []storage.Piece{{Copy: &cs, Size: src.Size()}, {R: strings.NewReader("index"), Size: 5}})
		if err != nil {
			t.Fatal(err)
		}
		want := sha256.Sum256(data[r.Offset : r.Offset+src.Size()])
		t.Logf("range %+v: digest %q", r, digests[0])
		if digests[0] != "" && digests[0] != hex.EncodeToString(want[:]) {
			t.Fatalf("range %+v: digest %s is not the range's SHA-256 %x", r, digests[0], want)
		}
	}
}

// TestLocalStreamToFile: a local source's stream copied into a file (the
// kernel's copy, through its WriteTo) is its range exactly, also after a
// first Read; a file that changed after it was opened is refused.
func TestLocalStreamToFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	data := s3test.RandomBytes(3<<20+5, 5)
	p := filepath.Join(dir, "v.bin")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sources := input.NewOpener(storage.S3Options{})
	copyTo := func(rc io.Reader, head int) ([]byte, error) {
		out, err := os.Create(filepath.Join(dir, "out.bin"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if head > 0 {
			if _, err := io.CopyN(out, rc, int64(head)); err != nil {
				return nil, err
			}
		}
		if _, err := io.Copy(out, rc); err != nil {
			return nil, err
		}
		return os.ReadFile(out.Name())
	}
	for _, r := range []input.Range{{}, {Offset: 4097, Length: 2 << 20}, {Offset: 1 << 20}} {
		for _, head := range []int{0, 1000} {
			src, err := sources.Open(ctx, p, r)
			if err != nil {
				t.Fatal(err)
			}
			want := data[r.Offset:]
			if r.Length > 0 {
				want = want[:r.Length]
			}
			rc := src.Stream(ctx)
			if _, ok := rc.(io.WriterTo); !ok {
				t.Fatal("a local stream does not write itself")
			}
			got, err := copyTo(rc, head)
			rc.Close()
			src.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("range %v after %d bytes read: %d bytes copied (want %d): %v", r, head, len(got), len(want), err)
			}
		}
	}
	src, err := sources.Open(ctx, p, input.Range{Offset: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := os.Truncate(p, 2<<20); err != nil {
		t.Fatal(err)
	}
	rc := src.Stream(ctx)
	defer rc.Close()
	if _, err := copyTo(rc, 0); !errors.Is(err, storage.ErrChanged) || !strings.Contains(err.Error(), p) {
		t.Fatalf("copy of a truncated file: %v", err)
	}
}
