package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/table"
)

// logFlags are the command line of `framefs log`.
type logFlags struct {
	json bool
}

// logEntry is one line of `framefs log --json`.
type logEntry struct {
	Snapshot int64            `json:"snapshot"`
	Parent   int64            `json:"parent"`
	Kind     table.CommitKind `json:"kind"`
	Time     string           `json:"time"`
	SchemaID int              `json:"schema_id"`
	table.Summary
	Episodes int64    `json:"total_episodes"`
	Frames   int64    `json:"total_frames"`
	Tags     []string `json:"tags,omitempty"`
}

func newLogCommand(stores *storeFlags) *cobra.Command {
	var f logFlags
	cmd := &cobra.Command{
		Use:   "log TABLE",
		Short: "List the table's snapshots, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLog(cmd, stores, args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	return cmd
}

func runLog(cmd *cobra.Command, stores *storeFlags, uri string, f logFlags) error {
	ctx := cmd.Context()
	tbl, err := stores.openTable(ctx, uri)
	if err != nil {
		return err
	}
	ids, err := tbl.SnapshotIDs(ctx)
	if err != nil {
		return err
	}
	tags, err := tbl.Tags(ctx)
	if err != nil {
		return err
	}
	byID := map[int64][]string{}
	for _, tg := range tags {
		byID[tg.Snapshot] = append(byID[tg.Snapshot], tg.Name)
	}
	entries := []logEntry{}
	for i := len(ids) - 1; i >= 0; i-- {
		s, err := tbl.Snapshot(ctx, ids[i])
		if errors.Is(err, table.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		entries = append(entries, logEntry{Snapshot: s.ID, Parent: s.Parent, Kind: s.Kind, Time: s.Time.Format(time.RFC3339),
			SchemaID: s.SchemaID, Summary: s.Summary, Episodes: s.Episodes, Frames: s.Frames, Tags: byID[s.ID]})
	}
	if f.json {
		return printJSON(cmd.OutOrStdout(), entries)
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "SNAPSHOT\tKIND\tTIME\tEPISODES\tFRAMES\tCHANGE\tTAGS")
	for _, e := range entries {
		change := fmt.Sprintf("+%d -%d ~%d episodes", e.EpisodesAdded, e.EpisodesRemoved, e.EpisodesUpdated)
		fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%d\t%s\t%s\n", e.Snapshot, e.Kind, e.Time, e.Episodes, e.Frames, change, strings.Join(e.Tags, ","))
	}
	return w.Flush()
}
