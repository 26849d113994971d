package fusefs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/gcpace"
	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/table"
)

// bytesPerFollowedEpisode bounds what the mount keeps, outside its
// caches, for each episode of the head that a reader of latest lists and
// reads a frame of: the catalog's record of the episode (mounttree's
// BytesPerHeadEpisode), and the nodes of the entries the kernel then holds
// (nodesPerFollowedEpisode) with go-fuse's bookkeeping of them.
// Measured over 1,200 episodes added in two steps of 600: 1.93-2.04 KB
// in 6 runs (1.70-1.84 KB over the first step, 2.1-2.3 KB over the
// second in every run; the span of both evens that out).
// Before the test reserved the runtime's goroutine records
// (reserveGoroutineRecords), one step of 600 read anything from 1.5 to
// 3.1 KB. Earlier figures: 2.1-2.5 KB (one step) while go-fuse kept a map
// of the frame's other parents; 3.0 KB while the former head's folders
// stayed for their linger, which nodesPerFollowedEpisode catches too.
// make test runs it without the race detector (`make memory`): with it,
// the test took minutes.
const bytesPerFollowedEpisode = 5 << 9 // 2.5 KB

// nodesPerFollowedEpisode is what the mount holds for each such episode:
// the episode's folder in the head and the frame, one inode from head to
// head. The former head's folder goes once the frame was reached through
// the new head (see formerhead.go); while it lingered, the mount held 3.
const nodesPerFollowedEpisode = 2

// TestBytesPerFollowedEpisode: a reader that lists every episode folder of
// latest and reads one frame of each, walking the head again after each
// commit, as a job following a growing table does, has the mount keep at
// most bytesPerFollowedEpisode (less what its image and metadata caches
// hold, bounded apart) and nodesPerFollowedEpisode more for each episode
// added to the head. Measured as the difference between two heads of
// different sizes, walked the same way, so that what does not grow with
// the episodes (the code's first allocations) cancels out.
func TestBytesPerFollowedEpisode(t *testing.T) {
	f := newFixture(t, Options{ReadOnly: true})
	reserveGoroutineRecords(4096)
	ctx := context.Background()
	const added, rows = 600, 10
	latest := f.path("robot", "latest")
	frame := mounttree.FrameName(3, rows, "jpg")
	// walk lists every episode folder of latest and reads a frame of
	// each; it returns the frames read (of ep1 and ep2 too).
	walk := func() int {
		t.Helper()
		read := 0
		for _, task := range []string{"task=pick", "task=place"} {
			eps, err := os.ReadDir(filepath.Join(latest, task))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range eps {
				dir := filepath.Join(latest, task, e.Name())
				if _, err := os.ReadDir(dir); err != nil {
					t.Fatal(err)
				}
				if _, err := os.ReadFile(filepath.Join(dir, frame)); err != nil {
					t.Fatal(err)
				}
				read++
			}
		}
		return read
	}
	// grow adds episodes to the head, and has the reader walk it, and
	// walk it again after a commit that moved the head; it returns what
	// the mount then holds: its bytes less the caches, and its nodes.
	episodes := 0
	grow := func() (int64, int64) {
		t.Helper()
		inputs := make([]table.EpisodeInput, added)
		for i := range inputs {
			inputs[i] = table.EpisodeInput{
				Videos:  map[string]table.VideoFile{"": {Path: video("h264_faststart.mp4"), FirstFrame: int64(i % 80)}},
				Sidecar: sidecar(t, fmt.Sprintf("f-%05d", episodes+i), []string{"pick", "place"}[i%2], rows),
			}
		}
		if _, err := f.tbl.AddEpisodes(ctx, inputs, table.AddOptions{}); err != nil {
			t.Fatal(err)
		}
		episodes += added
		for range 2 {
			ids, err := f.tbl.SnapshotIDs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := "snapshots/" + strconv.FormatInt(ids[len(ids)-1], 10)
			waitFor(t, func() bool { target, _ := os.Readlink(latest); return target == want }, "latest to move")
			if read := walk(); read != episodes+2 {
				t.Fatalf("read %d frames of %d episodes", read, episodes)
			}
			if _, err := f.tbl.UpdateRows(ctx, "ep2", sidecar(t, "ep2", "place", 30)); err != nil {
				t.Fatal(err)
			}
		}
		return f.settledMemory(t)
	}
	small, smallNodes := grow()
	grow()
	large, largeNodes := grow()
	span := int64(2 * added)
	per, nodes := (large-small)/span, float64(largeNodes-smallNodes)/float64(span)
	t.Logf("%d bytes and %.2f nodes per followed episode; %d nodes for %d episodes", per, nodes, largeNodes, episodes)
	if per <= 0 {
		t.Fatalf("%d bytes less the caches with %d episodes, %d with %d: the measure is wrong", large, episodes, small, episodes-int(span))
	}
	if largeNodes-smallNodes > nodesPerFollowedEpisode*span {
		t.Errorf("the mount holds %.2f nodes per followed episode of the head, more than %d", nodes, nodesPerFollowedEpisode)
	}
	if per > bytesPerFollowedEpisode {
		t.Errorf("the mount keeps %d bytes per followed episode of the head, more than %d", per, bytesPerFollowedEpisode)
	}
}

// reserveGoroutineRecords has the runtime make records for n goroutines
// at once. It keeps the record of every goroutine that ever ran, for the
// next one to take, and never frees it: a heap reading holds as many as
// goroutines ever ran at the same time, and how many of the mount's
// ran at once (one per request, one per entry left under a former head)
// is up to the scheduler. A few hundred KB between two runs, the whole of
// the noise this test's readings had; with enough records made first,
// the mount makes none.
func reserveGoroutineRecords(n int) {
	var started, release sync.WaitGroup
	release.Add(1)
	for range n {
		started.Add(1)
		go func() {
			started.Done()
			release.Wait()
		}()
	}
	started.Wait()
	release.Done()
}

// settledMemory returns the live bytes of the Go heap less what the image
// cache and the metadata caches hold (the picture cache holds FFmpeg's
// memory, not the Go heap's), and the nodes the mount holds, once the
// mount is idle: the work a walk leaves behind (read-ahead jobs that wait
// a moment for more frames, the rows files' sizes worked out in the
// background for each folder listed, nodes the kernel forgets) changes
// the caches, the nodes held and the heap. Readings go on until two in a
// row agree on the caches and the nodes; the heap is the least of a few
// readings then. Each reads the heap the last collection found live, not
// HeapAlloc: the mount's refresh reads the table's snapshot list every
// 100 ms, and its garbage since the collection moved HeapAlloc by up to a
// megabyte.
func (f *fixture) settledMemory(t *testing.T) (heapLessCaches, nodes int64) {
	t.Helper()
	type reading struct{ heap, image, meta, nodes int64 }
	read := func() reading {
		// Twice: what sync.Pools hold outlives one collection.
		runtime.GC()
		runtime.GC()
		m, ok := gcpace.ReadMemory()
		if !ok {
			t.Fatal("the runtime has no memory metrics")
		}
		stats, err := readStats(f.path(statsName))
		if err != nil {
			t.Fatal(err)
		}
		parts := memoryPartsOf(stats)
		return reading{m.Live, f.frames.CacheStats().Bytes, parts.metadata, parts.nodes}
	}
	time.Sleep(300 * time.Millisecond)
	last := read()
	for range 30 {
		time.Sleep(200 * time.Millisecond)
		r := read()
		if r.image == last.image && r.meta == last.meta && r.nodes == last.nodes {
			least := min(r.heap, last.heap)
			for range 3 {
				least = min(least, read().heap)
			}
			return least - r.image - r.meta, r.nodes
		}
		last = r
	}
	t.Fatalf("the mount did not settle: %+v at the last reading", last)
	return 0, 0
}
