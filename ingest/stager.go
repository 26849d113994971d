package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/framefs/framefs/lerobot"
	"github.com/framefs/framefs/table"
)

// Mode is what a staging directory does with what it receives.
type Mode int

const (
	// Add commits new episodes; an existing episode is an error.
	Add Mode = iota
	// Replace replaces the video of an existing episode (NAME.mp4) or
	// updates its rows (a lone sidecar NAME.jsonl).
	Replace
)

func (m Mode) String() string {
	if m == Replace {
		return "replace"
	}
	return "ingest"
}

// ErrNoSpace means the staging area is full.
var ErrNoSpace = errors.New("ingest: staging area full")

// Options configure a Stager.
type Options struct {
	Mode Mode
	// Dir is the staging directory users write into.
	Dir string
	// WorkDir holds journals and links; it must be on Dir's filesystem.
	WorkDir string
	// Table opens the table commits go to.
	Table func(ctx context.Context) (*table.Table, error)
	// Settle is how long a file must stay closed and unchanged before it
	// commits (default 2 s).
	Settle time.Duration
	// LimitBytes bounds what Dir may hold (0: no limit).
	LimitBytes int64
	// EncodeImages writes images as a video at out (for image folders).
	EncodeImages func(ctx context.Context, images []string, out string) error
	// AddOptions are passed to the table's AddEpisodes and ReplaceVideo.
	AddOptions table.AddOptions
	// Committed, when set, is called after every commit.
	Committed func(*table.Snapshot)
	Logger    *slog.Logger
}

// Stats count what a stager did.
type Stats struct {
	Commits  int64 // snapshots committed
	Episodes int64 // episodes added, replaced or updated
	Failures int64 // groups that got an error file
	Staged   int64 // bytes in the staging directory
	Writing  int64 // staged files open for writing
}

// Stager commits what arrives in one staging directory.
//
// What happens to the directory's contents, step by step: scan lists the
// entries and sees which changed and which are open; groups gathers them
// by base name; a group whose files are all settled is checked (check,
// checkKinds, readSidecar), its files linked or encoded into the batch
// directory (stage), and committed with the other ready groups
// (commitAdd, commitReplace). What cannot commit gets a problem (fail),
// shown as NAME.error.
//
// Lock order: commitMu before mu, and a Writer's mu before mu. step (run
// by Run and CommitNow) holds commitMu for a whole step and takes mu for
// moments inside it; a Writer's methods take the Writer's mu, then the
// stager's; nothing takes commitMu or a Writer's mu while holding mu.
// Writes, flushes and releases of staged files take only the Writer's mu
// and mu, so they never wait for a commit.
type Stager struct {
	opts Options
	log  *slog.Logger

	commitMu  sync.Mutex // one step at a time; guards recovered
	recovered bool       // the journal of a crashed predecessor is dealt with
	kick      chan struct{}

	// noSpaceCount counts the inodes with a write that failed for lack
	// of room, so that writes need no lock when there are none.
	noSpaceCount atomic.Int64

	mu         sync.Mutex // guards the fields below
	inodes     map[uint64]*inodeState
	releasedCh chan struct{}          // closed (and replaced) at every release
	seen       map[string]observation // entry name -> last fingerprint
	problems   map[string]*problem    // group -> why it did not commit
	history    []string               // last commits, newest last
	rows       []statusRow            // the staged groups, for .status
	running    string                 // what is being committed now
	columns    []string               // the table's video columns, as last read
	stats      Stats
	lastErr    string
	retryAt    time.Time
}

// observation is when an entry was last seen to change.
type observation struct {
	fp    string
	since time.Time
}

// New makes a stager; Run starts it.
func New(opts Options) (*Stager, error) {
	if opts.Settle <= 0 {
		opts.Settle = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Stager{
		opts: opts, log: opts.Logger.With("dir", opts.Mode.String(), "staging", opts.Dir),
		kick: make(chan struct{}, 1), inodes: map[uint64]*inodeState{}, releasedCh: make(chan struct{}),
		seen: map[string]observation{}, problems: map[string]*problem{},
	}
	for _, d := range []string{opts.Dir, opts.WorkDir, s.batchDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
	}
	// The room the journal of add commits needs is taken now, before user
	// data can fill the disk; if the disk is full already, the first
	// commit tries again.
	if opts.Mode == Add {
		if err := s.reserveJournal(); err != nil {
			s.log.Warn("no room for the journal yet", "err", err)
		}
	}
	s.removeOldErrorFiles()
	return s, nil
}

// removeOldErrorFiles deletes the NAME.error files earlier versions wrote
// into the staging directory; error files are now kept in memory and
// worked out again.
func (s *Stager) removeOldErrorFiles() {
	des, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return
	}
	for _, de := range des {
		if de.Type().IsRegular() && IsErrorFile(de.Name()) {
			os.Remove(filepath.Join(s.opts.Dir, de.Name()))
		}
	}
}

// Dir is the staging directory.
func (s *Stager) Dir() string { return s.opts.Dir }

// Mode is what the stager does with what it receives.
func (s *Stager) Mode() Mode { return s.opts.Mode }

// Run settles and commits until ctx ends. It first finishes what a
// crashed predecessor left in the journal.
func (s *Stager) Run(ctx context.Context) {
	tick := time.NewTicker(max(s.opts.Settle/4, 50*time.Millisecond))
	defer tick.Stop()
	for {
		s.mu.Lock()
		wait := time.Now().Before(s.retryAt)
		s.mu.Unlock()
		if !wait {
			s.step(ctx, false)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.kick:
		}
	}
}

// Kick asks for a look at the directory now (after a close or rename).
func (s *Stager) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Limited tells whether the staging area has a size limit.
func (s *Stager) Limited() bool { return s.opts.LimitBytes > 0 }

// Grow reserves room for delta more bytes, or returns ErrNoSpace.
func (s *Stager) Grow(delta int64) error {
	if s.opts.LimitBytes <= 0 || delta <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stats.Staged+delta > s.opts.LimitBytes {
		return ErrNoSpace
	}
	s.stats.Staged += delta
	return nil
}

// Stats returns the counters.
func (s *Stager) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	for _, in := range s.inodes {
		if in.handles > 0 {
			st.Writing++
		}
	}
	return st
}

// CommitNow commits every group that nobody is writing, settled or not,
// including videos without a sidecar (their rows are empty). It returns
// once done; groups that fail get their error files as usual.
func (s *Stager) CommitNow(ctx context.Context) error {
	s.awaitReleases(ctx)
	return s.step(ctx, true)
}

// entry is one top-level item of the staging directory.
type entry struct {
	name    string
	kind    kind
	group   string
	fp      string
	files   []stagedFile // the file, or an image folder's files
	size    int64
	settled bool
	open    bool
}

// stagedFile is one file of an entry, by inode.
type stagedFile struct {
	ino  uint64
	name string // relative to the staging directory
}

// group is what commits together: the entries of one base name.
type group struct {
	name    string
	entries []*entry
	// ready: every entry settled (or, for CommitNow, not open).
	ready bool
	fp    string
}

func (g *group) of(k kind) []*entry {
	var out []*entry
	for _, e := range g.entries {
		if e.kind == k {
			out = append(out, e)
		}
	}
	return out
}

// scan reads the directory and updates what was seen when. An entry is
// settled when none of its files is open and nothing about it changed for
// the settle time, counted from its last change or its last close,
// whichever came later.
func (s *Stager) scan(now time.Time) ([]*entry, error) {
	des, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	var out []*entry
	var total int64
	present := map[string]bool{}
	inos := map[uint64]bool{}
	for _, de := range des {
		k, grp := classify(de.Name(), de.IsDir())
		e := &entry{name: de.Name(), kind: k, group: grp}
		path := filepath.Join(s.opts.Dir, de.Name())
		if de.IsDir() {
			if err := s.fingerprintDir(path, e); err != nil {
				continue // vanished meanwhile
			}
			if k == kindImages && isDataset(path) {
				e.kind = kindDataset
			}
		} else if err := fingerprintFile(path, e); err != nil {
			continue
		}
		total += e.size
		for _, f := range e.files {
			inos[f.ino] = true
		}
		if k == kindIgnored {
			continue
		}
		present[e.name] = true
		out = append(out, e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Staged = total
	s.forgetInodes(inos)
	for name := range s.seen {
		if !present[name] {
			delete(s.seen, name)
		}
	}
	for _, e := range out {
		obs, ok := s.seen[e.name]
		if !ok || obs.fp != e.fp {
			obs = observation{fp: e.fp, since: now}
			s.seen[e.name] = obs
		}
		quiet := obs.since
		for _, f := range e.files {
			if st := s.inodes[f.ino]; st != nil {
				e.open = e.open || st.handles > 0
				if st.released.After(quiet) {
					quiet = st.released
				}
			}
		}
		e.settled = !e.open && now.Sub(quiet) >= s.opts.Settle
	}
	return out, nil
}

func fingerprintFile(path string, e *entry) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		e.kind = kindUnknown
	}
	e.files = []stagedFile{{ino: st.Ino, name: e.name}}
	e.size = st.Size
	e.fp = fmt.Sprintf("%d:%d:%d.%d", st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
	return nil
}

// fingerprintDir covers a folder's files, however deep (an image folder
// is one level, a LeRobot dataset several), so that a folder still being
// copied into is neither settled nor closed.
func (s *Stager) fingerprintDir(path string, e *entry) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	var b strings.Builder
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a subfolder vanished meanwhile: its files are gone
		}
		rel, _ := filepath.Rel(path, p)
		sub := entry{name: filepath.ToSlash(rel)}
		if err := fingerprintFile(p, &sub); err != nil {
			return nil
		}
		for _, f := range sub.files {
			e.files = append(e.files, stagedFile{ino: f.ino, name: e.name + "/" + f.name})
		}
		e.size += sub.size
		fmt.Fprintf(&b, "%s=%s;", sub.name, sub.fp)
		return nil
	})
	e.fp = b.String()
	return nil
}

// isDataset tells whether a staged folder is a LeRobot dataset.
func isDataset(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(lerobot.InfoPath)))
	return err == nil && st.Mode().IsRegular()
}

// groups gathers entries by base name. Video files NAME.COLUMN.mp4 of a
// table with several video columns belong to NAME.
func groups(entries []*entry, videoColumns []string, now bool) []*group {
	by := map[string]*group{}
	for _, e := range entries {
		name := e.group
		if e.kind == kindVideo && len(videoColumns) > 1 {
			if base, col, ok := cutColumn(name); ok && contains(videoColumns, col) {
				name = base
			}
		}
		g := by[name]
		if g == nil {
			g = &group{name: name, ready: true}
			by[name] = g
		}
		g.entries = append(g.entries, e)
		if now {
			g.ready = g.ready && !e.open
		} else {
			g.ready = g.ready && e.settled
		}
	}
	out := make([]*group, 0, len(by))
	for _, g := range by {
		sort.Slice(g.entries, func(i, j int) bool { return g.entries[i].name < g.entries[j].name })
		var fp strings.Builder
		for _, e := range g.entries {
			fp.WriteString(e.name + "=" + e.fp + ";")
		}
		g.fp = fp.String()
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func anySettled(entries []*entry) bool {
	for _, e := range entries {
		if e.settled {
			return true
		}
	}
	return false
}

func anyReady(gs []*group) bool {
	for _, g := range gs {
		if g.ready {
			return true
		}
	}
	return false
}

func cutColumn(name string) (base, column string, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return "", "", false
	}
	return name[:i], name[i+1:], true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// step looks at the directory once and commits what is ready.
func (s *Stager) step(ctx context.Context, now bool) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if !s.recovered {
		if err := s.recoverJournal(ctx); err != nil {
			s.transient(fmt.Errorf("recovering the ingest journal: %w", err))
			return err
		}
		s.recovered = true
	}
	entries, err := s.scan(time.Now())
	if err != nil {
		s.transient(err)
		return err
	}
	if len(entries) == 0 {
		s.forgetStale(nil)
		s.setStatus(nil)
		return nil
	}
	if !now && !anySettled(entries) {
		// Nothing can commit yet: spare the table a schema read (a LIST
		// on S3) at every tick of a long upload.
		s.mu.Lock()
		columns := s.columns
		s.mu.Unlock()
		gs := groups(entries, columns, false)
		s.forgetStale(gs)
		s.setStatus(gs)
		return nil
	}
	tbl, err := s.opts.Table(ctx)
	if err != nil {
		s.transient(err)
		return err
	}
	schema, err := tbl.LatestSchema(ctx)
	if err != nil {
		s.transient(err)
		return err
	}
	s.mu.Lock()
	s.columns = schema.VideoColumns
	s.mu.Unlock()
	gs := groups(entries, schema.VideoColumns, now)
	s.forgetStale(gs)
	s.failIncomplete(gs)
	s.setStatus(gs)
	if s.opts.Mode == Replace {
		err = s.commitReplace(ctx, tbl, schema, gs, now)
	} else {
		err = s.commitAdd(ctx, tbl, schema, gs, now)
	}
	// Show what is left, with the problems just found. Only ready groups
	// are committed or failed, so without one nothing changed.
	if anyReady(gs) {
		if entries, serr := s.scan(time.Now()); serr == nil {
			gs := groups(entries, schema.VideoColumns, now)
			s.forgetStale(gs)
			s.setStatus(gs)
		}
	}
	return err
}

// transient records an error that is not the input's fault (storage
// down, say): nothing is marked failed and the stager retries later.
func (s *Stager) transient(err error) {
	s.log.Warn("will retry", "err", err)
	s.mu.Lock()
	s.lastErr = fmt.Sprintf("%s: %v", time.Now().UTC().Format(time.RFC3339), err)
	s.retryAt = time.Now().Add(max(s.opts.Settle, 2*time.Second))
	s.mu.Unlock()
}

// done removes a committed group's files (those still the ones that
// were committed) and forgets its problem.
func (s *Stager) done(g *group, entries []*entry) {
	for _, e := range entries {
		path := filepath.Join(s.opts.Dir, e.name)
		var fresh entry
		var err error
		if e.kind == kindImages || e.kind == kindDataset {
			err = s.fingerprintDir(path, &fresh)
		} else {
			err = fingerprintFile(path, &fresh)
		}
		if err != nil || !sameFiles(e.fp, fresh.fp) {
			continue // changed since: a new version to stage, not ours to delete
		}
		os.RemoveAll(path)
	}
	s.mu.Lock()
	delete(s.problems, g.name)
	s.mu.Unlock()
}

func (s *Stager) committed(snap *table.Snapshot, what string) {
	line := fmt.Sprintf("%s snapshot %d: %s", snap.Time.UTC().Format(time.RFC3339), snap.ID, what)
	s.log.Info("committed", "snapshot", snap.ID, "what", what)
	s.mu.Lock()
	s.stats.Commits++
	s.history = append(s.history, line)
	if len(s.history) > 10 {
		s.history = s.history[len(s.history)-10:]
	}
	s.lastErr = ""
	s.mu.Unlock()
	if s.opts.Committed != nil {
		s.opts.Committed(snap)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
