package fusefs

import (
	"context"
	"github.com/framefs/framefs/internal/mounttest"
	"github.com/framefs/framefs/internal/testenv"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/treetest"
	"github.com/framefs/framefs/table"
)

// TestMountReadsOnlyListedPartitions: through a real mount, listing a
// snapshot reads no manifest, listing a partition folder its own
// manifest only, and reading a frame of an episode of another partition
// (looked up, never listed) that partition's manifest only.
func TestMountReadsOnlyListedPartitions(t *testing.T) {
	testenv.RequireFUSE(t)
	ctx := context.Background()
	const perTask = 20
	x := treetest.OpenInterleaved(t, perTask)
	root, err := NewTableRoot(ctx, x.Table, &treetest.Frames{}, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	mnt := serveTableRoot(t, root)
	if got := names(t, filepath.Join(mnt, "latest")); !slices.Equal(got, []string{"task=pick", "task=place", "task=stack"}) {
		t.Fatalf("latest lists %q", got)
	}
	x.Reads(t, "ls latest")
	if got := names(t, filepath.Join(mnt, "latest", "task=stack")); len(got) != perTask || got[0] != "ep-002" {
		t.Errorf("task=stack lists %d names: %q", len(got), got)
	}
	x.Reads(t, "ls latest/task=stack", x.ManifestOf["stack"])
	data, err := os.ReadFile(filepath.Join(mnt, "latest", "task=place", "ep-004", "000001.jpg"))
	if err != nil || len(data) == 0 {
		t.Fatalf("a frame of ep-004: %d bytes, %v", len(data), err)
	}
	x.Reads(t, "reading a frame of an episode of task=place", x.ManifestOf["place"])
}

// TestLargeListingMakesNoNodes: a folder of more entries than the mount's
// maxListedNodes is listed, names and types, without a node per entry
// (READDIRPLUS's lookups are declined), and the memory is trimmed when the
// listing is closed; an entry the kernel then uses is looked up alone. A
// smaller folder's entries are looked up as they are listed, except its
// frames.
func TestLargeListingMakesNoNodes(t *testing.T) {
	testenv.RequireFUSE(t)
	root := interleavedRoot(t, 12)
	root.m.maxListedNodes = 10
	mnt := serveTableRoot(t, root)
	made := func() int64 { return root.m.stats.nodesMade.Load() }

	stack := filepath.Join(mnt, "latest", "task=stack")
	if _, err := os.Stat(stack); err != nil {
		t.Fatal(err)
	}
	before := made()
	entries, err := os.ReadDir(stack)
	if err != nil || len(entries) != 12 || entries[0].Name() != "ep-002" || !entries[0].IsDir() {
		t.Fatalf("task=stack lists %d entries (%v), the first %v", len(entries), err, entries)
	}
	if n := made() - before; n != 0 {
		t.Errorf("listing 12 episodes (more than 10) made %d nodes", n)
	}
	// Closing the large listing gives the memory its reading freed back.
	for deadline := time.Now().Add(5 * time.Second); root.m.stats.nodes.trims.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no memory trim after a large listing was closed")
		}
	}
	if st, err := os.Stat(filepath.Join(stack, "ep-005", "000001.jpg")); err != nil || st.Size() == 0 {
		t.Fatalf("a frame of a listed episode: %v, %v", st, err)
	}
	if n := made() - before; n != 2 {
		t.Errorf("looking a frame up made %d nodes, want its folder's and its own", n)
	}
	// 3 frames and 3 other files: files are looked up only when used (a
	// listing leaves no node per file; see folderHandle.Lookup). Every
	// entry gets one node, none two.
	before = made()
	ep := filepath.Join(stack, "ep-008")
	got := names(t, ep)
	if len(got) != 6 {
		t.Fatalf("ep-008 lists %q", got)
	}
	if n := made() - before; n != 1 {
		t.Errorf("listing an episode folder of 3 frames and 3 files made %d nodes, want 1: its own", n)
	}
	for _, name := range got {
		if _, err := os.Stat(filepath.Join(ep, name)); err != nil {
			t.Fatal(err)
		}
	}
	if n := made() - before; n != 1+6 {
		t.Errorf("listing and using an episode folder of 6 entries made %d nodes, want 7", n)
	}
}

// TestListingAgainReusesFolderNodes: listing a folder of episodes looks
// up every episode folder (READDIRPLUS); listing it again is served from
// the listing the kernel keeps (FOPEN_CACHE_DIR): the daemon makes no
// listing, looks nothing up and makes no node, and the kernel keeps
// using the folders. Once it has forgotten them, a listing looks them up
// anew.
func TestListingAgainReusesFolderNodes(t *testing.T) {
	testenv.RequireFUSE(t)
	root := interleavedRoot(t, 12)
	mnt := serveTableRoot(t, root)
	stack := filepath.Join(mnt, "latest", "task=stack")
	first := names(t, stack)
	if len(first) != 12 {
		t.Fatalf("task=stack lists %q", first)
	}
	c := root.m.stats
	made, lookups, opened, listings := c.nodesMade.Load(), c.lookups.Load(), c.foldersOpened.Load(), c.listingsMade.Load()
	for range 3 {
		if again := names(t, stack); !slices.Equal(again, first) {
			t.Fatalf("task=stack lists %q, then %q", first, again)
		}
	}
	if n := c.foldersOpened.Load() - opened; n != 3 {
		t.Errorf("listing task=stack 3 more times opened it %d times", n)
	}
	if n := c.listingsMade.Load() - listings; n != 0 {
		t.Errorf("listing task=stack again made %d listings, want none (the kernel keeps it)", n)
	}
	if n := c.nodesMade.Load() - made; n != 0 {
		t.Errorf("listing task=stack again made %d nodes", n)
	}
	if n := c.lookups.Load() - lookups; n != 0 {
		t.Errorf("listing task=stack again looked up %d names", n)
	}
	// The kernel still has every folder: each is there, with its files,
	// and using them makes no node but those of the frames stat'ed.
	for _, ep := range first {
		if st, err := os.Stat(filepath.Join(stack, ep)); err != nil || !st.IsDir() {
			t.Fatalf("%s after the listings: %v, %v", ep, st, err)
		}
	}
	if n := c.nodesMade.Load() - made; n != 0 {
		t.Errorf("stat of the listed folders made %d nodes", n)
	}
	if got := names(t, filepath.Join(stack, first[5])); len(got) != 6 {
		t.Errorf("%s lists %q", first[5], got)
	}
	// Once the kernel forgets them, a listing looks them up anew.
	dropKernelCaches(t)
	for deadline := time.Now().Add(5 * time.Second); c.nodes.forgotten.Load() < 12; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d nodes forgotten after drop_caches, want the 12 folders at least", c.nodes.forgotten.Load())
		}
	}
	made = c.nodesMade.Load()
	if again := names(t, stack); !slices.Equal(again, first) {
		t.Fatalf("task=stack lists %q, then %q", first, again)
	}
	if n := c.nodesMade.Load() - made; n < 12 {
		t.Errorf("listing task=stack after the kernel forgot its folders made %d nodes, want 12 at least", n)
	}
}

// interleavedRoot is a read-only mount's root of a table of three
// partitions of perTask episodes each (treetest.InterleavedTable).
func interleavedRoot(t *testing.T, perTask int) *TableRoot {
	t.Helper()
	ctx := context.Background()
	tbl, err := table.Open(ctx, treetest.InterleavedTable(t, perTask), table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root, err := NewTableRoot(ctx, tbl, &treetest.Frames{}, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// serveTableRoot mounts root under a temporary folder, as MountTable
// does, and unmounts it at cleanup, checking that nothing stays mounted.
func serveTableRoot(t *testing.T, root *TableRoot) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := mount(mnt, "test", root.node, root.m)
	if err != nil {
		t.Fatal(err)
	}
	root.node.live.Store(true)
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		srv.Wait()
		if mounttest.Mounted(mnt) {
			t.Errorf("%s is still mounted", mnt)
		}
	})
	return mnt
}
