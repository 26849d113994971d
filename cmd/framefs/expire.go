package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/table"
)

// expireFlags are the command line of `framefs expire`; they map onto
// table.ExpireOptions.
type expireFlags struct {
	keepLast  int
	olderThan time.Duration
}

func newExpireCommand(stores *storeFlags) *cobra.Command {
	var f expireFlags
	cmd := &cobra.Command{
		Use:   "expire TABLE [--keep-last N] [--older-than DURATION]",
		Short: "Drop old snapshots that no tag needs (then run gc to free space)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("keep-last") && !cmd.Flags().Changed("older-than") {
				return errors.New("say what to expire: --keep-last N and/or --older-than DURATION")
			}
			tbl, err := stores.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			dropped, err := tbl.Expire(cmd.Context(), table.ExpireOptions{KeepLast: f.keepLast, OlderThan: f.olderThan})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "expired %d snapshots %v\n", len(dropped), dropped)
			return nil
		},
	}
	cmd.Flags().IntVar(&f.keepLast, "keep-last", 0, "keep the newest N snapshots (the head always stays)")
	cmd.Flags().DurationVar(&f.olderThan, "older-than", 0, "expire only snapshots older than this (e.g. 168h)")
	nonNegative(cmd.Flags(), "keep-last", "older-than")
	return cmd
}
