package table

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/framefs/framefs/videoidx"
)

// preparedVideo is a video file checked, hashed and indexed, ready to be
// packed.
type preparedVideo struct {
	path      string
	size      int64
	sha256    string
	index     *videoidx.Index
	indexData []byte
	sizes     []byte // encoded sizes block, or nil
	identity  string // identity of sizes
}

// prepareVideo hashes and indexes a video file (and computes frame sizes
// when the table has a sizer and withSizes is set). It reads the file once
// for the hash and again only where indexing needs to.
func (t *Table) prepareVideo(ctx context.Context, path string, img ImageOptions, withSizes bool) (*preparedVideo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrInvalidInput, path)
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("%w: %s is empty (0 bytes)", ErrInvalidInput, path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, contextReader{ctx, f}); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	ix, err := t.opts.Indexer(ctx, f, st.Size())
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidInput, filepath.Base(path), err)
	}
	pv := &preparedVideo{
		path:      path,
		size:      st.Size(),
		sha256:    hex.EncodeToString(h.Sum(nil)),
		index:     ix,
		indexData: ix.Encode(),
	}
	if withSizes && t.opts.Sizer != nil {
		sizes, err := t.opts.Sizer.FrameSizes(ctx, f, st.Size(), ix, img)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %s does not decode: %v", ErrInvalidInput, filepath.Base(path), err)
		}
		if len(sizes) != ix.Frames() {
			return nil, fmt.Errorf("sizes of %s: %d for %d frames", path, len(sizes), ix.Frames())
		}
		pv.sizes = encodeSizes(sizes)
		pv.identity = t.opts.Sizer.Identity(img)
	}
	return pv, nil
}

// packedVideo is where a prepared video went.
type packedVideo struct {
	ref   VideoRef
	fresh bool // false when an identical payload was already in the pack
}

// writePacks streams the videos into pack objects of about target bytes
// each. Identical payloads within one pack are stored once. It returns
// one reference per video, in order, and the bytes written.
func (t *Table) writePacks(ctx context.Context, videos []*preparedVideo, target int64) ([]packedVideo, int64, error) {
	out := make([]packedVideo, len(videos))
	var written int64
	for start := 0; start < len(videos); {
		key := newObjectKey(prefixVideo, ".video")
		var parts []packPart
		var offset int64
		seen := map[string]VideoRef{}
		end := start
		for ; end < len(videos) && (end == start || offset < target); end++ {
			v := videos[end]
			if ref, ok := seen[v.sha256]; ok {
				out[end] = packedVideo{ref: ref}
				continue
			}
			ref := VideoRef{Pack: key, Offset: offset, Length: v.size, SHA256: v.sha256}
			parts = append(parts, packPart{path: v.path, size: v.size})
			offset += v.size
			ref.IndexOffset, ref.IndexLength = offset, int64(len(v.indexData))
			parts = append(parts, packPart{data: v.indexData})
			offset += int64(len(v.indexData))
			if v.sizes != nil {
				ref.Sizes = []SizesRef{{Identity: v.identity, Object: key, Offset: offset, Length: int64(len(v.sizes))}}
				parts = append(parts, packPart{data: v.sizes})
				offset += int64(len(v.sizes))
			}
			seen[v.sha256] = ref
			out[end] = packedVideo{ref: ref, fresh: true}
		}
		n, err := t.store.Put(ctx, key, &partsReader{ctx: ctx, parts: parts})
		if err != nil {
			return nil, 0, fmt.Errorf("write pack: %w", err)
		}
		if n != offset {
			return nil, 0, fmt.Errorf("write pack %s: wrote %d bytes, expected %d (did a video change while it was read?)", key, n, offset)
		}
		written += n
		start = end
	}
	return out, written, nil
}

// packPart is a file or bytes to append to a pack.
type packPart struct {
	path string
	size int64
	data []byte
}

// partsReader streams pack parts one after another, opening each file only
// when it is reached so that a commit of many videos holds one file open.
type partsReader struct {
	ctx   context.Context
	parts []packPart
	cur   io.Reader
	file  *os.File
}

func (r *partsReader) Read(p []byte) (int, error) {
	for {
		if err := r.ctx.Err(); err != nil {
			r.closeFile()
			return 0, err
		}
		if r.cur == nil {
			if len(r.parts) == 0 {
				return 0, io.EOF
			}
			part := r.parts[0]
			r.parts = r.parts[1:]
			if part.path == "" {
				r.cur = &byteReader{b: part.data}
				continue
			}
			f, err := os.Open(part.path)
			if err != nil {
				return 0, err
			}
			r.file = f
			// Exactly the hashed size: a file that grew is cut, one that
			// shrank shows as a short pack and fails the commit.
			r.cur = io.LimitReader(f, part.size)
		}
		n, err := r.cur.Read(p)
		if err == io.EOF {
			r.closeFile()
			r.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (r *partsReader) closeFile() {
	if r.file != nil {
		r.file.Close()
		r.file = nil
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
