package fusefs

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/table"
)

// FrameServer makes frame images; decoder.FrameSource implements it. It is
// the mount's only way to FFmpeg: the tree itself builds without cgo.
type FrameServer interface {
	Frame(ctx context.Context, v media.Video, ordinal int, setting media.ImageSetting) ([]byte, error)
	FrameSizes(ctx context.Context, v media.Video, setting media.ImageSetting) ([]int64, error)
	// Identity names everything the bytes of images made with setting
	// depend on; frame sizes stored in a table under an equal identity
	// are the sizes this server's images have.
	Identity(setting media.ImageSetting) string
}

// catalog answers the questions the filesystem asks about one table's
// episodes (rows, frame sizes, frame bytes) and caches the answers, which
// never change for a given episode version. It has no FUSE in it. Its work
// is not cancelled when the request that asked for it is interrupted (see
// uninterrupted).
type catalog struct {
	// life is the mount's context: payloads stay open past the request
	// that opened them, so they are opened under it, and their reads stop
	// at unmount.
	life     context.Context
	tbl      *table.Table
	frames   FrameServer
	setting  media.ImageSetting
	identity string // frames.Identity(setting), asked on every frame lookup
	stats    *stats

	videos *lru.Cache[string, *table.Video] // open payloads, by payload
	sizes  *lru.Cache[string, []int64]      // by payload + identity
	rows   *lru.Cache[string, []table.Row]  // by data file + row group + schema
	files  *lru.Cache[string, []byte]       // frames.jsonl / frames.parquet
	trees  *lru.Cache[int64, *snapshotTree] // by snapshot id
	// views holds the trees of views, by view version and snapshot.
	views *lru.Cache[string, *snapshotTree]
	// identities caches frames.Identity of the settings views use.
	identities sync.Map // media.ImageSetting -> string
	// flight runs one computation per cache key at a time; concurrent
	// misses wait for it and share its result.
	flight singleflight.Group
}

// snapshotTree is what a snapshot directory shows: the snapshot's schema
// and its folders, built from its manifests alone.
type snapshotTree struct {
	schema *table.Schema
	root   *treeDir
	// clips lists a clip view's clips (nil for other trees).
	clips *clipIndex
}

// maxTrees bounds the snapshot trees a catalog keeps (about 200 bytes per
// episode each), so that a snapshot directory the kernel forgot and looks
// up again does not read its manifests again.
const maxTrees = 16

func newCatalog(life context.Context, tbl *table.Table, frames FrameServer, setting media.ImageSetting, st *stats) *catalog {
	// Payloads stay open: the decoder's read-ahead reads them after the
	// request that opened them returned. Evicted ones are closed; a
	// read-ahead still reading one fails quietly and the frame is decoded
	// on demand instead.
	videos, _ := lru.NewWithEvict[string, *table.Video](maxOpenVideos, func(_ string, v *table.Video) { v.Close() })
	sizes, _ := lru.New[string, []int64](4096)
	rows, _ := lru.New[string, []table.Row](64)
	files, _ := lru.New[string, []byte](64)
	trees, _ := lru.New[int64, *snapshotTree](maxTrees)
	views, _ := lru.New[string, *snapshotTree](maxTrees)
	return &catalog{life: life, tbl: tbl, frames: frames, setting: setting, identity: frames.Identity(setting), stats: st,
		videos: videos, sizes: sizes, rows: rows, files: files, trees: trees, views: views}
}

// uninterrupted detaches the work of a request from the request's
// interruption. The kernel interrupts a request whenever the reading thread
// gets any signal it handles: the Go runtime's preemption signal (SIGURG),
// SIGCHLD, a progress bar's SIGALRM. Honoring that would fail an open() or
// read() of a plain file with EINTR, which no program expects from a local
// disk, and abandon work that other readers wait for (the catalog's
// computations are shared). The work is bounded and its result cached; a
// reader killed by a fatal signal has its request dropped by the kernel,
// whatever the daemon does.
func uninterrupted(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

func payloadKey(ref table.VideoRef) string {
	return fmt.Sprintf("%s@%d+%d", ref.Pack, ref.Offset, ref.Length)
}

// cached returns the value under key in lru, computing it with compute
// and adding it on a miss. Concurrent misses on one key compute it once.
func cached[K comparable, V any](c *catalog, lru *lru.Cache[K, V], key K, flightKey string, compute func() (V, error)) (V, error) {
	if v, ok := lru.Get(key); ok {
		return v, nil
	}
	r, err, _ := c.flight.Do(flightKey, func() (any, error) {
		if v, ok := lru.Get(key); ok {
			return v, nil
		}
		v, err := compute()
		if err != nil {
			return nil, err
		}
		lru.Add(key, v)
		return v, nil
	})
	if err != nil {
		var zero V
		return zero, err
	}
	return r.(V), nil
}

// snapshotTree returns the folders of a snapshot.
func (c *catalog) snapshotTree(ctx context.Context, snap *table.Snapshot) (*snapshotTree, error) {
	ctx = uninterrupted(ctx)
	return cached(c, c.trees, snap.ID, fmt.Sprintf("tree %d", snap.ID), func() (*snapshotTree, error) {
		schema, err := c.tbl.Schema(ctx, snap.SchemaID)
		if err != nil {
			return nil, err
		}
		eps, err := c.tbl.Episodes(ctx, snap)
		if err != nil {
			return nil, err
		}
		return &snapshotTree{schema: schema, root: buildTree(schema, eps)}, nil
	})
}

// maxOpenVideos bounds the payloads (pack objects) a table keeps open.
const maxOpenVideos = 128

// openVideo returns a stored video ready for the decoder. It stays open
// (and cached) after the call.
func (c *catalog) openVideo(ctx context.Context, ref table.VideoRef) (media.Video, error) {
	ctx = uninterrupted(ctx)
	key := payloadKey(ref)
	v, err := cached(c, c.videos, key, "open "+key, func() (*table.Video, error) {
		return c.tbl.OpenVideo(c.life, ref)
	})
	if err != nil {
		return media.Video{}, err
	}
	dv := media.Video{
		Key:   media.VideoKey{Object: ref.Pack, Offset: ref.Offset, Length: ref.Length},
		R:     v.Payload,
		Size:  ref.Length,
		Index: v.Index,
	}
	if ref.SHA256 != "" {
		// The payload's checksum names its frames in the disk tier, so
		// they are shared by every table and snapshot holding the video.
		dv.Digest = "sha256:" + ref.SHA256
	}
	return dv, nil
}

// close releases the open payloads.
func (c *catalog) close() { c.videos.Purge() }

// frameSizes returns the encoded size of every frame of a video for the
// served setting: stored at ingest when the identity matches, else worked
// out once by decoding the video and remembered.
func (c *catalog) frameSizes(ctx context.Context, ref table.VideoRef) ([]int64, error) {
	return c.frameSizesFor(ctx, ref, c.setting, c.identity)
}

// frameSizesFor is frameSizes for another image setting (a view's), whose
// identity is given.
func (c *catalog) frameSizesFor(ctx context.Context, ref table.VideoRef, setting media.ImageSetting, identity string) ([]int64, error) {
	ctx = uninterrupted(ctx)
	key := payloadKey(ref) + "|" + identity
	return cached(c, c.sizes, key, "sizes "+key, func() ([]int64, error) {
		sizes, ok, err := c.tbl.StoredSizes(ctx, ref, identity)
		if err != nil || ok {
			return sizes, err
		}
		c.stats.sizeComputations.Add(1)
		dv, err := c.openVideo(ctx, ref)
		if err != nil {
			return nil, err
		}
		return c.frames.FrameSizes(ctx, dv, setting)
	})
}

// identityOf returns frames.Identity(setting), remembered per setting.
func (c *catalog) identityOf(setting media.ImageSetting) string {
	if setting == c.setting {
		return c.identity
	}
	if id, ok := c.identities.Load(setting); ok {
		return id.(string)
	}
	id := c.frames.Identity(setting)
	c.identities.Store(setting, id)
	return id
}

// frame returns the image of frame ordinal of a stored video whose
// episode has rows frames from ref.FirstFrame on.
func (c *catalog) frame(ctx context.Context, ref table.VideoRef, rows int64, ordinal int) ([]byte, error) {
	return c.frameFor(ctx, ref, rows, ordinal, c.setting)
}

// frameFor is frame with another image setting (a view's).
func (c *catalog) frameFor(ctx context.Context, ref table.VideoRef, rows int64, ordinal int, setting media.ImageSetting) ([]byte, error) {
	ctx = uninterrupted(ctx)
	dv, err := c.openVideo(ctx, ref)
	if err != nil {
		return nil, err
	}
	// Fills and read-ahead decode only the episode's frames.
	dv.From, dv.To = int(ref.FirstFrame), int(ref.FirstFrame+rows)
	return c.frames.Frame(ctx, dv, ordinal, setting)
}

// episodeRows returns an episode's rows (with row ids and ordinals).
func (c *catalog) episodeRows(ctx context.Context, snap *table.Snapshot, e table.EpisodeEntry) ([]table.Row, error) {
	ctx = uninterrupted(ctx)
	// Rows are read with the snapshot's schema: a column added later
	// shows as null.
	key := fmt.Sprintf("%s#%d@%d", e.DataFile, e.RowGroup, snap.SchemaID)
	return cached(c, c.rows, key, "rows "+key, func() ([]table.Row, error) {
		return c.tbl.Rows(ctx, snap, e)
	})
}

// rowsFile returns the content of an episode's frames.jsonl or
// frames.parquet: of the rows at ordinals (a view's selection), or of
// every row when ordinals is nil.
func (c *catalog) rowsFile(ctx context.Context, snap *table.Snapshot, e table.EpisodeEntry, name string, ordinals []int64) ([]byte, error) {
	ctx = uninterrupted(ctx)
	key := fmt.Sprintf("%s#%d@%d/%s", e.DataFile, e.RowGroup, snap.SchemaID, name)
	if ordinals != nil {
		key += "/" + ordinalsKey(ordinals)
	}
	return cached(c, c.files, key, "file "+key, func() ([]byte, error) {
		switch name {
		case rowsJSONL:
			rows, err := c.episodeRows(ctx, snap, e)
			if err != nil {
				return nil, err
			}
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			write := func(r table.Row) error { return enc.Encode(r) }
			if ordinals == nil {
				for _, r := range rows {
					if err := write(r); err != nil {
						return nil, err
					}
				}
			}
			for _, i := range ordinals {
				if i < 0 || i >= int64(len(rows)) {
					return nil, fmt.Errorf("%w: episode %q has no row %d", table.ErrCorrupt, e.Episode, i)
				}
				if err := write(rows[i]); err != nil {
					return nil, err
				}
			}
			return b.Bytes(), nil
		case rowsParquet:
			return c.tbl.EpisodeParquetRows(ctx, snap, e, ordinals)
		}
		return nil, fmt.Errorf("%w: %s", table.ErrNotFound, name)
	})
}

// ordinalsKey names a set of rows in cache keys.
func ordinalsKey(ordinals []int64) string {
	h := fnv.New64a()
	var b [8]byte
	for _, o := range ordinals {
		binary.LittleEndian.PutUint64(b[:], uint64(o))
		h.Write(b[:])
	}
	return fmt.Sprintf("%d-%x", len(ordinals), h.Sum64())
}

// Names of the per-episode row files.
const (
	rowsJSONL   = "frames.jsonl"
	rowsParquet = "frames.parquet"
)
