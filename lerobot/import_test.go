package lerobot

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/lerobottest"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

func TestMain(m *testing.M) {
	code := m.Run()
	lerobottest.RemoveCache()
	os.Exit(code)
}

const (
	camTop   = lerobottest.CamTop
	camWrist = lerobottest.CamWrist
)

func testSpec(version string) lerobottest.Spec { return lerobottest.Standard(version) }

func build(t *testing.T, spec lerobottest.Spec) *lerobottest.Dataset {
	t.Helper()
	return lerobottest.Build(t, filepath.Join(t.TempDir(), "dataset"), spec)
}

func newStore(t *testing.T) storage.Store {
	t.Helper()
	store, err := storage.NewLocal(filepath.Join(t.TempDir(), "table"))
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func importDir(t *testing.T, dir string, store storage.Store, opts ImportOptions) (*ImportResult, error) {
	t.Helper()
	ds, err := Open(context.Background(), dir)
	if err != nil {
		return nil, err
	}
	return Import(context.Background(), ds, store, table.Options{}, opts)
}

// headEpisodes returns a table's head snapshot and its episodes.
func headEpisodes(t *testing.T, tbl *table.Table) (*table.Snapshot, []table.EpisodeEntry) {
	t.Helper()
	ctx := context.Background()
	snap, err := tbl.Head(ctx)
	if err != nil || snap == nil {
		t.Fatalf("head of %s: %v", tbl, err)
	}
	eps, err := tbl.Episodes(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	return snap, eps
}

// checkImported compares a table with the dataset it was imported from:
// every row's values, each episode's videos (same bytes, right first
// frame), and each source file stored once.
func checkImported(t *testing.T, d *lerobottest.Dataset, tbl *table.Table) {
	t.Helper()
	ctx := context.Background()
	snap, eps := headEpisodes(t, tbl)
	s := d.Spec
	if len(eps) != len(s.Lengths) {
		t.Fatalf("%d episodes in the table, %d in the dataset", len(eps), len(s.Lengths))
	}
	payloads := map[string]map[string]bool{} // camera -> payload locations
	var index int64
	for i, e := range eps {
		if e.Episode != ID(int64(i)) || e.Rows != int64(s.Lengths[i]) {
			t.Fatalf("episode %d is %s with %d rows, want %s with %d", i, e.Episode, e.Rows, ID(int64(i)), s.Lengths[i])
		}
		for _, cam := range s.Cameras {
			ref := e.Videos[cam.Key]
			src := filepath.Join(d.Dir, d.EpisodeFile[cam.Key][i])
			if ref.SHA256 != lerobottest.FileSHA256(t, src) || ref.FirstFrame != d.EpisodeFirst[cam.Key][i] {
				t.Errorf("%s %s: sha %s first frame %d, want the bytes of %s from frame %d", e.Episode, cam.Key, ref.SHA256, ref.FirstFrame, src, d.EpisodeFirst[cam.Key][i])
			}
			if payloads[cam.Key] == nil {
				payloads[cam.Key] = map[string]bool{}
			}
			payloads[cam.Key][fmt.Sprintf("%s@%d", ref.Pack, ref.Offset)] = true
		}
		rows, err := tbl.Rows(ctx, snap, e)
		if err != nil {
			t.Fatal(err)
		}
		for k, r := range rows {
			task := s.TaskOf(i, k)
			want := map[string]any{
				"frame_index": int64(k), "episode_index": int64(i), "index": index, "task_index": int64(task), "task": s.Tasks[task],
				"next.done": lerobottest.Done(i, k, s.Lengths[i]),
			}
			index++
			for col, v := range want {
				if r[col] != v {
					t.Fatalf("%s row %d: %s = %v (%T), want %v (%T)", e.Episode, k, col, r[col], r[col], v, v)
				}
			}
			// float32 columns read back as float64s of the same float32.
			if ts, ok := r["timestamp"].(float64); !ok || float32(ts) != float32(k)/float32(s.FPS) {
				t.Fatalf("%s row %d: timestamp %v", e.Episode, k, r["timestamp"])
			}
			if rw, ok := r["next.reward"].(float64); !ok || float32(rw) != lerobottest.Reward(i, k) {
				t.Fatalf("%s row %d: next.reward %v", e.Episode, k, r["next.reward"])
			}
			state, action, effort := r["observation.state"].([]any), r["action"].([]any), r["observation.effort"].([]any)
			if len(state) != 6 || len(action) != 6 || len(effort) != 2 {
				t.Fatalf("%s row %d: lists %v %v %v", e.Episode, k, state, action, effort)
			}
			for j := range 6 {
				if float32(state[j].(float64)) != lerobottest.State(i, k, j) || float32(action[j].(float64)) != lerobottest.Action(i, k, j) {
					t.Fatalf("%s row %d: state %v action %v", e.Episode, k, state, action)
				}
			}
			for j := range 2 {
				if effort[j].(int64) != int64(lerobottest.Effort(i, k, j)) {
					t.Fatalf("%s row %d: effort %v", e.Episode, k, effort)
				}
			}
			ref := r[camTop].(table.FrameRef)
			if ref.Frame != d.EpisodeFirst[camTop][i]+int64(k) {
				t.Fatalf("%s row %d: frame %d of the %s video, want %d", e.Episode, k, ref.Frame, camTop, d.EpisodeFirst[camTop][i]+int64(k))
			}
		}
	}
	for _, cam := range s.Cameras {
		if got, want := len(payloads[cam.Key]), len(d.Videos[cam.Key]); got != want {
			t.Errorf("%s: %d stored payloads for %d source files", cam.Key, got, want)
		}
	}
	if probs, err := tbl.Verify(ctx); err != nil || len(probs) > 0 {
		t.Fatalf("verify: %v %v", probs, err)
	}
}

func TestImportVersions(t *testing.T) {
	for _, version := range []string{V20, V21, V30} {
		t.Run(version, func(t *testing.T) {
			d := build(t, testSpec(version))
			store := newStore(t)
			res, err := importDir(t, d.Dir, store, ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Created || res.Imported != 6 || res.Skipped != 0 || len(res.Snapshots) != 1 || res.Frames != 64 {
				t.Errorf("result %+v", res)
			}
			if len(res.Widened) != 1 || res.Widened[0].Column != "observation.effort" || res.Widened[0].To != "list<int32>" {
				t.Errorf("widened: %+v", res.Widened)
			}
			tbl, err := table.Open(context.Background(), store, table.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkImported(t, d, tbl)
			schema, _ := tbl.LatestSchema(context.Background())
			if schema.Properties[PropVersion] != version || schema.Properties[PropFPS] != "30" || schema.Properties[PropRobotType] != `"so100"` {
				t.Errorf("properties %v", schema.Properties)
			}
			var feats map[string]json.RawMessage
			if err := json.Unmarshal([]byte(schema.Properties[PropFeatures]), &feats); err != nil || len(feats) != 12 {
				t.Errorf("features property: %v (%d features)", err, len(feats))
			}
		})
	}
}

// tableContent is what a round trip must keep: each episode's rows (row
// ids aside) and the bytes of its videos from its first frame.
type episodeContent struct {
	rows   []table.Row
	videos map[string]string // camera -> sha256 @ first frame
}

func tableContent(t *testing.T, tbl *table.Table) map[string]episodeContent {
	t.Helper()
	ctx := context.Background()
	snap, eps := headEpisodes(t, tbl)
	out := map[string]episodeContent{}
	for _, e := range eps {
		rows, err := tbl.Rows(ctx, snap, e)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			delete(r, table.RowIDColumn)
			for k, v := range r {
				if ref, ok := v.(table.FrameRef); ok {
					r[k] = ref.Frame // packs differ between tables
				}
			}
		}
		c := episodeContent{rows: rows, videos: map[string]string{}}
		for cam, ref := range e.Videos {
			c.videos[cam] = fmt.Sprintf("%s@%d", ref.SHA256, ref.FirstFrame)
		}
		out[e.Episode] = c
	}
	return out
}

func TestExportRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, version := range []string{V21, V30} {
		t.Run(version, func(t *testing.T) {
			d := build(t, testSpec(version))
			store1 := newStore(t)
			if _, err := importDir(t, d.Dir, store1, ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			tbl1, _ := table.Open(ctx, store1, table.Options{})
			snap, _ := tbl1.Head(ctx)
			out := filepath.Join(t.TempDir(), "exported")
			res, err := Export(ctx, tbl1, snap, out, ExportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantFiles := len(d.Videos[camTop]) + len(d.Videos[camWrist])
			if res.Episodes != 6 || res.Frames != 64 || res.Tasks != 3 || res.VideoFiles != wantFiles || res.PartialVideos != 0 {
				t.Errorf("export result %+v, want %d video files", res, wantFiles)
			}
			store2 := newStore(t)
			if _, err := importDir(t, out, store2, ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			tbl2, _ := table.Open(ctx, store2, table.Options{})
			a, b := tableContent(t, tbl1), tableContent(t, tbl2)
			if len(a) != len(b) {
				t.Fatalf("%d episodes, %d after the round trip", len(a), len(b))
			}
			for id, ca := range a {
				cb := b[id]
				if fmt.Sprint(ca.videos) != fmt.Sprint(cb.videos) {
					t.Errorf("%s videos %v, after the round trip %v", id, ca.videos, cb.videos)
				}
				if fmt.Sprint(ca.rows) != fmt.Sprint(cb.rows) {
					t.Errorf("%s rows differ after the round trip:\n%v\n%v", id, ca.rows[0], cb.rows[0])
				}
			}
			s1, _ := tbl1.LatestSchema(ctx)
			s2, _ := tbl2.LatestSchema(ctx)
			if fmt.Sprint(s1.Columns) != fmt.Sprint(s2.Columns) || s2.Properties[PropFeatures] != s1.Properties[PropFeatures] {
				t.Errorf("schema after the round trip:\n%v\n%v\n%s\n%s", s1.Columns, s2.Columns, s1.Properties[PropFeatures], s2.Properties[PropFeatures])
			}
		})
	}
}

// A table that did not come from LeRobot exports as a dataset LeRobot's
// layout accepts: the standard columns are made, the frame rate comes from
// the video, and the export imports again.
func TestExportPlainTable(t *testing.T) {
	ctx := context.Background()
	tbl, err := table.Create(ctx, newStore(t), table.Schema{Columns: []table.Column{
		{Name: "task", Type: "string"}, {Name: "reward", Type: "float64"}, {Name: "state", Type: "list<float32>"},
	}}, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var inputs []table.EpisodeInput
	for i, v := range []struct {
		file   string
		frames int
		task   string
	}{{"h264_bframes_gop30.mp4", 90, "stack"}, {"hevc.mp4", 60, "sort"}} {
		var b strings.Builder
		for k := range v.frames {
			fmt.Fprintf(&b, `{"task":%q,"reward":%d.5,"state":[%d,2.5]}`+"\n", v.task, k, i)
		}
		sc, err := table.ParseSidecar("rows.jsonl", []byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, table.EpisodeInput{Episode: fmt.Sprintf("ep%d", i),
			Videos: map[string]table.VideoFile{"": {Path: filepath.Join("../testdata/video", v.file)}}, Sidecar: sc})
	}
	snap, err := tbl.AddEpisodes(ctx, inputs, table.AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "exported")
	res, err := Export(ctx, tbl, snap, out, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Episodes != 2 || res.Frames != 150 || res.Tasks != 2 || res.VideoFiles != 2 || res.PartialVideos != 0 {
		t.Errorf("export %+v", res)
	}
	ds, err := Open(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Info.FPS != 30 || len(ds.Cameras) != 1 || ds.Cameras[0] != "video" || ds.Tasks[0] != "sort" || ds.Tasks[1] != "stack" {
		t.Errorf("exported info: fps %v cameras %v tasks %v", ds.Info.FPS, ds.Cameras, ds.Tasks)
	}
	store := newStore(t)
	if _, err := Import(ctx, ds, store, table.Options{}, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	again, _ := table.Open(ctx, store, table.Options{})
	content := tableContent(t, again)
	rows := content["episode_000001"].rows
	if len(rows) != 60 || rows[7]["task"] != "sort" || rows[7]["task_index"] != int64(0) || rows[7]["reward"] != 7.5 ||
		float32(rows[7]["timestamp"].(float64)) != float32(7.0/30) || rows[7]["frame_index"] != int64(7) || rows[7]["index"] != int64(97) {
		t.Errorf("episode 1 row 7 after export and import: %v", rows[7])
	}
}
