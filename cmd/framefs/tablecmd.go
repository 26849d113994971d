package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// tableOptions wires the FFmpeg-backed pieces of package decoder into the
// table library, which itself builds without cgo.
func tableOptions() table.Options {
	return table.Options{
		Indexer: func(ctx context.Context, r io.ReaderAt, size int64) (*videoidx.Index, error) {
			return decoder.IndexVideo(ctx, r, size, videoidx.BestStream)
		},
	}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newCreateCommand() *cobra.Command {
	var (
		schemaFile, episodeCol, imageFormat string
		columns, videoCols, partitions      []string
		jpegQuality                         int
	)
	cmd := &cobra.Command{
		Use:   "create WAREHOUSE/TABLE",
		Short: "Create a table",
		Long: `create makes a new, empty table. Columns are NAME:TYPE with TYPE one of bool,
int32, int64, float32, float64, string, timestamp or list<T>; a trailing '?'
makes a column nullable (state:list<float32>?). A --schema file (JSON) may
give everything instead.`,
		Example: `  framefs create data/robot --column timestamp:float64 --column state:list<float32> \
      --video-column cam_front,cam_left --partition task --column task:string`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var s table.Schema
			if schemaFile != "" {
				data, err := os.ReadFile(schemaFile)
				if err != nil {
					return err
				}
				if s, err = table.ParseSchema(data); err != nil {
					return fmt.Errorf("%s: %w", schemaFile, err)
				}
			}
			for _, spec := range columns {
				c, err := table.ParseColumn(spec)
				if err != nil {
					return err
				}
				s.Columns = append(s.Columns, c)
			}
			if episodeCol != "" {
				s.EpisodeColumn = episodeCol
			}
			for _, v := range videoCols {
				s.VideoColumns = append(s.VideoColumns, strings.Split(v, ",")...)
			}
			s.PartitionColumns = append(s.PartitionColumns, partitions...)
			if imageFormat != "" {
				s.Image.Format = imageFormat
			}
			if jpegQuality != 0 {
				s.Image.JPEGQuality = jpegQuality
			}
			name := baseName(args[0])
			if err := table.CheckName("table", name); err != nil {
				return err
			}
			if err := checkCreatable(cmd.Context(), args[0]); err != nil {
				return err
			}
			store, err := openStore(cmd.Context(), args[0], true)
			if err != nil {
				return err
			}
			if _, err := table.Create(cmd.Context(), store, s, tableOptions()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created table %s\n", args[0])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&schemaFile, "schema", "", "schema file (JSON)")
	f.StringArrayVar(&columns, "column", nil, "user column NAME:TYPE (repeatable)")
	f.StringVar(&episodeCol, "episode-column", "", "episode id column (default episode_id)")
	f.StringArrayVar(&videoCols, "video-column", nil, "video column(s), comma-separated (default video)")
	f.StringArrayVar(&partitions, "partition", nil, "partition column (repeatable)")
	f.StringVar(&imageFormat, "image-format", "", "image format mounts serve by default: jpg, png, bmp or ppm (default jpg)")
	f.IntVar(&jpegQuality, "jpeg-quality", 0, "JPEG quality 1-100 (default 90)")
	return cmd
}

func newIngestCommand() *cobra.Command {
	var (
		rows, episode string
		firstFrame    int64
		noSizes       bool
		allowNew      bool
		rng           rangeFlags
	)
	cmd := &cobra.Command{
		Use:   "ingest TABLE VIDEO...",
		Short: "Add videos and their frame rows to a table, in one commit",
		Long: `ingest stores each VIDEO byte for byte with one frame row per frame and
commits them all as one snapshot. A video's rows come from its sidecar, a file
with the same base name ending in .jsonl, .json, .csv or .parquet (or from
--rows for a single video). The episode id is the sidecar's episode column,
else the video's base name. For tables with several video columns, give one
episode's videos as COLUMN=FILE.

A VIDEO or sidecar may be an S3 object, s3://BUCKET/KEY, read with the same
endpoint and credentials as tables. Into an S3 table on the same endpoint the
server copies the video itself; otherwise it streams through. --offset and
--length ingest a byte range of a single VIDEO.`,
		Example: `  framefs ingest data/robot ep1.mp4 ep2.mp4
  framefs ingest s3://frames/wh/robot s3://fleet/day1/ep43.mp4 --no-sizes
  framefs ingest data/robot s3://fleet/day1.pack --offset 1048576 --length 73400320 --episode ep7`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sources, err := newSources()
			if err != nil {
				return err
			}
			return withIngestTable(cmd.Context(), args[0], noSizes, sources, func(tbl *table.Table) error {
				return ingestVideos(cmd, tbl, sources, args[1:], ingestFlags{rows, episode, firstFrame, noSizes, allowNew, rng})
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&rows, "rows", "", "sidecar with the frame rows (single video)")
	f.StringVar(&episode, "episode", "", "episode id (single episode)")
	f.Int64Var(&firstFrame, "first-frame", 0, "video frame of the first row")
	f.BoolVar(&noSizes, "no-sizes", false, "do not compute per-frame image sizes now (faster ingest; mounts compute them when needed)")
	f.BoolVar(&allowNew, "allow-new-columns", false, "add sidecar columns the table lacks (nullable, new schema version) instead of failing")
	rng.register(cmd)
	return cmd
}

type ingestFlags struct {
	rows, episode     string
	firstFrame        int64
	noSizes, allowNew bool
	rng               rangeFlags
}

func ingestVideos(cmd *cobra.Command, tbl *table.Table, sources *storage.Sources, videos []string, f ingestFlags) error {
	ctx := cmd.Context()
	rows, episode, firstFrame := f.rows, f.episode, f.firstFrame
	schema, err := tbl.LatestSchema(ctx)
	if err != nil {
		return err
	}
	if rows != "" && len(videos) > 1 && len(schema.VideoColumns) == 1 {
		return errors.New("--rows applies to a single video; give each video a sidecar instead")
	}
	var inputs []table.EpisodeInput
	if len(schema.VideoColumns) > 1 {
		in := table.EpisodeInput{Episode: episode, Videos: map[string]table.VideoFile{}}
		for _, arg := range videos {
			col, path, ok := strings.Cut(arg, "=")
			if !ok {
				return fmt.Errorf("%q: the table has video columns %s: give COLUMN=FILE", arg, strings.Join(schema.VideoColumns, ", "))
			}
			vf := table.VideoFile{Path: path, FirstFrame: firstFrame}
			if err := f.rng.apply(cmd, &vf, len(videos)); err != nil {
				return err
			}
			in.Videos[col] = vf
		}
		if rows == "" {
			return errors.New("give the episode's rows with --rows")
		}
		if in.Sidecar, err = readSidecar(ctx, sources, rows); err != nil {
			return err
		}
		inputs = append(inputs, in)
	} else {
		for _, v := range videos {
			vf := table.VideoFile{Path: v, FirstFrame: firstFrame}
			if err := f.rng.apply(cmd, &vf, len(videos)); err != nil {
				return err
			}
			in := table.EpisodeInput{Episode: episode, Videos: map[string]table.VideoFile{"": vf}}
			side := rows
			if side == "" {
				if side, err = findSidecar(ctx, sources, v); err != nil {
					return err
				}
			}
			if side != "" {
				if in.Sidecar, err = readSidecar(ctx, sources, side); err != nil {
					return err
				}
			}
			inputs = append(inputs, in)
		}
	}
	snap, err := tbl.AddEpisodes(ctx, inputs, table.AddOptions{NoSizes: f.noSizes, AllowNewColumns: f.allowNew, Progress: progressBar()})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: added %d episodes, %d frames\n", snap.ID, snap.Summary.EpisodesAdded, snap.Summary.FramesAdded)
	reportS3(cmd.OutOrStdout(), sources, tbl)
	return nil
}

func newUpdateCommand() *cobra.Command {
	var episode, rows string
	cmd := &cobra.Command{
		Use:   "update TABLE --episode ID --rows FILE",
		Short: "Replace the non-video columns of an episode's rows",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			sources, err := newSources()
			if err != nil {
				return err
			}
			sc, err := readSidecar(cmd.Context(), sources, rows)
			if err != nil {
				return err
			}
			snap, err := tbl.UpdateRows(cmd.Context(), episode, sc)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: updated episode %s\n", snap.ID, episode)
			return nil
		},
	}
	cmd.Flags().StringVar(&episode, "episode", "", "episode id")
	cmd.Flags().StringVar(&rows, "rows", "", "sidecar with the new rows")
	cmd.MarkFlagRequired("episode")
	cmd.MarkFlagRequired("rows")
	return cmd
}

func newReplaceCommand() *cobra.Command {
	var episode, column string
	var firstFrame int64
	var noSizes bool
	var rng rangeFlags
	cmd := &cobra.Command{
		Use:   "replace TABLE --episode ID VIDEO",
		Short: "Replace the video of an existing episode (rows stay)",
		Long: `replace stores VIDEO as the new video of an episode. VIDEO may be an S3
object (s3://BUCKET/KEY), and --offset and --length select a byte range of it,
as for ingest.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			video := table.VideoFile{Path: args[1], FirstFrame: firstFrame}
			if err := rng.apply(cmd, &video, 1); err != nil {
				return err
			}
			sources, err := newSources()
			if err != nil {
				return err
			}
			return withIngestTable(cmd.Context(), args[0], noSizes, sources, func(tbl *table.Table) error {
				snap, err := tbl.ReplaceVideo(cmd.Context(), episode, column, video, table.AddOptions{NoSizes: noSizes})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: replaced the video of episode %s\n", snap.ID, episode)
				reportS3(cmd.OutOrStdout(), sources, tbl)
				return nil
			})
		},
	}
	rng.register(cmd)
	cmd.Flags().StringVar(&episode, "episode", "", "episode id")
	cmd.Flags().StringVar(&column, "column", "", "video column (needed when the table has several)")
	cmd.Flags().Int64Var(&firstFrame, "first-frame", 0, "video frame of the first row")
	cmd.Flags().BoolVar(&noSizes, "no-sizes", false, "do not compute per-frame image sizes now")
	cmd.MarkFlagRequired("episode")
	return cmd
}

func newDeleteCommand() *cobra.Command {
	var episode string
	cmd := &cobra.Command{
		Use:   "delete TABLE --episode ID",
		Short: "Delete an episode (older snapshots keep it until they expire)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			snap, err := tbl.DeleteEpisode(cmd.Context(), episode)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: deleted episode %s\n", snap.ID, episode)
			return nil
		},
	}
	cmd.Flags().StringVar(&episode, "episode", "", "episode id")
	cmd.MarkFlagRequired("episode")
	return cmd
}

// logEntry is one line of `framefs log --json`.
type logEntry struct {
	Snapshot int64            `json:"snapshot"`
	Parent   int64            `json:"parent"`
	Kind     table.CommitKind `json:"kind"`
	Time     string           `json:"time"`
	SchemaID int              `json:"schema_id"`
	table.Summary
	Episodes int64    `json:"total_episodes"`
	Frames   int64    `json:"total_frames"`
	Tags     []string `json:"tags,omitempty"`
}

func newLogCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "log TABLE",
		Short: "List the table's snapshots, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			tbl, err := openTable(ctx, args[0])
			if err != nil {
				return err
			}
			ids, err := tbl.SnapshotIDs(ctx)
			if err != nil {
				return err
			}
			tags, err := tbl.Tags(ctx)
			if err != nil {
				return err
			}
			byID := map[int64][]string{}
			for _, tg := range tags {
				byID[tg.Snapshot] = append(byID[tg.Snapshot], tg.Name)
			}
			entries := []logEntry{}
			for i := len(ids) - 1; i >= 0; i-- {
				s, err := tbl.Snapshot(ctx, ids[i])
				if errors.Is(err, table.ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				entries = append(entries, logEntry{Snapshot: s.ID, Parent: s.Parent, Kind: s.Kind, Time: s.Time.Format(time.RFC3339),
					SchemaID: s.SchemaID, Summary: s.Summary, Episodes: s.Episodes, Frames: s.Frames, Tags: byID[s.ID]})
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), entries)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "SNAPSHOT\tKIND\tTIME\tEPISODES\tFRAMES\tCHANGE\tTAGS")
			for _, e := range entries {
				change := fmt.Sprintf("+%d -%d ~%d episodes", e.EpisodesAdded, e.EpisodesRemoved, e.EpisodesUpdated)
				fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%d\t%s\t%s\n", e.Snapshot, e.Kind, e.Time, e.Episodes, e.Frames, change, strings.Join(e.Tags, ","))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newTagCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tag TABLE create NAME [--snapshot N] | delete NAME | list",
		Short: "Create, delete or list tags (named, immutable snapshot pointers)",
	}
	var snapshot int64
	var asJSON bool
	create := &cobra.Command{
		Use:  "create TABLE NAME",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			tbl, err := openTable(ctx, args[0])
			if err != nil {
				return err
			}
			snap, err := tbl.Resolve(ctx, snapshot, "")
			if err != nil {
				return err
			}
			tag, err := tbl.CreateTag(ctx, args[1], snap.ID)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tag %s -> snapshot %d\n", tag.Name, tag.Snapshot)
			return nil
		},
	}
	create.Flags().Int64Var(&snapshot, "snapshot", 0, "snapshot to tag (default: the head)")
	del := &cobra.Command{
		Use:  "delete TABLE NAME",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return tbl.DeleteTag(cmd.Context(), args[1])
		},
	}
	list := &cobra.Command{
		Use:  "list TABLE",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			tags, err := tbl.Tags(cmd.Context())
			if err != nil {
				return err
			}
			type tagJSON struct {
				Tag      string `json:"tag"`
				Snapshot int64  `json:"snapshot"`
			}
			out := []tagJSON{}
			for _, tg := range tags {
				out = append(out, tagJSON{tg.Name, tg.Snapshot})
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), out)
			}
			for _, tg := range out {
				fmt.Fprintf(cmd.OutOrStdout(), "%s\t%d\n", tg.Tag, tg.Snapshot)
			}
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(create, del, list)
	acceptTableFirst(cmd)
	return cmd
}

func newLsCommand() *cobra.Command {
	var snapshot int64
	var tag string
	var asJSON bool
	var where lsWhereOptions
	cmd := &cobra.Command{
		Use:   "ls TABLE [EPISODE] [--where EXPR [--count]]",
		Short: "List a snapshot's episodes, an episode's frame rows, or the frames that match a filter",
		Long: `ls lists the episodes of a snapshot, or the frame rows of EPISODE. With --where
it lists the frames whose row matches the filter (SQL WHERE syntax: = != < <=
> >=, AND OR NOT, IS NULL, IN, BETWEEN, LIKE, TIMESTAMP '...', len(),
list_contains(), list_extract()), or with --count only counts them.`,
		Example: `  framefs ls data/robot --where "ego_speed_kmh >= 60 AND task = 'pick'" --count
  framefs ls data/robot --where "label IN ('cat', 'dog')" --json`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			tbl, err := openTable(ctx, args[0])
			if err != nil {
				return err
			}
			snap, err := tbl.Resolve(ctx, snapshot, tag)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if where.where != "" || where.count {
				if len(args) == 2 {
					where.episode = args[1]
				}
				where.asJSON = asJSON
				return runLsWhere(ctx, out, tbl, snap, where)
			}
			if len(args) == 1 {
				eps, err := tbl.Episodes(ctx, snap)
				if err != nil {
					return err
				}
				type epJSON struct {
					Episode   string            `json:"episode"`
					Frames    int64             `json:"frames"`
					Partition map[string]string `json:"partition,omitempty"`
				}
				list := make([]epJSON, len(eps))
				for i, e := range eps {
					list[i] = epJSON{e.Episode, e.Rows, e.Partition}
				}
				if asJSON {
					return printJSON(out, map[string]any{"snapshot": snap.ID, "episodes": list})
				}
				w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "EPISODE\tFRAMES\tPARTITION")
				for _, e := range list {
					var parts []string
					for k, v := range e.Partition {
						parts = append(parts, k+"="+v)
					}
					sort.Strings(parts)
					fmt.Fprintf(w, "%s\t%d\t%s\n", e.Episode, e.Frames, strings.Join(parts, ","))
				}
				return w.Flush()
			}
			e, err := tbl.Episode(ctx, snap, args[1])
			if err != nil {
				return err
			}
			rows, err := tbl.Rows(ctx, snap, e)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(out, map[string]any{"snapshot": snap.ID, "episode": e.Episode, "rows": rows})
			}
			enc := json.NewEncoder(out)
			for _, r := range rows {
				if err := enc.Encode(r); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().Int64Var(&snapshot, "snapshot", 0, "read this snapshot (default: the head)")
	cmd.Flags().StringVar(&tag, "tag", "", "read the snapshot of this tag")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&where.where, "where", "", "list only the frames whose row matches this filter (SQL WHERE syntax)")
	cmd.Flags().BoolVar(&where.count, "count", false, "print the number of matching frames instead")
	return cmd
}

func newExpireCommand() *cobra.Command {
	var keepLast int
	var olderThan time.Duration
	cmd := &cobra.Command{
		Use:   "expire TABLE [--keep-last N] [--older-than DURATION]",
		Short: "Drop old snapshots that no tag needs (then run gc to free space)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keepLast == 0 && olderThan == 0 {
				return errors.New("say what to expire: --keep-last N and/or --older-than DURATION")
			}
			tbl, err := openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			dropped, err := tbl.Expire(cmd.Context(), table.ExpireOptions{KeepLast: keepLast, OlderThan: olderThan})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "expired %d snapshots %v\n", len(dropped), dropped)
			return nil
		},
	}
	cmd.Flags().IntVar(&keepLast, "keep-last", 0, "keep the newest N snapshots")
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "expire only snapshots older than this (e.g. 168h)")
	return cmd
}

func newGCCommand() *cobra.Command {
	var grace time.Duration
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "gc TABLE",
		Short: "Remove files no live snapshot or tag references",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			rep, err := tbl.GC(cmd.Context(), table.GCOptions{Grace: grace, DryRun: dryRun})
			if err != nil {
				return err
			}
			verb, abortVerb := "removed", "aborted"
			if dryRun {
				verb, abortVerb = "would remove", "would abort"
			}
			// On S3 the temporaries GC removes are multipart uploads that
			// crashed writers left (their parts are stored until aborted).
			uploads := 0
			for _, key := range rep.Removed {
				if strings.Contains(key, "#upload=") {
					uploads++
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %d files (%d bytes), kept %d\n", verb, len(rep.Removed)-uploads, rep.Bytes, rep.Kept)
			if uploads > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %d stale multipart uploads\n", abortVerb, uploads)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&grace, "grace", time.Hour, "keep unreferenced files (and, on S3, multipart uploads) younger than this: commits in progress")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only list")
	return cmd
}

func newVerifyCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify TABLE",
		Short: "Check that every referenced file exists with the right size and checksum",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			problems, err := tbl.Verify(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if problems == nil {
					problems = []table.Problem{}
				}
				if err := printJSON(cmd.OutOrStdout(), problems); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					fmt.Fprintf(cmd.OutOrStdout(), "snapshot %d: %s: %s\n", p.Snapshot, p.Object, p.Problem)
				}
			}
			if len(problems) > 0 {
				return fmt.Errorf("%d problems found", len(problems))
			}
			if !asJSON {
				fmt.Fprintln(cmd.OutOrStdout(), "ok")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// progressBar returns a progress callback that redraws one line on stderr,
// or nil when stderr is not a terminal (scripts and logs get no noise).
func progressBar() func(step string, done, total int) {
	st, err := os.Stderr.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return func(step string, done, total int) {
		const width = 30
		filled := width
		if total > 0 {
			filled = width * done / total
		}
		fmt.Fprintf(os.Stderr, "\r%-16s [%s%s] %d/%d", step, strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total)
		if step == "committed" {
			fmt.Fprintln(os.Stderr)
		}
	}
}
