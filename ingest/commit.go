package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/framefs/framefs/table"
)

// maxSidecarBytes bounds a sidecar read into memory: sidecars hold
// metadata, and a bigger one is a mistake, not data.
const maxSidecarBytes = 256 << 20

// pending is a group that passed the checks and goes into a commit.
type pending struct {
	g     *group
	input table.EpisodeInput
}

// maxBatch bounds the groups of one commit; the rest commit next. It
// keeps a commit's journal within its reserved room (see journal.go).
const maxBatch = 64

func (s *Stager) batchDir() string { return filepath.Join(s.opts.WorkDir, "batch") }

// clearBatch empties the batch directory, which stays: re-making it for
// every commit would need room on a disk that may be full.
func (s *Stager) clearBatch() error {
	des, err := os.ReadDir(s.batchDir())
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(s.batchDir(), 0o755)
	}
	if err != nil {
		return err
	}
	for _, de := range des {
		if err := os.RemoveAll(filepath.Join(s.batchDir(), de.Name())); err != nil {
			return err
		}
	}
	return nil
}

// commitAdd commits every ready group of an ingest directory as one
// snapshot, setting aside the groups that turn out to be bad.
func (s *Stager) commitAdd(ctx context.Context, tbl *table.Table, schema *table.Schema, gs []*group, now bool) error {
	ids, err := tbl.SnapshotIDs(ctx)
	if err != nil {
		s.transient(err)
		return err
	}
	fresh := len(ids) == 0
	var batch []*pending
	for _, g := range gs {
		if !g.ready || s.alreadyReported(g, now) {
			continue
		}
		if g.name == "" { // schema.json
			if schema, err = s.applySchema(ctx, tbl, g, fresh); err != nil {
				return err
			}
			continue
		}
		if len(g.of(kindDataset)) > 0 {
			if err := s.importDataset(ctx, tbl, g); err != nil {
				return err
			}
			continue
		}
		p, kind, problem := s.check(schema, g, now)
		if problem != "" {
			s.fail(g, kind, problem)
			continue
		}
		if p != nil {
			batch = append(batch, p)
		}
		if len(batch) == maxBatch {
			s.Kick() // the rest next
			break
		}
	}
	if len(batch) == 0 {
		return nil
	}
	opts := s.opts.AddOptions
	// A table without snapshots or columns learns them from its first sidecars.
	opts.AllowNewColumns = opts.AllowNewColumns || (fresh && len(schema.Columns) == 0)

	if err := s.clearBatch(); err != nil {
		s.transient(err)
		return err
	}
	defer s.clearBatch()
	j := journal{Started: time.Now().UTC()}
	kept := batch[:0]
	for _, p := range batch {
		if kind, problem := s.stage(ctx, s.batchDir(), p); problem != "" {
			s.fail(p.g, kind, problem)
			continue
		}
		files := map[string]string{}
		for _, e := range p.g.entries {
			files[e.name] = fpDigest(e.fp)
		}
		j.Groups = append(j.Groups, journalGroup{Episode: p.g.name, Files: files})
		kept = append(kept, p)
	}
	batch = kept
	if len(batch) == 0 {
		return nil
	}
	err = s.writeJournal(j)
	for errors.Is(err, errJournalFull) && len(batch) > 1 {
		// Names too long for the reserved room: fewer groups now, the
		// rest in the next commit.
		batch, j.Groups = batch[:len(batch)/2], j.Groups[:len(batch)/2]
		s.Kick()
		err = s.writeJournal(j)
	}
	if err != nil {
		s.transient(err)
		return err
	}
	defer s.clearJournal()
	defer s.setRunning("")
	for len(batch) > 0 {
		inputs := make([]table.EpisodeInput, len(batch))
		names := make([]string, len(batch))
		for i, p := range batch {
			inputs[i], names[i] = p.input, p.g.name
		}
		s.setRunning("adding " + strings.Join(names, ", "))
		snap, err := tbl.AddEpisodes(ctx, inputs, opts)
		if err == nil {
			for _, p := range batch {
				s.done(p.g, p.g.entries)
			}
			s.mu.Lock()
			s.stats.Episodes += int64(len(batch))
			s.mu.Unlock()
			s.committed(snap, fmt.Sprintf("added %s (%d frames)", strings.Join(names, ", "), snap.Summary.FramesAdded))
			return nil
		}
		var ie *table.InputError
		if !errors.As(err, &ie) || ctx.Err() != nil {
			s.transient(err)
			return err
		}
		bad := -1
		for i, p := range batch {
			if i == ie.Index || (ie.Index < 0 && p.g.name == ie.Episode) {
				bad = i
				break
			}
		}
		if bad < 0 {
			s.transient(err)
			return err
		}
		s.fail(batch[bad].g, problemFailed, err.Error())
		batch = append(batch[:bad], batch[bad+1:]...)
	}
	return nil
}

// check validates a group of an ingest directory without touching the
// table. A nil pending with no problem means "not yet".
func (s *Stager) check(schema *table.Schema, g *group, now bool) (*pending, problemKind, string) {
	if problem := checkKinds(g); problem != "" {
		return nil, problemFailed, problem
	}
	if err := table.CheckName("episode", g.name); err != nil {
		return nil, problemFailed, fmt.Sprintf("%q cannot be an episode id: %v", g.name, err)
	}
	videos, dirs, sidecars := g.of(kindVideo), g.of(kindImages), g.of(kindSidecar)
	if len(videos) == 0 && len(dirs) == 0 {
		return nil, problemFailed, fmt.Sprintf("%s has no video: drop %s.mp4 (or a folder %s/ of images) beside it", sidecars[0].name, g.name, g.name)
	}
	if len(videos) > 0 && len(dirs) > 0 {
		return nil, problemFailed, fmt.Sprintf("%s is both a video and a folder of images; keep one", g.name)
	}
	var sc *table.Sidecar
	if len(sidecars) == 0 {
		if !now {
			return nil, problemWaiting, fmt.Sprintf("waiting: %s has no sidecar. Drop %s.jsonl (or %s) beside it with the frame rows, or touch .commit to add it with empty rows.",
				firstMedia(videos, dirs), g.name, strings.Join(table.SidecarExtensions[1:], ", "))
		}
	} else {
		var problem string
		if sc, problem = s.readSidecar(schema, g, sidecars[0]); problem != "" {
			return nil, problemFailed, problem
		}
	}
	in := table.EpisodeInput{Episode: g.name, Videos: map[string]table.VideoFile{}, Sidecar: sc}
	if len(dirs) > 0 {
		return &pending{g: g, input: in}, 0, "" // encoded when staged
	}
	columns, problem := videoColumns(schema, g.name, videos, true)
	if problem != "" {
		return nil, problemFailed, problem
	}
	for col, e := range columns {
		in.Videos[col] = table.VideoFile{Path: e.name}
	}
	return &pending{g: g, input: in}, 0, ""
}

// firstMedia names a group's video (or image folder) for messages.
func firstMedia(videos, dirs []*entry) string {
	if len(videos) > 0 {
		return videos[0].name
	}
	return dirs[0].name + "/"
}

// checkKinds rejects what no directory accepts.
func checkKinds(g *group) string {
	var sidecars []string
	for _, e := range g.entries {
		switch e.kind {
		case kindUnknown:
			return fmt.Sprintf("%s is not a video (%s), a sidecar (%s) or a folder of images",
				e.name, strings.Join(VideoExtensions, ", "), strings.Join(table.SidecarExtensions, ", "))
		case kindSidecar:
			sidecars = append(sidecars, e.name)
		}
	}
	if len(sidecars) > 1 {
		return fmt.Sprintf("%s has several sidecars (%s); keep one", g.name, strings.Join(sidecars, ", "))
	}
	return ""
}

// videoColumns maps a group's video files to the table's video columns:
// NAME.mp4 for a table with one, NAME.COLUMN.mp4 for each of several.
// With every set (new episodes) each column needs its video; replacements
// may bring any of them.
func videoColumns(schema *table.Schema, name string, videos []*entry, every bool) (map[string]*entry, string) {
	out := map[string]*entry{}
	if len(schema.VideoColumns) == 1 {
		if len(videos) > 1 {
			return nil, fmt.Sprintf("%s has several videos (%s and %s); keep one", name, videos[0].name, videos[1].name)
		}
		out[schema.VideoColumns[0]] = videos[0]
		return out, ""
	}
	for _, e := range videos {
		_, col, ok := cutColumn(e.group)
		if !ok || !contains(schema.VideoColumns, col) {
			return nil, fmt.Sprintf("%s: the table has video columns %s; name the files %s.COLUMN%s",
				e.name, strings.Join(schema.VideoColumns, ", "), name, filepath.Ext(e.name))
		}
		out[col] = e
	}
	for _, col := range schema.VideoColumns {
		if every && out[col] == nil {
			return nil, fmt.Sprintf("%s has no video for column %s (%s.%s.mp4)", name, col, name, col)
		}
	}
	return out, ""
}

func (s *Stager) readSidecar(schema *table.Schema, g *group, e *entry) (*table.Sidecar, string) {
	if e.size > maxSidecarBytes {
		return nil, fmt.Sprintf("%s is %d bytes; sidecars hold metadata and may be at most %d bytes", e.name, e.size, maxSidecarBytes)
	}
	data, err := os.ReadFile(filepath.Join(s.opts.Dir, e.name))
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", e.name, err)
	}
	sc, err := table.ParseSidecar(e.name, data)
	if err != nil {
		return nil, err.Error()
	}
	if id, err := sc.EpisodeID(schema); err != nil {
		return nil, err.Error()
	} else if id != "" && id != g.name {
		return nil, fmt.Sprintf("%s names episode %q, but its files are named %q; rename one", e.name, id, g.name)
	}
	return sc, ""
}

// stage links a group's videos into the batch directory (so that renames
// and deletes in the staging directory cannot disturb the commit) or
// encodes its images there. A link takes no room for data, but encoding
// does, and a directory may need a new block for more names: a disk too
// full for that is no fault of the files, which are tried again later.
func (s *Stager) stage(ctx context.Context, dir string, p *pending) (problemKind, string) {
	if dirs := p.g.of(kindImages); len(dirs) > 0 {
		images, err := ListImages(filepath.Join(s.opts.Dir, dirs[0].name))
		if err != nil {
			return problemFailed, err.Error()
		}
		if sc := p.input.Sidecar; sc != nil && len(sc.Frames) != len(images) {
			return problemFailed, fmt.Sprintf("%s has %d rows for the %d images of %s/", sc.Name, len(sc.Frames), len(images), dirs[0].name)
		}
		if s.opts.EncodeImages == nil {
			return problemFailed, "this mount cannot encode images into videos"
		}
		out := filepath.Join(dir, p.g.name+".mp4")
		if err := s.opts.EncodeImages(ctx, images, out); err != nil {
			if s.outOfRoom(err) {
				s.log.Warn("no room to encode images", "folder", dirs[0].name, "err", err)
				return problemNoRoom, fmt.Sprintf("the staging disk has no room to encode the images of %s/ into a video", dirs[0].name)
			}
			return problemFailed, fmt.Sprintf("%s/: %v", dirs[0].name, err)
		}
		col := "" // the table's only video column
		p.input.Videos[col] = table.VideoFile{Path: out}
		return 0, ""
	}
	for col, vf := range p.input.Videos {
		link := filepath.Join(dir, vf.Path)
		if err := os.Link(filepath.Join(s.opts.Dir, vf.Path), link); err != nil {
			if s.outOfRoom(err) {
				s.log.Warn("no room to link a staged file", "file", vf.Path, "err", err)
				return problemNoRoom, fmt.Sprintf("the staging disk has no room to prepare the commit of %s", vf.Path)
			}
			return problemFailed, fmt.Sprintf("%s: %v", vf.Path, err)
		}
		p.input.Videos[col] = table.VideoFile{Path: link}
	}
	return 0, ""
}

// applySchema takes schema.json as the columns of a table that has no
// snapshots yet.
func (s *Stager) applySchema(ctx context.Context, tbl *table.Table, g *group, fresh bool) (*table.Schema, error) {
	path := filepath.Join(s.opts.Dir, SchemaFile)
	if !fresh {
		s.fail(g, problemFailed, SchemaFile+" only applies to a table before its first commit; this table has snapshots")
		return tbl.LatestSchema(ctx)
	}
	data, err := os.ReadFile(path)
	if err == nil {
		var sc table.Schema
		if sc, err = table.ParseSchema(data); err == nil {
			var next *table.Schema
			if next, err = tbl.Redefine(ctx, sc); err == nil {
				s.log.Info("schema defined", "schema_id", next.ID, "columns", len(next.Columns))
				s.done(g, g.entries)
				return next, nil
			}
		}
	}
	if errors.Is(err, table.ErrInvalidInput) || errors.Is(err, table.ErrInvalidName) || !errors.Is(err, os.ErrNotExist) {
		s.fail(g, problemFailed, fmt.Sprintf("%s: %v", SchemaFile, err))
		return tbl.LatestSchema(ctx)
	}
	s.transient(err)
	return nil, err
}

// commitReplace replaces videos and updates rows of existing episodes,
// one commit per change.
func (s *Stager) commitReplace(ctx context.Context, tbl *table.Table, schema *table.Schema, gs []*group, now bool) error {
	for _, g := range gs {
		if !g.ready || s.alreadyReported(g, now) {
			continue
		}
		if g.name == "" {
			s.fail(g, problemFailed, SchemaFile+" belongs in ingest/ of a table without snapshots, not in replace/")
			continue
		}
		if problem := checkKinds(g); problem != "" {
			s.fail(g, problemFailed, problem)
			continue
		}
		if len(g.of(kindImages)) > 0 {
			s.fail(g, problemFailed, g.name+"/: replace/ takes videos and sidecars, not folders of images")
			continue
		}
		if len(g.of(kindDataset)) > 0 {
			s.fail(g, problemFailed, g.name+"/ is a LeRobot dataset: drop it into ingest/ to import it")
			continue
		}
		if err := s.replaceGroup(ctx, tbl, schema, g); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stager) replaceGroup(ctx context.Context, tbl *table.Table, schema *table.Schema, g *group) error {
	videos, sidecars := g.of(kindVideo), g.of(kindSidecar)
	var sc *table.Sidecar
	if len(sidecars) > 0 {
		var problem string
		if sc, problem = s.readSidecar(schema, g, sidecars[0]); problem != "" {
			s.fail(g, problemFailed, problem)
			return nil
		}
	}
	var columns map[string]*entry
	if len(videos) > 0 {
		var problem string
		if columns, problem = videoColumns(schema, g.name, videos, false); problem != "" {
			s.fail(g, problemFailed, problem)
			return nil
		}
	}
	if err := s.clearBatch(); err != nil {
		s.transient(err)
		return err
	}
	defer s.clearBatch()
	defer s.setRunning("")
	for col, e := range columns {
		link := filepath.Join(s.batchDir(), e.name)
		if err := os.Link(filepath.Join(s.opts.Dir, e.name), link); err != nil {
			if s.outOfRoom(err) {
				s.log.Warn("no room to link a staged file", "file", e.name, "err", err)
				s.fail(g, problemNoRoom, fmt.Sprintf("the staging disk has no room to prepare the commit of %s", e.name))
				return nil
			}
			s.transient(err)
			return err
		}
		s.setRunning(fmt.Sprintf("replacing video %s of %s", col, g.name))
		snap, err := tbl.ReplaceVideo(ctx, g.name, col, table.VideoFile{Path: link}, s.opts.AddOptions)
		if err != nil {
			return s.replaceFailed(g, err)
		}
		s.done(g, []*entry{e})
		s.countEpisode()
		s.committed(snap, fmt.Sprintf("replaced video %s of %s", col, g.name))
	}
	if sc != nil {
		s.setRunning("updating the rows of " + g.name)
		snap, err := tbl.UpdateRows(ctx, g.name, sc)
		if err != nil {
			return s.replaceFailed(g, err)
		}
		s.done(g, sidecars)
		s.countEpisode()
		s.committed(snap, fmt.Sprintf("updated %d rows of %s", len(sc.Frames), g.name))
	}
	return nil
}

func (s *Stager) countEpisode() {
	s.mu.Lock()
	s.stats.Episodes++
	s.mu.Unlock()
}

// replaceFailed files an error against the group when the input is at
// fault, and retries later otherwise.
func (s *Stager) replaceFailed(g *group, err error) error {
	for _, target := range []error{table.ErrInvalidInput, table.ErrInvalidName, table.ErrNotFound, table.ErrExists, table.ErrConflict} {
		if errors.Is(err, target) {
			msg := err.Error()
			if errors.Is(err, table.ErrNotFound) {
				msg += "\nreplace/ changes existing episodes; new episodes go into ingest/"
			}
			s.fail(g, problemFailed, msg)
			return nil
		}
	}
	s.transient(err)
	return err
}

func (s *Stager) setRunning(what string) {
	s.mu.Lock()
	s.running = what
	s.mu.Unlock()
}
