package table

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/framefs/framefs/table/manifest"
)

// Format versions of the table layout (docs/FORMAT.md).
//
//	1: tables, schemas, snapshots, tags, manifests, Parquet frame rows,
//	   .video packs with per-payload frame indexes and frame sizes.
//	2: manifests are Parquet files (package manifest), and a snapshot
//	   names a manifest list with a summary of each, so that a filter,
//	   a partition or an episode reads only the manifests it needs;
//	   small manifests are merged by size tiers. Version-1 tables are
//	   read as they are and upgraded by their next commit (or Upgrade).
//
// A reader refuses tables whose format version is above FormatVersion or
// below MinFormatVersion, and any feature it does not know.
const (
	FormatVersion    = 2
	MinFormatVersion = 1
)

// knownFeatures lists the optional features this build understands.
var knownFeatures = map[string]bool{}

// Object key layout inside a table.
const (
	keyTableMeta   = "table.json"
	prefixSchema   = "schema/"
	prefixSnapshot = "snapshot/"
	prefixTag      = "tag/"
	prefixView     = "view/"
	prefixManifest = "manifest/"
	// prefixManifestList names manifest lists, which live beside the
	// manifests they list.
	prefixManifestList = prefixManifest + "list-"
	prefixData         = "data/"
	prefixVideo        = "video/"
	snapshotKeyDigits  = 10
)

// SchemaPrefix begins the keys of a table's schemas, which Create writes
// before table.json: a location holding only keys under it is what a
// killed Create left.
const SchemaPrefix = prefixSchema

func schemaKey(id int) string { return fmt.Sprintf("%sschema-%d.json", prefixSchema, id) }

// SnapshotKey is the object key of snapshot id.
func SnapshotKey(id int64) string { return snapshotKey(id) }

// snapshotKey zero-pads the id so that key order is id order, which lets
// object stores find the head with one sorted listing.
func snapshotKey(id int64) string {
	return fmt.Sprintf("%s%0*d.json", prefixSnapshot, snapshotKeyDigits, id)
}

func parseSnapshotKey(key string) (int64, bool) {
	name, ok := strings.CutPrefix(key, prefixSnapshot)
	if !ok {
		return 0, false
	}
	digits, ok := strings.CutSuffix(name, ".json")
	if !ok || len(digits) != snapshotKeyDigits {
		return 0, false
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	return id, err == nil && id > 0
}

func tagKey(name string) string { return prefixTag + name + ".json" }

// tableMeta is table.json: written once, when the table is created.
type tableMeta struct {
	FormatVersion int       `json:"format_version"`
	Features      []string  `json:"features"`
	UUID          string    `json:"table_uuid"`
	Created       time.Time `json:"created"`
}

// checkFormat refuses versions and features this build does not know.
func checkFormat(what string, version int, features []string) error {
	if version < MinFormatVersion || version > FormatVersion {
		return fmt.Errorf("%w: %s has format version %d; this framefs reads versions %d to %d (upgrade framefs)",
			ErrUnsupportedFormat, what, version, MinFormatVersion, FormatVersion)
	}
	for _, f := range features {
		if !knownFeatures[f] {
			return fmt.Errorf("%w: %s uses feature %q, unknown to this framefs (upgrade framefs)", ErrUnsupportedFormat, what, f)
		}
	}
	return nil
}

// CommitKind says what a snapshot did.
type CommitKind string

// Commit kinds.
const (
	KindAppend  CommitKind = "append"
	KindUpdate  CommitKind = "update"
	KindReplace CommitKind = "replace"
	KindDelete  CommitKind = "delete"
	KindSizes   CommitKind = "sizes"
	// KindUpgrade rewrites the metadata of the head in the current format
	// version and changes no episode.
	KindUpgrade CommitKind = "upgrade"
)

// Snapshot is one immutable version of a table.
type Snapshot struct {
	FormatVersion int        `json:"format_version"`
	Features      []string   `json:"features"`
	ID            int64      `json:"snapshot_id"`
	Parent        int64      `json:"parent_id"`
	SchemaID      int        `json:"schema_id"`
	Kind          CommitKind `json:"kind"`
	Time          time.Time  `json:"time"`
	Summary       Summary    `json:"summary"`
	// ManifestList is the manifest list whose manifests' episodes make up
	// the snapshot (format version 2).
	ManifestList string `json:"manifest_list,omitempty"`
	// Manifests are the manifest files whose episodes make up a snapshot
	// of format version 1.
	Manifests []string `json:"manifests,omitempty"`
	// Changed lists the episodes this commit added, changed or removed;
	// concurrent writers use it to detect conflicts.
	Changed []string `json:"changed_episodes"`
	// NextRowID is the first row id the next commit may assign.
	NextRowID int64 `json:"next_row_id"`
	// Episodes and Frames count the whole snapshot.
	Episodes int64 `json:"total_episodes"`
	Frames   int64 `json:"total_frames"`
}

// Summary counts what a commit changed.
type Summary struct {
	EpisodesAdded   int64 `json:"episodes_added"`
	EpisodesRemoved int64 `json:"episodes_removed"`
	EpisodesUpdated int64 `json:"episodes_updated"`
	FramesAdded     int64 `json:"frames_added"`
	FramesRemoved   int64 `json:"frames_removed"`
	BytesAdded      int64 `json:"bytes_added"`
	BytesRemoved    int64 `json:"bytes_removed"`
}

// Manifest is a manifest of format version 1 (JSON): episodes with where
// their rows and videos are. Version 2 writes them as Parquet (package
// manifest); both are immutable, and a commit that changes episodes
// writes new manifests for them and drops the old ones from its snapshot.
type Manifest struct {
	FormatVersion int            `json:"format_version"`
	Episodes      []EpisodeEntry `json:"episodes"`
}

// The entry types of manifests, which package manifest encodes.
type (
	// EpisodeEntry is one episode of a manifest: where its rows and videos
	// are, and statistics of its rows.
	EpisodeEntry = manifest.Entry
	// VideoRef locates one stored video (a payload inside a pack object).
	VideoRef = manifest.VideoRef
	// SizesRef locates the encoded image size of every frame of a video
	// for one image setting.
	SizesRef = manifest.SizesRef
	// ColumnStats summarise one user column over an episode's rows.
	ColumnStats = manifest.ColumnStats
)

// Tag is a named pointer to a snapshot.
type Tag struct {
	Name     string    `json:"tag"`
	Snapshot int64     `json:"snapshot_id"`
	Time     time.Time `json:"time"`
}

// marshalCompact is marshal without indentation, for manifests: they hold
// a kilobyte or so per episode, a third of it indentation otherwise.
func marshalCompact(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs are marshalled
	}
	return append(b, '\n')
}

func marshal(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // only plain structs are marshalled
	}
	return append(b, '\n')
}
