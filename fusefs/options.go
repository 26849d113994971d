package fusefs

import (
	"context"
	"strings"
	"time"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/table"
)

// Options configure a mount. The zero value serves each table's default
// image format. Decoder and cache limits belong to the FrameServer.
type Options struct {
	// Image overrides, field by field, the image setting each table's
	// schema gives: a field left zero keeps the table's own.
	Image ImageChoice
	// Refresh is how often the list of snapshots and tags is re-read, so
	// that new commits appear (default 2 seconds).
	Refresh time.Duration
	// AllowOther lets other users read the mount (-o allow_other).
	AllowOther bool
	// ReadOnly mounts read-only (-o ro): no write directories.
	ReadOnly bool
	// Debug logs every FUSE request.
	Debug bool
	// StagingDir holds what users write into the write directories
	// (TABLE/ingest/, TABLE/replace/) until it is committed; it must be on
	// a local disk. Empty: no write directories.
	StagingDir string
	// Settle is how long a staged file must stay closed and unchanged
	// before it commits (default 2 s).
	Settle time.Duration
	// StagingLimit bounds the bytes staged per write directory (0: no
	// limit); writes past it fail with ENOSPC.
	StagingLimit int64
	// EncodeImages encodes a folder of images dropped into ingest/ as a
	// video.
	EncodeImages func(ctx context.Context, images []string, out string) error
	// IngestNoSizes skips computing frame sizes when committing; mounts
	// then compute them when first listed.
	IngestNoSizes bool
	// ExtraStats adds lines (Prometheus text) to .stats: counters of the
	// decoder and its caches.
	ExtraStats func(b *strings.Builder)

	// metadataBudgets bound each table's metadata caches (zero fields:
	// the defaults); tests lower them.
	metadataBudgets mounttree.Budgets

	// formerHeadLinger is how long after latest moved on the kernel is
	// asked to drop the former head's folder (see tableNode.forgetFolder);
	// tests shorten it.
	formerHeadLinger time.Duration
}

// ImageChoice is what the user chose over each table's image setting.
type ImageChoice struct {
	// Format (jpg, png, bmp, ppm, npy) and JPEGQuality replace the table's
	// where set.
	table.ImageOptions
	// Width and Height scale every frame (see media.ImageSetting); 0 and
	// 0 serve the video's display size.
	Width, Height int
}

// settingFor is the image setting the frames of a table whose schema
// gives img are served with.
func (c ImageChoice) settingFor(img table.ImageOptions) (media.ImageSetting, error) {
	img = c.ImageOptions.Over(img)
	s, err := media.SettingFor(img.Format, img.JPEGQuality)
	if err != nil {
		return s, err
	}
	s.Width, s.Height = c.Width, c.Height
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s.Normalize(), nil
}

func (o Options) withDefaults() Options {
	if o.Refresh == 0 {
		o.Refresh = 2 * time.Second
	}
	if o.formerHeadLinger == 0 {
		// Long enough for readers of latest to have looked up, through
		// the new head, the files it shares with the former one.
		o.formerHeadLinger = max(10*time.Second, 4*o.Refresh)
	}
	return o
}
