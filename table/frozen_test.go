package table_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"testing"

	"github.com/framefs/framefs/internal/frozentable"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/manifest"
	"github.com/framefs/framefs/videoidx"
)

// TestFrozenTables reads every frozen example table (testdata/format/vN)
// and checks that it reads exactly as its writer left it: snapshots,
// schema, tags, views, the episodes of each snapshot, every row, the
// payloads byte for byte with their frame indexes, and the stored frame
// sizes; Verify finds nothing wrong.
func TestFrozenTables(t *testing.T) {
	frozentable.Run(t, func(t *testing.T, v int, exp *frozentable.Expected) {
		ctx := context.Background()
		tbl := frozentable.Open(t, v)

		ids, err := tbl.SnapshotIDs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != len(exp.Snapshots) {
			t.Fatalf("snapshots %v, want %d", ids, len(exp.Snapshots))
		}
		snaps := map[int64]*table.Snapshot{}
		for i, want := range exp.Snapshots {
			got, err := tbl.Snapshot(ctx, ids[i])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("snapshot %d reads as\n%+v\nwant\n%+v", ids[i], *got, want)
			}
			snaps[got.ID] = got
		}
		head, err := tbl.Head(ctx)
		if err != nil || head.ID != exp.Snapshots[len(exp.Snapshots)-1].ID {
			t.Errorf("head %+v, %v", head, err)
		}
		schema, err := tbl.LatestSchema(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*schema, exp.Schema) {
			t.Errorf("schema reads as\n%+v\nwant\n%+v", *schema, exp.Schema)
		}

		tags, err := tbl.Tags(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok, got, want := frozentable.SameJSON(t, tags, exp.Tags); !ok {
			t.Errorf("tags read as %s, want %s", got, want)
		}
		for _, tag := range exp.Tags {
			snap, err := tbl.Resolve(ctx, 0, tag.Name)
			if err != nil || snap.ID != tag.Snapshot {
				t.Errorf("tag %s resolves to %+v, %v", tag.Name, snap, err)
			}
		}
		views, errs, err := tbl.Views(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range errs {
			if e != nil {
				t.Errorf("view %s: %v", views[i].Name, e)
			}
		}
		if ok, got, want := frozentable.SameJSON(t, views, exp.Views); !ok {
			t.Errorf("views read as %s, want %s", got, want)
		}

		for _, se := range exp.Episodes {
			snap := snaps[se.Snapshot]
			eps, err := tbl.Episodes(ctx, snap)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(eps, se.Episodes) {
				t.Errorf("snapshot %d episodes read as\n%+v\nwant\n%+v", snap.ID, eps, se.Episodes)
			}
			for _, want := range se.Episodes {
				got, err := tbl.Episode(ctx, snap, want.Episode)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("snapshot %d: Episode(%s) = %+v, %v", snap.ID, want.Episode, got, err)
				}
			}
		}
		for _, er := range exp.Rows {
			snap := snaps[er.Snapshot]
			e, err := tbl.Episode(ctx, snap, er.Episode)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := tbl.Rows(ctx, snap, e)
			if err != nil {
				t.Fatalf("rows of %s: %v", er.Episode, err)
			}
			got, err := json.Marshal(rows)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := json.Compact(&want, er.Rows); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("snapshot %d episode %s: rows read as\n%s\nwant\n%s", snap.ID, er.Episode, got, want.Bytes())
			}
		}
		for _, ml := range exp.ManifestLists {
			infos, err := tbl.Manifests(ctx, snaps[ml.Snapshot])
			if err != nil {
				t.Fatal(err)
			}
			var got []manifest.Summary
			for _, info := range infos {
				if info.Summary != nil {
					got = append(got, *info.Summary)
				}
			}
			if !reflect.DeepEqual(got, ml.Summaries) {
				t.Errorf("snapshot %d: manifest list reads as\n%+v\nwant\n%+v", ml.Snapshot, got, ml.Summaries)
			}
		}
		checkFrozenVideos(t, tbl, exp)

		probs, err := tbl.Verify(ctx)
		if err != nil || len(probs) > 0 {
			t.Errorf("verify: %+v, %v", probs, err)
		}
	})
}

// checkFrozenVideos checks every stored payload: its bytes are the source
// file's, its stored frame index is the one the source indexes to, and its
// frame sizes are those stored.
func checkFrozenVideos(t *testing.T, tbl *table.Table, exp *frozentable.Expected) {
	t.Helper()
	ctx := context.Background()
	refs := map[string]table.VideoRef{}
	for _, se := range exp.Episodes {
		for _, e := range se.Episodes {
			for _, ref := range e.Videos {
				refs[fmt.Sprintf("%s@%d", ref.Pack, ref.Offset)] = ref
			}
		}
	}
	if len(refs) != len(exp.Videos) {
		t.Errorf("the episodes reference %d payloads, want %d", len(refs), len(exp.Videos))
	}
	for _, want := range exp.Videos {
		ref, ok := refs[fmt.Sprintf("%s@%d", want.Pack, want.Offset)]
		if !ok {
			t.Errorf("no episode references %s@%d", want.Pack, want.Offset)
			continue
		}
		source, err := os.ReadFile(frozentable.Source(want.Source))
		if err != nil {
			t.Fatal(err)
		}
		v, err := tbl.OpenVideo(ctx, ref)
		if err != nil {
			t.Fatalf("open %s: %v", want.Source, err)
		}
		payload, err := io.ReadAll(v.Payload)
		v.Close()
		if err != nil || !bytes.Equal(payload, source) {
			t.Errorf("payload of %s differs from the file (%d bytes, %d; %v)", want.Source, len(payload), len(source), err)
		}
		ix, err := videoidx.ReadMP4(ctx, bytes.NewReader(source), int64(len(source)), videoidx.BestStream)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v.Index, ix) {
			t.Errorf("the stored index of %s differs from the file's", want.Source)
		}
		if int64(v.Index.Frames()) != want.Frames || ref.Frames != want.Frames {
			t.Errorf("%s: %d frames indexed, %d referenced, want %d", want.Source, v.Index.Frames(), ref.Frames, want.Frames)
		}
		sizes, ok, err := tbl.StoredSizes(ctx, ref, want.SizesIdentity)
		if err != nil || !ok || !reflect.DeepEqual(sizes, want.Sizes) {
			t.Errorf("sizes of %s: %v (found %v, %v), want %v", want.Source, sizes, ok, err, want.Sizes)
		}
	}
}

// TestFrozenTablesUpgrade: a table of an older format version is upgraded
// by Upgrade, and by its next commit, to the current one: the head's
// episodes are the same, older snapshots read as before, and table.json
// declares the current version.
func TestFrozenTablesUpgrade(t *testing.T) {
	older := 0
	for _, v := range frozentable.Versions(t) {
		if v < table.FormatVersion {
			older++
			t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { frozenUpgrade(t, v, frozentable.Load(t, v)) })
		}
	}
	if older == 0 {
		t.Fatal("no frozen table of an older format version")
	}
}

func frozenUpgrade(t *testing.T, v int, exp *frozentable.Expected) {
	{
		ctx := context.Background()
		last := exp.Episodes[len(exp.Episodes)-1]
		t.Run("Upgrade", func(t *testing.T) {
			tbl := frozentable.Open(t, v)
			rep, err := tbl.Upgrade(ctx)
			if err != nil {
				t.Fatal(err)
			}
			snap := rep.Snapshot
			if rep.From != v || rep.To != table.FormatVersion || snap == nil || snap.Kind != table.KindUpgrade ||
				snap.FormatVersion != table.FormatVersion || snap.ManifestList == "" || snap.Summary != (table.Summary{}) {
				t.Fatalf("upgrade: %+v, snapshot %+v", rep, snap)
			}
			eps, err := tbl.Episodes(ctx, snap)
			if err != nil || !reflect.DeepEqual(eps, last.Episodes) {
				t.Errorf("the upgraded head holds\n%+v (%v)\nwant\n%+v", eps, err, last.Episodes)
			}
			for _, se := range exp.Episodes {
				old, err := tbl.Snapshot(ctx, se.Snapshot)
				if err != nil {
					t.Fatal(err)
				}
				if eps, err := tbl.Episodes(ctx, old); err != nil || !reflect.DeepEqual(eps, se.Episodes) {
					t.Errorf("snapshot %d after the upgrade: %v", se.Snapshot, err)
				}
			}
			reopened, err := table.Open(ctx, tbl.Store(), table.Options{})
			if err != nil || reopened.FormatVersion() != table.FormatVersion {
				t.Fatalf("reopened: version %d, %v", reopened.FormatVersion(), err)
			}
			if probs, err := reopened.Verify(ctx); err != nil || len(probs) > 0 {
				t.Errorf("verify: %+v, %v", probs, err)
			}
			again, err := reopened.Upgrade(ctx)
			if err != nil || again.Snapshot != nil || again.From != table.FormatVersion {
				t.Errorf("upgrading again: %+v, %v", again, err)
			}
		})
		t.Run("next commit", func(t *testing.T) {
			tbl := frozentable.Open(t, v)
			gone := last.Episodes[len(last.Episodes)-1].Episode
			snap, err := tbl.DeleteEpisode(ctx, gone)
			if err != nil {
				t.Fatal(err)
			}
			if snap.FormatVersion != table.FormatVersion || snap.ManifestList == "" || tbl.FormatVersion() != table.FormatVersion {
				t.Fatalf("the commit after a version-%d head wrote %+v (table version %d)", v, snap, tbl.FormatVersion())
			}
			eps, err := tbl.Episodes(ctx, snap)
			if err != nil || !reflect.DeepEqual(eps, last.Episodes[:len(last.Episodes)-1]) {
				t.Errorf("after deleting %s: %+v, %v", gone, eps, err)
			}
			if probs, err := tbl.Verify(ctx); err != nil || len(probs) > 0 {
				t.Errorf("verify: %+v, %v", probs, err)
			}
		})
	}
}
