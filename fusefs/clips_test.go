package fusefs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
)

// clipLine is a line of clips.jsonl.
type clipLine struct {
	Path         string  `json:"path"`
	Episode      string  `json:"episode"`
	Start        int64   `json:"start"`
	FrameIndices []int64 `json:"frame_indices"`
}

func readClipsJSONL(t *testing.T, path string) []clipLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []clipLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var c clipLine
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("clips.jsonl line %q: %v", sc.Text(), err)
		}
		out = append(out, c)
	}
	return out
}

// clipFolders walks a view's root for clip-* folders.
func clipFolders(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), "clip-") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// TestClipViewLayout: a clip view's folders are the windows whose frames
// all match; each frame is the snapshot's file (same inode, same bytes);
// clip.json, clips.jsonl and clips.txt describe the same clips.
func TestClipViewLayout(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	w := table.Window{Length: 4, FrameSkip: 1, Hop: 3}
	// t is the row's ordinal in both episodes; rows 10-13 do not match,
	// so no window holds one of them.
	v, err := query.CreateView(ctx, f.tbl, table.View{Name: "c4", Where: "t < 10 OR t > 13", Window: &w})
	if err != nil {
		t.Fatal(err)
	}
	root := f.path("robot", "views", "c4")
	lines := readClipsJSONL(t, filepath.Join(root, mounttree.ClipsJSONL))
	// The expected clips, window by window.
	var want []clipLine
	for _, ep := range []struct {
		dir  string
		rows int64
	}{{"task=pick/ep1", 40}, {"task=place/ep2", 30}} {
		for _, s := range w.Starts(ep.rows) {
			frames := w.Frames(s)
			if slices.ContainsFunc(frames, func(i int64) bool { return i >= 10 && i <= 13 }) {
				continue
			}
			want = append(want, clipLine{Path: fmt.Sprintf("%s/clip-%06d", ep.dir, s), Episode: filepath.Base(ep.dir), Start: s, FrameIndices: frames})
		}
	}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Fatalf("clips.jsonl:\n%v\nwant\n%v", lines, want)
	}
	var paths []string
	for _, c := range lines {
		paths = append(paths, c.Path)
	}
	if got := clipFolders(t, root+"/"); !slices.Equal(got, paths) {
		t.Errorf("clip folders %v, clips.jsonl %v", got, paths)
	}
	txt, err := os.ReadFile(filepath.Join(root, mounttree.ClipsTxt))
	if err != nil || !strings.HasPrefix(string(txt), "task=pick/ep1/clip-000000 4 0\ntask=pick/ep1/clip-000003 4 0\n") ||
		bytes.Count(txt, []byte("\n")) != len(lines) {
		t.Errorf("clips.txt: %q %v", txt, err)
	}
	ep1 := filepath.Join(root, "task=pick", "ep1")
	got := names(t, ep1)
	if want := []string{"clip-000000", "clip-000003", "clip-000015", "clip-000018", "clip-000021", "clip-000024", "clip-000027", "clip-000030", "clip-000033",
		"frames.jsonl", "frames.parquet", "video.mp4"}; !slices.Equal(got, want) {
		t.Errorf("episode folder of a clip view: %v, want %v", got, want)
	}
	// The episode folder's rows files hold the rows in at least one clip.
	jsonl, err := os.ReadFile(filepath.Join(ep1, mounttree.RowsJSONL))
	if err != nil {
		t.Fatal(err)
	}
	var union []int64
	for _, c := range lines {
		if c.Episode == "ep1" {
			union = append(union, c.FrameIndices...)
		}
	}
	slices.Sort(union)
	union = slices.Compact(union)
	if n := bytes.Count(jsonl, []byte("\n")); n != len(union) {
		t.Errorf("frames.jsonl holds %d rows, the clips %d", n, len(union))
	}
	if got, want := inode(t, filepath.Join(ep1, "video.mp4")), inode(t, f.path("robot", "snapshots", "1", "task=pick", "ep1", "video.mp4")); got != want {
		t.Errorf("video.mp4 of a clip view is another file")
	}
	for _, c := range lines {
		dir := filepath.Join(root, c.Path)
		snapDir := f.path("robot", "snapshots", "1", filepath.Dir(c.Path))
		if got := names(t, dir); !slices.Equal(got, []string{"00.jpg", "01.jpg", "02.jpg", "03.jpg", "clip.json"}) {
			t.Fatalf("%s: %v", c.Path, got)
		}
		for j, row := range c.FrameIndices {
			name := fmt.Sprintf("%02d.jpg", j)
			inClip, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			snapFile := filepath.Join(snapDir, fmt.Sprintf("%06d.jpg", row))
			inSnap, err := os.ReadFile(snapFile)
			if err != nil || !bytes.Equal(inClip, inSnap) {
				t.Errorf("%s/%s differs from frame %d of the snapshot (%v)", c.Path, name, row, err)
			}
			if inode(t, filepath.Join(dir, name)) != inode(t, snapFile) {
				t.Errorf("%s/%s is not the snapshot's file", c.Path, name)
			}
		}
		var doc struct {
			Episode      string           `json:"episode"`
			Start        int64            `json:"start"`
			FrameIndices []int64          `json:"frame_indices"`
			Rows         []map[string]any `json:"rows"`
		}
		data, err := os.ReadFile(filepath.Join(dir, mounttree.ClipJSON))
		if err != nil || json.Unmarshal(data, &doc) != nil {
			t.Fatalf("%s/clip.json: %s %v", c.Path, data, err)
		}
		if doc.Episode != c.Episode || doc.Start != c.Start || !slices.Equal(doc.FrameIndices, c.FrameIndices) || len(doc.Rows) != 4 {
			t.Errorf("%s/clip.json: %+v", c.Path, doc)
		}
		for j, r := range doc.Rows {
			if r["t"] != float64(c.FrameIndices[j]) || r["episode_id"] != c.Episode {
				t.Errorf("%s/clip.json row %d: %v", c.Path, j, r)
			}
		}
	}
	// A frame not in the window, and names that are not the clip's.
	for _, name := range []string{"04.jpg", "4.jpg", "000.jpg", "00.png", "frames.jsonl", "video.mp4"} {
		if _, err := os.Stat(filepath.Join(ep1, "clip-000000", name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("clip-000000/%s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ep1, "clip-000006")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a window holding a row that does not match: %v", err)
	}
	checkReadOnly(t, filepath.Join(ep1, "clip-000000"), "00.jpg", nil)
	for _, p := range []string{filepath.Join(root, mounttree.ClipsJSONL), filepath.Join(ep1, "clip-000000", mounttree.ClipJSON)} {
		if _, err := os.OpenFile(p, os.O_WRONLY, 0); !errors.Is(err, syscall.EROFS) {
			t.Errorf("open %s for writing: %v, want EROFS", p, err)
		}
	}
	// view list shows the window; a plain view shows no clip files.
	if v.Window == nil || len(v.Features) != 1 {
		t.Errorf("stored view %+v", v)
	}
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "plain", Where: "t < 3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.path("robot", "views", "plain", mounttree.ClipsJSONL)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("clips.jsonl in a plain view: %v", err)
	}
}

// TestClipViewEmptyAndGroupBy: a window longer than every episode makes
// a view with no clips (an empty folder, not an error); with group-by,
// clips.txt labels are the ranks of the group folders.
func TestClipViewEmptyAndGroupBy(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "long", Where: "TRUE", Window: &table.Window{Length: 500, Hop: 1}}); err != nil {
		t.Fatal(err)
	}
	root := f.path("robot", "views", "long")
	if got := names(t, root); !slices.Equal(got, []string{mounttree.ClipsJSONL, mounttree.ClipsTxt}) {
		t.Errorf("a view with no clips: %v", got)
	}
	if data, err := os.ReadFile(filepath.Join(root, mounttree.ClipsJSONL)); err != nil || len(data) != 0 {
		t.Errorf("clips.jsonl of no clips: %q %v", data, err)
	}
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "bytask", Where: "TRUE", GroupBy: []string{"task"},
		Window: &table.Window{Length: 10, Hop: 10}}); err != nil {
		t.Fatal(err)
	}
	txt, err := os.ReadFile(f.path("robot", "views", "bytask", mounttree.ClipsTxt))
	want := "task=pick/ep1/clip-000000 10 0\ntask=pick/ep1/clip-000010 10 0\ntask=pick/ep1/clip-000020 10 0\ntask=pick/ep1/clip-000030 10 0\n" +
		"task=place/ep2/clip-000000 10 1\ntask=place/ep2/clip-000010 10 1\ntask=place/ep2/clip-000020 10 1\n"
	if err != nil || string(txt) != want {
		t.Errorf("clips.txt with group-by:\n%s(%v)\nwant\n%s", txt, err, want)
	}
	names := frameNames(t, f.path("robot", "views", "bytask", "task=place", "ep2", "clip-000020"))
	if strings.Join(names, " ") != "00.jpg 01.jpg 02.jpg 03.jpg 04.jpg 05.jpg 06.jpg 07.jpg 08.jpg 09.jpg" {
		t.Errorf("frames of a 10-frame clip: %v", names)
	}
}

// TestClipFramesDecodedOnce reads every clip of a window-16 hop-8 view
// (every frame in two windows) in order: each distinct frame is decoded
// about once, and each frame file is made once.
func TestClipFramesDecodedOnce(t *testing.T) {
	requireFUSE(t)
	f := &fixture{wh: t.TempDir(), mnt: filepath.Join(t.TempDir(), "mnt")}
	os.MkdirAll(f.mnt, 0o755)
	f.tbl = robotTable(t, f.wh)
	f.frames = serving.New(decoder.Codec{}, serving.Options{CacheBytes: 16 << 20})
	f.mount(t, dirWarehouse(t, f.wh), Options{})
	ctx := context.Background()
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "c16", Where: "task = 'pick'", Window: &table.Window{Length: 16, Hop: 8}}); err != nil {
		t.Fatal(err)
	}
	root := f.path("robot", "views", "c16")
	lines := readClipsJSONL(t, filepath.Join(root, mounttree.ClipsJSONL))
	if len(lines) != 4 {
		t.Fatalf("%d clips, want 4 (starts 0, 8, 16, 24 of 40 frames)", len(lines))
	}
	// Sizes first, as ls -l does; then every clip in order, as a loader.
	for _, c := range lines {
		entries, err := os.ReadDir(filepath.Join(root, c.Path))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, err := e.Info(); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := f.frames.PoolStats().Decoded
	servedBefore := f.srv.m.stats.framesServed.Load()
	read := 0
	for _, c := range lines {
		for j := range c.FrameIndices {
			if _, err := os.ReadFile(filepath.Join(root, c.Path, fmt.Sprintf("%02d.jpg", j))); err != nil {
				t.Fatal(err)
			}
			read++
		}
	}
	// Read-ahead may still be decoding: count once every session is idle.
	waitFor(t, func() bool { st := f.frames.PoolStats(); return st.Open == st.Idle }, "decoder sessions idle")
	decoded := f.frames.PoolStats().Decoded - before
	// The video has B-frames: showing the episode's last frames takes
	// decoding the next few (reordering), whatever reads them.
	const distinct, reorder = 40, 4
	if read != 64 || decoded > distinct+reorder {
		t.Errorf("read %d clip frames (%d distinct): %d frames decoded, want at most %d", read, distinct, decoded, distinct+reorder)
	}
	if opened := f.srv.m.stats.framesServed.Load() - servedBefore; opened != int64(read) {
		t.Errorf("%d frames served for %d opened", opened, read)
	}
	t.Logf("%d clip frames read, %d distinct, %d decoded", read, distinct, decoded)
}

// TestClipDataLoader runs the README's clip Dataset with a DataLoader of
// 2 workers over a clip view: every clip, in order, as the stacked frames
// of the snapshot at clips.jsonl's frame indices, loaded by both workers.
func TestClipDataLoader(t *testing.T) {
	py := requireTorchvision(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- clip-dataset -->\n```python\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no clip Dataset example after <!-- clip-dataset -->")
	}
	example := string(m[1])
	if n := strings.Count(example, "\n"); n > 20 {
		t.Errorf("the README's clip Dataset is %d lines long", n)
	}
	f := newFixture(t, Options{})
	ctx := context.Background()
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "c8", Where: "t >= 2", Window: &table.Window{Length: 8, FrameSkip: 1, Hop: 4}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "clip_dataset.py")
	if err := os.WriteFile(script, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	// The example as a program prints the batch shapes.
	root := f.path("robot", "views", "c8")
	out, err := exec.Command(py, script, root).CombinedOutput()
	if err != nil || !strings.Contains(string(out), ", 8, 120, 160, 3)") {
		t.Fatalf("README example: %v\n%s", err, out)
	}
	const check = `
import importlib.util, json, os, sys
import numpy as np, torch
from PIL import Image
from torch.utils.data import DataLoader, get_worker_info
spec = importlib.util.spec_from_file_location("clip_dataset", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
root, snap = sys.argv[2], sys.argv[3]

class Probe(mod.ClipFolders):
    def __getitem__(self, i):
        return super().__getitem__(i), get_worker_info().id

ds = Probe(root)
clips = [json.loads(l) for l in open(os.path.join(root, "clips.jsonl"))]
assert [os.path.relpath(c, root) for c in ds.clips] == [c["path"] for c in clips], (ds.clips, clips)
i, workers = 0, set()
for batch, ids in DataLoader(ds, batch_size=3, num_workers=2):
    workers.update(ids.tolist())
    for item in batch:
        c = clips[i]
        part = os.path.dirname(c["path"])
        want = np.stack([np.asarray(Image.open(os.path.join(snap, part, "%06d.jpg" % k)).convert("RGB")) for k in c["frame_indices"]])
        assert item.dtype == torch.uint8 and torch.equal(item, torch.from_numpy(want)), c
        i += 1
assert i == len(clips) and workers == {0, 1}, (i, len(clips), workers)
print(i, "clips")
`
	out, err = exec.Command(py, "-c", check, script, root, f.path("robot", "snapshots", "1")).CombinedOutput()
	if err != nil {
		t.Fatalf("DataLoader over the clip view: %v\n%s", err, out)
	}
	// ep1: starts 4..24 step 4 from row 2 (spans 15 rows: 2+4k ≤ 25);
	// ep2 (30 rows): starts 4..12.
	if got := strings.TrimSpace(string(out)); got != "9 clips" {
		t.Errorf("DataLoader: %s", got)
	}

	// Episodes of another frame size cannot be batched with these: the
	// README makes its view with --scale, which serves every clip at one
	// size.
	small := filepath.Join(dir, "small.mp4")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=96x64:rate=10", "-frames:v", "30",
		"-pix_fmt", "yuv420p", "-c:v", "libx264", small).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	if _, err := f.tbl.AddEpisodes(ctx, []table.EpisodeInput{{Videos: map[string]table.VideoFile{"": {Path: small}},
		Sidecar: sidecar(t, "ep3", "place", 30)}}, table.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`--window 16 .*--scale 224x224`).Match(readme) {
		t.Error("the README's clip view example does not scale its frames (--scale 224x224)")
	}
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "c8s", Where: "t >= 2", Window: &table.Window{Length: 8, FrameSkip: 1, Hop: 4},
		Image: &table.ViewImage{Width: 64, Height: 48}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := os.Stat(f.path("robot", "views", "c8s", "task=place", "ep3"))
		return err == nil
	}, "the scaled clip view with ep3")
	out, err = exec.Command(py, script, f.path("robot", "views", "c8s")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), ", 8, 48, 64, 3)") || strings.Contains(string(out), "120, 160") {
		t.Fatalf("README example over episodes of two sizes, scaled: %v\n%s", err, out)
	}
	if out, err := exec.Command(py, script, f.path("robot", "views", "c8")).CombinedOutput(); err == nil {
		t.Errorf("README example over episodes of two sizes, not scaled: no error\n%s", out)
	}
}
