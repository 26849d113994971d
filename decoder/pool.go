package decoder

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// ErrPoolClosed is returned by a Pool (and a FrameSource over it) after
// Close.
var ErrPoolClosed = errors.New("decoder: pool is closed")

// Options configures a Pool. The zero value gives the defaults.
type Options struct {
	// MaxOpenSessions bounds the decoder sessions open at once over all
	// videos, busy and idle; it is what bounds the decoder's memory. A
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
	// PictureCacheBytes bounds the decoded pictures kept for random
	// readers (see pictureCache): about 0.5 MB each at 640x480 and 3 MB at
	// 1080p. 0 means 256 MiB; negative keeps none.
	PictureCacheBytes int64
	// DecoderThreads is the number of threads of each decoder (FFmpeg
	// frame threading). Sessions are the unit of parallelism, so the
	// default is 1: more threads only help a single reader on an otherwise
	// idle machine, and frame threading delays every output frame.
	DecoderThreads int
	// SeekThreads is the number of threads that decode a random request
	// (one that seeks and flushes the decoder right after its frame, see
	// session.decodeTo) made while no other request is using the pool,
	// so the cores are otherwise idle. 0 means twice GOMAXPROCS, at most
	// 8; 1 never uses more than DecoderThreads.
	SeekThreads int
}

const defaultPictureCacheBytes = 256 << 20

// maxSeekThreads caps the default SeekThreads. The default is twice the
// cores because frame threads spend much of their time waiting for rows
// of the picture they predict from: on 2 cores, 500 random requests at
// GOP 30 ran 6-8% faster with 4 threads than with 1 and 3% faster with
// 2, while 6 or 8 threads gained at most 2% more.
const maxSeekThreads = 8

func (o Options) withDefaults() Options {
	procs := runtime.GOMAXPROCS(0)
	if o.MaxOpenSessions <= 0 {
		o.MaxOpenSessions = max(4, 2*procs)
	}
	if o.MaxSessionsPerVideo <= 0 {
		o.MaxSessionsPerVideo = max(2, procs)
	}
	o.MaxSessionsPerVideo = min(o.MaxSessionsPerVideo, o.MaxOpenSessions)
	if o.DecoderThreads <= 0 {
		o.DecoderThreads = 1
	}
	if o.SeekThreads <= 0 {
		o.SeekThreads = min(2*procs, maxSeekThreads)
	}
	switch {
	case o.PictureCacheBytes == 0:
		o.PictureCacheBytes = defaultPictureCacheBytes
	case o.PictureCacheBytes < 0:
		o.PictureCacheBytes = 0
	}
	return o
}

// Pool keeps decoder sessions open between requests, so that reading the
// next frame of a video continues decoding where the previous request
// stopped instead of reopening the file and seeking. It is safe for
// concurrent use.
//
// Lock order: Pool.mu is never held while calling into FFmpeg or the
// caller's reader; sessions are opened and closed outside it.
type Pool struct {
	opts     Options
	pictures *pictureCache

	mu sync.Mutex
	// idle holds the idle sessions of all videos, most recently released
	// at the front. Guarded by mu.
	idle *list.List
	// videos counts sessions (open or being opened) per video and lists
	// the idle ones. Guarded by mu.
	videos map[sessionKey]*poolVideo
	// open counts sessions open or being opened. Guarded by mu.
	open int
	// released is closed and replaced whenever a session is released or
	// closed, waking every waiting request. Guarded by mu.
	released chan struct{}
	closed   bool // guarded by mu
	stats    PoolStats
}

type poolVideo struct {
	open int             // sessions of this video, busy, idle or opening
	idle []*list.Element // its idle sessions' elements in Pool.idle
}

// PoolStats counts what a Pool did, for tests and monitoring.
type PoolStats struct {
	Open    int // sessions open now
	Idle    int // of which idle
	Opened  int // sessions opened in total
	Evicted int // idle sessions closed to make room
	Broken  int // sessions closed after an error
	Seeks   int // seeks done by closed and idle sessions
	Decoded int // frames decoded by closed and idle sessions
	// PictureBytes is the memory held by kept decoded pictures;
	// PicturesKept counts the pictures kept in total and PictureHits the
	// requests served from one instead of decoding.
	PictureBytes              int64
	PicturesKept, PictureHits int
}

// NewPool returns a pool with the given options.
func NewPool(opts Options) *Pool {
	opts = opts.withDefaults()
	return &Pool{
		opts:     opts,
		pictures: newPictureCache(opts.PictureCacheBytes),
		idle:     list.New(),
		videos:   map[sessionKey]*poolVideo{},
		released: make(chan struct{}),
	}
}

// Stats returns a snapshot of the pool's counters.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Open = p.open
	st.Idle = p.idle.Len()
	for e := p.idle.Front(); e != nil; e = e.Next() {
		s := e.Value.(*session)
		st.Seeks += s.seeks
		st.Decoded += s.decoded
	}
	st.PictureBytes, st.PicturesKept, st.PictureHits = p.pictures.stats()
	return st
}

func checkVideo(v Video) error {
	if v.R == nil {
		return fmt.Errorf("decoder: video %s: nil reader", v.Key)
	}
	if v.Index == nil {
		return fmt.Errorf("decoder: video %s: no frame index", v.Key)
	}
	return nil
}

// acquire checks out a session of v for the caller's exclusive use, bound
// to ctx and v.R. ordinal hints at the frame wanted next: among idle
// sessions of v, one that reaches it by decoding on is preferred. The
// caller must hand the session back with release.
func (p *Pool) acquire(ctx context.Context, v Video, ordinal int) (*session, error) {
	if err := checkVideo(v); err != nil {
		return nil, err
	}
	key := sessionKey{v.Key, v.Index.Stream}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrPoolClosed
		}
		pv := p.videos[key]
		if pv == nil {
			pv = &poolVideo{}
			p.videos[key] = pv
		}
		if s := p.takeIdle(pv, ordinal); s != nil {
			s.seekThreads = p.seekThreadsLocked()
			p.mu.Unlock()
			s.bind(ctx, v.R)
			return s, nil
		}
		if pv.open < p.opts.MaxSessionsPerVideo {
			var evict *session
			if p.open >= p.opts.MaxOpenSessions && p.idle.Len() > 0 {
				// pv has no idle session, so this is another video's.
				evict = p.removeIdle(p.idle.Back())
				p.dropLocked(evict)
				p.stats.Evicted++
			}
			if p.open < p.opts.MaxOpenSessions {
				p.open++
				pv.open++
				p.stats.Opened++
				seekThreads := p.seekThreadsLocked()
				p.mu.Unlock()
				if evict != nil {
					evict.close()
				}
				s, err := openSession(ctx, v, p.opts.DecoderThreads)
				if err != nil {
					p.mu.Lock()
					p.open--
					pv.open--
					p.forget(key, pv)
					p.wake()
					p.mu.Unlock()
					return nil, err
				}
				s.pictures, s.seekThreads = p.pictures, seekThreads
				s.bind(ctx, v.R)
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
func (p *Pool) seekThreadsLocked() int {
	if p.open-p.idle.Len() == 1 {
		return p.opts.SeekThreads
	}
	return p.opts.DecoderThreads
}

// takeIdle removes and returns an idle session of pv, preferring one that
// reaches ordinal without seeking, or nil if pv has none idle. p.mu held.
func (p *Pool) takeIdle(pv *poolVideo, ordinal int) *session {
	if len(pv.idle) == 0 {
		return nil
	}
	best := pv.idle[len(pv.idle)-1] // most recently released
	if ordinal >= 0 {
		for _, e := range pv.idle {
			s := e.Value.(*session)
			if ordinal < s.ix.Frames() && s.canContinue(s.ix.Frame(ordinal).PTS, s.ix.DecodeStart(ordinal)) {
				best = e
				break
			}
		}
	}
	return p.removeIdle(best)
}

// removeIdle takes the session of e off the idle lists. p.mu held.
func (p *Pool) removeIdle(e *list.Element) *session {
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
func (p *Pool) release(s *session) {
	s.unbind()
	p.mu.Lock()
	if s.broken || p.closed {
		p.dropLocked(s)
		if s.broken {
			p.stats.Broken++
		}
		p.wake()
		p.mu.Unlock()
		s.close()
		return
	}
	pv := p.videos[s.key]
	pv.idle = append(pv.idle, p.idle.PushFront(s))
	p.wake()
	p.mu.Unlock()
}

// dropLocked removes a session that is about to be closed (and is on no
// idle list) from the counts, keeping its counters. p.mu held.
func (p *Pool) dropLocked(s *session) {
	pv := p.videos[s.key]
	p.open--
	pv.open--
	p.stats.Seeks += s.seeks
	p.stats.Decoded += s.decoded
	p.forget(s.key, pv)
}

// forget drops the bookkeeping of a video without sessions. p.mu held.
func (p *Pool) forget(key sessionKey, pv *poolVideo) {
	if pv.open == 0 && len(pv.idle) == 0 {
		delete(p.videos, key)
	}
}

// wake wakes every request waiting for a session. p.mu held.
func (p *Pool) wake() {
	close(p.released)
	p.released = make(chan struct{})
}

// with runs fn on a session of v and releases it.
func (p *Pool) with(ctx context.Context, v Video, ordinal int, fn func(*session) error) error {
	s, err := p.acquire(ctx, v, ordinal)
	if err != nil {
		return err
	}
	defer p.release(s)
	return fn(s)
}

// Frame decodes frame ordinal (presentation order) of v and returns it
// encoded with setting. It caches nothing beyond the open session; see
// FrameSource for the cached path. An error wrapping ErrFrameDecode
// concerns this frame only: the session that met it is closed and the next
// request opens a fresh one.
func (p *Pool) Frame(ctx context.Context, v Video, ordinal int, setting ImageSetting) ([]byte, error) {
	if err := setting.Validate(); err != nil {
		return nil, err
	}
	setting = setting.Normalize()
	var b []byte
	err := p.with(ctx, v, ordinal, func(s *session) error {
		if pic := p.pictures.get(pictureKey{v.Key, v.Index.Stream, ordinal}); pic != nil {
			// A random request passed this picture: render it, leaving
			// the session where it stands.
			defer pic.Free()
			var err error
			if b, err = s.r.encode(pic, setting); err != nil {
				s.broken = true
				return fmt.Errorf("frame %d of %s: %w", ordinal, v.Key, err)
			}
			return nil
		}
		var err error
		b, err = s.image(ctx, ordinal, setting)
		return err
	})
	return b, err
}

// Info returns the stream's display size and rotation as the decoder
// serves it (opening a session if none is open).
func (p *Pool) Info(ctx context.Context, v Video) (VideoInfo, error) {
	var info VideoInfo
	err := p.with(ctx, v, -1, func(s *session) error {
		info = s.info
		return nil
	})
	return info, err
}

// Close closes the idle sessions and makes busy ones close when they are
// released; later requests fail with ErrPoolClosed. It frees every FFmpeg
// resource the pool holds once the busy sessions are back.
func (p *Pool) Close() error {
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
		s.close()
	}
	p.pictures.close()
	return nil
}
