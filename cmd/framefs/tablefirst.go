package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// acceptTableFirst lets a command with subcommands (tag, view) also be
// called with the table first, as the README writes it: `framefs tag
// TABLE create NAME` runs `framefs tag create TABLE NAME`.
func acceptTableFirst(cmd *cobra.Command) {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) < 2 {
			return cmd.Usage()
		}
		sub, rest := args[1], append([]string{args[0]}, args[2:]...)
		var names []string
		for _, c := range cmd.Commands() {
			names = append(names, c.Name())
			if c.Name() != sub {
				continue
			}
			c.SetContext(cmd.Context())
			if err := c.ParseFlags(rest); err != nil {
				return err
			}
			if c.Args != nil {
				if err := c.Args(c, c.Flags().Args()); err != nil {
					return err
				}
			}
			return c.RunE(c, c.Flags().Args())
		}
		return fmt.Errorf("unknown %s command %q (%s)", cmd.Name(), sub, strings.Join(names, ", "))
	}
	// The subcommands' flags are accepted before the subcommand's name.
	for _, c := range cmd.Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if cmd.Flags().Lookup(f.Name) == nil {
				cmd.Flags().AddFlag(f)
			}
		})
	}
}
