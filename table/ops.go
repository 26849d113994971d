package table

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/framefs/framefs/table/input"
	"golang.org/x/sync/errgroup"
)

// VideoFile is a video to store for one video column of an episode.
type VideoFile struct {
	// Path is the file to read, or an S3 object (s3://BUCKET/KEY, read
	// with the table's Options.Inputs); it is streamed, never loaded
	// whole.
	Path string
	// Offset and Length select the byte range of Path that holds the
	// video (a video inside a pack or an archive); Length 0 means to the
	// end. A range that does not fit is refused.
	Offset, Length int64
	// FirstFrame is the video frame ordinal of the episode's first row.
	FirstFrame int64
}

// describe names the video in messages: its path and range.
func (vf VideoFile) describe() string {
	return vf.Path + input.Range{Offset: vf.Offset, Length: vf.Length}.String()
}

// EpisodeInput is one episode to add: its videos and its rows.
type EpisodeInput struct {
	// Episode is the episode id. Empty: the sidecar's episode column, else
	// the base name of the (first) video file.
	Episode string
	// Videos maps each video column to its file. A table with a single
	// video column also accepts the key "".
	Videos map[string]VideoFile
	// Sidecar holds the frame rows. Nil: one row per frame from
	// FirstFrame, with null user columns (which must then be nullable).
	Sidecar *Sidecar
}

// AddOptions tune AddEpisodes.
type AddOptions struct {
	// NoSizes skips computing per-frame image sizes at ingest (faster;
	// mounts then compute sizes when first needed).
	NoSizes bool
	// AllowNewColumns adds sidecar columns the schema does not have, as
	// nullable columns of a new schema version, instead of failing.
	AllowNewColumns bool
	// ReuseStoredVideos references a payload the head snapshot already
	// stores when a local video's bytes (SHA-256) equal it, instead of
	// storing the video again; the video is then read once, to hash it,
	// and not indexed or sized. Imports that commit the episodes of one
	// shared video file over several commits use it so that the file is
	// stored once. S3 inputs are hashed only while they are stored, so
	// they are stored again.
	ReuseStoredVideos bool
	// Progress, when set, is told after each video is checked (hashed,
	// indexed and sized) and once the commit is written.
	Progress func(step string, done, total int)
}

// AddEpisodes stores new episodes in one commit ("add videos"). Every
// input is validated before anything is written; nothing is committed if
// any episode is bad, and an episode that already exists is an error.
func (t *Table) AddEpisodes(ctx context.Context, inputs []EpisodeInput, opts AddOptions) (*Snapshot, error) {
	if len(inputs) == 0 {
		return nil, fmt.Errorf("%w: no episodes to add", ErrInvalidInput)
	}
	schema, err := t.LatestSchema(ctx)
	if err != nil {
		return nil, err
	}
	if opts.AllowNewColumns {
		var sidecars []*Sidecar
		for _, in := range inputs {
			sidecars = append(sidecars, in.Sidecar)
		}
		if schema, err = t.evolveFor(ctx, schema, sidecars); err != nil {
			return nil, err
		}
	}
	type staged struct {
		id     string
		rows   []Row
		part   map[string]string
		videos map[string]*preparedVideo
		first  map[string]int64
		source map[string]string
	}
	var all []staged
	seen := map[string]bool{}
	checked := 0
	var stored map[string]VideoRef
	if opts.ReuseStoredVideos {
		if stored, err = t.storedPayloads(ctx); err != nil {
			return nil, err
		}
	}
	prep := t.prepareAll(ctx, schema, inputs, !opts.NoSizes, stored)
	defer prep.stop()
	for i, in := range inputs {
		st := staged{videos: map[string]*preparedVideo{}, first: map[string]int64{}, source: map[string]string{}}
		videos, err := normalizeVideos(schema, in.Videos)
		if err != nil {
			return nil, inputError(i, in, err)
		}
		st.id, err = episodeID(schema, in)
		if err != nil {
			return nil, inputError(i, in, err)
		}
		if err := CheckName("episode", st.id); err != nil {
			return nil, inputError(i, in, err)
		}
		if seen[st.id] {
			return nil, inputError(i, in, fmt.Errorf("%w: episode %q appears twice in one commit", ErrInvalidInput, st.id))
		}
		seen[st.id] = true
		minFrames := int64(-1)
		for _, col := range schema.VideoColumns {
			vf := videos[col]
			if vf.FirstFrame < 0 {
				return nil, inputError(i, in, fmt.Errorf("%w: episode %q: first frame %d is negative", ErrInvalidInput, st.id, vf.FirstFrame))
			}
			pv, err := prep.get(vf)
			if err != nil {
				return nil, inputError(i, in, fmt.Errorf("episode %q: %w", st.id, err))
			}
			checked++
			if opts.Progress != nil {
				opts.Progress("checking videos", checked, len(inputs)*len(schema.VideoColumns))
			}
			st.videos[col], st.first[col], st.source[col] = pv, vf.FirstFrame, filepath.Base(vf.Path)
			avail := pv.frames() - vf.FirstFrame
			if avail <= 0 {
				return nil, inputError(i, in, fmt.Errorf("%w: episode %q: %s has %d frames, first frame %d is past its end",
					ErrInvalidInput, st.id, filepath.Base(vf.Path), pv.frames(), vf.FirstFrame))
			}
			if minFrames < 0 || avail < minFrames {
				minFrames = avail
			}
		}
		if in.Sidecar != nil {
			st.rows, err = in.Sidecar.Rows(schema)
			if err != nil {
				return nil, inputError(i, in, err)
			}
			if int64(len(st.rows)) > minFrames {
				return nil, inputError(i, in, fmt.Errorf("%w: %s has %d rows but the video has only %d frames from frame %d",
					ErrInvalidInput, in.Sidecar.Name, len(st.rows), minFrames+videos[schema.VideoColumns[0]].FirstFrame, videos[schema.VideoColumns[0]].FirstFrame))
			}
			if len(st.rows) == 0 {
				return nil, inputError(i, in, fmt.Errorf("%w: %s has no rows", ErrInvalidInput, in.Sidecar.Name))
			}
		} else {
			st.rows, err = nullRows(schema, minFrames)
			if err != nil {
				return nil, inputError(i, in, fmt.Errorf("episode %q: %w", st.id, err))
			}
		}
		if st.part, err = partitionValues(schema, st.id, st.rows); err != nil {
			return nil, inputError(i, in, err)
		}
		all = append(all, st)
	}

	// Pack every video of the commit, in episode order.
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	var prepared []*preparedVideo
	for _, st := range all {
		for _, col := range schema.VideoColumns {
			prepared = append(prepared, st.videos[col])
		}
	}
	lay := t.planPacks(prepared, schema.PackTargetBytes)
	dataKey := newObjectKey(prefixData, ".parquet")
	now := t.opts.Now().UTC()
	var entries []EpisodeEntry
	var epRows []episodeRows
	ch := change{kind: KindAppend, schemaID: schema.ID}
	for i, st := range all {
		refs := map[string]VideoRef{}
		for c, col := range schema.VideoColumns {
			ref := lay.refs[i*len(schema.VideoColumns)+c]
			ref.FirstFrame, ref.SourceName = st.first[col], st.source[col]
			refs[col] = ref
		}
		entries = append(entries, EpisodeEntry{
			Episode: st.id, Partition: st.part, Rows: int64(len(st.rows)), FirstRowID: -1,
			DataFile: dataKey, RowGroup: i, SchemaID: schema.ID, Videos: refs, Time: now,
			Stats: episodeStats(schema, st.rows),
		})
		epRows = append(epRows, episodeRows{episode: st.id, rows: st.rows, videos: refs})
		ch.mustBeNew = append(ch.mustBeNew, st.id)
		ch.summary.EpisodesAdded++
		ch.summary.FramesAdded += int64(len(st.rows))
	}
	// The rows need only where the videos will be: write them while the
	// packs stream (mostly waiting on the disk or the network).
	var written int64
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		written, err = t.writePlannedPacks(gctx, lay.plans)
		return err
	})
	g.Go(func() error { return t.putData(gctx, dataKey, schema, epRows) })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// Payloads hashed while they were packed (S3 inputs) have their
	// SHA-256 now.
	for i := range entries {
		for c, col := range schema.VideoColumns {
			ref := entries[i].Videos[col]
			ref.SHA256 = lay.sha256(i*len(schema.VideoColumns) + c)
			entries[i].Videos[col] = ref
		}
	}
	ch.added = entries
	ch.summary.BytesAdded = written
	ch.reused = reusedObjects(prepared)
	snap, err := t.commit(ctx, ch)
	if err == nil && opts.Progress != nil {
		opts.Progress("committed", checked, checked)
	}
	return snap, err
}

// putData writes a data file and its chunk index.
func (t *Table) putData(ctx context.Context, key string, schema *Schema, eps []episodeRows) error {
	md, err := writeDataFile(ctx, func(r io.Reader) error {
		_, err := t.store.Put(ctx, key, r)
		return err
	}, schema, eps)
	if err != nil {
		return err
	}
	if ix := encodeChunkIndex(md); ix != nil {
		if err := t.store.PutIfAbsent(ctx, chunkIndexKey(key), ix); err != nil {
			return fmt.Errorf("write chunk index of %s: %w", key, err)
		}
	}
	return nil
}

func normalizeVideos(s *Schema, in map[string]VideoFile) (map[string]VideoFile, error) {
	out := map[string]VideoFile{}
	for col, vf := range in {
		if col == "" {
			if len(s.VideoColumns) != 1 {
				return nil, fmt.Errorf("%w: the table has video columns %s; name the column of each video",
					ErrInvalidInput, strings.Join(s.VideoColumns, ", "))
			}
			col = s.VideoColumns[0]
		}
		if !s.IsVideoColumn(col) {
			return nil, fmt.Errorf("%w: %q is not a video column (the table has %s)", ErrInvalidInput, col, strings.Join(s.VideoColumns, ", "))
		}
		out[col] = vf
	}
	for _, col := range s.VideoColumns {
		if _, ok := out[col]; !ok {
			return nil, fmt.Errorf("%w: no video for column %q", ErrInvalidInput, col)
		}
	}
	return out, nil
}

// episodeID picks an episode's id: given, from the sidecar, or from the
// first video's base name without extension.
func episodeID(s *Schema, in EpisodeInput) (string, error) {
	if in.Episode != "" {
		return in.Episode, nil
	}
	if in.Sidecar != nil {
		id, err := in.Sidecar.EpisodeID(s)
		if err != nil || id != "" {
			return id, err
		}
	}
	for _, col := range s.VideoColumns {
		for k, vf := range in.Videos {
			if k == col || k == "" {
				base := filepath.Base(vf.Path)
				return strings.TrimSuffix(base, filepath.Ext(base)), nil
			}
		}
	}
	return "", fmt.Errorf("%w: cannot tell the episode id", ErrInvalidInput)
}

// nullRows makes n rows with every user column null.
func nullRows(s *Schema, n int64) ([]Row, error) {
	for _, c := range s.Columns {
		if !c.Nullable {
			return nil, fmt.Errorf("%w: no sidecar, and column %q is not nullable: give the frame rows in a sidecar", ErrInvalidInput, c.Name)
		}
	}
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{}
		for _, c := range s.Columns {
			rows[i][c.Name] = nil
		}
	}
	return rows, nil
}

// partitionValues checks that partition columns hold one value per
// episode and returns them as strings.
func partitionValues(s *Schema, episode string, rows []Row) (map[string]string, error) {
	if len(s.PartitionColumns) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, p := range s.PartitionColumns {
		var first any
		for i, r := range rows {
			v := r[p]
			if v == nil {
				return nil, fmt.Errorf("%w: episode %q row %d: partition column %q is null", ErrInvalidInput, episode, i+1, p)
			}
			if i == 0 {
				first = v
			} else if v != first {
				return nil, fmt.Errorf("%w: episode %q row %d: partition column %q is %v, earlier rows %v; one episode has one partition",
					ErrInvalidInput, episode, i+1, p, v, first)
			}
		}
		str := fmt.Sprint(first)
		if err := CheckName("partition value", str); err != nil {
			return nil, fmt.Errorf("episode %q: %w", episode, err)
		}
		if folder := len(p) + 1 + len(str); folder > MaxFileName {
			return nil, fmt.Errorf("%w: episode %q: partition folder %s=%.40q... would be %d bytes long, more than the %d a file name may have; use shorter values",
				ErrInvalidName, episode, p, str, folder, MaxFileName)
		}
		out[p] = str
	}
	return out, nil
}

// UpdateRows replaces the non-video columns of an episode's rows with the
// sidecar's (same number of rows or fewer; the video stays as it is).
func (t *Table) UpdateRows(ctx context.Context, episode string, sc *Sidecar) (*Snapshot, error) {
	head, schema, cur, err := t.current(ctx, episode)
	if err != nil {
		return nil, err
	}
	rows, err := sc.Rows(schema)
	if err != nil {
		return nil, err
	}
	if id, err := sc.EpisodeID(schema); err != nil {
		return nil, err
	} else if id != "" && id != episode {
		return nil, fmt.Errorf("%w: %s names episode %q, not %q", ErrInvalidInput, sc.Name, id, episode)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: %s has no rows", ErrInvalidInput, sc.Name)
	}
	for col, ref := range cur.Videos {
		if avail := ref.Frames - ref.FirstFrame; int64(len(rows)) > avail {
			return nil, fmt.Errorf("%w: %s has %d rows but video %q has only %d frames from frame %d",
				ErrInvalidInput, sc.Name, len(rows), col, ref.Frames, ref.FirstFrame)
		}
	}
	return t.rewriteEpisode(ctx, head, schema, cur, rows, cur.Videos, KindUpdate, 0)
}

// ReplaceVideo stores a new video for one video column of an existing
// episode; rows keep their order and values and take consecutive frames
// from firstFrame of the new video, which must have enough frames.
func (t *Table) ReplaceVideo(ctx context.Context, episode, column string, vf VideoFile, opts AddOptions) (*Snapshot, error) {
	head, schema, cur, err := t.current(ctx, episode)
	if err != nil {
		return nil, err
	}
	column = singleColumn(schema, column)
	if !schema.IsVideoColumn(column) {
		return nil, fmt.Errorf("%w: %q is not a video column (the table has %s)", ErrInvalidInput, column, strings.Join(schema.VideoColumns, ", "))
	}
	pv, err := t.prepareVideo(ctx, vf, schema.Image, !opts.NoSizes, nil)
	if err != nil {
		return nil, err
	}
	if avail := pv.frames() - vf.FirstFrame; avail < cur.Rows {
		return nil, fmt.Errorf("%w: %s has %d frames from frame %d, the episode has %d rows",
			ErrInvalidInput, filepath.Base(vf.Path), max(avail, 0), vf.FirstFrame, cur.Rows)
	}
	rows, err := t.readRows(ctx, cur, schema)
	if err != nil {
		return nil, err
	}
	packed, written, err := t.writePacks(ctx, []*preparedVideo{pv}, schema.PackTargetBytes)
	if err != nil {
		return nil, err
	}
	refs := map[string]VideoRef{}
	for k, v := range cur.Videos {
		refs[k] = v
	}
	ref := packed[0]
	ref.FirstFrame, ref.SourceName = vf.FirstFrame, filepath.Base(vf.Path)
	refs[column] = ref
	return t.rewriteEpisode(ctx, head, schema, cur, rows, refs, KindReplace, written)
}

func singleColumn(s *Schema, column string) string {
	if column == "" && len(s.VideoColumns) == 1 {
		return s.VideoColumns[0]
	}
	return column
}

// DeleteEpisode removes an episode from the table's next snapshot (older
// snapshots keep it until they expire).
func (t *Table) DeleteEpisode(ctx context.Context, episode string) (*Snapshot, error) {
	head, schema, cur, err := t.current(ctx, episode)
	if err != nil {
		return nil, err
	}
	return t.commit(ctx, change{
		kind: KindDelete, schemaID: schema.ID, removed: []string{episode},
		base: head.ID, touched: []string{episode},
		summary: Summary{EpisodesRemoved: 1, FramesRemoved: cur.Rows},
	})
}

// current returns the head, its schema and an episode's entry in it.
func (t *Table) current(ctx context.Context, episode string) (*Snapshot, *Schema, EpisodeEntry, error) {
	if err := CheckName("episode", episode); err != nil {
		return nil, nil, EpisodeEntry{}, err
	}
	head, err := t.Resolve(ctx, 0, "")
	if err != nil {
		return nil, nil, EpisodeEntry{}, err
	}
	schema, err := t.LatestSchema(ctx)
	if err != nil {
		return nil, nil, EpisodeEntry{}, err
	}
	cur, err := t.Episode(ctx, head, episode)
	if err != nil {
		return nil, nil, EpisodeEntry{}, err
	}
	return head, schema, cur, nil
}

// rewriteEpisode commits a new version of an episode: new rows and video
// references, the same row ids.
func (t *Table) rewriteEpisode(ctx context.Context, head *Snapshot, schema *Schema, cur EpisodeEntry, rows []Row,
	videos map[string]VideoRef, kind CommitKind, bytesAdded int64) (*Snapshot, error) {
	part, err := partitionValues(schema, cur.Episode, rows)
	if err != nil {
		return nil, err
	}
	dataKey := newObjectKey(prefixData, ".parquet")
	if err := t.putData(ctx, dataKey, schema, []episodeRows{{episode: cur.Episode, rows: rows, videos: videos}}); err != nil {
		return nil, err
	}
	entry := cur
	entry.Partition, entry.Rows, entry.DataFile, entry.RowGroup = part, int64(len(rows)), dataKey, 0
	entry.SchemaID, entry.Videos, entry.Time = schema.ID, videos, t.opts.Now().UTC()
	entry.Stats = episodeStats(schema, rows)
	if int64(len(rows)) > cur.Rows {
		entry.FirstRowID = -1 // more rows than ids reserved: take new ones
	}
	sum := Summary{EpisodesUpdated: 1, BytesAdded: bytesAdded}
	return t.commit(ctx, change{
		kind: kind, schemaID: schema.ID, added: []EpisodeEntry{entry}, removed: []string{cur.Episode},
		base: head.ID, touched: []string{cur.Episode}, summary: sum,
	})
}

// AddImagesAsVideo stores an ordered set of images as one episode ("add
// images as video"): encode (the caller's FFmpeg encoder) writes them to a
// temporary MP4, which is then added like any video. With a sidecar, the
// image and row counts must match. Nothing is committed and no temporary
// file is left behind on any error.
func (t *Table) AddImagesAsVideo(ctx context.Context, episode string, images []string, sc *Sidecar,
	encode func(ctx context.Context, out string) error, opts AddOptions) (*Snapshot, error) {
	if len(images) == 0 {
		return nil, fmt.Errorf("%w: no images", ErrInvalidInput)
	}
	if episode == "" {
		// The temporary file's name must not become the episode id.
		return nil, fmt.Errorf("%w: give the episode id of the images", ErrInvalidInput)
	}
	schema, err := t.LatestSchema(ctx)
	if err != nil {
		return nil, err
	}
	if len(schema.VideoColumns) != 1 {
		return nil, fmt.Errorf("%w: the table has video columns %s; images make one video", ErrInvalidInput, strings.Join(schema.VideoColumns, ", "))
	}
	if sc != nil && len(sc.Frames) != len(images) {
		return nil, fmt.Errorf("%w: %s has %d rows for %d images", ErrInvalidInput, sc.Name, len(sc.Frames), len(images))
	}
	tmp, err := os.CreateTemp("", "framefs-images-*.mp4")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := encode(ctx, tmp.Name()); err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	in := EpisodeInput{Episode: episode, Videos: map[string]VideoFile{"": {Path: tmp.Name()}}, Sidecar: sc}
	return t.AddEpisodes(ctx, []EpisodeInput{in}, opts)
}
