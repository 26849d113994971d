// Package lerobot reads, checks and writes LeRobot datasets (codebase
// versions v2.0, v2.1 and v3.0) and moves them into and out of framefs
// tables without re-encoding a frame.
//
// A LeRobot dataset is a folder: meta/info.json describes the features
// (cameras are features of dtype "video"), the episodes and the path
// templates; frame rows live in Parquet files under data/ and each
// camera's frames in MP4 files under videos/. In v2.x every episode has
// its own Parquet file and one MP4 per camera; in v3.0 a file holds many
// consecutive episodes (videos joined by stream copy) and the episode
// metadata in meta/episodes/ says where each episode starts.
//
// The package owns the dataset side: parsing the metadata, validating
// every rule an import relies on (each failure names the file, the
// episode, the row and the rule), mapping features to table columns,
// importing episodes in commits of bounded size that a rerun resumes, and
// writing a v3.0 dataset back from a table. Videos are always stored and
// exported byte for byte: an episode of a shared v3.0 file references
// the one stored payload from its own first frame. The package is pure
// Go: frame counting and image sizes come from the table's options.
package lerobot
