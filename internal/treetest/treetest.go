// Package treetest holds what tests of the mount's tree share, so that
// they run without FFmpeg: real local tables of the repository's test
// videos, ingested without frame sizes, and a frame server that makes
// deterministic images without decoding. It is imported by tests only.
package treetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/table/storage/storagetest"
)

// Frames is a frame server (mounttree.FrameServer) that makes
// deterministic images without decoding: the bytes name the video, the
// frame ordinal and the setting, and their length varies with the
// ordinal, so a frame served for the wrong video, ordinal or setting has
// other bytes and another size.
type Frames struct {
	mu     sync.Mutex
	frames []int // ordinals asked of Frame, in order
	sized  []int // ordinals asked of FrameSize, in order
	sizes  int   // FrameSizes calls
	fail   map[int]error
}

// Image is the image Frames makes of frame ordinal of the video key with
// setting s.
func Image(key media.VideoKey, ordinal int, s media.ImageSetting) []byte {
	head := fmt.Sprintf("%s frame %d as %s\n", key, ordinal, s.Canonical())
	return bytes.Repeat([]byte(head), 1+ordinal%7)
}

// Frame makes frame ordinal's image, or fails as Fail says.
func (f *Frames) Frame(ctx context.Context, v media.Video, ordinal int, s media.ImageSetting) ([]byte, error) {
	f.mu.Lock()
	f.frames = append(f.frames, ordinal)
	err := f.fail[ordinal]
	f.mu.Unlock()
	if from, to := v.Span(); ordinal < from || ordinal >= to {
		return nil, fmt.Errorf("%w: frame %d of %s", media.ErrFrameRange, ordinal, v.Key)
	}
	if err != nil {
		return nil, err
	}
	return Image(v.Key, ordinal, s), nil
}

// FrameSize returns the size of frame ordinal's Image, or fails as Fail
// says.
func (f *Frames) FrameSize(ctx context.Context, v media.Video, ordinal int, s media.ImageSetting) (int64, error) {
	f.mu.Lock()
	f.sized = append(f.sized, ordinal)
	err := f.fail[ordinal]
	f.mu.Unlock()
	if from, to := v.Span(); ordinal < from || ordinal >= to {
		return 0, fmt.Errorf("%w: frame %d of %s", media.ErrFrameRange, ordinal, v.Key)
	}
	if err != nil {
		return 0, err
	}
	return int64(len(Image(v.Key, ordinal, s))), nil
}

// FrameSizes returns the sizes of every frame's Image.
func (f *Frames) FrameSizes(ctx context.Context, v media.Video, s media.ImageSetting) ([]int64, error) {
	f.mu.Lock()
	f.sizes++
	f.mu.Unlock()
	sizes := make([]int64, v.Index.Frames())
	for i := range sizes {
		sizes[i] = int64(len(Image(v.Key, i, s)))
	}
	return sizes, nil
}

// Identity names the setting.
func (f *Frames) Identity(s media.ImageSetting) string { return "fake;" + s.Canonical() }

// Fail makes Frame fail for these ordinals with the given errors.
func (f *Frames) Fail(errs map[int]error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = errs
}

// Asked returns the ordinals asked of Frame, in order.
func (f *Frames) Asked() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.frames)
}

// Sized returns the ordinals asked of FrameSize, in order.
func (f *Frames) Sized() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sized)
}

// SizeCalls is the number of FrameSizes calls.
func (f *Frames) SizeCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sizes
}

// Video is the path of a video of the repository's testdata/video.
func Video(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "video", name)
}

// Rows is the sidecar of an episode of n rows of task: columns task and
// t (0, 1, ...).
func Rows(t testing.TB, episode, task string, n int) *table.Sidecar {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"episode_id":%q,"task":%q,"t":%d}`+"\n", episode, task, i)
	}
	sc, err := table.ParseSidecar(episode+".jsonl", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// RobotTable makes a real local table, partitioned by task: episode ep1
// (40 rows over all of h264_bframes_gop30.mp4's frames) and episode ep2 (30
// rows over hevc.mp4 from its frame 5), ingested without frame sizes, so
// nothing is decoded; then tag v1 on snapshot 1.
func RobotTable(t testing.TB) *table.Table {
	t.Helper()
	ctx := context.Background()
	store, err := storage.NewLocal(filepath.Join(t.TempDir(), "robot"))
	if err != nil {
		t.Fatal(err)
	}
	schema := table.Schema{
		Columns:          []table.Column{{Name: "task", Type: "string"}, {Name: "t", Type: "int64"}},
		PartitionColumns: []string{"task"},
	}
	tbl, err := table.Create(ctx, store, schema, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tbl.AddEpisodes(ctx, []table.EpisodeInput{
		{Videos: map[string]table.VideoFile{"": {Path: Video("h264_bframes_gop30.mp4")}}, Sidecar: Rows(t, "ep1", "pick", 40)},
		{Videos: map[string]table.VideoFile{"": {Path: Video("hevc.mp4"), FirstFrame: 5}}, Sidecar: Rows(t, "ep2", "place", 30)},
	}, table.AddOptions{NoSizes: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.CreateTag(ctx, "v1", 1); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// Snapshot returns snapshot id of tbl.
func Snapshot(t testing.TB, tbl *table.Table, id int64) *table.Snapshot {
	t.Helper()
	s, err := tbl.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// HeadEpisodes returns the head of tbl and its episodes.
func HeadEpisodes(t testing.TB, tbl *table.Table) (*table.Snapshot, []table.EpisodeEntry) {
	t.Helper()
	ctx := context.Background()
	head, err := tbl.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := tbl.Episodes(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	return head, eps
}

// RowXattrs is what a frame's extended attributes are, made from its
// decoded row: user.COLUMN, a string as itself, other values as their
// JSON, nulls left out. The mount serves them from compact rows, which
// must give the same bytes.
func RowXattrs(row table.Row) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range row {
		switch x := v.(type) {
		case nil:
		case string:
			out["user."+k] = []byte(x)
		default:
			b, _ := json.Marshal(x)
			out["user."+k] = b
		}
	}
	return out
}

// InterleavedTable makes a local table partitioned by task, in three
// commits of one task each (so one manifest per task), perTask episodes
// each; episode ids ep-000, ep-001, ... take the tasks in turn, so that
// every manifest's id range spans nearly all ids. It returns the store.
func InterleavedTable(t testing.TB, perTask int) storage.Store {
	t.Helper()
	ctx := context.Background()
	store, err := storage.NewLocal(filepath.Join(t.TempDir(), "t"))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := table.Create(ctx, store, table.Schema{
		Columns:          []table.Column{{Name: "task", Type: "string"}, {Name: "t", Type: "int64"}},
		PartitionColumns: []string{"task"},
	}, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for k, task := range Tasks {
		var inputs []table.EpisodeInput
		for i := range perTask {
			ep := fmt.Sprintf("ep-%03d", 3*i+k)
			inputs = append(inputs, table.EpisodeInput{Episode: ep, Sidecar: Rows(t, ep, task, 3),
				Videos: map[string]table.VideoFile{"": {Path: Video("h264_vfr.mp4")}}})
		}
		if _, err := tbl.AddEpisodes(ctx, inputs, table.AddOptions{NoSizes: true, ReuseStoredVideos: k > 0}); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// Tasks are InterleavedTable's partition values, in commit order.
var Tasks = []string{"pick", "place", "stack"}

// Interleaved is an InterleavedTable opened afresh over a storagetest.CountingStore.
type Interleaved struct {
	Table *table.Table
	Head  *table.Snapshot
	Store *storagetest.CountingStore
	// ManifestOf is the key of the manifest of each task.
	ManifestOf map[string]string
}

// OpenInterleaved makes an InterleavedTable of perTask episodes a task
// and opens it over a storagetest.CountingStore, with nothing read from it yet but
// its head and manifest list.
func OpenInterleaved(t testing.TB, perTask int) *Interleaved {
	t.Helper()
	ctx := context.Background()
	x := &Interleaved{Store: &storagetest.CountingStore{Store: InterleavedTable(t, perTask)}, ManifestOf: map[string]string{}}
	var err error
	if x.Table, err = table.Open(ctx, x.Store, table.Options{}); err != nil {
		t.Fatal(err)
	}
	if x.Head, err = x.Table.Head(ctx); err != nil {
		t.Fatal(err)
	}
	infos, err := x.Table.Manifests(ctx, x.Head)
	if err != nil || len(infos) != len(Tasks) {
		t.Fatalf("%d manifests, %v; want one per task", len(infos), err)
	}
	for _, info := range infos {
		x.ManifestOf[info.Summary.Partitions["task"].Min.Str] = info.Key
	}
	x.Store.ManifestReads()
	return x
}

// Reads checks that the manifests read since the last check are want, in
// order; what says what read them.
func (x *Interleaved) Reads(t testing.TB, what string, want ...string) {
	t.Helper()
	if got := x.Store.ManifestReads(); !slices.Equal(got, want) {
		t.Errorf("%s read manifests %v, want %v", what, got, want)
	}
}
