// Package input opens what ingest reads: videos and sidecars given as local
// paths or s3://BUCKET/KEY objects, whole or a byte range of them. An
// opened File is pinned to the version seen when it was opened (an S3
// object's ETag, a local file's size and modification time): a file that
// changes while it is read fails with storage.ErrChanged instead of mixing
// two versions. The package reads; storing is package table's, and the
// object stores are package storage's (whose S3 client it reads through,
// and whose S3 stores copy an input server-side: CopySourceOf).
package input

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/framefs/framefs/internal/regfile"
	"github.com/framefs/framefs/table/storage"
)

// ErrOutOfRange means a byte range does not lie inside its file or object.
var ErrOutOfRange = errors.New("input: byte range out of bounds")

// File is an opened input, what ingest reads a video or sidecar from: a
// byte range of a local file or of an S3 object. It is pinned to the
// version seen when it was opened: every later read of an S3 object asks
// for the first ETag (If-Match), a local file's size and modification time
// are checked again, and a file that changed fails with
// storage.ErrChanged instead of mixing two versions.
type File interface {
	// ReadAt reads the range; offset 0 is its first byte. Reads are
	// small ranged GETs on S3 (box headers and sample tables cost a few
	// KiB each), growing for reads that continue sequentially.
	io.ReaderAt
	// Size is the length of the range in bytes.
	Size() int64
	// Name is the path or s3:// URI the file was opened as.
	Name() string
	// Version names these exact bytes: the file or object, its version
	// (ETag, or size and modification time) and the range. Two files
	// with the same Version hold the same bytes.
	Version() string
	// Stream reads the whole range in order, read ahead in bounded memory
	// (S3: a few ranged GETs in parallel). It fails unless every byte of
	// the range was read from the version first seen.
	Stream(ctx context.Context) io.ReadCloser
	// Close releases what the file holds open. A file may be read again
	// after Close; it reopens what it needs, still pinned.
	Close() error
}

// Range selects the bytes of an input: Length bytes from Offset, or
// everything from Offset when Length is 0.
type Range struct {
	Offset, Length int64
}

// resolve checks r against a whole of size bytes (name is for messages)
// and returns the offset and length it selects.
func (r Range) resolve(name string, size int64) (off, n int64, err error) {
	switch {
	case r.Offset < 0 || r.Length < 0:
		return 0, 0, fmt.Errorf("%w: %s: offset %d and length %d must not be negative", ErrOutOfRange, name, r.Offset, r.Length)
	case r.Offset >= size && (r.Offset > 0 || r.Length > 0):
		return 0, 0, fmt.Errorf("%w: %s: offset %d is past the end (%d bytes)", ErrOutOfRange, name, r.Offset, size)
	case r.Length > size-r.Offset:
		return 0, 0, fmt.Errorf("%w: %s: the range %d+%d ends at byte %d, past the end (%d bytes)",
			ErrOutOfRange, name, r.Offset, r.Length, r.Offset+r.Length, size)
	case r.Length == 0:
		return r.Offset, size - r.Offset, nil
	}
	return r.Offset, r.Length, nil
}

func (r Range) String() string {
	if r == (Range{}) {
		return ""
	}
	if r.Length == 0 {
		return fmt.Sprintf("@%d", r.Offset)
	}
	return fmt.Sprintf("@%d+%d", r.Offset, r.Length)
}

// Opener opens inputs: local paths, and s3://BUCKET/KEY objects read with
// the S3 options given (the same endpoint and credentials as tables). It
// is safe for concurrent use.
type Opener struct {
	opts storage.S3Options

	mu     sync.Mutex  // guards client and err
	client *storage.S3 // made on first use; serves every bucket
	err    error
}

// NewOpener returns an opener of inputs. Inputs are read once, so no
// block cache is used (opts.CacheDir is ignored).
func NewOpener(opts storage.S3Options) *Opener {
	opts.CacheDir = ""
	opts.MetadataCacheBytes = -1
	return &Opener{opts: opts}
}

// s3Client returns the client of every bucket, made for the first one.
func (o *Opener) s3Client(ctx context.Context, bucket string) (*storage.S3, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.client == nil && o.err == nil {
		o.client, o.err = storage.NewS3(ctx, "s3://"+bucket, o.opts)
	}
	return o.client, o.err
}

// Stats returns the counters of the requests made for S3 inputs.
func (o *Opener) Stats() storage.S3Stats {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.client == nil {
		return storage.S3Stats{}
	}
	return o.client.Stats()
}

// ParseS3Object splits s3://BUCKET/KEY. The key is taken as it is (any
// S3 key, not only those a table writes) but must name an object, not a
// prefix.
func ParseS3Object(uri string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q is not an s3:// URI", uri)
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" || key == "" || strings.HasSuffix(key, "/") {
		return "", "", fmt.Errorf("%q: want s3://BUCKET/KEY naming an object", uri)
	}
	return bucket, key, nil
}

// Open opens the range r of a local file or of an S3 object (uri
// s3://BUCKET/KEY). A missing file or object is storage.ErrNotFound and a
// range that does not fit ErrOutOfRange, each naming the input. Reads
// through ReadAt run under ctx.
func (o *Opener) Open(ctx context.Context, uri string, r Range) (File, error) {
	if storage.IsS3URI(uri) {
		bucket, key, err := ParseS3Object(uri)
		if err != nil {
			return nil, err
		}
		client, err := o.s3Client(ctx, bucket)
		if err != nil {
			return nil, err
		}
		return openS3(ctx, client, bucket, key, r)
	}
	if strings.Contains(uri, "://") {
		return nil, fmt.Errorf("input: %q: unknown URI scheme (want a file or s3://BUCKET/KEY)", uri)
	}
	return openLocal(ctx, uri, r)
}

// Exists reports whether a file or object exists (sidecar lookups). Any
// answer but "found" or "not found" is an error.
func (o *Opener) Exists(ctx context.Context, uri string) (bool, error) {
	f, err := o.Open(ctx, uri, Range{})
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f.Close()
	return true, nil
}

// ReadAll reads a whole input into memory (sidecars).
func ReadAll(ctx context.Context, f File) ([]byte, error) {
	rc := f.Stream(ctx)
	defer rc.Close()
	var buf bytes.Buffer
	buf.Grow(int(min(f.Size(), 64<<20)))
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CopySourceOf returns the range of an S3 object f reads, which an S3
// store may copy server-side (storage.Copier), and false for a local file.
func CopySourceOf(f File) (storage.CopySource, bool) {
	if s, ok := f.(*s3File); ok {
		return s.copySource(), true
	}
	return storage.CopySource{}, false
}

// localFile is a range of a local file. The file is opened when it is
// read and closed by Close; every opening checks that its size and
// modification time are those seen first.
type localFile struct {
	ctx   context.Context
	path  string
	off   int64
	n     int64
	size  int64 // of the whole file, when first seen
	mtime time.Time

	mu sync.Mutex // guards f
	f  *os.File
}

func openLocal(ctx context.Context, p string, r Range) (*localFile, error) {
	// A FIFO or a device is refused before it is opened: opening a FIFO
	// blocks until someone writes to it.
	f, err := regfile.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: no such file", storage.ErrNotFound, p)
		}
		return nil, fmt.Errorf("input: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("input: %w", err)
	}
	off, n, err := r.resolve(p, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	return &localFile{ctx: ctx, path: p, off: off, n: n, size: st.Size(), mtime: st.ModTime(), f: f}, nil
}

func (l *localFile) Size() int64  { return l.n }
func (l *localFile) Name() string { return l.path }

func (l *localFile) Version() string {
	return fmt.Sprintf("file:%s:%d:%d%s", l.path, l.size, l.mtime.UnixNano(), Range{l.off, l.n})
}

// check fails with ErrChanged unless f has the size and modification
// time first seen.
func (l *localFile) check(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if st.Size() != l.size || !st.ModTime().Equal(l.mtime) {
		return fmt.Errorf("%w: %s: %d bytes modified %s, first seen with %d bytes modified %s",
			storage.ErrChanged, l.path, st.Size(), st.ModTime().Format(time.RFC3339Nano), l.size, l.mtime.Format(time.RFC3339Nano))
	}
	return nil
}

// open returns a newly opened file checked against the pinned version.
func (l *localFile) open() (*os.File, error) {
	f, err := regfile.Open(l.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s was removed", storage.ErrChanged, l.path)
		}
		return nil, fmt.Errorf("input: %w", err)
	}
	if err := l.check(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (l *localFile) ReadAt(p []byte, off int64) (int, error) {
	if err := l.ctx.Err(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	if l.f == nil {
		f, err := l.open()
		if err != nil {
			l.mu.Unlock()
			return 0, err
		}
		l.f = f
	}
	f := l.f
	l.mu.Unlock()
	if off < 0 {
		return 0, fmt.Errorf("input: read %s: negative offset %d", l.path, off)
	}
	if off >= l.n {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := len(p)
	if int64(want) > l.n-off {
		p = p[:l.n-off]
	}
	n, err := f.ReadAt(p, l.off+off)
	if err == nil && n < want {
		err = io.EOF
	}
	if err == io.EOF && n < len(p) {
		err = fmt.Errorf("%w: %s is shorter than when it was opened", storage.ErrChanged, l.path)
	}
	return n, err
}

func (l *localFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

func (l *localFile) Stream(ctx context.Context) io.ReadCloser {
	f, err := l.open()
	if err != nil {
		return errReader{err}
	}
	return &localStream{ctx: ctx, src: l, f: f, r: io.NewSectionReader(f, l.off, l.n)}
}

// localStream reads a local file's range and checks at the end that
// the file is still the version first seen and that all of it was read.
type localStream struct {
	ctx  context.Context
	src  *localFile
	f    *os.File
	r    *io.SectionReader
	read int64
}

func (s *localStream) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := s.r.Read(p)
	s.read += int64(n)
	if err == io.EOF {
		if s.read != s.src.n {
			return n, fmt.Errorf("%w: %s: read %d of %d bytes", storage.ErrChanged, s.src.path, s.read, s.src.n)
		}
		if cerr := s.src.check(s.f); cerr != nil {
			return n, cerr
		}
	}
	return n, err
}

// WriteTo writes the rest of the range to w through the file's own
// offset, in pieces of at most 64 MiB with a look at the context between
// them, so that a file destination copies it in the kernel
// (copy_file_range) instead of through a buffer. It checks the end as
// Read does.
func (s *localStream) WriteTo(w io.Writer) (int64, error) {
	if _, err := s.f.Seek(s.src.off+s.read, io.SeekStart); err != nil {
		return 0, fmt.Errorf("input: %w", err)
	}
	var total int64
	for s.read < s.src.n {
		if err := s.ctx.Err(); err != nil {
			return total, err
		}
		n, err := io.Copy(w, io.LimitReader(s.f, min(s.src.n-s.read, 64<<20)))
		s.read += n
		total += n
		if err != nil {
			return total, err
		}
		if n == 0 {
			break
		}
	}
	if s.read != s.src.n {
		return total, fmt.Errorf("%w: %s: read %d of %d bytes", storage.ErrChanged, s.src.path, s.read, s.src.n)
	}
	return total, s.src.check(s.f)
}

func (s *localStream) Close() error { return s.f.Close() }

// errReader is a stream that could not start.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
func (e errReader) Close() error             { return nil }
