package table

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// Type is a column type, written as in schema files: bool, int32, int64,
// float32, float64, string, timestamp (microseconds, UTC) or list<T> of one
// of those scalars.
type Type string

var scalarTypes = map[Type]arrow.DataType{
	"bool":      arrow.FixedWidthTypes.Boolean,
	"int32":     arrow.PrimitiveTypes.Int32,
	"int64":     arrow.PrimitiveTypes.Int64,
	"float32":   arrow.PrimitiveTypes.Float32,
	"float64":   arrow.PrimitiveTypes.Float64,
	"string":    arrow.BinaryTypes.String,
	"timestamp": &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
}

// Elem returns the element type of a list type and true, or "" and false.
func (t Type) Elem() (Type, bool) {
	s := string(t)
	if strings.HasPrefix(s, "list<") && strings.HasSuffix(s, ">") {
		return Type(s[5 : len(s)-1]), true
	}
	return "", false
}

// Arrow returns the Arrow type of t, or an error for an unknown type.
func (t Type) Arrow() (arrow.DataType, error) {
	if elem, ok := t.Elem(); ok {
		et, ok := scalarTypes[elem]
		if !ok {
			return nil, fmt.Errorf("%w: unknown list element type %q in %q", ErrInvalidInput, elem, t)
		}
		return arrow.ListOf(et), nil
	}
	if dt, ok := scalarTypes[t]; ok {
		return dt, nil
	}
	return nil, fmt.Errorf("%w: unknown type %q (use bool, int32, int64, float32, float64, string, timestamp or list<T>)", ErrInvalidInput, t)
}

// Column is a user column of frame rows.
type Column struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
	// Nullable columns may be missing from sidecars; rows read them as null.
	Nullable bool `json:"nullable"`
}

// ImageOptions say how mounts serve frames by default and which image
// setting ingest stores per-frame sizes for.
type ImageOptions struct {
	// Format is jpg, png, bmp or ppm.
	Format string `json:"format"`
	// JPEGQuality is 1-100 for jpg.
	JPEGQuality int `json:"jpeg_quality,omitempty"`
}

// Over returns base with the fields o sets in place of base's: what a user
// asks for over a table's setting, where an option not given (empty
// format, quality 0) keeps the table's.
func (o ImageOptions) Over(base ImageOptions) ImageOptions {
	if o.Format != "" {
		base.Format = o.Format
	}
	if o.JPEGQuality != 0 {
		base.JPEGQuality = o.JPEGQuality
	}
	return base
}

// Schema describes the frame rows of a table. Schemas are immutable and
// numbered; evolving a table writes a new schema with the next id.
type Schema struct {
	FormatVersion int `json:"format_version"`
	ID            int `json:"schema_id"`
	// EpisodeColumn holds the episode id (a string) of every row.
	EpisodeColumn string `json:"episode_column"`
	// VideoColumns name the videos of an episode (one per camera); each
	// row holds a frame reference per video column.
	VideoColumns []string `json:"video_columns"`
	// PartitionColumns are user columns whose value is the same for all
	// rows of an episode; mounts show them as COL=VALUE directories.
	PartitionColumns []string `json:"partition_columns,omitempty"`
	// Columns are the user columns, in order.
	Columns []Column `json:"columns"`
	// Image is the default image setting for mounts and stored sizes.
	Image ImageOptions `json:"image"`
	// PackTargetBytes is the size at which a commit starts a new pack.
	PackTargetBytes int64 `json:"pack_target_bytes"`
	// Properties are free-form key/value strings a writer attaches to
	// the table, such as where its data came from (keys prefixed by the
	// tool that owns them, e.g. "lerobot.fps"). Readers ignore keys they
	// do not know.
	Properties map[string]string `json:"properties,omitempty"`
}

// Limits of schema properties: they travel in every schema file.
const (
	maxPropertyKey   = 200
	maxPropertyBytes = 1 << 20
)

// Defaults for new schemas.
const (
	DefaultEpisodeColumn   = "episode_id"
	DefaultVideoColumn     = "video"
	DefaultPackTargetBytes = 256 << 20
	DefaultImageFormat     = "jpg"
	DefaultJPEGQuality     = 90
)

// Reserved column names used by the Parquet files.
const (
	colIndex = "_index"
)

// FrameColumn names each row's position in its episode (0, 1, ...; the
// name of its frame file): filters, --group-by and listings know it by
// this name. It is not stored as a user column (the Parquet files keep it
// as _index), and no column may be created under this name. A table made
// before the name was reserved may have a user column called frame: the
// name then means that column, as it always did there.
const FrameColumn = "frame"

// HasFrameColumn reports whether FrameColumn names the rows' positions in
// their episodes, which readers of rows (filters, --group-by, Rows) then
// supply themselves: true unless a column of the schema (one an older
// table made before the name was reserved) has the name.
func (s *Schema) HasFrameColumn() bool {
	if s.EpisodeColumn == FrameColumn || s.IsVideoColumn(FrameColumn) {
		return false
	}
	_, ok := s.Column(FrameColumn)
	return !ok
}

// checkReservedNames refuses the reserved name FrameColumn (in any case)
// for the columns next adds to prev (nil for a new table): columns tables
// already have keep their names.
func checkReservedNames(prev *Schema, next *Schema) error {
	had := func(name string) bool {
		if prev == nil {
			return false
		}
		_, ok := prev.Column(name)
		return ok || name == prev.EpisodeColumn || prev.IsVideoColumn(name)
	}
	names := append([]string{next.EpisodeColumn}, next.VideoColumns...)
	for _, c := range next.Columns {
		names = append(names, c.Name)
	}
	for _, name := range names {
		if strings.EqualFold(name, FrameColumn) && !had(name) {
			return fmt.Errorf("%w: column name %q is reserved: %q is each row's position in its episode (0, 1, ...), which filters, --group-by and listings use; name the column otherwise (e.g. frame_index)",
				ErrInvalidName, name, FrameColumn)
		}
	}
	return nil
}

// withDefaults fills in unset fields of a schema about to be created.
func (s Schema) withDefaults() Schema {
	s.FormatVersion = FormatVersion
	if s.ID == 0 {
		s.ID = 1
	}
	if s.EpisodeColumn == "" {
		s.EpisodeColumn = DefaultEpisodeColumn
	}
	if len(s.VideoColumns) == 0 {
		s.VideoColumns = []string{DefaultVideoColumn}
	}
	if s.Image.Format == "" {
		s.Image.Format = DefaultImageFormat
	}
	if s.Image.Format == "jpg" && s.Image.JPEGQuality == 0 {
		s.Image.JPEGQuality = DefaultJPEGQuality
	}
	if s.PackTargetBytes == 0 {
		s.PackTargetBytes = DefaultPackTargetBytes
	}
	return s
}

// foldEpisodeColumn accepts the episode column declared among the user
// columns as well (a partition column has to be, so people declare this
// one too): declared as the non-null string it is, the declaration is
// dropped, since the column is always there; any other type is refused.
func (s Schema) foldEpisodeColumn() (Schema, error) {
	i := slices.IndexFunc(s.Columns, func(c Column) bool { return c.Name == s.EpisodeColumn })
	if i < 0 {
		return s, nil
	}
	if c := s.Columns[i]; c.Type != "string" || c.Nullable {
		typ := string(c.Type)
		if c.Nullable {
			typ += "?"
		}
		return s, fmt.Errorf("%w: column %q is the episode column, which holds each row's episode id as a non-null string; declare it as %s:string (or leave it out), not as %s",
			ErrInvalidInput, c.Name, c.Name, typ)
	}
	s.Columns = slices.Delete(slices.Clone(s.Columns), i, i+1)
	return s, nil
}

// CheckColumnName validates the name of a column (kind names it in the
// error): a name like any other (CheckName) that does not start with '_',
// which is reserved.
func CheckColumnName(kind, name string) error {
	if err := CheckName(kind, name); err != nil {
		return err
	}
	if strings.HasPrefix(name, "_") {
		return fmt.Errorf("%w: %s %q: names starting with '_' are reserved", ErrInvalidName, kind, name)
	}
	return nil
}

// Check reports what Create would refuse in s, once s has its defaults:
// a caller building a schema from someone else's description can say
// where the problem came from.
func (s Schema) Check() error {
	s, err := s.withDefaults().foldEpisodeColumn()
	if err != nil {
		return err
	}
	return s.Validate()
}

// Validate checks names, types and the roles of columns.
func (s *Schema) Validate() error {
	seen := map[string]bool{}
	add := func(kind, name string) error {
		if err := CheckColumnName(kind, name); err != nil {
			return err
		}
		if seen[name] {
			return fmt.Errorf("%w: column %q is defined twice", ErrInvalidInput, name)
		}
		seen[name] = true
		return nil
	}
	if err := add("episode column", s.EpisodeColumn); err != nil {
		return err
	}
	for _, v := range s.VideoColumns {
		if err := add("video column", v); err != nil {
			return err
		}
	}
	if len(s.VideoColumns) == 0 {
		return fmt.Errorf("%w: a table needs at least one video column", ErrInvalidInput)
	}
	for _, c := range s.Columns {
		if err := add("column", c.Name); err != nil {
			return err
		}
		if _, err := c.Type.Arrow(); err != nil {
			return fmt.Errorf("column %q: %w", c.Name, err)
		}
	}
	for _, p := range s.PartitionColumns {
		c, ok := s.Column(p)
		if !ok {
			return fmt.Errorf("%w: partition column %q is not a column of the schema; declare it as a column too (--column %s:string, or int32, int64 or bool)", ErrInvalidInput, p, p)
		}
		if c.Type != "string" && c.Type != "int32" && c.Type != "int64" && c.Type != "bool" {
			return fmt.Errorf("%w: partition column %q has type %s; use string, int32, int64 or bool", ErrInvalidInput, p, c.Type)
		}
	}
	switch s.Image.Format {
	case "jpg", "png", "bmp", "ppm":
	default:
		return fmt.Errorf("%w: image format %q (use jpg, png, bmp or ppm)", ErrInvalidInput, s.Image.Format)
	}
	if s.Image.Format == "jpg" && (s.Image.JPEGQuality < 1 || s.Image.JPEGQuality > 100) {
		return fmt.Errorf("%w: JPEG quality %d is not within 1-100", ErrInvalidInput, s.Image.JPEGQuality)
	}
	if s.PackTargetBytes < 1<<20 {
		return fmt.Errorf("%w: pack target %d bytes is below 1 MiB", ErrInvalidInput, s.PackTargetBytes)
	}
	return s.validateProperties()
}

func (s *Schema) validateProperties() error {
	total := 0
	for k, v := range s.Properties {
		if k == "" || len(k) > maxPropertyKey || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("%w: property %q: keys are 1-%d bytes of UTF-8, values UTF-8", ErrInvalidInput, k, maxPropertyKey)
		}
		total += len(k) + len(v)
	}
	if total > maxPropertyBytes {
		return fmt.Errorf("%w: properties hold %d bytes, more than %d", ErrInvalidInput, total, maxPropertyBytes)
	}
	return nil
}

// Column returns the user column called name.
func (s *Schema) Column(name string) (Column, bool) {
	i := slices.IndexFunc(s.Columns, func(c Column) bool { return c.Name == name })
	if i < 0 {
		return Column{}, false
	}
	return s.Columns[i], true
}

// IsVideoColumn reports whether name is a video column.
func (s *Schema) IsVideoColumn(name string) bool { return slices.Contains(s.VideoColumns, name) }

// ParseColumn parses NAME:TYPE[?] as given on the command line; a
// trailing '?' makes the column nullable.
func ParseColumn(spec string) (Column, error) {
	name, typ, ok := strings.Cut(spec, ":")
	if !ok {
		return Column{}, fmt.Errorf("%w: column %q: want NAME:TYPE, e.g. state:list<float32>", ErrInvalidInput, spec)
	}
	c := Column{Name: name, Type: Type(typ)}
	if strings.HasSuffix(typ, "?") {
		c.Type, c.Nullable = Type(strings.TrimSuffix(typ, "?")), true
	}
	if _, err := c.Type.Arrow(); err != nil {
		return Column{}, fmt.Errorf("column %q: %w", name, err)
	}
	return c, nil
}

// ParseSchema reads a schema file (the JSON form of Schema; ids and
// format version may be left out).
func ParseSchema(data []byte) (Schema, error) {
	var s Schema
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Schema{}, fmt.Errorf("%w: schema: %v", ErrInvalidInput, err)
	}
	return s, nil
}
