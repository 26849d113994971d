package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/table"
)

// createFlags are the command line of `framefs create`; they map onto a
// table.Schema (over the --schema file, when one is given).
type createFlags struct {
	schemaFile  string
	columns     []string
	episodeCol  string
	videoCols   []string
	partitions  []string
	imageFormat string
	jpegQuality int
}

func newCreateCommand(stores *storeFlags) *cobra.Command {
	var f createFlags
	cmd := &cobra.Command{
		Use:   "create WAREHOUSE/TABLE",
		Short: "Create a table",
		Long: `create makes a new, empty table. Columns are NAME:TYPE with TYPE one of bool,
int32, int64, float32, float64, string, timestamp or list<T>; a trailing '?'
makes a column nullable (state:list<float32>?). A --schema file (JSON) may
give everything instead.`,
		Example: `  framefs create data/robot --column timestamp:float64 --column state:list<float32> \
      --video-column cam_front,cam_left --partition task --column task:string`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCreate(cmd, stores, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.schemaFile, "schema", "", "schema file (JSON)")
	fl.StringArrayVar(&f.columns, "column", nil, "user column NAME:TYPE (repeatable)")
	fl.StringVar(&f.episodeCol, "episode-column", "", "episode id column (default episode_id)")
	fl.StringArrayVar(&f.videoCols, "video-column", nil, "video column(s), comma-separated (default video)")
	fl.StringArrayVar(&f.partitions, "partition", nil, "partition column (repeatable)")
	fl.StringVar(&f.imageFormat, "image-format", "", "image format mounts serve by default: jpg, png, bmp or ppm (default jpg)")
	fl.IntVar(&f.jpegQuality, "jpeg-quality", 0, "JPEG quality 1-100 (default 90)")
	positive(fl, "jpeg-quality")
	return cmd
}

// schema builds the table's schema from the flags.
func (f createFlags) schema() (table.Schema, error) {
	var s table.Schema
	if f.schemaFile != "" {
		data, err := os.ReadFile(f.schemaFile)
		if err != nil {
			return s, err
		}
		if s, err = table.ParseSchema(data); err != nil {
			return s, fmt.Errorf("%s: %w", f.schemaFile, err)
		}
	}
	for _, spec := range f.columns {
		c, err := table.ParseColumn(spec)
		if err != nil {
			return s, err
		}
		s.Columns = append(s.Columns, c)
	}
	if f.episodeCol != "" {
		s.EpisodeColumn = f.episodeCol
	}
	for _, v := range f.videoCols {
		s.VideoColumns = append(s.VideoColumns, strings.Split(v, ",")...)
	}
	s.PartitionColumns = append(s.PartitionColumns, f.partitions...)
	if f.imageFormat != "" {
		s.Image.Format = f.imageFormat
	}
	if f.jpegQuality != 0 {
		s.Image.JPEGQuality = f.jpegQuality
	}
	return s, nil
}

func runCreate(cmd *cobra.Command, stores *storeFlags, uri string, f createFlags) (err error) {
	ctx := cmd.Context()
	defer madeDirs(uri)(&err)
	s, err := f.schema()
	if err != nil {
		return err
	}
	if err := table.CheckName("table", baseName(uri)); err != nil {
		return err
	}
	if err := stores.checkCreatable(ctx, uri); err != nil {
		return err
	}
	store, err := stores.openStore(ctx, uri, true)
	if err != nil {
		return err
	}
	if _, err := table.Create(ctx, store, s, tableOptions()); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "created table %s\n", uri)
	return nil
}
