package table

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Format versions of the table layout (docs/FORMAT.md).
//
//	1: tables, schemas, snapshots, tags, manifests, Parquet frame rows,
//	   .video packs with per-payload frame indexes and frame sizes.
//
// A reader refuses tables whose format version is above FormatVersion or
// below MinFormatVersion, and any feature it does not know.
const (
	FormatVersion    = 1
	MinFormatVersion = 1
)

// knownFeatures lists the optional features this build understands.
var knownFeatures = map[string]bool{}

// Object key layout inside a table.
const (
	keyTableMeta      = "table.json"
	prefixSchema      = "schema/"
	prefixSnapshot    = "snapshot/"
	prefixTag         = "tag/"
	prefixView        = "view/"
	prefixManifest    = "manifest/"
	prefixData        = "data/"
	prefixVideo       = "video/"
	snapshotKeyDigits = 10
)

// SchemaPrefix begins the keys of a table's schemas, which Create writes
// before table.json: a location holding only keys under it is what a
// killed Create left.
const SchemaPrefix = prefixSchema

func schemaKey(id int) string { return fmt.Sprintf("%sschema-%d.json", prefixSchema, id) }

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
	// Manifests are the manifest files whose episodes make up the snapshot.
	Manifests []string `json:"manifests"`
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

// Manifest lists episodes with where their rows and videos are. Manifests
// are immutable; a commit that changes episodes writes new manifests for
// them and drops the old ones from its snapshot.
type Manifest struct {
	FormatVersion int            `json:"format_version"`
	Episodes      []EpisodeEntry `json:"episodes"`
}

// EpisodeEntry is one episode of a manifest.
type EpisodeEntry struct {
	Episode string `json:"episode"`
	// Partition holds the partition column values, as strings.
	Partition map[string]string `json:"partition,omitempty"`
	// Rows is the number of frame rows.
	Rows int64 `json:"rows"`
	// FirstRowID is the row id of the first row; the others follow.
	FirstRowID int64 `json:"first_row_id"`
	// DataFile is the Parquet file holding the rows, in row group RowGroup.
	DataFile string `json:"data_file"`
	RowGroup int    `json:"row_group"`
	// SchemaID is the schema the rows were written with.
	SchemaID int `json:"schema_id"`
	// Videos maps each video column to its payload.
	Videos map[string]VideoRef `json:"videos"`
	// Time is when this version of the episode was committed.
	Time time.Time `json:"time"`
	// Stats summarise the user columns of the rows (partition columns
	// aside), so that filters skip episodes without reading them. Absent
	// in manifests written before they existed.
	Stats map[string]ColumnStats `json:"stats,omitempty"`
}

// VideoRef locates one stored video (a payload inside a pack object).
type VideoRef struct {
	Pack   string `json:"pack"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	SHA256 string `json:"sha256"`
	// IndexOffset/IndexLength locate the encoded videoidx index in the
	// same pack.
	IndexOffset int64 `json:"index_offset"`
	IndexLength int64 `json:"index_length"`
	// FirstFrame is the video frame ordinal of the episode's first row.
	FirstFrame int64  `json:"first_frame"`
	Frames     int64  `json:"frames"`
	Codec      string `json:"codec"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	// SourceName is the file name the video was ingested from.
	SourceName string `json:"source_name,omitempty"`
	// Sizes lists stored per-frame encoded image sizes.
	Sizes []SizesRef `json:"sizes,omitempty"`
}

// SizesRef locates the encoded image size of every frame of a video for
// one image setting.
type SizesRef struct {
	// Identity names the format, settings and library versions that
	// determine the bytes; sizes are used only when it matches exactly.
	Identity string `json:"identity"`
	Object   string `json:"object"`
	Offset   int64  `json:"offset"`
	Length   int64  `json:"length"`
}

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
