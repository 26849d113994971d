package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// deleteFlags are the command line of `framefs delete`.
type deleteFlags struct {
	episode string
}

func newDeleteCommand(stores *storeFlags) *cobra.Command {
	var f deleteFlags
	cmd := &cobra.Command{
		Use:   "delete TABLE --episode ID",
		Short: "Delete an episode (older snapshots keep it until they expire)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := stores.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			snap, err := tbl.DeleteEpisode(cmd.Context(), f.episode)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: deleted episode %s\n", snap.ID, f.episode)
			return nil
		},
	}
	cmd.Flags().StringVar(&f.episode, "episode", "", "episode id")
	cmd.MarkFlagRequired("episode")
	return cmd
}
