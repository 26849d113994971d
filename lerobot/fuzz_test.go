package lerobot

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
	f.Fuzz(func(t *testing.T, data []byte) {
		ps := newProblems("fuzz")
		info := parseInfo(data, ps)
		if info == nil || ps.any() {
			return
		}
		checkFeatures(info, ps)
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
		tbl, err := readParquet(context.Background(), path, nil)
		if err != nil {
			return
		}
		defer tbl.release()
		ps := newProblems("fuzz")
		episodesFromTable(tbl, "f.parquet", []string{"cam"}, ps)
		taskTextColumn(tbl)
		for _, a := range tbl.cols {
			firstNull(a)
			for i := 0; i < a.Len(); i++ {
				stringsAt(a, i)
				intAt(a, i)
				floatAt(a, i)
			}
		}
		scanRuns(tbl)
	})
}
