package lerobot

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/framefs/framefs/table"
)

// FuzzInfo feeds arbitrary bytes to the info.json parser and the path
// templates it names: datasets arrive from users (a folder dropped into a
// mount's ingest/), so bad bytes must give problems, never a panic.
func FuzzInfo(f *testing.F) {
	f.Add([]byte(`{"codebase_version": "v3.0", "fps": 30, "total_episodes": 2, "total_frames": 20, "chunks_size": 1000,
		"data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
		"video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
		"features": {"observation.images.top": {"dtype": "video", "shape": [64, 64, 3]}, "timestamp": {"dtype": "float32", "shape": [1]}}}`))
	f.Add([]byte(`{"codebase_version": "v2.1", "fps": 10.5, "total_episodes": 1, "total_frames": 5, "chunks_size": 2,
		"data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet", "video_path": null,
		"features": {"action": {"dtype": "int16", "shape": [2], "names": null}}}`))
	f.Add([]byte(`{"codebase_version": "v2.1", "fps": 30, "total_episodes": 1, "total_frames": 5, "chunks_size": 2, "robot_type": "so\xff",
		"data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet", "video_path": null,
		"features": {"_hidden": {"dtype": "int16", "shape": [2]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps := newProblems("fuzz")
		info := parseInfo(data, ps)
		if info == nil || ps.any() {
			return
		}
		if !utf8.Valid(info.RobotType) {
			t.Fatalf("robot_type %q is not UTF-8 and was accepted", info.RobotType)
		}
		checkFeatures(info, ps)
		for _, feat := range info.Features {
			if err := table.CheckColumnName("feature", feat.Key); err != nil && !ps.any() {
				t.Fatalf("feature %q cannot be a column, but no problem was found: %v", feat.Key, err)
			}
		}
		for _, fields := range [][]string{v2DataFields, v2VideoFields, v3DataFields, v3VideoFields} {
			for _, raw := range []string{info.DataPath, info.VideoPath} {
				tmpl, err := parseTemplate(raw, fields...)
				if err != nil {
					continue
				}
				tmpl.format(templateValues{ints: map[string]int64{"chunk_index": 1, "file_index": 2, "episode_chunk": 0, "episode_index": 7},
					text: map[string]string{"video_key": "cam"}})
			}
		}
	})
}

// FuzzParquet feeds arbitrary bytes, as a Parquet file, to the readers of
// frame rows, episode metadata and task tables.
func FuzzParquet(f *testing.F) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "tasks", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "task", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "state", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.Int64Builder).Append(3)
	lb := b.Field(1).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.StringBuilder).Append("pick")
	b.Field(2).(*array.StringBuilder).Append("pick")
	fb := b.Field(3).(*array.FixedSizeListBuilder)
	fb.Append(true)
	fb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{1, 2}, nil)
	rec := b.NewRecordBatch()
	dir := f.TempDir()
	if err := writeParquetFile(dir, "seed.parquet", sc, rec); err != nil {
		f.Fatal(err)
	}
	seed, err := os.ReadFile(filepath.Join(dir, "seed.parquet"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add(bytes.Replace(seed, []byte("pick"), []byte("\xff\xfe\x00\x01"), -1))
	// One file per fuzzing process, rewritten for every input.
	path := filepath.Join(dir, fmt.Sprintf("input-%d.parquet", os.Getpid()))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := parquetFooter(path); err != nil {
			return
		}
		tbl, err := readParquet(context.Background(), path, nil, 0)
		if err != nil {
			return
		}
		defer tbl.release()
		ps := newProblems("fuzz")
		episodesFromTable(tbl, "f.parquet", []string{"cam"}, ps)
		taskTextColumn(tbl)
		for name, a := range tbl.cols {
			firstNull(a)
			if row, count := firstMisshapen(a, Column{Name: name, list: true, length: 2}); (row >= 0) != (count > 0) {
				t.Fatalf("column %s: first misshapen row %d of %d", name, row, count)
			}
			for i := 0; i < a.Len(); i++ {
				stringsAt(a, i)
				intAt(a, i)
				floatAt(a, i)
			}
		}
		scanRuns(tbl)
	})
}

// FuzzJSONLines feeds arbitrary bytes to the readers of v2.x's
// meta/episodes.jsonl and meta/tasks.jsonl: bad lines give problems on
// their line, never a panic, and what the readers return comes from
// lines that hold every required field.
func FuzzJSONLines(f *testing.F) {
	f.Add([]byte(`{"episode_index": 0, "tasks": ["pick"], "length": 12}` + "\n" + `{"task_index": 0, "task": "pick"}` + "\n"))
	f.Add([]byte(`{"episode_index": 1, "length": 3}` + "\n\n  \n" + `{"task_index": 1, "task": "place", "extra": [1, 2]}`))
	f.Add([]byte("{\"episode_index\": null}\n{\"task_index\": 2, \"task\": \"\xff\"}\n[]\n"))
	f.Add([]byte(strings.Repeat("{", 100) + "\n"))
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "meta"), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, rel := range []string{legacyEpisodes, legacyTasks} {
			if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		lines := int64(bytes.Count(data, []byte("\n")) + 1)
		ps := newProblems("fuzz")
		for _, m := range readLegacyEpisodes(dir, ps) {
			if m.row < 0 || m.row >= lines || m.file != legacyEpisodes {
				t.Fatalf("episode from line %d of %s; the file has %d lines", m.row, m.file, lines)
			}
		}
		readLegacyTasks(dir, ps)
		for _, p := range ps.list {
			if p.File != legacyEpisodes && p.File != legacyTasks || p.Row >= lines {
				t.Fatalf("problem at %s line %d; the file has %d lines", p.File, p.Row, lines)
			}
		}
	})
}
