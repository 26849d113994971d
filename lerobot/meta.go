package lerobot

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/framefs/framefs/internal/regfile"
)

// episodeMeta is one episode's metadata row (episodes.jsonl in v2.x, a
// row of meta/episodes/ in v3.0).
type episodeMeta struct {
	index  int64
	tasks  []string
	length int64
	// where the row is, for messages
	file string
	row  int64
	// v3.0 only: the data file and the global row range, and per camera
	// the video file and the time range within it.
	dataChunk, dataFile int64
	from, to            int64
	videos              map[string]videoMeta
}

type videoMeta struct {
	chunk, file  int64
	fromTS, toTS float64
}

// maxJSONLine bounds a line of a JSON Lines file.
const maxJSONLine = 64 << 20

// readJSONLines calls fn for every non-blank line of a JSON Lines file
// (a regular file of at most MaxMetadataBytes) with its 0-based line
// number.
func readJSONLines(path string, fn func(line int64, obj []byte) error) error {
	f, err := regfile.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() > MaxMetadataBytes {
		return &regfile.TooLargeError{Path: path, Size: st.Size(), Limit: MaxMetadataBytes}
	}
	return scanJSONLines(io.LimitReader(f, MaxMetadataBytes), fn)
}

// scanJSONLines calls fn for every non-blank line read from r.
func scanJSONLines(r io.Reader, fn func(line int64, obj []byte) error) error {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), maxJSONLine)
	for line := int64(0); s.Scan(); line++ {
		text := bytes.TrimSpace(s.Bytes())
		if len(text) == 0 {
			continue
		}
		if err := fn(line, text); err != nil {
			return err
		}
	}
	if errors.Is(s.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("a line is longer than %d bytes", maxJSONLine)
	}
	return s.Err()
}

// readFileProblem records a file that cannot be read as missing or
// unreadable.
func readFileProblem(ps *problems, rel string, episode int64, err error, what string) {
	var notRegular *regfile.NotRegularError
	var tooLarge *regfile.TooLargeError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ps.add(RuleMissingFile, rel, episode, -1, "%s is missing", what)
	case errors.As(err, &notRegular):
		ps.add(RuleUnreadable, rel, episode, -1, "%s is a %s, not a regular file (links to regular files are followed)", what, notRegular.Kind)
	case errors.As(err, &tooLarge):
		ps.add(RuleUnreadable, rel, episode, -1, "%s holds %d bytes, more than the %d framefs reads for it", what, tooLarge.Size, tooLarge.Limit)
	default:
		ps.add(RuleUnreadable, rel, episode, -1, "cannot read %s: %v", what, err)
	}
}

// readLegacyEpisodes reads meta/episodes.jsonl (v2.x).
func readLegacyEpisodes(dir string, ps *problems) []episodeMeta {
	var out []episodeMeta
	err := readJSONLines(filepath.Join(dir, legacyEpisodes), func(line int64, obj []byte) error {
		var e struct {
			Index  *int64   `json:"episode_index"`
			Tasks  []string `json:"tasks"`
			Length *int64   `json:"length"`
		}
		if err := json.Unmarshal(obj, &e); err != nil {
			ps.add(RuleUnreadable, legacyEpisodes, -1, line, "not an episode object: %v", err)
			return nil
		}
		if e.Index == nil || e.Length == nil {
			ps.add(RuleUnreadable, legacyEpisodes, -1, line, "episode_index and length are required")
			return nil
		}
		out = append(out, episodeMeta{index: *e.Index, tasks: e.Tasks, length: *e.Length, file: legacyEpisodes, row: line})
		return nil
	})
	if err != nil {
		readFileProblem(ps, legacyEpisodes, -1, err, "the episode list")
	}
	return out
}

// readLegacyTasks reads meta/tasks.jsonl (v2.x).
func readLegacyTasks(dir string, ps *problems) map[int64]string {
	out := map[int64]string{}
	err := readJSONLines(filepath.Join(dir, legacyTasks), func(line int64, obj []byte) error {
		var t struct {
			Index *int64  `json:"task_index"`
			Task  *string `json:"task"`
		}
		if err := json.Unmarshal(obj, &t); err != nil || t.Index == nil || t.Task == nil {
			ps.add(RuleUnreadable, legacyTasks, -1, line, "want {\"task_index\": N, \"task\": \"...\"}")
			return nil
		}
		if _, dup := out[*t.Index]; dup {
			ps.add(RuleTaskIndex, legacyTasks, -1, line, "task_index %d is listed twice", *t.Index)
		}
		out[*t.Index] = *t.Task
		return nil
	})
	if err != nil {
		readFileProblem(ps, legacyTasks, -1, err, "the task list")
	}
	return out
}

// readEpisodesV3 reads every meta/episodes/chunk-*/file-*.parquet (v3.0),
// in path order as LeRobot does.
func readEpisodesV3(ctx context.Context, dir string, cameras []string, ps *problems) []episodeMeta {
	files, _ := filepath.Glob(filepath.Join(dir, episodesDir, "*", "*.parquet"))
	if len(files) == 0 {
		ps.add(RuleMissingFile, episodesDir, -1, -1, "no episode metadata (chunk-*/file-*.parquet) found")
		return nil
	}
	slices.Sort(files)
	names := []string{"episode_index", "tasks", "length", "dataset_from_index", "dataset_to_index", "data/chunk_index", "data/file_index"}
	for _, cam := range cameras {
		for _, c := range []string{"chunk_index", "file_index", "from_timestamp", "to_timestamp"} {
			names = append(names, "videos/"+cam+"/"+c)
		}
	}
	var out []episodeMeta
	for _, path := range files {
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		t, err := readParquet(ctx, path, names, MaxMetadataBytes)
		if err != nil {
			readFileProblem(ps, rel, -1, err, "episode metadata")
			continue
		}
		out = append(out, episodesFromTable(t, rel, cameras, ps)...)
		t.release()
	}
	return out
}

func episodesFromTable(t *parquetTable, rel string, cameras []string, ps *problems) []episodeMeta {
	required := []string{"episode_index", "tasks", "length", "dataset_from_index", "dataset_to_index", "data/chunk_index", "data/file_index"}
	for _, cam := range cameras {
		required = append(required, "videos/"+cam+"/chunk_index", "videos/"+cam+"/file_index",
			"videos/"+cam+"/from_timestamp", "videos/"+cam+"/to_timestamp")
	}
	var missing []string
	for _, name := range required {
		if t.cols[name] == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		ps.add(RuleUnreadable, rel, -1, -1, "episode metadata lacks column(s) %s", strings.Join(missing, ", "))
		return nil
	}
	var out []episodeMeta
	for i := 0; i < int(t.rows); i++ {
		e := episodeMeta{file: rel, row: int64(i), videos: map[string]videoMeta{}}
		ok := true
		get := func(name string, dst *int64) {
			v, good := intAt(t.cols[name], i)
			if !good {
				ps.add(RuleUnreadable, rel, -1, int64(i), "%s is null or not an integer", name)
				ok = false
			}
			*dst = v
		}
		get("episode_index", &e.index)
		get("length", &e.length)
		get("dataset_from_index", &e.from)
		get("dataset_to_index", &e.to)
		get("data/chunk_index", &e.dataChunk)
		get("data/file_index", &e.dataFile)
		tasks, good := stringsAt(t.cols["tasks"], i)
		if !good {
			ps.add(RuleUnreadable, rel, e.index, int64(i), "tasks is not a list of strings")
			ok = false
		}
		e.tasks = tasks
		for _, cam := range cameras {
			var vm videoMeta
			get("videos/"+cam+"/chunk_index", &vm.chunk)
			get("videos/"+cam+"/file_index", &vm.file)
			from, f1 := floatAt(t.cols["videos/"+cam+"/from_timestamp"], i)
			to, f2 := floatAt(t.cols["videos/"+cam+"/to_timestamp"], i)
			if !f1 || !f2 {
				ps.add(RuleUnreadable, rel, e.index, int64(i), "videos/%s/from_timestamp or to_timestamp is null or not a number", cam)
				ok = false
			}
			vm.fromTS, vm.toTS = from, to
			e.videos[cam] = vm
		}
		if ok {
			out = append(out, e)
		}
	}
	return out
}

// readTasksV3 reads meta/tasks.parquet: a pandas frame whose index holds
// the task text, stored as a column named by the pandas metadata
// (usually "task", else "__index_level_0__"), next to task_index.
func readTasksV3(ctx context.Context, dir string, ps *problems) map[int64]string {
	out := map[int64]string{}
	t, err := readParquet(ctx, filepath.Join(dir, tasksParquet), nil, MaxMetadataBytes)
	if err != nil {
		readFileProblem(ps, tasksParquet, -1, err, "the task table")
		return out
	}
	defer t.release()
	idx := t.cols["task_index"]
	textCol := taskTextColumn(t)
	if idx == nil || textCol == "" {
		ps.add(RuleUnreadable, tasksParquet, -1, -1, "want a task_index column and the task text (the pandas index, e.g. column \"task\")")
		return out
	}
	for i := 0; i < int(t.rows); i++ {
		n, ok1 := intAt(idx, i)
		text, ok2 := stringAt(t.cols[textCol], i)
		if !ok1 || !ok2 {
			ps.add(RuleUnreadable, tasksParquet, -1, int64(i), "task_index or %s is null", textCol)
			continue
		}
		if _, dup := out[n]; dup {
			ps.add(RuleTaskIndex, tasksParquet, -1, int64(i), "task_index %d is listed twice", n)
		}
		out[n] = text
	}
	return out
}

// taskTextColumn finds the column holding the task text of tasks.parquet.
func taskTextColumn(t *parquetTable) string {
	isText := func(name string) bool {
		f, ok := t.field(name)
		return ok && (f.Type.ID() == arrow.STRING || f.Type.ID() == arrow.LARGE_STRING || f.Type.ID() == arrow.STRING_VIEW)
	}
	if t.pandas != "" {
		var meta struct {
			IndexColumns []json.RawMessage `json:"index_columns"`
		}
		if json.Unmarshal([]byte(t.pandas), &meta) == nil {
			for _, raw := range meta.IndexColumns {
				var name string
				if json.Unmarshal(raw, &name) == nil && isText(name) {
					return name // a RangeIndex is an object, not a name
				}
			}
		}
	}
	for _, name := range []string{"task", "__index_level_0__"} {
		if isText(name) {
			return name
		}
	}
	var texts []string
	for _, f := range t.fields {
		if f.Name != "task_index" && isText(f.Name) {
			texts = append(texts, f.Name)
		}
	}
	if len(texts) == 1 {
		return texts[0]
	}
	return ""
}

// describeTasks lists task texts for messages.
func describeTasks(tasks []string) string {
	quoted := make([]string, len(tasks))
	for i, t := range tasks {
		quoted[i] = fmt.Sprintf("%q", t)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
