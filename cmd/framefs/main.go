// Command framefs mounts versioned video-frame tables as a filesystem and
// manages them. Each subcommand maps its flags onto the options of a library
// package; no table or video logic lives here.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/internal/safetext"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		// Errors echo arguments, file names and filters: their control
		// characters are shown, not sent to the terminal.
		fmt.Fprintf(os.Stderr, "framefs: %s\n", safetext.Escape(err.Error()))
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	var debug bool
	stores := &storeFlags{}
	root := &cobra.Command{
		Use:           "framefs",
		Short:         "Mount versioned video-frame tables as a filesystem",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			level := slog.LevelWarn
			if debug {
				level = slog.LevelDebug
			}
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			slog.SetDefault(logger)
			decoder.RouteLogs(logger)
			return checkFlags(cmd.Flags())
		},
	}
	stores.register(root.PersistentFlags())
	root.PersistentFlags().BoolVar(&debug, "debug", false, "log debugging detail, FFmpeg's messages included, to stderr")
	root.AddCommand(newProbeCommand(), newCreateCommand(stores), newIngestCommand(stores), newUpdateCommand(stores),
		newReplaceCommand(stores), newDeleteCommand(stores), newLogCommand(stores), newTagCommand(stores), newLsCommand(stores),
		newExpireCommand(stores), newGCCommand(stores), newVerifyCommand(stores), newMountCommand(stores), newIngestImagesCommand(stores),
		newFrameCommand(stores), newWarmCommand(stores), newViewCommand(stores), newImportCommand(stores), newExportCommand(stores),
		newUpgradeCommand(stores))
	return root
}
