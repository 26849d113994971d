package lerobot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/framefs/framefs/internal/regfile"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/videoidx"
)

// DefaultTimestampTolerance is how far, in seconds, a row's timestamp may
// be from frame_index / fps.
const DefaultTimestampTolerance = 1e-4

// ExactTimestamps is a TimestampTolerance that accepts no difference at
// all (0 would mean the default).
const ExactTimestamps = -1.0

// CheckOptions tune Check.
type CheckOptions struct {
	// Episodes selects the episodes to check (nil: all).
	Episodes []int64
	// TimestampTolerance is the largest |timestamp - frame_index / fps|
	// accepted, in seconds (0: DefaultTimestampTolerance; ExactTimestamps,
	// or any negative value: none).
	TimestampTolerance float64
	// Indexer counts a video's frames (nil: MP4 sample tables, as
	// videoidx.ReadMP4 reads them).
	Indexer table.Indexer
	// Partition, when set, names a column that must hold one value per
	// episode (the table is partitioned by it).
	Partition string
	// Progress, when set, is told after each file is checked.
	Progress func(done, total int)
}

func (o CheckOptions) withDefaults() CheckOptions {
	switch {
	case o.TimestampTolerance == 0:
		o.TimestampTolerance = DefaultTimestampTolerance
	case o.TimestampTolerance < 0:
		o.TimestampTolerance = 0
	}
	if o.Indexer == nil {
		o.Indexer = func(ctx context.Context, r io.ReaderAt, size int64) (*videoidx.Index, error) {
			return videoidx.ReadMP4(ctx, r, size, videoidx.BestStream)
		}
	}
	return o
}

// CheckReport sums up a dataset that passed Check.
type CheckReport struct {
	// Columns are the table columns the rows become.
	Columns []Column
	// Episodes and Frames count what was checked.
	Episodes int
	Frames   int64
	// TimestampsOverDefault counts rows whose timestamp is further than
	// DefaultTimestampTolerance from frame_index / fps (accepted when a
	// larger tolerance was given); MaxTimestampError is the largest
	// distance seen, in seconds.
	TimestampsOverDefault int64
	MaxTimestampError     float64
	// DataFiles, VideoFiles and VideoBytes count the files checked.
	DataFiles  int
	VideoFiles int
	VideoBytes int64
}

// Selection returns the episodes selected (all when sel is nil), sorted,
// after checking that each is in the dataset.
func (ds *Dataset) Selection(sel []int64) ([]int64, error) {
	if sel == nil {
		out := make([]int64, len(ds.Episodes))
		for i := range out {
			out[i] = int64(i)
		}
		return out, nil
	}
	out := slices.Clone(sel)
	slices.Sort(out)
	out = slices.Compact(out)
	for _, i := range out {
		if i < 0 || i >= int64(len(ds.Episodes)) {
			return nil, fmt.Errorf("episode %d is not in the dataset (it has episodes 0-%d)", i, len(ds.Episodes)-1)
		}
	}
	return out, nil
}

// Check reads the rows and video indexes of the selected episodes and
// checks every rule an import relies on; a dataset that breaks one gives
// a *ValidationError naming each file, episode, row and rule.
func (ds *Dataset) Check(ctx context.Context, opts CheckOptions) (*CheckReport, error) {
	opts = opts.withDefaults()
	sel, err := ds.Selection(opts.Episodes)
	if err != nil {
		return nil, err
	}
	cols, err := ds.Columns()
	if err != nil {
		return nil, err
	}
	rep := &CheckReport{Columns: cols, Episodes: len(sel)}
	ps := newProblems(ds.Dir)
	dataFiles, videoFiles := ds.files(sel)
	total, done := len(dataFiles)+len(videoFiles), 0
	step := func() {
		done++
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	for _, df := range dataFiles {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ds.checkDataFile(ctx, df, cols, opts, ps, rep)
		step()
	}
	for _, vf := range videoFiles {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := ds.checkVideo(ctx, vf, opts.Indexer, ps, rep); err != nil {
			return nil, err
		}
		step()
	}
	for _, i := range sel {
		rep.Frames += ds.Episodes[i].Length
	}
	return rep, ps.err()
}

// partitionColumn is the column whose values the partition check reads:
// the task text is checked through task_index.
func (o CheckOptions) partitionColumn() string {
	if o.Partition == TaskColumn {
		return "task_index"
	}
	return o.Partition
}

// dataFileEpisodes is a data file and the selected episodes in it.
type dataFileEpisodes struct {
	file     string
	episodes []int64
}

// videoFile is one camera's video file and the episodes it holds.
type videoFile struct {
	camera string
	EpisodeVideo
}

// files lists the data and video files the selected episodes use, in
// episode order.
func (ds *Dataset) files(sel []int64) ([]dataFileEpisodes, []videoFile) {
	var data []dataFileEpisodes
	var videos []videoFile
	seen := map[string]bool{}
	for _, i := range sel {
		e := &ds.Episodes[i]
		if n := len(data); n > 0 && data[n-1].file == e.DataFile {
			data[n-1].episodes = append(data[n-1].episodes, i)
		} else {
			data = append(data, dataFileEpisodes{file: e.DataFile, episodes: []int64{i}})
		}
		for _, cam := range ds.Cameras {
			v := e.Videos[cam]
			if !seen[cam+"\x00"+v.File] {
				seen[cam+"\x00"+v.File] = true
				videos = append(videos, videoFile{camera: cam, EpisodeVideo: v})
			}
		}
	}
	return data, videos
}

// episodeRun is where an episode's rows are in a data file.
type episodeRun struct {
	start, count int64
	broken       bool // rows of other episodes in between
}

// scanRuns finds each episode's rows in a data file by episode_index.
func scanRuns(t *parquetTable) (map[int64]*episodeRun, int64) {
	runs := map[int64]*episodeRun{}
	col := t.cols["episode_index"]
	badRow := int64(-1)
	for i := 0; i < int(t.rows); i++ {
		ep, ok := intAt(col, i)
		if !ok {
			if badRow < 0 {
				badRow = int64(i)
			}
			continue
		}
		r := runs[ep]
		if r == nil {
			runs[ep] = &episodeRun{start: int64(i), count: 1}
			continue
		}
		if r.start+r.count != int64(i) {
			r.broken = true
		}
		r.count++
	}
	return runs, badRow
}

// fileBase is the global index of a data file's first row: the first row
// of the first episode the metadata places in it.
func (ds *Dataset) fileBase(file string) (int64, map[int64]bool) {
	base := int64(math.MaxInt64)
	members := map[int64]bool{}
	for _, e := range ds.Episodes {
		if e.DataFile == file {
			members[e.Index] = true
			base = min(base, e.FirstIndex)
		}
	}
	return base, members
}

func (ds *Dataset) checkDataFile(ctx context.Context, df dataFileEpisodes, cols []Column, opts CheckOptions, ps *problems, rep *CheckReport) {
	first := df.episodes[0]
	path := filepath.Join(ds.Dir, filepath.FromSlash(df.file))
	fields, nulls, err := parquetFooter(path)
	if err != nil {
		readFileProblem(ps, df.file, first, err, "the frame rows")
		return
	}
	before := ps.counts[RuleFeature]
	fileCols := ds.columnsFrom(fields, df.file, ps)
	if ps.counts[RuleFeature] > before {
		return
	}
	// The row checks need the standard columns; others are read only
	// where the footer does not rule out nulls.
	var names []string
	for _, sc := range standardColumns {
		names = append(names, sc.name)
	}
	for name, n := range nulls {
		if n != 0 && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if p := opts.partitionColumn(); p != "" && !slices.Contains(names, p) {
		names = append(names, p)
	}
	for _, c := range fileCols {
		if c.length > 0 && !slices.Contains(names, c.Name) {
			names = append(names, c.Name) // rows are checked against the shape
		}
	}
	t, err := readParquet(ctx, path, names, 0)
	if err != nil {
		readFileProblem(ps, df.file, first, err, "the frame rows")
		return
	}
	defer t.release()
	rep.DataFiles++
	for i, c := range cols {
		if i >= len(fileCols) || fileCols[i].Name != c.Name || fileCols[i].Type != c.Type {
			ps.add(RuleFeature, df.file, first, -1, "the columns differ from those of %s (%s): every data file must have the same columns and types",
				ds.Episodes[0].DataFile, describeColumns(cols))
			return
		}
	}
	for _, c := range cols {
		a := t.cols[c.Name]
		if a == nil {
			continue
		}
		if row := firstNull(a); row >= 0 {
			ep, _ := intAt(t.cols["episode_index"], row)
			ps.add(RuleFeature, df.file, ep, int64(row), "column %q has a null value; LeRobot rows have every value", c.Name)
		}
		if row, count := firstMisshapen(a, c); row >= 0 {
			ep, _ := intAt(t.cols["episode_index"], row)
			_, start, end, _ := listAt(a, row)
			msg := fmt.Sprintf("column %q %v", c.Name, shapeError(end-start, c.length))
			if count > 1 {
				msg += fmt.Sprintf(" (and %d more rows of this file)", count-1)
			}
			ps.add(RuleFeature, df.file, ep, int64(row), "%s", msg)
		}
	}
	runs, badRow := scanRuns(t)
	if badRow >= 0 {
		return // reported above as a null episode_index
	}
	base, members := ds.fileBase(df.file)
	for ep, r := range runs {
		if !members[ep] {
			ps.add(RuleEpisodeIndex, df.file, ep, r.start, "%d rows name episode %d, which the episode metadata does not place in this file", r.count, ep)
		}
	}
	for _, i := range df.episodes {
		e := &ds.Episodes[i]
		r := runs[i]
		switch {
		case r == nil:
			ps.add(RuleRowRange, df.file, i, -1, "the file has no rows of the episode (length %d)", e.Length)
		case r.broken:
			ps.add(RuleRowRange, df.file, i, r.start, "the episode's rows are not one contiguous run")
		case r.count != e.Length:
			ps.add(RuleRowRange, df.file, i, r.start, "the file has %d rows of the episode, its length is %d", r.count, e.Length)
		case r.start != e.FirstIndex-base:
			ps.add(RuleRowRange, df.file, i, r.start, "the episode's rows start at row %d of the file; its first global row %d puts them at row %d",
				r.start, e.FirstIndex, e.FirstIndex-base)
		default:
			ds.checkRows(t, e, r.start, df.file, opts, ps, rep)
		}
	}
}

// firstNull returns the first row holding a null, or a list with a null
// element, or -1.
func firstNull(a arrow.Array) int {
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			return i
		}
		if vals, start, end, ok := listAt(a, i); ok && vals.NullN() > 0 {
			for j := start; j < end; j++ {
				if vals.IsNull(j) {
					return i
				}
			}
		}
	}
	return -1
}

// ruleTally reports the first row that breaks a rule in an episode and
// counts the others, so that a dataset with a drifting clock gives one
// line per episode, not one per row.
type ruleTally struct {
	rule    Rule
	first   int64
	message string
	count   int64
}

func (rt *ruleTally) hit(row int64, format string, args ...any) {
	if rt.count == 0 {
		rt.first, rt.message = row, fmt.Sprintf(format, args...)
	}
	rt.count++
}

func (rt *ruleTally) report(ps *problems, file string, episode int64) {
	if rt.count == 0 {
		return
	}
	msg := rt.message
	if rt.count > 1 {
		msg += fmt.Sprintf(" (and %d more rows of this episode)", rt.count-1)
	}
	ps.add(rt.rule, file, episode, rt.first, "%s", msg)
}

// checkRows checks the index and frame_index runs, timestamps and task
// indexes of one episode's rows, which start at row start of t.
func (ds *Dataset) checkRows(t *parquetTable, e *Episode, start int64, file string, opts CheckOptions, ps *problems, rep *CheckReport) {
	tol := opts.TimestampTolerance
	index, frameIndex, ts, taskIndex := t.cols["index"], t.cols["frame_index"], t.cols["timestamp"], t.cols["task_index"]
	allowed := map[int64]bool{}
	for idx, text := range ds.Tasks {
		if slices.Contains(e.Tasks, text) {
			allowed[idx] = true
		}
	}
	tallies := []*ruleTally{{rule: RuleIndexRun}, {rule: RuleFrameIndexRun}, {rule: RuleTimestamp}, {rule: RuleTaskIndex}, {rule: RulePartition}}
	indexRun, frameRun, stamp, task, part := tallies[0], tallies[1], tallies[2], tallies[3], tallies[4]
	partCol := t.cols[opts.partitionColumn()]
	fps := ds.Info.FPS
	for k := int64(0); k < e.Length; k++ {
		row := int(start + k)
		if v, _ := intAt(index, row); v != e.FirstIndex+k {
			indexRun.hit(int64(row), "index is %d, want %d (the episode's rows are %d..%d)", v, e.FirstIndex+k, e.FirstIndex, e.FirstIndex+e.Length-1)
		}
		fi, _ := intAt(frameIndex, row)
		if fi != k {
			frameRun.hit(int64(row), "frame_index is %d, want %d (frame_index counts 0, 1, 2, ... within an episode)", fi, k)
		}
		if stampV, ok := floatAt(ts, row); ok {
			diff := math.Abs(stampV - float64(fi)/fps)
			rep.MaxTimestampError = max(rep.MaxTimestampError, diff)
			if diff > DefaultTimestampTolerance {
				rep.TimestampsOverDefault++
			}
			if diff > tol || math.IsNaN(diff) {
				stamp.hit(int64(row), "timestamp %.6f is %.6f s from frame_index %d / fps %g (tolerance %g; raise it with --timestamp-tolerance if the clock is known to drift)",
					stampV, diff, fi, fps, tol)
			}
		}
		if partCol != nil && k > 0 && partCol.ValueStr(row) != partCol.ValueStr(int(start)) {
			part.hit(int64(row), "%s is %s, the episode's first row has %s; a table partitioned by %s needs one value per episode",
				opts.Partition, partCol.ValueStr(row), partCol.ValueStr(int(start)), opts.Partition)
		}
		ti, _ := intAt(taskIndex, row)
		if !allowed[ti] {
			if text, ok := ds.Tasks[ti]; ok {
				task.hit(int64(row), "task_index %d (%q) is not among the episode's tasks %s", ti, text, describeTasks(e.Tasks))
			} else {
				task.hit(int64(row), "task_index %d is not in the task table", ti)
			}
		}
	}
	for _, rt := range tallies {
		rt.report(ps, file, e.Index)
	}
}

func (ds *Dataset) checkVideo(ctx context.Context, vf videoFile, indexer table.Indexer, ps *problems, rep *CheckReport) error {
	first := vf.FileEpisodes[0]
	what := fmt.Sprintf("the %s video of episode(s) %s", vf.camera, episodeList(vf.FileEpisodes))
	f, err := regfile.Open(filepath.Join(ds.Dir, filepath.FromSlash(vf.File)))
	if err != nil {
		readFileProblem(ps, vf.File, first, err, what)
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		ps.add(RuleUnreadable, vf.File, first, -1, "%s is empty (0 bytes)", what)
		return nil
	}
	ix, err := indexer(ctx, f, st.Size())
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		ps.add(RuleUnreadable, vf.File, first, -1, "%s is not a readable video (truncated or damaged?): %v", what, err)
		return nil
	}
	rep.VideoFiles++
	rep.VideoBytes += st.Size()
	if got := int64(ix.Frames()); got != vf.FileFrames {
		if len(vf.FileEpisodes) == 1 {
			ps.add(RuleVideoFrames, vf.File, first, -1, "the video has %d frames, the episode has length %d", got, vf.FileFrames)
		} else {
			ps.add(RuleVideoFrames, vf.File, first, -1, "the video has %d frames, its episodes %s have %d frames in all", got, episodeList(vf.FileEpisodes), vf.FileFrames)
		}
	}
	return nil
}

// episodeList writes episode indexes compactly: 0-4,7.
func episodeList(eps []int64) string {
	var parts []string
	for i := 0; i < len(eps); {
		j := i
		for j+1 < len(eps) && eps[j+1] == eps[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, itoa(eps[i]))
		} else {
			parts = append(parts, itoa(eps[i])+"-"+itoa(eps[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func describeColumns(cols []Column) string {
	var parts []string
	for _, c := range cols {
		parts = append(parts, c.Name+":"+string(c.Type))
	}
	return strings.Join(parts, ", ")
}
