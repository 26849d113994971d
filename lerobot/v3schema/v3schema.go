// Package v3schema spells the columns of LeRobot v3.0's episode metadata
// (meta/episodes/chunk-*/file-*.parquet) once, for everything in framefs
// that writes such a file: the exporter (package lerobot) and the test
// datasets (internal/lerobottest). The reader keeps its own list of the
// columns it requires, so that a wrong name here fails its tests.
package v3schema

import "github.com/apache/arrow-go/v18/arrow"

// EpisodeColumns are the columns of a v3.0 episode metadata file before
// the per-episode statistics, in the order LeRobot writes them:
// episode_index, tasks, length, data/chunk_index, data/file_index,
// dataset_from_index, dataset_to_index; for each camera (a video
// feature's key) videos/CAM/chunk_index, file_index, from_timestamp and
// to_timestamp; then meta/episodes/chunk_index and file_index. Every
// column is nullable, as pyarrow writes pandas' columns.
func EpisodeColumns(cameras []string) []arrow.Field {
	i64, f64 := arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64
	fields := []arrow.Field{
		{Name: "episode_index", Type: i64},
		{Name: "tasks", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "length", Type: i64},
		{Name: "data/chunk_index", Type: i64},
		{Name: "data/file_index", Type: i64},
		{Name: "dataset_from_index", Type: i64},
		{Name: "dataset_to_index", Type: i64},
	}
	for _, cam := range cameras {
		fields = append(fields,
			arrow.Field{Name: "videos/" + cam + "/chunk_index", Type: i64},
			arrow.Field{Name: "videos/" + cam + "/file_index", Type: i64},
			arrow.Field{Name: "videos/" + cam + "/from_timestamp", Type: f64},
			arrow.Field{Name: "videos/" + cam + "/to_timestamp", Type: f64})
	}
	fields = append(fields,
		arrow.Field{Name: "meta/episodes/chunk_index", Type: i64},
		arrow.Field{Name: "meta/episodes/file_index", Type: i64})
	for i := range fields {
		fields[i].Nullable = true
	}
	return fields
}
