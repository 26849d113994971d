package mounttree

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/framefs/framefs/internal/treetest"
)

// TestListingAllocatesNoEntryPerFrame: listing an episode folder again,
// as a job following a table does for every episode on every pass, makes
// its frame entries as they are asked for, with names made once and
// shared: the allocations of a listing do not grow with its frames, and
// the entries are the folder's List.
func TestListingAllocatesNoEntryPerFrame(t *testing.T) {
	ctx := context.Background()
	tree := robotTree(t, &treetest.Frames{})
	ep := walk(t, tree.Root("/robot/snapshots/1"), "task=place/ep2").(*Folder)
	want, err := ep.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 33 {
		t.Fatalf("ep2 lists %d entries, want 30 frames, its video and 2 rows files", len(want))
	}
	allocs := listingAllocs(t, ep, want)
	// A listing's own: its closures, the video's and rows files' entries
	// and their names and inode numbers; 30 frames took 30 more.
	if allocs > 15 {
		t.Errorf("listing a 30-frame episode allocates %.0f times", allocs)
	}
}

// TestPaddedNamesShared: paddedName gives fmt's name for every ordinal,
// width and extension, from any number of goroutines; the names of small
// ordinals are one string each, and the shared runs stay within their
// bound.
func TestPaddedNamesShared(t *testing.T) {
	exts := []string{"jpg", "bmp", "npy"}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for _, width := range []int{2, 6, 7} {
				for _, ext := range exts {
					for _, i := range []int64{0, 1, 63, 64, 999, int64(g) * 5000, maxSharedName - 1, maxSharedName, 1e7} {
						if got, want := paddedName(i, width, ext), fmt.Sprintf("%0*d.%s", width, i, ext); got != want {
							t.Errorf("paddedName(%d, %d, %s) = %q, want %q", i, width, ext, got, want)
						}
					}
				}
			}
		})
	}
	wg.Wait()
	a, b := paddedName(42, 6, "jpg"), paddedName(42, 6, "jpg")
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("the name of ordinal 42 is made anew on each call")
	}
	if a, b := paddedName(maxSharedName, 6, "jpg"), paddedName(maxSharedName, 6, "jpg"); unsafe.StringData(a) == unsafe.StringData(b) {
		t.Error("the name of an ordinal past maxSharedName is shared")
	}
	sharedNames.mu.Lock()
	total := sharedNames.total
	sharedNames.mu.Unlock()
	if total > maxSharedNames {
		t.Errorf("%d shared names, bound %d", total, maxSharedNames)
	}
}

// TestPartitionListingAllocatesNoEntryPerEpisode: listing a folder of
// episodes again makes its entries as they are asked for, from the names
// the index holds: the allocations of a listing do not grow with its
// episodes, and the entries are the folder's List, in name order, with
// their paths' inode numbers.
func TestPartitionListingAllocatesNoEntryPerEpisode(t *testing.T) {
	ctx := context.Background()
	const perTask = 40
	x := treetest.OpenInterleaved(t, perTask)
	c := newTestCatalog(t, x.Table, &treetest.Frames{}, CatalogOptions{})
	tree, err := c.SnapshotTree(ctx, x.Head)
	if err != nil {
		t.Fatal(err)
	}
	stack := walk(t, tree.Root("/t/latest"), "task=stack").(*Folder)
	want, err := stack.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != perTask || !slices.IsSortedFunc(want, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatalf("task=stack lists %d entries, want %d in name order: %v", len(want), perTask, want)
	}
	for _, e := range want {
		if !e.Folder || e.Ino != PathIno("/t/latest/task=stack/"+e.Name) {
			t.Fatalf("entry %+v: want a folder of inode %d", e, PathIno("/t/latest/task=stack/"+e.Name))
		}
	}
	allocs := listingAllocs(t, stack, want)
	if allocs > 4 {
		t.Errorf("listing a partition of %d episodes allocates %.0f times", perTask, allocs)
	}
}

// listingAllocs returns how many times reading f's Listing whole
// allocates, checking its entries against want (f's List).
func listingAllocs(t *testing.T, f *Folder, want []Entry) float64 {
	t.Helper()
	ctx := context.Background()
	// The first listing of an episode has its rows files' sizes worked
	// out on other goroutines; on a busy machine their allocations would
	// count as the listing's (AllocsPerRun counts the process's), so they
	// are waited for.
	for _, e := range want {
		if e.Name != RowsJSONL && e.Name != RowsParquet {
			continue
		}
		item, err := f.Lookup(ctx, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := item.(*File).Size(ctx); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		l, err := f.Listing(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if l.Len() != len(want) {
			t.Fatalf("the listing has %d entries, List %d", l.Len(), len(want))
		}
		for i := range l.Len() {
			if e := l.At(i); e != want[i] {
				t.Fatalf("entry %d: %+v, List has %+v", i, e, want[i])
			}
		}
	})
	t.Logf("%.0f allocations a listing", allocs)
	return allocs
}
