package serving

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/framefs/framefs/media"
)

// Digest checks.
//
// The store (the disk tier) names a frame's images by the digest of its
// video (media.Video.Digest), so that every table, snapshot and daemon
// holding the video shares them. The digest comes from the table's
// metadata, which a table's writer controls: a table that claimed another
// video's digest would put its own frames under that video's name, and
// every other table holding the real video would be served them from a
// shared cache directory. So a server uses the store for a video only once
// it has hashed the video's bytes itself and found the digest it claims:
// one read of each video per server (per mount), the first time one of its
// frames would be read from or written to the store. A video whose bytes
// do not match is served without the store, and the mismatch is logged.

// maxDigestChecks bounds the videos whose check results are remembered.
const maxDigestChecks = 1 << 14

// digestChecks remembers, per video, whether its bytes have the digest it
// claims. Safe for concurrent use.
type digestChecks struct {
	mu     sync.Mutex
	checks *simplelru.LRU[digestKey, *digestCheck] // guarded by mu
	// hashed counts the bytes read to check digests; failed the videos
	// whose bytes did not match.
	hashed, failed int64 // guarded by mu
}

// digestKey is a video's bytes and the digest claimed for them.
type digestKey struct {
	video  media.VideoKey
	digest string
}

// digestCheck is one check, in progress until done is closed.
type digestCheck struct {
	done chan struct{}
	ok   bool
}

func newDigestChecks() *digestChecks {
	lru, err := simplelru.NewLRU[digestKey, *digestCheck](maxDigestChecks, nil)
	if err != nil {
		panic(err) // only for a non-positive size
	}
	return &digestChecks{checks: lru}
}

// known reports whether v's digest has been checked and found right,
// without waiting for a check.
func (d *digestChecks) known(v media.Video) bool {
	d.mu.Lock()
	c, ok := d.checks.Get(digestKey{v.Key, v.Digest})
	d.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case <-c.done:
		return c.ok
	default:
		return false
	}
}

// verify reports whether v's bytes have the digest v claims, hashing them
// the first time it is asked (under life, so that the check completes for
// later requests even if ctx ends first). It waits for the check until
// ctx ends, and then reports false.
func (d *digestChecks) verify(ctx, life context.Context, v media.Video) bool {
	c := d.start(life, v)
	if c == nil {
		return false
	}
	select {
	case <-c.done:
		return c.ok
	case <-ctx.Done():
		return false
	}
}

// start returns the check of v's digest, starting it under life if none
// is remembered; nil for a video without a digest. It does not wait.
func (d *digestChecks) start(life context.Context, v media.Video) *digestCheck {
	if v.Digest == "" {
		return nil
	}
	k := digestKey{v.Key, v.Digest}
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.checks.Get(k)
	if !ok {
		c = &digestCheck{done: make(chan struct{})}
		d.checks.Add(k, c)
		go d.run(life, v, c)
	}
	return c
}

// run hashes v and completes c. A check that could not read the video (an
// I/O error, the server closing) is forgotten, so that a later request
// checks again.
func (d *digestChecks) run(ctx context.Context, v media.Video, c *digestCheck) {
	defer close(c.done)
	want, ok := strings.CutPrefix(v.Digest, "sha256:")
	if !ok {
		slog.Warn("serving: the disk tier is not used for a video whose digest is not SHA-256", "video", v.Key.String(), "digest", v.Digest)
		return
	}
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.NewSectionReader(ctxReaderAt{ctx, v.R}, 0, v.Size), make([]byte, 1<<20))
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hashed += n
	if err != nil {
		d.checks.Remove(digestKey{v.Key, v.Digest})
		slog.Debug("serving: cannot check a video's digest", "video", v.Key.String(), "err", err)
		return
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		d.failed++
		slog.Error("serving: a video's bytes do not have the digest its table records; its frames are not read from or written to the disk tier",
			"video", v.Key.String(), "recorded", v.Digest, "actual", "sha256:"+got)
		return
	}
	c.ok = true
}

// stats returns the bytes hashed and the videos that failed their check.
func (d *digestChecks) stats() (hashed, failed int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hashed, d.failed
}

// ctxReaderAt stops reading once ctx ends.
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}
