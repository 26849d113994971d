package lerobot

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/lerobottest"
	"github.com/framefs/framefs/table"
)

// ruleCase is a dataset that breaks one rule, and where the problem must
// be reported.
type ruleCase struct {
	name    string
	version string
	rule    Rule
	spec    func(s *lerobottest.Spec)
	// after changes the built dataset's files.
	after func(t *testing.T, d *lerobottest.Dataset)
	// want locates the problem: file (suffix), episode and row (-2: any).
	file         string
	episode, row int64
	// message holds a fragment the message must contain.
	message string
}

func truncate(t *testing.T, path string, keep float64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(float64(st.Size())*keep)); err != nil {
		t.Fatal(err)
	}
}

var ruleCases = []ruleCase{
	{name: "unsupported version", version: V21, rule: RuleVersion,
		spec: func(s *lerobottest.Spec) { s.MutateInfo = func(m map[string]any) { m["codebase_version"] = "v1.6" } },
		file: InfoPath, episode: -1, row: -1, message: `"v1.6" is not supported`},
	{name: "fps missing", version: V30, rule: RuleInfo,
		spec: func(s *lerobottest.Spec) { s.MutateInfo = func(m map[string]any) { delete(m, "fps") } },
		file: InfoPath, episode: -1, row: -1, message: "fps is missing"},
	{name: "template climbs out", version: V21, rule: RulePathTemplate,
		spec: func(s *lerobottest.Spec) {
			s.MutateInfo = func(m map[string]any) {
				m["data_path"] = "data/../../{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
			}
		},
		file: InfoPath, episode: -1, row: -1, message: `".."`},
	{name: "absolute template", version: V30, rule: RulePathTemplate,
		spec: func(s *lerobottest.Spec) {
			s.MutateInfo = func(m map[string]any) {
				m["video_path"] = "/videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
			}
		},
		file: InfoPath, episode: -1, row: -1, message: "not a relative path"},
	{name: "unknown placeholder", version: V30, rule: RulePathTemplate,
		spec: func(s *lerobottest.Spec) {
			// a v2 placeholder in a v3.0 dataset
			s.MutateInfo = func(m map[string]any) {
				m["data_path"] = "data/chunk-{episode_chunk:03d}/file-{file_index:03d}.parquet"
			}
		},
		file: InfoPath, episode: -1, row: -1, message: "unknown placeholder {episode_chunk:03d}"},
	{name: "total episodes", version: V21, rule: RuleEpisodeIndex,
		spec: func(s *lerobottest.Spec) { s.MutateInfo = func(m map[string]any) { m["total_episodes"] = 7 } },
		file: "meta/episodes.jsonl", episode: -1, row: -1, message: "total_episodes is 7"},
	{name: "episode index gap", version: V30, rule: RuleEpisodeIndex,
		spec: func(s *lerobottest.Spec) {
			s.MutateEpisode = func(m *lerobottest.EpisodeMeta) {
				if m.Index == 4 {
					m.Index = 9
				}
			}
		},
		file: "meta/episodes/chunk-000/file-000.parquet", episode: 9, row: 4, message: "outside 0..5"},
	{name: "row names another episode", version: V21, rule: RuleEpisodeIndex,
		spec: func(s *lerobottest.Spec) {
			s.MutateRow = func(ep, k int, r *lerobottest.Row) {
				if ep == 3 && k == 6 {
					r.EpisodeIndex = 2
				}
			}
		},
		file: "data/chunk-000/episode_000003.parquet", episode: 2, row: 6, message: "does not place in this file"},
	{name: "row ranges not contiguous", version: V30, rule: RuleRowRange,
		spec: func(s *lerobottest.Spec) {
			s.MutateEpisode = func(m *lerobottest.EpisodeMeta) {
				if m.Index == 2 {
					m.From++
					m.To++
				}
			}
		},
		file: "meta/episodes/chunk-000/file-000.parquet", episode: 2, row: 2, message: "must be [21, 36)"},
	{name: "total frames", version: V30, rule: RuleRowRange,
		spec: func(s *lerobottest.Spec) { s.MutateInfo = func(m map[string]any) { m["total_frames"] = 65 } },
		file: "meta/episodes", episode: -1, row: -1, message: "total_frames is 65"},
	{name: "index run", version: V30, rule: RuleIndexRun,
		spec: func(s *lerobottest.Spec) {
			s.MutateRow = func(ep, k int, r *lerobottest.Row) {
				if ep == 3 && k == 4 {
					r.Index += 100
				}
			}
		},
		// episode 3 starts at file row 36 of the first data file
		file: "data/chunk-000/file-000.parquet", episode: 3, row: 40, message: "index is 140, want 40"},
	{name: "frame index run", version: V21, rule: RuleFrameIndexRun,
		spec: func(s *lerobottest.Spec) {
			s.MutateRow = func(ep, k int, r *lerobottest.Row) {
				if ep == 1 && k >= 5 {
					r.FrameIndex, r.Timestamp = int64(k+1), float32(k+1)/30
				}
			}
		},
		file: "data/chunk-000/episode_000001.parquet", episode: 1, row: 5, message: "frame_index is 6, want 5 (frame_index counts"},
	{name: "timestamp", version: V30, rule: RuleTimestamp,
		spec: func(s *lerobottest.Spec) {
			s.MutateRow = func(ep, k int, r *lerobottest.Row) {
				if ep == 4 && k >= 3 {
					r.Timestamp += 0.002
				}
			}
		},
		file: "data/chunk-000/file-001.parquet", episode: 4, row: 3, message: "and 3 more rows"},
	{name: "task not among the episode's", version: V21, rule: RuleTaskIndex,
		spec: func(s *lerobottest.Spec) {
			s.MutateRow = func(ep, k int, r *lerobottest.Row) {
				if ep == 1 && k == 2 {
					r.TaskIndex = 0
				}
			}
		},
		file: "data/chunk-000/episode_000001.parquet", episode: 1, row: 2, message: `task_index 0 ("pick the cube") is not among the episode's tasks ["place the cube"]`},
	{name: "task not in the table", version: V30, rule: RuleTaskIndex,
		spec: func(s *lerobottest.Spec) {
			s.MutateRow = func(ep, k int, r *lerobottest.Row) {
				if ep == 5 && k == 0 {
					r.TaskIndex = 9
				}
			}
		},
		file: "data/chunk-000/file-001.parquet", episode: 5, row: 7, message: "task_index 9 is not in the task table"},
	{name: "v2 video frames", version: V21, rule: RuleVideoFrames,
		spec: func(s *lerobottest.Spec) {
			s.VideoFrames = func(cam string, ep int) int {
				if cam == camWrist && ep == 3 {
					return s.Lengths[ep] - 1
				}
				return s.Lengths[ep]
			}
		},
		file: "videos/chunk-000/observation.images.wrist/episode_000003.mp4", episode: 3, row: -1, message: "has 10 frames, the episode has length 11"},
	{name: "v3 file frames", version: V30, rule: RuleVideoFrames,
		spec: func(s *lerobottest.Spec) {
			s.VideoFrames = func(cam string, ep int) int {
				if cam == camTop && ep == 5 {
					return s.Lengths[ep] + 2
				}
				return s.Lengths[ep]
			}
		},
		file: "videos/observation.images.top/chunk-000/file-001.mp4", episode: 4, row: -1, message: "has 19 frames, its episodes 4-5 have 17"},
	{name: "video offset", version: V30, rule: RuleVideoOffset,
		spec: func(s *lerobottest.Spec) {
			s.MutateEpisode = func(m *lerobottest.EpisodeMeta) {
				if m.Index == 2 {
					m.FromTS[camTop] += 1.0 / 30
				}
			}
		},
		file: "meta/episodes/chunk-000/file-000.parquet", episode: 2, row: 2, message: "puts the episode at frame 22 of videos/observation.images.top/chunk-000/file-000.mp4, but the earlier episodes of that file have 21 frames"},
	{name: "missing video", version: V21, rule: RuleMissingFile,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			os.Remove(filepath.Join(d.Dir, d.EpisodeFile[camTop][4]))
		},
		file: "videos/chunk-000/observation.images.top/episode_000004.mp4", episode: 4, row: -1, message: "is missing"},
	{name: "missing data file", version: V30, rule: RuleMissingFile,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			os.Remove(filepath.Join(d.Dir, d.DataFiles[1]))
		},
		file: "data/chunk-000/file-001.parquet", episode: 4, row: -1, message: "the frame rows is missing"},
	{name: "truncated mp4", version: V30, rule: RuleUnreadable,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			truncate(t, filepath.Join(d.Dir, d.Videos[camWrist][0]), 0.6)
		},
		file: "videos/observation.images.wrist/chunk-000/file-000.mp4", episode: 0, row: -1, message: "truncated"},
	{name: "truncated mp4 without moov", version: V20, rule: RuleUnreadable,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			truncate(t, filepath.Join(d.Dir, d.EpisodeFile[camTop][2]), 0.9)
		},
		file: "videos/chunk-000/observation.images.top/episode_000002.mp4", episode: 2, row: -1, message: "not a readable video"},
	{name: "truncated parquet", version: V21, rule: RuleUnreadable,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			truncate(t, filepath.Join(d.Dir, d.DataFiles[3]), 0.5)
		},
		file: "data/chunk-000/episode_000003.parquet", episode: 3, row: -1, message: "cannot read the frame rows"},
	{name: "image feature", version: V30, rule: RuleFeature,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			addFeature(t, d, `"observation.images.side": {"dtype": "image", "shape": [64, 64, 3], "names": ["height", "width", "channels"]}`)
		},
		file: InfoPath, episode: -1, row: -1, message: `"observation.images.side" has dtype "image"`},
	{name: "null value", version: V30, rule: RuleFeature,
		spec: func(s *lerobottest.Spec) {
			s.NullReward = func(ep, k int) bool { return ep == 5 && k == 3 }
		},
		file: "data/chunk-000/file-001.parquet", episode: 5, row: 10, message: `column "next.reward" has a null value`},
	{name: "feature column missing", version: V21, rule: RuleFeature,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			addFeature(t, d, `"observation.velocity": {"dtype": "float32", "shape": [6], "names": null}`)
		},
		file: "data/chunk-000/episode_000000.parquet", episode: -1, row: -1, message: `column "observation.velocity" (a feature in info.json) is missing`},
	{name: "overlong feature name", version: V30, rule: RuleFeature,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			addFeature(t, d, `"`+strings.Repeat("x", 300)+`": {"dtype": "float32", "shape": [1]}`)
		},
		file: InfoPath, episode: -1, row: -1, message: "is longer than 200 bytes"},
	{name: "reserved feature name", version: V21, rule: RuleFeature,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			addFeature(t, d, `"_hidden": {"dtype": "float32", "shape": [1]}`)
		},
		file: InfoPath, episode: -1, row: -1, message: `"_hidden": names starting with '_' are reserved`},
	{name: "robot_type not UTF-8", version: V21, rule: RuleInfo,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			editInfo(t, d, `"robot_type": "so100"`, "\"robot_type\": \"so\xff100\"")
		},
		file: InfoPath, episode: -1, row: -1, message: "robot_type is not valid UTF-8"},
	{name: "features too large for a table", version: V30, rule: RuleInfo,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			editInfo(t, d, `"dtype": "int16",`, `"dtype": "int16", "comment": "`+strings.Repeat("c", 1<<20)+`",`)
		},
		file: InfoPath, episode: -1, row: -1, message: "the table schema made from it is refused"},
	{name: "array longer than its shape", version: V21, rule: RuleFeature,
		after: func(t *testing.T, d *lerobottest.Dataset) {
			editInfo(t, d, `("observation.effort": \{\s*"dtype": "int16",\s*"names": null,\s*"shape": \[\s*)2`, "${1}1")
		},
		file: "data/chunk-000/episode_000000.parquet", episode: 0, row: 0,
		message: `column "observation.effort" holds 2 values, but its feature's shape in info.json is [1] (and 11 more rows of this file)`},
}

// editInfo replaces the first match of the regular expression old with
// new (which may refer to its groups) in a built dataset's info.json.
func editInfo(t *testing.T, d *lerobottest.Dataset, old, new string) {
	t.Helper()
	p := filepath.Join(d.Dir, InfoPath)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(old)
	loc := re.FindSubmatchIndex(data)
	if loc == nil {
		t.Fatalf("%q is not in info.json", old)
	}
	s := string(data[:loc[0]]) + string(re.Expand(nil, []byte(new), data, loc)) + string(data[loc[1]:])
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// addFeature adds a feature to a built dataset's info.json.
func addFeature(t *testing.T, d *lerobottest.Dataset, entry string) {
	t.Helper()
	p := filepath.Join(d.Dir, InfoPath)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(data), `"features": {`, `"features": {`+entry+", ", 1)
	if s == string(data) {
		t.Fatal("no features object in info.json")
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestValidationRules builds one dataset per rule and checks that the
// import refuses it with that rule, at the right file, episode and row,
// without writing a table.
func TestValidationRules(t *testing.T) {
	for _, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			spec := testSpec(c.version)
			if c.spec != nil {
				c.spec(&spec)
			}
			d := build(t, spec)
			if c.after != nil {
				c.after(t, d)
			}
			store := newStore(t)
			_, err := importDir(t, d.Dir, store, ImportOptions{})
			var verr *ValidationError
			if !errors.As(err, &verr) || !errors.Is(err, ErrInvalidDataset) {
				t.Fatalf("import: %v, want a validation error", err)
			}
			if !verr.Has(c.rule) {
				t.Fatalf("no %s problem in:\n%v", c.rule, err)
			}
			found := false
			for _, p := range verr.Problems {
				if p.Rule == c.rule && strings.HasSuffix(p.File, c.file) && p.Episode == c.episode && p.Row == c.row && strings.Contains(p.Message, c.message) {
					found = true
				}
			}
			if !found {
				t.Fatalf("want a %s problem at %s episode %d row %d saying %q; got:\n%v", c.rule, c.file, c.episode, c.row, c.message, err)
			}
			if !strings.Contains(err.Error(), c.file) || !strings.Contains(err.Error(), string(c.rule)) {
				t.Errorf("the message does not name the file and the rule: %v", err)
			}
			if objs, _ := store.List(t.Context(), ""); len(objs) != 0 {
				t.Errorf("a refused import left %d objects in the table's place", len(objs))
			}
		})
	}
}

// A raised tolerance accepts a drifting clock and the import says how
// many rows exceeded the default.
func TestTimestampTolerance(t *testing.T) {
	spec := testSpec(V30)
	spec.MutateRow = func(ep, k int, r *lerobottest.Row) {
		if ep == 4 && k >= 3 {
			r.Timestamp += 0.002
		}
	}
	d := build(t, spec)
	res, err := importDir(t, d.Dir, newStore(t), ImportOptions{TimestampTolerance: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != 6 || res.TimestampsOverDefault != 4 || res.MaxTimestampError < 0.0019 || res.MaxTimestampError > 0.0021 {
		t.Errorf("result %+v: want 4 rows over the default, max error 0.002", res)
	}
}

// An episode selection imports those episodes only, and a later import of
// all skips them.
func TestEpisodeSelection(t *testing.T) {
	d := build(t, testSpec(V30))
	store := newStore(t)
	sel, err := ParseEpisodes("1-2,4")
	if err != nil {
		t.Fatal(err)
	}
	res, err := importDir(t, d.Dir, store, ImportOptions{Episodes: sel})
	if err != nil || res.Imported != 3 || res.Frames != 9+15+7 {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = importDir(t, d.Dir, store, ImportOptions{BatchEpisodes: 2})
	if err != nil || res.Imported != 3 || res.Skipped != 3 || len(res.Snapshots) != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := importDir(t, d.Dir, store, ImportOptions{Episodes: []int64{6}}); err == nil || !strings.Contains(err.Error(), "episode 6 is not in the dataset") {
		t.Errorf("selecting a missing episode: %v", err)
	}
	for _, bad := range []string{"", "3-1", "x", "-2"} {
		if _, err := ParseEpisodes(bad); err == nil {
			t.Errorf("ParseEpisodes(%q) accepted", bad)
		}
	}
}

// --partition task partitions the table by task text; an episode with
// two tasks cannot be in one partition and is refused before any commit.
func TestPartitionByTask(t *testing.T) {
	d := build(t, testSpec(V30))
	store := newStore(t)
	_, err := importDir(t, d.Dir, store, ImportOptions{Partition: TaskColumn, BatchEpisodes: 1})
	var verr *ValidationError
	if !errors.As(err, &verr) || !verr.Has(RulePartition) || !strings.Contains(err.Error(), "data/chunk-000/file-000.parquet: episode 2, row 29: partition: task is 2") {
		t.Fatalf("import of an episode with two tasks, partitioned by task: %v", err)
	}
	if objs, _ := store.List(t.Context(), ""); len(objs) != 0 {
		t.Errorf("a refused import left %d objects", len(objs))
	}
	spec := testSpec(V30)
	spec.EpisodeTasks[2] = []int{2}
	d = build(t, spec)
	if _, err := importDir(t, d.Dir, store, ImportOptions{Partition: TaskColumn}); err != nil {
		t.Fatal(err)
	}
	tbl, _ := table.Open(t.Context(), store, table.Options{})
	_, eps := headEpisodes(t, tbl)
	parts := map[string]string{}
	for _, e := range eps {
		parts[e.Episode] = e.Partition[TaskColumn]
	}
	if parts["episode_000002"] != "push the button" || parts["episode_000004"] != "place the cube" || len(parts) != 6 {
		t.Errorf("partitions %v", parts)
	}
}
