package mounttree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/treetest"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/table"
)

// newTestCatalog returns the catalog of tbl, serving JPEGs made by frames.
func newTestCatalog(t *testing.T, tbl *table.Table, frames FrameServer, opts CatalogOptions) *Catalog {
	t.Helper()
	setting, err := media.SettingFor("jpg", 0)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCatalog(context.Background(), tbl, frames, setting.Normalize(), opts)
	t.Cleanup(c.Close)
	return c
}

// robotTree returns the tree of the first snapshot of the robot table
// (treetest.RobotTable), with frames made by frames.
func robotTree(t *testing.T, frames FrameServer) *Tree {
	t.Helper()
	tbl := treetest.RobotTable(t)
	c := newTestCatalog(t, tbl, frames, CatalogOptions{})
	tree, err := c.SnapshotTree(context.Background(), treetest.Snapshot(t, tbl, 1))
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// listNames lists a folder's names.
func listNames(t *testing.T, f *Folder) []string {
	t.Helper()
	entries, err := f.List(context.Background())
	if err != nil {
		t.Fatalf("list %s: %v", f.Path(), err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	return names
}

// walk looks a slash-separated path up from folder f.
func walk(t *testing.T, f *Folder, path string) Item {
	t.Helper()
	var item Item = f
	for _, name := range strings.Split(path, "/") {
		folder, ok := item.(*Folder)
		if !ok {
			t.Fatalf("%s: %q is in a file", path, name)
		}
		var err error
		if item, err = folder.Lookup(context.Background(), name); err != nil {
			t.Fatalf("look up %s: %v", path, err)
		}
	}
	return item
}

// TestSnapshotTree: a snapshot's tree shows partition folders, episode
// folders with their frames (named by row, sized and made by the frame
// server for the right video and ordinal), stored video and rows files,
// with inode numbers from their paths (folders) or from what makes their
// bytes (files); names it does not hold are not found.
func TestSnapshotTree(t *testing.T) {
	ctx := context.Background()
	tbl := treetest.RobotTable(t)
	frames := &treetest.Frames{}
	c := newTestCatalog(t, tbl, frames, CatalogOptions{})
	tree, err := c.SnapshotTree(ctx, treetest.Snapshot(t, tbl, 1))
	if err != nil {
		t.Fatal(err)
	}
	root := tree.Root("/robot/snapshots/1")
	if got := listNames(t, root); !slices.Equal(got, []string{"task=pick", "task=place"}) {
		t.Errorf("root lists %q", got)
	}
	pick := walk(t, root, "task=pick").(*Folder)
	if pick.Ino() != PathIno("/robot/snapshots/1/task=pick") || pick.Path() != "/robot/snapshots/1/task=pick" {
		t.Errorf("task=pick: inode %d at %s", pick.Ino(), pick.Path())
	}
	ep2 := walk(t, root, "task=place/ep2").(*Folder)
	names := listNames(t, ep2)
	var want []string
	for i := range 30 {
		want = append(want, fmt.Sprintf("%06d.jpg", i))
	}
	want = append(want, "video.mp4", RowsJSONL, RowsParquet)
	if !slices.Equal(names, want) {
		t.Errorf("ep2 lists %q, want %q", names, want)
	}

	// A frame: the frame server's image of its video's ordinal (ep2 starts
	// at the video's frame 5), its size known before it is made.
	frame := walk(t, ep2, "000003.jpg").(*File)
	size, err := frame.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames.Asked()) != 0 {
		t.Errorf("the size of a frame made frames %v", frames.Asked())
	}
	data, err := frame.Content(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref := headEpisode(t, tbl, "ep2").Videos["video"]
	key := media.VideoKey{Object: ref.Pack, Offset: ref.Offset, Length: ref.Length}
	if wantData := treetest.Image(key, 8, c.setting); !bytes.Equal(data, wantData) || int64(len(data)) != size {
		t.Errorf("000003.jpg of ep2 is %q (size %d), want the image of frame 8, %q", data, size, wantData)
	}
	attrs, err := frame.Xattrs(ctx)
	if err != nil || string(attrs["user.t"]) != "3" || string(attrs["user.task"]) != "place" {
		t.Errorf("xattrs %q %v", attrs, err)
	}

	video := walk(t, ep2, "video.mp4").(*File)
	if size, err := video.Size(ctx); err != nil || size != ref.Length || video.Kind() != VideoFile {
		t.Errorf("video.mp4: kind %d, size %d %v, want %d", video.Kind(), size, err, ref.Length)
	}
	rows := walk(t, ep2, RowsJSONL).(*File)
	content, err := rows.Content(ctx)
	if size, _ := rows.Size(ctx); err != nil || bytes.Count(content, []byte("\n")) != 30 || int64(len(content)) != size {
		t.Errorf("frames.jsonl: %d bytes (size %d) %v", len(content), size, err)
	}

	// A file is the same inode in every snapshot holding the same version
	// of its episode: snapshot 2 changes ep1 only.
	if _, err := tbl.UpdateRows(ctx, "ep1", treetest.Rows(t, "ep1", "pick", 40)); err != nil {
		t.Fatal(err)
	}
	tree2, err := c.SnapshotTree(ctx, treetest.Snapshot(t, tbl, 2))
	if err != nil {
		t.Fatal(err)
	}
	root2 := tree2.Root("/robot/snapshots/2")
	for path, same := range map[string]bool{"task=place/ep2/000003.jpg": true, "task=place/ep2/frames.jsonl": true, "task=pick/ep1/000003.jpg": false} {
		a, b := walk(t, root, path).(*File), walk(t, root2, path).(*File)
		if (a.Ino() == b.Ino()) != same {
			t.Errorf("%s: inode %d in snapshot 1, %d in snapshot 2; want the same: %v", path, a.Ino(), b.Ino(), same)
		}
	}

	for _, path := range []string{"task=other", "task=pick/ep2", "task=place/ep2/000030.jpg", "task=place/ep2/3.jpg",
		"task=place/ep2/000003.png", "task=place/ep2/clip.json", "task=place/ep2/video.mkv", "clips.jsonl", "..", ""} {
		dir, name := root, path
		if i := strings.LastIndexByte(path, '/'); i >= 0 {
			dir, name = walk(t, root, path[:i]).(*Folder), path[i+1:]
		}
		if item, err := dir.Lookup(ctx, name); !errors.Is(err, table.ErrNotFound) {
			t.Errorf("%q: %v %v, want not found", path, item, err)
		}
	}
}

// headEpisode returns an episode of the table's head.
func headEpisode(t *testing.T, tbl *table.Table, name string) table.EpisodeEntry {
	t.Helper()
	_, eps := treetest.HeadEpisodes(t, tbl)
	for _, e := range eps {
		if e.Episode == name {
			return e
		}
	}
	t.Fatalf("no episode %s", name)
	return table.EpisodeEntry{}
}

// TestViewTrees: a view's tree shows the matching frames only, with rows
// files of its rows (other files than the episode's own); a clip view's
// episode folders hold clip folders of the window's frames with their
// clip.json, and its root clips.jsonl and clips.txt.
func TestViewTrees(t *testing.T) {
	ctx := context.Background()
	tbl := treetest.RobotTable(t)
	c := newTestCatalog(t, tbl, &treetest.Frames{}, CatalogOptions{})
	snap := treetest.Snapshot(t, tbl, 1)
	snapRoot := func() *Folder {
		tree, err := c.SnapshotTree(ctx, snap)
		if err != nil {
			t.Fatal(err)
		}
		return tree.Root("/robot/snapshots/1")
	}()

	def, err := query.CreateView(ctx, tbl, table.View{Name: "early", Where: "t < 3"})
	if err != nil {
		t.Fatal(err)
	}
	view := NewView(def)
	tree, err := c.ViewTree(ctx, view, snap)
	if err != nil {
		t.Fatal(err)
	}
	root := tree.Root("/robot/views/" + view.FolderName(1))
	if got := listNames(t, walk(t, root, "task=pick/ep1").(*Folder)); !slices.Equal(got, []string{"000000.jpg", "000001.jpg", "000002.jpg", "video.mp4", RowsJSONL, RowsParquet}) {
		t.Errorf("the view's ep1 lists %q", got)
	}
	if _, err := walk(t, root, "task=pick").(*Folder).Lookup(ctx, "000003.jpg"); !errors.Is(err, table.ErrNotFound) {
		t.Errorf("a frame the view leaves out: %v", err)
	}
	if a, b := walk(t, root, "task=pick/ep1/000002.jpg").(*File), walk(t, snapRoot, "task=pick/ep1/000002.jpg").(*File); a.Ino() != b.Ino() {
		t.Errorf("a view's frame is inode %d, the snapshot's %d", a.Ino(), b.Ino())
	}
	rows := walk(t, root, "task=pick/ep1/"+RowsJSONL).(*File)
	if data, err := rows.Content(ctx); err != nil || bytes.Count(data, []byte("\n")) != 3 {
		t.Errorf("the view's frames.jsonl: %q %v", data, err)
	}
	if rows.Ino() == walk(t, snapRoot, "task=pick/ep1/"+RowsJSONL).(*File).Ino() {
		t.Error("a view's frames.jsonl has the inode of the episode's")
	}

	w := table.Window{Length: 3, FrameSkip: 1, Hop: 10}
	def, err = query.CreateView(ctx, tbl, table.View{Name: "clips", Where: "t >= 0", Window: &w})
	if err != nil {
		t.Fatal(err)
	}
	clipView := NewView(def)
	if tree, err = c.ViewTree(ctx, clipView, snap); err != nil {
		t.Fatal(err)
	}
	root = tree.Root("/robot/views/" + clipView.FolderName(1))
	if got := listNames(t, root); !slices.Equal(got, []string{"task=pick", "task=place", ClipsJSONL, ClipsTxt}) {
		t.Errorf("the clip view's root lists %q", got)
	}
	if got := listNames(t, walk(t, root, "task=pick/ep1").(*Folder)); !slices.Equal(got, []string{"clip-000000", "clip-000010", "clip-000020", "clip-000030", "video.mp4", RowsJSONL, RowsParquet}) {
		t.Errorf("the clip view's ep1 lists %q", got)
	}
	clip := walk(t, root, "task=pick/ep1/clip-000010").(*Folder)
	if got := listNames(t, clip); !slices.Equal(got, []string{"00.jpg", "01.jpg", "02.jpg", ClipJSON}) {
		t.Errorf("clip-000010 lists %q", got)
	}
	if a, b := walk(t, clip, "02.jpg").(*File), walk(t, snapRoot, "task=pick/ep1/000014.jpg").(*File); a.Ino() != b.Ino() {
		t.Error("a clip's third frame is not the file of frame 14")
	}
	doc, err := walk(t, clip, ClipJSON).(*File).Content(ctx)
	if err != nil || !bytes.Contains(doc, []byte(`"frame_indices": [`)) || !bytes.Contains(doc, []byte(`"t": 14`)) {
		t.Errorf("clip.json: %s %v", doc, err)
	}
	list, err := walk(t, root, ClipsTxt).(*File).Content(ctx)
	if err != nil || !strings.HasPrefix(string(list), "task=pick/ep1/clip-000000 3 0\n") {
		t.Errorf("clips.txt: %q %v", list, err)
	}
	for _, name := range []string{"clip-000005", "clip-10", "clip-000040", "000000.jpg"} {
		if _, err := walk(t, root, "task=pick/ep1").(*Folder).Lookup(ctx, name); !errors.Is(err, table.ErrNotFound) {
			t.Errorf("%s in a clip view's episode folder: %v", name, err)
		}
	}
}

// askedIndex records what a tree asks its index.
type askedIndex struct {
	index
	asked []string
}

func (x *askedIndex) list(ctx context.Context, dir string) ([]string, []*episode, error) {
	x.asked = append(x.asked, "list "+dir)
	return x.index.list(ctx, dir)
}

func (x *askedIndex) find(ctx context.Context, dir, name string) (bool, shownEpisode, error) {
	x.asked = append(x.asked, "find "+dir+" "+name)
	return x.index.find(ctx, dir, name)
}

// TestIndexAskedPerFolder: a tree asks its index about the partition
// folder listed or looked up in, and nothing about what is below an
// episode folder, so that an index may read the metadata of one folder
// or one episode only.
func TestIndexAskedPerFolder(t *testing.T) {
	tree := robotTree(t, &treetest.Frames{})
	x := &askedIndex{index: tree.index}
	tree.index = x
	root := tree.Root("")
	ep1 := walk(t, root, "task=pick/ep1").(*Folder)
	listNames(t, ep1)
	walk(t, ep1, "000007.jpg")
	listNames(t, walk(t, root, "task=place").(*Folder))
	want := []string{"find  task=pick", "find task=pick ep1", "find  task=place", "list task=place"}
	if !slices.Equal(x.asked, want) {
		t.Errorf("the index was asked %q, want %q", x.asked, want)
	}
}

// TestMetadataCachesBounded: the catalog's metadata caches stay within
// their byte budgets while many episodes' rows files and xattrs are read,
// and the size of a rows file whose content was evicted is known without
// making it again.
func TestMetadataCachesBounded(t *testing.T) {
	ctx := context.Background()
	tbl := treetest.RobotTable(t)
	var in []table.EpisodeInput
	for i := 3; i <= 8; i++ {
		ep := fmt.Sprintf("ep%d", i)
		in = append(in, table.EpisodeInput{Videos: map[string]table.VideoFile{"": {Path: treetest.Video("h264_bframes_gop30.mp4")}}, Sidecar: treetest.Rows(t, ep, "pick", 40)})
	}
	if _, err := tbl.AddEpisodes(ctx, in, table.AddOptions{NoSizes: true}); err != nil {
		t.Fatal(err)
	}
	// A 40-row episode's rows take about 7 KB, its frames.parquet a few:
	// budgets that hold two or three of each.
	counters := &Counters{}
	c := newTestCatalog(t, tbl, &treetest.Frames{}, CatalogOptions{Counters: counters, Budgets: Budgets{Rows: 16 << 10, RowsFiles: 12 << 10}})
	tree, err := c.SnapshotTree(ctx, treetest.Snapshot(t, tbl, 2))
	if err != nil {
		t.Fatal(err)
	}
	root := tree.Root("")
	checkBudgets := func(when string) {
		t.Helper()
		for name, c := range map[string]interface {
			Bytes() int64
			MaxBytes() int64
		}{"videos": c.videos, "sizes": c.sizes, "rows": c.rows, "files": c.files, "fileSizes": c.fileSizes} {
			if c.Bytes() > c.MaxBytes() {
				t.Fatalf("%s: the %s cache holds %d bytes, budget %d", when, name, c.Bytes(), c.MaxBytes())
			}
		}
	}
	sizes := map[string]int64{}
	for i := 1; i <= 8; i++ {
		task := "pick"
		if i == 2 {
			task = "place"
		}
		ep := fmt.Sprintf("task=%s/ep%d", task, i)
		for _, name := range []string{RowsJSONL, RowsParquet} {
			f := walk(t, root, ep+"/"+name).(*File)
			size, err := f.Size(ctx)
			if err != nil {
				t.Fatal(err)
			}
			data, err := f.Content(ctx)
			if err != nil || int64(len(data)) != size {
				t.Fatalf("%s/%s: %d bytes made, Size says %d (%v)", ep, name, len(data), size, err)
			}
			sizes[ep+"/"+name] = size
			checkBudgets(ep + "/" + name)
		}
		attrs, err := walk(t, root, ep+"/000007.jpg").(*File).Xattrs(ctx)
		if err != nil || string(attrs["user.episode_id"]) != fmt.Sprintf("ep%d", i) {
			t.Errorf("%s: user.episode_id %q %v", ep, attrs["user.episode_id"], err)
		}
		checkBudgets(ep + " xattrs")
	}
	if n := c.rows.Len(); n < 1 || n > 2 {
		t.Errorf("%d episodes' rows kept under a budget for two", n)
	}
	// With the contents gone, a file looked up again takes the
	// remembered size: nothing is made again.
	c.rows.Purge()
	c.files.Purge()
	made := counters.RowsFilesMade.Load()
	for path, size := range sizes {
		if got, err := walk(t, root, path).(*File).Size(ctx); err != nil || got != size {
			t.Errorf("%s after its content was evicted: %d %v, want %d bytes", path, got, err, size)
		}
	}
	if c.rows.Len() != 0 || c.files.Len() != 0 || counters.RowsFilesMade.Load() != made {
		t.Errorf("sizes made rows files again: %d rows, %d files cached, %d made", c.rows.Len(), c.files.Len(), counters.RowsFilesMade.Load()-made)
	}
}

// TestEvictedVideoReadsOn: the catalog closes the videos its cache evicts,
// while a decoder it handed one to may still read it. With a video budget
// that holds one video, opening ep2's evicts ep1's; ep1's reader still reads
// the bytes ingested.
func TestEvictedVideoReadsOn(t *testing.T) {
	ctx := context.Background()
	tbl := treetest.RobotTable(t)
	c := newTestCatalog(t, tbl, &treetest.Frames{}, CatalogOptions{Budgets: Budgets{Videos: 1}})
	first, err := c.openVideo(ctx, headEpisode(t, tbl, "ep1").Videos["video"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.openVideo(ctx, headEpisode(t, tbl, "ep2").Videos["video"]); err != nil {
		t.Fatal(err)
	}
	if c.videos.Len() != 1 {
		t.Fatalf("the video cache holds %d videos, want 1 (ep1's evicted)", c.videos.Len())
	}
	want, err := os.ReadFile(treetest.Video("h264_bframes_gop30.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, first.Size)
	if _, err := first.R.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ep1's video after its eviction: %v; bytes equal to those ingested: %v", err, bytes.Equal(got, want))
	}
}
