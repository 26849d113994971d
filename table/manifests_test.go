package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/framefs/framefs/table/manifest"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/table/storage/storagetest"
)

// partitionedTable makes a table partitioned by task whose commits write
// manifests of at most target entries, merged in tiers of fanIn.
func partitionedTable(t *testing.T, store storage.Store, target, fanIn int64) *Table {
	t.Helper()
	tbl, err := Create(context.Background(), store, Schema{
		Columns: []Column{
			{Name: "task", Type: "string"},
			{Name: "speed", Type: "float64"},
		},
		PartitionColumns: []string{"task"},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tbl.merges = mergePolicy{target: target, fanIn: fanIn}
	return tbl
}

// taskInputs makes episodes ep-FROM.. of 3 rows, tasks taking turns,
// each at a speed of its own, cut from one video.
func taskInputs(t *testing.T, from, n int, tasks ...string) []EpisodeInput {
	t.Helper()
	var out []EpisodeInput
	for i := from; i < from+n; i++ {
		ep := fmt.Sprintf("ep-%04d", i)
		var b strings.Builder
		for r := 0; r < 3; r++ {
			fmt.Fprintf(&b, `{"task":%q,"speed":%d}`+"\n", tasks[i%len(tasks)], i*10+r)
		}
		sc, err := ParseSidecar(ep+".jsonl", []byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, EpisodeInput{Episode: ep, Videos: map[string]VideoFile{"": {Path: fixture("h264_vfr.mp4"), FirstFrame: int64(i % 4)}}, Sidecar: sc})
	}
	return out
}

func summaries(t *testing.T, tbl *Table, snap *Snapshot) []manifest.Summary {
	t.Helper()
	infos, err := tbl.Manifests(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	var out []manifest.Summary
	for _, info := range infos {
		if info.Summary == nil {
			t.Fatalf("snapshot %d (version %d) has a manifest without summary", snap.ID, snap.FormatVersion)
		}
		out = append(out, *info.Summary)
	}
	return out
}

// TestMergeTiers: one-episode commits never rewrite the table's
// manifests: each tier holds fewer than fanIn manifests, every entry is
// rewritten at most once per tier, and full manifests stay as they are.
func TestMergeTiers(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const target, fanIn, commits = 27, 3, 40 // tiers 1-2, 3-8, 9-26, full
	tbl := partitionedTable(t, store, target, fanIn)
	seen := map[string]bool{}
	written := int64(0)
	var snap *Snapshot
	for i := range commits {
		snap, err = tbl.AddEpisodes(ctx, taskInputs(t, i, 1, "pick", "place"), AddOptions{NoSizes: true, ReuseStoredVideos: true})
		if err != nil {
			t.Fatal(err)
		}
		perTier := map[int]int{}
		var total, fresh int64
		for _, s := range summaries(t, tbl, snap) {
			total += s.Episodes
			perTier[tbl.merges.tier(s.Episodes)]++
			if !seen[s.Manifest] {
				seen[s.Manifest] = true
				fresh += s.Episodes
			}
			if s.Episodes > target {
				t.Fatalf("commit %d: a manifest of %d entries, above the target %d", i, s.Episodes, target)
			}
		}
		for tier, n := range perTier {
			if tier != fullTier && n >= fanIn {
				t.Fatalf("commit %d: %d manifests in tier %d", i, n, tier)
			}
		}
		if total != int64(i+1) || snap.Episodes != total {
			t.Fatalf("commit %d: manifests hold %d episodes, the snapshot counts %d", i, total, snap.Episodes)
		}
		if fresh > target*fanIn {
			t.Fatalf("commit %d wrote %d entries", i, fresh)
		}
		written += fresh
	}
	// 3 tiers below full, plus the commit's own entry.
	if written > commits*4 {
		t.Errorf("%d one-episode commits wrote %d manifest entries", commits, written)
	}
	eps, err := tbl.Episodes(ctx, snap)
	if err != nil || len(eps) != commits {
		t.Fatalf("%d episodes, %v", len(eps), err)
	}
	if !slices.IsSortedFunc(eps, func(a, b EpisodeEntry) int {
		return strings.Compare(a.Partition["task"]+"/"+a.Episode, b.Partition["task"]+"/"+b.Episode)
	}) {
		t.Error("episodes are not sorted by partition and id")
	}
	if probs, err := tbl.Verify(ctx); err != nil || len(probs) > 0 {
		t.Fatalf("verify: %v %v", probs, err)
	}
}

// TestChangeRewritesOneManifest: updating or deleting an episode of a
// large table rewrites the one manifest that holds it.
func TestChangeRewritesOneManifest(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl := partitionedTable(t, store, 8, 4)
	snap, err := tbl.AddEpisodes(ctx, taskInputs(t, 0, 40, "pick", "place"), AddOptions{NoSizes: true})
	if err != nil {
		t.Fatal(err)
	}
	before := summaries(t, tbl, snap)
	if len(before) != 5 {
		t.Fatalf("40 episodes in %d manifests, want 5 full ones of 8", len(before))
	}
	changed := func(a, b []manifest.Summary) (gone, added []manifest.Summary) {
		for _, s := range a {
			if !slices.ContainsFunc(b, func(x manifest.Summary) bool { return x.Manifest == s.Manifest }) {
				gone = append(gone, s)
			}
		}
		for _, s := range b {
			if !slices.ContainsFunc(a, func(x manifest.Summary) bool { return x.Manifest == s.Manifest }) {
				added = append(added, s)
			}
		}
		return gone, added
	}
	sc, err := ParseSidecar("u.jsonl", []byte(`{"task":"pick","speed":1}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err = tbl.UpdateRows(ctx, "ep-0010", sc)
	if err != nil {
		t.Fatal(err)
	}
	after := summaries(t, tbl, snap)
	gone, added := changed(before, after)
	if len(gone) != 1 || len(added) != 1 || added[0].Episodes != 8 || !added[0].Covers("ep-0010") {
		t.Fatalf("an update rewrote %+v as %+v", gone, added)
	}
	e, err := tbl.Episode(ctx, snap, "ep-0010")
	if err != nil || e.Rows != 1 {
		t.Fatalf("updated episode: %+v %v", e, err)
	}
	snap, err = tbl.DeleteEpisode(ctx, "ep-0021")
	if err != nil {
		t.Fatal(err)
	}
	gone, added = changed(after, summaries(t, tbl, snap))
	if len(gone) != 1 || len(added) != 1 || added[0].Episodes != 7 || added[0].Covers("ep-0021") && gone[0].Episodes != 8 {
		t.Fatalf("a delete rewrote %+v as %+v", gone, added)
	}
	if _, err := tbl.Episode(ctx, snap, "ep-0021"); err == nil || snap.Episodes != 39 {
		t.Fatalf("deleted episode still there (%v), %d episodes", err, snap.Episodes)
	}
}

// TestLookupsReadOnlyTheirManifests: one episode, one partition's
// episodes and the partition values read the manifests whose summaries
// may hold them, and no other.
func TestLookupsReadOnlyTheirManifests(t *testing.T) {
	ctx := context.Background()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl := partitionedTable(t, local, 6, 100)
	// Three commits, each of one task's episodes: every manifest holds
	// one partition.
	for i, task := range []string{"pick", "place", "stack"} {
		if _, err := tbl.AddEpisodes(ctx, taskInputs(t, i*20, 20, task), AddOptions{NoSizes: true, ReuseStoredVideos: i > 0}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &storagetest.CountingStore{Store: local}
	fresh, err := Open(ctx, rec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := fresh.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all := summaries(t, fresh, snap)
	rec.ManifestReads()

	e, err := fresh.Episode(ctx, snap, "ep-0025")
	if err != nil || e.Partition["task"] != "place" {
		t.Fatalf("Episode: %+v %v", e, err)
	}
	if got := rec.ManifestReads(); len(got) != 1 {
		t.Errorf("one episode's lookup read %d manifests of %d: %v", len(got), len(all), got)
	}
	if _, err := fresh.Episode(ctx, snap, "ep-9999"); err == nil {
		t.Error("found an episode the table does not hold")
	}
	if got := rec.ManifestReads(); len(got) != 0 {
		t.Errorf("a lookup outside every range read %v", got)
	}

	eps, err := fresh.EpisodesIn(ctx, snap, []string{"stack"})
	if err != nil || len(eps) != 20 || eps[0].Episode != "ep-0040" {
		t.Fatalf("EpisodesIn(stack): %d episodes, %v", len(eps), err)
	}
	want := 0
	for _, s := range all {
		if s.Partitions["task"].Min.Str == "stack" {
			want++
		}
	}
	if got := rec.ManifestReads(); len(got) != want || want == 0 || want == len(all) {
		t.Errorf("a partition read %d manifests, %d of %d hold it", len(got), want, len(all))
	}

	// ep-0005 is in the range of pick's manifest, not in place's.
	if _, err := fresh.EpisodeIn(ctx, snap, []string{"place"}, "ep-0005"); !errors.Is(err, ErrNotFound) {
		t.Errorf("EpisodeIn(place, ep-0005) of an episode of pick: %v", err)
	}
	if got := rec.ManifestReads(); len(got) != 0 {
		t.Errorf("a lookup in a partition no manifest of its range holds read %v", got)
	}
	e, err = fresh.EpisodeIn(ctx, snap, []string{"pick"}, "ep-0005")
	if err != nil || e.Episode != "ep-0005" {
		t.Fatalf("EpisodeIn(pick, ep-0005): %+v %v", e, err)
	}
	if got := rec.ManifestReads(); len(got) != 1 {
		t.Errorf("one episode's lookup in its partition read %d manifests: %v", len(got), got)
	}

	vals, err := fresh.PartitionValues(ctx, snap, nil)
	if err != nil || !slices.Equal(vals, []string{"pick", "place", "stack"}) {
		t.Fatalf("partition values %v, %v", vals, err)
	}
	if got := rec.ManifestReads(); len(got) != 0 {
		t.Errorf("partition values of single-partition manifests read %v", got)
	}
	if probs, err := fresh.Verify(ctx); err != nil || len(probs) > 0 {
		t.Fatalf("verify: %v %v", probs, err)
	}
}

// TestVerifySummaries: Verify reports a manifest list whose summary does
// not hold of its manifest (readers would skip or count wrongly).
func TestVerifySummaries(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl := partitionedTable(t, store, 100, 8)
	head, err := tbl.AddEpisodes(ctx, taskInputs(t, 0, 10, "pick", "place"), AddOptions{NoSizes: true})
	if err != nil {
		t.Fatal(err)
	}
	schema, err := tbl.Schema(ctx, head.SchemaID)
	if err != nil {
		t.Fatal(err)
	}
	for name, lie := range map[string]func(*manifest.Summary){
		"counts":  func(s *manifest.Summary) { s.Rows-- },
		"range":   func(s *manifest.Summary) { st := s.Stats["speed"]; st.Max.Float = 5; s.Stats["speed"] = st },
		"episode": func(s *manifest.Summary) { s.EpisodeMax = "ep-0003" },
	} {
		sums := summaries(t, tbl, head)
		sums[0].Stats = maps.Clone(sums[0].Stats)
		lie(&sums[0])
		list, err := manifest.EncodeList(layoutOf(schema), sums)
		if err != nil {
			t.Fatal(err)
		}
		lying := *head
		lying.ID, lying.Parent, lying.ManifestList = head.ID+1, head.ID, prefixManifestList+name+".parquet"
		data, _ := json.Marshal(lying)
		if err := store.PutIfAbsent(ctx, lying.ManifestList, list); err != nil {
			t.Fatal(err)
		}
		if err := store.PutIfAbsent(ctx, snapshotKey(lying.ID), data); err != nil {
			t.Fatal(err)
		}
		rep, err := tbl.VerifyWith(ctx, VerifyOptions{})
		if err != nil || len(rep.Problems) != 1 || rep.Problems[0].Snapshot != lying.ID || !strings.Contains(rep.Problems[0].Problem, "summary") {
			t.Errorf("%s: verify says %+v, %v", name, rep.Problems, err)
		}
		if err := store.Delete(ctx, snapshotKey(lying.ID)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEachEpisodeInBatches: a manifest's entries come in batches of at
// most a row group's, of either format version, all of them or one
// partition's, without their statistics.
func TestEachEpisodeInBatches(t *testing.T) {
	ctx := context.Background()
	layout := manifest.Layout{Partitions: []manifest.Column{{Name: "task", Type: "string"}}, Columns: []manifest.Column{{Name: "speed", Type: "float64"}}, Videos: []string{"video"}}
	var entries []EpisodeEntry
	for i := range 2*manifest.EntriesPerRowGroup + 100 {
		entries = append(entries, EpisodeEntry{Episode: fmt.Sprintf("ep-%05d", i), Partition: map[string]string{"task": []string{"pick", "place"}[i%2]},
			Rows: 3, DataFile: "data/d.parquet", Videos: map[string]VideoRef{"video": {Pack: "video/p.video", Length: 10, SHA256: strings.Repeat("0", 64), Frames: 3}},
			Stats: map[string]ColumnStats{"speed": {Min: json.RawMessage("1"), Max: json.RawMessage("2")}}})
	}
	data, _, err := manifest.Encode(layout, slices.Clone(entries))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*manifestFile{
		{key: "v1", layout: layout, loadedManifest: &loadedManifest{entries: entries}},
		{key: "v2", layout: layout, loadedManifest: &loadedManifest{data: data}},
	} {
		for _, values := range [][]string{nil, {"place"}, {"push"}} {
			var got []string
			batches := 0
			err := m.eachIn(ctx, values, false, func(batch []EpisodeEntry) error {
				batches++
				if len(batch) > manifest.EntriesPerRowGroup {
					t.Errorf("%s %v: a batch of %d entries", m.key, values, len(batch))
				}
				for _, e := range batch {
					if e.Stats != nil {
						t.Errorf("%s %v: %s has statistics", m.key, values, e.Episode)
					}
					if values != nil && e.Partition["task"] != values[0] {
						t.Errorf("%s %v: %s of %s", m.key, values, e.Episode, e.Partition["task"])
					}
					got = append(got, e.Episode)
				}
				return nil
			})
			want := len(entries)
			switch {
			case values == nil:
			case values[0] == "place":
				want /= 2
			default:
				want = 0 // a partition the manifest does not hold
			}
			slices.Sort(got)
			if err != nil || len(got) != want || len(slices.Compact(got)) != want || batches < want/manifest.EntriesPerRowGroup {
				t.Errorf("%s %v: %d episodes in %d batches, %v", m.key, values, len(got), batches, err)
			}
		}
	}
}

// TestLookupsInANewHeadReuseFoundEntries: an episode found in one
// snapshot is found in the next, whose manifest list holds the same
// manifest, without reading that manifest again; once a change rewrites
// the manifest, the new head gives the new entry and the old snapshot
// still the old one.
func TestLookupsInANewHeadReuseFoundEntries(t *testing.T) {
	ctx := context.Background()
	local := mustStore(t, t.TempDir())
	tbl := partitionedTable(t, local, 8, 100)
	if _, err := tbl.AddEpisodes(ctx, taskInputs(t, 0, 16, "pick"), AddOptions{NoSizes: true}); err != nil {
		t.Fatal(err)
	}
	rec := &storagetest.CountingStore{Store: local}
	follower, err := Open(ctx, rec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Keep no manifest, so that every manifest decoded is a manifest read.
	follower.manifests = newManifestCache(0)
	lookup := func(snap *Snapshot, wantReads int) EpisodeEntry {
		t.Helper()
		rec.ManifestReads()
		e, err := follower.EpisodeIn(ctx, snap, []string{"pick"}, "ep-0005")
		if err != nil || e.Episode != "ep-0005" {
			t.Fatalf("EpisodeIn(pick, ep-0005) in snapshot %d: %+v %v", snap.ID, e, err)
		}
		// Nothing kept, a lookup reads its manifest twice: its episode
		// ids, then the entry.
		if got := slices.Compact(slices.Sorted(slices.Values(rec.ManifestReads()))); len(got) != wantReads {
			t.Errorf("EpisodeIn in snapshot %d read %d manifests, want %d: %v", snap.ID, len(got), wantReads, got)
		}
		return e
	}
	first, err := follower.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := lookup(first, 1)

	if _, err := tbl.AddEpisodes(ctx, taskInputs(t, 16, 8, "place"), AddOptions{NoSizes: true, ReuseStoredVideos: true}); err != nil {
		t.Fatal(err)
	}
	second, err := follower.Head(ctx)
	if err != nil || second.ID == first.ID {
		t.Fatalf("head %+v after a commit, %v", second, err)
	}
	if e := lookup(second, 0); e.Rows != before.Rows || e.DataFile != before.DataFile {
		t.Errorf("the next head's entry %+v, want %+v", e, before)
	}
	if _, err := follower.EpisodeIn(ctx, second, []string{"place"}, "ep-0005"); !errors.Is(err, ErrNotFound) {
		t.Errorf("EpisodeIn(place, ep-0005) of an episode of pick: %v", err)
	}

	sc, err := ParseSidecar("u.jsonl", []byte(`{"task":"pick","speed":1}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.UpdateRows(ctx, "ep-0005", sc); err != nil {
		t.Fatal(err)
	}
	third, err := follower.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := lookup(third, 1); e.Rows != 1 || e.DataFile == before.DataFile {
		t.Errorf("after an update the head's entry is %+v, want its new rows", e)
	}
	if e := lookup(first, 0); e.Rows != before.Rows || e.DataFile != before.DataFile {
		t.Errorf("after an update the first snapshot's entry is %+v, want %+v", e, before)
	}
	if follower.found.Bytes() <= 0 || follower.CacheBytes() < follower.found.Bytes() {
		t.Errorf("found entries charged %d bytes, caches %d", follower.found.Bytes(), follower.CacheBytes())
	}
}
