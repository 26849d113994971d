package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/table"
)

func newWarmCommand(stores *storeFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "warm TABLE",
		Short: "Store per-frame image sizes for videos ingested with --no-sizes, or sized by another framefs",
		Long: `warm decodes every video of the head snapshot that has no stored frame sizes
for the table's image setting and stores them in one commit, so that mounts
list exact sizes without decoding. Sizes count only under the identity they
were made with (format, quality, framefs's image revision, library versions):
after an upgrade that changes how frames are made, warm stores them again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withIngestTable(cmd.Context(), stores, args[0], false, nil, func(tbl *table.Table) error {
				snap, n, err := tbl.Warm(cmd.Context())
				if err != nil {
					return err
				}
				if n == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "every video already has its frame sizes")
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: stored frame sizes of %d videos\n", snap.ID, n)
				return nil
			})
		},
	}
}
