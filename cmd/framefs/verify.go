package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/table"
)

// verifyFlags are the command line of `framefs verify`; they map onto
// table.VerifyOptions.
type verifyFlags struct {
	json     bool
	parallel int
	quiet    bool
}

func newVerifyCommand(stores *storeFlags) *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "verify TABLE",
		Short: "Check that every referenced file exists with the right size and checksum",
		Long: `verify checks every live snapshot: manifests and their summaries, the
row groups of the data files, and every stored video (size, SHA-256,
frame index, frame sizes). It reads each manifest and data file once and
hashes videos in parallel. Progress goes to stderr as it runs, and at the
end what it checked and its cost per episode; stdout has the problems
found, or "ok".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd, stores, args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print the problems as JSON")
	cmd.Flags().IntVar(&f.parallel, "parallel", 0, "videos and data files checked at once (default: twice the CPUs, at least 4)")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print neither progress nor the cost")
	return cmd
}

func runVerify(cmd *cobra.Command, stores *storeFlags, uri string, f verifyFlags) error {
	defer limitBatchHeap()()
	tbl, err := stores.openTable(cmd.Context(), uri)
	if err != nil {
		return err
	}
	opts := table.VerifyOptions{Parallel: f.parallel}
	if !f.quiet {
		opts.Progress = verifyProgress(cmd.ErrOrStderr())
	}
	rep, err := tbl.VerifyWith(cmd.Context(), opts)
	if err != nil {
		return err
	}
	problems := rep.Problems
	viewProblems, err := query.VerifyViews(cmd.Context(), tbl)
	if err != nil {
		return err
	}
	problems = append(problems, viewProblems...)
	if !f.quiet {
		fmt.Fprintln(cmd.ErrOrStderr(), verifyCost(rep))
	}
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

// verifyProgress prints what verify has checked: one line rewritten in
// place on a terminal, else a line every ten seconds.
func verifyProgress(w io.Writer) func(table.VerifyProgress) {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	last := time.Now()
	return func(p table.VerifyProgress) {
		line := fmt.Sprintf("verify: %s: snapshot %d/%d, %d manifests, %d episodes, %d payloads (%d bytes), data files %d/%d (%d row groups)",
			p.Phase, p.Snapshots, p.SnapshotsTotal, p.Manifests, p.Episodes, p.Payloads, p.PayloadBytes,
			p.DataFiles, p.DataFilesTotal, p.RowGroups)
		switch {
		case tty:
			end := ""
			if p.Phase == "done" {
				end = "\n"
			}
			fmt.Fprintf(w, "\r%s\033[K%s", line, end)
		case p.Phase != "done" && time.Since(last) >= 10*time.Second:
			last = time.Now()
			fmt.Fprintln(w, line)
		}
	}
}

// verifyCost says what verify checked and what it cost per episode.
func verifyCost(rep table.VerifyReport) string {
	per := "-"
	if rep.Episodes > 0 {
		per = (rep.Elapsed / time.Duration(rep.Episodes)).Round(100 * time.Nanosecond).String()
	}
	return fmt.Sprintf("verified %d episodes (%d manifests, %d row groups in %d data files, %d payloads of %d bytes) in %s: %s per episode",
		rep.Episodes, rep.Manifests, rep.RowGroups, rep.DataFiles, rep.Payloads, rep.PayloadBytes,
		rep.Elapsed.Round(time.Millisecond), per)
}
