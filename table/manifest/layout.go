package manifest

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// Column is a typed column of a table, as manifests need to know it.
type Column struct {
	Name string
	// Type is the column's type as a table schema writes it: bool, int32,
	// int64, float32, float64, string, timestamp or list<T>.
	Type string
}

// Layout is what a table's schema decides about its manifests' columns.
type Layout struct {
	// Partitions are the partition columns, in the schema's order.
	Partitions []Column
	// Videos are the video columns.
	Videos []string
	// Columns are the user columns entries keep statistics of (every
	// user column that is not a partition column).
	Columns []Column
}

// Names of a manifest's top-level columns (docs/FORMAT.md).
const (
	colEpisode    = "episode"
	colPartition  = "partition"
	colRows       = "rows"
	colFirstRowID = "first_row_id"
	colDataFile   = "data_file"
	colRowGroup   = "row_group"
	colSchemaID   = "schema_id"
	colTime       = "time"
	colVideo      = "video"
	colStats      = "stats"
)

// Names of a manifest list's columns besides partition and stats.
const (
	colManifest   = "manifest"
	colBytes      = "bytes"
	colEpisodes   = "episodes"
	colEpisodeMin = "episode_min"
	colEpisodeMax = "episode_max"
)

// Fields of a video reference and of a sizes reference.
const (
	colPack        = "pack"
	colOffset      = "offset"
	colLength      = "length"
	colSHA256      = "sha256"
	colIndexOffset = "index_offset"
	colIndexLength = "index_length"
	colFirstFrame  = "first_frame"
	colFrames      = "frames"
	colCodec       = "codec"
	colWidth       = "width"
	colHeight      = "height"
	colSourceName  = "source_name"
	colSizes       = "sizes"
	colIdentity    = "identity"
	colObject      = "object"
	colMin         = "min"
	colMax         = "max"
	colNulls       = "nulls"
)

var (
	sizesRefType = arrow.StructOf(
		arrow.Field{Name: colIdentity, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: colObject, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: colOffset, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colLength, Type: arrow.PrimitiveTypes.Int64},
	)
	videoRefType = arrow.StructOf(
		arrow.Field{Name: colPack, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: colOffset, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colLength, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colSHA256, Type: &arrow.FixedSizeBinaryType{ByteWidth: 32}, Nullable: true},
		arrow.Field{Name: colIndexOffset, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colIndexLength, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colFirstFrame, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colFrames, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colCodec, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: colWidth, Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: colHeight, Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: colSourceName, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: colSizes, Type: arrow.ListOfNonNullable(sizesRefType)},
	)
	timeType = &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
)

// boundType is the Arrow type bounds of kind k are stored as; timestamp
// columns keep theirs as timestamps (microseconds, UTC), which other
// Parquet readers show as times.
func boundType(typ string) arrow.DataType {
	switch KindOf(typ) {
	case KindBool:
		return arrow.FixedWidthTypes.Boolean
	case KindInt:
		if typ == "timestamp" {
			return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		}
		return arrow.PrimitiveTypes.Int64
	case KindFloat:
		return arrow.PrimitiveTypes.Float64
	case KindString:
		return arrow.BinaryTypes.String
	}
	return nil
}

// statsType is the struct of one column's statistics: min and max when
// the column's type has bounds, and the null count.
func statsType(typ string) *arrow.StructType {
	var fields []arrow.Field
	if bt := boundType(typ); bt != nil {
		fields = append(fields,
			arrow.Field{Name: colMin, Type: bt, Nullable: true},
			arrow.Field{Name: colMax, Type: bt, Nullable: true})
	}
	return arrow.StructOf(append(fields, arrow.Field{Name: colNulls, Type: arrow.PrimitiveTypes.Int64})...)
}

// statsField is the optional struct of every column's statistics, nil
// when there are no such columns (Parquet has no empty groups).
func (l Layout) statsField() *arrow.Field {
	if len(l.Columns) == 0 {
		return nil
	}
	var fields []arrow.Field
	for _, c := range l.Columns {
		fields = append(fields, arrow.Field{Name: c.Name, Type: statsType(c.Type), Nullable: true})
	}
	return &arrow.Field{Name: colStats, Type: arrow.StructOf(fields...), Nullable: true}
}

// entrySchema is the Arrow schema of a manifest of this layout.
func (l Layout) entrySchema() *arrow.Schema {
	fields := []arrow.Field{{Name: colEpisode, Type: arrow.BinaryTypes.String}}
	if len(l.Partitions) > 0 {
		var parts []arrow.Field
		for _, p := range l.Partitions {
			parts = append(parts, arrow.Field{Name: p.Name, Type: arrow.BinaryTypes.String})
		}
		fields = append(fields, arrow.Field{Name: colPartition, Type: arrow.StructOf(parts...)})
	}
	fields = append(fields,
		arrow.Field{Name: colRows, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colFirstRowID, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colDataFile, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: colRowGroup, Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: colSchemaID, Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: colTime, Type: timeType, Nullable: true},
	)
	var videos []arrow.Field
	for _, v := range l.Videos {
		videos = append(videos, arrow.Field{Name: v, Type: videoRefType})
	}
	fields = append(fields, arrow.Field{Name: colVideo, Type: arrow.StructOf(videos...)})
	if sf := l.statsField(); sf != nil {
		fields = append(fields, *sf)
	}
	return arrow.NewSchema(fields, nil)
}

// listSchema is the Arrow schema of a manifest list of this layout.
func (l Layout) listSchema() *arrow.Schema {
	fields := []arrow.Field{
		{Name: colManifest, Type: arrow.BinaryTypes.String},
		{Name: colBytes, Type: arrow.PrimitiveTypes.Int64},
		{Name: colEpisodes, Type: arrow.PrimitiveTypes.Int64},
		{Name: colRows, Type: arrow.PrimitiveTypes.Int64},
		{Name: colEpisodeMin, Type: arrow.BinaryTypes.String},
		{Name: colEpisodeMax, Type: arrow.BinaryTypes.String},
	}
	if len(l.Partitions) > 0 {
		var parts []arrow.Field
		for _, p := range l.Partitions {
			bt := boundType(p.Type)
			parts = append(parts, arrow.Field{Name: p.Name, Type: arrow.StructOf(
				arrow.Field{Name: colMin, Type: bt}, arrow.Field{Name: colMax, Type: bt})})
		}
		fields = append(fields, arrow.Field{Name: colPartition, Type: arrow.StructOf(parts...)})
	}
	if sf := l.statsField(); sf != nil {
		fields = append(fields, *sf)
	}
	return arrow.NewSchema(fields, nil)
}
