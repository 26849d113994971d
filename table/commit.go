package table

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/framefs/framefs/table/manifest"
	"github.com/framefs/framefs/table/storage"
)

// change is what one commit does, independent of the head it lands on, so
// that it can be re-applied on top of a concurrent commit.
type change struct {
	kind     CommitKind
	schemaID int
	// added are new episode versions; FirstRowID < 0 asks for new row ids.
	added []EpisodeEntry
	// removed are episodes whose current version goes away (replaced by an
	// entry in added, or deleted).
	removed []string
	// mustBeNew are episodes that must not exist yet (append).
	mustBeNew []string
	// base is the snapshot the change was computed from (0: none); a
	// concurrent commit that touched the same episodes after it is a
	// conflict.
	base int64
	// touched are the episodes the change depends on.
	touched []string
	// reused are objects of earlier commits the added episodes reference
	// (payloads stored before): the head the change lands on must still
	// reference them, so that they cannot have been collected meanwhile.
	reused  []string
	summary Summary
}

// commit lands a change as the next snapshot with an atomic create-if-
// absent of its snapshot file. When another writer got there first it
// re-reads the head and retries, unless the other commit touched the same
// episodes.
func (t *Table) commit(ctx context.Context, ch change) (*Snapshot, error) {
	if err := t.upgradeMeta(ctx); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		head, err := t.Head(ctx)
		if err != nil {
			return nil, err
		}
		if err := t.checkConflicts(ctx, ch, head); err != nil {
			return nil, err
		}
		snap, err := t.buildSnapshot(ctx, ch, head)
		if err != nil {
			return nil, err
		}
		err = t.store.PutIfAbsent(ctx, snapshotKey(snap.ID), marshal(snap))
		if err == nil {
			t.keepSnapshot(snap)
			return snap, nil
		}
		if !errors.Is(err, storage.ErrExists) {
			return nil, fmt.Errorf("commit snapshot %d: %w", snap.ID, err)
		}
		if attempt >= t.opts.MaxCommitRetries {
			return nil, fmt.Errorf("%w: gave up after %d attempts, other writers keep committing first", ErrConflict, attempt+1)
		}
		// Back off with jitter so that racing writers spread out.
		delay := time.Duration(rand.IntN(5+5*min(attempt, 10))) * time.Millisecond
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// checkConflicts fails when the episodes the change adds already exist at
// head, or when a commit after the change's base touched its episodes.
func (t *Table) checkConflicts(ctx context.Context, ch change, head *Snapshot) error {
	if head == nil {
		return nil
	}
	if len(ch.mustBeNew) > 0 {
		layout, err := t.snapshotLayout(ctx, head)
		if err != nil {
			return err
		}
		found, err := t.locate(ctx, head, layout, ch.mustBeNew)
		if err != nil {
			return err
		}
		present := map[string]bool{}
		for key, positions := range found {
			b, err := t.ReadManifest(ctx, head, key, manifest.Projection{Episodes: true})
			if err != nil {
				return err
			}
			for _, p := range positions {
				present[b.Episodes[p]] = true
			}
		}
		for _, ep := range ch.mustBeNew {
			if present[ep] {
				return &InputError{Index: -1, Episode: ep, Err: fmt.Errorf("%w: episode %q is already in the table (snapshot %d); use replace or update to change it",
					ErrExists, ep, head.ID)}
			}
		}
	}
	if len(ch.reused) > 0 {
		missing, err := t.unreferenced(ctx, head, ch.reused)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return fmt.Errorf("%w: %s, a stored video this commit reuses, is no longer in snapshot %d (its episodes were removed meanwhile); retry",
				ErrConflict, missing[0], head.ID)
		}
	}
	if ch.base == 0 || len(ch.touched) == 0 {
		return nil
	}
	for id := ch.base + 1; id <= head.ID; id++ {
		s, err := t.Snapshot(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // expired meanwhile
		}
		if err != nil {
			return err
		}
		for _, ep := range s.Changed {
			if slices.Contains(ch.touched, ep) {
				return fmt.Errorf("%w: snapshot %d (%s) changed episode %q at the same time; retry on top of it", ErrConflict, s.ID, s.Kind, ep)
			}
		}
	}
	return nil
}

// unreferenced returns the objects of keys that no manifest of snap
// references. It stops reading manifests once every key is found.
func (t *Table) unreferenced(ctx context.Context, snap *Snapshot, keys []string) ([]string, error) {
	missing := map[string]bool{}
	for _, k := range keys {
		missing[k] = true
	}
	layout, err := t.snapshotLayout(ctx, snap)
	if err != nil {
		return nil, err
	}
	infos, err := t.Manifests(ctx, snap)
	if err != nil {
		return nil, err
	}
	for _, info := range infos {
		if len(missing) == 0 {
			break
		}
		m, err := t.openManifest(ctx, info.Key, layout)
		if err != nil {
			return nil, err
		}
		objs, err := m.objects(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			delete(missing, o)
		}
	}
	return slices.Sorted(maps.Keys(missing)), nil
}

// buildSnapshot writes the manifests and the manifest list of the change
// applied to head and returns the snapshot that would follow head. Only
// the manifests that hold a changed episode are rewritten; the others are
// kept with their summaries, unread. A version-1 head is upgraded: its
// JSON manifests are written again as Parquet.
func (t *Table) buildSnapshot(ctx context.Context, ch change, head *Snapshot) (*Snapshot, error) {
	snap := &Snapshot{
		FormatVersion: FormatVersion,
		Features:      []string{},
		ID:            1,
		SchemaID:      ch.schemaID,
		Kind:          ch.kind,
		Time:          t.opts.Now().UTC(),
		Summary:       ch.summary,
	}
	if head != nil {
		snap.ID, snap.Parent, snap.NextRowID = head.ID+1, head.ID, head.NextRowID
		snap.Episodes, snap.Frames = head.Episodes, head.Frames
		snap.SchemaID = max(snap.SchemaID, head.SchemaID)
	}
	schema, err := t.Schema(ctx, snap.SchemaID)
	if err != nil {
		return nil, err
	}
	layout := layoutOf(schema)
	var kept []manifest.Summary
	var carried []EpisodeEntry // entries of rewritten manifests that stay
	if head != nil {
		if kept, carried, err = t.carryOver(ctx, head, layout, ch.removed, snap); err != nil {
			return nil, err
		}
	}
	fresh := slices.Clone(ch.added)
	for i := range fresh {
		if fresh[i].FirstRowID < 0 {
			fresh[i].FirstRowID = snap.NextRowID
			snap.NextRowID += fresh[i].Rows
		}
		snap.Episodes++
		snap.Frames += fresh[i].Rows
	}
	written, err := t.writeManifests(ctx, layout, append(carried, fresh...))
	if err != nil {
		return nil, err
	}
	sums, err := t.mergeTiers(ctx, layout, append(kept, written...))
	if err != nil {
		return nil, err
	}
	list, err := manifest.EncodeList(layout, sums)
	if err != nil {
		return nil, err
	}
	snap.ManifestList = newObjectKey(prefixManifestList, ".parquet")
	if err := t.store.PutIfAbsent(ctx, snap.ManifestList, list); err != nil {
		return nil, fmt.Errorf("write manifest list: %w", err)
	}
	t.manifests.add(snap.ManifestList, &loadedManifest{list: sums})
	changed := map[string]bool{}
	for _, ep := range ch.removed {
		changed[ep] = true
	}
	for _, e := range ch.added {
		changed[e.Episode] = true
	}
	snap.Changed = slices.Sorted(maps.Keys(changed))
	if snap.Changed == nil {
		snap.Changed = []string{}
	}
	return snap, nil
}

// carryOver returns the summaries of head's manifests that hold none of
// the removed episodes, and the entries of the others that stay; it takes
// the removed episodes' counts off snap's. Every manifest of a version-1
// head is carried over whole (it has no summary to keep).
func (t *Table) carryOver(ctx context.Context, head *Snapshot, layout manifest.Layout, removed []string, snap *Snapshot) ([]manifest.Summary, []EpisodeEntry, error) {
	infos, err := t.Manifests(ctx, head)
	if err != nil {
		return nil, nil, err
	}
	found := map[string][]int{}
	if len(removed) > 0 {
		if found, err = t.locate(ctx, head, layout, removed); err != nil {
			return nil, nil, err
		}
	}
	var kept []manifest.Summary
	var carried []EpisodeEntry
	for _, info := range infos {
		drop := map[int]bool{}
		for _, p := range found[info.Key] {
			drop[p] = true
		}
		if info.Summary != nil && len(drop) == 0 {
			kept = append(kept, *info.Summary)
			continue
		}
		m, err := t.openManifest(ctx, info.Key, layout)
		if err != nil {
			return nil, nil, err
		}
		entries, err := m.entriesAt(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		for i, e := range entries {
			if drop[i] {
				snap.Episodes--
				snap.Frames -= e.Rows
				continue
			}
			carried = append(carried, e)
		}
	}
	return kept, carried, nil
}
