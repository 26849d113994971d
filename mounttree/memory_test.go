package mounttree

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/treetest"
	"github.com/framefs/framefs/table"
)

// TestBytesPerHeadEpisode: what a catalog keeps for each episode of a
// table's head, with the trees of MaxTrees snapshots holding it read (a
// mount following commits keeps the trees of its recent heads), is at
// most BytesPerHeadEpisode, itself within 2 KB. The snapshots are made of
// real manifest entries (a stored video with its frame sizes) copied as
// the table hands them out, each snapshot changing one episode; the
// table's own caches (decoded manifests, snapshots) are bounded apart and
// hold the entries before the measure.
func TestBytesPerHeadEpisode(t *testing.T) {
	if BytesPerHeadEpisode > 2<<10 {
		t.Fatalf("BytesPerHeadEpisode is %d, over 2 KB", BytesPerHeadEpisode)
	}
	tbl := treetest.RobotTable(t)
	template := headEpisode(t, tbl, "ep1")
	ref := template.Videos["video"]
	ref.Sizes = []table.SizesRef{{Identity: "jpeg;q=90;size=native;framefs-image=2;lavc59.37.100,lavfi8.44.100,sws6.7.100,zlib1.2.13,libjpeg-turbo:05aa814a",
		Object: ref.Pack, Offset: ref.IndexOffset + ref.IndexLength, Length: 189}}
	// entry makes version v of episode i, in memory of its own as a
	// decoded manifest's.
	entry := func(i, v int) table.EpisodeEntry {
		e := template
		e.Episode = fmt.Sprintf("episode-%05d", i)
		e.Partition = map[string]string{"task": []string{"pick", "place"}[i%2]}
		e.DataFile = strings.Replace(template.DataFile, "data/", fmt.Sprintf("data/%05d-%d", i, v), 1)
		r := ref
		r.Pack, r.SHA256 = strings.Replace(ref.Pack, "video/", fmt.Sprintf("video/%05d", i), 1), strings.Clone(ref.SHA256)
		r.Sizes = []table.SizesRef{{Identity: strings.Clone(ref.Sizes[0].Identity), Object: r.Pack, Offset: ref.Sizes[0].Offset, Length: 189}}
		e.Videos = map[string]table.VideoRef{"video": r}
		e.Stats = map[string]table.ColumnStats{"t": {Min: []byte("0"), Max: []byte("29")}}
		return e
	}
	const episodes = 1000
	latest := make([]table.EpisodeEntry, episodes)
	for i := range latest {
		latest[i] = entry(i, 0)
	}
	var snapshots [][]table.EpisodeEntry
	for s := range MaxTrees {
		if s > 0 {
			latest[s] = entry(s, s) // a commit changed episode s
		}
		snapshots = append(snapshots, append([]table.EpisodeEntry(nil), latest...))
	}

	var records episodeRecords
	before := heapBytes()
	// What a tree keeps of a folder of its snapshot, read whole: the
	// records of its episodes.
	var indexes [][]*episode
	for _, eps := range snapshots {
		indexes = append(indexes, records.appendRecords(nil, eps, &dedupe{}))
	}
	per := (heapBytes() - before) / episodes
	t.Logf("%d bytes per head episode with %d trees read (%d records kept)", per, len(indexes), records.len())
	if per > BytesPerHeadEpisode {
		t.Errorf("the catalog keeps %d bytes per head episode, more than BytesPerHeadEpisode (%d)", per, BytesPerHeadEpisode)
	}
	if n := records.len(); n != episodes {
		t.Errorf("%d episode records for %d episodes: the trees do not share them", n, episodes)
	}
	runtime.KeepAlive(snapshots)
	runtime.KeepAlive(indexes)
}

// heapBytes is the heap's live bytes after a collection.
func heapBytes() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // and the cleanups the first one queued
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestRecordsForgetCollected: the names of records no tree holds any more
// leave the records' map, so that it does not grow with every episode a
// long-running mount ever showed.
func TestRecordsForgetCollected(t *testing.T) {
	var records episodeRecords
	const made = 20 * minSweep
	for i := range made {
		e := table.EpisodeEntry{Episode: fmt.Sprintf("episode-%06d", i), DataFile: "data/d.parquet", Rows: 3}
		records.record(&e, nil) // held by nothing
		if i%500 == 0 {
			runtime.GC()
		}
	}
	if n := len(records.last); n > 3*minSweep {
		t.Errorf("%d names kept for %d records no tree holds", n, made)
	}
	if n := records.len(); n > minSweep {
		t.Errorf("%d of %d records not collected", n, made)
	}
}

// TestRecordTimes: a record keeps its version's commit time to the
// nanosecond, and none for an entry without one or with one outside what
// it can hold (its files then show their snapshot's time).
func TestRecordTimes(t *testing.T) {
	committed := time.Date(2026, 12, 2, 18, 26, 47, 123456789, time.UTC)
	for _, tc := range []struct {
		time time.Time
		want bool
	}{{committed, true}, {time.Time{}, false}, {time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), false}} {
		e := table.EpisodeEntry{Episode: "ep", DataFile: "data/d.parquet", Rows: 3, Time: tc.time}
		ep := newEpisode(&e, nil)
		got, ok := ep.commitTime()
		if ok != tc.want || ok && !got.Equal(tc.time) || !ep.is(&e) {
			t.Errorf("commit time %v: record says %v (%v), is %v", tc.time, got, ok, ep.is(&e))
		}
	}
}
