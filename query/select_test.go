package query

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/table/storage/storagetest"
)

// TestSummariesDecideManifests: a filter that the manifest list's
// summaries decide reads no manifest for a count, and only the manifests
// it cannot decide otherwise.
func TestSummariesDecideManifests(t *testing.T) {
	ctx := context.Background()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := table.Create(ctx, local, table.Schema{
		PartitionColumns: []string{"task"},
		Columns:          []table.Column{{Name: "task", Type: "string"}, {Name: "speed", Type: "float64"}},
	}, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Commit 1: pick at speeds 0-9; commit 2: place at 50-59. One
	// manifest each.
	for c, task := range []string{"pick", "place"} {
		var inputs []table.EpisodeInput
		for e := range 5 {
			ep := fmt.Sprintf("%s%d", task, e)
			var b strings.Builder
			for r := range 4 {
				fmt.Fprintf(&b, `{"task":%q,"speed":%d}`+"\n", task, c*50+e*2+r%2)
			}
			sc, err := table.ParseSidecar(ep+".jsonl", []byte(b.String()))
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, table.EpisodeInput{Episode: ep, Sidecar: sc, Videos: map[string]table.VideoFile{"": {Path: fixture("h264_vfr.mp4")}}})
		}
		if _, err := tbl.AddEpisodes(ctx, inputs, table.AddOptions{NoSizes: true}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &storagetest.CountingStore{Store: local}
	for _, tc := range []struct {
		where          string
		frames         int64
		manifestsRead  int
		skipped, whole int
		scanned, reads int
	}{
		{where: "task = 'pick'", frames: 20, whole: 5, skipped: 5},
		{where: "speed > 40", frames: 20, whole: 5, skipped: 5},
		{where: "speed >= 57", frames: 6, manifestsRead: 1, reads: 1, skipped: 8, whole: 1, scanned: 1},
		{where: "episode_id = 'place3'", frames: 4, manifestsRead: 1, reads: 1, skipped: 9, whole: 1},
		{where: "speed < 0", frames: 0, skipped: 10},
	} {
		fresh, err := table.Open(ctx, rec, table.Options{})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := fresh.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f, err := CompileFilter(ctx, fresh, snap, tc.where)
		if err != nil {
			t.Fatal(err)
		}
		rec.ManifestReads()
		n, st, err := Count(ctx, fresh, snap, f)
		if err != nil {
			t.Fatal(err)
		}
		reads := len(rec.ManifestReads())
		if n != tc.frames || st.Manifests != 2 || st.ManifestsRead != tc.manifestsRead || reads != tc.reads ||
			st.SkippedByManifest != tc.skipped || st.MatchedByManifest != tc.whole || st.Scanned != tc.scanned || st.Episodes != 10 {
			t.Errorf("count %s: %d frames, %d manifests read, stats %+v", tc.where, n, reads, st)
		}
		// Select gives the same frames, its episodes in snapshot order.
		sel, err := Select(ctx, fresh, snap, f, SelectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var frames int64
		prev := ""
		for _, e := range sel.Episodes {
			key := e.Entry.Partition["task"] + "/" + e.Entry.Episode
			if key < prev {
				t.Errorf("%s: %s after %s", tc.where, key, prev)
			}
			prev = key
			frames += e.Frames
		}
		if frames != tc.frames || sel.Frames != tc.frames || sel.Matched != len(sel.Episodes) {
			t.Errorf("select %s: %d frames in %d episodes (%+v)", tc.where, frames, len(sel.Episodes), sel)
		}
	}
}
