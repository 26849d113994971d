package mounttree

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/framefs/framefs/internal/treetest"
	"github.com/framefs/framefs/table"
)

// TestFoldersReadOnlyTheirManifests: a snapshot's tree reads no manifest
// until a folder of episodes is listed or looked in, and then only the
// manifests whose summaries may hold that folder's episodes: the
// partition folders come from the summaries, a listing reads its
// partition's manifest, a lookup of one episode the manifest that may
// hold it in its partition (every manifest's id range holds it).
func TestFoldersReadOnlyTheirManifests(t *testing.T) {
	ctx := context.Background()
	const perTask = lookupsBeforeLoad + 8
	x := treetest.OpenInterleaved(t, perTask)
	tbl, head := x.Table, x.Head
	c := newTestCatalog(t, tbl, &treetest.Frames{}, CatalogOptions{})
	tree, err := c.SnapshotTree(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	root := tree.Root("/t/snapshots/3")
	if got := listNames(t, root); !slices.Equal(got, []string{"task=pick", "task=place", "task=stack"}) {
		t.Fatalf("root lists %q", got)
	}
	place := walk(t, root, "task=place").(*Folder)
	x.Reads(t, "listing the root and looking a partition up")

	ep := walk(t, place, "ep-001").(*Folder) // a place episode
	if got := listNames(t, ep); len(got) != 3+3 || got[0] != "000000.jpg" {
		t.Errorf("ep-001 lists %q", got)
	}
	x.Reads(t, "looking one episode up", x.ManifestOf["place"])
	if _, err := place.Lookup(ctx, "ep-003"); !errors.Is(err, table.ErrNotFound) { // a pick episode
		t.Errorf("ep-003 of pick found in task=place: %v", err)
	}
	x.Reads(t, "looking up an episode of another partition")

	stack := walk(t, root, "task=stack").(*Folder)
	names := listNames(t, stack)
	if len(names) != perTask || names[0] != "ep-002" || names[1] != "ep-005" {
		t.Errorf("task=stack lists %d episodes: %q...", len(names), names[:2])
	}
	x.Reads(t, "listing a partition", x.ManifestOf["stack"])
	walk(t, stack, "ep-005/000002.jpg")
	x.Reads(t, "a lookup in a listed folder")

	// More lookups one at a time than lookupsBeforeLoad read the folder
	// whole; the manifests read are still its partition's only.
	ix := tree.index.(*snapshotIndex)
	pick := walk(t, root, "task=pick").(*Folder)
	for i := range lookupsBeforeLoad + 1 {
		walk(t, pick, fmt.Sprintf("ep-%03d", 3*i))
	}
	if f, _ := ix.folder("task=pick"); !f.loaded || len(f.episodes) != perTask || f.found != nil {
		t.Errorf("after %d lookups task=pick is loaded %v, with %d episodes", lookupsBeforeLoad+1, f.loaded, len(f.episodes))
	}
	for _, key := range x.Store.ManifestReads() {
		if key != x.ManifestOf["pick"] {
			t.Errorf("lookups in task=pick read %s", key)
		}
	}
	if b, charged := tree.bytes(), c.trees.Bytes(); charged < b {
		t.Errorf("the tree is charged %d bytes, its index takes %d", charged, b)
	}
}

// TestNewHeadListsOnlyNewManifests: listing a folder of episodes in a new
// head reads only the manifests its parent's listing did not, and lists
// the episodes of both; a folder of another partition reads its own.
func TestNewHeadListsOnlyNewManifests(t *testing.T) {
	ctx := context.Background()
	x := treetest.OpenInterleaved(t, 6)
	counters := &Counters{}
	c := newTestCatalog(t, x.Table, &treetest.Frames{}, CatalogOptions{Counters: counters})
	list := func(snap *table.Snapshot, dir string) []string {
		t.Helper()
		tree, err := c.SnapshotTree(ctx, snap)
		if err != nil {
			t.Fatal(err)
		}
		return listNames(t, walk(t, tree.Root("/t"), dir).(*Folder))
	}
	first := list(x.Head, "task=place")
	if len(first) != 6 || counters.ManifestsListed.Load() != 1 {
		t.Fatalf("task=place of the first head lists %q, reading %d manifests", first, counters.ManifestsListed.Load())
	}
	head, err := x.Table.AddEpisodes(ctx, []table.EpisodeInput{{Episode: "ep-900", Sidecar: treetest.Rows(t, "ep-900", "place", 3),
		Videos: map[string]table.VideoFile{"": {Path: treetest.Video("h264_vfr.mp4")}}}}, table.AddOptions{NoSizes: true, ReuseStoredVideos: true})
	if err != nil {
		t.Fatal(err)
	}
	counters.ManifestsListed.Store(0)
	if got := list(head, "task=place"); !slices.Equal(got, append(slices.Clone(first), "ep-900")) {
		t.Errorf("task=place of the next head lists %q, want %q and ep-900", got, first)
	}
	if n := counters.ManifestsListed.Load(); n != 1 {
		t.Errorf("listing task=place in the next head read %d manifests, want its new one", n)
	}
	counters.ManifestsListed.Store(0)
	if got := list(head, "task=pick"); len(got) != 6 {
		t.Errorf("task=pick lists %q", got)
	}
	if n := counters.ManifestsListed.Load(); n != 1 {
		t.Errorf("listing task=pick read %d manifests, want 1", n)
	}
	if c.listed.Len() != 3 || c.listed.Bytes() <= 0 {
		t.Errorf("%d manifests' episodes kept in %d bytes, want 3", c.listed.Len(), c.listed.Bytes())
	}
}
