package fusefs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// statsValue reads one counter of the mount's .stats.
func statsValue(t *testing.T, f *fixture, name string) int64 {
	t.Helper()
	data, err := os.ReadFile(f.path(statsName))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", name, line)
			}
			return n
		}
	}
	t.Fatalf(".stats has no %s", name)
	return 0
}

// dropKernelCaches asks the kernel to evict unused dentries and inodes, as
// memory pressure does; FUSE then sends FORGET for the inodes it dropped.
func dropKernelCaches(t *testing.T) {
	t.Helper()
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
		if os.Getenv("FRAMEFS_REQUIRE_FUSE") == "1" {
			t.Fatalf("cannot drop the kernel's caches (needed to test FORGET): %v", err)
		}
		t.Skipf("cannot drop the kernel's caches: %v", err)
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
