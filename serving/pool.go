package serving

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/framefs/framefs/media"
)

// ErrClosed is returned by a Server (and its pool) after Close.
var ErrClosed = errors.New("serving: closed")

const defaultPictureCacheBytes = 256 << 20

// maxSeekThreads caps the default SeekThreads. The default is twice the
// cores because frame threads spend much of their time waiting for rows
// of the picture they predict from: on 2 cores, 500 random requests at
// GOP 30 ran 6-8% faster with 4 threads than with 1 and 3% faster with
// 2, while 6 or 8 threads gained at most 2% more.
const maxSeekThreads = 8

// poolOptions are the Options a pool uses, defaults applied.
type poolOptions struct {
	maxOpen, maxPerVideo        int
	decoderThreads, seekThreads int
	pictureCacheBytes           int64
}

func (o Options) pool() poolOptions {
	procs := runtime.GOMAXPROCS(0)
	p := poolOptions{
		maxOpen: o.MaxOpenSessions, maxPerVideo: o.MaxSessionsPerVideo,
		decoderThreads: o.DecoderThreads, seekThreads: o.SeekThreads,
		pictureCacheBytes: o.PictureCacheBytes,
	}
	if p.maxOpen <= 0 {
		p.maxOpen = max(4, 2*procs)
	}
	if p.maxPerVideo <= 0 {
		p.maxPerVideo = max(2, procs)
	}
	p.maxPerVideo = min(p.maxPerVideo, p.maxOpen)
	if p.decoderThreads <= 0 {
		p.decoderThreads = 1
	}
	if p.seekThreads <= 0 {
		p.seekThreads = min(2*procs, maxSeekThreads)
	}
	switch {
	case p.pictureCacheBytes == 0:
		p.pictureCacheBytes = defaultPictureCacheBytes
	case p.pictureCacheBytes < 0:
		p.pictureCacheBytes = 0
	}
	return p
}

// pool keeps decoder sessions open between requests, so that reading the
// next frame of a video continues decoding where the previous request
// stopped instead of reopening the file and seeking. It is safe for
// concurrent use.
//
// Lock order: pool.mu is never held while calling into the codec or the
// caller's reader; sessions are opened and closed outside it.
type pool struct {
	codec     media.Codec
	opts      poolOptions
	pictures  *pictureCache
	renderers renderers

	mu sync.Mutex
	// idle holds the idle sessions of all videos, most recently released
	// at the front. Guarded by mu.
	idle *list.List
	// videos counts sessions (open or being opened) per video and lists
	// the idle ones. Guarded by mu.
	videos map[streamKey]*poolVideo
	// open counts sessions open or being opened. Guarded by mu.
	open int
	// released is closed and replaced whenever a session is released or
	// closed, waking every waiting request. Guarded by mu.
	released chan struct{}
	closed   bool // guarded by mu
	stats    PoolStats
}

// streamKey identifies one stream of one video: what a session decodes.
type streamKey struct {
	video  media.VideoKey
	stream int
}

// session is a codec session checked out of, or idle in, the pool.
type session struct {
	media.Session
	key streamKey
	ix  int // frames of the stream, for Reaches
	// seeks and decoded are the session's counters as last added to the
	// pool's (tallyLocked).
	seeks, decoded int
}

type poolVideo struct {
	open int             // sessions of this video, busy, idle or opening
	idle []*list.Element // its idle sessions' elements in pool.idle
}

// PoolStats counts what the decoder sessions did, for tests and
// monitoring.
type PoolStats struct {
	Open    int // sessions open now
	Idle    int // of which idle
	Opened  int // sessions opened in total
	Evicted int // idle sessions closed to make room
	Broken  int // sessions closed after an error
	// Seeks and Decoded count the seeks and frames decoded by sessions,
	// added as each is handed back: they never go down, and a session at
	// work shows its part when it is done.
	Seeks, Decoded int
	// PictureBytes is the memory held by kept decoded pictures;
	// PicturesKept counts the pictures kept in total and PictureHits the
	// requests served from one instead of decoding.
	PictureBytes              int64
	PicturesKept, PictureHits int
}

func newPool(codec media.Codec, opts poolOptions) *pool {
	return &pool{
		codec:     codec,
		opts:      opts,
		pictures:  newPictureCache(opts.pictureCacheBytes),
		renderers: renderers{codec: codec, idle: make(chan media.Renderer, 2*runtime.GOMAXPROCS(0))},
		idle:      list.New(),
		videos:    map[streamKey]*poolVideo{},
		released:  make(chan struct{}),
	}
}

// Stats returns a snapshot of the pool's counters.
func (p *pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Open = p.open
	st.Idle = p.idle.Len()
	st.PictureBytes, st.PicturesKept, st.PictureHits = p.pictures.stats()
	return st
}

func checkVideo(v media.Video) error {
	if v.R == nil {
		return fmt.Errorf("serving: video %s: nil reader", v.Key)
	}
	if v.Index == nil || v.Index.Frames() == 0 {
		return fmt.Errorf("serving: video %s: no frame index", v.Key)
	}
	return nil
}

// acquire checks out a session of v for the caller's exclusive use, bound
// to ctx and v.R. ordinal hints at the frame wanted next: among idle
// sessions of v, one that reaches it by decoding on is preferred. The
// caller must hand the session back with release.
func (p *pool) acquire(ctx context.Context, v media.Video, ordinal int) (*session, error) {
	if err := checkVideo(v); err != nil {
		return nil, err
	}
	key := streamKey{v.Key, v.Index.Stream}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		pv := p.videos[key]
		if pv == nil {
			pv = &poolVideo{}
			p.videos[key] = pv
		}
		if s := p.takeIdle(pv, ordinal); s != nil {
			s.SetSeekThreads(p.seekThreadsLocked())
			p.mu.Unlock()
			s.Bind(ctx, v.R)
			return s, nil
		}
		if pv.open < p.opts.maxPerVideo {
			var evict *session
			if p.open >= p.opts.maxOpen && p.idle.Len() > 0 {
				// pv has no idle session, so this is another video's.
				evict = p.removeIdle(p.idle.Back())
				p.dropLocked(evict)
				p.stats.Evicted++
			}
			if p.open < p.opts.maxOpen {
				p.open++
				pv.open++
				p.stats.Opened++
				seekThreads := p.seekThreadsLocked()
				p.mu.Unlock()
				if evict != nil {
					evict.Close()
				}
				cs, err := p.codec.OpenSession(ctx, v, p.opts.decoderThreads)
				if err != nil {
					p.mu.Lock()
					p.open--
					pv.open--
					p.forget(key, pv)
					p.wake()
					p.mu.Unlock()
					return nil, err
				}
				s := &session{Session: cs, key: key, ix: v.Index.Frames()}
				s.SetSeekThreads(seekThreads)
				s.Bind(ctx, v.R)
				return s, nil
			}
		}
		wait := p.released
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wait:
		}
	}
}

// seekThreadsLocked returns the threads a session just checked out may use
// for a random request: SeekThreads if it is the only busy one, else
// DecoderThreads. p.mu held.
func (p *pool) seekThreadsLocked() int {
	if p.open-p.idle.Len() == 1 {
		return p.opts.seekThreads
	}
	return p.opts.decoderThreads
}

// takeIdle removes and returns an idle session of pv, preferring one that
// reaches ordinal without seeking, or nil if pv has none idle. p.mu held.
func (p *pool) takeIdle(pv *poolVideo, ordinal int) *session {
	if len(pv.idle) == 0 {
		return nil
	}
	best := pv.idle[len(pv.idle)-1] // most recently released
	if ordinal >= 0 {
		for _, e := range pv.idle {
			s := e.Value.(*session)
			if ordinal < s.ix && s.Reaches(ordinal) {
				best = e
				break
			}
		}
	}
	return p.removeIdle(best)
}

// removeIdle takes the session of e off the idle lists. p.mu held.
func (p *pool) removeIdle(e *list.Element) *session {
	s := p.idle.Remove(e).(*session)
	pv := p.videos[s.key]
	for i, x := range pv.idle {
		if x == e {
			pv.idle = append(pv.idle[:i], pv.idle[i+1:]...)
			break
		}
	}
	return s
}

// release hands a session back: kept idle if healthy, else closed.
func (p *pool) release(s *session) {
	s.Unbind()
	p.mu.Lock()
	if broken := s.Broken(); broken || p.closed {
		p.dropLocked(s)
		if broken {
			p.stats.Broken++
		}
		p.wake()
		p.mu.Unlock()
		s.Close()
		return
	}
	p.tallyLocked(s)
	pv := p.videos[s.key]
	pv.idle = append(pv.idle, p.idle.PushFront(s))
	p.wake()
	p.mu.Unlock()
}

// dropLocked removes a session that is about to be closed (and is on no
// idle list) from the counts, keeping its counters. p.mu held.
func (p *pool) dropLocked(s *session) {
	pv := p.videos[s.key]
	p.open--
	pv.open--
	p.tallyLocked(s)
	p.forget(s.key, pv)
}

// tallyLocked adds to the pool's counters what s did since they last
// took its counters. p.mu held.
func (p *pool) tallyLocked(s *session) {
	seeks, decoded := s.Counters()
	p.stats.Seeks += seeks - s.seeks
	p.stats.Decoded += decoded - s.decoded
	s.seeks, s.decoded = seeks, decoded
}

// forget drops the bookkeeping of a video without sessions. p.mu held.
func (p *pool) forget(key streamKey, pv *poolVideo) {
	if pv.open == 0 && len(pv.idle) == 0 {
		delete(p.videos, key)
	}
}

// wake wakes every request waiting for a session. p.mu held.
func (p *pool) wake() {
	close(p.released)
	p.released = make(chan struct{})
}

// with runs fn on a session of v and releases it.
func (p *pool) with(ctx context.Context, v media.Video, ordinal int, fn func(*session) error) error {
	s, err := p.acquire(ctx, v, ordinal)
	if err != nil {
		return err
	}
	defer p.release(s)
	return fn(s)
}

// image decodes frame ordinal with s and renders it with setting.
func (p *pool) image(ctx context.Context, s *session, v media.Video, ordinal int, setting media.ImageSetting) ([]byte, error) {
	pic, err := s.Decode(ctx, ordinal, p.pictures.sink(s.key))
	if err != nil {
		return nil, err
	}
	defer pic.Release()
	return p.renderers.render(pic, v, ordinal, setting)
}

// renderers keeps idle renderers for reuse: each holds the filter graphs
// and encoders of the shapes and settings it rendered last, which cost
// more to build than a frame costs to render. Safe for concurrent use.
type renderers struct {
	codec media.Codec
	idle  chan media.Renderer
}

// get returns an idle renderer or a new one; put hands it back.
func (rs *renderers) get() media.Renderer {
	select {
	case r := <-rs.idle:
		return r
	default:
		return rs.codec.NewRenderer()
	}
}

func (rs *renderers) put(r media.Renderer) {
	select {
	case rs.idle <- r:
	default:
		r.Close()
	}
}

// render renders pic, frame ordinal of v, with setting.
func (rs *renderers) render(pic media.Picture, v media.Video, ordinal int, setting media.ImageSetting) ([]byte, error) {
	r := rs.get()
	b, err := r.Encode(pic, setting)
	if err != nil {
		// A renderer that failed may hold a broken graph: drop it.
		r.Close()
		return nil, fmt.Errorf("frame %d of %s: %w", ordinal, v.Key, err)
	}
	rs.put(r)
	return b, nil
}

// close frees the idle renderers.
func (rs *renderers) close() {
	for {
		select {
		case r := <-rs.idle:
			r.Close()
		default:
			return
		}
	}
}

// frame decodes frame ordinal of v and returns it rendered with setting,
// from a kept picture when there is one. It caches nothing beyond the open
// session and the pictures passed on the way. An error wrapping
// media.ErrFrameDecode concerns this frame only: the session that met it
// is closed and the next request opens a fresh one.
func (p *pool) frame(ctx context.Context, v media.Video, ordinal int, setting media.ImageSetting) ([]byte, error) {
	var b []byte
	err := p.with(ctx, v, ordinal, func(s *session) error {
		if pic := p.pictures.get(pictureKey{s.key, ordinal}); pic != nil {
			// A random request passed this picture: render it, leaving
			// the session where it stands.
			defer pic.Release()
			var err error
			b, err = p.renderers.render(pic, v, ordinal, setting)
			return err
		}
		var err error
		b, err = p.image(ctx, s, v, ordinal, setting)
		return err
	})
	return b, err
}

// info returns the stream's display size and rotation as images are made
// (opening a session if none is open).
func (p *pool) info(ctx context.Context, v media.Video) (media.VideoInfo, error) {
	var info media.VideoInfo
	err := p.with(ctx, v, -1, func(s *session) error {
		info = s.Info()
		return nil
	})
	return info, err
}

// close closes the idle sessions and makes busy ones close when they are
// released; later requests fail with ErrClosed. Every codec resource the
// pool holds is freed once the busy sessions are back.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	var idle []*session
	for p.idle.Len() > 0 {
		s := p.removeIdle(p.idle.Front())
		p.dropLocked(s)
		idle = append(idle, s)
	}
	p.wake()
	p.mu.Unlock()
	for _, s := range idle {
		s.Close()
	}
	p.pictures.close()
	p.renderers.close()
}
