package table

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	fastjson "github.com/goccy/go-json"

	"github.com/framefs/framefs/cache"
	"github.com/framefs/framefs/table/manifest"
)

// TestManifestCacheBounded: the cache keeps the most recently used
// manifests within its byte bound, always the one just added if it fits.
func TestManifestCacheBounded(t *testing.T) {
	entry := loadedBytes(&loadedManifest{data: make([]byte, 300)}) + cache.EntryOverhead
	c := newManifestCache(3*entry + 10)
	for i := range 50 {
		c.add(fmt.Sprintf("m%d", i), &loadedManifest{data: make([]byte, 300)})
		if b := c.manifests.Bytes(); b > 3*entry+10 {
			t.Fatalf("after %d adds: %d bytes kept, bound %d", i+1, b, 3*entry+10)
		}
		// m0 is used after every add: it stays while others go.
		if i > 0 && c.get("m0") == nil {
			t.Fatalf("after %d adds: the most recently used manifest was evicted", i+1)
		}
		if c.get(fmt.Sprintf("m%d", i)) == nil {
			t.Fatalf("the manifest just added (m%d) was not kept", i)
		}
	}
	if n := c.len(); n != 3 {
		t.Errorf("%d manifests kept, want 3 of %d bytes under %d", n, entry, 3*entry+10)
	}
	if c.get("m49") == nil || c.get("m1") != nil {
		t.Error("want the newest and the recently used kept, the old ones gone")
	}
	c.add("big", &loadedManifest{data: make([]byte, 5000)})
	if c.get("big") != nil || c.len() != 3 {
		t.Errorf("a manifest larger than the bound: kept %v, %d entries; want it dropped, the others kept", c.get("big") != nil, c.len())
	}
}

// TestManifestListsBounded: the cache keeps at most maxManifestLists
// manifest lists, the most recently used, and lists never evict
// manifests (a mount following commits reads a new list per head).
func TestManifestListsBounded(t *testing.T) {
	c := newManifestCache(16 << 20)
	kept := &loadedManifest{data: make([]byte, 300)}
	c.add("manifest/m.parquet", kept)
	list := func(i int) string { return fmt.Sprintf("%s%05d.parquet", prefixManifestList, i) }
	newList := func() *loadedManifest { return &loadedManifest{list: make([]manifest.Summary, 100)} }
	for i := range 3 * maxManifestLists {
		c.add(list(i), newList())
		if c.get(list(0)) == nil {
			t.Fatalf("after %d lists: the most recently used list was evicted", i+1)
		}
	}
	if n := c.lists.Len(); n != maxManifestLists {
		t.Errorf("%d lists kept, want %d", n, maxManifestLists)
	}
	if c.get(list(3*maxManifestLists-1)) == nil || c.get(list(1)) != nil {
		t.Error("want the newest and the recently used lists kept, the old ones gone")
	}
	if c.get("manifest/m.parquet") == nil {
		t.Error("adding lists evicted a manifest")
	}
	// The table's metadata bytes count the manifest and every list kept.
	if want := loadedBytes(kept) + maxManifestLists*loadedBytes(newList()) + (maxManifestLists+1)*cache.EntryOverhead; c.bytes() != want || c.len() != maxManifestLists+1 {
		t.Errorf("bytes %d, len %d; want %d, %d", c.bytes(), c.len(), want, maxManifestLists+1)
	}
}

// TestManifestBytesMatchesMemory: what the cache charges a decoded
// version-1 manifest or a manifest list is within a quarter of the heap
// memory its decoded form takes (about 3 times a version-1 manifest's
// JSON, 20 times a manifest list's Parquet: charging what was read let
// the cache hold that much more than its bound).
func TestManifestBytesMatchesMemory(t *testing.T) {
	m := &Manifest{FormatVersion: 1}
	for i := range 50 {
		m.Episodes = append(m.Episodes, EpisodeEntry{
			Episode: fmt.Sprintf("episode-%05d", i), Partition: map[string]string{"task": "pick"},
			Rows: 30, FirstRowID: int64(30 * i), DataFile: fmt.Sprintf("data/%08d-0d87-491a-b7e4-fd4b69a1fcc9.parquet", i), SchemaID: 1,
			Videos: map[string]VideoRef{"video": {Pack: fmt.Sprintf("video/%08d-a552-4710-8939-4490c9ed74c4.video", i), Length: 27431,
				SHA256: "35ac825814d335627fe72c7e333d5600b8aa916f526d25d6ae0ed1e29f6dffce", IndexOffset: 27431, IndexLength: 296, Frames: 90,
				Codec: "h264", Width: 160, Height: 120, SourceName: "h264_faststart.mp4",
				Sizes: []SizesRef{{Identity: "jpeg;q=90;size=native;framefs-image=2;lavc59.37.100,lavfi8.44.100,sws6.7.100,zlib1.2.13,libjpeg-turbo:05aa814a",
					Object: fmt.Sprintf("video/%08d-a552-4710-8939-4490c9ed74c4.video", i), Offset: 27727, Length: 189}}}},
			Time:  time.Date(2026, 12, 2, 18, 26, 47, 0, time.UTC),
			Stats: map[string]ColumnStats{"state": {}, "t": {Min: json.RawMessage("0"), Max: json.RawMessage("29")}},
		})
	}
	t.Run("version 1 manifest", func(t *testing.T) {
		data := marshalCompact(m)
		chargedMatchesHeap(t, len(data), func() *loadedManifest {
			var jm Manifest
			if err := fastjson.Unmarshal(data, &jm); err != nil {
				t.Fatal(err)
			}
			return &loadedManifest{entries: jm.Episodes, json: int64(len(data))}
		})
	})
	t.Run("manifest list", func(t *testing.T) {
		layout := manifest.Layout{Partitions: []manifest.Column{{Name: "task", Type: "string"}},
			Columns: []manifest.Column{{Name: "t", Type: "int64"}, {Name: "label", Type: "string"}}, Videos: []string{"video"}}
		var sums []manifest.Summary
		for i := range 40 {
			es := slices.Clone(m.Episodes)
			for k := range es {
				es[k].Episode = fmt.Sprintf("episode-%03d-%05d", i, k)
				es[k].Stats = map[string]ColumnStats{"t": {Min: json.RawMessage("0"), Max: json.RawMessage("29")},
					"label": {Min: json.RawMessage(`"a fairly long label"`), Max: json.RawMessage(`"the longest label"`)}}
			}
			_, sum, err := manifest.Encode(layout, es)
			if err != nil {
				t.Fatal(err)
			}
			sum.Manifest = fmt.Sprintf("manifest/%08d-a552-4710-8939-4490c9ed74c4.parquet", i)
			sums = append(sums, sum)
		}
		data, err := manifest.EncodeList(layout, sums)
		if err != nil {
			t.Fatal(err)
		}
		chargedMatchesHeap(t, len(data), func() *loadedManifest {
			list, err := manifest.DecodeList(data)
			if err != nil {
				t.Fatal(err)
			}
			return &loadedManifest{list: list}
		})
	})
}

// chargedMatchesHeap checks that what the cache charges what load returns
// is within a quarter of the heap memory it keeps.
func chargedMatchesHeap(t *testing.T, stored int, load func() *loadedManifest) {
	t.Helper()
	// The heap's growth is measured five times and the median taken:
	// goroutines that earlier tests left (caches, closers) may allocate or
	// free meanwhile.
	const copies = 100
	load() // warm what the decoder keeps for reuse
	measure := func() float64 {
		keep := make([]*loadedManifest, copies)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range keep {
			keep[i] = load()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		return (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / copies
	}
	var heaps []float64
	for range 5 {
		heaps = append(heaps, measure())
	}
	slices.Sort(heaps)
	heap := heaps[2]
	charged := float64(loadedBytes(load()))
	t.Logf("%d bytes stored, %.0f bytes decoded (measured %.0f), %.0f charged", stored, heap, heaps, charged)
	if charged < 0.75*heap || charged > 1.25*heap {
		t.Errorf("charged %.0f bytes, the decoded form takes %.0f (measured %.0f)", charged, heap, heaps)
	}
}

// TestSnapshotCacheBounded: a table keeps the snapshots it read within a
// byte bound however many it read (a mount following commits reads every
// one), charging each its manifest keys and changed episodes.
func TestSnapshotCacheBounded(t *testing.T) {
	tbl := newTable(t)
	for id := int64(1); id <= 5000; id++ {
		s := &Snapshot{FormatVersion: FormatVersion, ID: id, Changed: []string{fmt.Sprintf("episode-%05d", id)}}
		for m := range 32 {
			s.Manifests = append(s.Manifests, fmt.Sprintf("manifest/%08d-%02d-4710-8939-4490c9ed74c4.json", id, m))
		}
		tbl.keepSnapshot(s)
		if b := tbl.snapshots.Bytes(); b > tbl.snapshots.MaxBytes() {
			t.Fatalf("after %d snapshots: %d bytes kept, bound %d", id, b, tbl.snapshots.MaxBytes())
		}
	}
	if n := tbl.snapshots.Len(); n >= 5000 || n < 1000 {
		t.Errorf("%d of 5000 snapshots of about 2.5 KB kept under %d bytes", n, tbl.snapshots.MaxBytes())
	}
	if _, ok := tbl.snapshots.Get(1); ok {
		t.Error("the oldest snapshot is still kept")
	}
	if _, ok := tbl.snapshots.Get(5000); !ok {
		t.Error("the newest snapshot is not kept")
	}
}
