package lerobot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/framefs/framefs/lerobot/v3schema"
	"github.com/framefs/framefs/table"
)

// ExportOptions tune Export.
type ExportOptions struct {
	// DataFileFrames bounds the rows of one data file (default 500,000).
	DataFileFrames int64
	// Progress, when set, is told after each episode is written.
	Progress func(step string, done, total int)
}

// ExportResult sums up an export.
type ExportResult struct {
	Dir        string `json:"dir"`
	Snapshot   int64  `json:"snapshot"`
	Episodes   int    `json:"episodes"`
	Frames     int64  `json:"frames"`
	Tasks      int    `json:"tasks"`
	DataFiles  int    `json:"data_files"`
	VideoFiles int    `json:"video_files"`
	VideoBytes int64  `json:"video_bytes"`
	// PartialVideos counts video files whose frames the exported
	// episodes do not cover exactly (episodes that use part of a video):
	// LeRobot reads them, framefs' import refuses them.
	PartialVideos int `json:"partial_videos"`
}

// Export layout, as LeRobot v3.0 writes it.
const (
	exportChunksSize      = 1000
	exportDataFileMB      = 100
	exportVideoFileMB     = 200
	defaultExportFrames   = 500_000
	exportEpisodesParquet = "meta/episodes/chunk-000/file-000.parquet"
)

// outColumn is one column of the exported frame rows.
type outColumn struct {
	name  string
	dtype string
	// listLen is the fixed length of a list feature, 0 for a scalar.
	listLen int
	// source is the table column the values come from; "" means the
	// value is made (a standard column the table lacks).
	source string
	// feature is the info.json entry.
	feature json.RawMessage
}

// exporter holds the state of one export.
type exporter struct {
	ctx    context.Context
	tbl    *table.Table
	snap   *table.Snapshot
	schema *table.Schema
	tmp    string
	opts   ExportOptions
	fps    float64
	eps    []table.EpisodeEntry
	cols   []outColumn
	// videos: per camera, payload location -> file number
	videoFile map[string]map[string]int64
	// tasks: text -> new index, and the order of texts
	taskIndex map[string]int64
	taskTexts []string
	stats     map[string]*featureStats
	res       ExportResult
}

// Export writes the episodes of a snapshot as a LeRobot v3.0 dataset in
// dir (which must not exist or be empty): the stored videos copied byte
// for byte, one file per stored payload, episodes sharing a payload
// pointing into the same file from their own first frame; the rows in
// data files with one row group per episode; episodes numbered 0..N-1 in
// episode id order (episode_index and index rewritten to match), tasks
// numbered in the order of their task_index. Feature descriptions, fps
// and robot type come from the schema properties an import recorded, else
// from the columns and videos. The dataset is written beside dir and
// renamed into place, so an error leaves nothing at dir.
func Export(ctx context.Context, tbl *table.Table, snap *table.Snapshot, dir string, opts ExportOptions) (*ExportResult, error) {
	if opts.DataFileFrames <= 0 {
		opts.DataFileFrames = defaultExportFrames
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty: export into a new folder", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), ".export-"+filepath.Base(dir)+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	x := &exporter{ctx: ctx, tbl: tbl, snap: snap, tmp: tmp, opts: opts,
		videoFile: map[string]map[string]int64{}, taskIndex: map[string]int64{}, stats: map[string]*featureStats{}}
	x.res.Dir, x.res.Snapshot = dir, snap.ID
	if err := x.run(); err != nil {
		return nil, err
	}
	os.Remove(dir) // an empty folder given as the target
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return &x.res, nil
}

func (x *exporter) run() error {
	var err error
	if x.schema, err = x.tbl.Schema(x.ctx, x.snap.SchemaID); err != nil {
		return err
	}
	if x.eps, err = x.tbl.Episodes(x.ctx, x.snap); err != nil {
		return err
	}
	if len(x.eps) == 0 {
		return fmt.Errorf("snapshot %d has no episodes to export", x.snap.ID)
	}
	sort.Slice(x.eps, func(i, j int) bool { return x.eps[i].Episode < x.eps[j].Episode })
	if x.fps, err = x.frameRate(); err != nil {
		return err
	}
	first, err := x.tbl.Rows(x.ctx, x.snap, x.eps[0])
	if err != nil {
		return err
	}
	if x.cols, err = x.columns(first); err != nil {
		return err
	}
	if err := x.collectTasks(); err != nil {
		return err
	}
	epRows, err := x.writeData()
	if err != nil {
		return err
	}
	vids, err := x.writeVideos()
	if err != nil {
		return err
	}
	if err := x.writeEpisodes(epRows, vids); err != nil {
		return err
	}
	if err := x.writeTasks(); err != nil {
		return err
	}
	if err := x.writeStats(); err != nil {
		return err
	}
	return x.writeInfo()
}

// frameRate is the fps property of an imported table, else the frame
// rate of the first episode's first video.
func (x *exporter) frameRate() (float64, error) {
	if s := x.schema.Properties[PropFPS]; s != "" {
		if fps, err := strconv.ParseFloat(s, 64); err == nil && fps > 0 {
			return fps, nil
		}
	}
	ref := x.eps[0].Videos[x.schema.VideoColumns[0]]
	v, err := x.tbl.OpenVideo(x.ctx, ref)
	if err != nil {
		return 0, err
	}
	defer v.Close()
	ix := v.Index
	if ix.Frames() < 2 {
		return 0, fmt.Errorf("cannot tell the frame rate of %s (one frame): LeRobot datasets need one", x.eps[0].Episode)
	}
	fps := float64(ix.Frames()) / ix.Seconds(ix.Duration())
	if r := math.Round(fps); math.Abs(fps-r) < 1e-3 {
		fps = r
	}
	return fps, nil
}

// columns decides the exported row columns: the table's columns (the task
// text excepted, it goes to the task table) with the dtypes and
// descriptions an import recorded, and the standard columns the table
// lacks.
func (x *exporter) columns(sample []table.Row) ([]outColumn, error) {
	recorded := map[string]Feature{}
	if js := x.schema.Properties[PropFeatures]; js != "" {
		feats, err := orderedFeatures(json.RawMessage(js))
		if err != nil {
			return nil, fmt.Errorf("schema property %s: %v", PropFeatures, err)
		}
		for _, f := range feats {
			recorded[f.Key] = f
		}
	}
	var cols []outColumn
	for _, c := range x.schema.Columns {
		if c.Name == TaskColumn {
			continue
		}
		elem, isList := c.Type.Elem()
		if !isList {
			elem = c.Type
		}
		oc := outColumn{name: c.Name, source: c.Name, dtype: string(elem)}
		if elem == "timestamp" {
			oc.dtype = "float64" // seconds since the Unix epoch
		}
		if isList {
			n := -1
			for _, r := range sample {
				if l, ok := r[c.Name].([]any); ok {
					n = len(l)
					break
				}
			}
			if n <= 0 {
				return nil, fmt.Errorf("column %q: cannot tell the length of its lists (LeRobot features have a fixed shape)", c.Name)
			}
			oc.listLen = n
		}
		if f, ok := recorded[c.Name]; ok {
			if want, _, known := elemType(f.DType); known && want == elem {
				oc.dtype, oc.feature = f.DType, f.Raw
			}
		}
		if oc.feature == nil {
			shape := []int{1}
			if isList {
				shape = []int{oc.listLen}
			}
			oc.feature, _ = json.Marshal(map[string]any{"dtype": oc.dtype, "shape": shape, "names": nil})
		}
		cols = append(cols, oc)
	}
	for _, sc := range standardColumns {
		if !slices.ContainsFunc(cols, func(c outColumn) bool { return c.name == sc.name }) {
			raw, _ := json.Marshal(map[string]any{"dtype": sc.dtype, "shape": []int{1}, "names": nil})
			cols = append(cols, outColumn{name: sc.name, dtype: sc.dtype, feature: raw})
		}
	}
	// The standard columns are rewritten from the export's own numbering.
	for i := range cols {
		switch cols[i].name {
		case "frame_index", "episode_index", "index", "task_index", "timestamp":
			if cols[i].listLen > 0 {
				return nil, fmt.Errorf("column %q holds lists; LeRobot's %s is a scalar", cols[i].name, cols[i].name)
			}
			if cols[i].name != "timestamp" {
				cols[i].source = ""
			}
		}
	}
	return cols, nil
}

// collectTasks numbers the tasks: texts in the order of the task_index
// the table gave them (then by text).
func (x *exporter) collectTasks() error {
	_, hasText := x.schema.Column(TaskColumn)
	_, hasIndex := x.schema.Column("task_index")
	type task struct {
		text  string
		index int64
	}
	seen := map[string]int64{}
	for _, e := range x.eps {
		rows, err := x.tbl.Rows(x.ctx, x.snap, e)
		if err != nil {
			return err
		}
		for _, r := range rows {
			text, idx := taskOf(r, hasText, hasIndex)
			if prev, ok := seen[text]; !ok || idx < prev {
				seen[text] = idx
			}
		}
	}
	var tasks []task
	for text, idx := range seen {
		tasks = append(tasks, task{text, idx})
	}
	sort.Slice(tasks, func(i, j int) bool {
		if tasks[i].index != tasks[j].index {
			return tasks[i].index < tasks[j].index
		}
		return tasks[i].text < tasks[j].text
	})
	for i, t := range tasks {
		x.taskIndex[t.text] = int64(i)
		x.taskTexts = append(x.taskTexts, t.text)
	}
	x.res.Tasks = len(tasks)
	return nil
}

// taskOf is a row's task text and task_index as the table holds them: a
// table without task text names tasks by their index, one without either
// has a single unnamed task.
func taskOf(r table.Row, hasText, hasIndex bool) (string, int64) {
	idx := int64(0)
	if v, ok := r["task_index"].(int64); hasIndex && ok {
		idx = v
	}
	if s, ok := r[TaskColumn].(string); hasText && ok {
		return s, idx
	}
	if hasIndex {
		return "task " + itoa(idx), idx
	}
	return "", 0
}

// arrowType is the Arrow type a dtype is written as.
func arrowType(dtype string) arrow.DataType {
	switch dtype {
	case "bool":
		return arrow.FixedWidthTypes.Boolean
	case "int8":
		return arrow.PrimitiveTypes.Int8
	case "int16":
		return arrow.PrimitiveTypes.Int16
	case "int32":
		return arrow.PrimitiveTypes.Int32
	case "int64":
		return arrow.PrimitiveTypes.Int64
	case "uint8":
		return arrow.PrimitiveTypes.Uint8
	case "uint16":
		return arrow.PrimitiveTypes.Uint16
	case "uint32":
		return arrow.PrimitiveTypes.Uint32
	case "uint64":
		return arrow.PrimitiveTypes.Uint64
	case "float16":
		return arrow.FixedWidthTypes.Float16
	case "float32":
		return arrow.PrimitiveTypes.Float32
	case "float64":
		return arrow.PrimitiveTypes.Float64
	}
	return arrow.BinaryTypes.String
}

func (c outColumn) arrowField() arrow.Field {
	dt := arrowType(c.dtype)
	if c.listLen > 0 {
		dt = arrow.FixedSizeListOf(int32(c.listLen), dt)
	}
	return arrow.Field{Name: c.name, Type: dt, Nullable: true}
}

// appendScalar appends one value of dtype to b, refusing values that do
// not fit (a wider table column exported as its original dtype).
func appendScalar(b array.Builder, dtype string, v any) error {
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return fmt.Errorf("want bool, have %T", v)
		}
		bb.Append(x)
		return nil
	case *array.StringBuilder:
		x, ok := v.(string)
		if !ok {
			return fmt.Errorf("want string, have %T", v)
		}
		bb.Append(x)
		return nil
	case *array.Float16Builder:
		f, ok := v.(float64)
		if !ok {
			return fmt.Errorf("want a number, have %T", v)
		}
		bb.Append(float16.New(float32(f)))
		return nil
	case *array.Float32Builder:
		f, ok := v.(float64)
		if !ok {
			return fmt.Errorf("want a number, have %T", v)
		}
		bb.Append(float32(f))
		return nil
	case *array.Float64Builder:
		switch f := v.(type) {
		case float64:
			bb.Append(f)
		case time.Time:
			bb.Append(float64(f.UnixMicro()) / 1e6)
		default:
			return fmt.Errorf("want a number, have %T", v)
		}
		return nil
	}
	n, ok := v.(int64)
	if !ok {
		return fmt.Errorf("want an integer, have %T", v)
	}
	lo, hi := intRange(dtype)
	if n < lo || (hi >= 0 && n > hi) {
		return fmt.Errorf("%d does not fit in %s", n, dtype)
	}
	switch bb := b.(type) {
	case *array.Int8Builder:
		bb.Append(int8(n))
	case *array.Int16Builder:
		bb.Append(int16(n))
	case *array.Int32Builder:
		bb.Append(int32(n))
	case *array.Int64Builder:
		bb.Append(n)
	case *array.Uint8Builder:
		bb.Append(uint8(n))
	case *array.Uint16Builder:
		bb.Append(uint16(n))
	case *array.Uint32Builder:
		bb.Append(uint32(n))
	case *array.Uint64Builder:
		bb.Append(uint64(n))
	default:
		return fmt.Errorf("unsupported builder %T", b)
	}
	return nil
}

// intRange is the range of an integer dtype (hi -1: up to MaxInt64).
func intRange(dtype string) (lo, hi int64) {
	switch dtype {
	case "int8":
		return math.MinInt8, math.MaxInt8
	case "int16":
		return math.MinInt16, math.MaxInt16
	case "int32":
		return math.MinInt32, math.MaxInt32
	case "uint8":
		return 0, math.MaxUint8
	case "uint16":
		return 0, math.MaxUint16
	case "uint32":
		return 0, math.MaxUint32
	case "uint64":
		return 0, -1
	}
	return math.MinInt64, -1
}

// exportedEpisode is where an exported episode's rows went.
type exportedEpisode struct {
	index    int64
	length   int64
	dataFile int64
	from, to int64
	tasks    []string
	stats    map[string]*featureStats
}

// writeData writes the frame rows, a row group per episode, a new file
// every DataFileFrames rows.
func (x *exporter) writeData() ([]exportedEpisode, error) {
	fields := make([]arrow.Field, len(x.cols))
	for i, c := range x.cols {
		fields[i] = c.arrowField()
	}
	sc := arrow.NewSchema(fields, nil)
	_, hasText := x.schema.Column(TaskColumn)
	_, hasIndex := x.schema.Column("task_index")
	var out []exportedEpisode
	var w *pqarrow.FileWriter
	var f *os.File
	var fileRows int64
	file := int64(-1)
	closeFile := func() error {
		if w == nil {
			return nil
		}
		err := w.Close()
		w = nil
		return err
	}
	var index int64
	for n, e := range x.eps {
		if w == nil || fileRows >= x.opts.DataFileFrames {
			if err := closeFile(); err != nil {
				return nil, err
			}
			file++
			var err error
			if f, err = create(x.tmp, fmt.Sprintf("data/chunk-%03d/file-%03d.parquet", file/exportChunksSize, file%exportChunksSize)); err != nil {
				return nil, err
			}
			props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(math.MaxInt32))
			if w, err = pqarrow.NewFileWriter(sc, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())); err != nil {
				return nil, err
			}
			fileRows = 0
			x.res.DataFiles++
		}
		rows, err := x.tbl.Rows(x.ctx, x.snap, e)
		if err != nil {
			return nil, err
		}
		ep := exportedEpisode{index: int64(n), length: int64(len(rows)), dataFile: file, from: index, to: index + int64(len(rows)), stats: map[string]*featureStats{}}
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		var taskSeen []string
		for k, r := range rows {
			text, _ := taskOf(r, hasText, hasIndex)
			if !slices.Contains(taskSeen, text) {
				taskSeen = append(taskSeen, text)
			}
			made := map[string]any{
				"frame_index": int64(k), "episode_index": int64(n), "index": index, "task_index": x.taskIndex[text],
			}
			if _, ok := x.schema.Column("timestamp"); !ok {
				made["timestamp"] = float64(float32(float64(k) / x.fps))
			}
			index++
			for c, col := range x.cols {
				v, ok := made[col.name]
				if col.source != "" {
					v, ok = r[col.source], true
				}
				if !ok || v == nil {
					b.Release()
					return nil, fmt.Errorf("episode %q row %d: column %q is null; LeRobot rows have every value", e.Episode, k, col.name)
				}
				if err := appendValue(b.Field(c), col, v); err != nil {
					b.Release()
					return nil, fmt.Errorf("episode %q row %d: column %q: %v", e.Episode, k, col.name, err)
				}
				ep.addStats(col, v)
			}
		}
		ep.tasks = taskSeen
		rec := b.NewRecordBatch()
		b.Release()
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		for name, st := range ep.stats {
			if x.stats[name] == nil {
				x.stats[name] = newFeatureStats(len(st.min))
			}
			x.stats[name].merge(st)
		}
		fileRows += ep.length
		x.res.Frames += ep.length
		out = append(out, ep)
		if x.opts.Progress != nil {
			x.opts.Progress("writing rows", n+1, len(x.eps))
		}
	}
	x.res.Episodes = len(out)
	return out, closeFile()
}

func appendValue(b array.Builder, col outColumn, v any) error {
	if col.listLen == 0 {
		return appendScalar(b, col.dtype, v)
	}
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want a list, have %T", v)
	}
	if len(list) != col.listLen {
		return fmt.Errorf("a list of %d values, the feature has shape [%d]", len(list), col.listLen)
	}
	lb := b.(*array.FixedSizeListBuilder)
	lb.Append(true)
	for j, e := range list {
		if err := appendScalar(lb.ValueBuilder(), col.dtype, e); err != nil {
			return fmt.Errorf("element %d: %v", j, err)
		}
	}
	return nil
}

// episodeVideo is where an exported episode's frames of one camera are.
type episodeVideo struct {
	file         int64
	fromTS, toTS float64
}

// writeVideos copies each stored payload once per camera, in episode
// order, and works out each episode's time range in its file.
func (x *exporter) writeVideos() (map[string][]episodeVideo, error) {
	out := map[string][]episodeVideo{}
	for _, cam := range x.schema.VideoColumns {
		files := map[string]int64{}
		covered := map[string]int64{} // frames the episodes of a file use
		frames := map[string]int64{}
		for _, e := range x.eps {
			ref := e.Videos[cam]
			key := fmt.Sprintf("%s@%d", ref.Pack, ref.Offset)
			v, err := x.tbl.OpenVideo(x.ctx, ref)
			if err != nil {
				return nil, fmt.Errorf("episode %q %s: %w", e.Episode, cam, err)
			}
			n, seen := files[key]
			if !seen {
				n = int64(len(files))
				files[key] = n
				frames[key] = ref.Frames
				if err := x.copyVideo(v, fmt.Sprintf("videos/%s/chunk-%03d/file-%03d.mp4", cam, n/exportChunksSize, n%exportChunksSize)); err != nil {
					v.Close()
					return nil, fmt.Errorf("episode %q %s: %w", e.Episode, cam, err)
				}
			}
			from := v.Index.Seconds(v.Index.Frame(int(ref.FirstFrame)).PTS)
			v.Close()
			covered[key] += e.Rows
			out[cam] = append(out[cam], episodeVideo{file: n, fromTS: from, toTS: from + float64(e.Rows)/x.fps})
		}
		for key, n := range covered {
			if n != frames[key] {
				x.res.PartialVideos++
			}
		}
	}
	return out, nil
}

func (x *exporter) copyVideo(v *table.Video, rel string) error {
	f, err := create(x.tmp, rel)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.NewSectionReader(v.Payload, 0, v.Payload.Size()))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy video to %s: %w", rel, err)
	}
	x.res.VideoFiles++
	x.res.VideoBytes += n
	return nil
}

func (x *exporter) writeEpisodes(eps []exportedEpisode, vids map[string][]episodeVideo) error {
	fields := v3schema.EpisodeColumns(x.schema.VideoColumns)
	statCols := x.statColumns()
	for _, name := range statCols {
		for _, s := range statNames {
			dt := arrow.DataType(arrow.PrimitiveTypes.Float64)
			if s == "count" {
				dt = arrow.PrimitiveTypes.Int64
			}
			fields = append(fields, arrow.Field{Name: "stats/" + name + "/" + s, Type: arrow.ListOf(dt)})
		}
	}
	for i := range fields {
		fields[i].Nullable = true
	}
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i, ep := range eps {
		c := 0
		next := func() array.Builder { c++; return b.Field(c - 1) }
		next().(*array.Int64Builder).Append(ep.index)
		lb := next().(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).AppendValues(ep.tasks, nil)
		for _, v := range []int64{ep.length, ep.dataFile / exportChunksSize, ep.dataFile % exportChunksSize, ep.from, ep.to} {
			next().(*array.Int64Builder).Append(v)
		}
		for _, cam := range x.schema.VideoColumns {
			v := vids[cam][i]
			next().(*array.Int64Builder).Append(v.file / exportChunksSize)
			next().(*array.Int64Builder).Append(v.file % exportChunksSize)
			next().(*array.Float64Builder).Append(v.fromTS)
			next().(*array.Float64Builder).Append(v.toTS)
		}
		next().(*array.Int64Builder).Append(0)
		next().(*array.Int64Builder).Append(0)
		for _, name := range statCols {
			if st := ep.stats[name]; st != nil {
				st.append(next)
				continue
			}
			for range statNames {
				next().AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return writeParquetFile(x.tmp, exportEpisodesParquet, sc, rec)
}

// writeTasks writes meta/tasks.parquet as pandas writes a frame indexed
// by the task text, so that pandas.read_parquet gives LeRobot its index.
func (x *exporter) writeTasks() error {
	meta, _ := json.Marshal(map[string]any{
		"index_columns":  []string{"task"},
		"column_indexes": []map[string]any{{"name": nil, "field_name": nil, "pandas_type": "unicode", "numpy_type": "object", "metadata": map[string]string{"encoding": "UTF-8"}}},
		"columns": []map[string]any{
			{"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": nil},
			{"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object", "metadata": nil},
		},
		"creator":        map[string]string{"library": "framefs"},
		"pandas_version": "2.2.3",
	})
	md := arrow.NewMetadata([]string{"pandas"}, []string{string(meta)})
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "task_index", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "task", Type: arrow.BinaryTypes.String, Nullable: true},
	}, &md)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i, text := range x.taskTexts {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(text)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return writeParquetFile(x.tmp, tasksParquet, sc, rec)
}

// writeInfo writes meta/info.json, its keys in the order LeRobot writes
// them.
func (x *exporter) writeInfo() error {
	features := make([]Feature, 0, len(x.cols)+len(x.schema.VideoColumns))
	recorded := map[string]Feature{}
	if js := x.schema.Properties[PropFeatures]; js != "" {
		feats, _ := orderedFeatures(json.RawMessage(js))
		for _, f := range feats {
			recorded[f.Key] = f
		}
	}
	videoFeature := func(cam string) (Feature, error) {
		if f, ok := recorded[cam]; ok && f.IsVideo() {
			return f, nil
		}
		ref := x.eps[0].Videos[cam]
		raw, err := json.Marshal(map[string]any{
			"dtype": "video", "shape": []int{ref.Height, ref.Width, 3}, "names": []string{"height", "width", "channels"},
			"info": map[string]any{"video.height": ref.Height, "video.width": ref.Width, "video.codec": ref.Codec,
				"video.fps": x.fps, "video.channels": 3, "has_audio": false},
		})
		return Feature{Key: cam, DType: "video", Raw: raw}, err
	}
	// Recorded order first (cameras where the dataset had them), then
	// what the table adds.
	placed := map[string]bool{}
	colByName := map[string]outColumn{}
	for _, c := range x.cols {
		colByName[c.name] = c
	}
	if js := x.schema.Properties[PropFeatures]; js != "" {
		feats, _ := orderedFeatures(json.RawMessage(js))
		for _, f := range feats {
			if c, ok := colByName[f.Key]; ok {
				features = append(features, Feature{Key: c.name, DType: c.dtype, Raw: c.feature})
				placed[f.Key] = true
			} else if x.schema.IsVideoColumn(f.Key) {
				vf, err := videoFeature(f.Key)
				if err != nil {
					return err
				}
				features = append(features, vf)
				placed[f.Key] = true
			}
		}
	}
	for _, cam := range x.schema.VideoColumns {
		if !placed[cam] {
			vf, err := videoFeature(cam)
			if err != nil {
				return err
			}
			features = append(features, vf)
			placed[cam] = true
		}
	}
	for _, c := range x.cols {
		if !placed[c.name] {
			features = append(features, Feature{Key: c.name, DType: c.dtype, Raw: c.feature})
		}
	}
	robot := json.RawMessage("null")
	if r := x.schema.Properties[PropRobotType]; r != "" && json.Valid([]byte(r)) {
		robot = json.RawMessage(r)
	}
	fps, _ := json.Marshal(x.fps)
	if x.fps == math.Trunc(x.fps) {
		fps = []byte(strconv.FormatInt(int64(x.fps), 10))
	}
	n := int64(len(x.eps))
	splits, _ := json.Marshal(map[string]string{"train": fmt.Sprintf("0:%d", n)})
	fields := []struct {
		key string
		val []byte
	}{
		{"codebase_version", []byte(`"` + V30 + `"`)},
		{"fps", fps},
		{"features", featuresJSON(features)},
		{"total_episodes", []byte(itoa(n))},
		{"total_frames", []byte(itoa(x.res.Frames))},
		{"total_tasks", []byte(itoa(int64(len(x.taskTexts))))},
		{"chunks_size", []byte(itoa(exportChunksSize))},
		{"data_files_size_in_mb", []byte(itoa(exportDataFileMB))},
		{"video_files_size_in_mb", []byte(itoa(exportVideoFileMB))},
		{"data_path", []byte(`"` + defaultV3DataPath + `"`)},
		{"video_path", []byte(`"` + defaultV3Video + `"`)},
		{"robot_type", robot},
		{"splits", splits},
	}
	var b bytes.Buffer
	b.WriteString("{")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n    %q: %s", f.key, f.val)
	}
	b.WriteString("\n}\n")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, b.Bytes(), "", "    "); err != nil {
		return err
	}
	f, err := create(x.tmp, InfoPath)
	if err != nil {
		return err
	}
	if _, err := f.Write(pretty.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// create makes a file (and its folders) under root.
func create(root, rel string) (*os.File, error) {
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	return os.Create(p)
}

func writeParquetFile(root, rel string, sc *arrow.Schema, rec arrow.RecordBatch) error {
	f, err := create(root, rel)
	if err != nil {
		return err
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))
	w, err := pqarrow.NewFileWriter(sc, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		f.Close()
		return err
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
