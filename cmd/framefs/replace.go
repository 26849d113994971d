package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/table"
)

// replaceFlags are the command line of `framefs replace`; they map onto
// table.VideoFile and table.AddOptions.
type replaceFlags struct {
	episode    string
	column     string
	firstFrame int64
	noSizes    bool
	rng        rangeFlags
}

func newReplaceCommand(stores *storeFlags) *cobra.Command {
	var f replaceFlags
	cmd := &cobra.Command{
		Use:   "replace TABLE --episode ID VIDEO",
		Short: "Replace the video of an existing episode (rows stay)",
		Long: `replace stores VIDEO as the new video of an episode. VIDEO may be an S3
object (s3://BUCKET/KEY), and --offset and --length select a byte range of it,
as for ingest.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			video := table.VideoFile{Path: args[1], FirstFrame: f.firstFrame}
			if err := f.rng.apply(cmd, &video, 1); err != nil {
				return err
			}
			opener, err := stores.inputOpener()
			if err != nil {
				return err
			}
			return withIngestTable(cmd.Context(), stores, args[0], f.noSizes, opener, func(tbl *table.Table) error {
				snap, err := tbl.ReplaceVideo(cmd.Context(), f.episode, f.column, video, table.AddOptions{NoSizes: f.noSizes})
				if err != nil {
					return f.rng.explain(cmd, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: replaced the video of episode %s\n", snap.ID, f.episode)
				reportS3(cmd.OutOrStdout(), opener, tbl)
				return nil
			})
		},
	}
	f.rng.register(cmd)
	cmd.Flags().StringVar(&f.episode, "episode", "", "episode id")
	cmd.Flags().StringVar(&f.column, "column", "", "video column (needed when the table has several)")
	cmd.Flags().Int64Var(&f.firstFrame, "first-frame", 0, "video frame of the first row")
	nonNegative(cmd.Flags(), "first-frame")
	cmd.Flags().BoolVar(&f.noSizes, "no-sizes", false, "do not compute per-frame image sizes now")
	cmd.MarkFlagRequired("episode")
	return cmd
}
