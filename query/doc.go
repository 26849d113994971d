// Package query selects frame rows of table snapshots: the query engine
// above the table format. It compiles filter text (package query/filter)
// against a snapshot's schema, and finds the matching rows reading as
// little as it can: first the summaries of the snapshot's manifests (a
// manifest none of whose rows can match is not read), then partition
// values and per-episode column statistics from the manifests it reads
// (only the columns the filter names), then Parquet row-group statistics,
// and only then the filter's columns of the remaining row groups (through
// a data file's chunk index when it has one). On top of selections it lays
// out group-by folders (GroupFolder) and clip windows (SelectClips), and
// it checks views' filters when they are created (CreateView) or verified
// (VerifyViews).
//
// It reads tables only through package table's API and writes nothing but
// views; the table format, its objects and commits are package table's.
//
// # Files
//
//	doc.go      this overview
//	select.go   CompileFilter, Select, Count: pruning and scanning a snapshot's rows
//	stats.go    statistics of entries and of manifest summaries, and partition values, as the filter's statistics
//	chunks.go   decoding one column chunk located by a chunk index
//	groups.go   GroupFolder: group-by values as folder names
//	clips.go    SelectClips: the windows of a clip view
//	views.go    CheckView, CreateView, VerifyViews
package query
