package table

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/framefs/framefs/videoidx"
)

// TestTimeTravel changes a table in every way an operation can and checks
// that each snapshot id and tag still reads its rows exactly as they were.
func TestTimeTravel(t *testing.T) {
	forEachStore(t, func(t *testing.T, k storeKind) { timeTravel(t, newTableAt(t, k.newURI(t))) })
}

func timeTravel(t *testing.T, tbl *Table) {
	ctx := context.Background()
	add := func(ep, video string, n int) *Snapshot {
		t.Helper()
		s, err := tbl.AddEpisodes(ctx, []EpisodeInput{{Videos: map[string]VideoFile{"": {Path: fixture(video)}}, Sidecar: sidecarFor(t, ep, n)}}, AddOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	type view map[string][]Row
	read := func(s *Snapshot) view {
		t.Helper()
		out := view{}
		eps, err := tbl.Episodes(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range eps {
			rows, err := tbl.Rows(ctx, s, e)
			if err != nil {
				t.Fatal(err)
			}
			out[e.Episode] = rows
		}
		return out
	}
	var snaps []*Snapshot
	var views []view
	record := func(s *Snapshot) {
		snaps = append(snaps, s)
		views = append(views, read(s))
	}
	record(add("a", "h264_faststart.mp4", 30))
	record(add("b", "hevc.mp4", 40))
	if _, err := tbl.CreateTag(ctx, "two", 2); err != nil {
		t.Fatal(err)
	}

	upd, err := ParseSidecar("a.jsonl", []byte(strings.Repeat(`{"timestamp": 9, "camera": "rear", "action": 7}`+"\n", 30)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tbl.UpdateRows(ctx, "a", upd)
	if err != nil {
		t.Fatal(err)
	}
	record(s)
	if got := views[2]["a"][5]; got["camera"] != "rear" || got["action"] != int64(7) || got[RowIDColumn] != views[0]["a"][5][RowIDColumn] {
		t.Fatalf("updated row %v (row ids must stay)", got)
	}
	s, err = tbl.ReplaceVideo(ctx, "b", "", VideoFile{Path: fixture("h264_gop250.mp4"), FirstFrame: 10}, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	record(s)
	if ref := views[3]["b"][0]["video"].(FrameRef); ref.Frame != 10 || ref.Pack == views[1]["b"][0]["video"].(FrameRef).Pack {
		t.Fatalf("replaced video ref %+v", ref)
	}
	s, err = tbl.DeleteEpisode(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	record(s)
	if _, ok := views[4]["a"]; ok {
		t.Fatal("deleted episode still listed")
	}

	for i, s := range snaps {
		again, err := tbl.Resolve(ctx, s.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := read(again); !reflect.DeepEqual(got, views[i]) {
			t.Errorf("snapshot %d reads differently now", s.ID)
		}
	}
	tagged, err := tbl.Resolve(ctx, 0, "two")
	if err != nil || !reflect.DeepEqual(read(tagged), views[1]) {
		t.Fatalf("tag two: %v", err)
	}

	// Expire keeps the head and the tagged snapshot; gc keeps what they need.
	dropped, err := tbl.Expire(ctx, ExpireOptions{KeepLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dropped, []int64{1, 3, 4}) {
		t.Fatalf("expired %v, want [1 3 4]", dropped)
	}
	if _, err := tbl.GC(ctx, GCOptions{Grace: -time.Hour}); err != nil {
		t.Fatal(err)
	}
	if problems, err := tbl.Verify(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	if got := read(tagged); !reflect.DeepEqual(got, views[1]) {
		t.Fatal("tagged snapshot changed after expire and gc")
	}
	if _, err := tbl.Resolve(ctx, 1, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired snapshot: %v", err)
	}
	if _, err := tbl.CreateTag(ctx, "two", 5); !errors.Is(err, ErrExists) {
		t.Fatalf("retagging: %v", err)
	}
	if err := tbl.DeleteTag(ctx, "two"); err != nil {
		t.Fatal(err)
	}
}

func TestOperationErrors(t *testing.T) {
	ctx := context.Background()
	tbl := newTable(t)
	if _, err := tbl.AddEpisodes(ctx, []EpisodeInput{{Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}, Sidecar: sidecarFor(t, "a", 70)}}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	long, _ := ParseSidecar("a.jsonl", []byte(strings.Repeat(`{"timestamp": 1, "camera": "x"}`+"\n", 91)))
	if _, err := tbl.UpdateRows(ctx, "a", long); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "91 rows") {
		t.Errorf("update with too many rows: %v", err)
	}
	if _, err := tbl.UpdateRows(ctx, "zz", long); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of a missing episode: %v", err)
	}
	if _, err := tbl.ReplaceVideo(ctx, "a", "", VideoFile{Path: fixture("hevc.mp4")}, AddOptions{}); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "70 rows") {
		t.Errorf("replace with a shorter video: %v", err)
	}
	if _, err := tbl.ReplaceVideo(ctx, "a", "nope", VideoFile{Path: fixture("hevc.mp4")}, AddOptions{}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("replace of a non-video column: %v", err)
	}
	if _, err := tbl.DeleteEpisode(ctx, "zz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete of a missing episode: %v", err)
	}
	if _, err := tbl.CreateTag(ctx, "bad/tag", 1); !errors.Is(err, ErrInvalidName) {
		t.Errorf("tag with a slash: %v", err)
	}
	if _, err := tbl.CreateTag(ctx, "t", 99); !errors.Is(err, ErrNotFound) {
		t.Errorf("tag of a missing snapshot: %v", err)
	}
	ids, _ := tbl.SnapshotIDs(ctx)
	if len(ids) != 1 {
		t.Fatalf("failed operations committed: %v", ids)
	}
}

// TestUnknownFormatVersion refuses tables written by a newer framefs.
func TestUnknownFormatVersion(t *testing.T) {
	ctx := context.Background()
	tbl := newTable(t)
	meta := tableMeta{FormatVersion: FormatVersion + 1, Features: []string{}}
	if _, err := tbl.store.Put(ctx, keyTableMeta, strings.NewReader(string(marshal(meta)))); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, tbl.store, Options{}); !errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(err.Error(), "upgrade framefs") {
		t.Fatalf("got %v", err)
	}
	meta = tableMeta{FormatVersion: FormatVersion, Features: []string{"deletion-vectors"}}
	tbl.store.Put(ctx, keyTableMeta, strings.NewReader(string(marshal(meta))))
	if _, err := Open(ctx, tbl.store, Options{}); !errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(err.Error(), "deletion-vectors") {
		t.Fatalf("got %v", err)
	}
}

func TestAllowNewColumns(t *testing.T) {
	ctx := context.Background()
	tbl := newTable(t)
	first, err := tbl.AddEpisodes(ctx, []EpisodeInput{{Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}, Sidecar: sidecarFor(t, "a", 5)}}, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := ParseSidecar("b.jsonl", []byte(strings.Repeat(`{"timestamp": 1, "camera": "x", "gripper": 0.5, "grasp": [1, 2.5], "ok": true}`+"\n", 5)))
	in := []EpisodeInput{{Episode: "b", Videos: map[string]VideoFile{"": {Path: fixture("hevc.mp4")}}, Sidecar: sc}}
	if _, err := tbl.AddEpisodes(ctx, in, AddOptions{}); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "--allow-new-columns") {
		t.Fatalf("unknown columns without the option: %v", err)
	}
	snap, err := tbl.AddEpisodes(ctx, in, AddOptions{AllowNewColumns: true})
	if err != nil {
		t.Fatal(err)
	}
	if snap.SchemaID != 2 {
		t.Fatalf("schema %d after evolution", snap.SchemaID)
	}
	s, _ := tbl.Schema(ctx, 2)
	want := map[string]Type{"gripper": "float64", "grasp": "list<float32>", "ok": "bool"}
	for name, typ := range want {
		if c, ok := s.Column(name); !ok || c.Type != typ || !c.Nullable {
			t.Errorf("column %s: %+v", name, c)
		}
	}
	b, _ := tbl.Episode(ctx, snap, "b")
	rows, err := tbl.Rows(ctx, snap, b)
	if err != nil || len(rows) != 5 || rows[0]["gripper"] != 0.5 || rows[0]["ok"] != true {
		t.Fatalf("new episode rows %v %v", rows, err)
	}
	a, _ := tbl.Episode(ctx, snap, "a")
	rows, err = tbl.Rows(ctx, snap, a)
	if err != nil || rows[0]["gripper"] != nil {
		t.Fatalf("old rows must read new columns as null: %v %v", rows[0], err)
	}
	if rows, err := tbl.Rows(ctx, first, a); err != nil || len(rows) != 5 {
		t.Fatalf("old snapshot: %v", err)
	}
}

// countingSizer stands in for the decoder: each frame's "size" is its
// sample size plus 100, which is enough to check where sizes are stored.
type countingSizer struct{ calls int }

func (s *countingSizer) Identity(img ImageOptions) string { return "test;" + img.Format }

func (s *countingSizer) FrameSizes(ctx context.Context, r io.ReaderAt, size int64, ix *videoidx.Index, img ImageOptions) ([]int64, error) {
	s.calls++
	out := make([]int64, ix.Frames())
	for i := range out {
		out[i] = int64(ix.Frame(i).Size) + 100
	}
	return out, nil
}

func TestWarm(t *testing.T) {
	ctx := context.Background()
	tbl := newTable(t)
	if _, err := tbl.AddEpisodes(ctx, []EpisodeInput{
		{Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}, Sidecar: sidecarFor(t, "a", 10)},
		{Videos: map[string]VideoFile{"": {Path: fixture("hevc.mp4")}}, Sidecar: sidecarFor(t, "b", 10)},
	}, AddOptions{NoSizes: true}); err != nil {
		t.Fatal(err)
	}
	sizer := &countingSizer{}
	tbl.opts.Sizer = sizer
	snap, n, err := tbl.Warm(ctx)
	if err != nil || n != 2 || snap.Kind != KindSizes {
		t.Fatalf("warm: %v, %d videos, snapshot %+v", err, n, snap)
	}
	e, _ := tbl.Episode(ctx, snap, "a")
	sizes, ok, err := tbl.StoredSizes(ctx, e.Videos["video"], "test;jpg")
	if err != nil || !ok || len(sizes) != 90 || sizes[0] <= 100 {
		t.Fatalf("stored sizes %v %v %v", ok, err, sizes)
	}
	if _, n, err := tbl.Warm(ctx); err != nil || n != 0 || sizer.calls != 2 {
		t.Fatalf("second warm: %d videos, %d calls, %v", n, sizer.calls, err)
	}
	if _, err := tbl.GC(ctx, GCOptions{Grace: -time.Hour}); err != nil {
		t.Fatal(err)
	}
	if problems, err := tbl.Verify(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	rows, err := tbl.Rows(ctx, snap, e)
	if err != nil || len(rows) != 10 {
		t.Fatalf("rows after warm: %v", err)
	}
}
