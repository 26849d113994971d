package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/internal/frozentable"
	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// writeFrozenTable makes the test binary write the frozen example table
// of the current format version (`make frozen-table`). It refuses when
// that version has one: a frozen table is written once, by the version
// that introduces its format, and is never written again.
var writeFrozenTable = flag.Bool("write-frozen-table", false,
	"write testdata/format/vN, the frozen example table of the current format version, and exit (never over an existing one)")

// frozenVideo is a video of a frozen episode: a test video (path relative
// to the module root) from one of its frames.
type frozenVideo struct {
	source     string
	firstFrame int64
}

// frozenEpisode is one episode of the frozen table.
type frozenEpisode struct {
	id     string
	task   string
	rows   int
	seed   int
	videos map[string]frozenVideo // by video column
}

// The test videos of the frozen table. Two episodes cut from one file
// share its payload (within a commit, and across commits by
// ReuseStoredVideos); h264_editlist.mp4 has an edit list that hides
// samples, so its frame ordinals are not its sample order.
const (
	frozenFront    = "testdata/video/h264_bframes_gop30.mp4"
	frozenWrist    = "testdata/video/h264_gop250.mp4"
	frozenEditList = "testdata/video/h264_editlist.mp4"
)

// The two commits of the frozen table.
var frozenCommits = [][]frozenEpisode{
	{
		{id: "ep-a", task: "pick", rows: 12, seed: 1, videos: map[string]frozenVideo{"front": {frozenFront, 0}, "wrist": {frozenWrist, 0}}},
		{id: "ep-b", task: "pick", rows: 12, seed: 2, videos: map[string]frozenVideo{"front": {frozenFront, 40}, "wrist": {frozenWrist, 100}}},
		{id: "ep-c", task: "place", rows: 10, seed: 3, videos: map[string]frozenVideo{"front": {frozenEditList, 5}, "wrist": {frozenWrist, 200}}},
	},
	{
		{id: "ep-d", task: "place", rows: 8, seed: 4, videos: map[string]frozenVideo{"front": {frozenFront, 70}, "wrist": {frozenWrist, 250}}},
	},
}

// frozenSchema covers every column type, nulls, lists and a partition
// column, with two video columns.
func frozenSchema() table.Schema {
	return table.Schema{
		EpisodeColumn:    "episode_id",
		VideoColumns:     []string{"front", "wrist"},
		PartitionColumns: []string{"task"},
		Columns: []table.Column{
			{Name: "task", Type: "string"},
			{Name: "ts", Type: "timestamp"},
			{Name: "step", Type: "int32"},
			{Name: "speed", Type: "float32"},
			{Name: "reward", Type: "float64", Nullable: true},
			{Name: "label", Type: "string", Nullable: true},
			{Name: "grasp", Type: "bool", Nullable: true},
			{Name: "count", Type: "int64", Nullable: true},
			{Name: "state", Type: "list<float32>", Nullable: true},
			{Name: "objects", Type: "list<string>", Nullable: true},
		},
		Image:           table.ImageOptions{Format: "jpg", JPEGQuality: 90},
		PackTargetBytes: 1 << 20,
		Properties:      map[string]string{"framefs.fixture": "frozen example table"},
	}
}

// frozenRows returns an episode's rows as the table reads them back
// (without frame references, row ids and ordinals). Every value is exact
// in its column's type; nulls fall on different rows in each column.
func frozenRows(ep frozenEpisode) []table.Row {
	labels := []string{"reach", "grasp", "lift"}
	base := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC).Add(time.Duration(ep.seed) * time.Hour)
	rows := make([]table.Row, ep.rows)
	for i := range rows {
		r := table.Row{
			"episode_id": ep.id,
			"task":       ep.task,
			"ts":         base.Add(time.Duration(i) * 33333 * time.Microsecond),
			"step":       int64(i),
			"speed":      float64(i%7)*0.25 + float64(ep.seed)*0.5,
			"reward":     float64(i)/8 - 0.5,
			"label":      labels[(i+ep.seed)%3],
			"grasp":      (i+ep.seed)%2 == 0,
			"count":      int64(i) * 1_000_000_007,
			"state":      []any{float64(i) * 0.5, -float64(i) * 0.25, 1.0},
			"objects":    []any{"cup"},
		}
		if i%2 == 1 {
			r["objects"] = []any{"cup", "plate"}
		}
		for col, null := range map[string]bool{"reward": i%4 == 3, "label": i%3 == 2, "grasp": i%5 == 4, "count": i%2 == 1, "state": i%7 == 6, "objects": i%6 == 5} {
			if null {
				r[col] = nil
			}
		}
		if i%6 == 1 {
			r["objects"] = []any{}
		}
		rows[i] = r
	}
	return rows
}

// The views of the frozen table: a plain view pinned by a tag, grouped
// and with its own image setting, and a clip view following the head.
var frozenViews = []table.View{
	{Name: "fast", Where: "speed >= 1.5 AND label IS NOT NULL", Tag: "v1", GroupBy: []string{"label"},
		Image: &table.ViewImage{Format: "png", MaxSide: 64}},
	{Name: "clips", Where: "grasp IS NOT FALSE", Window: &table.Window{Length: 3, FrameSkip: 1, Hop: 2}},
}

// frozenMatches is the filter of each view as Go, over frozenRows' values:
// the oracle the view selections are checked against.
var frozenMatches = map[string]func(table.Row) bool{
	"fast":  func(r table.Row) bool { return r["speed"].(float64) >= 1.5 && r["label"] != nil },
	"clips": func(r table.Row) bool { return r["grasp"] != false },
}

// The frame indexes kept byte for byte under encodings/: every path of the
// FVIX encoding (edit lists and hidden samples, variable frame rate,
// fragments, interleaved audio, an FFmpeg scan).
var frozenIndexes = []struct {
	name, source string
	scan         bool
}{
	{"h264_bframes_gop30", frozenFront, false},
	{"h264_editlist", frozenEditList, false},
	{"h264_vfr", "testdata/video/h264_vfr.mp4", false},
	{"h264_fragmented", "testdata/video/h264_fragmented.mp4", false},
	{"small_h264_aac", "testdata/real/small_h264_aac.mp4", false},
	{"av1_video_scan", "testdata/real/av1_video.mkv", true},
}

// writeFrozen writes the frozen table of the current format version.
func writeFrozen() int {
	out := frozentable.Dir(table.FormatVersion)
	if err := makeFrozenTable(context.Background(), out); err != nil {
		fmt.Fprintf(os.Stderr, "write frozen table %s: %v\n", out, err)
		return 1
	}
	fmt.Printf("wrote %s\n", out)
	return 0
}

func makeFrozenTable(ctx context.Context, out string) error {
	if _, err := os.Stat(out); err == nil {
		return errors.New("it exists: a frozen table is never written again for the same format version (see testdata/format/README.md)")
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(filepath.Dir(out), ".tmp-frozen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	exp, err := buildFrozen(ctx, work)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(exp, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, frozentable.ExpectedFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(work, out)
}

// buildFrozen writes the table, its inputs and encodings under dir and
// returns what they hold.
func buildFrozen(ctx context.Context, dir string) (*frozentable.Expected, error) {
	root := frozentable.ModuleRoot()
	store, err := storage.NewLocal(filepath.Join(dir, frozentable.TableDir))
	if err != nil {
		return nil, err
	}
	exp := &frozentable.Expected{FormatVersion: table.FormatVersion}
	err = withDecoder(func(frames *serving.Server) error {
		clock := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
		opts := tableOptions()
		opts.Sizer = frameSizer{frames: frames}
		opts.Now = func() time.Time { return clock }
		tbl, err := table.Create(ctx, store, frozenSchema(), opts)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, frozentable.InputDir), 0o755); err != nil {
			return err
		}
		rows := map[string][]table.Row{}
		var snaps []*table.Snapshot
		for i, commit := range frozenCommits {
			var inputs []table.EpisodeInput
			for _, ep := range commit {
				rows[ep.id] = frozenRows(ep)
				sc, err := writeFrozenSidecar(filepath.Join(dir, frozentable.InputDir, ep.id+".jsonl"), rows[ep.id])
				if err != nil {
					return err
				}
				in := table.EpisodeInput{Episode: ep.id, Videos: map[string]table.VideoFile{}, Sidecar: sc}
				for col, v := range ep.videos {
					in.Videos[col] = table.VideoFile{Path: filepath.Join(root, v.source), FirstFrame: v.firstFrame}
				}
				inputs = append(inputs, in)
			}
			snap, err := tbl.AddEpisodes(ctx, inputs, table.AddOptions{ReuseStoredVideos: i > 0})
			if err != nil {
				return fmt.Errorf("commit %d: %w", i+1, err)
			}
			snaps = append(snaps, snap)
			if i == 0 {
				tag, err := tbl.CreateTag(ctx, "v1", snap.ID)
				if err != nil {
					return err
				}
				exp.Tags = append(exp.Tags, tag)
			}
			clock = clock.Add(time.Hour)
		}
		for _, v := range frozenViews {
			created, err := query.CreateView(ctx, tbl, v)
			if err != nil {
				return fmt.Errorf("view %s: %w", v.Name, err)
			}
			exp.Views = append(exp.Views, created)
		}
		slices.SortFunc(exp.Views, func(a, b table.View) int { return strings.Compare(a.Name, b.Name) })
		schema, err := tbl.LatestSchema(ctx)
		if err != nil {
			return err
		}
		exp.Schema = *schema
		return expectFrozen(ctx, tbl, snaps, rows, exp)
	})
	if err != nil {
		return nil, err
	}
	if err := writeFrozenEncodings(ctx, dir, exp); err != nil {
		return nil, err
	}
	return exp, nil
}

// writeFrozenSidecar writes rows as a JSONL sidecar and parses it back as
// ingest does.
func writeFrozenSidecar(path string, rows []table.Row) (*table.Sidecar, error) {
	var b bytes.Buffer
	for _, r := range rows {
		line, err := json.Marshal(r) // timestamps as RFC 3339, nulls as null
		if err != nil {
			return nil, err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return table.ParseSidecar(filepath.Base(path), b.Bytes())
}

// expectFrozen records what the table holds: snapshots, episodes, rows,
// videos and their sizes, reference frames, and what the views show. It
// fails when the table does not read back what was ingested.
func expectFrozen(ctx context.Context, tbl *table.Table, snaps []*table.Snapshot, rows map[string][]table.Row, exp *frozentable.Expected) error {
	byEpisode := map[string]frozenEpisode{}
	for _, commit := range frozenCommits {
		for _, ep := range commit {
			byEpisode[ep.id] = ep
		}
	}
	videos := map[string]bool{}
	for _, snap := range snaps {
		exp.Snapshots = append(exp.Snapshots, *snap)
		infos, err := tbl.Manifests(ctx, snap)
		if err != nil {
			return err
		}
		if snap.ManifestList != "" {
			sm := frozentable.SnapshotManifests{Snapshot: snap.ID}
			for _, info := range infos {
				sm.Summaries = append(sm.Summaries, *info.Summary)
			}
			exp.ManifestLists = append(exp.ManifestLists, sm)
		}
		eps, err := tbl.Episodes(ctx, snap)
		if err != nil {
			return err
		}
		exp.Episodes = append(exp.Episodes, frozentable.SnapshotEpisodes{Snapshot: snap.ID, Episodes: eps})
		for _, e := range eps {
			want := slices.Clone(rows[e.Episode])
			for i := range want {
				r := table.Row{}
				for k, v := range want[i] {
					r[k] = v
				}
				for col, ref := range e.Videos {
					r[col] = table.FrameRef{Pack: ref.Pack, Offset: ref.Offset, Length: ref.Length, Frame: ref.FirstFrame + int64(i)}
				}
				r[table.RowIDColumn] = e.FirstRowID + int64(i)
				r[table.FrameColumn] = int64(i)
				want[i] = r
			}
			got, err := tbl.Rows(ctx, snap, e)
			if err != nil {
				return err
			}
			wantJSON, _ := json.Marshal(want)
			gotJSON, _ := json.Marshal(got)
			if !bytes.Equal(wantJSON, gotJSON) {
				return fmt.Errorf("episode %s reads back\n%s\nnot what was ingested\n%s", e.Episode, gotJSON, wantJSON)
			}
			exp.Rows = append(exp.Rows, frozentable.EpisodeRows{Snapshot: snap.ID, Episode: e.Episode, Rows: wantJSON})
			for _, col := range []string{"front", "wrist"} {
				ref := e.Videos[col]
				source := byEpisode[e.Episode].videos[col].source
				key := fmt.Sprintf("%s@%d", ref.Pack, ref.Offset)
				if !videos[key] {
					videos[key] = true
					if len(ref.Sizes) != 1 {
						return fmt.Errorf("episode %s %s: %d sizes blocks stored, want 1", e.Episode, col, len(ref.Sizes))
					}
					sizes, ok, err := tbl.StoredSizes(ctx, ref, ref.Sizes[0].Identity)
					if err != nil || !ok {
						return fmt.Errorf("sizes of %s: %v", key, err)
					}
					exp.Videos = append(exp.Videos, frozentable.Video{Pack: ref.Pack, Offset: ref.Offset, Source: source,
						Frames: ref.Frames, SizesIdentity: ref.Sizes[0].Identity, Sizes: sizes})
				}
				for _, row := range []int64{0, e.Rows - 1} {
					sum, err := ffmpegFrameSHA256(filepath.Join(frozentable.ModuleRoot(), source), ref.FirstFrame+row, ref.Width, ref.Height)
					if err != nil {
						return err
					}
					exp.Frames = append(exp.Frames, frozentable.Frame{Snapshot: snap.ID, Episode: e.Episode, Column: col, Row: row,
						VideoFrame: ref.FirstFrame + row, Width: ref.Width, Height: ref.Height, RGB24SHA256: sum})
				}
			}
		}
	}
	for _, v := range exp.Views {
		snap := snaps[len(snaps)-1]
		if v.Snapshot != 0 {
			snap = snaps[v.Snapshot-1]
		}
		sel := frozentable.ViewSelection{View: v.Name, Snapshot: snap.ID, Window: v.Window}
		for _, se := range exp.Episodes[snap.ID-1].Episodes {
			if part := frozenViewEpisode(v, rows[se.Episode]); len(part.Parts) > 0 {
				part.Episode = se.Episode
				sel.Episodes = append(sel.Episodes, part)
			}
		}
		exp.Selections = append(exp.Selections, sel)
	}
	if probs, err := tbl.Verify(ctx); err != nil || len(probs) > 0 {
		return fmt.Errorf("verify: %v %v", probs, err)
	}
	return nil
}

// frozenViewEpisode works out what view v shows of an episode's rows
// without the filter code: the rows its Go oracle accepts, by group, or
// the windows all of whose rows it accepts.
func frozenViewEpisode(v table.View, rows []table.Row) frozentable.ViewEpisode {
	match := frozenMatches[v.Name]
	var out frozentable.ViewEpisode
	if v.Window != nil {
		w := *v.Window
		var starts []int64
		for s := int64(0); s+w.Span() <= int64(len(rows)); s += w.Hop {
			ok := true
			for j := int64(0); j < w.Length; j++ {
				ok = ok && match(rows[s+j*w.Stride()])
			}
			if ok {
				starts = append(starts, s)
			}
		}
		if len(starts) > 0 {
			out.Parts = append(out.Parts, frozentable.ViewPart{Starts: starts})
		}
		return out
	}
	groups := map[string][]int64{}
	for i, r := range rows {
		if match(r) {
			g := v.GroupBy[0] + "=" + r[v.GroupBy[0]].(string)
			groups[g] = append(groups[g], int64(i))
		}
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		out.Parts = append(out.Parts, frozentable.ViewPart{Group: g, Ordinals: groups[g]})
	}
	return out
}

// ffmpegFrameSHA256 decodes frame n of a video with the ffmpeg command
// line (8-bit RGB) and returns the SHA-256 of its pixels.
func ffmpegFrameSHA256(path string, n int64, width, height int) (string, error) {
	cmd := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-i", path, "-map", "0:v:0",
		"-vf", fmt.Sprintf(`select=eq(n\,%d)`, n), "-vsync", "vfr", "-frames:v", "1", "-pix_fmt", "rgb24", "-f", "rawvideo", "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("ffmpeg frame %d of %s: %v\n%s", n, path, err, stderr.Bytes())
	}
	if len(out) != 3*width*height {
		return "", fmt.Errorf("ffmpeg frame %d of %s: %d bytes, want %dx%dx3", n, path, len(out), width, height)
	}
	sum := sha256.Sum256(out)
	return hex.EncodeToString(sum[:]), nil
}

// writeFrozenEncodings writes the byte-exact blocks under encodings/ with
// what they decode to: frame indexes of the test videos, the table's
// chunk indexes (decoded here from the Parquet footers, independently of
// the table code) and sizes blocks.
func writeFrozenEncodings(ctx context.Context, dir string, exp *frozentable.Expected) error {
	encDir := filepath.Join(dir, frozentable.EncodingsDir)
	if err := os.MkdirAll(encDir, 0o755); err != nil {
		return err
	}
	put := func(kind, name, ext string, bin []byte, decoded any, enc frozentable.Encoding) error {
		js, err := json.MarshalIndent(decoded, "", "  ")
		if err != nil {
			return err
		}
		enc.Kind, enc.File, enc.JSON = kind, path.Join(frozentable.EncodingsDir, name+ext), path.Join(frozentable.EncodingsDir, name+".json")
		if err := os.WriteFile(filepath.Join(dir, enc.File), bin, 0o644); err != nil {
			return err
		}
		exp.Encodings = append(exp.Encodings, enc)
		return os.WriteFile(filepath.Join(dir, enc.JSON), append(js, '\n'), 0o644)
	}
	for _, fx := range frozenIndexes {
		f, err := os.Open(filepath.Join(frozentable.ModuleRoot(), fx.source))
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		var ix *videoidx.Index
		if fx.scan {
			ix, err = decoder.IndexVideo(ctx, f, st.Size(), videoidx.BestStream)
		} else {
			ix, err = videoidx.ReadMP4(ctx, f, st.Size(), videoidx.BestStream)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("index %s: %w", fx.source, err)
		}
		if err := put("FVIX", fx.name, ".fvix", ix.Encode(), ix, frozentable.Encoding{Source: fx.source, Stream: ix.Stream, Scanned: fx.scan}); err != nil {
			return err
		}
	}
	data, err := filepath.Glob(filepath.Join(dir, frozentable.TableDir, "data", "*.parquet"))
	if err != nil || len(data) == 0 {
		return fmt.Errorf("no data files in the table: %v", err)
	}
	slices.Sort(data)
	for i, p := range data {
		bin, err := os.ReadFile(strings.TrimSuffix(p, ".parquet") + ".chunks")
		if err != nil {
			return err
		}
		decoded, err := chunkIndexFromFooter(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if err := put("FCIX", fmt.Sprintf("chunks_%d", i+1), ".fcix", bin, decoded, frozentable.Encoding{Source: filepath.ToSlash(rel)}); err != nil {
			return err
		}
	}
	store, err := storage.NewLocal(filepath.Join(dir, frozentable.TableDir))
	if err != nil {
		return err
	}
	// The sizes blocks of the first episode's two videos.
	first := exp.Episodes[0].Episodes[0]
	for i, col := range []string{"front", "wrist"} {
		ref := first.Videos[col]
		if len(ref.Sizes) != 1 {
			return fmt.Errorf("episode %s %s: %d sizes blocks", first.Episode, col, len(ref.Sizes))
		}
		var sizes []int64
		for _, v := range exp.Videos {
			if v.Pack == ref.Pack && v.Offset == ref.Offset {
				sizes = v.Sizes
			}
		}
		sz := ref.Sizes[0]
		obj, err := store.Open(ctx, sz.Object)
		if err != nil {
			return err
		}
		bin := make([]byte, sz.Length)
		_, err = obj.ReadAt(bin, sz.Offset)
		obj.Close()
		if err != nil {
			return err
		}
		source := frozenCommits[0][0].videos[col].source
		if err := put("FSZS", fmt.Sprintf("sizes_%d", i+1), ".fszs", bin, map[string][]int64{"sizes": sizes}, frozentable.Encoding{Source: source}); err != nil {
			return err
		}
	}
	return nil
}

// chunkIndexJSON is what an FCIX block says, as FORMAT.md describes it.
type chunkIndexJSON struct {
	Version   int                  `json:"version"`
	Codec     int                  `json:"codec"`
	Columns   []string             `json:"columns"`
	RowGroups []chunkIndexRowGroup `json:"row_groups"`
}

type chunkIndexRowGroup struct {
	Rows   int64      `json:"rows"`
	Chunks [][2]int64 `json:"chunks"` // offset, length per column
}

// chunkIndexFromFooter reads where each flat column chunk of a data file
// lies from its Parquet footer.
func chunkIndexFromFooter(path string) (*chunkIndexJSON, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	md := pf.MetaData()
	out := &chunkIndexJSON{Version: 1}
	var cols []int
	for i := 0; i < md.Schema.NumColumns(); i++ {
		c := md.Schema.Column(i)
		if len(c.ColumnPath()) == 1 && c.MaxRepetitionLevel() == 0 {
			cols = append(cols, i)
			out.Columns = append(out.Columns, c.ColumnPath()[0])
		}
	}
	for g := 0; g < md.NumRowGroups(); g++ {
		rg := md.RowGroup(g)
		grp := chunkIndexRowGroup{Rows: rg.NumRows()}
		for _, c := range cols {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return nil, err
			}
			out.Codec = int(cc.Compression())
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			grp.Chunks = append(grp.Chunks, [2]int64{start, cc.TotalCompressedSize()})
		}
		out.RowGroups = append(out.RowGroups, grp)
	}
	return out, nil
}
