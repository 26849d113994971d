package lerobot

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/framefs/framefs/internal/regfile"
	"github.com/framefs/framefs/table"
)

// Dataset is a LeRobot dataset whose metadata has been read and checked.
type Dataset struct {
	// Dir is the dataset folder.
	Dir  string
	Info *Info
	// Cameras are the video features' keys, in feature order.
	Cameras []string
	// Tasks maps task_index to the task text.
	Tasks map[int64]string
	// Episodes are indexed by episode index (0..N-1).
	Episodes []Episode
}

// Episode is one episode and where its rows and frames are.
type Episode struct {
	Index int64
	// Tasks are the episode's task texts.
	Tasks []string
	// Length is its number of frames (rows).
	Length int64
	// FirstIndex is the global index (column "index") of its first row.
	FirstIndex int64
	// DataFile is the dataset-relative Parquet file holding its rows.
	DataFile string
	// Videos holds, per camera, the file and the frame of the file where
	// the episode starts.
	Videos map[string]EpisodeVideo

	meta episodeMeta
}

// EpisodeVideo locates an episode's frames in one camera's video file.
type EpisodeVideo struct {
	// File is dataset-relative.
	File string
	// FirstFrame is the frame ordinal of the episode's first row in File:
	// the sum of the lengths of the earlier episodes of the same file.
	FirstFrame int64
	// FileEpisodes are the indexes of all episodes stored in File (one
	// in v2.x), in order.
	FileEpisodes []int64
	// FileFrames is the sum of the lengths of FileEpisodes: the frames
	// File must have.
	FileFrames int64
}

// ID is the table episode id of episode index i.
func ID(i int64) string { return fmt.Sprintf("episode_%06d", i) }

// Open reads a dataset's metadata (info.json, the episode and task lists)
// and checks everything that needs no row or video: the version, the path
// templates, the features, the episode indexes, the row ranges and, in
// v3.0, each episode's place in its shared video files. A dataset that
// breaks a rule gives a *ValidationError.
func Open(ctx context.Context, dir string) (*Dataset, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("LeRobot dataset %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("LeRobot dataset %s: not a folder", dir)
	}
	ps := newProblems(dir)
	data, err := regfile.ReadFile(filepath.Join(dir, InfoPath), MaxInfoBytes)
	if err != nil {
		readFileProblem(ps, InfoPath, -1, err, "the dataset description")
		return nil, ps.err()
	}
	info := parseInfo(data, ps)
	if info == nil || ps.any() {
		return nil, ps.err()
	}
	ds := &Dataset{Dir: dir, Info: info}
	for _, f := range info.Features {
		if f.IsVideo() {
			ds.Cameras = append(ds.Cameras, f.Key)
		}
	}
	checkFeatures(info, ps)
	dataFields, videoFields := v2DataFields, v2VideoFields
	if info.CodebaseVersion == V30 {
		dataFields, videoFields = v3DataFields, v3VideoFields
	}
	dataTmpl, err := parseTemplate(info.DataPath, dataFields...)
	if err != nil {
		ps.add(RulePathTemplate, InfoPath, -1, -1, "data_path: %v", err)
	}
	var videoTmpl pathTemplate
	if len(ds.Cameras) > 0 {
		if videoTmpl, err = parseTemplate(info.VideoPath, videoFields...); err != nil {
			ps.add(RulePathTemplate, InfoPath, -1, -1, "video_path: %v", err)
		}
	}
	if ps.any() {
		return nil, ps.err()
	}
	var metas []episodeMeta
	if info.CodebaseVersion == V30 {
		metas = readEpisodesV3(ctx, dir, ds.Cameras, ps)
		ds.Tasks = readTasksV3(ctx, dir, ps)
	} else {
		metas = readLegacyEpisodes(dir, ps)
		ds.Tasks = readLegacyTasks(dir, ps)
	}
	if ps.any() {
		return nil, ps.err()
	}
	ds.Episodes = checkEpisodeIndexes(info, metas, ps)
	if ps.any() {
		return nil, ps.err()
	}
	ds.locate(dataTmpl, videoTmpl, ps)
	checkEpisodeTasks(ds, ps)
	return ds, ps.err()
}

// checkFeatures checks that the standard columns are there and that no
// feature is of a kind framefs cannot hold.
func checkFeatures(info *Info, ps *problems) {
	for _, sc := range standardColumns {
		f, ok := info.Feature(sc.name)
		if !ok {
			ps.add(RuleFeature, InfoPath, -1, -1, "feature %q is missing; every LeRobot frame row has %s", sc.name, sc.name)
			continue
		}
		if sc.name != "timestamp" && !isIntegerDType(f.DType) {
			ps.add(RuleFeature, InfoPath, -1, -1, "feature %q has dtype %q, want an integer", sc.name, f.DType)
		}
	}
	for _, f := range info.Features {
		if err := table.CheckColumnName("feature", f.Key); err != nil {
			ps.add(RuleFeature, InfoPath, -1, -1, "%v: features become table columns; rename it", err)
			continue
		}
		switch {
		case f.IsVideo():
		case f.DType == "image":
			ps.add(RuleFeature, InfoPath, -1, -1, "feature %q has dtype \"image\" (PNG frames inside the Parquet rows): framefs stores cameras as videos; "+
				"re-encode the dataset with videos (LeRobot datasets created with use_videos=True) and import that", f.Key)
		case f.DType == "string" || f.DType == "bool" || isIntegerDType(f.DType) || isFloatDType(f.DType):
			if len(f.Shape) > 1 {
				ps.add(RuleFeature, InfoPath, -1, -1, "feature %q has shape %v: only scalars and one-dimensional arrays become columns", f.Key, f.Shape)
			}
		default:
			ps.add(RuleFeature, InfoPath, -1, -1, "feature %q has dtype %q, which framefs cannot store as a column", f.Key, f.DType)
		}
	}
}

func isIntegerDType(d string) bool {
	switch d {
	case "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64":
		return true
	}
	return false
}

func isFloatDType(d string) bool { return d == "float16" || d == "float32" || d == "float64" }

// checkEpisodeIndexes checks that episodes are exactly 0..N-1 with N =
// total_episodes, with positive lengths, and (v3.0) contiguous row ranges
// summing to total_frames; it returns them by index.
func checkEpisodeIndexes(info *Info, metas []episodeMeta, ps *problems) []Episode {
	listFile := legacyEpisodes
	if info.CodebaseVersion == V30 {
		listFile = episodesDir
	}
	byIndex := map[int64]episodeMeta{}
	for _, m := range metas {
		if prev, dup := byIndex[m.index]; dup {
			ps.add(RuleEpisodeIndex, m.file, m.index, m.row, "episode %d is listed twice (also %s row %d)", m.index, prev.file, prev.row)
			continue
		}
		if m.index < 0 || m.index >= int64(len(metas)) {
			ps.add(RuleEpisodeIndex, m.file, m.index, m.row, "episode_index %d is outside 0..%d (episodes must be numbered 0..N-1)", m.index, len(metas)-1)
			continue
		}
		if m.length <= 0 {
			ps.add(RuleRowRange, m.file, m.index, m.row, "length %d: an episode has at least one frame", m.length)
		}
		byIndex[m.index] = m
	}
	if int64(len(metas)) != info.TotalEpisodes {
		ps.add(RuleEpisodeIndex, listFile, -1, -1, "%d episodes are listed, info.json says total_episodes is %d", len(metas), info.TotalEpisodes)
	}
	if ps.any() {
		return nil
	}
	eps := make([]Episode, len(metas))
	var total int64
	for i := range eps {
		m := byIndex[int64(i)]
		eps[i] = Episode{Index: m.index, Tasks: m.tasks, Length: m.length, FirstIndex: total, meta: m}
		if info.CodebaseVersion == V30 {
			if m.from != total || m.to-m.from != m.length {
				ps.add(RuleRowRange, m.file, m.index, m.row, "rows [%d, %d) of length %d: the previous episode ends at row %d, so this one must be [%d, %d)",
					m.from, m.to, m.length, total, total, total+m.length)
			}
			eps[i].FirstIndex = m.from
		}
		total += m.length
	}
	if total != info.TotalFrames {
		ps.add(RuleRowRange, listFile, -1, -1, "the episode lengths sum to %d frames, info.json says total_frames is %d", total, info.TotalFrames)
	}
	return eps
}

// locate fills in each episode's data file and video files, and in v3.0
// each episode's first frame in its shared video files.
func (ds *Dataset) locate(dataTmpl, videoTmpl pathTemplate, ps *problems) {
	v3 := ds.Info.CodebaseVersion == V30
	for i := range ds.Episodes {
		e := &ds.Episodes[i]
		vals := templateValues{ints: map[string]int64{}, text: map[string]string{}}
		if v3 {
			vals.ints["chunk_index"], vals.ints["file_index"] = e.meta.dataChunk, e.meta.dataFile
		} else {
			vals.ints["episode_chunk"], vals.ints["episode_index"] = e.Index/ds.Info.ChunksSize, e.Index
		}
		var err error
		if e.DataFile, err = dataTmpl.format(vals); err != nil {
			ps.add(RulePathTemplate, e.meta.file, e.Index, e.meta.row, "data file: %v", err)
		}
		e.Videos = map[string]EpisodeVideo{}
		for _, cam := range ds.Cameras {
			vals.text["video_key"] = cam
			if v3 {
				vm := e.meta.videos[cam]
				vals.ints["chunk_index"], vals.ints["file_index"] = vm.chunk, vm.file
			}
			file, err := videoTmpl.format(vals)
			if err != nil {
				ps.add(RulePathTemplate, e.meta.file, e.Index, e.meta.row, "video of %s: %v", cam, err)
				continue
			}
			e.Videos[cam] = EpisodeVideo{File: file, FileEpisodes: []int64{e.Index}, FileFrames: e.Length}
		}
	}
	if v3 && !ps.any() {
		for _, cam := range ds.Cameras {
			ds.placeInSharedFiles(cam, ps)
		}
	}
}

// placeInSharedFiles computes, for one camera, each episode's first frame
// in its file as the sum of the lengths of the earlier episodes of that
// file (from_timestamp is a running float sum that drifts), and
// cross-checks it against round(from_timestamp * fps). The end of the
// last episode is checked against the file's frame count by Check.
func (ds *Dataset) placeInSharedFiles(cam string, ps *problems) {
	byFile := map[string][]int64{}
	for _, e := range ds.Episodes {
		f := e.Videos[cam].File
		byFile[f] = append(byFile[f], e.Index)
	}
	fps := ds.Info.FPS
	for file, members := range byFile {
		sort.Slice(members, func(a, b int) bool { return members[a] < members[b] })
		var frames int64
		for _, idx := range members {
			frames += ds.Episodes[idx].Length
		}
		var first int64
		for _, idx := range members {
			e := &ds.Episodes[idx]
			vm := e.meta.videos[cam]
			if fromFrame := math.Round(vm.fromTS * fps); int64(fromFrame) != first {
				ps.add(RuleVideoOffset, e.meta.file, e.Index, e.meta.row,
					"videos/%s/from_timestamp %.6f puts the episode at frame %.0f of %s, but the earlier episodes of that file have %d frames, so it starts at frame %d",
					cam, vm.fromTS, fromFrame, file, first, first)
			}
			e.Videos[cam] = EpisodeVideo{File: file, FirstFrame: first, FileEpisodes: members, FileFrames: frames}
			first += e.Length
		}
	}
}

// checkEpisodeTasks checks that every task an episode names is in the
// task table.
func checkEpisodeTasks(ds *Dataset, ps *problems) {
	known := map[string]bool{}
	for _, t := range ds.Tasks {
		known[t] = true
	}
	for _, e := range ds.Episodes {
		if len(e.Tasks) == 0 {
			ps.add(RuleTaskIndex, e.meta.file, e.Index, e.meta.row, "the episode lists no task")
		}
		for _, t := range e.Tasks {
			if !known[t] {
				ps.add(RuleTaskIndex, e.meta.file, e.Index, e.meta.row, "task %q is not in the task table", t)
			}
		}
	}
}
