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
