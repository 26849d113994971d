package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/ingest"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/input"
)

// ingestImagesFlags are the command line of `framefs ingest-images`; they
// map onto decoder.VideoEncodeOptions and table.AddOptions.
type ingestImagesFlags struct {
	rows      string
	episode   string
	fps       float64
	codec     string
	pixFmt    string
	gop       int
	codecOpts []string
	noSizes   bool
}

func newIngestImagesCommand(stores *storeFlags) *cobra.Command {
	var f ingestImagesFlags
	cmd := &cobra.Command{
		Use:   "ingest-images TABLE DIR --rows FILE --fps 30",
		Short: "Encode a folder of ordered images (PNG, JPEG) into one video and add it as an episode",
		Long: `ingest-images encodes the images of DIR, in name order, into one MP4 with FFmpeg
and stores it like any video. All images must have the same dimensions; the
episode id is --episode, else the sidecar's episode column, else DIR's name.
Nothing is committed if any image is unusable.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opener, err := stores.inputOpener()
			if err != nil {
				return err
			}
			return withIngestTable(cmd.Context(), stores, args[0], f.noSizes, opener, func(tbl *table.Table) error {
				return ingestImages(cmd, tbl, opener, args[1], f)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.rows, "rows", "", "sidecar with one row per image")
	fl.StringVar(&f.episode, "episode", "", "episode id (default: the sidecar's, else DIR's name)")
	fl.Float64Var(&f.fps, "fps", 30, "frame rate")
	fl.StringVar(&f.codec, "codec", "libx264", "FFmpeg video encoder")
	fl.StringVar(&f.pixFmt, "pix-fmt", "yuv420p", "pixel format")
	fl.IntVar(&f.gop, "gop", 30, "frames from one keyframe to the next")
	positive(fl, "fps", "gop")
	fl.StringArrayVar(&f.codecOpts, "codec-opt", nil, "encoder option KEY=VALUE, e.g. crf=18 or preset=fast (repeatable)")
	fl.BoolVar(&f.noSizes, "no-sizes", false, "do not compute per-frame image sizes now")
	return cmd
}

// encodeOptions maps the flags onto the video encoder's options.
func (f ingestImagesFlags) encodeOptions() (decoder.VideoEncodeOptions, error) {
	opts := decoder.VideoEncodeOptions{FPS: f.fps, Codec: f.codec, PixFmt: f.pixFmt, GOP: f.gop, CodecOptions: map[string]string{}}
	for _, kv := range f.codecOpts {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return opts, fmt.Errorf("--codec-opt %q: want KEY=VALUE", kv)
		}
		opts.CodecOptions[k] = v
	}
	return opts, nil
}

func ingestImages(cmd *cobra.Command, tbl *table.Table, opener *input.Opener, dir string, f ingestImagesFlags) error {
	ctx := cmd.Context()
	images, err := ingest.ListImages(dir)
	if err != nil {
		return err
	}
	var sc *table.Sidecar
	if f.rows != "" {
		if sc, err = readSidecar(ctx, opener, f.rows); err != nil {
			return err
		}
	}
	episode := f.episode
	if episode == "" {
		schema, err := tbl.LatestSchema(ctx)
		if err != nil {
			return err
		}
		if sc != nil {
			if episode, err = sc.EpisodeID(schema); err != nil {
				return err
			}
		}
		if episode == "" {
			episode = filepath.Base(filepath.Clean(dir))
		}
	}
	opts, err := f.encodeOptions()
	if err != nil {
		return err
	}
	encode := func(ctx context.Context, out string) error {
		return decoder.EncodeImagesToVideo(ctx, images, out, opts)
	}
	snap, err := tbl.AddImagesAsVideo(ctx, episode, images, sc, encode, table.AddOptions{NoSizes: f.noSizes})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: added episode %s, %d frames\n", snap.ID, episode, snap.Summary.FramesAdded)
	return nil
}
