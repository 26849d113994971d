package table

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/framefs/framefs/table/storage"
)

// maxManifests is how many manifests a snapshot may list before a commit
// merges them into one, keeping episode listings to a few reads.
const maxManifests = 32

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
		present, err := t.episodeSet(ctx, head)
		if err != nil {
			return err
		}
		for _, ep := range ch.mustBeNew {
			if present[ep] {
				return &InputError{Index: -1, Episode: ep, Err: fmt.Errorf("%w: episode %q is already in the table (snapshot %d); use replace or update to change it",
					ErrExists, ep, head.ID)}
			}
		}
	}
	if len(ch.reused) > 0 {
		live, err := t.snapshotObjects(ctx, head)
		if err != nil {
			return err
		}
		for _, key := range ch.reused {
			if !live[key] {
				return fmt.Errorf("%w: %s, a stored video this commit reuses, is no longer in snapshot %d (its episodes were removed meanwhile); retry",
					ErrConflict, key, head.ID)
			}
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

func (t *Table) episodeSet(ctx context.Context, snap *Snapshot) (map[string]bool, error) {
	set := map[string]bool{}
	for _, key := range snap.Manifests {
		m, err := t.Manifest(ctx, key)
		if err != nil {
			return nil, err
		}
		for _, e := range m.Episodes {
			set[e.Episode] = true
		}
	}
	return set, nil
}

// buildSnapshot writes the manifests of the change applied to head and
// returns the snapshot that would follow head.
func (t *Table) buildSnapshot(ctx context.Context, ch change, head *Snapshot) (*Snapshot, error) {
	snap := &Snapshot{
		FormatVersion: FormatVersion,
		Features:      []string{},
		ID:            1,
		SchemaID:      ch.schemaID,
		Kind:          ch.kind,
		Time:          t.opts.Now().UTC(),
		Summary:       ch.summary,
		Manifests:     []string{},
	}
	var kept []string
	removed := map[string]bool{}
	for _, ep := range ch.removed {
		removed[ep] = true
	}
	var carried []EpisodeEntry // entries of rewritten manifests that stay
	if head != nil {
		snap.ID, snap.Parent, snap.NextRowID = head.ID+1, head.ID, head.NextRowID
		snap.Episodes, snap.Frames = head.Episodes, head.Frames
		if ch.schemaID < head.SchemaID {
			snap.SchemaID = head.SchemaID
		}
		for _, key := range head.Manifests {
			m, err := t.Manifest(ctx, key)
			if err != nil {
				return nil, err
			}
			hit := false
			for _, e := range m.Episodes {
				if removed[e.Episode] {
					hit = true
					snap.Episodes--
					snap.Frames -= e.Rows
				}
			}
			if !hit {
				kept = append(kept, key)
				continue
			}
			for _, e := range m.Episodes {
				if !removed[e.Episode] {
					carried = append(carried, e)
				}
			}
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
	newEntries := append(carried, fresh...)
	if len(kept)+1 > maxManifests {
		// Merge everything into one manifest.
		for _, key := range kept {
			m, err := t.Manifest(ctx, key)
			if err != nil {
				return nil, err
			}
			newEntries = append(newEntries, m.Episodes...)
		}
		kept = nil
	}
	snap.Manifests = append(snap.Manifests, kept...)
	if len(newEntries) > 0 {
		key := newObjectKey(prefixManifest, ".json")
		m := &Manifest{FormatVersion: FormatVersion, Episodes: newEntries}
		data := marshalCompact(m)
		if err := t.store.PutIfAbsent(ctx, key, data); err != nil {
			return nil, fmt.Errorf("write manifest: %w", err)
		}
		t.manifests.add(key, m)
		snap.Manifests = append(snap.Manifests, key)
	}
	changed := map[string]bool{}
	for _, ep := range ch.removed {
		changed[ep] = true
	}
	for _, e := range ch.added {
		changed[e.Episode] = true
	}
	for ep := range changed {
		snap.Changed = append(snap.Changed, ep)
	}
	slices.Sort(snap.Changed)
	if snap.Changed == nil {
		snap.Changed = []string{}
	}
	return snap, nil
}
