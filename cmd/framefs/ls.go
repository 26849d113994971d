package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/table"
)

// lsFlags are the command line of `framefs ls`.
type lsFlags struct {
	snapshot int64
	tag      string
	json     bool
	where    lsWhereOptions
	window   windowFlags
}

func newLsCommand(stores *storeFlags) *cobra.Command {
	var f lsFlags
	cmd := &cobra.Command{
		Use:   "ls TABLE [EPISODE] [--where EXPR [--count]] [--window N [--frame-skip S] [--hop H]]",
		Short: "List a snapshot's episodes, an episode's frame rows, or the frames that match a filter",
		Long: `ls lists the episodes of a snapshot, or the frame rows of EPISODE. With --where
it lists the frames whose row matches the filter (DuckDB's SQL: comparisons,
AND OR NOT, IS, IN, BETWEEN, LIKE, ILIKE, arithmetic, CAST, lower(), len(),
list_contains(), list[i], ...; "frame" is the row's position in its episode,
as in frame % 3 = 0; see the README), or with --count only counts them. With
--window it lists the clip windows whose frames all match instead (episode,
first frame, frame indices), as a clip view shows them.`,
		Example: `  framefs ls data/robot --where "ego_speed_kmh >= 60 AND task = 'pick'" --count
  framefs ls data/robot --where "label IN ('cat', 'dog')" --json
  framefs ls data/robot --where "task = 'pick'" --window 16 --hop 8 --json`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			tbl, err := stores.openTable(ctx, args[0])
			if err != nil {
				return err
			}
			snap, err := tbl.Resolve(ctx, f.snapshot, f.tag)
			if err != nil {
				return err
			}
			win, err := f.window.window()
			if err != nil {
				return err
			}
			if win != nil || f.where.where != "" || f.where.count {
				where := f.where
				if len(args) == 2 {
					where.episode = args[1]
				}
				where.asJSON = f.json
				if win != nil {
					return runLsClips(ctx, cmd.OutOrStdout(), tbl, snap, where, *win)
				}
				return runLsWhere(ctx, cmd.OutOrStdout(), tbl, snap, where)
			}
			if len(args) == 1 {
				return listEpisodes(cmd, tbl, snap, f)
			}
			return listRows(cmd, tbl, snap, args[1], f)
		},
	}
	cmd.Flags().Int64Var(&f.snapshot, "snapshot", 0, "read this snapshot (default: the head)")
	positive(cmd.Flags(), "snapshot")
	cmd.Flags().StringVar(&f.tag, "tag", "", "read the snapshot of this tag")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	cmd.Flags().StringVar(&f.where.where, "where", "", "list only the frames whose row matches this filter (SQL WHERE syntax)")
	cmd.Flags().BoolVar(&f.where.count, "count", false, "print the number of matching frames instead")
	f.window.add(cmd.Flags())
	return cmd
}

// listEpisodes prints a snapshot's episodes with their frame counts and
// partition values.
func listEpisodes(cmd *cobra.Command, tbl *table.Table, snap *table.Snapshot, f lsFlags) error {
	out := cmd.OutOrStdout()
	eps, err := tbl.Episodes(cmd.Context(), snap)
	if err != nil {
		return err
	}
	type epJSON struct {
		Episode   string            `json:"episode"`
		Frames    int64             `json:"frames"`
		Partition map[string]string `json:"partition,omitempty"`
	}
	list := make([]epJSON, len(eps))
	for i, e := range eps {
		list[i] = epJSON{e.Episode, e.Rows, e.Partition}
	}
	if f.json {
		return printJSON(out, map[string]any{"snapshot": snap.ID, "episodes": list})
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "EPISODE\tFRAMES\tPARTITION")
	for _, e := range list {
		var parts []string
		for k, v := range e.Partition {
			parts = append(parts, k+"="+v)
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "%s\t%d\t%s\n", e.Episode, e.Frames, strings.Join(parts, ","))
	}
	return w.Flush()
}

// listRows prints an episode's frame rows, one JSON object per line (or
// one JSON document with --json).
func listRows(cmd *cobra.Command, tbl *table.Table, snap *table.Snapshot, episode string, f lsFlags) error {
	ctx, out := cmd.Context(), cmd.OutOrStdout()
	e, err := tbl.Episode(ctx, snap, episode)
	if err != nil {
		return err
	}
	rows, err := tbl.Rows(ctx, snap, e)
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(out, map[string]any{"snapshot": snap.ID, "episode": e.Episode, "rows": rows})
	}
	enc := json.NewEncoder(out)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
