package table

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// Video is an opened stored video: ranged reads of its payload bytes (the
// MP4 exactly as ingested) and its frame index.
type Video struct {
	// Ref is the manifest's reference to the payload.
	Ref VideoRef
	// Payload reads the video bytes; offset 0 is the payload's first byte.
	// It reads after Close too (see packReader).
	Payload *io.SectionReader
	// Index is the frame index stored beside the payload.
	Index *videoidx.Index
	pack  *packReader
}

// Close releases the pack object.
func (v *Video) Close() error { return v.pack.Close() }

// packReader reads a video's pack object, and keeps reading it after
// Close. A mount keeps the videos it serves open in a cache that closes
// the ones it evicts, while a decoder handed a video just before (or a
// read-ahead still decoding it) reads on. Were its reads to fail ("file
// already closed"), the reader of a valid frame would get an I/O error:
// 3 frames in 926,000 did in the 5-minute write soak. A read that finds
// the object closed opens the pack again for itself: it returns the
// bytes, or ErrNotFound once garbage collection has removed the pack.
type packReader struct {
	storage.Object
	reopen func() (storage.Object, error)
	closed atomic.Bool
}

func (p *packReader) Close() error {
	p.closed.Store(true) // before the object is closed: see ReadAt
	return p.Object.Close()
}

func (p *packReader) ReadAt(b []byte, off int64) (int, error) {
	n, err := p.Object.ReadAt(b, off)
	// A read that failed because Close closed the object finds closed
	// set: Close sets it first. One that ran before Close is not
	// affected by it (a local file is closed once its reads are done).
	if err == nil || !p.closed.Load() {
		return n, err
	}
	obj, err := p.reopen()
	if err != nil {
		return 0, err
	}
	defer obj.Close()
	return obj.ReadAt(b, off)
}

// OpenVideo opens a stored video for reading, with its frame index.
func (t *Table) OpenVideo(ctx context.Context, ref VideoRef) (*Video, error) {
	return t.OpenVideoIndexed(ctx, ref, nil)
}

// OpenVideoIndexed opens a stored video whose frame index the caller
// already has (decoded earlier from the same reference); a nil index is
// read from the pack.
func (t *Table) OpenVideoIndexed(ctx context.Context, ref VideoRef, ix *videoidx.Index) (*Video, error) {
	obj, err := t.store.Open(ctx, ref.Pack)
	if err != nil {
		return nil, err
	}
	if ref.Offset < 0 || ref.Length <= 0 || ref.Offset+ref.Length > obj.Size() ||
		ref.IndexOffset < 0 || ref.IndexLength <= 0 || ref.IndexLength > 1<<30 || ref.IndexOffset+ref.IndexLength > obj.Size() {
		obj.Close()
		return nil, fmt.Errorf("%w: video reference %s@%d+%d lies outside the pack (%d bytes)", ErrCorrupt, ref.Pack, ref.Offset, ref.Length, obj.Size())
	}
	if ix == nil {
		buf := make([]byte, ref.IndexLength)
		if _, err := obj.ReadAt(buf, ref.IndexOffset); err != nil {
			obj.Close()
			return nil, fmt.Errorf("read index of %s@%d: %w", ref.Pack, ref.Offset, err)
		}
		if ix, err = videoidx.Decode(buf); err != nil {
			obj.Close()
			return nil, fmt.Errorf("%w: index of %s@%d: %v", ErrCorrupt, ref.Pack, ref.Offset, err)
		}
	}
	pack := &packReader{Object: obj, reopen: func() (storage.Object, error) { return t.store.Open(ctx, ref.Pack) }}
	return &Video{Ref: ref, Payload: io.NewSectionReader(pack, ref.Offset, ref.Length), Index: ix, pack: pack}, nil
}

// StoredSizes returns the per-frame image sizes stored for a video and an
// image setting identity; ok is false when none are stored for it.
func (t *Table) StoredSizes(ctx context.Context, ref VideoRef, identity string) (sizes []int64, ok bool, err error) {
	for _, s := range ref.Sizes {
		if s.Identity != identity {
			continue
		}
		if s.Length <= 0 || s.Length > 1<<30 {
			return nil, false, fmt.Errorf("%w: sizes block of %d bytes", ErrCorrupt, s.Length)
		}
		obj, err := t.store.Open(ctx, s.Object)
		if err != nil {
			return nil, false, err
		}
		defer obj.Close()
		buf := make([]byte, s.Length)
		if _, err := obj.ReadAt(buf, s.Offset); err != nil {
			return nil, false, fmt.Errorf("read sizes from %s: %w", s.Object, err)
		}
		sizes, err := DecodeSizes(buf)
		if err != nil {
			return nil, false, err
		}
		if int64(len(sizes)) != ref.Frames {
			return nil, false, fmt.Errorf("%w: %d sizes stored for %d frames", ErrCorrupt, len(sizes), ref.Frames)
		}
		return sizes, true, nil
	}
	return nil, false, nil
}
