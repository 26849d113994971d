package serving

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/framefs/framefs/cache"
	"github.com/framefs/framefs/internal/scratch"
	"github.com/framefs/framefs/media"
)

// Options configure a Server. The zero value gives the defaults.
type Options struct {
	// CacheBytes bounds the encoded images kept in memory (values plus
	// cache.EntryOverhead each). 0 means 256 MiB; negative keeps nothing
	// (concurrent requests for one image are still decoded once).
	CacheBytes int64
	// PictureCacheBytes bounds the decoded pictures kept for random
	// readers (see pictureCache): about 0.5 MB each at 640x480 and 3 MB at
	// 1080p. 0 means 256 MiB; negative keeps none.
	PictureCacheBytes int64
	// MaxOpenSessions bounds the decoder sessions open at once over all
	// videos, busy and idle; it is what bounds the decoders' memory. A
	// session holds the demuxer, the decoder's reference pictures (up to
	// ~16 decoded frames for H.264/HEVC, so ~8 MB at 640x480 and ~50 MB at
	// 1080p), filter graphs and encoders. When the limit is reached, the
	// least recently used idle session is closed to open a new one; with
	// none idle, requests wait. 0 means 2 x GOMAXPROCS, at least 4.
	MaxOpenSessions int
	// MaxSessionsPerVideo bounds the sessions of one video (one stream of
	// one VideoKey). Concurrent readers of the same video get a session
	// each up to this limit and wait beyond it. 0 means GOMAXPROCS, at
	// least 2.
	MaxSessionsPerVideo int
	// DecoderThreads is the number of threads of each decoder (frame
	// threading). Sessions are the unit of parallelism, so the default is
	// 1: more threads only help a single reader on an otherwise idle
	// machine, and frame threading delays every output frame.
	DecoderThreads int
	// SeekThreads is the number of threads that decode a random request
	// (one that seeks and keeps no position) made while no other request
	// is using a session, so the cores are otherwise idle. 0 means twice
	// GOMAXPROCS, at most 8; 1 never uses more than DecoderThreads.
	SeekThreads int
	// Readahead is how many frames are decoded ahead of a reader that
	// walks a video in order (three consecutive frames), so that it finds
	// them cached. 0 means 16; negative disables read-ahead.
	Readahead int
	// MaxReadaheads bounds the read-ahead jobs running at once; each holds
	// a decoder session while it runs. Read-ahead is skipped, never
	// waited for, when they are all busy. 0 means GOMAXPROCS.
	MaxReadaheads int
	// SizeWorkers is how many sessions FrameSizes decodes a video with in
	// parallel (never more than MaxSessionsPerVideo). 0 means GOMAXPROCS.
	SizeWorkers int
	// NoFill turns GOP fills off (see fill.go): every request that must
	// seek decodes its own frame only.
	NoFill bool
	// MaxFills bounds the GOP fills running at once, each with a decoder
	// session; more wait for a free one. 0 means GOMAXPROCS.
	MaxFills int
	// DemoteServed says that the caller keeps the images it is served (a
	// mount hands them to the kernel's page cache), so an image a Frame
	// call has returned is evicted before any image still to be asked for,
	// such as a fill's: served images only use room nothing else needs.
	// They are there when the caller loses its copy (a kernel reclaiming
	// cold pages proactively drops a frame read a minute ago).
	DemoteServed bool
	// Store, if set, is a second tier of encoded images, on local disk:
	// every image made is written to it, and a request that misses the
	// memory cache looks there before decoding. Only videos with a Digest
	// use it, once the server has read the video and found that digest
	// (see digests.go): one read of each video per server.
	Store ImageStore
	// Spill, if set and Store is not, is a disk tier that gets only the
	// images a fill or FrameSizes made that the memory cache evicts before
	// they are asked for (see spill.go); a request that misses the memory
	// cache looks there before decoding. Videos use it as they use Store.
	Spill ImageStore

	// encodeWorkers is how many goroutines convert and encode the frames
	// of one read-ahead job: GOMAXPROCS, since converting and encoding a
	// frame takes as long as decoding it or longer.
	encodeWorkers int
}

const (
	defaultCacheBytes = 256 << 20
	defaultReadahead  = 16
	// readaheadKeys bounds the videos whose readers are followed.
	readaheadKeys = 1024
	// encodeQueue is how many converted frames a read-ahead job queues for
	// its encoders.
	encodeQueue = 2
	// readaheadLinger is how long a read-ahead job that ran out of frames
	// waits for its reader to ask for more before it ends.
	readaheadLinger = 200 * time.Millisecond
)

func (o Options) withDefaults() Options {
	procs := runtime.GOMAXPROCS(0)
	switch {
	case o.CacheBytes == 0:
		o.CacheBytes = defaultCacheBytes
	case o.CacheBytes < 0:
		o.CacheBytes = 0
	}
	switch {
	case o.Readahead == 0:
		o.Readahead = defaultReadahead
	case o.Readahead < 0:
		o.Readahead = 0
	}
	if o.MaxReadaheads <= 0 {
		o.MaxReadaheads = procs
	}
	if o.SizeWorkers <= 0 {
		o.SizeWorkers = procs
	}
	if o.MaxFills <= 0 {
		o.MaxFills = procs
	}
	o.encodeWorkers = procs
	return o
}

// frameKey identifies one encoded image, or a compact form of a frame
// that a fill keeps for the requests to come (see form).
type frameKey struct {
	video   media.VideoKey
	stream  int
	ordinal int
	setting media.ImageSetting
	form    form
}

// form is what the cache holds under a frameKey.
type form uint8

const (
	// formImage is the image file of setting, as served.
	formImage form = iota
	// formPicture is the frame's packed picture (media.Codec.Pack), which
	// renders any setting; setting is zero then.
	formPicture
	// formCompressed is the image of setting compressed with S2 (see
	// compress.go): what fills keep of raw images smaller than the
	// frame's packed picture, such as a scaled-down BMP view's.
	formCompressed
)

// at returns the key of frame ordinal of the same video and form.
func (k frameKey) at(ordinal int) frameKey {
	k.ordinal = ordinal
	return k
}

// packedKey returns the key of the frame's packed picture.
func (k frameKey) packedKey() frameKey {
	return frameKey{video: k.video, stream: k.stream, ordinal: k.ordinal, form: formPicture}
}

// imageKey returns the key of the frame's image of setting (k may be the
// key of a compact form).
func (k frameKey) imageKey(setting media.ImageSetting) frameKey {
	return frameKey{video: k.video, stream: k.stream, ordinal: k.ordinal, setting: setting}
}

// compressedKey returns the key of the compressed image of k's setting.
func (k frameKey) compressedKey() frameKey {
	k.form = formCompressed
	return k
}

// as returns the key of the frame's image in form f.
func (k frameKey) as(f form) frameKey {
	if f == formPicture {
		return k.packedKey()
	}
	k.form = f
	return k
}

// readerKey identifies what a sequential reader walks.
type readerKey struct {
	video   media.VideoKey
	stream  int
	setting media.ImageSetting
}

// ImageStore keeps encoded images outside the process's memory, typically
// on a local disk (package cache/diskcache), under string keys that name
// everything that makes the bytes. Get must return only what was Put under
// the key, verified; a store may forget anything at any time.
type ImageStore interface {
	Get(key string) ([]byte, bool)
	Contains(key string) bool
	Put(key string, image []byte)
}

// Server serves frames as encoded images through a pool of decoder
// sessions of a media.Codec and a byte-bounded cache, and reads ahead of
// sequential readers. A request that must seek fills its GOP (see fill.go): the
// frames around it are decoded once, in order, and kept encoded for the
// requests to come. It is safe for concurrent use.
//
// Memory is bounded under any access pattern by
//
//	CacheBytes                                  (encoded images)
//	+ PictureCacheBytes                         (decoded pictures)
//	+ MaxOpenSessions x per-session memory      (decoders, see Options)
//	+ one encoded image per request in progress
//	+ MaxReadaheads x ((2 + GOMAXPROCS) decoded frames + GOMAXPROCS
//	  converted ones): read-ahead jobs queue decoded frames for their
//	  encoders, each of which converts one at a time
//	+ with Spill, evicted images waiting to be written (an eighth of
//	  CacheBytes, at least 4 MiB and at most 32 MiB; see spill.go).
//
// Read-ahead jobs use the Video of the request that triggered them after
// that request returned: its R must stay readable for as long as the
// Server is open (a storage-level reader, not a per-request handle).
type Server struct {
	pool  *pool
	opts  Options
	cache *cache.Cache[frameKey]
	ra    *cache.Readahead[readerKey]

	jobs      chan struct{} // semaphore of read-ahead jobs
	fillSlots chan struct{} // semaphore of running GOP fills
	fills     *fillPolicy
	ctx       context.Context // cancelled by Close; read-ahead jobs run under it
	cancel    context.CancelFunc
	closed    atomic.Bool

	// mu guards active and the jobs in it, and orders starting a
	// read-ahead job (wg.Add) before Close's wg.Wait. Lock order: mu, then
	// the cache's lock (promises are made under mu).
	mu     sync.Mutex
	active map[readerKey][]*raJob
	wg     sync.WaitGroup

	// umu guards unserved, the frames fills encoded that no request has
	// been served yet. It is a leaf lock: the cache's eviction hook takes
	// it, so nothing is called while it is held.
	umu sync.Mutex
	// unserved maps each of those frames to where it is spilled if
	// evicted unserved.
	unserved map[frameKey]spillTo

	// store is the disk tier, Options.Store or Options.Spill; spill is
	// set when it is Options.Spill.
	store ImageStore
	spill *spiller

	identities sync.Map // media.ImageSetting -> codec identity; see Server.Identity
	storeHits  atomic.Int64
	digests    *digestChecks
}

// New returns a Server decoding with codec.
func New(codec media.Codec, opts Options) *Server {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	fs := &Server{
		pool:      newPool(codec, opts.pool()),
		opts:      opts,
		cache:     cache.New[frameKey](opts.CacheBytes),
		ra:        cache.NewReadahead[readerKey](opts.Readahead, readaheadKeys),
		jobs:      make(chan struct{}, opts.MaxReadaheads),
		fillSlots: make(chan struct{}, opts.MaxFills),
		fills:     newFillPolicy(),
		active:    map[readerKey][]*raJob{},
		unserved:  map[frameKey]spillTo{},
		digests:   newDigestChecks(),
		ctx:       ctx,
		cancel:    cancel,
	}
	fs.cache.OnEvict(fs.evicted)
	switch {
	case opts.Store != nil:
		fs.store = opts.Store
	case opts.Spill != nil:
		fs.store = opts.Spill
		fs.spill = newSpiller(opts.Spill, opts.CacheBytes)
		fs.wg.Add(1)
		go func() {
			defer fs.wg.Done()
			fs.spill.run(ctx.Done())
		}()
	}
	return fs
}

// CacheStats returns the image cache's counters.
func (fs *Server) CacheStats() cache.Stats { return fs.cache.Stats() }

// SetImageCacheBytes bounds the image cache at n bytes, never above
// Options.CacheBytes: a mount short of memory for what it cannot drop
// (nodes the kernel holds, decoders at work) makes its cache give way,
// and gives it its room back later. It returns the bound set. Fills are
// sized for the bound in force.
func (fs *Server) SetImageCacheBytes(n int64) int64 {
	n = min(max(n, 0), fs.opts.CacheBytes)
	fs.cache.SetMaxBytes(n)
	return n
}

// ImageCacheBytes returns the image cache's bound in force and the one it
// was configured with.
func (fs *Server) ImageCacheBytes() (bound, configured int64) {
	return fs.cache.MaxBytes(), fs.opts.CacheBytes
}

// PoolStats returns the counters of the decoder sessions and the picture
// cache.
func (fs *Server) PoolStats() PoolStats { return fs.pool.Stats() }

// FillStats returns the counters of GOP fills.
func (fs *Server) FillStats() FillStats {
	st := fs.fills.snapshot()
	if fs.spill != nil {
		st.Spilled, st.SpillDropped = fs.spill.written.Load(), fs.spill.dropped.Load()
		st.SpillQueueBytes = fs.spill.queued.Load()
	}
	return st
}

// StoreHits returns the number of requests served from the ImageStore.
func (fs *Server) StoreHits() int64 { return fs.storeHits.Load() }

// DigestChecks returns the bytes of videos read to check their digests
// before the store was used for them, and the videos whose bytes did not
// have the digest they claim.
func (fs *Server) DigestChecks() (hashed, failed int64) { return fs.digests.stats() }

// Frame returns frame ordinal (presentation order) of v encoded with
// setting, from the cache or by decoding it. The returned slice is shared
// and must not be modified. Errors wrapping media.ErrFrameDecode concern
// this frame only; media.ErrFrameRange means there is no such frame.
func (fs *Server) Frame(ctx context.Context, v media.Video, ordinal int, setting media.ImageSetting) ([]byte, error) {
	b, key, err := fs.image(ctx, v, ordinal, setting)
	if err != nil {
		return nil, err
	}
	fs.served(key)
	fs.fills.servedBytes(key.setting, len(b))
	if _, raw := media.PredictSize(key.setting, 1, 1); raw && fs.opts.DemoteServed {
		// The caller keeps the image (in the kernel's page cache); should it
		// lose it, the frame's compressed image or packed picture, a
		// fraction of a raw image's size, makes it again without decoding.
		// Keeping the raw image too would push them out of the cache.
		for _, compact := range []frameKey{key.compressedKey(), key.packedKey()} {
			if fs.cache.Contains(compact) {
				fs.cache.Remove(key)
				fs.cache.Demote(compact)
				break
			}
		}
	}
	return b, nil
}

// FrameSize returns the size of frame ordinal's image with setting, as a
// file system's stat must before the image is read. The image is made as
// Frame makes it (from the cache, a packed picture, a fill of its GOP or
// alone) and stays in the cache, not yet served, for the read that follows
// the stat: a loader that stats each file before reading it, in a shuffled
// order, decodes each frame once. A stat of every frame in order reads
// ahead, like a sequential reader.
func (fs *Server) FrameSize(ctx context.Context, v media.Video, ordinal int, setting media.ImageSetting) (int64, error) {
	b, _, err := fs.image(ctx, v, ordinal, setting)
	return int64(len(b)), err
}

// image makes (or finds) frame ordinal's image, and reads ahead of a
// reader that walks the video in order.
func (fs *Server) image(ctx context.Context, v media.Video, ordinal int, setting media.ImageSetting) ([]byte, frameKey, error) {
	if fs.closed.Load() {
		return nil, frameKey{}, ErrClosed
	}
	if err := setting.Validate(); err != nil {
		return nil, frameKey{}, err
	}
	if err := checkVideo(v); err != nil {
		return nil, frameKey{}, err
	}
	if ordinal < 0 || ordinal >= v.Index.Frames() {
		return nil, frameKey{}, fmt.Errorf("%w: frame %d of %s (the video has %d frames)", media.ErrFrameRange, ordinal, v.Key, v.Index.Frames())
	}
	setting = setting.Normalize()
	key := frameKey{video: v.Key, stream: v.Index.Stream, ordinal: ordinal, setting: setting}
	b, ok := fs.cache.Get(key)
	if !ok {
		var err error
		if b, err = fs.load(ctx, v, key); err != nil {
			return nil, key, err
		}
	}
	if from, to := fs.ra.Observe(readerKey{v.Key, v.Index.Stream, setting}, ordinal); from < to {
		_, end := v.Span()
		fs.readahead(v, setting, from, min(to, end))
	}
	return b, key, nil
}

// load makes the image of key, which the cache does not hold: from a load
// in flight, from the store, from the frame's compressed image or packed
// picture (kept or being made by a fill), by a fill of its GOP, or by
// decoding it alone.
func (fs *Server) load(ctx context.Context, v media.Video, key frameKey) ([]byte, error) {
	if !fs.cache.Contains(key) {
		if fs.opts.Store != nil {
			// A spill store does not wait: see evicted.
			fs.digests.verify(ctx, fs.ctx, v)
		}
		if b, ok := fs.fromStore(v, key); ok {
			return b, nil
		}
		if !fs.hasCompact(key) {
			fs.fill(v, key)
		}
	}
	return fs.cache.Load(ctx, key, func(ctx context.Context) ([]byte, error) {
		b, ok, err := fs.fromCompressed(ctx, key)
		if !ok && err == nil {
			b, ok, err = fs.fromPacked(ctx, v, key)
		}
		if !ok && err == nil {
			b, err = fs.pool.frame(ctx, v, key.ordinal, key.setting)
		}
		if err == nil {
			fs.toStore(v, key, b)
		}
		return b, err
	})
}

// hasCompact reports whether the cache holds (or a fill is making) the
// frame of key in a form its image is made from without decoding.
func (fs *Server) hasCompact(key frameKey) bool {
	return fs.cache.Contains(key.packedKey()) || fs.cache.Contains(key.compressedKey())
}

// fromCompressed returns key's image from its compressed form, waiting for
// a fill that is making it; ok is false when there is none (or it does not
// decompress).
func (fs *Server) fromCompressed(ctx context.Context, key frameKey) (b []byte, ok bool, err error) {
	ck := key.compressedKey()
	c, ok, err := fs.cache.Wait(ctx, ck)
	if !ok || err != nil {
		return nil, false, err
	}
	if b, err = decompressImage(c); err != nil {
		// Never expected of bytes this process compressed; decode instead.
		fs.cache.Remove(ck)
		return nil, false, nil
	}
	fs.fills.decompressed()
	fs.served(ck)
	return b, true, nil
}

// fromPacked renders key's image from the frame's packed picture, waiting
// for a fill that is making it; ok is false when there is none (or it
// cannot be unpacked), and the caller decodes the frame.
func (fs *Server) fromPacked(ctx context.Context, v media.Video, key frameKey) (b []byte, ok bool, err error) {
	pk := key.packedKey()
	packed, ok, err := fs.cache.Wait(ctx, pk)
	if !ok || err != nil {
		return nil, false, err
	}
	b, err = fs.renderPacked(packed, v, key)
	if errors.Is(err, errUnpack) {
		// Never expected of bytes this process packed; decode instead.
		fs.cache.Remove(pk)
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	fs.served(pk)
	return b, true, nil
}

// errUnpack is renderPacked's error for bytes that are no packed picture.
var errUnpack = errors.New("serving: not a packed picture")

// renderPacked renders the image of key from the frame's packed picture.
func (fs *Server) renderPacked(packed []byte, v media.Video, key frameKey) ([]byte, error) {
	pic, err := fs.pool.codec.Unpack(packed)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUnpack, err)
	}
	defer pic.Release()
	b, err := fs.pool.renderers.render(pic, v, key.ordinal, key.setting)
	if err == nil {
		fs.fills.unpacked()
	}
	return b, err
}

// served notes that key's image (or packed picture) was handed to a
// caller: a filled frame proved useful, and with DemoteServed the cache
// keeps it only in room that frames still to be asked for do not need.
func (fs *Server) served(key frameKey) {
	fs.umu.Lock()
	to, filled := fs.unserved[key]
	delete(fs.unserved, key)
	fs.umu.Unlock()
	if filled {
		fs.fills.served()
		if to.v != nil {
			fs.checkForSpill(to.v)
		}
	}
	if fs.opts.DemoteServed {
		fs.cache.Demote(key)
	}
}

// evicted is the cache's eviction hook (called under its lock): a filled
// frame evicted before anyone asked for it was wasted, unless the store
// keeps it or it is spilled.
func (fs *Server) evicted(key frameKey, image []byte) {
	fs.umu.Lock()
	to, filled := fs.unserved[key]
	delete(fs.unserved, key)
	fs.umu.Unlock()
	if !filled || fs.opts.Store != nil {
		return
	}
	if to.v != nil {
		// The spill store is used for a video once its digest is checked
		// (see checkForSpill).
		im := key.imageKey(to.setting)
		if sk := fs.storeKey(*to.v, im); sk != "" && fs.spill.add(sk, image, fs.imageOf(to.v, im, key.form)) {
			fs.fills.spilled()
			return
		}
	}
	fs.fills.evicted()
}

// checkForSpill has the digest of v (what spillVideo keeps of it) checked
// in the background, unless it was checked or is being checked: spilling
// its frames needs it. The check reads the whole video, so it is asked for
// only once a reader fills a second GOP of v or is served a frame a fill
// made of it, not for the videos a sparse reader reads a frame of each.
func (fs *Server) checkForSpill(v *media.Video) { fs.digests.start(fs.ctx, *v) }

// spillTo is what spills a filled frame if the cache evicts it unserved:
// the setting of its image (a packed picture's own key names none) and its
// video (nil: it is not spilled), of which only what checks its digest is
// kept (spillVideo).
type spillTo struct {
	setting media.ImageSetting
	v       *media.Video
}

// spillVideo is what spilling keeps of v for the frames one fill makes:
// nil without a spill store or for a video without a digest. The frame
// index stays out: a cache full of unserved frames of many videos would
// keep all their indexes alive.
func (fs *Server) spillVideo(v media.Video) *media.Video {
	if fs.spill == nil || v.Digest == "" {
		return nil
	}
	return &media.Video{Key: v.Key, R: v.R, Size: v.Size, Digest: v.Digest}
}

// imageOf returns what makes the image key of *v of what the cache holds
// in form f: nil for the image itself, a decompression for a compressed
// one, a rendering for a packed picture.
func (fs *Server) imageOf(v *media.Video, key frameKey, f form) func([]byte) ([]byte, error) {
	switch f {
	case formCompressed:
		return decompressImage
	case formPicture:
		return func(packed []byte) ([]byte, error) { return fs.renderPacked(packed, *v, key) }
	}
	return nil
}

// abandon gives up a promise (its waiters decode the frame themselves) and
// forgets that a fill made it.
func (fs *Server) abandon(p *cache.Promise[frameKey]) {
	p.Abandon()
	fs.forgetFilled(p.Key())
}

// forgetFilled drops key from the filled frames waiting to be served: its
// promise failed.
func (fs *Server) forgetFilled(key frameKey) {
	fs.umu.Lock()
	delete(fs.unserved, key)
	fs.umu.Unlock()
}

// fill starts a fill of the GOP of key (see fill.go) when that pays off:
// every frame of its group that v shows and that is not cached, in flight
// or in the store is promised in the cache (key among them, so the caller
// waits for the fill) and decoded in order by a job, whose encoders fulfil
// the promises. The frames nobody has asked for yet are kept in the form
// fillPolicy.form chooses; key's own frame is an image.
func (fs *Server) fill(v media.Video, key frameKey) {
	if fs.opts.NoFill {
		return
	}
	ix := v.Index
	from, to := group(v, key.ordinal)
	var missing []int
	for o := from; o < to; o++ {
		if o != key.ordinal {
			k := key.at(o)
			// A frame the caller does not show is decoded only where a
			// shown one after it needs it (see decodeBatch), never kept.
			if !v.Shows(o) || fs.cache.Contains(k) || fs.hasCompact(k) || fs.inStore(v, k) {
				continue
			}
		}
		missing = append(missing, o)
	}
	// With a store every image made is kept on disk, so siblings stay
	// images; without one they take the most compact form, and a fill
	// must fit in the memory cache, unless what it evicts is spilled
	// (see spill.go).
	siblings := formImage
	if fs.opts.Store == nil {
		siblings = fs.fills.form(v, key.setting)
		if fs.spill == nil {
			missing = window(missing, key.ordinal, fs.fills.budget(fs.cache.MaxBytes(), v, key.setting, siblings))
		}
	}
	// A lone missing frame (the rest of its GOP is at hand, or there is no
	// room for it) is decoded alone, from the reference pictures only.
	if len(missing) < 2 || !fs.fills.worthIt(ix, key.ordinal, missing, siblings) {
		return
	}
	rk := readerKey{v.Key, v.Index.Stream, key.setting}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.closed.Load() {
		return
	}
	job := &raJob{v: v, setting: key.setting, end: to, more: make(chan struct{}, 1), siblings: siblings}
	for _, o := range missing {
		k := key.at(o)
		if o != key.ordinal {
			k = k.as(siblings)
		}
		if p, ok := fs.cache.Promise(k); ok {
			job.pending = append(job.pending, p)
		}
	}
	if len(job.pending) == 0 {
		return
	}
	filled := 0
	video := fs.spillVideo(v)
	fs.umu.Lock()
	for _, p := range job.pending {
		if p.Key() != key {
			fs.unserved[p.Key()] = spillTo{key.setting, video}
			filled++
		}
	}
	fs.umu.Unlock()
	if video != nil && fs.spill.filled(v.Key) {
		fs.checkForSpill(video)
	}
	fs.fills.filled(filled, siblings)
	fs.active[rk] = append(fs.active[rk], job)
	fs.wg.Add(1)
	go func() {
		defer fs.wg.Done()
		if fs.spill != nil {
			fs.spill.waitRoom(fs.ctx)
		}
		select {
		case fs.fillSlots <- struct{}{}:
		case <-fs.ctx.Done():
			fs.abandonAll(rk, job, nil)
			return
		}
		defer func() { <-fs.fillSlots }()
		fs.runReadahead(rk, job)
	}()
}

// storeKey names key's image in the store, or "" when the store is not
// used for v: it has no digest, or its digest is not (yet) verified. The
// "frame2" names are those of entries only servers that verify digests
// write.
func (fs *Server) storeKey(v media.Video, key frameKey) string {
	if fs.store == nil || v.Digest == "" || !fs.digests.known(v) {
		return ""
	}
	return fmt.Sprintf("frame2/%s/%d/%d/%s", v.Digest, key.stream, key.ordinal, fs.Identity(key.setting))
}

// Identity is the codec's identity of setting, remembered per setting:
// what the bytes of the images this server makes with setting depend on.
func (fs *Server) Identity(setting media.ImageSetting) string {
	if id, ok := fs.identities.Load(setting); ok {
		return id.(string)
	}
	id, _ := fs.identities.LoadOrStore(setting, fs.pool.codec.Identity(setting))
	return id.(string)
}

func (fs *Server) fromStore(v media.Video, key frameKey) ([]byte, bool) {
	sk := fs.storeKey(v, key)
	if sk == "" {
		return nil, false
	}
	var b []byte
	var ok bool
	if fs.spill != nil {
		b, ok = fs.spill.get(sk)
	}
	if !ok {
		b, ok = fs.store.Get(sk)
	}
	if ok {
		fs.storeHits.Add(1)
		if fs.spill != nil {
			fs.fills.unspilled()
		}
		fs.cache.Add(key, b)
	}
	return b, ok
}

func (fs *Server) inStore(v media.Video, key frameKey) bool {
	sk := fs.storeKey(v, key)
	return sk != "" && (fs.store.Contains(sk) || fs.spill != nil && fs.spill.has(sk))
}

// toStore writes an image made to Options.Store (a spill store gets
// only what the cache evicts unread).
func (fs *Server) toStore(v media.Video, key frameKey, b []byte) {
	if fs.opts.Store == nil {
		return
	}
	if sk := fs.storeKey(v, key); sk != "" {
		fs.opts.Store.Put(sk, b)
	}
}

// raJob is a read-ahead job: one goroutine with one session decoding
// frames that a sequential reader will ask for. A reader's next range is
// appended to its running job rather than given to a new one, so that the
// frames of one reader are decoded by one session in order, never by two
// sessions each decoding the GOP prefix.
type raJob struct {
	v       media.Video
	setting media.ImageSetting
	// end is the ordinal after the last frame handed to the job; a range
	// starting there continues it. Guarded by Server.mu.
	end int
	// pending are promised frames not yet taken by the job. Guarded by
	// Server.mu.
	pending []*cache.Promise[frameKey]
	// more is signalled when frames are added to pending.
	more chan struct{}
	// linger is how long the job waits for more frames once it has none
	// left: readaheadLinger for a sequential reader's job, which expects
	// the reader's next range; nothing for a fill.
	linger time.Duration
	// siblings is the form in which a fill keeps the frames nobody has
	// asked for yet. The frame it renders for its request is kept in that
	// form too (unless formImage), so that every frame of the GOP has its
	// compact form once it is served (see Frame).
	siblings form
}

// readahead has frames [from, to) of v decoded into the cache on other
// goroutines, by the job already following this reader or by a new one
// (unless MaxReadaheads jobs are running). The frames are promised in the
// cache before readahead returns, so that the reader's next request waits
// for the job instead of decoding the frame a second time.
func (fs *Server) readahead(v media.Video, setting media.ImageSetting, from, to int) {
	if from >= to {
		return
	}
	rk := readerKey{v.Key, v.Index.Stream, setting}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.closed.Load() {
		return
	}
	var job *raJob
	for _, j := range fs.active[rk] {
		if j.end == from {
			job = j
			break
		}
	}
	start := job == nil
	if start {
		select {
		case fs.jobs <- struct{}{}:
		default:
			return
		}
		job = &raJob{v: v, setting: setting, more: make(chan struct{}, 1), linger: readaheadLinger}
		fs.active[rk] = append(fs.active[rk], job)
		fs.wg.Add(1)
	}
	job.end = to
	for n := from; n < to; n++ {
		k := frameKey{video: v.Key, stream: v.Index.Stream, ordinal: n, setting: setting}
		if !v.Shows(n) {
			continue // the reader skips it
		}
		if fs.inStore(v, k) || fs.hasCompact(k) {
			continue // the reader will find it there, or make it from its compact form
		}
		if p, ok := fs.cache.Promise(k); ok {
			job.pending = append(job.pending, p)
		}
	}
	select {
	case job.more <- struct{}{}:
	default:
	}
	if start {
		go func() {
			defer func() {
				<-fs.jobs
				fs.wg.Done()
			}()
			fs.runReadahead(rk, job)
		}()
	}
}

// takePending returns the job's pending promises. When there are none and
// retire is set, it removes the job from the active ones (so the next
// range starts a new job) and returns nil.
func (fs *Server) takePending(rk readerKey, job *raJob, retire bool) []*cache.Promise[frameKey] {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	ps := job.pending
	job.pending = nil
	if len(ps) == 0 && retire {
		jobs := fs.active[rk]
		for i, j := range jobs {
			if j == job {
				jobs = append(jobs[:i], jobs[i+1:]...)
				break
			}
		}
		if len(jobs) == 0 {
			delete(fs.active, rk)
		} else {
			fs.active[rk] = jobs
		}
	}
	return ps
}

// encodeJob is a decoded frame for an encoder goroutine of a read-ahead
// job; pic is the job's reference, released by the encoder.
type encodeJob struct {
	p   *cache.Promise[frameKey]
	pic media.Picture
}

// runReadahead fulfils the job's promises until it has none left. One
// session only decodes the frames, in order; encodeWorkers goroutines,
// each with its own renderer, convert and encode them. Decoding is the
// part that cannot be split, so it is all the decoding goroutine does, and
// a single sequential reader keeps every core busy. Every promise is
// completed on every path.
func (fs *Server) runReadahead(rk readerKey, job *raJob) {
	queue := make(chan encodeJob, encodeQueue)
	var encoders sync.WaitGroup
	defer func() {
		close(queue)
		encoders.Wait()
	}()
	started := false
	startEncoders := func(s *session) {
		if started {
			return
		}
		started = true
		for range fs.opts.encodeWorkers {
			r := fs.pool.renderers.get()
			encoders.Add(1)
			go func() {
				defer encoders.Done()
				defer fs.pool.renderers.put(r)
				for w := range queue {
					k := w.p.Key()
					start := time.Now()
					var b []byte
					var err error
					switch k.form {
					case formPicture:
						compress := fs.fills.compressPacks()
						b, err = fs.pool.codec.Pack(w.pic, compress)
						fs.fills.measuredPack(time.Since(start), len(b), job.v.Index.Width, job.v.Index.Height, compress)
					case formCompressed:
						// The image is made in a lent buffer: only the
						// compressed copy the cache keeps is allocated.
						buf := scratch.Get(0)
						var image []byte
						if image, err = r.AppendEncoded((*buf)[:0], w.pic, k.setting); err == nil {
							fs.fills.measuredEncode(time.Since(start))
							b = fs.compress(image)
							*buf = image
						}
						scratch.Put(buf)
					default:
						b, err = r.Encode(w.pic, k.setting)
						fs.fills.measuredEncode(time.Since(start))
						if err == nil {
							fs.keepCompact(k, w.pic, b, job.siblings)
						}
					}
					w.pic.Release()
					if err != nil {
						err = fmt.Errorf("frame %d of %s: %w", k.ordinal, job.v.Key, err)
						// The renderer may hold a broken graph.
						r.Close()
						r = fs.pool.renderers.get()
					}
					if fs.spill != nil && err == nil {
						// What this frame evicts may have to be spilled.
						fs.spill.waitRoom(fs.ctx)
					}
					w.p.Fulfil(b, err)
					if err == nil && k.form == formImage {
						fs.toStore(job.v, k, b)
					} else if err != nil {
						fs.forgetFilled(k)
					}
				}
			}()
		}
	}

	var s *session
	defer func() {
		if s != nil {
			fs.pool.release(s)
		}
	}()
	for {
		batch := fs.takePending(rk, job, false)
		if len(batch) == 0 {
			// Wait a little for the reader's next range before retiring:
			// it asks for more when it has used up half the window, which
			// may be just after the job ran out. The session goes back
			// to the pool meanwhile.
			if s != nil {
				fs.pool.release(s)
				s = nil
			}
			if job.linger > 0 {
				timer := time.NewTimer(job.linger)
				select {
				case <-job.more:
					timer.Stop()
					continue
				case <-timer.C:
				case <-fs.ctx.Done():
					timer.Stop()
				}
			}
			if batch = fs.takePending(rk, job, true); len(batch) == 0 {
				return
			}
		}
		if s == nil {
			var err error
			if s, err = fs.pool.acquire(fs.ctx, job.v, batch[0].Key().ordinal); err != nil {
				fs.abandonAll(rk, job, batch)
				return
			}
			startEncoders(s)
		}
		if !fs.decodeBatch(s, batch, queue) {
			fs.pool.release(s) // broken: closed by the pool
			s = nil
			fs.abandonAll(rk, job, nil)
			return
		}
	}
}

// abandonAll abandons batch and everything still pending for a job that
// stops, and retires it.
func (fs *Server) abandonAll(rk readerKey, job *raJob, batch []*cache.Promise[frameKey]) {
	for _, p := range batch {
		fs.abandon(p)
	}
	for {
		ps := fs.takePending(rk, job, true)
		if len(ps) == 0 {
			return
		}
		for _, p := range ps {
			fs.abandon(p)
		}
	}
}

// decodeBatch decodes the frames of batch with s and queues them for the
// encoders. It completes every promise of batch; ok is false when the
// session failed and the job must stop.
func (fs *Server) decodeBatch(s *session, batch []*cache.Promise[frameKey], queue chan<- encodeJob) (ok bool) {
	i := 0
	defer func() {
		for _, p := range batch[i:] {
			fs.abandon(p)
		}
	}()
	s.ReadOn()
	sink := fs.pool.pictures.sink(s.key)
	for ; i < len(batch); i++ {
		p := batch[i]
		start := time.Now()
		_, before := s.Counters()
		// A new reference to the decoder's picture, not a copy: the
		// decoder takes fresh buffers from its pool while this one is
		// held.
		pic, err := s.Decode(fs.ctx, p.Key().ordinal, sink)
		if _, after := s.Counters(); err == nil && after > before {
			fs.fills.measuredDecode(time.Since(start) / time.Duration(after-before))
		}
		if err != nil {
			if errors.Is(err, media.ErrFrameDecode) {
				p.Fulfil(nil, err)
				fs.forgetFilled(p.Key())
			}
			return false
		}
		select {
		case queue <- encodeJob{p, pic}:
		case <-fs.ctx.Done():
			pic.Release()
			return false
		}
	}
	return true
}

// Info returns the display size and rotation of v's stream.
func (fs *Server) Info(ctx context.Context, v media.Video) (media.VideoInfo, error) {
	return fs.pool.info(ctx, v)
}

// FrameSizes returns the byte size of every frame of v encoded with
// setting, indexed by ordinal: what a table stores at ingest so that a
// mount can list file sizes without decoding. BMP and PPM sizes follow
// from the picture size (media.PredictSize); JPEG and PNG frames are
// decoded and encoded, the whole video in presentation order, split into
// runs of whole GOPs that SizeWorkers sessions decode in parallel. The
// images are not cached. Any frame that cannot be decoded fails the call.
func (fs *Server) FrameSizes(ctx context.Context, v media.Video, setting media.ImageSetting) ([]int64, error) {
	if fs.closed.Load() {
		return nil, ErrClosed
	}
	if err := setting.Validate(); err != nil {
		return nil, err
	}
	if err := checkVideo(v); err != nil {
		return nil, err
	}
	setting = setting.Normalize()
	n := v.Index.Frames()
	sizes := make([]int64, n)
	if _, fixed := media.PredictSize(setting, 1, 1); fixed {
		info, err := fs.pool.info(ctx, v)
		if err != nil {
			return nil, err
		}
		size, _ := media.PredictSize(setting, info.Width, info.Height)
		for i := range sizes {
			sizes[i] = size
		}
		return sizes, nil
	}

	// The images are made anyway: the frames read next find them (or the
	// pictures packed) in the cache, in half of it at most, and in the
	// store.
	if fs.opts.Store != nil {
		fs.digests.verify(ctx, fs.ctx, v)
	}
	keep := &sizeKeep{budget: fs.cache.MaxBytes() / 2, packed: fs.opts.Store == nil && fs.fills.form(v, setting) == formPicture,
		spill: fs.spillVideo(v)}
	workers := min(fs.opts.SizeWorkers, fs.pool.opts.maxPerVideo)
	chunks := gopChunks(v, workers)
	workers = min(workers, len(chunks))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= len(chunks) || ctx.Err() != nil {
					return
				}
				if fs.sizesFromStore(v, setting, chunks[c], sizes) {
					continue
				}
				err := fs.pool.with(ctx, v, chunks[c].from, func(s *session) error {
					s.ReadOn()
					for ord := chunks[c].from; ord < chunks[c].to; ord++ {
						b, err := fs.sizeImage(ctx, s, v, ord, setting, keep)
						if err != nil {
							return err
						}
						sizes[ord] = int64(len(b))
					}
					return nil
				})
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return sizes, nil
}

// sizeKeep is what FrameSizes keeps of the images it makes: their form
// and the cache bytes it may still fill.
type sizeKeep struct {
	packed bool
	budget int64
	used   atomic.Int64
	// spill is what spilling keeps of the video (spillVideo), shared by
	// the frames kept.
	spill *media.Video
}

// take reports whether n more bytes fit in the budget, and takes them.
func (k *sizeKeep) take(n int) bool {
	if k.used.Add(int64(n)+cache.EntryOverhead) <= k.budget {
		return true
	}
	k.used.Add(-int64(n) - cache.EntryOverhead)
	return false
}

// sizeImage decodes frame ordinal with s and renders it for FrameSizes,
// keeping the image (or the packed picture) for the request to come while
// keep has room, and the image in the store.
func (fs *Server) sizeImage(ctx context.Context, s *session, v media.Video, ordinal int, setting media.ImageSetting, keep *sizeKeep) ([]byte, error) {
	pic, err := s.Decode(ctx, ordinal, fs.pool.pictures.sink(s.key))
	if err != nil {
		return nil, err
	}
	defer pic.Release()
	b, err := fs.pool.renderers.render(pic, v, ordinal, setting)
	if err != nil {
		return nil, err
	}
	key := frameKey{video: v.Key, stream: v.Index.Stream, ordinal: ordinal, setting: setting}
	fs.toStore(v, key, b)
	if keep.budget <= 0 || fs.cache.Contains(key) || fs.hasCompact(key) {
		return b, nil
	}
	value := b
	if keep.packed {
		key = key.packedKey()
		if value, err = fs.pool.codec.Pack(pic, fs.fills.compressPacks()); err != nil {
			return b, nil // the size is known; the frame is decoded again when read
		}
	}
	if keep.take(len(value)) {
		fs.umu.Lock()
		fs.unserved[key] = spillTo{setting, keep.spill}
		fs.umu.Unlock()
		fs.cache.Add(key, value)
		fs.fills.sized()
	}
	return b, nil
}

// sizesFromStore fills in the sizes of the frames of chunk from the
// images the store keeps, and reports whether it had them all: then the
// chunk need not be decoded.
//
// Every image of the chunk is read even after one is missing: reading
// checks it, and a damaged one is dropped now, so the decoding of the chunk
// writes it again.
func (fs *Server) sizesFromStore(v media.Video, setting media.ImageSetting, chunk ordinalRange, sizes []int64) bool {
	all := true
	for ord := chunk.from; ord < chunk.to; ord++ {
		sk := fs.storeKey(v, frameKey{video: v.Key, stream: v.Index.Stream, ordinal: ord, setting: setting})
		if sk == "" {
			return false
		}
		if b, ok := fs.store.Get(sk); ok {
			sizes[ord] = int64(len(b))
		} else {
			all = false
		}
	}
	return all
}

// ordinalRange is frames [from, to) in presentation order.
type ordinalRange struct{ from, to int }

// gopChunks splits the frames of v into runs of whole GOPs (frames sharing
// a decode start), merged so that there are about four runs per worker:
// enough to balance uneven GOPs, few enough that seeks stay rare.
func gopChunks(v media.Video, workers int) []ordinalRange {
	ix := v.Index
	n := ix.Frames()
	target := max(1, (n+4*workers-1)/(4*workers))
	var chunks []ordinalRange
	from := 0
	prev := ix.DecodeStart(0)
	for i := 1; i < n; i++ {
		ds := ix.DecodeStart(i)
		if ds != prev && i-from >= target {
			chunks = append(chunks, ordinalRange{from, i})
			from = i
		}
		prev = ds
	}
	return append(chunks, ordinalRange{from, n})
}

// Close stops read-ahead, waits for its jobs to finish and closes the
// decoder sessions; later calls fail with ErrClosed.
func (fs *Server) Close() error {
	fs.mu.Lock()
	fs.closed.Store(true)
	fs.mu.Unlock()
	fs.cancel()
	fs.wg.Wait()
	fs.pool.close()
	return nil
}
