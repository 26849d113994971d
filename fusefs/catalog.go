package fusefs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/table"
)

// FrameServer makes frame images; decoder.FrameSource implements it.
type FrameServer interface {
	Frame(ctx context.Context, v decoder.Video, ordinal int, setting decoder.ImageSetting) ([]byte, error)
	FrameSizes(ctx context.Context, v decoder.Video, setting decoder.ImageSetting) ([]int64, error)
}

// catalog answers the questions the filesystem asks about one table's
// episodes (rows, frame sizes, frame bytes) and caches the answers, which
// never change for a given episode version. It has no FUSE in it.
type catalog struct {
	tbl      *table.Table
	frames   FrameServer
	setting  decoder.ImageSetting
	identity string // setting.Identity(), asked on every frame lookup
	stats    *stats

	videos *lru.Cache[string, *table.Video] // open payloads, by payload
	sizes  *lru.Cache[string, []int64]      // by payload + identity
	rows   *lru.Cache[string, []table.Row]  // by data file + row group
	files  *lru.Cache[string, []byte]       // frames.jsonl / frames.parquet
	once   sync.Map                         // key -> *sync.Mutex, one computation per key
}

func newCatalog(tbl *table.Table, frames FrameServer, setting decoder.ImageSetting, st *stats) *catalog {
	// Payloads stay open: the decoder's read-ahead reads them after the
	// request that opened them returned. Evicted ones are closed; a
	// read-ahead still reading one fails quietly and the frame is decoded
	// on demand instead.
	videos, _ := lru.NewWithEvict[string, *table.Video](maxOpenVideos, func(_ string, v *table.Video) { v.Close() })
	sizes, _ := lru.New[string, []int64](4096)
	rows, _ := lru.New[string, []table.Row](64)
	files, _ := lru.New[string, []byte](64)
	return &catalog{tbl: tbl, frames: frames, setting: setting, identity: setting.Identity(), stats: st,
		videos: videos, sizes: sizes, rows: rows, files: files}
}

func payloadKey(ref table.VideoRef) string {
	return fmt.Sprintf("%s@%d+%d", ref.Pack, ref.Offset, ref.Length)
}

// lock serialises the computation of one cache key, so that concurrent
// misses do the work once.
func (c *catalog) lock(key string) func() {
	m, _ := c.once.LoadOrStore(key, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// maxOpenVideos bounds the payloads (pack objects) a table keeps open.
const maxOpenVideos = 128

// openVideo returns a stored video ready for the decoder. It stays open
// (and cached) after the call.
func (c *catalog) openVideo(ctx context.Context, ref table.VideoRef) (decoder.Video, error) {
	key := payloadKey(ref)
	v, ok := c.videos.Get(key)
	if !ok {
		unlock := c.lock("open " + key)
		if v, ok = c.videos.Get(key); !ok {
			var err error
			if v, err = c.tbl.OpenVideo(ctx, ref); err != nil {
				unlock()
				return decoder.Video{}, err
			}
			c.videos.Add(key, v)
		}
		unlock()
	}
	return decoder.Video{
		Key:   decoder.VideoKey{Object: ref.Pack, Offset: ref.Offset, Length: ref.Length},
		R:     v.Payload,
		Size:  ref.Length,
		Index: v.Index,
	}, nil
}

// close releases the open payloads.
func (c *catalog) close() { c.videos.Purge() }

// frameSizes returns the encoded size of every frame of a video for the
// served setting: stored at ingest when the identity matches, else worked
// out once by decoding the video and remembered.
func (c *catalog) frameSizes(ctx context.Context, ref table.VideoRef) ([]int64, error) {
	identity := c.identity
	key := payloadKey(ref) + "|" + identity
	if s, ok := c.sizes.Get(key); ok {
		return s, nil
	}
	defer c.lock(key)()
	if s, ok := c.sizes.Get(key); ok {
		return s, nil
	}
	sizes, ok, err := c.tbl.StoredSizes(ctx, ref, identity)
	if err != nil {
		return nil, err
	}
	if !ok {
		c.stats.sizeComputations.Add(1)
		dv, err := c.openVideo(ctx, ref)
		if err != nil {
			return nil, err
		}
		if sizes, err = c.frames.FrameSizes(ctx, dv, c.setting); err != nil {
			return nil, err
		}
	}
	c.sizes.Add(key, sizes)
	return sizes, nil
}

// frame returns the image of frame ordinal of a stored video.
func (c *catalog) frame(ctx context.Context, ref table.VideoRef, ordinal int) ([]byte, error) {
	dv, err := c.openVideo(ctx, ref)
	if err != nil {
		return nil, err
	}
	return c.frames.Frame(ctx, dv, ordinal, c.setting)
}

// episodeRows returns an episode's rows (with row ids and ordinals).
func (c *catalog) episodeRows(ctx context.Context, snap *table.Snapshot, e table.EpisodeEntry) ([]table.Row, error) {
	key := fmt.Sprintf("%s#%d", e.DataFile, e.RowGroup)
	if r, ok := c.rows.Get(key); ok {
		return r, nil
	}
	defer c.lock(key)()
	if r, ok := c.rows.Get(key); ok {
		return r, nil
	}
	rows, err := c.tbl.Rows(ctx, snap, e)
	if err != nil {
		return nil, err
	}
	c.rows.Add(key, rows)
	return rows, nil
}

// rowsFile returns the content of an episode's frames.jsonl or
// frames.parquet.
func (c *catalog) rowsFile(ctx context.Context, snap *table.Snapshot, e table.EpisodeEntry, name string) ([]byte, error) {
	key := fmt.Sprintf("%s#%d/%s", e.DataFile, e.RowGroup, name)
	if b, ok := c.files.Get(key); ok {
		return b, nil
	}
	defer c.lock(key)()
	if b, ok := c.files.Get(key); ok {
		return b, nil
	}
	var data []byte
	switch name {
	case rowsJSONL:
		rows, err := c.episodeRows(ctx, snap, e)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return nil, err
			}
		}
		data = []byte(b.String())
	case rowsParquet:
		var err error
		if data, err = c.tbl.EpisodeParquet(ctx, snap, e); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: %s", table.ErrNotFound, name)
	}
	c.files.Add(key, data)
	return data, nil
}

// Names of the per-episode row files.
const (
	rowsJSONL   = "frames.jsonl"
	rowsParquet = "frames.parquet"
)
