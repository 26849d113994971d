package mounttree

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sync/singleflight"

	"github.com/framefs/framefs/cache"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/videoidx"
)

// FrameServer makes frame images; serving.Server implements it. It is
// the mount's only way to FFmpeg: the tree itself builds without cgo.
type FrameServer interface {
	Frame(ctx context.Context, v media.Video, ordinal int, setting media.ImageSetting) ([]byte, error)
	// FrameSize returns the size of frame ordinal's image, making it (and
	// keeping it for the read that usually follows a stat) when it must.
	FrameSize(ctx context.Context, v media.Video, ordinal int, setting media.ImageSetting) (int64, error)
	// FrameSizes returns the size of every frame's image. The catalog asks
	// it only of settings whose sizes follow from the picture size
	// (media.PredictSize), where no frame is decoded.
	FrameSizes(ctx context.Context, v media.Video, setting media.ImageSetting) ([]int64, error)
	// Identity names everything the bytes of images made with setting
	// depend on; frame sizes stored in a table under an equal identity
	// are the sizes this server's images have.
	Identity(setting media.ImageSetting) string
}

// Catalog answers the questions the filesystem asks about one table:
// the trees of its snapshots and views, and its episodes' rows, frame
// sizes and frame bytes. It caches the answers, which never change for a
// given snapshot, view or episode version. Its work is not cancelled when
// the request that asked for it is interrupted (see uninterrupted).
type Catalog struct {
	// life is the mount's context: payloads stay open past the request
	// that opened them, so they are opened under it, and their reads stop
	// at unmount.
	life     context.Context
	tbl      *table.Table
	frames   FrameServer
	setting  media.ImageSetting
	identity string // frames.Identity(setting), asked on every frame lookup
	counters *Counters

	// The caches of per-episode metadata are bounded in bytes (see
	// docs/CACHES.md, "Metadata caches"); a value larger than its whole
	// budget is handed to its caller and not kept.
	videos *sizedLRU[string, *table.Video] // open payloads, by payload
	sizes  *sizedLRU[string, *frameSizes]  // by payload + identity
	rows   *sizedLRU[string, *episodeRows] // by data file + row group + schema
	// files holds rendered rows files other than an episode's whole
	// frames.jsonl (which is its rows' own encoding): frames.parquet and
	// the files of views, by file key.
	files *sizedLRU[string, []byte]
	// fileSizes remembers the size of every rows file and clip.json
	// rendered, by file key, so that stat needs no content after the
	// content was evicted.
	fileSizes *sizedLRU[string, int64]
	// trees holds the trees of snapshots, by snapshot id, and views the
	// trees of views, by view version and snapshot: each bounded in
	// bytes (their indexes; the records of episodes they share are
	// counted apart) and to MaxTrees trees.
	trees *sizedLRU[int64, *Tree]
	views *sizedLRU[string, *Tree]
	// treeDropped, if set, is told of every snapshot whose tree left
	// trees.
	treeDropped func(id int64)
	// records hands out the records of the episodes the trees show.
	records episodeRecords
	// listed keeps the episodes that folders of episodes found in each
	// manifest (listed.go).
	listed *sizedLRU[manifestPart, []*episode]
	// identities caches frames.Identity of the settings views use.
	identities sync.Map // media.ImageSetting -> string
	// flight runs one computation per cache key at a time; concurrent
	// misses wait for it and share its result.
	flight singleflight.Group
}

// MaxTrees bounds the snapshot trees a catalog keeps (about 200 bytes per
// episode each), so that a snapshot directory the kernel forgot and looks
// up again does not read its manifests again. The folders the kernel
// holds keep their tree too; the table node asks the kernel to drop the
// folder of a snapshot whose tree leaves the cache (tableNode.treeDropped).
const MaxTrees = 16

// Counters count what catalogs do, for the mount's .stats; catalogs may
// share them.
type Counters struct {
	// FramesSized counts frame images made to learn their size, which was
	// not stored at ingest and does not follow from the picture size.
	FramesSized atomic.Int64
	// RowsFilesMade counts rows files (frames.jsonl, frames.parquet) and
	// clip.json files made from rows.
	RowsFilesMade atomic.Int64
	// ManifestsListed counts the manifests read to list folders of
	// episodes; a folder of a new head reads those its parent's did not
	// (listed.go).
	ManifestsListed atomic.Int64
}

// CatalogOptions configure a Catalog.
type CatalogOptions struct {
	// Counters, if set, count the catalog's work.
	Counters *Counters
	// Budgets bound the metadata caches.
	Budgets Budgets
	// TreeDropped, if set, is told of every snapshot whose tree the
	// catalog stopped keeping (see MaxTrees). The catalog's lock may be
	// held: it must not call the catalog.
	TreeDropped func(id int64)
}

// NewCatalog returns the catalog of tbl, whose frames are made by frames
// with setting. life is the mount's context: payloads stay open past the
// request that opened them, and their reads stop when it ends.
func NewCatalog(life context.Context, tbl *table.Table, frames FrameServer, setting media.ImageSetting, opts CatalogOptions) *Catalog {
	// Payloads stay open: the decoder's read-ahead reads them after the
	// request that opened them returned. Evicted ones are closed; a
	// decoder still reading one (handed it just before, or reading ahead)
	// reads on through a handle of its own for each read (table.Video).
	b := opts.Budgets.withDefaults()
	videos := newSizedLRU(b.Videos, maxOpenVideos, videoBytes, func(_ string, v *table.Video) { v.Close() })
	videos.owned = true
	if opts.Counters == nil {
		opts.Counters = &Counters{}
	}
	c := &Catalog{life: life, tbl: tbl, frames: frames, setting: setting, identity: frames.Identity(setting), counters: opts.Counters, treeDropped: opts.TreeDropped,
		videos:    videos,
		sizes:     newSizedLRU[string, *frameSizes](b.FrameSizes, 0, func(s *frameSizes) int64 { return 8 * int64(len(s.sizes)) }, nil),
		rows:      newSizedLRU[string, *episodeRows](b.Rows, 0, (*episodeRows).bytes, nil),
		files:     newSizedLRU[string, []byte](b.RowsFiles, 0, func(b []byte) int64 { return int64(cap(b)) }, nil),
		fileSizes: newSizedLRU[string, int64](b.FileSizes, 0, func(int64) int64 { return 8 }, nil),
		views:     newSizedLRU[string, *Tree](b.Trees, MaxTrees, (*Tree).bytes, nil),
		listed:    newSizedLRU[manifestPart, []*episode](maxListedBytes, 0, listedBytes, nil)}
	// A snapshot's tree is charged its index as its folders are read
	// (see snapshotIndex.charge).
	c.trees = newSizedLRU(b.Trees, MaxTrees, (*Tree).bytes, func(id int64, _ *Tree) {
		if c.treeDropped != nil {
			c.treeDropped(id)
		}
	})
	return c
}

// Budgets are the byte budgets of a catalog's per-episode metadata
// caches (docs/CACHES.md lists them). Together they bound what the daemon
// keeps of the episodes it visited, whatever their number and length. A
// field left zero takes its default.
type Budgets struct {
	// Videos bounds the frame indexes of open payloads (about 40 bytes
	// a frame), besides their number (maxOpenVideos). Default 32 MiB.
	Videos int64
	// FrameSizes bounds the frame size tables (8 bytes a frame).
	// Default 32 MiB.
	FrameSizes int64
	// Rows bounds the episodes' rows (their frames.jsonl, about 200
	// bytes a frame, plus 8 bytes a frame of line ends). Default 32 MiB.
	Rows int64
	// RowsFiles bounds frames.parquet files and views' rows files.
	// Default 16 MiB.
	RowsFiles int64
	// FileSizes bounds the remembered sizes of rows files and clip.json
	// (about 250 bytes each with their keys). Default 1 MiB.
	FileSizes int64
	// Trees bounds the trees of snapshots and, apart, of views: their
	// indexes, 8 bytes an episode in a snapshot's (more in a view's, with
	// the rows it shows), besides their number (MaxTrees). Default 16 MiB.
	Trees int64
}

func (b Budgets) withDefaults() Budgets {
	for _, f := range []struct {
		v   *int64
		def int64
	}{{&b.Videos, 32 << 20}, {&b.FrameSizes, 32 << 20}, {&b.Rows, 32 << 20}, {&b.RowsFiles, 16 << 20}, {&b.FileSizes, 1 << 20}, {&b.Trees, 16 << 20}} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	return b
}

// videoBytes estimates the memory of an open payload: its frame index
// (samples in decode order plus the presentation order and keyframe
// lists) and the open object.
func videoBytes(v *table.Video) int64 {
	const perFrame = int64(unsafe.Sizeof(videoidx.Sample{})) + 8
	const perObject = 4 << 10
	if v.Index == nil {
		return perObject
	}
	return perObject + perFrame*int64(len(v.Index.Samples))
}

// sizedLRU is a byte-bounded cache whose values know their size.
type sizedLRU[K comparable, V any] struct {
	*cache.Sized[K, V]
	size func(V) int64
	// owned says the cache owns its values once computed (they are
	// closed when removed), so that even one larger than the budget is
	// kept, alone, rather than never closed.
	owned bool
}

func newSizedLRU[K comparable, V any](maxBytes int64, maxEntries int, size func(V) int64, onRemove func(K, V)) *sizedLRU[K, V] {
	return &sizedLRU[K, V]{Sized: cache.NewSized(maxBytes, maxEntries, onRemove), size: size}
}

// keep adds v under k, charging it its size.
func (c *sizedLRU[K, V]) keep(k K, v V) {
	size := c.size(v) + int64(keyBytes(k))
	if c.owned {
		c.AddOwned(k, v, size)
		return
	}
	c.Add(k, v, size)
}

// keyBytes is the memory of a cache key beyond its header.
func keyBytes[K comparable](k K) int {
	if s, ok := any(k).(string); ok {
		return len(s)
	}
	return 0
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
func cached[K comparable, V any](c *Catalog, lru *sizedLRU[K, V], key K, flightKey string, compute func() (V, error)) (V, error) {
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
		lru.keep(key, v)
		return v, nil
	})
	if err != nil {
		var zero V
		return zero, err
	}
	return r.(V), nil
}

// SnapshotTree returns the tree of a snapshot. Its folders are read from
// the snapshot's manifests when they are first listed or looked up.
func (c *Catalog) SnapshotTree(ctx context.Context, snap *table.Snapshot) (*Tree, error) {
	ctx = uninterrupted(ctx)
	return cached(c, c.trees, snap.ID, fmt.Sprintf("tree %d", snap.ID), func() (*Tree, error) {
		schema, err := c.tbl.Schema(ctx, snap.SchemaID)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", snap.ID, err)
		}
		x := &snapshotIndex{cat: c, snap: snap, schema: schema}
		tree := newTree(c, snap, schema, nil, x)
		x.charge = func() { c.trees.Recharge(snap.ID, tree.bytes()) }
		return tree, nil
	})
}

// CacheBytes is what the catalog's caches hold, by the sizes they are
// charged (docs/CACHES.md, "Metadata caches"), the table's caches of
// decoded metadata included.
func (c *Catalog) CacheBytes() int64 {
	n := c.tbl.CacheBytes()
	for _, b := range []interface{ Bytes() int64 }{c.videos, c.sizes, c.rows, c.files, c.fileSizes, c.trees, c.views, c.listed} {
		n += b.Bytes()
	}
	return n
}

// KeepsTree reports whether the catalog keeps snapshot id's tree.
func (c *Catalog) KeepsTree(id int64) bool {
	_, ok := c.trees.Get(id)
	return ok
}

// maxOpenVideos bounds the payloads (pack objects) a table keeps open.
const maxOpenVideos = 128

// openVideo returns a stored video ready for the decoder. It stays open
// (and cached) after the call.
func (c *Catalog) openVideo(ctx context.Context, ref table.VideoRef) (media.Video, error) {
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

// Close releases the open payloads.
func (c *Catalog) Close() { c.videos.Purge() }

// frameSizes is what a catalog knows of the image sizes of one video's
// frames made with one setting: every size, when they were stored at
// ingest or follow from the picture size; else those of the frames made
// so far, learnt one frame at a time.
type frameSizes struct {
	sizes []atomic.Int64 // by ordinal; 0 while not known (no image is empty)
}

// sizeTable returns the frame sizes known of a video for setting, whose
// identity is given: stored at ingest when the identity matches, worked out
// from the picture size for formats whose size depends on nothing else,
// else none yet.
func (c *Catalog) sizeTable(ctx context.Context, ref table.VideoRef, setting media.ImageSetting, identity string) (*frameSizes, error) {
	ctx = uninterrupted(ctx)
	key := payloadKey(ref) + "|" + identity
	return cached(c, c.sizes, key, "sizes "+key, func() (*frameSizes, error) {
		known, ok, err := c.tbl.StoredSizes(ctx, ref, identity)
		if err != nil {
			return nil, err
		}
		if !ok {
			dv, err := c.openVideo(ctx, ref)
			if err != nil {
				return nil, err
			}
			if _, fixed := media.PredictSize(setting, 1, 1); fixed {
				if known, err = c.frames.FrameSizes(ctx, dv, setting); err != nil {
					return nil, err
				}
			} else {
				// A JPEG's or PNG's size is known only once it is made:
				// a stat makes that frame alone (and keeps it for its
				// read), never the whole video, so a loader that stats
				// frames in a shuffled order decodes each once.
				return &frameSizes{sizes: make([]atomic.Int64, dv.Index.Frames())}, nil
			}
		}
		t := &frameSizes{sizes: make([]atomic.Int64, len(known))}
		for i, n := range known {
			t.sizes[i].Store(n)
		}
		return t, nil
	})
}

// shownRows is the part of an episode of rows frames a frame is shown
// with: a view's selected rows (ascending), or nil for all of them.
type shownRows struct {
	rows     int64
	selected []int64
}

// frameVideo returns a stored video ready for the decoder, bounded to the
// frames of an episode, from ref.FirstFrame on, that are shown: fills and
// read-ahead decode and keep only those.
func (c *Catalog) frameVideo(ctx context.Context, ref table.VideoRef, shown shownRows) (media.Video, error) {
	dv, err := c.openVideo(ctx, ref)
	if err != nil {
		return media.Video{}, err
	}
	dv.From, dv.To = int(ref.FirstFrame), int(ref.FirstFrame+shown.rows)
	dv.Shown = shown.selected
	return dv, nil
}

// frameSize returns the size of frame ordinal's image with setting (whose
// identity is given), of a stored video shown as part of an episode. When
// the size is not known, canMake says whether to make the image to learn
// it; if not, ok is false.
func (c *Catalog) frameSize(ctx context.Context, ref table.VideoRef, shown shownRows, ordinal int, setting media.ImageSetting, identity string, canMake bool) (size int64, ok bool, err error) {
	t, err := c.sizeTable(ctx, ref, setting, identity)
	if err != nil {
		return 0, false, err
	}
	if ordinal < 0 || ordinal >= len(t.sizes) {
		return 0, false, fmt.Errorf("%w: frame %d of a %d-frame video", table.ErrCorrupt, ordinal, len(t.sizes))
	}
	if size = t.sizes[ordinal].Load(); size > 0 || !canMake {
		return size, size > 0, nil
	}
	ctx = uninterrupted(ctx)
	dv, err := c.frameVideo(ctx, ref, shown)
	if err != nil {
		return 0, false, err
	}
	c.counters.FramesSized.Add(1)
	if size, err = c.frames.FrameSize(ctx, dv, ordinal, setting); err != nil {
		return 0, false, err
	}
	t.sizes[ordinal].Store(size)
	return size, true, nil
}

// identityOf returns frames.Identity(setting), remembered per setting.
func (c *Catalog) identityOf(setting media.ImageSetting) string {
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

// frameFor returns the image of frame ordinal of a stored video shown as
// part of an episode, with an image setting (the served one or a view's).
func (c *Catalog) frameFor(ctx context.Context, ref table.VideoRef, shown shownRows, ordinal int, setting media.ImageSetting) ([]byte, error) {
	ctx = uninterrupted(ctx)
	dv, err := c.frameVideo(ctx, ref, shown)
	if err != nil {
		return nil, err
	}
	return c.frames.Frame(ctx, dv, ordinal, setting)
}

// episodeKey names an episode version read with a snapshot's schema in
// cache keys.
func episodeKey(snap *table.Snapshot, e *episode) string {
	return fmt.Sprintf("%s#%d@%d", e.dataFile, e.rowGroup, snap.SchemaID)
}

// episodeRows returns an episode's rows (with row ids and ordinals).
func (c *Catalog) episodeRows(ctx context.Context, snap *table.Snapshot, e *episode) (*episodeRows, error) {
	ctx = uninterrupted(ctx)
	key := episodeKey(snap, e)
	return cached(c, c.rows, key, "rows "+key, func() (*episodeRows, error) {
		return c.readRows(ctx, snap, e)
	})
}

// readRows reads an episode's rows, without keeping them.
func (c *Catalog) readRows(ctx context.Context, snap *table.Snapshot, e *episode) (*episodeRows, error) {
	// Rows are read with the snapshot's schema: a column added later
	// shows as null.
	rows, err := c.tbl.Rows(ctx, snap, e.entry())
	if err != nil {
		return nil, err
	}
	r, err := newEpisodeRows(rows)
	if err != nil {
		return nil, fmt.Errorf("episode %q: %w", e.name, err)
	}
	c.fileSizes.keep(rowsFileKey(snap, e, RowsJSONL, nil), int64(len(r.jsonl)))
	return r, nil
}

// rowsFileKey names an episode's frames.jsonl or frames.parquet in cache
// keys: of the rows at ordinals (a view's selection), or of every row when
// ordinals is nil.
func rowsFileKey(snap *table.Snapshot, e *episode, name string, ordinals []int64) string {
	key := episodeKey(snap, e) + "/" + name
	if ordinals != nil {
		key += "/" + ordinalsKey(ordinals)
	}
	return key
}

// rowsFile returns the content of an episode's frames.jsonl or
// frames.parquet: of the rows at ordinals (a view's selection), or of
// every row when ordinals is nil.
func (c *Catalog) rowsFile(ctx context.Context, snap *table.Snapshot, e *episode, name string, ordinals []int64) ([]byte, error) {
	ctx = uninterrupted(ctx)
	rows := func() (*episodeRows, error) { return c.episodeRows(ctx, snap, e) }
	if name == RowsJSONL && ordinals == nil {
		// The rows' own encoding, kept once, with the rows.
		return c.renderRowsFile(ctx, snap, e, name, nil, rows)
	}
	key := rowsFileKey(snap, e, name, ordinals)
	return cached(c, c.files, key, "file "+key, func() ([]byte, error) {
		return c.renderRowsFile(ctx, snap, e, name, ordinals, rows)
	})
}

// renderRowsFile makes rowsFile's file, taking the episode's rows from
// rows, and remembers its size.
func (c *Catalog) renderRowsFile(ctx context.Context, snap *table.Snapshot, e *episode, name string, ordinals []int64,
	rows func() (*episodeRows, error)) ([]byte, error) {
	var data []byte
	switch name {
	case RowsJSONL:
		r, err := rows()
		if err != nil {
			return nil, err
		}
		data = r.jsonl
		if ordinals != nil {
			if data, err = r.jsonlOf(e.name, ordinals); err != nil {
				return nil, err
			}
		}
	case RowsParquet:
		var err error
		if data, err = c.tbl.EpisodeParquetRows(ctx, snap, e.entry(), ordinals); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: %s", table.ErrNotFound, name)
	}
	c.counters.RowsFilesMade.Add(1)
	c.fileSizes.keep(rowsFileKey(snap, e, name, ordinals), int64(len(data)))
	return data, nil
}

// rowsFileSize returns the size of rowsFile's file, remembered apart from
// its content: a stat after the content was evicted renders nothing. A
// stat of a frames.jsonl not rendered yet renders it for its size and
// keeps only the size (from the episode's rows if they are kept, else
// reading them without keeping them): listing episodes with ls -l does not
// fill the caches with rows nobody reads. A frames.parquet is kept within
// its budget like a read one, since the read that usually follows a stat
// (cp, rsync, tar) would otherwise read and encode the rows again.
func (c *Catalog) rowsFileSize(ctx context.Context, snap *table.Snapshot, e *episode, name string, ordinals []int64) (int64, error) {
	ctx = uninterrupted(ctx)
	key := rowsFileKey(snap, e, name, ordinals)
	if size, ok := c.fileSizes.Get(key); ok {
		return size, nil
	}
	size, err, _ := c.flight.Do("size "+key, func() (any, error) {
		if size, ok := c.fileSizes.Get(key); ok {
			return size, nil
		}
		if name == RowsParquet {
			data, err := c.rowsFile(ctx, snap, e, name, ordinals)
			return int64(len(data)), err
		}
		data, err := c.renderRowsFile(ctx, snap, e, name, ordinals, func() (*episodeRows, error) {
			if r, ok := c.rows.Get(episodeKey(snap, e)); ok {
				return r, nil
			}
			return c.readRows(ctx, snap, e)
		})
		return int64(len(data)), err
	})
	if err != nil {
		return 0, err
	}
	return size.(int64), nil
}

// clipJSONKey names a clip's clip.json in cache keys.
func clipJSONKey(snap *table.Snapshot, e *episode, clip *clipWindow) string {
	return fmt.Sprintf("%s/%s/%d/%s", episodeKey(snap, e), ClipJSON, clip.start, ordinalsKey(clip.frames))
}

// clipJSON renders a clip's clip.json from its episode's (cached) rows.
// It is not kept (a clip view has a clip.json per window, each cheap to
// render); its size is.
func (c *Catalog) clipJSON(ctx context.Context, snap *table.Snapshot, e *episode, clip *clipWindow) ([]byte, error) {
	rows, err := c.episodeRows(ctx, snap, e)
	if err != nil {
		return nil, err
	}
	doc := struct {
		Episode      string            `json:"episode"`
		Start        int64             `json:"start"`
		FrameIndices []int64           `json:"frame_indices"`
		Rows         []json.RawMessage `json:"rows"`
	}{Episode: e.name, Start: clip.start, FrameIndices: clip.frames}
	for _, f := range clip.frames {
		if err := rows.check(e.name, f); err != nil {
			return nil, err
		}
		doc.Rows = append(doc.Rows, rows.unescapedRow(f))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	c.counters.RowsFilesMade.Add(1)
	c.fileSizes.keep(clipJSONKey(snap, e, clip), int64(b.Len()))
	return b.Bytes(), nil
}

// clipJSONSize is the size of clipJSON's file, remembered.
func (c *Catalog) clipJSONSize(ctx context.Context, snap *table.Snapshot, e *episode, clip *clipWindow) (int64, error) {
	if size, ok := c.fileSizes.Get(clipJSONKey(snap, e, clip)); ok {
		return size, nil
	}
	data, err := c.clipJSON(ctx, snap, e, clip)
	return int64(len(data)), err
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
	RowsJSONL   = "frames.jsonl"
	RowsParquet = "frames.parquet"
)
