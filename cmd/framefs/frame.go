package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
)

// frameFlags are the command line of `framefs frame`; the image options
// map onto the table's image setting.
type frameFlags struct {
	episode  string
	frame    int64
	column   string
	format   string
	quality  int
	snapshot int64
	tag      string
}

func newFrameCommand(stores *storeFlags) *cobra.Command {
	var f frameFlags
	cmd := &cobra.Command{
		Use:   "frame TABLE --episode ID --frame N [--column C] [--format jpg] > out.jpg",
		Short: "Write one frame of an episode as an image to stdout",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFrame(cmd, stores, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.episode, "episode", "", "episode id")
	fl.Int64Var(&f.frame, "frame", 0, "frame (row) number in the episode, from 0")
	fl.StringVar(&f.column, "column", "", "video column (needed when the table has several)")
	fl.StringVar(&f.format, "format", "", "jpg, png, bmp, ppm or npy (default: the table's setting)")
	fl.IntVar(&f.quality, "jpeg-quality", 0, "JPEG quality 1-100 (default: the table's setting)")
	fl.Int64Var(&f.snapshot, "snapshot", 0, "read this snapshot (default: the head)")
	fl.StringVar(&f.tag, "tag", "", "read the snapshot of this tag")
	positive(fl, "jpeg-quality", "snapshot")
	nonNegative(fl, "frame")
	cmd.MarkFlagRequired("episode")
	return cmd
}

func runFrame(cmd *cobra.Command, stores *storeFlags, uri string, f frameFlags) error {
	ctx := cmd.Context()
	tbl, err := stores.openTable(ctx, uri)
	if err != nil {
		return err
	}
	snap, err := tbl.Resolve(ctx, f.snapshot, f.tag)
	if err != nil {
		return err
	}
	e, err := tbl.Episode(ctx, snap, f.episode)
	if err != nil {
		return err
	}
	schema, err := tbl.Schema(ctx, snap.SchemaID)
	if err != nil {
		return err
	}
	column := f.column
	if column == "" {
		if len(schema.VideoColumns) > 1 {
			return fmt.Errorf("the table has video columns %s: choose one with --column", strings.Join(schema.VideoColumns, ", "))
		}
		column = schema.VideoColumns[0]
	}
	ref, ok := e.Videos[column]
	if !ok {
		return fmt.Errorf("%q is not a video column (the table has %s)", column, strings.Join(schema.VideoColumns, ", "))
	}
	if f.frame < 0 || f.frame >= e.Rows {
		return fmt.Errorf("episode %s has frames 0 to %d, not %d", f.episode, e.Rows-1, f.frame)
	}
	// Options not given keep the table's setting, so the bytes equal the
	// mounted file's.
	img := table.ImageOptions{Format: f.format, JPEGQuality: f.quality}.Over(schema.Image)
	setting, err := tableImageSetting(img)
	if err != nil {
		return err
	}
	v, err := tbl.OpenVideo(ctx, ref)
	if err != nil {
		return err
	}
	defer v.Close()
	return withDecoder(func(frames *serving.Server) error {
		dv := media.Video{Key: media.VideoKey{Object: ref.Pack, Offset: ref.Offset, Length: ref.Length}, R: v.Payload, Size: ref.Length, Index: v.Index}
		data, err := frames.Frame(ctx, dv, int(ref.FirstFrame+f.frame), setting)
		if err != nil {
			return err
		}
		_, err = cmd.OutOrStdout().Write(data)
		return err
	})
}
