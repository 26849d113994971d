package table

import (
	"bytes"
	"context"
	"fmt"
)

// Warm computes and stores the per-frame image sizes of every video of the
// head snapshot that has none for the table's default image setting (for
// tables ingested with NoSizes), in one commit of kind "sizes". It returns
// the new snapshot and the number of videos it sized; with nothing to do it
// returns the head and 0.
func (t *Table) Warm(ctx context.Context) (*Snapshot, int, error) {
	if t.opts.Sizer == nil {
		return nil, 0, fmt.Errorf("%w: no frame sizer configured", ErrInvalidInput)
	}
	head, err := t.Resolve(ctx, 0, "")
	if err != nil {
		return nil, 0, err
	}
	schema, err := t.LatestSchema(ctx)
	if err != nil {
		return nil, 0, err
	}
	identity := t.opts.Sizer.Identity(schema.Image)
	eps, err := t.Episodes(ctx, head)
	if err != nil {
		return nil, 0, err
	}
	key := newObjectKey(prefixVideo, ".sizes")
	var blob bytes.Buffer
	var updated []EpisodeEntry
	var names []string
	sized := 0
	for _, e := range eps {
		changed := false
		videos := map[string]VideoRef{}
		for col, ref := range e.Videos {
			videos[col] = ref
			if hasSizes(ref, identity) {
				continue
			}
			v, err := t.OpenVideo(ctx, ref)
			if err != nil {
				return nil, 0, err
			}
			sizes, err := t.opts.Sizer.FrameSizes(ctx, v.Payload, ref.Length, v.Index, schema.Image)
			v.Close()
			if err != nil {
				return nil, 0, fmt.Errorf("episode %q video %q: %w", e.Episode, col, err)
			}
			block := encodeSizes(sizes)
			ref.Sizes = append(append([]SizesRef(nil), ref.Sizes...), SizesRef{Identity: identity, Object: key, Offset: int64(blob.Len()), Length: int64(len(block))})
			blob.Write(block)
			videos[col] = ref
			changed = true
			sized++
		}
		if changed {
			e.Videos = videos
			updated = append(updated, e)
			names = append(names, e.Episode)
		}
	}
	if len(updated) == 0 {
		return head, 0, nil
	}
	if _, err := t.store.Put(ctx, key, &blob); err != nil {
		return nil, 0, err
	}
	snap, err := t.commit(ctx, change{
		kind: KindSizes, schemaID: schema.ID, added: updated, removed: names,
		base: head.ID, touched: names, summary: Summary{EpisodesUpdated: int64(len(updated))},
	})
	return snap, sized, err
}

func hasSizes(ref VideoRef, identity string) bool {
	for _, s := range ref.Sizes {
		if s.Identity == identity {
			return true
		}
	}
	return false
}
