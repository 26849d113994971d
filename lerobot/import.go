package lerobot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

// Schema properties the import records, so that an export can write the
// dataset's description back.
const (
	PropVersion   = "lerobot.codebase_version"
	PropFPS       = "lerobot.fps"
	PropRobotType = "lerobot.robot_type"
	PropFeatures  = "lerobot.features"
)

// Default commit bounds: a crash loses at most the commit in flight.
const (
	DefaultBatchEpisodes = 1000
	DefaultBatchFrames   = 100_000
)

// ImportOptions tune Import.
type ImportOptions struct {
	// Episodes selects the episodes to import (nil: all).
	Episodes []int64
	// TimestampTolerance is passed to Check (0: the default;
	// ExactTimestamps: none).
	TimestampTolerance float64
	// Partition names a column to partition a new table by (e.g. "task").
	Partition string
	// NoSizes skips computing frame sizes (mounts compute them later).
	NoSizes bool
	// BatchEpisodes and BatchFrames bound a commit (defaults
	// DefaultBatchEpisodes and DefaultBatchFrames): whichever is reached
	// first ends it.
	BatchEpisodes int
	BatchFrames   int64
	// Indexer counts video frames while checking; pass the table's.
	Indexer table.Indexer
	// Progress, when set, is told how far checking and importing are.
	Progress func(step string, done, total int)
	// Committed, when set, is told of each snapshot as it lands.
	Committed func(*table.Snapshot)
}

func (o ImportOptions) withDefaults() ImportOptions {
	if o.BatchEpisodes <= 0 {
		o.BatchEpisodes = DefaultBatchEpisodes
	}
	if o.BatchFrames <= 0 {
		o.BatchFrames = DefaultBatchFrames
	}
	return o
}

// Widening is a feature stored in a wider type than its dtype.
type Widening struct {
	Column string     `json:"column"`
	From   string     `json:"from"`
	To     table.Type `json:"to"`
}

// ImportResult sums up an import.
type ImportResult struct {
	Dataset string `json:"dataset"`
	Version string `json:"codebase_version"`
	// Created is set when the import created the table.
	Created bool `json:"created_table"`
	// Selected episodes; Imported now; Skipped because an earlier run
	// imported them already.
	Selected  int     `json:"episodes_selected"`
	Imported  int     `json:"episodes_imported"`
	Skipped   int     `json:"episodes_skipped"`
	Frames    int64   `json:"frames_imported"`
	Snapshots []int64 `json:"snapshots"`
	// BytesStored counts video and index bytes written (payloads already
	// in the table are not written again).
	BytesStored int64 `json:"bytes_stored"`
	// VideoFiles and VideoBytes count the dataset's video files checked.
	VideoFiles int   `json:"video_files"`
	VideoBytes int64 `json:"video_bytes"`
	// TimestampsOverDefault counts rows off by more than the default
	// tolerance; MaxTimestampError is the largest error, in seconds.
	TimestampsOverDefault int64      `json:"timestamp_rows_over_default"`
	MaxTimestampError     float64    `json:"max_timestamp_error_s"`
	Widened               []Widening `json:"widened,omitempty"`
}

// TableSchema is the schema of a table holding the dataset: one video
// column per camera (named by its key), one column per other feature
// (widened where needed), the task text next to task_index, and the
// dataset's description in the properties.
func (ds *Dataset) TableSchema(cols []Column, partition string) (table.Schema, error) {
	if len(ds.Cameras) == 0 {
		return table.Schema{}, fmt.Errorf("%s: %w: no feature has dtype \"video\"; a framefs table holds videos", ds.Dir, ErrInvalidDataset)
	}
	s := table.Schema{
		EpisodeColumn: table.DefaultEpisodeColumn,
		VideoColumns:  slices.Clone(ds.Cameras),
		Properties: map[string]string{
			PropVersion:  ds.Info.CodebaseVersion,
			PropFPS:      strconv.FormatFloat(ds.Info.FPS, 'g', -1, 64),
			PropFeatures: string(featuresJSON(ds.Info.Features)),
		},
	}
	if len(ds.Info.RobotType) > 0 {
		s.Properties[PropRobotType] = string(ds.Info.RobotType)
	}
	for _, c := range cols {
		s.Columns = append(s.Columns, table.Column{Name: c.Name, Type: c.Type})
	}
	if partition != "" {
		if _, ok := s.Column(partition); !ok {
			return table.Schema{}, fmt.Errorf("--partition %q: not a column of the dataset (%s)", partition, describeColumns(cols))
		}
		s.PartitionColumns = []string{partition}
	}
	// Column names were checked where they come from; what is left to
	// refuse comes from info.json (its features and robot type are kept
	// in the schema's properties).
	if err := s.Check(); err != nil {
		ps := newProblems(ds.Dir)
		ps.add(RuleInfo, InfoPath, -1, -1, "the table schema made from it is refused: %v", err)
		return table.Schema{}, ps.err()
	}
	return s, nil
}

// featuresJSON writes the features object back in its order.
func featuresJSON(feats []Feature) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range feats {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(f.Key)
		b.Write(key)
		b.WriteByte(':')
		var compact bytes.Buffer
		if json.Compact(&compact, f.Raw) == nil {
			b.Write(compact.Bytes())
		} else {
			b.Write(f.Raw)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// sameLayout reports how an existing table's schema differs from the one
// the import would create, or "" when rows fit it as they are.
func sameLayout(have *table.Schema, want table.Schema) string {
	if have.EpisodeColumn != want.EpisodeColumn || !slices.Equal(have.VideoColumns, want.VideoColumns) {
		return fmt.Sprintf("video columns %s (episode column %s), the dataset has cameras %s",
			strings.Join(have.VideoColumns, ", "), have.EpisodeColumn, strings.Join(want.VideoColumns, ", "))
	}
	if !slices.Equal(have.PartitionColumns, want.PartitionColumns) {
		return fmt.Sprintf("partition columns [%s], the import asks for [%s]", strings.Join(have.PartitionColumns, ", "), strings.Join(want.PartitionColumns, ", "))
	}
	if len(have.Columns) != len(want.Columns) {
		return fmt.Sprintf("%d columns, the dataset has %d", len(have.Columns), len(want.Columns))
	}
	for i, c := range want.Columns {
		if h := have.Columns[i]; h.Name != c.Name || h.Type != c.Type {
			return fmt.Sprintf("column %d is %s:%s, the dataset's is %s:%s", i+1, h.Name, h.Type, c.Name, c.Type)
		}
	}
	return ""
}

// Import checks the selected episodes of a dataset and adds them to the
// table in store, which is created when absent (see ImportInto).
func Import(ctx context.Context, ds *Dataset, store storage.Store, tblOpts table.Options, opts ImportOptions) (*ImportResult, error) {
	rep, schema, err := ds.prepareImport(ctx, opts)
	if err != nil {
		return nil, err
	}
	tbl, created, err := openOrCreate(ctx, store, schema, tblOpts)
	if err != nil {
		return nil, err
	}
	res, err := ds.importChecked(ctx, tbl, rep, schema, opts)
	if res != nil {
		res.Created = created
	}
	return res, err
}

// ImportInto checks the selected episodes of a dataset and adds them to
// an existing table, in commits of at most BatchEpisodes episodes or
// BatchFrames frames. A table without snapshots or columns takes the
// dataset's schema; any other must have its layout. Videos are stored
// byte for byte, each file once: v3.0 episodes sharing a file reference
// one payload from their own first frames. Episodes the table already
// holds (an earlier, interrupted run) are skipped, so a rerun completes
// an import without duplicating anything. Nothing is committed if the
// dataset breaks a rule (a *ValidationError).
func ImportInto(ctx context.Context, ds *Dataset, tbl *table.Table, opts ImportOptions) (*ImportResult, error) {
	rep, schema, err := ds.prepareImport(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := adoptLayout(ctx, tbl, schema); err != nil {
		return nil, err
	}
	return ds.importChecked(ctx, tbl, rep, schema, opts)
}

// prepareImport checks the selection and works out the table schema.
func (ds *Dataset) prepareImport(ctx context.Context, opts ImportOptions) (*CheckReport, table.Schema, error) {
	rep, err := ds.Check(ctx, CheckOptions{
		Episodes: opts.Episodes, TimestampTolerance: opts.TimestampTolerance, Indexer: opts.Indexer, Partition: opts.Partition,
		Progress: func(done, total int) {
			if opts.Progress != nil {
				opts.Progress("checking dataset", done, total)
			}
		},
	})
	if err != nil {
		return nil, table.Schema{}, err
	}
	schema, err := ds.TableSchema(rep.Columns, opts.Partition)
	return rep, schema, err
}

// importChecked commits the episodes of a checked selection the table
// does not hold yet.
func (ds *Dataset) importChecked(ctx context.Context, tbl *table.Table, rep *CheckReport, schema table.Schema, opts ImportOptions) (*ImportResult, error) {
	opts = opts.withDefaults()
	progress := func(step string, done, total int) {
		if opts.Progress != nil {
			opts.Progress(step, done, total)
		}
	}
	res := &ImportResult{
		Dataset: ds.Dir, Version: ds.Info.CodebaseVersion, Selected: rep.Episodes,
		VideoFiles: rep.VideoFiles, VideoBytes: rep.VideoBytes,
		TimestampsOverDefault: rep.TimestampsOverDefault, MaxTimestampError: rep.MaxTimestampError,
	}
	for _, c := range rep.Columns {
		if c.Widened {
			res.Widened = append(res.Widened, Widening{Column: c.Name, From: c.DType, To: c.Type})
		}
	}
	todo, err := ds.notYetImported(ctx, tbl, opts.Episodes)
	if err != nil {
		return nil, err
	}
	res.Skipped = res.Selected - len(todo)
	var batch []table.EpisodeInput
	var batchFrames int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		base := res.Imported
		snap, err := tbl.AddEpisodes(ctx, batch, table.AddOptions{
			NoSizes: opts.NoSizes, ReuseStoredVideos: true,
			Progress: func(step string, done, total int) {
				if step != "committed" && total > 0 {
					progress("importing", base+done*len(batch)/total, len(todo))
				}
			},
		})
		if err != nil {
			return fmt.Errorf("commit episodes %s: %w", batch[0].Episode+".."+batch[len(batch)-1].Episode, err)
		}
		res.Snapshots = append(res.Snapshots, snap.ID)
		res.Imported += len(batch)
		res.Frames += batchFrames
		res.BytesStored += snap.Summary.BytesAdded
		progress("importing", res.Imported, len(todo))
		if opts.Committed != nil {
			opts.Committed(snap)
		}
		batch, batchFrames = nil, 0
		return nil
	}
	err = ds.readEpisodes(ctx, todo, rep.Columns, func(e *Episode, frames []map[string]any) error {
		in := table.EpisodeInput{
			Episode: ID(e.Index),
			Videos:  map[string]table.VideoFile{},
			Sidecar: &table.Sidecar{Name: fmt.Sprintf("%s (episode %d)", e.DataFile, e.Index), Frames: frames},
		}
		for _, cam := range ds.Cameras {
			v := e.Videos[cam]
			in.Videos[cam] = table.VideoFile{Path: filepath.Join(ds.Dir, filepath.FromSlash(v.File)), FirstFrame: v.FirstFrame}
		}
		batch = append(batch, in)
		batchFrames += e.Length
		if len(batch) >= opts.BatchEpisodes || batchFrames >= opts.BatchFrames {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return res, err
	}
	progress("committed", res.Imported, len(todo))
	return res, nil
}

// openOrCreate opens the table in store, creating it with schema when
// there is none; an existing table must fit the dataset (adoptLayout).
func openOrCreate(ctx context.Context, store storage.Store, schema table.Schema, opts table.Options) (*table.Table, bool, error) {
	tbl, err := table.Open(ctx, store, opts)
	if errors.Is(err, table.ErrNotFound) {
		tbl, err = table.Create(ctx, store, schema, opts)
		if err == nil {
			return tbl, true, nil
		}
		if errors.Is(err, table.ErrExists) { // another import created it meanwhile
			tbl, err = table.Open(ctx, store, opts)
		}
	}
	if err != nil {
		return nil, false, err
	}
	return tbl, false, adoptLayout(ctx, tbl, schema)
}

// adoptLayout gives a table that has neither snapshots nor columns (made
// empty, to learn its columns from its first data) the dataset's schema,
// and checks that any other table has the dataset's layout.
func adoptLayout(ctx context.Context, tbl *table.Table, schema table.Schema) error {
	have, err := tbl.LatestSchema(ctx)
	if err != nil {
		return err
	}
	diff := sameLayout(have, schema)
	if diff == "" {
		return nil
	}
	if len(have.Columns) == 0 {
		ids, err := tbl.SnapshotIDs(ctx)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			_, err := tbl.Redefine(ctx, schema)
			return err
		}
	}
	return fmt.Errorf("%w: table %s does not fit the dataset: it has %s; import into a new table", table.ErrInvalidInput, tbl, diff)
}

// notYetImported returns the selected episodes the table does not hold,
// after checking that those it holds have the dataset's lengths (a table
// filled from another dataset is not resumed into).
func (ds *Dataset) notYetImported(ctx context.Context, tbl *table.Table, sel []int64) ([]int64, error) {
	eps, err := ds.Selection(sel)
	if err != nil {
		return nil, err
	}
	head, err := tbl.Head(ctx)
	if err != nil || head == nil {
		return eps, err
	}
	entries, err := tbl.Episodes(ctx, head)
	if err != nil {
		return nil, err
	}
	have := map[string]table.EpisodeEntry{}
	for _, e := range entries {
		have[e.Episode] = e
	}
	var todo []int64
	for _, i := range eps {
		e, ok := have[ID(i)]
		if !ok {
			todo = append(todo, i)
			continue
		}
		if diff := ds.differs(&ds.Episodes[i], e); diff != "" {
			return nil, fmt.Errorf("%w: table %s already has %s, but %s: not the same dataset; import into a new table", table.ErrExists, tbl, ID(i), diff)
		}
	}
	return todo, nil
}

// differs tells how a stored episode differs from the dataset's, as far
// as lengths, first frames and video file sizes show, or "".
func (ds *Dataset) differs(ep *Episode, e table.EpisodeEntry) string {
	if e.Rows != ep.Length {
		return fmt.Sprintf("it has %d rows, the dataset's episode %d has %d", e.Rows, ep.Index, ep.Length)
	}
	for _, cam := range ds.Cameras {
		ref, v := e.Videos[cam], ep.Videos[cam]
		st, err := os.Stat(filepath.Join(ds.Dir, filepath.FromSlash(v.File)))
		if err != nil || ref.Length != st.Size() || ref.FirstFrame != v.FirstFrame {
			return fmt.Sprintf("its %s video is not %s from frame %d", cam, v.File, v.FirstFrame)
		}
	}
	return ""
}

// ParseEpisodes parses an episode selection such as "0-99,120".
func ParseEpisodes(spec string) ([]int64, error) {
	var out []int64
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("episodes %q: %q is not an episode index or range (e.g. 0-99,120)", spec, part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(strings.TrimSpace(hi), 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("episodes %q: %q is not a range (e.g. 0-99)", spec, part)
			}
		}
		if b-a > 100_000_000 {
			return nil, fmt.Errorf("episodes %q: range %q is too large", spec, part)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("episodes %q: no episode selected", spec)
	}
	return out, nil
}
