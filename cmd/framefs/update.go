package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// updateFlags are the command line of `framefs update`.
type updateFlags struct {
	episode string
	rows    string
}

func newUpdateCommand(stores *storeFlags) *cobra.Command {
	var f updateFlags
	cmd := &cobra.Command{
		Use:   "update TABLE --episode ID --rows FILE",
		Short: "Replace the non-video columns of an episode's rows",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUpdate(cmd, stores, args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.episode, "episode", "", "episode id")
	cmd.Flags().StringVar(&f.rows, "rows", "", "sidecar with the new rows")
	cmd.MarkFlagRequired("episode")
	cmd.MarkFlagRequired("rows")
	return cmd
}

func runUpdate(cmd *cobra.Command, stores *storeFlags, uri string, f updateFlags) error {
	tbl, err := stores.openTable(cmd.Context(), uri)
	if err != nil {
		return err
	}
	opener, err := stores.inputOpener()
	if err != nil {
		return err
	}
	sc, err := readSidecar(cmd.Context(), opener, f.rows)
	if err != nil {
		return err
	}
	snap, err := tbl.UpdateRows(cmd.Context(), f.episode, sc)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: updated episode %s\n", snap.ID, f.episode)
	return nil
}
