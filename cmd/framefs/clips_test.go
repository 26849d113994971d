package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestClipCommands: ls --window lists and counts windows, view create
// --window reports its clips (none is not an error), view list shows the
// window, and bad windows are refused with nothing created.
func TestClipCommands(t *testing.T) {
	tbl := filepath.Join(t.TempDir(), "robot")
	mustRun(t, "create", tbl)
	mustRun(t, "ingest", tbl, "../../testdata/video/h264_faststart.mp4")
	rows := 0
	if err := json.Unmarshal([]byte(strings.Fields(mustRunString(t, "ls", tbl))[4]), &rows); err != nil || rows < 20 {
		t.Fatalf("episode of %d frames (%v)", rows, err)
	}
	// Windows of 5 frames, every third frame (span 13), every 4 frames.
	want := (rows-13)/4 + 1
	if got := strings.TrimSpace(mustRunString(t, "ls", tbl, "--window", "5", "--frame-skip", "2", "--hop", "4", "--count")); got != itoa(want) {
		t.Errorf("ls --window --count: %s, want %d", got, want)
	}
	var listed struct {
		Count int64 `json:"count"`
		Clips []struct {
			Episode      string  `json:"episode"`
			Start        int64   `json:"start"`
			FrameIndices []int64 `json:"frame_indices"`
		} `json:"clips"`
	}
	if err := json.Unmarshal(mustRun(t, "ls", tbl, "--window", "5", "--frame-skip", "2", "--hop", "4", "--json"), &listed); err != nil {
		t.Fatal(err)
	}
	if listed.Count != int64(want) || len(listed.Clips) != want || listed.Clips[1].Start != 4 ||
		jsonString(t, listed.Clips[1].FrameIndices) != "[4,7,10,13,16]" {
		t.Errorf("ls --window --json: %+v", listed)
	}
	// Without --hop, clips sit side by side.
	if got := strings.TrimSpace(mustRunString(t, "ls", tbl, "--window", "10", "--count")); got != itoa(rows/10) {
		t.Errorf("ls --window 10 --count: %s, want %d", got, rows/10)
	}
	out := mustRunString(t, "view", "create", tbl, "c5", "--window", "5", "--frame-skip", "2", "--hop", "4")
	if !strings.Contains(out, "clip view, window=5,skip=2,hop=4: "+itoa(want)+" clips of 5 frames in 1 episodes") {
		t.Errorf("view create: %s", out)
	}
	if out := mustRunString(t, "view", "create", tbl, "none", "--window", "10000"); !strings.Contains(out, ": 0 clips") {
		t.Errorf("view create of a window longer than the episode: %s", out)
	}
	if out := mustRunString(t, "view", "list", tbl); !strings.Contains(out, "window=5,skip=2,hop=4") {
		t.Errorf("view list: %s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"view", "create", tbl, "bad", "--window", "0"}, "window length 0"},
		{[]string{"view", "create", tbl, "bad", "--window", "3", "--frame-skip", "-1"}, "frame skip -1"},
		{[]string{"view", "create", tbl, "bad", "--window", "3", "--hop", "-1"}, "hop -1"},
		{[]string{"view", "create", tbl, "bad", "--window", "1000000000"}, "over the limit"},
		{[]string{"view", "create", tbl, "bad", "--where", "TRUE", "--frame-skip", "2"}, "--window N too"},
		{[]string{"ls", tbl, "--window", "-4"}, "window length -4"},
	} {
		_, err := runCLI(context.Background(), tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("framefs %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	if out := mustRunString(t, "view", "list", tbl); strings.Contains(out, "bad") {
		t.Errorf("a refused view was created: %s", out)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFrameColumnCommands: frame, the row's position, in ls --where, in a
// clip view's filter and group-by, and as the key of ls's JSON rows (with
// the episode column, the names filters use).
func TestFrameColumnCommands(t *testing.T) {
	tbl := filepath.Join(t.TempDir(), "robot")
	mustRun(t, "create", tbl)
	mustRun(t, "ingest", tbl, "../../testdata/video/h264_faststart.mp4", "--episode", "ep")
	var rows struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(mustRun(t, "ls", tbl, "ep", "--json"), &rows); err != nil || len(rows.Rows) < 20 ||
		rows.Rows[7]["frame"] != 7.0 || rows.Rows[7]["episode_id"] != "ep" || rows.Rows[7]["ordinal"] != nil {
		t.Fatalf("ls TABLE EPISODE --json: %v (%v)", rows.Rows[:min(len(rows.Rows), 8)], err)
	}
	var where struct {
		Frames []map[string]any `json:"frames"`
	}
	if err := json.Unmarshal(mustRun(t, "ls", tbl, "--where", "frame % 5 = 0 AND frame < 20", "--json"), &where); err != nil {
		t.Fatal(err)
	}
	if got := jsonString(t, where.Frames); got != `[{"episode_id":"ep","frame":0},{"episode_id":"ep","frame":5},{"episode_id":"ep","frame":10},{"episode_id":"ep","frame":15}]` {
		t.Errorf("ls --where frame --json: %s", got)
	}
	// Clips over every other frame, two apart, start at even frames only.
	var listed struct {
		Clips []struct {
			FrameIndices []int64 `json:"frame_indices"`
		} `json:"clips"`
	}
	if err := json.Unmarshal(mustRun(t, "ls", tbl, "--where", "frame % 2 = 0", "--window", "3", "--frame-skip", "1", "--hop", "1", "--json"), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed.Clips) == 0 || jsonString(t, listed.Clips[1].FrameIndices) != "[2,4,6]" {
		t.Errorf("ls --where frame --window: %+v", listed.Clips)
	}
	out := mustRunString(t, "view", "create", tbl, "halves", "--where", "frame < 4", "--group-by", "frame", "--window", "1")
	if !strings.Contains(out, ": 4 clips of 1 frames in 1 episodes") {
		t.Errorf("view create --group-by frame: %s", out)
	}
}
