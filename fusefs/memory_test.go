package fusefs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/mounttree"
)

// statsValue reads one counter of the mount's .stats.
func statsValue(t *testing.T, f *fixture, name string) int64 {
	t.Helper()
	values, err := readStats(f.path(statsName))
	if err != nil {
		t.Fatal(err)
	}
	v, ok := values[name]
	if !ok {
		t.Fatalf(".stats has no %s", name)
	}
	if v != float64(int64(v)) {
		t.Fatalf("%s: %v is not a count", name, v)
	}
	return int64(v)
}

// nodesHeld is the number of snapshot files and folders the daemon has a
// node for: made and not yet forgotten.
func nodesHeld(t *testing.T, f *fixture) int64 {
	t.Helper()
	return statsValue(t, f, "framefs_nodes_made_total") - statsValue(t, f, "framefs_nodes_forgotten_total")
}

// readStats reads the values of a .stats file by series name (labels
// included, as .stats writes them).
func readStats(path string) (map[string]float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	values := map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			values[name] = n
		}
	}
	return values, nil
}

// dropKernelCaches asks the kernel to evict unused dentries and inodes, as
// memory pressure does; FUSE then sends FORGET for the inodes it dropped.
func dropKernelCaches(t *testing.T) {
	t.Helper()
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
		testenv.Missing(t, testenv.Root, fmt.Sprintf("cannot drop the kernel's caches (needed to test FORGET; root only): %v", err))
	}
}

// TestNodesReleasedOnForget checks that the nodes of a snapshot's frames
// and folders are released when the kernel forgets them, and that their
// files look the same when looked up again.
func TestNodesReleasedOnForget(t *testing.T) {
	f := newFixture(t, Options{ReadOnly: true})
	eps := []string{f.path("robot", "snapshots", "1", "task=pick", "ep1"), f.path("robot", "snapshots", "1", "task=place", "ep2")}
	sizes := map[string]int64{}
	for _, ep := range eps {
		for _, name := range names(t, ep) {
			st, err := os.Stat(filepath.Join(ep, name))
			if err != nil {
				t.Fatal(err)
			}
			sizes[filepath.Join(ep, name)] = st.Size()
		}
	}
	// 40 + 30 frames and 2 x 2 rows files, 2 episode and 2 partition folders.
	const nodes = 78
	before := statsValue(t, f, "framefs_nodes_forgotten_total")
	dropKernelCaches(t)
	waitFor(t, func() bool { return statsValue(t, f, "framefs_nodes_forgotten_total")-before >= nodes },
		"the kernel to forget the snapshot's nodes")
	for path, size := range sizes {
		st, err := os.Stat(path)
		if err != nil || st.Size() != size {
			t.Fatalf("%s after FORGET: size %v, %v; want %d", path, st, err, size)
		}
	}
	data, err := os.ReadFile(filepath.Join(eps[0], "000007.jpg"))
	if err != nil || int64(len(data)) != sizes[filepath.Join(eps[0], "000007.jpg")] {
		t.Fatalf("read after FORGET: %d bytes, %v", len(data), err)
	}
}

// TestEpisodeFilesSharedAcrossSnapshots: a frame of an episode a commit
// did not change is the same file in the snapshots before and after it
// (one inode, one copy in the page cache), while a frame of a changed
// episode is a new one.
func TestEpisodeFilesSharedAcrossSnapshots(t *testing.T) {
	f := newFixture(t, Options{ReadOnly: true})
	ctx := context.Background()
	frame := func(snap, ep string) string {
		task := map[string]string{"ep1": "task=pick", "ep2": "task=place"}[ep]
		return f.path("robot", "snapshots", snap, task, ep, "000005.jpg")
	}
	data, err := os.ReadFile(frame("1", "ep1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(frame("1", "ep2")); err != nil {
		t.Fatal(err)
	}
	// Snapshot 2 changes ep2's rows and leaves ep1 alone.
	if _, err := f.tbl.UpdateRows(ctx, "ep2", sidecar(t, "ep2", "place", 30)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := os.Stat(f.path("robot", "snapshots", "2")); return err == nil }, "snapshot 2")
	inode := func(p string) uint64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	if inode(frame("1", "ep1")) != inode(frame("2", "ep1")) {
		t.Error("an unchanged episode's frame has another inode in the next snapshot")
	}
	if inode(frame("1", "ep2")) == inode(frame("2", "ep2")) {
		t.Error("a frame of an episode whose rows changed kept its inode")
	}
	before := statsValue(t, f, "framefs_bytes_served_total")
	again, err := os.ReadFile(frame("2", "ep1"))
	if err != nil || !bytes.Equal(again, data) {
		t.Fatalf("the frame through snapshot 2: %v", err)
	}
	if after := statsValue(t, f, "framefs_bytes_served_total"); after != before {
		t.Errorf("%d bytes served again for a frame the page cache held", after-before)
	}
}

// TestFormerHeadForgotten: some time after latest moved on, the kernel
// drops the former head's folder, and the daemon its nodes, while the
// frames readers of latest reached through the new head keep their inode
// and page cache.
func TestFormerHeadForgotten(t *testing.T) {
	f := newFixture(t, Options{ReadOnly: true, formerHeadLinger: 300 * time.Millisecond})
	ctx := context.Background()
	ep1 := f.path("robot", "latest", "task=pick", "ep1")
	read := func(name string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(ep1, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	data := read("000005.jpg")
	if _, err := os.ReadFile(f.path("robot", "latest", "task=place", "ep2", "000003.jpg")); err != nil {
		t.Fatal(err)
	}
	before := statsValue(t, f, "framefs_nodes_forgotten_total")
	if _, err := f.tbl.UpdateRows(ctx, "ep2", sidecar(t, "ep2", "place", 30)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { target, _ := os.Readlink(f.path("robot", "latest")); return target == "snapshots/2" }, "latest to move")
	// The reader goes on through latest: ep1's frame is the same file.
	served := statsValue(t, f, "framefs_bytes_served_total")
	if !bytes.Equal(read("000005.jpg"), data) {
		t.Fatal("frame changed")
	}
	// Snapshot 1's folders (two partitions, two episodes) and ep2's
	// frame, reached through it only, are forgotten.
	waitFor(t, func() bool { return statsValue(t, f, "framefs_nodes_forgotten_total")-before >= 5 },
		"the kernel to forget the former head's nodes")
	if !bytes.Equal(read("000005.jpg"), data) {
		t.Fatal("frame changed")
	}
	if after := statsValue(t, f, "framefs_bytes_served_total"); after != served {
		t.Errorf("%d bytes served again for a frame the new head shares with the former one", after-served)
	}
	// The former head is still there for whoever asks.
	if _, err := os.Stat(f.path("robot", "snapshots", "1", "task=pick", "ep1", "000005.jpg")); err != nil {
		t.Fatal(err)
	}
}

// TestFormerHeadsBounded: a reader of latest in a table that commits
// faster than the former heads linger has the daemon hold the folders of
// the head it walks and the file it reads, which keeps its inode and page
// cache from head to head, and of the former heads only the snapshot
// folders of the newest maxFormerHeads: a former head's folders are
// dropped once the file in them was reached through the new head.
func TestFormerHeadsBounded(t *testing.T) {
	f := newFixture(t, Options{ReadOnly: true, formerHeadLinger: time.Hour})
	ctx := context.Background()
	frame := f.path("robot", "latest", "task=pick", "ep1", "000005.jpg")
	want, err := os.ReadFile(frame)
	if err != nil {
		t.Fatal(err)
	}
	held := func() int64 { return nodesHeld(t, f) }
	// The snapshot's folder, the partition, the episode and the frame.
	if got := held(); got != 4 {
		t.Fatalf("%d nodes held after reading a frame through latest, want 4", got)
	}
	served := statsValue(t, f, "framefs_bytes_served_total")
	const commits = maxFormerHeads + 2
	for id := 2; id <= commits+1; id++ {
		if _, err := f.tbl.UpdateRows(ctx, "ep2", sidecar(t, "ep2", "place", 30)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			target, _ := os.Readlink(f.path("robot", "latest"))
			return target == "snapshots/"+strconv.Itoa(id)
		}, "latest to move")
		if got, err := os.ReadFile(frame); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("through snapshot %d: %v", id, err)
		}
		formers := int64(min(id-1, maxFormerHeads))
		waitFor(t, func() bool { return held() == 4+formers },
			fmt.Sprintf("the daemon to hold the head's 4 nodes and %d former snapshot folders (%d after snapshot %d)", formers, held(), id))
	}
	if got := statsValue(t, f, "framefs_bytes_served_total"); got != served {
		t.Errorf("%d bytes served again for a frame every head shares: it lost its page cache", got-served)
	}
	if got, err := os.ReadFile(f.path("robot", "snapshots", "1", "task=pick", "ep1", "000005.jpg")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("snapshot 1 after its folder was dropped: %v", err)
	}
}

// TestTravelledSnapshotsForgotten: a reader going through more snapshots
// than the catalog keeps trees of does not make the daemon hold all their
// folders: the kernel is asked to drop the folder of a snapshot whose tree
// was dropped, and the snapshot can still be read afterwards.
func TestTravelledSnapshotsForgotten(t *testing.T) {
	// The former-head release is kept out of the way: only the tree
	// cache's drops may make the kernel forget here.
	f := newFixture(t, Options{ReadOnly: true, formerHeadLinger: time.Hour})
	ctx := context.Background()
	const snapshots = mounttree.MaxTrees + 6
	for range snapshots - 1 {
		if _, err := f.tbl.UpdateRows(ctx, "ep2", sidecar(t, "ep2", "place", 30)); err != nil {
			t.Fatal(err)
		}
	}
	frame := func(id int) string {
		return f.path("robot", "snapshots", strconv.Itoa(id), "task=place", "ep2", "000003.jpg")
	}
	want, err := os.ReadFile(frame(1))
	if err != nil {
		t.Fatal(err)
	}
	before := statsValue(t, f, "framefs_nodes_forgotten_total")
	for id := 2; id <= snapshots; id++ {
		if got, err := os.ReadFile(frame(id)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("snapshot %d: %v", id, err)
		}
	}
	// Six trees were dropped, each with a snapshot folder, a partition
	// folder and an episode folder the kernel held (the frame is one
	// inode, shared by every snapshot).
	dropped := snapshots - mounttree.MaxTrees
	waitFor(t, func() bool { return statsValue(t, f, "framefs_nodes_forgotten_total")-before >= int64(3*dropped) },
		"the kernel to forget the folders of the snapshots whose trees were dropped")
	if got, err := os.ReadFile(frame(1)); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("snapshot 1 after its folder was dropped: %v", err)
	}
}
