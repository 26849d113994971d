package table

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"log/slog"
	"sync"

	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// preparedVideo is a video source checked and indexed, ready to be
// packed. Its source is pinned to the version that was indexed: packing
// refuses one that changed since.
type preparedVideo struct {
	src  storage.Source
	size int64
	// sha256 of the payload: known before packing for local files (which
	// are hashed first), worked out while packing for S3 sources.
	sha256 string
	// payloadKey is the same for two identical payloads: the SHA-256 when
	// known, else the source's version (object, ETag and range).
	payloadKey    string
	index         *videoidx.Index
	indexData     []byte
	sizes         []byte // encoded sizes block, or nil
	sizesIdentity string // identity of sizes
}

// prepareVideo opens a video source (a local file or an S3 object, or a
// byte range of one), indexes it from ranged reads of the boxes it needs,
// and computes frame sizes when the table has a sizer and withSizes is
// set. A local file is also hashed, which reads it once more; an S3
// source is hashed while it is packed. What the source holds open is
// released; packing opens it again.
func (t *Table) prepareVideo(ctx context.Context, vf VideoFile, img ImageOptions, withSizes bool) (*preparedVideo, error) {
	src, err := t.opts.Sources.Open(ctx, vf.Path, storage.Range{Offset: vf.Offset, Length: vf.Length})
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrOutOfRange) || !storage.IsS3URI(vf.Path) {
			return nil, fmt.Errorf("%w: %w", ErrInvalidInput, err)
		}
		return nil, err
	}
	defer src.Close()
	name := vf.describe()
	if src.Size() == 0 {
		return nil, fmt.Errorf("%w: %s is empty (0 bytes)", ErrInvalidInput, name)
	}
	pv := &preparedVideo{src: src, size: src.Size(), payloadKey: src.Version()}
	if !storage.IsS3URI(vf.Path) {
		if pv.sha256, err = hashSource(ctx, src); err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		pv.payloadKey = "sha256:" + pv.sha256
	}
	// A read that failed (the network, a source that changed) is not the
	// video's fault: it must not be reported as a bad video.
	r := &readErrors{r: src}
	if pv.index, err = t.opts.Indexer(ctx, r, src.Size()); err != nil {
		if rerr := r.first(); rerr != nil {
			return nil, fmt.Errorf("index %s: %w", name, rerr)
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidInput, name, err)
	}
	pv.indexData = pv.index.Encode()
	if withSizes && t.opts.Sizer != nil {
		sizes, err := t.opts.Sizer.FrameSizes(ctx, r, src.Size(), pv.index, img)
		if err != nil {
			if rerr := r.first(); rerr != nil {
				return nil, fmt.Errorf("decode %s: %w", name, rerr)
			}
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %s does not decode: %v", ErrInvalidInput, name, err)
		}
		if len(sizes) != pv.index.Frames() {
			return nil, fmt.Errorf("sizes of %s: %d for %d frames", name, len(sizes), pv.index.Frames())
		}
		pv.sizes = encodeSizes(sizes)
		pv.sizesIdentity = t.opts.Sizer.Identity(img)
	}
	return pv, nil
}

// readErrors passes reads through and remembers the first that failed
// with something other than the end of the range.
type readErrors struct {
	r   io.ReaderAt
	mu  sync.Mutex
	err error
}

func (r *readErrors) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.r.ReadAt(p, off)
	if err != nil && err != io.EOF {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
	return n, err
}

func (r *readErrors) first() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// hashSource returns the SHA-256 (hex) of a whole source, streamed.
func hashSource(ctx context.Context, src storage.Source) (string, error) {
	rc := src.Stream(ctx)
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// packEntry is one payload of a pack with its index and sizes blocks.
type packEntry struct {
	v      *preparedVideo
	copied bool // copied by the object store itself, not streamed
	ref    VideoRef
}

// writePacks stores the videos in pack objects of about target bytes
// each. Identical payloads within one pack are stored once. It returns one
// reference per video, in order, and the bytes written.
//
// When the store can copy a source server-side (an S3 table and an S3
// source on the same service), the payload is copied by the server and
// never passes through this machine. S3 wants every part of a multipart
// upload but the last to be at least 5 MiB, so copied payloads (each one
// part) come first in the pack, and the streamed payloads, frame indexes
// and sizes blocks follow as the last parts. Otherwise each payload is
// followed by its index and sizes. Readers find everything by the offsets
// in the manifest either way.
func (t *Table) writePacks(ctx context.Context, videos []*preparedVideo, target int64) ([]VideoRef, int64, error) {
	out := make([]VideoRef, len(videos))
	copier, _ := t.store.(storage.Copier)
	var written int64
	for start := 0; start < len(videos); {
		key := newObjectKey(prefixVideo, ".video")
		var entries []*packEntry
		entryOf := map[int]*packEntry{}
		seen := map[string]*packEntry{}
		end := start
		for size := int64(0); end < len(videos) && (end == start || size < target); end++ {
			v := videos[end]
			if e, ok := seen[v.payloadKey]; ok {
				entryOf[end] = e
				continue
			}
			e := &packEntry{v: v, copied: copier != nil && copier.CanCopy(v.src)}
			entries = append(entries, e)
			seen[v.payloadKey], entryOf[end] = e, e
			size += v.size + int64(len(v.indexData)) + int64(len(v.sizes))
		}
		var pieces []storage.Piece
		var offset int64
		for _, e := range entries {
			if e.copied {
				e.ref.Offset = offset
				pieces = append(pieces, storage.Piece{Copy: e.v.src, Size: e.v.size})
				offset += e.v.size
			}
		}
		copies, tailStart := len(pieces), offset
		var tail []packPart
		for _, e := range entries {
			v := e.v
			if !e.copied {
				e.ref.Offset = offset
				tail = append(tail, packPart{video: v})
				offset += v.size
			}
			e.ref.IndexOffset, e.ref.IndexLength = offset, int64(len(v.indexData))
			tail = append(tail, packPart{data: v.indexData})
			offset += int64(len(v.indexData))
			if v.sizes != nil {
				e.ref.Sizes = []SizesRef{{Identity: v.sizesIdentity, Object: key, Offset: offset, Length: int64(len(v.sizes))}}
				tail = append(tail, packPart{data: v.sizes})
				offset += int64(len(v.sizes))
			}
		}
		parts := &partsReader{ctx: ctx, parts: tail}
		defer parts.closeSource() // a store that stopped reading midway
		if copies == 0 {
			n, err := t.store.Put(ctx, key, parts)
			if err != nil {
				return nil, 0, fmt.Errorf("write pack: %w", err)
			}
			if n != offset {
				return nil, 0, fmt.Errorf("write pack %s: wrote %d bytes, expected %d", key, n, offset)
			}
		} else {
			pieces = append(pieces, storage.Piece{R: parts, Size: offset - tailStart})
			digests, err := copier.PutPieces(ctx, key, pieces)
			if err != nil {
				return nil, 0, fmt.Errorf("write pack: %w", err)
			}
			i := 0
			for _, e := range entries {
				if !e.copied {
					continue
				}
				if e.v.sha256 = digests[i]; e.v.sha256 == "" {
					// The server computed no SHA-256 of the part: the
					// payload is read once to hash it.
					slog.Warn("the S3 server gave no SHA-256 of a copied payload; reading it to hash it", "source", e.v.src.Name())
					h, err := hashSource(ctx, e.v.src)
					if err != nil {
						return nil, 0, fmt.Errorf("hash %s: %w", e.v.src.Name(), err)
					}
					e.v.sha256 = h
				}
				i++
			}
		}
		if parts.err != nil {
			return nil, 0, parts.err
		}
		for i := start; i < end; i++ {
			e := entryOf[i]
			out[i] = e.ref
			out[i].Pack, out[i].Length, out[i].SHA256 = key, e.v.size, e.v.sha256
		}
		written += offset
		start = end
	}
	return out, written, nil
}

// packPart is a video payload or bytes to append to a pack.
type packPart struct {
	video *preparedVideo
	data  []byte
}

// partsReader streams pack parts one after another, opening each source
// only when it is reached so that a commit of many videos holds one open.
// A payload must come out of its source complete and, when its SHA-256
// was known before, with that hash; otherwise the hash is recorded.
type partsReader struct {
	ctx   context.Context
	parts []packPart
	cur   io.Reader
	video *preparedVideo
	rc    io.ReadCloser
	hash  hash.Hash
	read  int64
	err   error // the first failure, kept: a store may not pass it on
}

func (r *partsReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.read1(p)
	if err != nil && err != io.EOF {
		r.err = err
		r.closeSource()
	}
	return n, err
}

func (r *partsReader) read1(p []byte) (int, error) {
	for {
		if err := r.ctx.Err(); err != nil {
			return 0, err
		}
		if r.cur == nil {
			if len(r.parts) == 0 {
				return 0, io.EOF
			}
			part := r.parts[0]
			r.parts = r.parts[1:]
			if part.video == nil {
				r.cur = &byteReader{b: part.data}
				continue
			}
			r.video, r.rc, r.hash, r.read = part.video, part.video.src.Stream(r.ctx), sha256.New(), 0
			r.cur = r.rc
		}
		n, err := r.cur.Read(p)
		if r.video != nil {
			r.hash.Write(p[:n])
			r.read += int64(n)
		}
		if err == io.EOF {
			if r.video != nil {
				if err := r.finishVideo(); err != nil {
					return n, err
				}
			}
			r.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// finishVideo checks a payload that was read to its end.
func (r *partsReader) finishVideo() error {
	v := r.video
	r.closeSource()
	if r.read != v.size {
		return fmt.Errorf("%w: %s: read %d bytes, %d when it was indexed", storage.ErrChanged, v.src.Name(), r.read, v.size)
	}
	sum := hex.EncodeToString(r.hash.Sum(nil))
	if v.sha256 != "" && sum != v.sha256 {
		return fmt.Errorf("%w: %s: its content changed after it was indexed", storage.ErrChanged, v.src.Name())
	}
	v.sha256 = sum
	return nil
}

func (r *partsReader) closeSource() {
	if r.rc != nil {
		r.rc.Close()
		r.rc, r.video = nil, nil
	}
}

type byteReader struct{ b []byte }

func (r *byteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Sizes block: "FSZS", uvarint count, count uvarint sizes, CRC-32C (LE).
const sizesMagic = "FSZS"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeSizes(sizes []int64) []byte {
	b := append([]byte(sizesMagic), binary.AppendUvarint(nil, uint64(len(sizes)))...)
	for _, s := range sizes {
		b = binary.AppendUvarint(b, uint64(s))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// DecodeSizes parses a sizes block.
func DecodeSizes(b []byte) ([]int64, error) {
	if len(b) < len(sizesMagic)+4 || string(b[:len(sizesMagic)]) != sizesMagic {
		return nil, fmt.Errorf("%w: sizes block: bad magic", ErrCorrupt)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: sizes block: checksum mismatch", ErrCorrupt)
	}
	body = body[len(sizesMagic):]
	n, k := binary.Uvarint(body)
	if k <= 0 || n > uint64(len(body)) {
		return nil, fmt.Errorf("%w: sizes block: bad count", ErrCorrupt)
	}
	body = body[k:]
	out := make([]int64, n)
	for i := range out {
		v, k := binary.Uvarint(body)
		if k <= 0 || v > 1<<40 {
			return nil, fmt.Errorf("%w: sizes block: bad size %d", ErrCorrupt, i)
		}
		out[i] = int64(v)
		body = body[k:]
	}
	if len(body) != 0 {
		return nil, fmt.Errorf("%w: sizes block: trailing bytes", ErrCorrupt)
	}
	return out, nil
}
