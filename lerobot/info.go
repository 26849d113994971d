package lerobot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Codebase versions this package reads.
const (
	V20 = "v2.0"
	V21 = "v2.1"
	V30 = "v3.0"
)

// Paths of the metadata files, relative to the dataset folder.
const (
	InfoPath          = "meta/info.json"
	legacyEpisodes    = "meta/episodes.jsonl"
	legacyTasks       = "meta/tasks.jsonl"
	legacyEpStats     = "meta/episodes_stats.jsonl"
	legacyStats       = "meta/stats.json"
	episodesDir       = "meta/episodes"
	tasksParquet      = "meta/tasks.parquet"
	defaultV3DataPath = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
	defaultV3Video    = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
)

// Size limits of the metadata files an import reads, far above what real
// datasets hold: info.json is a few kilobytes, and a line of
// episodes.jsonl or a row of meta/episodes/ a few hundred bytes to a few
// kilobytes (with statistics), so a gigabyte holds hundreds of thousands
// of episodes. A larger file, or a link to a device such as /dev/zero,
// is refused (rule unreadable) before it is read.
const (
	// MaxInfoBytes bounds meta/info.json.
	MaxInfoBytes = 16 << 20
	// MaxMetadataBytes bounds each of meta/episodes.jsonl,
	// meta/tasks.jsonl, meta/episodes/*/*.parquet and meta/tasks.parquet.
	MaxMetadataBytes = 1 << 30
)

// Columns every LeRobot frame row has, with their dtypes.
var standardColumns = []struct{ name, dtype string }{
	{"timestamp", "float32"}, {"frame_index", "int64"}, {"episode_index", "int64"},
	{"index", "int64"}, {"task_index", "int64"},
}

// Info is meta/info.json.
type Info struct {
	CodebaseVersion string
	// FPS is the frame rate of every episode: row i is at i/FPS seconds.
	FPS           float64
	TotalEpisodes int64
	TotalFrames   int64
	TotalTasks    int64
	// ChunksSize is the number of episodes (v2.x) or files (v3.0) per
	// chunk folder.
	ChunksSize int64
	DataPath   string
	// VideoPath is "" for datasets without videos.
	VideoPath string
	// RobotType is the robot_type value as written (a JSON string or
	// null).
	RobotType json.RawMessage
	// Features are the features in the order info.json lists them.
	Features []Feature
}

// Feature is one entry of info.json's features.
type Feature struct {
	Key   string
	DType string
	Shape []int64
	// Raw is the feature's JSON object as written (names, info, ...).
	Raw json.RawMessage
}

// IsVideo reports whether the feature is a camera stored as video.
func (f Feature) IsVideo() bool { return f.DType == "video" }

// Feature returns the feature called key.
func (in *Info) Feature(key string) (Feature, bool) {
	for _, f := range in.Features {
		if f.Key == key {
			return f, true
		}
	}
	return Feature{}, false
}

// parseInfo reads info.json. Problems found are added to ps; the Info is
// usable only when ps stays empty.
func parseInfo(data []byte, ps *problems) *Info {
	bad := func(format string, args ...any) { ps.add(RuleInfo, InfoPath, -1, -1, format, args...) }
	var raw struct {
		CodebaseVersion *string          `json:"codebase_version"`
		FPS             *float64         `json:"fps"`
		TotalEpisodes   *int64           `json:"total_episodes"`
		TotalFrames     *int64           `json:"total_frames"`
		TotalTasks      int64            `json:"total_tasks"`
		ChunksSize      *int64           `json:"chunks_size"`
		DataPath        *string          `json:"data_path"`
		VideoPath       *string          `json:"video_path"`
		RobotType       json.RawMessage  `json:"robot_type"`
		Features        *json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		ps.add(RuleUnreadable, InfoPath, -1, -1, "not a JSON object as info.json must be: %v", err)
		return nil
	}
	in := &Info{TotalTasks: raw.TotalTasks, RobotType: raw.RobotType}
	if !utf8.Valid(raw.RobotType) {
		ps.add(RuleInfo, InfoPath, -1, -1, "robot_type is not valid UTF-8")
		return nil
	}
	if raw.CodebaseVersion == nil {
		ps.add(RuleVersion, InfoPath, -1, -1, "codebase_version is missing (framefs reads v2.0, v2.1 and v3.0)")
		return nil
	}
	in.CodebaseVersion = *raw.CodebaseVersion
	switch in.CodebaseVersion {
	case V20, V21, V30:
	default:
		ps.add(RuleVersion, InfoPath, -1, -1, "codebase_version %q is not supported: framefs reads v2.0, v2.1 and v3.0 (convert older datasets with LeRobot's conversion scripts first)", in.CodebaseVersion)
		return nil
	}
	switch {
	case raw.FPS == nil:
		bad("fps is missing")
	case *raw.FPS <= 0 || math.IsInf(*raw.FPS, 0) || math.IsNaN(*raw.FPS):
		bad("fps %v is not a positive frame rate", *raw.FPS)
	default:
		in.FPS = *raw.FPS
	}
	if raw.TotalEpisodes == nil || *raw.TotalEpisodes < 0 {
		bad("total_episodes is missing or negative")
	} else {
		in.TotalEpisodes = *raw.TotalEpisodes
	}
	if raw.TotalFrames == nil || *raw.TotalFrames < 0 {
		bad("total_frames is missing or negative")
	} else {
		in.TotalFrames = *raw.TotalFrames
	}
	if raw.ChunksSize != nil {
		in.ChunksSize = *raw.ChunksSize
	}
	if in.CodebaseVersion != V30 && in.ChunksSize <= 0 {
		bad("chunks_size is missing or not positive; v2 paths need it to find an episode's chunk")
	}
	if raw.DataPath != nil {
		in.DataPath = *raw.DataPath
	} else if in.CodebaseVersion == V30 {
		in.DataPath = defaultV3DataPath
	} else {
		bad("data_path is missing")
	}
	if raw.VideoPath != nil {
		in.VideoPath = *raw.VideoPath
	}
	if raw.Features == nil {
		bad("features is missing")
		return nil
	}
	feats, err := orderedFeatures(*raw.Features)
	if err != nil {
		bad("features: %v", err)
		return nil
	}
	in.Features = feats
	for _, f := range in.Features {
		if f.IsVideo() && in.VideoPath == "" && in.CodebaseVersion == V30 {
			in.VideoPath = defaultV3Video
		}
		if f.IsVideo() && in.VideoPath == "" {
			bad("feature %q is a video but video_path is null", f.Key)
		}
	}
	return in
}

// orderedFeatures decodes the features object keeping its key order,
// which is the column order of the dataset's rows.
func orderedFeatures(data json.RawMessage) ([]Feature, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out []Feature
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("feature %q: %v", key, err)
		}
		var f struct {
			DType string  `json:"dtype"`
			Shape []int64 `json:"shape"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("feature %q: %v", key, err)
		}
		if f.DType == "" {
			return nil, fmt.Errorf("feature %q has no dtype", key)
		}
		if seen[key] {
			return nil, fmt.Errorf("feature %q is listed twice", key)
		}
		if key == "" || key == "." || key == ".." || strings.ContainsAny(key, "/\\") {
			return nil, fmt.Errorf("feature name %q cannot name a column or folder (no '/', '\\', '.' or '..')", key)
		}
		seen[key] = true
		out = append(out, Feature{Key: key, DType: f.DType, Shape: f.Shape, Raw: raw})
	}
	return out, nil
}
