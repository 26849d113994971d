// Package tabletamper changes a table's metadata the way someone with
// write access to its store could, without the table's commit code: it
// writes new manifest objects, a new manifest list and a new snapshot.
// Tests use it to check that readers do not trust what manifests claim
// (a payload's SHA-256 naming another video) and to make tables as older
// writers left them (entries without statistics).
//
// The package holds test support only; nothing outside tests imports it.
package tabletamper

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/manifest"
	"github.com/framefs/framefs/table/storage"
	"github.com/google/uuid"
)

// RewriteEntries passes every entry of the head snapshot's manifests
// through edit, which reports whether it changed the entry. Each manifest
// holding a changed entry is written again under a new key (the manifest
// list, or for a version-1 snapshot the JSON manifest, of its version),
// and snapshot head+1, a copy of the head naming the new manifests, is
// created. Nothing else changes: counts, statistics and summaries are
// those the new entries give. It returns the new snapshot's id, or the
// head's when edit changed nothing.
func RewriteEntries(ctx context.Context, store storage.Store, edit func(*manifest.Entry) bool) (int64, error) {
	tbl, err := table.Open(ctx, store, table.Options{})
	if err != nil {
		return 0, err
	}
	head, err := tbl.Head(ctx)
	if err != nil {
		return 0, err
	}
	if head == nil {
		return 0, fmt.Errorf("table %s has no snapshot", store)
	}
	schema, err := tbl.Schema(ctx, head.SchemaID)
	if err != nil {
		return 0, err
	}
	infos, err := tbl.Manifests(ctx, head)
	if err != nil {
		return 0, err
	}
	next := *head
	next.ID, next.Parent = head.ID+1, head.ID
	next.Manifests = nil
	var sums []manifest.Summary
	changed := false
	for _, info := range infos {
		entries, err := tbl.ManifestEntries(ctx, head, info.Key, nil)
		if err != nil {
			return 0, err
		}
		edited := false
		for i := range entries {
			if edit(&entries[i]) {
				edited = true
			}
		}
		changed = changed || edited
		key := info.Key
		switch {
		case !edited:
		case head.ManifestList == "":
			key = "manifest/" + uuid.NewString() + ".json"
			data, _ := json.Marshal(table.Manifest{FormatVersion: 1, Episodes: entries})
			if err := store.PutIfAbsent(ctx, key, data); err != nil {
				return 0, err
			}
		default:
			data, sum, err := manifest.Encode(schema.ManifestLayout(), entries)
			if err != nil {
				return 0, err
			}
			key = "manifest/" + uuid.NewString() + ".parquet"
			if err := store.PutIfAbsent(ctx, key, data); err != nil {
				return 0, err
			}
			sum.Manifest = key
			sums = append(sums, sum)
			continue
		}
		if head.ManifestList == "" {
			next.Manifests = append(next.Manifests, key)
		} else {
			sums = append(sums, *info.Summary)
		}
	}
	if !changed {
		return head.ID, nil
	}
	if head.ManifestList != "" {
		list, err := manifest.EncodeList(schema.ManifestLayout(), sums)
		if err != nil {
			return 0, err
		}
		next.ManifestList = "manifest/list-" + uuid.NewString() + ".parquet"
		if err := store.PutIfAbsent(ctx, next.ManifestList, list); err != nil {
			return 0, err
		}
	}
	data, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := store.PutIfAbsent(ctx, table.SnapshotKey(next.ID), data); err != nil {
		return 0, err
	}
	return next.ID, nil
}

// RewriteDigest makes the head snapshot's manifests claim SHA-256 to (64
// hex digits) for every payload they record as from: the disk-tier
// poisoning of a table whose metadata names another video's digest. It
// returns the new snapshot's id and how many video references changed.
func RewriteDigest(ctx context.Context, store storage.Store, from, to string) (int64, int, error) {
	from, to = strings.ToLower(from), strings.ToLower(to)
	n := 0
	id, err := RewriteEntries(ctx, store, func(e *manifest.Entry) bool {
		edited := false
		for col, ref := range e.Videos {
			if ref.SHA256 == from {
				ref.SHA256 = to
				e.Videos[col] = ref
				edited = true
				n++
			}
		}
		return edited
	})
	if err == nil && n == 0 {
		err = fmt.Errorf("no payload of the head snapshot of %s records SHA-256 %s", store, from)
	}
	return id, n, err
}
