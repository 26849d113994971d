package manifest

import (
	"encoding/json"
	"time"
)

// Entry is one episode of a manifest: where its rows and videos are, and
// what its rows hold.
type Entry struct {
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

// ColumnStats summarise one user column over an episode's rows, so that a
// filter can skip episodes without reading their rows. Min and Max are
// JSON values of the column's type (timestamps as integer microseconds);
// they bound every non-null value and are left out when unknown (lists,
// floats holding NaN or infinities, strings with no short upper bound).
// Stats is the same in typed form.
type ColumnStats struct {
	Min   json.RawMessage `json:"min,omitempty"`
	Max   json.RawMessage `json:"max,omitempty"`
	Nulls int64           `json:"nulls"`
}
