package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/ingest"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// tableImageSetting is the image setting a table's schema asks for; the
// mount serves it and ingest stores its frame sizes.
func tableImageSetting(img table.ImageOptions) (decoder.ImageSetting, error) {
	return decoder.SettingFor(img.Format, img.JPEGQuality)
}

// frameSizer computes per-frame image sizes at ingest with the decoder.
type frameSizer struct {
	frames *decoder.FrameSource
}

func (s frameSizer) Identity(img table.ImageOptions) string {
	setting, err := tableImageSetting(img)
	if err != nil {
		return "invalid:" + img.Format
	}
	return setting.Identity()
}

func (s frameSizer) FrameSizes(ctx context.Context, r io.ReaderAt, size int64, ix *videoidx.Index, img table.ImageOptions) ([]int64, error) {
	setting, err := tableImageSetting(img)
	if err != nil {
		return nil, err
	}
	// A key of its own per call: ingest sessions are not shared.
	v := decoder.Video{Key: decoder.VideoKey{Object: fmt.Sprintf("ingest:%p", r), Length: size}, R: r, Size: size, Index: ix}
	return s.frames.FrameSizes(ctx, v, setting)
}

// withDecoder runs fn with a decoder pool and frame source sized for one
// command (nothing cached: a command reads each frame once), and closes
// them afterwards.
func withDecoder(fn func(*decoder.FrameSource) error) error {
	pool := decoder.NewPool(decoder.Options{PictureCacheBytes: -1})
	defer pool.Close()
	frames := decoder.NewFrameSource(pool, decoder.FrameSourceOptions{CacheBytes: -1, Readahead: -1})
	defer frames.Close()
	return fn(frames)
}

// withIngestTable opens a table whose ingest stores per-frame image sizes
// (decoding every frame once) unless noSizes is set, reading its sources
// through sources (nil: files and the default S3 configuration), and runs
// fn with it.
func withIngestTable(ctx context.Context, path string, noSizes bool, sources *storage.Sources, fn func(*table.Table) error) error {
	if noSizes {
		opts := tableOptions()
		opts.Sources = sources
		tbl, err := openTableWith(ctx, path, opts)
		if err != nil {
			return err
		}
		return fn(tbl)
	}
	return withDecoder(func(frames *decoder.FrameSource) error {
		opts := tableOptions()
		opts.Sizer, opts.Sources = frameSizer{frames: frames}, sources
		tbl, err := openTableWith(ctx, path, opts)
		if err != nil {
			return err
		}
		return fn(tbl)
	})
}

func newIngestImagesCommand() *cobra.Command {
	var (
		rows, episode, codec, pixFmt string
		fps                          float64
		gop                          int
		codecOpts                    []string
		noSizes                      bool
	)
	cmd := &cobra.Command{
		Use:   "ingest-images TABLE DIR --rows FILE --fps 30",
		Short: "Encode a folder of ordered images (PNG, JPEG) into one video and add it as an episode",
		Long: `ingest-images encodes the images of DIR, in name order, into one MP4 with FFmpeg
and stores it like any video. All images must have the same dimensions; the
episode id is --episode, else the sidecar's episode column, else DIR's name.
Nothing is committed if any image is unusable.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sources, err := newSources()
			if err != nil {
				return err
			}
			return withIngestTable(cmd.Context(), args[0], noSizes, sources, func(tbl *table.Table) error {
				return ingestImages(cmd, tbl, sources, args[1], imageFlags{rows, episode, codec, pixFmt, fps, gop, codecOpts, noSizes})
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&rows, "rows", "", "sidecar with one row per image")
	f.StringVar(&episode, "episode", "", "episode id (default: the sidecar's, else DIR's name)")
	f.Float64Var(&fps, "fps", 30, "frame rate")
	f.StringVar(&codec, "codec", "libx264", "FFmpeg video encoder")
	f.StringVar(&pixFmt, "pix-fmt", "yuv420p", "pixel format")
	f.IntVar(&gop, "gop", 30, "frames from one keyframe to the next")
	f.StringArrayVar(&codecOpts, "codec-opt", nil, "encoder option KEY=VALUE, e.g. crf=18 or preset=fast (repeatable)")
	f.BoolVar(&noSizes, "no-sizes", false, "do not compute per-frame image sizes now")
	return cmd
}

type imageFlags struct {
	rows, episode, codec, pixFmt string
	fps                          float64
	gop                          int
	codecOpts                    []string
	noSizes                      bool
}

func ingestImages(cmd *cobra.Command, tbl *table.Table, sources *storage.Sources, dir string, f imageFlags) error {
	ctx := cmd.Context()
	rows, episode := f.rows, f.episode
	images, err := ingest.ListImages(dir)
	if err != nil {
		return err
	}
	var sc *table.Sidecar
	if rows != "" {
		if sc, err = readSidecar(ctx, sources, rows); err != nil {
			return err
		}
	}
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
	opts := decoder.VideoEncodeOptions{FPS: f.fps, Codec: f.codec, PixFmt: f.pixFmt, GOP: f.gop, CodecOptions: map[string]string{}}
	for _, kv := range f.codecOpts {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--codec-opt %q: want KEY=VALUE", kv)
		}
		opts.CodecOptions[k] = v
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

func newFrameCommand() *cobra.Command {
	var (
		episode, column, format, tag string
		frame, snapshot              int64
		quality                      int
	)
	cmd := &cobra.Command{
		Use:   "frame TABLE --episode ID --frame N [--column C] [--format jpg] > out.jpg",
		Short: "Write one frame of an episode as an image to stdout",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			tbl, err := openTable(ctx, args[0])
			if err != nil {
				return err
			}
			snap, err := tbl.Resolve(ctx, snapshot, tag)
			if err != nil {
				return err
			}
			e, err := tbl.Episode(ctx, snap, episode)
			if err != nil {
				return err
			}
			schema, err := tbl.Schema(ctx, snap.SchemaID)
			if err != nil {
				return err
			}
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
			if frame < 0 || frame >= e.Rows {
				return fmt.Errorf("episode %s has frames 0 to %d, not %d", episode, e.Rows-1, frame)
			}
			img := schema.Image
			if format != "" {
				img = table.ImageOptions{Format: format, JPEGQuality: quality}
			} else if quality != 0 {
				img.JPEGQuality = quality
			}
			setting, err := tableImageSetting(img)
			if err != nil {
				return err
			}
			v, err := tbl.OpenVideo(ctx, ref)
			if err != nil {
				return err
			}
			defer v.Close()
			return withDecoder(func(frames *decoder.FrameSource) error {
				dv := decoder.Video{Key: decoder.VideoKey{Object: ref.Pack, Offset: ref.Offset, Length: ref.Length}, R: v.Payload, Size: ref.Length, Index: v.Index}
				data, err := frames.Frame(ctx, dv, int(ref.FirstFrame+frame), setting)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(data)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&episode, "episode", "", "episode id")
	f.Int64Var(&frame, "frame", 0, "frame (row) number in the episode, from 0")
	f.StringVar(&column, "column", "", "video column (needed when the table has several)")
	f.StringVar(&format, "format", "", "jpg, png, bmp or ppm (default: the table's setting)")
	f.IntVar(&quality, "jpeg-quality", 0, "JPEG quality 1-100")
	f.Int64Var(&snapshot, "snapshot", 0, "read this snapshot (default: the head)")
	f.StringVar(&tag, "tag", "", "read the snapshot of this tag")
	cmd.MarkFlagRequired("episode")
	return cmd
}

func newWarmCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "warm TABLE",
		Short: "Store per-frame image sizes for videos ingested with --no-sizes",
		Long: `warm decodes every video of the head snapshot that has no stored frame sizes
for the table's image setting and stores them in one commit, so that mounts
list exact sizes without decoding.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withIngestTable(cmd.Context(), args[0], false, nil, func(tbl *table.Table) error {
				snap, n, err := tbl.Warm(cmd.Context())
				if err != nil {
					return err
				}
				if n == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "every video already has its frame sizes")
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: stored frame sizes of %d videos\n", snap.ID, n)
				return nil
			})
		},
	}
}
