package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/table"
)

// verifyFlags are the command line of `framefs verify`.
type verifyFlags struct {
	json bool
}

func newVerifyCommand(stores *storeFlags) *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "verify TABLE",
		Short: "Check that every referenced file exists with the right size and checksum",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd, stores, args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	return cmd
}

func runVerify(cmd *cobra.Command, stores *storeFlags, uri string, f verifyFlags) error {
	tbl, err := stores.openTable(cmd.Context(), uri)
	if err != nil {
		return err
	}
	problems, err := tbl.Verify(cmd.Context())
	if err != nil {
		return err
	}
	viewProblems, err := query.VerifyViews(cmd.Context(), tbl)
	if err != nil {
		return err
	}
	problems = append(problems, viewProblems...)
	if f.json {
		if problems == nil {
			problems = []table.Problem{}
		}
		if err := printJSON(cmd.OutOrStdout(), problems); err != nil {
			return err
		}
	} else {
		for _, p := range problems {
			fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: %s: %s\n", p.Snapshot, p.Object, p.Problem)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problems found", len(problems))
	}
	if !f.json {
		fmt.Fprintln(cmd.OutOrStdout(), "ok")
	}
	return nil
}
