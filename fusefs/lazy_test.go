package fusefs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/framefs/framefs/internal/treetest"
	"github.com/framefs/framefs/table"
)

// TestMountReadsOnlyListedPartitions: through a real mount, listing a
// snapshot reads no manifest, listing a partition folder its own
// manifest only, and reading a frame of an episode of another partition
// (looked up, never listed) that partition's manifest only.
func TestMountReadsOnlyListedPartitions(t *testing.T) {
	requireFUSE(t)
	ctx := context.Background()
	const perTask = 20
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
	if err != nil || len(infos) != len(treetest.Tasks) {
		t.Fatalf("%d manifests, %v; want one per task", len(infos), err)
	}
	manifestOf := map[string]string{}
	for _, info := range infos {
		manifestOf[info.Summary.Partitions["task"].Min.Str] = info.Key
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := MountTable(mnt, "interleaved", tbl, &treetest.Frames{}, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		srv.Wait()
		if mounted(mnt) {
			t.Errorf("%s is still mounted", mnt)
		}
	})
	reads := func(what string, want ...string) {
		t.Helper()
		if got := rec.ManifestReads(); !slices.Equal(got, want) {
			t.Errorf("%s read manifests %v, want %v", what, got, want)
		}
	}
	if got := names(t, filepath.Join(mnt, "latest")); !slices.Equal(got, []string{"task=pick", "task=place", "task=stack"}) {
		t.Fatalf("latest lists %q", got)
	}
	reads("ls latest")
	if got := names(t, filepath.Join(mnt, "latest", "task=stack")); len(got) != perTask || got[0] != "ep-002" {
		t.Errorf("task=stack lists %d names: %q", len(got), got)
	}
	reads("ls latest/task=stack", manifestOf["stack"])
	data, err := os.ReadFile(filepath.Join(mnt, "latest", "task=place", "ep-004", "000001.jpg"))
	if err != nil || len(data) == 0 {
		t.Fatalf("a frame of ep-004: %d bytes, %v", len(data), err)
	}
	reads("reading a frame of an episode of task=place", manifestOf["place"])
}
