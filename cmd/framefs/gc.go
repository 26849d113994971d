package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/table"
)

// gcFlags are the command line of `framefs gc`; they map onto
// table.GCOptions.
type gcFlags struct {
	grace  time.Duration
	dryRun bool
}

func newGCCommand(stores *storeFlags) *cobra.Command {
	var f gcFlags
	cmd := &cobra.Command{
		Use:   "gc TABLE",
		Short: "Remove files no live snapshot or tag references",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGC(cmd, stores, args[0], f)
		},
	}
	cmd.Flags().DurationVar(&f.grace, "grace", table.DefaultGrace,
		"keep unreferenced files (and, on S3, multipart uploads) younger than this: commits in progress (0s keeps none: only when nothing writes to the table)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "only list")
	nonNegative(cmd.Flags(), "grace")
	return cmd
}

// options maps the flags onto table.GCOptions, where a zero grace would
// mean the default.
func (f gcFlags) options() table.GCOptions {
	opts := table.GCOptions{Grace: f.grace, DryRun: f.dryRun}
	if f.grace == 0 {
		opts.Grace = table.NoGrace
	}
	return opts
}

func runGC(cmd *cobra.Command, stores *storeFlags, uri string, f gcFlags) error {
	tbl, err := stores.openTable(cmd.Context(), uri)
	if err != nil {
		return err
	}
	rep, err := tbl.GC(cmd.Context(), f.options())
	if err != nil {
		return err
	}
	verb, abortVerb := "removed", "aborted"
	if f.dryRun {
		verb, abortVerb = "would remove", "would abort"
	}
	// On S3 the temporaries GC removes are multipart uploads that crashed
	// writers left (their parts are stored until aborted).
	uploads := 0
	for _, key := range rep.Removed {
		if strings.Contains(key, "#upload=") {
			uploads++
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %d files (%d bytes), kept %d\n", verb, len(rep.Removed)-uploads, rep.Bytes, rep.Kept)
	if uploads > 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "%s %d stale multipart uploads\n", abortVerb, uploads)
	}
	return nil
}
