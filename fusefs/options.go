package fusefs

import (
	"strings"
	"time"

	"github.com/framefs/framefs/decoder"
)

// Options configure a mount. The zero value serves each table's default
// image format. Decoder and cache limits belong to the FrameServer.
type Options struct {
	// Image overrides the image setting frames are served with. The zero
	// value uses each table's schema default (format and JPEG quality).
	Image decoder.ImageSetting
	// ImageOverride is set when Image was chosen by the user.
	ImageOverride bool
	// Refresh is how often the list of snapshots and tags is re-read, so
	// that new commits appear (default 2 seconds).
	Refresh time.Duration
	// AllowOther lets other users read the mount (-o allow_other).
	AllowOther bool
	// ReadOnly mounts read-only (-o ro): no write directories.
	ReadOnly bool
	// Debug logs every FUSE request.
	Debug bool
	// ExtraStats adds lines (Prometheus text) to .stats: counters of the
	// decoder and its caches.
	ExtraStats func(b *strings.Builder)
}

func (o Options) withDefaults() Options {
	if o.Refresh == 0 {
		o.Refresh = 2 * time.Second
	}
	return o
}
