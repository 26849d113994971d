// Package lerobottest builds real LeRobot datasets for tests, in the exact
// layouts of codebase versions v2.0, v2.1 and v3.0: videos encoded by the
// ffmpeg command (H.264 or AV1) and, for v3.0, joined by the concat
// demuxer with stream copy as LeRobot does; frame rows, episode metadata
// and the task table written as Parquet with arrow-go; JSON and JSON Lines
// metadata as LeRobot writes them. Hooks let a test break one rule.
package lerobottest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/framefs/framefs/lerobot/v3schema"
	"github.com/framefs/framefs/videoidx"
)

// T is what building a dataset needs of a test (testing.TB has it); the
// mkdataset command provides it too.
type T interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Camera is one video feature.
type Camera struct {
	Key string
	// Codec is the ffmpeg encoder: libx264 or libsvtav1.
	Codec         string
	Width, Height int
}

// Row is one frame row's standard columns, which hooks may change.
type Row struct {
	Timestamp    float32
	FrameIndex   int64
	EpisodeIndex int64
	Index        int64
	TaskIndex    int64
}

// EpisodeMeta is one episode's metadata row, which hooks may change.
type EpisodeMeta struct {
	Index    int64
	Tasks    []string
	Length   int64
	From, To int64 // v3.0 dataset_from_index, dataset_to_index
	// Video per camera: v3.0 file address and time range.
	VideoChunk, VideoFile map[string]int64
	FromTS, ToTS          map[string]float64
	dataFile              int
}

// Spec describes a dataset to build.
type Spec struct {
	// Version is v2.0, v2.1 or v3.0.
	Version string
	FPS     int
	Cameras []Camera
	// Lengths are the episodes' frame counts.
	Lengths []int
	// Tasks are the task texts; EpisodeTasks[i] lists episode i's tasks
	// as indexes into Tasks (default: task i % len(Tasks)). Row k of an
	// episode with several tasks uses them in turn, a third each.
	Tasks        []string
	EpisodeTasks [][]int
	// GOP is the keyframe interval of the videos (default 5).
	GOP int
	// EpisodesPerVideoFile (v3.0) groups consecutive episodes into one
	// video file per camera key (default: all in one file). Cameras may
	// group differently.
	EpisodesPerVideoFile map[string]int
	// EpisodesPerDataFile (v3.0) groups episodes into data files
	// (default: all in one).
	EpisodesPerDataFile int
	// TaskIndexName (v3.0) is the name of the task text column in
	// tasks.parquet: "task" (a named pandas index, the default) or
	// "__index_level_0__" (an unnamed one).
	TaskIndexName string
	// Hooks break rules: each sees a value just before it is written.
	MutateInfo    func(info map[string]any)
	MutateRow     func(episode, k int, r *Row)
	MutateEpisode func(m *EpisodeMeta)
	// VideoFrames, when set, gives the number of frames to encode for
	// an episode's video instead of its length.
	VideoFrames func(camera string, episode int) int
	// NullReward, when set, writes a null next.reward where it says so.
	NullReward func(episode, k int) bool
	// DistinctVideos, when set, makes episode i reuse the pictures of
	// episode i % DistinctVideos (equal lengths assumed), so that large
	// benchmark datasets need few encodes.
	DistinctVideos int
}

// Dataset is a built dataset.
type Dataset struct {
	Dir  string
	Spec Spec
	// Videos maps a camera key to its video files (dataset-relative) in
	// order; EpisodeFile[cam][i] is episode i's file and EpisodeFirst
	// [cam][i] its first frame in it.
	Videos       map[string][]string
	EpisodeFile  map[string][]string
	EpisodeFirst map[string][]int64
	// DataFiles are the Parquet files of frame rows.
	DataFiles []string
}

// State and action values of row k of episode ep: distinct everywhere so
// that a row in the wrong place shows.
func State(ep, k, j int) float32  { return float32(ep*1000+k) + float32(j)*0.25 }
func Action(ep, k, j int) float32 { return -float32(ep*1000+k) - float32(j)*0.5 }

// Effort is an int16 feature (stored widened to int32).
func Effort(ep, k, j int) int16 { return int16((ep*37+k*3+j)%600 - 300) }

// TaskOf returns the task index (into Spec.Tasks) of row k of episode ep.
func (s *Spec) TaskOf(ep, k int) int {
	tasks := s.episodeTasks(ep)
	part := k * len(tasks) / s.Lengths[ep]
	return tasks[part]
}

func (s *Spec) episodeTasks(ep int) []int {
	if ep < len(s.EpisodeTasks) && len(s.EpisodeTasks[ep]) > 0 {
		return s.EpisodeTasks[ep]
	}
	return []int{ep % len(s.Tasks)}
}

func (s *Spec) withDefaults() Spec {
	out := *s
	if out.GOP == 0 {
		out.GOP = 5
	}
	if out.TaskIndexName == "" {
		out.TaskIndexName = "task"
	}
	if out.EpisodesPerDataFile == 0 {
		out.EpisodesPerDataFile = len(out.Lengths)
	}
	return out
}

// Build writes the dataset into dir (created).
func Build(t T, dir string, spec Spec) *Dataset {
	t.Helper()
	s := spec.withDefaults()
	d := &Dataset{Dir: dir, Spec: s, Videos: map[string][]string{}, EpisodeFile: map[string][]string{}, EpisodeFirst: map[string][]int64{}}
	must(t, os.MkdirAll(filepath.Join(dir, "meta"), 0o755))
	v3 := s.Version == "v3.0"
	metas := make([]*EpisodeMeta, len(s.Lengths))
	var index int64
	for i, n := range s.Lengths {
		m := &EpisodeMeta{Index: int64(i), Length: int64(n), From: index, To: index + int64(n),
			VideoChunk: map[string]int64{}, VideoFile: map[string]int64{}, FromTS: map[string]float64{}, ToTS: map[string]float64{}}
		for _, ti := range s.episodeTasks(i) {
			m.Tasks = append(m.Tasks, s.Tasks[ti])
		}
		index += int64(n)
		metas[i] = m
	}
	for _, cam := range s.Cameras {
		d.buildVideos(t, cam, metas)
	}
	for _, m := range metas {
		if s.MutateEpisode != nil {
			s.MutateEpisode(m)
		}
	}
	d.writeData(t, metas)
	if v3 {
		d.writeEpisodesV3(t, metas)
		d.writeTasksV3(t)
	} else {
		d.writeLegacyMeta(t, metas)
	}
	d.writeInfo(t, index)
	return d
}

// buildVideos encodes one camera's episode videos and lays them out: one
// file per episode (v2.x) or concatenated groups (v3.0).
func (d *Dataset) buildVideos(t T, cam Camera, metas []*EpisodeMeta) {
	s := &d.Spec
	episodes := make([]string, len(metas))
	for i := range metas {
		frames := s.Lengths[i]
		if s.VideoFrames != nil {
			frames = s.VideoFrames(cam.Key, i)
		}
		look := i
		if s.DistinctVideos > 0 {
			look = i % s.DistinctVideos
		}
		episodes[i] = encodeEpisode(t, cam, s.FPS, s.GOP, look, frames)
	}
	if s.Version != "v3.0" {
		for i := range metas {
			rel := fmt.Sprintf("videos/chunk-%03d/%s/episode_%06d.mp4", i/1000, cam.Key, i)
			copyFile(t, episodes[i], filepath.Join(d.Dir, rel))
			d.Videos[cam.Key] = append(d.Videos[cam.Key], rel)
			d.EpisodeFile[cam.Key] = append(d.EpisodeFile[cam.Key], rel)
			d.EpisodeFirst[cam.Key] = append(d.EpisodeFirst[cam.Key], 0)
		}
		return
	}
	per := s.EpisodesPerVideoFile[cam.Key]
	if per == 0 {
		per = len(metas)
	}
	for start, file := 0, 0; start < len(metas); start, file = start+per, file+1 {
		end := min(start+per, len(metas))
		rel := fmt.Sprintf("videos/%s/chunk-000/file-%03d.mp4", cam.Key, file)
		out := filepath.Join(d.Dir, rel)
		must(t, os.MkdirAll(filepath.Dir(out), 0o755))
		if end-start == 1 {
			copyFile(t, episodes[start], out) // LeRobot moves a file's first episode in as is
		} else {
			copyFile(t, concat(t, episodes[start:end]), out)
		}
		d.Videos[cam.Key] = append(d.Videos[cam.Key], rel)
		var ts float64 // a running float sum of durations, as LeRobot keeps it
		var first int64
		for i := start; i < end; i++ {
			dur := duration(t, episodes[i])
			metas[i].VideoChunk[cam.Key], metas[i].VideoFile[cam.Key] = 0, int64(file)
			metas[i].FromTS[cam.Key], metas[i].ToTS[cam.Key] = ts, ts+dur
			ts += dur
			d.EpisodeFile[cam.Key] = append(d.EpisodeFile[cam.Key], rel)
			d.EpisodeFirst[cam.Key] = append(d.EpisodeFirst[cam.Key], first)
			first += int64(s.Lengths[i])
		}
	}
}

// The episode videos of a test process, by encoding parameters: datasets
// of one test binary share their encodes.
var (
	cacheMu  sync.Mutex
	cacheDir string
	cached   = map[string]string{}
)

// RemoveCache deletes the encoded videos kept for this process (call it
// from TestMain after the tests).
func RemoveCache() {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if cacheDir != "" {
		os.RemoveAll(cacheDir)
	}
	cacheDir, cached = "", map[string]string{}
}

// encodeEpisode encodes one episode's video: a test pattern tinted per
// episode and camera, frames exactly.
func encodeEpisode(t T, cam Camera, fps, gop, ep, frames int) string {
	args := []string{"-v", "error", "-y", "-f", "lavfi", "-i",
		fmt.Sprintf("testsrc2=size=%dx%d:rate=%d,hue=h=%d", cam.Width, cam.Height, fps, (ep*47+len(cam.Key)*13)%360),
		"-frames:v", strconv.Itoa(frames), "-c:v", cam.Codec, "-g", strconv.Itoa(gop), "-pix_fmt", "yuv420p"}
	switch cam.Codec {
	case "libx264":
		args = append(args, "-bf", "2", "-preset", "veryfast")
	case "libsvtav1":
		args = append(args, "-preset", "12")
	}
	sum := sha256.Sum256([]byte(strings.Join(args, " ")))
	key := hex.EncodeToString(sum[:8])
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if p, ok := cached[key]; ok {
		return p
	}
	if cacheDir == "" {
		dir, err := os.MkdirTemp("", "lerobottest-videos-")
		must(t, err)
		cacheDir = dir
	}
	out := filepath.Join(cacheDir, key+".mp4")
	run(t, "ffmpeg", append(args, out)...)
	cached[key] = out
	return out
}

// concat joins episode videos with the concat demuxer and stream copy,
// the metadata moved to the front, as LeRobot's concatenate_video_files
// does; joins are kept for the process like encodes.
func concat(t T, files []string) string {
	sum := sha256.Sum256([]byte("concat " + strings.Join(files, " ")))
	key := hex.EncodeToString(sum[:8])
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if p, ok := cached[key]; ok {
		return p
	}
	out := filepath.Join(cacheDir, key+".mp4") // the inputs made cacheDir
	list := out + ".ffconcat"
	var b strings.Builder
	b.WriteString("ffconcat version 1.0\n")
	for _, f := range files {
		fmt.Fprintf(&b, "file '%s'\n", f)
	}
	must(t, os.WriteFile(list, []byte(b.String()), 0o644))
	run(t, "ffmpeg", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i", list, "-c", "copy", "-movflags", "faststart", out)
	os.Remove(list)
	cached[key] = out
	return out
}

// duration is the video stream's duration in seconds as its MP4 sample
// table gives it (what LeRobot adds up into from_timestamp/to_timestamp).
func duration(t T, file string) float64 {
	f, err := os.Open(file)
	must(t, err)
	defer f.Close()
	st, err := f.Stat()
	must(t, err)
	ix, err := videoidx.ReadMP4(context.Background(), f, st.Size(), videoidx.BestStream)
	must(t, err)
	return ix.Seconds(ix.Duration())
}

func run(t T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func must(t T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t T, from, to string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(to), 0o755))
	in, err := os.Open(from)
	must(t, err)
	defer in.Close()
	out, err := os.Create(to)
	must(t, err)
	_, err = io.Copy(out, in)
	must(t, err)
	must(t, out.Close())
}

// rowSchema is the Arrow schema of the frame rows, in info.json's
// feature order (videos are not rows).
var rowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "observation.state", Type: arrow.FixedSizeListOf(6, arrow.PrimitiveTypes.Float32), Nullable: true},
	{Name: "action", Type: arrow.FixedSizeListOf(6, arrow.PrimitiveTypes.Float32), Nullable: true},
	{Name: "observation.effort", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int16), Nullable: true},
	{Name: "next.reward", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "next.done", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "timestamp", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "frame_index", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "index", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "task_index", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// Reward and Done are the scalar features of row k of episode ep.
func Reward(ep, k int) float32 { return float32(k) / float32(ep+1) }
func Done(ep, k, n int) bool   { return k == n-1 }

// writeData writes the frame rows: one file per episode (v2.x) or
// EpisodesPerDataFile episodes per file, a row group per episode (v3.0).
func (d *Dataset) writeData(t T, metas []*EpisodeMeta) {
	s := &d.Spec
	per := 1
	if s.Version == "v3.0" {
		per = s.EpisodesPerDataFile
	}
	var index int64
	for start, file := 0, 0; start < len(metas); start, file = start+per, file+1 {
		end := min(start+per, len(metas))
		rel := fmt.Sprintf("data/chunk-%03d/episode_%06d.parquet", start/1000, start)
		if s.Version == "v3.0" {
			rel = fmt.Sprintf("data/chunk-000/file-%03d.parquet", file)
		}
		for i := start; i < end; i++ {
			metas[i].dataFile = file
		}
		d.DataFiles = append(d.DataFiles, rel)
		var records []arrow.RecordBatch
		for ep := start; ep < end; ep++ {
			b := array.NewRecordBuilder(memory.DefaultAllocator, rowSchema)
			n := s.Lengths[ep]
			for k := 0; k < n; k++ {
				r := Row{Timestamp: float32(k) / float32(s.FPS), FrameIndex: int64(k), EpisodeIndex: int64(ep), Index: index, TaskIndex: int64(s.TaskOf(ep, k))}
				index++
				if s.MutateRow != nil {
					s.MutateRow(ep, k, &r)
				}
				for c, vals := range [][]float32{stateRow(ep, k), actionRow(ep, k)} {
					lb := b.Field(c).(*array.FixedSizeListBuilder)
					lb.Append(true)
					lb.ValueBuilder().(*array.Float32Builder).AppendValues(vals, nil)
				}
				eb := b.Field(2).(*array.FixedSizeListBuilder)
				eb.Append(true)
				eb.ValueBuilder().(*array.Int16Builder).AppendValues([]int16{Effort(ep, k, 0), Effort(ep, k, 1)}, nil)
				if s.NullReward != nil && s.NullReward(ep, k) {
					b.Field(3).AppendNull()
				} else {
					b.Field(3).(*array.Float32Builder).Append(Reward(ep, k))
				}
				b.Field(4).(*array.BooleanBuilder).Append(Done(ep, k, n))
				b.Field(5).(*array.Float32Builder).Append(r.Timestamp)
				b.Field(6).(*array.Int64Builder).Append(r.FrameIndex)
				b.Field(7).(*array.Int64Builder).Append(r.EpisodeIndex)
				b.Field(8).(*array.Int64Builder).Append(r.Index)
				b.Field(9).(*array.Int64Builder).Append(r.TaskIndex)
			}
			records = append(records, b.NewRecordBatch())
			b.Release()
		}
		writeParquet(t, filepath.Join(d.Dir, rel), rowSchema, records)
	}
}

func stateRow(ep, k int) []float32 {
	out := make([]float32, 6)
	for j := range out {
		out[j] = State(ep, k, j)
	}
	return out
}

func actionRow(ep, k int) []float32 {
	out := make([]float32, 6)
	for j := range out {
		out[j] = Action(ep, k, j)
	}
	return out
}

// writeParquet writes records (a row group each) with the Arrow schema
// stored, as pyarrow does.
func writeParquet(t T, path string, sc *arrow.Schema, records []arrow.RecordBatch) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	f, err := os.Create(path)
	must(t, err)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(1<<30))
	w, err := pqarrow.NewFileWriter(sc, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	must(t, err)
	for _, r := range records {
		must(t, w.Write(r))
		r.Release()
	}
	must(t, w.Close())
}

func (d *Dataset) writeEpisodesV3(t T, metas []*EpisodeMeta) {
	var cameras []string
	for _, cam := range d.Spec.Cameras {
		cameras = append(cameras, cam.Key)
	}
	fields := append(v3schema.EpisodeColumns(cameras),
		arrow.Field{Name: "stats/action/mean", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true})
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, m := range metas {
		b.Field(0).(*array.Int64Builder).Append(m.Index)
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).AppendValues(m.Tasks, nil)
		ints := []int64{m.Length, 0, int64(m.dataFile), m.From, m.To}
		for c, v := range ints {
			b.Field(2 + c).(*array.Int64Builder).Append(v)
		}
		c := 7
		for _, cam := range d.Spec.Cameras {
			b.Field(c).(*array.Int64Builder).Append(m.VideoChunk[cam.Key])
			b.Field(c + 1).(*array.Int64Builder).Append(m.VideoFile[cam.Key])
			b.Field(c + 2).(*array.Float64Builder).Append(m.FromTS[cam.Key])
			b.Field(c + 3).(*array.Float64Builder).Append(m.ToTS[cam.Key])
			c += 4
		}
		b.Field(c).(*array.Int64Builder).Append(0)
		b.Field(c + 1).(*array.Int64Builder).Append(0)
		sb := b.Field(c + 2).(*array.ListBuilder)
		sb.Append(true)
		sb.ValueBuilder().(*array.Float64Builder).AppendValues([]float64{0.5, -0.5}, nil)
	}
	writeParquet(t, filepath.Join(d.Dir, "meta/episodes/chunk-000/file-000.parquet"), sc, []arrow.RecordBatch{b.NewRecordBatch()})
}

// writeTasksV3 writes meta/tasks.parquet as pandas' to_parquet writes a
// frame indexed by the task text: the index as a column, named in the
// "pandas" metadata.
func (d *Dataset) writeTasksV3(t T) {
	name := d.Spec.TaskIndexName
	meta := map[string]any{
		"index_columns":  []string{name},
		"column_indexes": []map[string]any{{"name": nil, "field_name": nil, "pandas_type": "unicode", "numpy_type": "object", "metadata": map[string]string{"encoding": "UTF-8"}}},
		"columns": []map[string]any{
			{"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": nil},
			{"name": map[bool]any{true: "task", false: nil}[name == "task"], "field_name": name, "pandas_type": "unicode", "numpy_type": "object", "metadata": nil},
		},
		"creator":        map[string]string{"library": "pyarrow", "version": "17.0.0"},
		"pandas_version": "2.2.2",
	}
	js, _ := json.Marshal(meta)
	md := arrow.NewMetadata([]string{"pandas"}, []string{string(js)})
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "task_index", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: name, Type: arrow.BinaryTypes.String, Nullable: true},
	}, &md)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i, task := range d.Spec.Tasks {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(task)
	}
	writeParquet(t, filepath.Join(d.Dir, "meta/tasks.parquet"), sc, []arrow.RecordBatch{b.NewRecordBatch()})
}

func (d *Dataset) writeLegacyMeta(t T, metas []*EpisodeMeta) {
	var eps, tasks, stats strings.Builder
	for _, m := range metas {
		line, _ := json.Marshal(map[string]any{"episode_index": m.Index, "tasks": m.Tasks, "length": m.Length})
		eps.Write(append(line, '\n'))
		st, _ := json.Marshal(map[string]any{"episode_index": m.Index, "stats": map[string]any{
			"action": map[string]any{"min": []float64{-1}, "max": []float64{1}, "mean": []float64{0}, "std": []float64{1}, "count": []int64{m.Length}}}})
		stats.Write(append(st, '\n'))
	}
	for i, task := range d.Spec.Tasks {
		line, _ := json.Marshal(map[string]any{"task_index": i, "task": task})
		tasks.Write(append(line, '\n'))
	}
	must(t, os.WriteFile(filepath.Join(d.Dir, "meta/episodes.jsonl"), []byte(eps.String()), 0o644))
	must(t, os.WriteFile(filepath.Join(d.Dir, "meta/tasks.jsonl"), []byte(tasks.String()), 0o644))
	if d.Spec.Version == "v2.1" {
		must(t, os.WriteFile(filepath.Join(d.Dir, "meta/episodes_stats.jsonl"), []byte(stats.String()), 0o644))
	} else {
		must(t, os.WriteFile(filepath.Join(d.Dir, "meta/stats.json"), []byte(`{"action": {"min": [-1], "max": [1], "mean": [0], "std": [1]}}`+"\n"), 0o644))
	}
}

func (d *Dataset) writeInfo(t T, totalFrames int64) {
	s := &d.Spec
	type kv struct {
		k string
		v any
	}
	feats := []kv{
		{"observation.state", map[string]any{"dtype": "float32", "shape": []int{6}, "names": []string{"x", "y", "z", "roll", "pitch", "yaw"}}},
		{"action", map[string]any{"dtype": "float32", "shape": []int{6}, "names": map[string]any{"motors": []string{"m0", "m1", "m2", "m3", "m4", "m5"}}}},
		{"observation.effort", map[string]any{"dtype": "int16", "shape": []int{2}, "names": nil}},
		{"next.reward", map[string]any{"dtype": "float32", "shape": []int{1}, "names": nil}},
		{"next.done", map[string]any{"dtype": "bool", "shape": []int{1}, "names": nil}},
	}
	for _, cam := range s.Cameras {
		codec := map[string]string{"libx264": "h264", "libsvtav1": "av1"}[cam.Codec]
		feats = append(feats, kv{cam.Key, map[string]any{"dtype": "video", "shape": []int{cam.Height, cam.Width, 3}, "names": []string{"height", "width", "channels"},
			"info": map[string]any{"video.height": cam.Height, "video.width": cam.Width, "video.codec": codec, "video.pix_fmt": "yuv420p",
				"video.is_depth_map": false, "video.fps": s.FPS, "video.channels": 3, "has_audio": false}}})
	}
	for _, std := range []struct{ name, dtype string }{{"timestamp", "float32"}, {"frame_index", "int64"}, {"episode_index", "int64"}, {"index", "int64"}, {"task_index", "int64"}} {
		feats = append(feats, kv{std.name, map[string]any{"dtype": std.dtype, "shape": []int{1}, "names": nil}})
	}
	info := map[string]any{
		"codebase_version": s.Version,
		"robot_type":       "so100",
		"total_episodes":   len(s.Lengths),
		"total_frames":     totalFrames,
		"total_tasks":      len(s.Tasks),
		"chunks_size":      1000,
		"fps":              s.FPS,
		"splits":           map[string]string{"train": fmt.Sprintf("0:%d", len(s.Lengths))},
	}
	if s.Version == "v3.0" {
		info["data_files_size_in_mb"] = 100
		info["video_files_size_in_mb"] = 200
		info["data_path"] = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
		info["video_path"] = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
	} else {
		info["total_videos"] = len(s.Lengths) * len(s.Cameras)
		info["total_chunks"] = 1
		info["data_path"] = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
		info["video_path"] = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
	}
	if s.MutateInfo != nil {
		s.MutateInfo(info)
	}
	// features keeps its order: marshal it by hand.
	var fb strings.Builder
	fb.WriteString("{")
	for i, f := range feats {
		if i > 0 {
			fb.WriteString(", ")
		}
		k, _ := json.Marshal(f.k)
		v, _ := json.Marshal(f.v)
		fmt.Fprintf(&fb, "%s: %s", k, v)
	}
	fb.WriteString("}")
	if _, ok := info["features"]; !ok {
		info["features"] = json.RawMessage(fb.String())
	}
	js, err := json.MarshalIndent(info, "", "    ")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(d.Dir, "meta/info.json"), js, 0o644))
}

// Frames decodes frames [first, first+n) of a width x height video file
// with the ffmpeg command, as raw RGB24 pictures: the reference the mount
// is checked against.
func Frames(ctx context.Context, file string, first, n, width, height int) ([][]byte, error) {
	out, err := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-i", file, "-vf", fmt.Sprintf("select=between(n\\,%d\\,%d)", first, first+n-1),
		"-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", "-").Output()
	if err != nil {
		return nil, fmt.Errorf("ffmpeg %s: %w", file, err)
	}
	size := width * height * 3
	if len(out) != n*size {
		return nil, fmt.Errorf("ffmpeg %s: %d bytes for %d %dx%d frames", file, len(out), n, width, height)
	}
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = out[i*size : (i+1)*size]
	}
	return frames, nil
}

// Camera keys of Standard.
const (
	CamTop   = "observation.images.top"
	CamWrist = "observation.images.wrist"
)

// Standard is the dataset most tests use: 6 episodes of different lengths
// (64 frames), 3 tasks (episode 2 has two), an AV1 camera (64x64) and an
// H.264 one with B-frames (64x48), at 30 fps. In v3.0 the cameras group
// episodes into files differently (4 and 3 per file), so episode 3 is in
// the middle of one camera's first file and starts the other's second,
// and the rows are in two data files of 4 and 2 episodes.
func Standard(version string) Spec {
	return Spec{
		Version: version, FPS: 30,
		Cameras: []Camera{
			{Key: CamTop, Codec: "libsvtav1", Width: 64, Height: 64},
			{Key: CamWrist, Codec: "libx264", Width: 64, Height: 48},
		},
		Lengths:              []int{12, 9, 15, 11, 7, 10},
		Tasks:                []string{"pick the cube", "place the cube", "push the button"},
		EpisodeTasks:         [][]int{{0}, {1}, {0, 2}, {2}, {1}, {0}},
		EpisodesPerVideoFile: map[string]int{CamTop: 4, CamWrist: 3},
		EpisodesPerDataFile:  4,
	}
}

// FileSHA256 is the hex SHA-256 of a file: what a table stores as the
// hash of a payload imported from it.
func FileSHA256(t T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	must(t, err)
	return hex.EncodeToString(h.Sum(nil))
}
