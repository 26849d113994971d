package lerobot

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Rule names a check a dataset must pass before anything is imported.
type Rule string

// The rules. Every Problem carries one.
const (
	// RuleInfo: meta/info.json is unreadable or lacks a required field.
	RuleInfo Rule = "info"
	// RuleVersion: codebase_version is not v2.0, v2.1 or v3.0.
	RuleVersion Rule = "codebase_version"
	// RulePathTemplate: data_path or video_path uses an unknown
	// placeholder or format, is absolute, or climbs out with "..".
	RulePathTemplate Rule = "path_template"
	// RuleFeature: a feature cannot become a table column (image frames
	// inside rows, nested arrays, a missing or mistyped column, nulls).
	RuleFeature Rule = "feature"
	// RuleEpisodeIndex: episode indexes are not 0..N-1 with N =
	// total_episodes, or a row names another episode.
	RuleEpisodeIndex Rule = "episode_index"
	// RuleRowRange: an episode's rows are not where its metadata says
	// (v3.0 dataset_from_index/dataset_to_index runs, lengths, counts
	// summing to total_frames).
	RuleRowRange Rule = "row_range"
	// RuleIndexRun: the index column does not count up by one from the
	// episode's first global row.
	RuleIndexRun Rule = "index_run"
	// RuleFrameIndexRun: frame_index does not count 0, 1, 2, ... within
	// the episode.
	RuleFrameIndexRun Rule = "frame_index_run"
	// RuleTimestamp: |timestamp - frame_index / fps| exceeds the
	// tolerance.
	RuleTimestamp Rule = "timestamp"
	// RuleTaskIndex: a row's task_index is not among its episode's tasks,
	// or an episode names a task the task table lacks.
	RuleTaskIndex Rule = "task_index"
	// RuleVideoFrames: a video's frame count differs from the episode
	// length (v2.x), or from the sum of its episodes' lengths (v3.0).
	RuleVideoFrames Rule = "video_frames"
	// RuleVideoOffset: a v3.0 episode's from_timestamp/to_timestamp
	// disagree with its position in the shared video (the sum of the
	// lengths of the earlier episodes in the file).
	RuleVideoOffset Rule = "video_offset"
	// RulePartition: the column a table is partitioned by changes within
	// an episode.
	RulePartition Rule = "partition"
	// RuleMissingFile: a file the metadata points to does not exist.
	RuleMissingFile Rule = "missing_file"
	// RuleUnreadable: a file exists but is truncated or not what its
	// name says (JSON, Parquet or MP4).
	RuleUnreadable Rule = "unreadable"
)

// Problem is one rule a dataset breaks, located as precisely as known.
type Problem struct {
	Rule Rule
	// File is the dataset-relative path of the file at fault.
	File string
	// Episode is the episode index, or -1 when the problem is not about
	// one episode.
	Episode int64
	// Row is the row in File, counted from 0 (for JSON Lines files the
	// line number minus one), or -1 when not about one row.
	Row int64
	// Message says what is wrong and, where it helps, what to do.
	Message string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Episode >= 0 {
		fmt.Fprintf(&b, ": episode %d", p.Episode)
	}
	if p.Row >= 0 {
		if strings.HasSuffix(p.File, ".jsonl") {
			fmt.Fprintf(&b, ", line %d", p.Row+1)
		} else {
			fmt.Fprintf(&b, ", row %d", p.Row)
		}
	}
	fmt.Fprintf(&b, ": %s: %s", p.Rule, p.Message)
	return b.String()
}

// ErrInvalidDataset is what a *ValidationError matches with errors.Is.
var ErrInvalidDataset = errors.New("invalid LeRobot dataset")

// maxProblems bounds the problems a ValidationError keeps; the rest are
// only counted (a dataset with a bad clock breaks the timestamp rule in
// every row).
const maxProblems = 50

// ValidationError lists the rules a dataset breaks. Nothing is imported
// from a dataset that has one.
type ValidationError struct {
	// Dataset is the dataset folder.
	Dataset string
	// Problems are the first problems found, in the order found.
	Problems []Problem
	// Counts is the number of problems per rule, including those not
	// kept in Problems.
	Counts map[Rule]int
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("%s: %v: %s", e.Dataset, ErrInvalidDataset, e.Summary())
}

// Summary counts the problems by rule and lists those kept, one a line,
// with paths relative to the dataset.
func (e *ValidationError) Summary() string {
	total := 0
	var rules []string
	for r, n := range e.Counts {
		total += n
		rules = append(rules, fmt.Sprintf("%s: %d", r, n))
	}
	sort.Strings(rules)
	var b strings.Builder
	fmt.Fprintf(&b, "%d problem(s) (%s)", total, strings.Join(rules, ", "))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	if kept := len(e.Problems); kept < total {
		fmt.Fprintf(&b, "\n  ... and %d more", total-kept)
	}
	return b.String()
}

func (e *ValidationError) Is(target error) bool { return target == ErrInvalidDataset }

// Has reports whether a problem of rule r was found.
func (e *ValidationError) Has(r Rule) bool { return e.Counts[r] > 0 }

// problems collects Problems while a dataset is checked.
type problems struct {
	dataset string
	list    []Problem
	counts  map[Rule]int
}

func newProblems(dataset string) *problems {
	return &problems{dataset: dataset, counts: map[Rule]int{}}
}

func (ps *problems) add(rule Rule, file string, episode, row int64, format string, args ...any) {
	ps.counts[rule]++
	if len(ps.list) < maxProblems {
		ps.list = append(ps.list, Problem{Rule: rule, File: file, Episode: episode, Row: row, Message: fmt.Sprintf(format, args...)})
	}
}

func (ps *problems) any() bool { return len(ps.counts) > 0 }

// err returns the collected problems as an error, or nil.
func (ps *problems) err() error {
	if !ps.any() {
		return nil
	}
	return &ValidationError{Dataset: ps.dataset, Problems: ps.list, Counts: ps.counts}
}
