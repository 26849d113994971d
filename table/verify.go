package table

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"golang.org/x/sync/errgroup"

	"github.com/framefs/framefs/internal/parquetcheck"
	"github.com/framefs/framefs/table/manifest"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// Problem is one finding of Verify.
type Problem struct {
	Snapshot int64  `json:"snapshot"`
	Object   string `json:"object"`
	Problem  string `json:"problem"`
}

// VerifyOptions tune VerifyWith.
type VerifyOptions struct {
	// Parallel is how many payloads and data files are checked at once
	// (default: twice the number of CPUs, at least 4; the checks mostly
	// wait on the store).
	Parallel int
	// Progress, when set, is told what has been checked so far about
	// once a second, and once at the end. It is called from one
	// goroutine at a time.
	Progress func(VerifyProgress)
}

// VerifyProgress counts what Verify has checked.
type VerifyProgress struct {
	// Phase is what is being checked: "metadata" (snapshots, manifests
	// and payloads), "rows" (data files) or "done".
	Phase string `json:"phase"`
	// Snapshots of SnapshotsTotal live snapshots have been read.
	Snapshots      int `json:"snapshots"`
	SnapshotsTotal int `json:"snapshots_total"`
	// Manifests counts the distinct manifests read, Episodes their
	// entries (an episode kept by several manifests counts in each).
	Manifests int   `json:"manifests"`
	Episodes  int64 `json:"episodes"`
	// Payloads counts the distinct payloads hashed, PayloadBytes their
	// bytes; Indexes the frame indexes and Sizes the sizes blocks read.
	Payloads     int64 `json:"payloads"`
	PayloadBytes int64 `json:"payload_bytes"`
	Indexes      int64 `json:"indexes"`
	Sizes        int64 `json:"sizes"`
	// DataFiles of DataFilesTotal data files have been read, and
	// RowGroups row groups decoded in them.
	DataFiles      int   `json:"data_files"`
	DataFilesTotal int   `json:"data_files_total"`
	RowGroups      int64 `json:"row_groups"`
}

// VerifyReport is what VerifyWith found and what it read to find it.
type VerifyReport struct {
	Problems []Problem
	VerifyProgress
	Elapsed time.Duration
}

// Verify checks every live snapshot (VerifyWith with default options)
// and returns the problems found (none for a healthy table).
func (t *Table) Verify(ctx context.Context) ([]Problem, error) {
	rep, err := t.VerifyWith(ctx, VerifyOptions{})
	return rep.Problems, err
}

// VerifyWith checks every live snapshot: its schema and manifest list;
// each manifest it references is intact, its summary holds of its
// entries, and its entries count what the snapshot says; each referenced
// row group of each data file exists with the entry's rows and decodes,
// and agrees with the data file's chunk index; each payload exists with
// its size and SHA-256, its frame index decodes with the entry's frame
// count and lies inside it, and its sizes blocks decode. It finally
// checks that views resolve.
//
// It streams: each manifest and data file is read once (not once per
// snapshot or per episode) and let go, payloads are hashed by Parallel
// workers as their entries are read, and what it keeps is a few bytes
// per entry (the row groups to check, and what has been checked), so a
// table of a million episodes is verified in a bounded working set.
func (t *Table) VerifyWith(ctx context.Context, opts VerifyOptions) (VerifyReport, error) {
	if opts.Parallel <= 0 {
		opts.Parallel = max(4, 2*runtime.GOMAXPROCS(0))
	}
	v := &verifier{t: t, opts: opts, start: time.Now(), manifests: map[string]manifestCount{},
		rowGroups: map[string]*fileRefs{}, seen: map[[16]byte]bool{}}
	v.progress.Phase = "metadata"
	ids, err := t.SnapshotIDs(ctx)
	if err != nil {
		return v.report(), err
	}
	v.progress.SnapshotsTotal, v.ids = len(ids), ids
	jobs := make(chan videoCheck, 4*opts.Parallel)
	var workers sync.WaitGroup
	for range opts.Parallel {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for j := range jobs {
				if ctx.Err() == nil {
					v.checkVideo(ctx, j)
				}
			}
		}()
	}
	for i, id := range ids {
		if err := ctx.Err(); err != nil {
			break
		}
		v.current = int32(i)
		v.snapshot(ctx, id, jobs)
		v.mu.Lock()
		v.progress.Snapshots++
		v.mu.Unlock()
		v.tick(false)
	}
	close(jobs)
	workers.Wait()
	if err := ctx.Err(); err != nil {
		return v.report(), err
	}
	v.checkDataFiles(ctx)
	if err := ctx.Err(); err != nil {
		return v.report(), err
	}
	if err := v.views(ctx); err != nil {
		return v.report(), err
	}
	v.progress.Phase = "done"
	v.tick(true)
	return v.report(), nil
}

// manifestCount is what a manifest holds, remembered for the other
// snapshots that list it (each with a summary of its own to check);
// failed marks one that could not be read.
type manifestCount struct {
	episodes, frames int64
	actual           *manifest.Summary
	failed           bool
}

// rowGroupRef is a row group an entry references (16 bytes: a table of a
// million episodes has a few million references): checked once per data
// file, after every manifest is read.
type rowGroupRef struct {
	rowGroup int32
	snapshot int32 // of the entry, as an index in verifier.ids
	rows     int64
}

// fileRefs are the row groups one data file's entries reference. Entries
// of one episode version in several manifests (before and after a merge)
// reference the same row group: the references are sorted and their
// repeats dropped whenever they have doubled since the last time, so
// that they take about the memory of the row groups referenced.
type fileRefs struct {
	refs      []rowGroupRef
	compacted int // len(refs) after the last compaction
}

func (f *fileRefs) add(r rowGroupRef) {
	if len(f.refs) == cap(f.refs) && len(f.refs) >= 2*max(f.compacted, 512) {
		f.refs = compactRefs(f.refs)
		f.compacted = len(f.refs)
	}
	f.refs = append(f.refs, r)
}

// compactRefs sorts references by row group and drops the repeats of a
// reference (the same row group and rows), keeping the first.
func compactRefs(refs []rowGroupRef) []rowGroupRef {
	slices.SortStableFunc(refs, func(a, b rowGroupRef) int { return cmp.Compare(a.rowGroup, b.rowGroup) })
	return slices.CompactFunc(refs, func(a, b rowGroupRef) bool { return a.rowGroup == b.rowGroup && a.rows == b.rows })
}

// videoCheck is one check of a stored video: its payload's bytes, its
// frame index, or one of its sizes blocks.
type videoCheck struct {
	kind     byte // 'p' payload, 'i' index, 's' sizes block
	ref      VideoRef
	sizes    int // the sizes block, for kind 's'
	snapshot int64
	episode  string
	column   string
}

type verifier struct {
	t     *Table
	opts  VerifyOptions
	start time.Time

	// ids are the live snapshots, in order.
	ids []int64

	// Used by the snapshot loop only:
	current   int32 // the snapshot read, as an index in ids
	manifests map[string]manifestCount
	rowGroups map[string]*fileRefs // by data file
	seen      map[[16]byte]bool    // video checks queued

	// pages lends the Parquet reader its page buffers: each column chunk
	// of each row group has its own reader, and would allocate anew.
	pages parquetcheck.Pool

	mu       sync.Mutex // guards the fields below
	problems []Problem
	progress VerifyProgress
	ticked   time.Time
}

func (v *verifier) problem(snap int64, obj string, format string, args ...any) {
	v.mu.Lock()
	v.problems = append(v.problems, Problem{Snapshot: snap, Object: obj, Problem: fmt.Sprintf(format, args...)})
	v.mu.Unlock()
}

// tick tells Progress what has been checked, at most once a second unless
// final.
func (v *verifier) tick(final bool) {
	if v.opts.Progress == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !final && time.Since(v.ticked) < time.Second {
		return
	}
	v.ticked = time.Now()
	v.opts.Progress(v.progress)
}

func (v *verifier) report() VerifyReport {
	v.mu.Lock()
	defer v.mu.Unlock()
	return VerifyReport{Problems: v.problems, VerifyProgress: v.progress, Elapsed: time.Since(v.start)}
}

// snapshot checks one snapshot's metadata and queues the checks of its
// videos.
func (v *verifier) snapshot(ctx context.Context, id int64, jobs chan<- videoCheck) {
	t := v.t
	s, err := t.Snapshot(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return // expired meanwhile
	}
	if err != nil {
		v.problem(id, snapshotKey(id), "%v", err)
		return
	}
	if _, err := t.Schema(ctx, s.SchemaID); err != nil {
		v.problem(id, schemaKey(s.SchemaID), "%v", err)
		return
	}
	layout, err := t.snapshotLayout(ctx, s)
	if err != nil {
		v.problem(id, schemaKey(s.SchemaID), "%v", err)
		return
	}
	infos, err := t.Manifests(ctx, s)
	if err != nil {
		v.problem(id, s.ManifestList, "%v", err)
		return
	}
	var episodes, frames int64
	complete := true
	for _, info := range infos {
		c, ok := v.manifests[info.Key]
		if !ok {
			c = v.manifest(ctx, id, layout, info, jobs)
			v.manifests[info.Key] = c
		}
		if info.Summary != nil && c.actual != nil {
			if err := info.Summary.Check(*c.actual); err != nil {
				v.problem(id, info.Key, "%v", err)
			}
		}
		complete = complete && !c.failed
		episodes += c.episodes
		frames += c.frames
	}
	if complete && (episodes != s.Episodes || frames != s.Frames) {
		v.problem(id, snapshotKey(id), "counts %d episodes and %d frames, its manifests hold %d and %d", s.Episodes, s.Frames, episodes, frames)
	}
}

// manifest reads one manifest and summarizes it, notes the row groups its
// entries reference and queues the checks of their videos. Its entries
// are decoded a row group's worth at a time.
func (v *verifier) manifest(ctx context.Context, snap int64, layout manifest.Layout, info ManifestInfo, jobs chan<- videoCheck) manifestCount {
	var c manifestCount
	z := manifest.NewSummarizer(layout)
	var summaryErr error
	m, err := v.t.openManifestKeeping(ctx, info.Key, layout, false)
	if err == nil {
		err = m.eachIn(ctx, nil, true, func(entries []EpisodeEntry) error {
			if summaryErr == nil {
				summaryErr = z.Add(entries...)
			}
			for i := range entries {
				v.entry(ctx, snap, &entries[i], &c, jobs)
			}
			return nil
		})
	}
	if err != nil {
		v.problem(snap, info.Key, "%v", err)
		return manifestCount{failed: true}
	}
	if info.Summary != nil {
		if summaryErr != nil {
			v.problem(snap, info.Key, "%v", summaryErr)
		} else {
			actual := z.Summary()
			c.actual = &actual
		}
	}
	v.mu.Lock()
	v.progress.Manifests++
	v.progress.Episodes += c.episodes
	v.mu.Unlock()
	v.tick(false)
	return c
}

// entry counts one entry of a manifest, notes the row group it references
// and queues the checks of its videos.
func (v *verifier) entry(ctx context.Context, snap int64, e *EpisodeEntry, c *manifestCount, jobs chan<- videoCheck) {
	c.episodes++
	c.frames += e.Rows
	if e.RowGroup < 0 || e.RowGroup > 1<<31-1 {
		v.problem(snap, e.DataFile, "episode %q: row group %d", e.Episode, e.RowGroup)
	} else {
		f := v.rowGroups[e.DataFile]
		if f == nil {
			f = &fileRefs{}
			v.rowGroups[e.DataFile] = f
		}
		f.add(rowGroupRef{rowGroup: int32(e.RowGroup), snapshot: v.current, rows: e.Rows})
	}
	for _, col := range slices.Sorted(maps.Keys(e.Videos)) {
		ref := e.Videos[col]
		v.queue(ctx, jobs, videoCheck{kind: 'p', ref: ref, snapshot: snap, episode: e.Episode, column: col})
		v.queue(ctx, jobs, videoCheck{kind: 'i', ref: ref, snapshot: snap, episode: e.Episode, column: col})
		for k := range ref.Sizes {
			v.queue(ctx, jobs, videoCheck{kind: 's', ref: ref, sizes: k, snapshot: snap, episode: e.Episode, column: col})
		}
	}
}

// queue sends a video check to the workers unless the same check was
// queued before. Checks are remembered by a 16-byte digest of what they
// depend on: the payload's place, length and SHA-256; the index's place,
// length and frame count; the sizes block's place and frame count.
func (v *verifier) queue(ctx context.Context, jobs chan<- videoCheck, j videoCheck) {
	h := sha256.New()
	put := func(s string, n ...int64) {
		binary.Write(h, binary.LittleEndian, int64(len(s)))
		io.WriteString(h, s)
		binary.Write(h, binary.LittleEndian, n)
	}
	r := j.ref
	switch j.kind {
	case 'p':
		put("p"+r.Pack+"#"+r.SHA256, r.Offset, r.Length)
	case 'i':
		put("i"+r.Pack, r.Offset, r.Length, r.IndexOffset, r.IndexLength, r.Frames)
	case 's':
		s := r.Sizes[j.sizes]
		put("s"+s.Object+"#"+s.Identity, s.Offset, s.Length, r.Frames)
	}
	var key [16]byte
	copy(key[:], h.Sum(nil))
	if v.seen[key] {
		return
	}
	v.seen[key] = true
	select {
	case jobs <- j:
	case <-ctx.Done():
	}
}

// checkVideo runs one video check.
func (v *verifier) checkVideo(ctx context.Context, j videoCheck) {
	t, ref := v.t, j.ref
	var err error
	switch j.kind {
	case 'p':
		var n int64
		n, err = t.checkPayload(ctx, ref)
		v.mu.Lock()
		v.progress.Payloads++
		v.progress.PayloadBytes += n
		v.mu.Unlock()
	case 'i':
		err = t.checkIndex(ctx, ref)
		v.mu.Lock()
		v.progress.Indexes++
		v.mu.Unlock()
	case 's':
		_, _, err = t.StoredSizes(ctx, VideoRef{Frames: ref.Frames, Sizes: ref.Sizes[j.sizes : j.sizes+1]}, ref.Sizes[j.sizes].Identity)
		v.mu.Lock()
		v.progress.Sizes++
		v.mu.Unlock()
	}
	if err != nil && ctx.Err() == nil {
		obj := ref.Pack
		if j.kind == 's' {
			obj = ref.Sizes[j.sizes].Object
		}
		v.problem(j.snapshot, obj, "episode %q video %q: %v", j.episode, j.column, err)
	}
	v.tick(false)
}

// checkPayload hashes a payload and compares its length and SHA-256 with
// the reference's; it returns the bytes read.
func (t *Table) checkPayload(ctx context.Context, ref VideoRef) (int64, error) {
	obj, err := t.store.Open(ctx, ref.Pack)
	if err != nil {
		return 0, err
	}
	defer obj.Close()
	if ref.Offset < 0 || ref.Length <= 0 || ref.Offset+ref.Length > obj.Size() {
		return 0, fmt.Errorf("%w: payload %d+%d lies outside the pack (%d bytes)", ErrCorrupt, ref.Offset, ref.Length, obj.Size())
	}
	h := sha256.New()
	n, err := io.Copy(h, contextReader{ctx, io.NewSectionReader(obj, ref.Offset, ref.Length)})
	if err != nil {
		return n, err
	}
	if n != ref.Length {
		return n, fmt.Errorf("payload is %d bytes, expected %d", n, ref.Length)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != ref.SHA256 {
		return n, fmt.Errorf("payload SHA-256 %s, expected %s", got, ref.SHA256)
	}
	return n, nil
}

// checkIndex reads a payload's frame index and checks it against the
// reference: its frame count, and samples that lie inside the payload.
func (t *Table) checkIndex(ctx context.Context, ref VideoRef) error {
	vid, err := t.OpenVideo(ctx, ref)
	if err != nil {
		return err
	}
	defer vid.Close()
	if int64(vid.Index.Frames()) != ref.Frames {
		return fmt.Errorf("index has %d frames, manifest %d", vid.Index.Frames(), ref.Frames)
	}
	return checkSamplesInside(vid.Index, ref.Length)
}

func checkSamplesInside(ix *videoidx.Index, length int64) error {
	for i, s := range ix.Samples {
		if s.Offset < 0 || s.Offset+int64(s.Size) > length {
			return fmt.Errorf("index sample %d lies outside the payload", i)
		}
	}
	return nil
}

// checkDataFiles reads every referenced data file once: the row groups
// entries reference exist with their rows and decode, and the chunk index
// agrees.
func (v *verifier) checkDataFiles(ctx context.Context) {
	files := slices.Sorted(maps.Keys(v.rowGroups))
	v.mu.Lock()
	v.progress.Phase, v.progress.DataFilesTotal = "rows", len(files)
	v.mu.Unlock()
	v.tick(true)
	g, gctx := errgroup.WithContext(ctx)
	// One data file at a time: its footer, a few hundred bytes per row
	// group, is most of what verify holds (the payloads were checked
	// while the manifests were read).
	g.SetLimit(1)
	for _, key := range files {
		refs := v.rowGroups[key].refs
		delete(v.rowGroups, key)
		g.Go(func() error {
			v.dataFile(gctx, key, refs)
			v.mu.Lock()
			v.progress.DataFiles++
			v.mu.Unlock()
			v.tick(false)
			return nil
		})
	}
	g.Wait()
}

// dataFile checks the referenced row groups of one data file.
func (v *verifier) dataFile(ctx context.Context, key string, refs []rowGroupRef) {
	// One check per row group: the first reference to it, then any that
	// disagree on its rows.
	refs = compactRefs(refs)
	first := v.ids[refs[0].snapshot]
	obj, err := v.t.store.Open(ctx, key)
	if err != nil {
		v.problem(first, key, "%v", err)
		return
	}
	defer obj.Close()
	decoded, err := v.decodeRowGroups(ctx, io.NewSectionReader(obj, 0, obj.Size()), obj.Size(), refs)
	v.mu.Lock()
	v.progress.RowGroups += decoded
	v.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		v.problem(first, key, "%v", err)
	}
	if ctx.Err() != nil {
		return
	}
	data, err := v.t.store.ReadAll(ctx, chunkIndexKey(key))
	if errors.Is(err, storage.ErrNotFound) {
		return
	}
	var ix *ChunkIndex
	if err == nil {
		ix, err = decodeChunkIndex(data)
	}
	if err != nil {
		v.problem(first, chunkIndexKey(key), "%v", err)
		return
	}
	for _, r := range refs {
		if rows, ok := ix.Rows(int(r.rowGroup)); !ok || rows != r.rows {
			v.problem(v.ids[r.snapshot], chunkIndexKey(key), "%v: row group %d does not have the manifest's %d rows", errBadChunkIndex, r.rowGroup, r.rows)
		}
	}
}

// decodeRowGroups checks that the referenced row groups exist with their
// rows and decodes every column of them; it returns how many it decoded.
// The footer's claims are checked before the reader allocates for them,
// and a reader's panic on a damaged page is an error. Values are decoded
// into buffers reused from row group to row group, and dropped: a data
// file of many small row groups costs its footer and one page at a time.
func (v *verifier) decodeRowGroups(ctx context.Context, r *io.SectionReader, size int64, refs []rowGroupRef) (decoded int64, err error) {
	defer parquetcheck.Recover(&err)
	pf, err := parquetcheck.Open(r, size, parquetcheck.Limits{Allocator: &v.pages})
	if err != nil {
		return 0, err
	}
	defer pf.Close()
	var bad []string
	var bufs levelBuffers
	for i, ref := range refs {
		if i%rowGroupsPerCheck == 0 && ctx.Err() != nil {
			return decoded, ctx.Err()
		}
		rg := int(ref.rowGroup)
		switch {
		case rg >= pf.NumRowGroups():
			bad = append(bad, fmt.Sprintf("has no row group %d (it has %d)", rg, pf.NumRowGroups()))
		case pf.MetaData().RowGroup(rg).NumRows() != ref.rows:
			bad = append(bad, fmt.Sprintf("row group %d has %d rows, the manifest says %d", rg, pf.MetaData().RowGroup(rg).NumRows(), ref.rows))
		case i > 0 && refs[i-1].rowGroup == ref.rowGroup:
		default:
			if err := decodeRowGroup(pf.RowGroup(rg), ref.rows, &bufs); err != nil {
				bad = append(bad, fmt.Sprintf("row group %d: %v", rg, err))
				continue
			}
			decoded++
		}
	}
	if len(bad) > 0 {
		if len(bad) > 3 {
			bad = append(bad[:3], fmt.Sprintf("and %d more", len(bad)-3))
		}
		return decoded, fmt.Errorf("%w: %v", ErrCorrupt, bad)
	}
	return decoded, nil
}

// rowGroupsPerCheck is how many row groups are decoded between checks of
// the context.
const rowGroupsPerCheck = 256

// levelBuffers are the buffers row groups are decoded into.
type levelBuffers struct {
	defs, reps []int16
	bools      []bool
	i32        []int32
	i64        []int64
	i96        []parquet.Int96
	f32        []float32
	f64        []float64
	bytes      []parquet.ByteArray
	fixed      []parquet.FixedLenByteArray
}

// levelBatch is how many levels are decoded at a time.
const levelBatch = 1024

// decodeRowGroup decodes every column of a row group and checks that each
// holds rows rows.
func decodeRowGroup(rg *file.RowGroupReader, rows int64, b *levelBuffers) error {
	if b.defs == nil {
		b.defs, b.reps = make([]int16, levelBatch), make([]int16, levelBatch)
	}
	for c := 0; c < rg.NumColumns(); c++ {
		cr, err := rg.Column(c)
		if err != nil {
			return err
		}
		n, err := decodeColumn(cr, b)
		if closer, ok := cr.(interface{ Close() error }); ok {
			closer.Close()
		}
		if err != nil {
			return fmt.Errorf("column %s: %v", cr.Descriptor().Path(), err)
		}
		if n != rows {
			return fmt.Errorf("column %s has %d rows, the row group %d", cr.Descriptor().Path(), n, rows)
		}
	}
	return nil
}

// decodeColumn decodes a column chunk and returns its rows.
func decodeColumn(cr file.ColumnChunkReader, b *levelBuffers) (int64, error) {
	repeated := cr.Descriptor().MaxRepetitionLevel() > 0
	switch r := cr.(type) {
	case *file.BooleanColumnChunkReader:
		return drainColumn(r.ReadBatch, &b.bools, b, repeated)
	case *file.Int32ColumnChunkReader:
		return drainColumn(r.ReadBatch, &b.i32, b, repeated)
	case *file.Int64ColumnChunkReader:
		return drainColumn(r.ReadBatch, &b.i64, b, repeated)
	case *file.Int96ColumnChunkReader:
		return drainColumn(r.ReadBatch, &b.i96, b, repeated)
	case *file.Float32ColumnChunkReader:
		return drainColumn(r.ReadBatch, &b.f32, b, repeated)
	case *file.Float64ColumnChunkReader:
		return drainColumn(r.ReadBatch, &b.f64, b, repeated)
	case *file.ByteArrayColumnChunkReader:
		return drainColumn(r.ReadBatch, &b.bytes, b, repeated)
	case *file.FixedLenByteArrayColumnChunkReader:
		return drainColumn(r.ReadBatch, &b.fixed, b, repeated)
	}
	return 0, fmt.Errorf("unsupported physical type %s", cr.Type())
}

// drainColumn reads a column chunk to its end and counts its rows: its
// levels, or those that start a row (repetition level 0) of a repeated
// column.
func drainColumn[T any](read func(int64, []T, []int16, []int16) (int64, int, error), vals *[]T, b *levelBuffers, repeated bool) (int64, error) {
	if *vals == nil {
		*vals = make([]T, levelBatch)
	}
	var rows int64
	for {
		n, _, err := read(levelBatch, *vals, b.defs, b.reps)
		if err != nil {
			return rows, err
		}
		if n == 0 {
			return rows, nil
		}
		if !repeated {
			rows += n
			continue
		}
		for _, r := range b.reps[:n] {
			if r == 0 {
				rows++
			}
		}
	}
}

// views checks that every view resolves to a snapshot with a schema.
// Whether its filter fits the schema is the query engine's to check
// (query.VerifyViews).
func (v *verifier) views(ctx context.Context) error {
	t := v.t
	views, errs, err := t.Views(ctx)
	if err != nil {
		return err
	}
	for i, view := range views {
		if errs[i] != nil {
			v.problem(0, ViewKey(view.Name), "%v", errs[i])
			continue
		}
		snap, err := t.ResolveView(ctx, view)
		if errors.Is(err, ErrNotFound) && view.Snapshot == 0 {
			continue // a table without snapshots yet
		}
		if err != nil {
			v.problem(view.Snapshot, ViewKey(view.Name), "%v", err)
			continue
		}
		if _, err := t.Schema(ctx, snap.SchemaID); err != nil {
			v.problem(snap.ID, ViewKey(view.Name), "%v", err)
		}
	}
	return nil
}
