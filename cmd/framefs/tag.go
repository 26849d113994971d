package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// tagFlags are the command line of `framefs tag` and its subcommands; the
// parent command accepts them too, for the `framefs tag TABLE create NAME`
// order.
type tagFlags struct {
	snapshot int64
	json     bool
}

func newTagCommand(stores *storeFlags) *cobra.Command {
	var f tagFlags
	cmd := &cobra.Command{
		Use:   "tag TABLE create NAME [--snapshot N] | delete NAME | list",
		Short: "Create, delete or list tags (named, immutable snapshot pointers)",
	}
	create := &cobra.Command{
		Use:  "create TABLE NAME",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			tbl, err := stores.openTable(ctx, args[0])
			if err != nil {
				return err
			}
			snap, err := tbl.Resolve(ctx, f.snapshot, "")
			if err != nil {
				return err
			}
			tag, err := tbl.CreateTag(ctx, args[1], snap.ID)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tag %s -> snapshot %d\n", tag.Name, tag.Snapshot)
			return nil
		},
	}
	create.Flags().Int64Var(&f.snapshot, "snapshot", 0, "snapshot to tag (default: the head)")
	positive(create.Flags(), "snapshot")
	del := &cobra.Command{
		Use:  "delete TABLE NAME",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := stores.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return tbl.DeleteTag(cmd.Context(), args[1])
		},
	}
	list := &cobra.Command{
		Use:  "list TABLE",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTagList(cmd, stores, args[0], f)
		},
	}
	list.Flags().BoolVar(&f.json, "json", false, "print JSON")
	cmd.AddCommand(create, del, list)
	acceptTableFirst(cmd)
	return cmd
}

func runTagList(cmd *cobra.Command, stores *storeFlags, uri string, f tagFlags) error {
	tbl, err := stores.openTable(cmd.Context(), uri)
	if err != nil {
		return err
	}
	tags, err := tbl.Tags(cmd.Context())
	if err != nil {
		return err
	}
	type tagJSON struct {
		Tag      string `json:"tag"`
		Snapshot int64  `json:"snapshot"`
	}
	out := []tagJSON{}
	for _, tg := range tags {
		out = append(out, tagJSON{tg.Name, tg.Snapshot})
	}
	if f.json {
		return printJSON(cmd.OutOrStdout(), out)
	}
	for _, tg := range out {
		fmt.Fprintf(cmd.OutOrStdout(), "%s\t%d\n", tg.Tag, tg.Snapshot)
	}
	return nil
}
