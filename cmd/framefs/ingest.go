package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/input"
)

// ingestFlags are the command line of `framefs ingest`; they map onto
// table.EpisodeInput and table.AddOptions.
type ingestFlags struct {
	rows       string
	episode    string
	firstFrame int64
	noSizes    bool
	allowNew   bool
	rng        rangeFlags
}

func newIngestCommand(stores *storeFlags) *cobra.Command {
	var f ingestFlags
	cmd := &cobra.Command{
		Use:   "ingest TABLE VIDEO...",
		Short: "Add videos and their frame rows to a table, in one commit",
		Long: `ingest stores each VIDEO byte for byte with one frame row per frame and
commits them all as one snapshot. A video's rows come from its sidecar, a file
with the same base name ending in .jsonl, .json, .csv or .parquet (or from
--rows for a single video). The episode id is the sidecar's episode column,
else the video's base name. For tables with several video columns, give one
episode's videos as COLUMN=FILE.

A VIDEO or sidecar may be an S3 object, s3://BUCKET/KEY, read with the same
endpoint and credentials as tables. Into an S3 table on the same endpoint the
server copies the video itself; otherwise it streams through. --offset and
--length ingest a byte range of a single VIDEO.`,
		Example: `  framefs ingest data/robot ep1.mp4 ep2.mp4
  framefs ingest s3://frames/wh/robot s3://fleet/day1/ep43.mp4 --no-sizes
  framefs ingest data/robot s3://fleet/day1.pack --offset 1048576 --length 73400320 --episode ep7`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opener, err := stores.inputOpener()
			if err != nil {
				return err
			}
			return withIngestTable(cmd.Context(), stores, args[0], f.noSizes, opener, func(tbl *table.Table) error {
				return ingestVideos(cmd, tbl, opener, args[1:], f)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.rows, "rows", "", "sidecar with the frame rows (single video)")
	fl.StringVar(&f.episode, "episode", "", "episode id (single episode)")
	fl.Int64Var(&f.firstFrame, "first-frame", 0, "video frame of the first row")
	nonNegative(fl, "first-frame")
	fl.BoolVar(&f.noSizes, "no-sizes", false, "do not compute per-frame image sizes now (faster ingest; mounts compute them when needed)")
	fl.BoolVar(&f.allowNew, "allow-new-columns", false, "add sidecar columns the table lacks (nullable, new schema version) instead of failing")
	f.rng.register(cmd)
	return cmd
}

func ingestVideos(cmd *cobra.Command, tbl *table.Table, opener *input.Opener, videos []string, f ingestFlags) error {
	ctx := cmd.Context()
	schema, err := tbl.LatestSchema(ctx)
	if err != nil {
		return err
	}
	if f.rows != "" && len(videos) > 1 && len(schema.VideoColumns) == 1 {
		return errors.New("--rows applies to a single video; give each video a sidecar instead")
	}
	var inputs []table.EpisodeInput
	if len(schema.VideoColumns) > 1 {
		in := table.EpisodeInput{Episode: f.episode, Videos: map[string]table.VideoFile{}}
		for _, arg := range videos {
			col, path, ok := strings.Cut(arg, "=")
			if !ok {
				return fmt.Errorf("%q: the table has video columns %s: give COLUMN=FILE", arg, strings.Join(schema.VideoColumns, ", "))
			}
			vf := table.VideoFile{Path: path, FirstFrame: f.firstFrame}
			if err := f.rng.apply(cmd, &vf, len(videos)); err != nil {
				return err
			}
			in.Videos[col] = vf
		}
		if f.rows == "" {
			return errors.New("give the episode's rows with --rows")
		}
		if in.Sidecar, err = readSidecar(ctx, opener, f.rows); err != nil {
			return err
		}
		inputs = append(inputs, in)
	} else {
		for _, v := range videos {
			vf := table.VideoFile{Path: v, FirstFrame: f.firstFrame}
			if err := f.rng.apply(cmd, &vf, len(videos)); err != nil {
				return err
			}
			in := table.EpisodeInput{Episode: f.episode, Videos: map[string]table.VideoFile{"": vf}}
			side := f.rows
			if side == "" {
				if side, err = findSidecar(ctx, opener, v); err != nil {
					return err
				}
			}
			if side != "" {
				if in.Sidecar, err = readSidecar(ctx, opener, side); err != nil {
					return err
				}
			}
			inputs = append(inputs, in)
		}
	}
	snap, err := tbl.AddEpisodes(ctx, inputs, table.AddOptions{NoSizes: f.noSizes, AllowNewColumns: f.allowNew, Progress: progressBar()})
	if err != nil {
		return f.rng.explain(cmd, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: added %d episodes, %d frames\n", snap.ID, snap.Summary.EpisodesAdded, snap.Summary.FramesAdded)
	reportS3(cmd.OutOrStdout(), opener, tbl)
	return nil
}
