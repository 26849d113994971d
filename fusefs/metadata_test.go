package fusefs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/framefs/framefs/internal/treetest"
	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

// metaStrings are string values whose JSON has escapes (HTML characters,
// a literal backslash before "u003c", quotes, line separators).
var metaStrings = []string{"<b>&amp;</b>", `\u003c is not <`, `"q" \ /`, "tab\tnl\n", "\u2028 caf\u00e9 \U0001F600", ""}

// metaTable creates table "meta" in wh: one 40-frame episode whose rows
// have a column of every type.
func metaTable(t *testing.T, wh string) *table.Table {
	t.Helper()
	ctx := context.Background()
	store, err := storage.NewLocal(filepath.Join(wh, "meta"))
	if err != nil {
		t.Fatal(err)
	}
	schema := table.Schema{Columns: []table.Column{
		{Name: "t", Type: "int64"}, {Name: "note", Type: "string"}, {Name: "names", Type: "list<string>"},
		{Name: "ts", Type: "timestamp"}, {Name: "f32", Type: "float32"}, {Name: "f64", Type: "float64"},
		{Name: "big", Type: "int64"}, {Name: "small", Type: "int32"}, {Name: "flag", Type: "bool"},
		{Name: "opt", Type: "string", Nullable: true}, {Name: "vec", Type: "list<float32>"},
	}}
	tbl, err := table.Create(ctx, store, schema, tableOptions())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for i := range 40 {
		s := metaStrings[i%len(metaStrings)]
		row := map[string]any{
			"episode_id": "ep<&>", "t": i, "note": s, "names": []string{s, "x"},
			"ts": fmt.Sprintf("2024-05-01T12:00:%02d.%06dZ", i, i), "f32": 0.1 * float64(i), "f64": 1e-7 * float64(i),
			"big": json.Number(fmt.Sprint(int64(9007199254740993) + int64(i))), "small": -i, "flag": i%2 == 0,
			"vec": []float64{float64(i), 1.5},
		}
		if i%3 == 0 {
			row["opt"] = s
		}
		line, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	sc, err := table.ParseSidecar("ep.jsonl", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.AddEpisodes(ctx, []table.EpisodeInput{
		{Videos: map[string]table.VideoFile{"": {Path: video("h264_bframes_gop30.mp4")}}, Sidecar: sc},
	}, table.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestRowsFilesAndXattrsMatchRows: frames.jsonl, every frame's xattrs and
// every clip.json, served from the compact rows, are byte for byte what
// the decoded rows make (strings as themselves, other values as their
// JSON; int64 beyond 2^53, float32, timestamps, lists and HTML characters
// included).
func TestRowsFilesAndXattrsMatchRows(t *testing.T) {
	f := newFixtureOf(t, Options{ReadOnly: true}, metaTable)
	ctx := context.Background()
	snap, eps := treetest.HeadEpisodes(t, f.tbl)
	rows, err := f.tbl.Rows(ctx, snap, eps[0])
	if err != nil {
		t.Fatal(err)
	}
	ep := f.path("meta", "latest", "ep<&>")
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	for _, r := range rows {
		enc.Encode(r)
	}
	if got, err := os.ReadFile(filepath.Join(ep, mounttree.RowsJSONL)); err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("frames.jsonl (%v):\n%s\nwant\n%s", err, got, want.Bytes())
	}
	for i, r := range rows {
		frame := filepath.Join(ep, fmt.Sprintf("%06d.jpg", i))
		wantAttrs := treetest.RowXattrs(r)
		var wantNames []string
		for k := range wantAttrs {
			wantNames = append(wantNames, k)
		}
		sort.Strings(wantNames)
		buf := make([]byte, 4096)
		n, err := syscall.Listxattr(frame, buf)
		if err != nil || string(buf[:n]) != strings.Join(wantNames, "\x00")+"\x00" {
			t.Fatalf("frame %d: listxattr %q %v, want %q", i, buf[:n], err, wantNames)
		}
		for _, k := range wantNames {
			n, err := syscall.Getxattr(frame, k, buf)
			if err != nil || !bytes.Equal(buf[:n], wantAttrs[k]) {
				t.Errorf("frame %d %s: %q %v, want %q", i, k, buf[:n], err, wantAttrs[k])
			}
		}
	}
	w := table.Window{Length: 3, FrameSkip: 1, Hop: 5}
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "c", Where: "t >= 0", Window: &w}); err != nil {
		t.Fatal(err)
	}
	clips := readClipsJSONL(t, f.path("meta", "views", "c", mounttree.ClipsJSONL))
	if len(clips) != len(w.Starts(40)) {
		t.Fatalf("%d clips, want %d", len(clips), len(w.Starts(40)))
	}
	for _, c := range clips {
		doc := struct {
			Episode      string      `json:"episode"`
			Start        int64       `json:"start"`
			FrameIndices []int64     `json:"frame_indices"`
			Rows         []table.Row `json:"rows"`
		}{Episode: c.Episode, Start: c.Start, FrameIndices: c.FrameIndices}
		for _, i := range c.FrameIndices {
			doc.Rows = append(doc.Rows, rows[i])
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", " ")
		enc.Encode(doc)
		path := f.path("meta", "views", "c", c.Path, mounttree.ClipJSON)
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%s (%v):\n%s\nwant\n%s", c.Path, err, got, want.Bytes())
		}
		if st, err := os.Stat(path); err != nil || st.Size() != int64(len(got)) {
			t.Errorf("%s: stat %v %v, content %d bytes", c.Path, st, err, len(got))
		}
	}
}

// manyEpisodesTable creates table "robot" with 8 episodes of 40 frames,
// partitioned by task.
func manyEpisodesTable(t *testing.T, wh string) *table.Table {
	t.Helper()
	tbl := robotTable(t, wh)
	var in []table.EpisodeInput
	for i := 3; i <= 8; i++ {
		ep := fmt.Sprintf("ep%d", i)
		in = append(in, table.EpisodeInput{Videos: map[string]table.VideoFile{"": {Path: video("h264_bframes_gop30.mp4")}}, Sidecar: sidecar(t, ep, "pick", 40)})
	}
	if _, err := tbl.AddEpisodes(context.Background(), in, table.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestRowsFileSizesAfterForget: through a mount whose metadata caches
// hold two or three episodes, many episodes' rows files read whole and
// their frames' xattrs are right, and a stat after the kernel forgot a
// rows file takes the remembered size: nothing is made again. (The
// caches' bounds are tested in package mounttree.)
func TestRowsFileSizesAfterForget(t *testing.T) {
	// A 40-row episode's rows take about 7 KB, its frames.parquet a few.
	f := newFixtureOf(t, Options{ReadOnly: true, metadataBudgets: mounttree.Budgets{Rows: 16 << 10, RowsFiles: 12 << 10}}, manyEpisodesTable)
	var eps []string
	for i := 1; i <= 8; i++ {
		task := "pick"
		if i == 2 {
			task = "place"
		}
		eps = append(eps, f.path("robot", "latest", "task="+task, fmt.Sprintf("ep%d", i)))
	}
	sizes := map[string]int64{}
	for _, ep := range eps {
		for _, name := range []string{mounttree.RowsJSONL, mounttree.RowsParquet} {
			st, err := os.Stat(filepath.Join(ep, name))
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(ep, name))
			if err != nil || int64(len(data)) != st.Size() {
				t.Fatalf("%s/%s: %d bytes read, stat says %d (%v)", ep, name, len(data), st.Size(), err)
			}
			sizes[filepath.Join(ep, name)] = st.Size()
		}
		buf := make([]byte, 64)
		n, err := syscall.Getxattr(filepath.Join(ep, "000007.jpg"), "user.episode_id", buf)
		if err != nil || string(buf[:n]) != filepath.Base(ep) {
			t.Errorf("%s: user.episode_id %q %v", ep, buf[:n], err)
		}
	}
	made := statsValue(t, f, "framefs_rows_files_made_total")
	before := statsValue(t, f, "framefs_nodes_forgotten_total")
	dropKernelCaches(t)
	waitFor(t, func() bool { return statsValue(t, f, "framefs_nodes_forgotten_total")-before >= int64(2*len(eps)) },
		"the kernel to forget the rows files")
	for path, size := range sizes {
		if st, err := os.Stat(path); err != nil || st.Size() != size {
			t.Errorf("%s after FORGET: %v %v, want %d bytes", path, st, err, size)
		}
	}
	if n := statsValue(t, f, "framefs_rows_files_made_total") - made; n != 0 {
		t.Errorf("stat after FORGET made %d rows files again", n)
	}
}
