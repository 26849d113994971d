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
	rec := &treetest.CountingStore{Store: treetest.InterleavedTable(t, perTask)}
	tbl, err := table.Open(ctx, rec, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	head, err := tbl.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := tbl.Manifests(ctx, head)
	if err != nil || len(infos) != 3 {
		t.Fatalf("%d manifests, %v; want one per task", len(infos), err)
	}
	manifestOf := map[string]string{}
	for _, info := range infos {
		manifestOf[info.Summary.Partitions["task"].Min.Str] = info.Key
	}
	reads := func(what string, want ...string) {
		t.Helper()
		if got := rec.ManifestReads(); !slices.Equal(got, want) {
			t.Errorf("%s read manifests %v, want %v", what, got, want)
		}
	}
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
	reads("listing the root and looking a partition up")

	ep := walk(t, place, "ep-001").(*Folder) // a place episode
	if got := listNames(t, ep); len(got) != 3+3 || got[0] != "000000.jpg" {
		t.Errorf("ep-001 lists %q", got)
	}
	reads("looking one episode up", manifestOf["place"])
	if _, err := place.Lookup(ctx, "ep-003"); !errors.Is(err, table.ErrNotFound) { // a pick episode
		t.Errorf("ep-003 of pick found in task=place: %v", err)
	}
	reads("looking up an episode of another partition")

	stack := walk(t, root, "task=stack").(*Folder)
	names := listNames(t, stack)
	if len(names) != perTask || names[0] != "ep-002" || names[1] != "ep-005" {
		t.Errorf("task=stack lists %d episodes: %q...", len(names), names[:2])
	}
	reads("listing a partition", manifestOf["stack"])
	walk(t, stack, "ep-005/000002.jpg")
	reads("a lookup in a listed folder")

	// More lookups one at a time than lookupsBeforeLoad read the folder
	// whole; the manifests read are still its partition's only.
	x := tree.index.(*snapshotIndex)
	pick := walk(t, root, "task=pick").(*Folder)
	for i := range lookupsBeforeLoad + 1 {
		walk(t, pick, fmt.Sprintf("ep-%03d", 3*i))
	}
	if f, _ := x.folder("task=pick"); !f.loaded || len(f.episodes) != perTask || f.found != nil {
		t.Errorf("after %d lookups task=pick is loaded %v, with %d episodes", lookupsBeforeLoad+1, f.loaded, len(f.episodes))
	}
	for _, key := range rec.ManifestReads() {
		if key != manifestOf["pick"] {
			t.Errorf("lookups in task=pick read %s", key)
		}
	}
	if b, charged := tree.bytes(), c.trees.Bytes(); charged < b {
		t.Errorf("the tree is charged %d bytes, its index takes %d", charged, b)
	}
}
