package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/lerobot"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

func newImportCommand(stores *storeFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import FORMAT ...",
		Short: "Import a dataset of another format into a table",
	}
	cmd.AddCommand(newImportLeRobotCommand(stores))
	return cmd
}

func newExportCommand(stores *storeFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export FORMAT ...",
		Short: "Export a table as a dataset of another format",
	}
	cmd.AddCommand(newExportLeRobotCommand(stores))
	return cmd
}

// importLeRobotFlags are the flags of import lerobot; they map onto
// lerobot.ImportOptions.
type importLeRobotFlags struct {
	episodes  string
	tolerance float64
	partition string
	noSizes   bool
	batch     int
	json      bool
}

func (f importLeRobotFlags) options() (lerobot.ImportOptions, error) {
	opts := lerobot.ImportOptions{TimestampTolerance: f.tolerance, Partition: f.partition, NoSizes: f.noSizes, BatchEpisodes: f.batch}
	if f.episodes != "" {
		eps, err := lerobot.ParseEpisodes(f.episodes)
		if err != nil {
			return opts, fmt.Errorf("--episodes: %w", err)
		}
		opts.Episodes = eps
	}
	if f.tolerance == 0 {
		opts.TimestampTolerance = lerobot.ExactTimestamps // 0 would mean the default
	}
	return opts, nil
}

func newImportLeRobotCommand(stores *storeFlags) *cobra.Command {
	var f importLeRobotFlags
	cmd := &cobra.Command{
		Use:   "lerobot DIR TABLE",
		Short: "Import a LeRobot dataset (v2.0, v2.1, v3.0) without re-encoding a frame",
		Long: `import lerobot stores the episodes of the LeRobot dataset in DIR in TABLE,
which is created when it does not exist: one video column per camera (named by
its key), one column per feature (small integer and float16 types widened), and
a "task" column with the task text next to task_index. Episode ids are
episode_000042. Every MP4 is stored once, byte for byte; episodes sharing a
v3.0 video file reference it from their own first frame.

Every rule the import relies on is checked first, and nothing is committed if
one breaks. Episodes are committed in batches (--batch episodes, at most
100,000 frames); a rerun after an interruption skips what is already there.`,
		Example: `  framefs import lerobot ~/datasets/pusht warehouse/pusht --partition task
  framefs import lerobot aloha warehouse/aloha --episodes 0-99,120 --no-sizes --json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := f.options()
			if err != nil {
				return err
			}
			return importLeRobot(cmd, stores, args[0], args[1], opts, f.json)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.episodes, "episodes", "", "episodes to import, e.g. 0-99,120 (default all)")
	fl.Float64Var(&f.tolerance, "timestamp-tolerance", lerobot.DefaultTimestampTolerance, "largest |timestamp - frame_index/fps| accepted, in seconds (0: timestamps must be exact)")
	fl.StringVar(&f.partition, "partition", "", "partition a new table by this column (e.g. task)")
	fl.BoolVar(&f.noSizes, "no-sizes", false, "do not compute per-frame image sizes now (faster; mounts compute them when needed)")
	fl.IntVar(&f.batch, "batch", lerobot.DefaultBatchEpisodes, "episodes per commit")
	positive(fl, "batch")
	nonNegative(fl, "timestamp-tolerance")
	fl.BoolVar(&f.json, "json", false, "print a JSON summary")
	return cmd
}

func importLeRobot(cmd *cobra.Command, stores *storeFlags, dir, uri string, opts lerobot.ImportOptions, asJSON bool) (err error) {
	ctx := cmd.Context()
	defer madeDirs(uri)(&err)
	ds, err := lerobot.Open(ctx, dir)
	if err != nil {
		return err
	}
	store, err := openImportStore(ctx, stores, uri)
	if err != nil {
		return err
	}
	run := func(tblOpts table.Options) error {
		opts.Indexer = tblOpts.Indexer
		opts.Progress = progressBar()
		res, err := lerobot.Import(ctx, ds, store, tblOpts, opts)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(cmd.OutOrStdout(), res)
		}
		printImportSummary(cmd.OutOrStdout(), uri, res)
		return nil
	}
	if opts.NoSizes {
		return run(tableOptions())
	}
	return withDecoder(func(frames *serving.Server) error {
		tblOpts := tableOptions()
		tblOpts.Sizer = frameSizer{frames: frames}
		return run(tblOpts)
	})
}

// openImportStore opens the table location of an import: an existing
// table, or an empty (or new) place for one, never a folder of other
// files.
func openImportStore(ctx context.Context, stores *storeFlags, uri string) (storage.Store, error) {
	if err := stores.checkCreatable(ctx, uri); err != nil && !errors.Is(err, table.ErrExists) {
		return nil, err
	}
	return stores.openStore(ctx, uri, true)
}

func printImportSummary(w io.Writer, uri string, res *lerobot.ImportResult) {
	if res.Created {
		fmt.Fprintf(w, "created table %s\n", uri)
	}
	for _, wd := range res.Widened {
		fmt.Fprintf(w, "column %s: dtype %s stored as %s\n", wd.Column, wd.From, wd.To)
	}
	fmt.Fprintf(w, "imported %d of %d episodes (%d frames) from LeRobot %s dataset %s", res.Imported, res.Selected, res.Frames, res.Version, res.Dataset)
	if res.Skipped > 0 {
		fmt.Fprintf(w, "; %d were imported before", res.Skipped)
	}
	fmt.Fprintf(w, "\n%d snapshot(s) %v, %d video bytes stored from %d video files\n", len(res.Snapshots), res.Snapshots, res.BytesStored, res.VideoFiles)
	if res.TimestampsOverDefault > 0 {
		fmt.Fprintf(w, "%d rows have timestamps more than %g s from frame_index/fps (largest %.6f s)\n",
			res.TimestampsOverDefault, lerobot.DefaultTimestampTolerance, res.MaxTimestampError)
	}
}

func newExportLeRobotCommand(stores *storeFlags) *cobra.Command {
	var (
		snapshot int64
		tag      string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "lerobot TABLE DIR",
		Short: "Write a table snapshot as a LeRobot v3.0 dataset, videos copied byte for byte",
		Long: `export lerobot writes the episodes of the head snapshot (or --snapshot N, --tag T)
of TABLE as a LeRobot v3.0 dataset in DIR, which must not exist or be empty.
Each stored video is copied once, byte for byte; episodes are numbered 0..N-1
in episode id order. A table imported from LeRobot exports with the feature
descriptions, fps and robot type of its dataset, so import, export and import
again give the same rows and the same video bytes.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			tbl, snap, err := openSnapshot(ctx, stores, args[0], snapshot, tag)
			if err != nil {
				return err
			}
			res, err := lerobot.Export(ctx, tbl, snap, args[1], lerobot.ExportOptions{Progress: progressBar()})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported snapshot %d: %d episodes, %d frames, %d tasks, %d video files (%d bytes) to %s\n",
				res.Snapshot, res.Episodes, res.Frames, res.Tasks, res.VideoFiles, res.VideoBytes, res.Dir)
			if res.PartialVideos > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%d video files hold frames no exported episode uses (LeRobot reads them; framefs import refuses them)\n", res.PartialVideos)
			}
			return nil
		},
	}
	cmd.Flags().Int64Var(&snapshot, "snapshot", 0, "snapshot to export (default: the head)")
	positive(cmd.Flags(), "snapshot")
	cmd.Flags().StringVar(&tag, "tag", "", "tag of the snapshot to export")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON summary")
	cmd.MarkFlagsMutuallyExclusive("snapshot", "tag")
	return cmd
}

// openSnapshot opens a table and the snapshot --snapshot or --tag names
// (the head when both are empty).
func openSnapshot(ctx context.Context, stores *storeFlags, uri string, snapshot int64, tag string) (*table.Table, *table.Snapshot, error) {
	tbl, err := stores.openTable(ctx, uri)
	if err != nil {
		return nil, nil, err
	}
	snap, err := tbl.Resolve(ctx, snapshot, tag)
	return tbl, snap, err
}
