package table

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
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

// snapshotObjects returns every object key one snapshot references.
func (t *Table) snapshotObjects(ctx context.Context, snap *Snapshot) (map[string]bool, error) {
	objs := map[string]bool{}
	return objs, t.addSnapshotObjects(ctx, snap, objs)
}

// addSnapshotObjects adds the manifests, data files, packs and sizes
// objects snap references to objs; manifests already in objs are skipped.
func (t *Table) addSnapshotObjects(ctx context.Context, snap *Snapshot, objs map[string]bool) error {
	for _, key := range snap.Manifests {
		if objs[key] {
			continue
		}
		objs[key] = true
		m, err := t.Manifest(ctx, key)
		if err != nil {
			return fmt.Errorf("snapshot %d: %w", snap.ID, err)
		}
		for _, e := range m.Episodes {
			objs[e.DataFile] = true
			objs[chunkIndexKey(e.DataFile)] = true
			for _, v := range e.Videos {
				objs[v.Pack] = true
				for _, sz := range v.Sizes {
					objs[sz.Object] = true
				}
			}
		}
	}
	return nil
}

// Problem is one finding of Verify.
type Problem struct {
	Snapshot int64  `json:"snapshot"`
	Object   string `json:"object"`
	Problem  string `json:"problem"`
}

// Verify checks every live snapshot: each referenced manifest, data file,
// pack payload (size and SHA-256), frame index and sizes block exists and
// is intact. It returns the problems found (none for a healthy table).
func (t *Table) Verify(ctx context.Context) ([]Problem, error) {
	ids, err := t.SnapshotIDs(ctx)
	if err != nil {
		return nil, err
	}
	var problems []Problem
	checked := map[string]bool{}
	report := func(snap int64, obj string, format string, args ...any) {
		problems = append(problems, Problem{Snapshot: snap, Object: obj, Problem: fmt.Sprintf(format, args...)})
	}
	for _, id := range ids {
		s, err := t.Snapshot(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			report(id, snapshotKey(id), "%v", err)
			continue
		}
		if _, err := t.Schema(ctx, s.SchemaID); err != nil {
			report(id, schemaKey(s.SchemaID), "%v", err)
			continue
		}
		var episodes, frames int64
		for _, mkey := range s.Manifests {
			m, err := t.Manifest(ctx, mkey)
			if err != nil {
				report(id, mkey, "%v", err)
				continue
			}
			for _, e := range m.Episodes {
				episodes++
				frames += e.Rows
				key := fmt.Sprintf("%s#%d", e.DataFile, e.RowGroup)
				if !checked[key] {
					checked[key] = true
					schema, err := t.Schema(ctx, e.SchemaID)
					if err == nil {
						_, err = t.readRows(ctx, e, schema)
					}
					if err != nil {
						report(id, e.DataFile, "episode %q: %v", e.Episode, err)
					}
					if err := t.verifyChunkIndex(ctx, e); err != nil {
						report(id, chunkIndexKey(e.DataFile), "episode %q: %v", e.Episode, err)
					}
				}
				for col, v := range e.Videos {
					key := fmt.Sprintf("%s@%d", v.Pack, v.Offset)
					if checked[key] {
						continue
					}
					checked[key] = true
					if err := t.verifyVideo(ctx, v); err != nil {
						report(id, v.Pack, "episode %q video %q: %v", e.Episode, col, err)
					}
				}
			}
		}
		if episodes != s.Episodes || frames != s.Frames {
			report(id, snapshotKey(id), "counts %d episodes and %d frames, its manifests hold %d and %d", s.Episodes, s.Frames, episodes, frames)
		}
	}
	views, errs, err := t.Views(ctx)
	if err != nil {
		return problems, err
	}
	for i, v := range views {
		if errs[i] != nil {
			report(0, ViewKey(v.Name), "%v", errs[i])
			continue
		}
		// Whether the filter fits the schema is the query engine's to
		// check: query.VerifyViews.
		snap, err := t.ResolveView(ctx, v)
		if errors.Is(err, ErrNotFound) && v.Snapshot == 0 {
			continue // a table without snapshots yet
		}
		if err != nil {
			report(v.Snapshot, ViewKey(v.Name), "%v", err)
			continue
		}
		if _, err := t.Schema(ctx, snap.SchemaID); err != nil {
			report(snap.ID, ViewKey(v.Name), "%v", err)
		}
	}
	return problems, nil
}

func (t *Table) verifyVideo(ctx context.Context, ref VideoRef) error {
	v, err := t.OpenVideo(ctx, ref)
	if err != nil {
		return err
	}
	defer v.Close()
	h := sha256.New()
	n, err := io.Copy(h, contextReader{ctx, v.Payload})
	if err != nil {
		return err
	}
	if n != ref.Length {
		return fmt.Errorf("payload is %d bytes, expected %d", n, ref.Length)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != ref.SHA256 {
		return fmt.Errorf("payload SHA-256 %s, expected %s", got, ref.SHA256)
	}
	if int64(v.Index.Frames()) != ref.Frames {
		return fmt.Errorf("index has %d frames, manifest %d", v.Index.Frames(), ref.Frames)
	}
	if err := checkSamplesInside(v.Index, ref.Length); err != nil {
		return err
	}
	for _, sz := range ref.Sizes {
		if _, _, err := t.StoredSizes(ctx, ref, sz.Identity); err != nil {
			return err
		}
	}
	return nil
}

func checkSamplesInside(ix *videoidx.Index, length int64) error {
	for i, s := range ix.Samples {
		if s.Offset < 0 || s.Offset+int64(s.Size) > length {
			return fmt.Errorf("index sample %d lies outside the payload", i)
		}
	}
	return nil
}
