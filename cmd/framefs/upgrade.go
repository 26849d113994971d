package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/table"
)

func newUpgradeCommand(stores *storeFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "upgrade TABLE",
		Short: "Bring a table to the current format version",
		Long: fmt.Sprintf(`upgrade brings a table written by an older framefs to format version %d
(docs/FORMAT.md): table.json declares it, and one commit writes the head's
metadata again in the current format without changing any episode. Older
snapshots stay as they are and are read as before. Any commit upgrades a
table the same way; upgrade does it alone. Readers older than the version
refuse the table once it is upgraded.`, table.FormatVersion),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := stores.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			rep, err := tbl.Upgrade(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case rep.From >= rep.To && rep.Snapshot == nil:
				fmt.Fprintf(out, "%s is at format version %d already\n", args[0], rep.To)
			case rep.Snapshot == nil:
				fmt.Fprintf(out, "upgraded %s from format version %d to %d (no snapshots yet)\n", args[0], rep.From, rep.To)
			default:
				fmt.Fprintf(out, "upgraded %s from format version %d to %d: snapshot %d holds its %d episodes\n",
					args[0], rep.From, rep.To, rep.Snapshot.ID, rep.Snapshot.Episodes)
			}
			return nil
		},
	}
}
