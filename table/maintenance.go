package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/framefs/framefs/table/storage"
)

// ExpireOptions select the snapshots Expire drops. The head and tagged
// snapshots always stay.
type ExpireOptions struct {
	// KeepLast keeps the newest KeepLast snapshots (at least 1).
	KeepLast int
	// OlderThan, when set, drops only snapshots committed longer ago.
	OlderThan time.Duration
}

// Expire deletes old snapshot files and returns the ids it dropped. Their
// data stays until GC finds it unreferenced. Snapshots that a tag or a
// pinned view names are kept.
func (t *Table) Expire(ctx context.Context, opts ExpireOptions) ([]int64, error) {
	ids, err := t.SnapshotIDs(ctx)
	if err != nil {
		return nil, err
	}
	keep := max(opts.KeepLast, 1)
	pinned, err := t.pinnedSnapshots(ctx)
	if err != nil {
		return nil, err
	}
	var dropped []int64
	saved := map[int64][]byte{}
	for i, id := range ids {
		if i >= len(ids)-keep || pinned[id] {
			continue
		}
		if opts.OlderThan > 0 {
			s, err := t.Snapshot(ctx, id)
			if err != nil {
				return dropped, err
			}
			if t.opts.Now().Sub(s.Time) < opts.OlderThan {
				continue
			}
		}
		data, err := t.store.ReadAll(ctx, snapshotKey(id))
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				continue // another expire got there first
			}
			return dropped, err
		}
		if err := t.store.Delete(ctx, snapshotKey(id)); err != nil {
			return dropped, err
		}
		saved[id] = data
		t.snapshots.Remove(id)
		dropped = append(dropped, id)
	}
	if len(dropped) == 0 {
		return nil, nil
	}
	// A tag or view created while this ran may pin a snapshot just
	// deleted (it checked the snapshot before the delete): put such
	// snapshots back, byte for byte.
	pinned, err = t.pinnedSnapshots(ctx)
	if err != nil {
		return dropped, err
	}
	kept := dropped[:0]
	for _, id := range dropped {
		if pinned[id] {
			if err := t.store.PutIfAbsent(ctx, snapshotKey(id), saved[id]); err != nil && !errors.Is(err, storage.ErrExists) {
				return kept, fmt.Errorf("restore snapshot %d, pinned meanwhile: %w", id, err)
			}
			continue
		}
		kept = append(kept, id)
	}
	return kept, nil
}

// DefaultGrace is the grace period of a GC given none; NoGrace asks for
// none at all.
const (
	DefaultGrace = time.Hour
	NoGrace      = time.Duration(-1)
)

// GCOptions tune GC.
type GCOptions struct {
	// Grace keeps unreferenced files younger than this (0: DefaultGrace):
	// they may belong to a commit still in progress. NoGrace (any
	// negative value) keeps none, whatever their age: only for a table
	// nothing writes to.
	Grace time.Duration
	// DryRun lists what would be removed without removing it.
	DryRun bool
}

// GCReport says what GC removed.
type GCReport struct {
	Removed []string
	Bytes   int64
	Kept    int
}

// GC removes the data, pack and manifest files that no live snapshot
// references, and never anything a live snapshot or tag references.
func (t *Table) GC(ctx context.Context, opts GCOptions) (GCReport, error) {
	switch {
	case opts.Grace == 0:
		opts.Grace = DefaultGrace
	case opts.Grace < 0:
		opts.Grace = 0
	}
	var rep GCReport
	// List candidates before reading the live set: a file committed after
	// the listing is young and kept by the grace period, one committed
	// before it is seen as live below.
	var candidates []storage.ObjectInfo
	for _, prefix := range []string{prefixManifest, prefixData, prefixVideo} {
		objs, err := t.store.List(ctx, prefix)
		if err != nil {
			return rep, err
		}
		candidates = append(candidates, objs...)
	}
	live, err := t.liveObjects(ctx)
	if err != nil {
		return rep, err
	}
	cutoff := time.Now().Add(-opts.Grace)
	for _, o := range candidates {
		if live[o.Key] {
			rep.Kept++
			continue
		}
		if o.ModTime.After(cutoff) {
			rep.Kept++
			continue
		}
		if !opts.DryRun {
			if err := t.store.Delete(ctx, o.Key); err != nil {
				return rep, err
			}
		}
		rep.Removed = append(rep.Removed, o.Key)
		rep.Bytes += o.Size
	}
	if tl, ok := t.store.(storage.Temporaries); ok {
		temps, err := tl.ListTemporaries(ctx)
		if err != nil {
			return rep, err
		}
		for _, o := range temps {
			if o.ModTime.After(cutoff) {
				continue
			}
			if !opts.DryRun {
				if err := tl.DeleteTemporary(ctx, o); err != nil {
					return rep, err
				}
			}
			rep.Removed = append(rep.Removed, o.Key)
			rep.Bytes += o.Size
		}
	}
	return rep, nil
}

// liveObjects returns every object key a live snapshot references.
func (t *Table) liveObjects(ctx context.Context) (map[string]bool, error) {
	ids, err := t.SnapshotIDs(ctx)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, id := range ids {
		s, err := t.Snapshot(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // expired while we listed
		}
		if err != nil {
			return nil, err
		}
		if err := t.addSnapshotObjects(ctx, s, live); err != nil {
			// A live snapshot whose manifest is gone: refuse to
			// collect anything rather than guess.
			return nil, err
		}
	}
	return live, nil
}

// addSnapshotObjects adds the manifest list, manifests, data files (with
// their chunk indexes), packs and sizes objects snap references to objs;
// manifests already in objs are not read again.
func (t *Table) addSnapshotObjects(ctx context.Context, snap *Snapshot, objs map[string]bool) error {
	if snap.ManifestList != "" {
		objs[snap.ManifestList] = true
	}
	infos, err := t.Manifests(ctx, snap)
	if err != nil {
		return err
	}
	layout, err := t.snapshotLayout(ctx, snap)
	if err != nil {
		return err
	}
	for _, info := range infos {
		if objs[info.Key] {
			continue
		}
		objs[info.Key] = true
		m, err := t.openManifest(ctx, info.Key, layout)
		if err != nil {
			return fmt.Errorf("snapshot %d: %w", snap.ID, err)
		}
		keys, err := m.objects(ctx)
		if err != nil {
			return fmt.Errorf("snapshot %d: %w", snap.ID, err)
		}
		for _, k := range keys {
			objs[k] = true
			if strings.HasPrefix(k, prefixData) {
				objs[chunkIndexKey(k)] = true
			}
		}
	}
	return nil
}
