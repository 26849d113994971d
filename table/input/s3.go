package input

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/framefs/framefs/internal/readruns"
	"github.com/framefs/framefs/table/storage"
)

// s3File is a range of an S3 object read for ingest: any key of any
// bucket the credentials reach, not only keys a table writes.
type s3File struct {
	ctx    context.Context // from Open: ReadAt fails once it ends
	obj    *storage.PinnedObject
	off, n int64
	reads  *blockReader
}

// openS3 HEADs key (a raw key of the bucket) for its size and ETag with
// client and returns the range r of it.
func openS3(ctx context.Context, client *storage.S3, bucket, key string, r Range) (*s3File, error) {
	obj, err := client.OpenPinned(ctx, bucket, key)
	if err != nil {
		return nil, err
	}
	off, n, err := r.resolve(obj.URI(), obj.Size())
	if err != nil {
		return nil, err
	}
	f := &s3File{ctx: ctx, obj: obj, off: off, n: n}
	f.reads = newBlockReader(ctx, n, func(ctx context.Context, at int64, p []byte) error {
		return obj.Fetch(ctx, off+at, p)
	})
	return f, nil
}

func (f *s3File) Size() int64  { return f.n }
func (f *s3File) Name() string { return f.obj.URI() }
func (f *s3File) Version() string {
	return fmt.Sprintf("%s:%s%s", f.obj.URI(), f.obj.ETag(), Range{f.off, f.n})
}
func (f *s3File) Close() error { return nil }

func (f *s3File) ReadAt(p []byte, off int64) (int, error) {
	if err := f.ctx.Err(); err != nil {
		return 0, fmt.Errorf("storage: GET %s: %w", f.obj.URI(), err)
	}
	return f.reads.ReadAt(p, off)
}

// copySource is the range as a store copies it server-side.
func (f *s3File) copySource() storage.CopySource {
	return storage.CopySource{Object: f.obj, Offset: f.off, Length: f.n}
}

// Stream implements File: ranged GETs of streamChunk bytes, streamAhead
// at a time, each pinned to the ETag, delivered in order.
func (f *s3File) Stream(ctx context.Context) io.ReadCloser {
	return newChunkStream(ctx, f.n, func(ctx context.Context, at int64, p []byte) error {
		return f.obj.Fetch(ctx, f.off+at, p)
	})
}

const (
	// streamChunk is the size of one ranged GET of a stream.
	streamChunk = 8 << 20
	// streamAhead is how many of them run at once; a stream holds at
	// most streamAhead+1 chunks in memory.
	streamAhead = 4
)

// chunkStream reads [0, size) through fetch in chunks fetched ahead in
// parallel and handed out in order.
type chunkStream struct {
	cancel  context.CancelFunc
	results chan chan chunkResult // in offset order
	free    chan []byte           // chunk buffers not in use
	cur     []byte                // unread bytes of the chunk being read
	buf     []byte                // the buffer cur lies in
	err     error
}

type chunkResult struct {
	data []byte
	err  error
}

func newChunkStream(ctx context.Context, size int64, fetch fetchFunc) *chunkStream {
	ctx, cancel := context.WithCancel(ctx)
	cs := &chunkStream{
		cancel:  cancel,
		results: make(chan chan chunkResult, streamAhead),
		free:    make(chan []byte, streamAhead+1),
	}
	for i := 0; i < streamAhead+1; i++ {
		cs.free <- nil
	}
	go func() {
		defer close(cs.results)
		for off := int64(0); off < size; off += streamChunk {
			var buf []byte
			select {
			case buf = <-cs.free:
			case <-ctx.Done():
				return
			}
			n := min(streamChunk, size-off)
			if int64(cap(buf)) < n {
				buf = make([]byte, streamChunk)
			}
			res := make(chan chunkResult, 1)
			select {
			case cs.results <- res:
			case <-ctx.Done():
				return
			}
			go func(off int64, p []byte) {
				err := fetch(ctx, off, p)
				res <- chunkResult{data: p, err: err}
			}(off, buf[:n])
		}
	}()
	return cs
}

// fetchFunc fills p with the bytes at off of an object or range; it
// returns an error rather than fewer bytes.
type fetchFunc = func(ctx context.Context, off int64, p []byte) error

func (cs *chunkStream) Read(p []byte) (int, error) {
	for len(cs.cur) == 0 {
		if cs.err != nil {
			return 0, cs.err
		}
		if cs.buf != nil {
			cs.free <- cs.buf // never blocks: one slot per buffer
			cs.buf = nil
		}
		res, ok := <-cs.results
		if !ok {
			cs.err = io.EOF
			continue
		}
		r := <-res
		if r.err != nil {
			cs.err = r.err
			cs.cancel()
			continue
		}
		cs.cur, cs.buf = r.data, r.data[:cap(r.data)]
	}
	n := copy(p, cs.cur)
	cs.cur = cs.cur[n:]
	return n, nil
}

func (cs *chunkStream) Close() error {
	cs.cancel()
	if cs.err == nil {
		cs.err = fmt.Errorf("input: read of a closed stream: %w", context.Canceled)
	}
	return nil
}

// blockReader serves the reads of an S3 input through a few blocks kept in
// memory. A read that no block holds fetches a new block starting where
// it starts: minBlock bytes after a jump (box headers, one fragment's
// moof), twice the last block's size for a read that continues where its
// stream's previous read ended (a demuxer reading on), up to maxBlock.
// A read larger than the block it would fetch is fetched exactly and not
// kept. Indexing a video thus reads little more than its moov or moof
// boxes, in a handful of GETs.
type blockReader struct {
	ctx   context.Context
	size  int64
	fetch fetchFunc

	mu     sync.Mutex // guards blocks and runs
	blocks []memBlock // least recently used first
	runs   readruns.Set
}

type memBlock struct {
	off  int64
	data []byte
}

const (
	minBlock  = 16 << 10
	maxBlock  = 4 << 20
	maxBlocks = 8
)

func newBlockReader(ctx context.Context, size int64, fetch fetchFunc) *blockReader {
	return &blockReader{ctx: ctx, size: size, fetch: fetch}
}

func (r *blockReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("input: negative offset %d", off)
	}
	if off >= r.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.size-off))
	done := 0
	for done < n {
		pos := off + int64(done)
		if c := r.cached(p[done:n], pos); c > 0 {
			done += c
			continue
		}
		bs := r.nextBlock(off)
		if int64(n-done) >= bs {
			if err := r.fetch(r.ctx, pos, p[done:n]); err != nil {
				return done, err
			}
			done = n
			break
		}
		data := make([]byte, min(bs, r.size-pos))
		if err := r.fetch(r.ctx, pos, data); err != nil {
			return done, err
		}
		r.keep(memBlock{off: pos, data: data})
	}
	r.ended(off, off+int64(n))
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// cached copies what a kept block holds of [pos, pos+len(p)) into p.
func (r *blockReader) cached(p []byte, pos int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.blocks) - 1; i >= 0; i-- {
		b := r.blocks[i]
		if pos >= b.off && pos < b.off+int64(len(b.data)) {
			r.blocks = append(append(r.blocks[:i:i], r.blocks[i+1:]...), b)
			return copy(p, b.data[pos-b.off:])
		}
	}
	return 0
}

func (r *blockReader) keep(b memBlock) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.blocks) == maxBlocks {
		r.blocks = r.blocks[1:]
	}
	r.blocks = append(r.blocks, b)
}

// nextBlock is the size of the block to fetch for a read starting at off.
func (r *blockReader) nextBlock(off int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if run := r.runs.Find(off); run != nil {
		return run.Ahead
	}
	return minBlock
}

// ended records a read of [off, end): a read that goes on where its run
// ended doubles the run's next block.
func (r *blockReader) ended(off, end int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run, fresh := r.runs.Read(off, end)
	if fresh {
		run.Ahead = minBlock
	} else {
		run.Ahead = min(2*run.Ahead, maxBlock)
	}
}
