package table

import (
	"context"
	"fmt"
	"io"

	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// Video is an opened stored video: ranged reads of its payload bytes (the
// MP4 exactly as ingested) and its frame index.
type Video struct {
	// Ref is the manifest's reference to the payload.
	Ref VideoRef
	// Payload reads the video bytes; offset 0 is the payload's first byte.
	Payload *io.SectionReader
	// Index is the frame index stored beside the payload.
	Index *videoidx.Index
	obj   storage.Object
}

// Close releases the pack object.
func (v *Video) Close() error { return v.obj.Close() }

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
	return &Video{Ref: ref, Payload: io.NewSectionReader(obj, ref.Offset, ref.Length), Index: ix, obj: obj}, nil
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
