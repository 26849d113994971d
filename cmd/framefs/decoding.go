package main

import (
	"context"
	"fmt"
	"io"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/input"
	"github.com/framefs/framefs/videoidx"
)

// tableImageSetting is the image setting a table's schema asks for; the
// mount serves it and ingest stores its frame sizes.
func tableImageSetting(img table.ImageOptions) (media.ImageSetting, error) {
	return media.SettingFor(img.Format, img.JPEGQuality)
}

// frameSizer computes per-frame image sizes at ingest with the decoder.
type frameSizer struct {
	frames *serving.Server
}

func (s frameSizer) Identity(img table.ImageOptions) string {
	setting, err := tableImageSetting(img)
	if err != nil {
		return "invalid:" + img.Format
	}
	return decoder.Identity(setting)
}

func (s frameSizer) FrameSizes(ctx context.Context, r io.ReaderAt, size int64, ix *videoidx.Index, img table.ImageOptions) ([]int64, error) {
	setting, err := tableImageSetting(img)
	if err != nil {
		return nil, err
	}
	// A key of its own per call: ingest sessions are not shared.
	v := media.Video{Key: media.VideoKey{Object: fmt.Sprintf("ingest:%p", r), Length: size}, R: r, Size: size, Index: ix}
	return s.frames.FrameSizes(ctx, v, setting)
}

// withDecoder runs fn with a frame server sized for one command (nothing
// cached: a command reads each frame once), and closes it afterwards.
func withDecoder(fn func(*serving.Server) error) error {
	frames := serving.New(decoder.Codec{}, serving.Options{CacheBytes: -1, PictureCacheBytes: -1, Readahead: -1})
	defer frames.Close()
	return fn(frames)
}

// withIngestTable opens a table whose ingest stores per-frame image sizes
// (decoding every frame once) unless noSizes is set, reading its inputs
// through opener (nil: files and the default S3 configuration), and runs
// fn with it.
func withIngestTable(ctx context.Context, stores *storeFlags, path string, noSizes bool, opener *input.Opener, fn func(*table.Table) error) error {
	if noSizes {
		opts := tableOptions()
		opts.Inputs = opener
		tbl, err := stores.openTableWith(ctx, path, opts)
		if err != nil {
			return err
		}
		return fn(tbl)
	}
	return withDecoder(func(frames *serving.Server) error {
		opts := tableOptions()
		opts.Sizer, opts.Inputs = frameSizer{frames: frames}, opener
		tbl, err := stores.openTableWith(ctx, path, opts)
		if err != nil {
			return err
		}
		return fn(tbl)
	})
}
