// Package frozentable locates the frozen example tables under
// testdata/format, one per table format version, and loads what each must
// read as. A frozen table is written once, by the framefs version that
// introduced its format version, and never again (see
// testdata/format/README.md): the tests of every package that reads
// tables check that the current code still reads every frozen table
// exactly, so a change that stops reading an old table fails a test
// instead of a user's dataset.
//
// The package holds test support only; nothing outside tests imports it.
package frozentable

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/manifest"
	"github.com/framefs/framefs/table/storage"
)

// Root returns the directory holding one folder per format version
// (testdata/format in the module).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "format")
}

// ModuleRoot returns the module's root directory, which the source paths
// of Expected are relative to.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Dir returns the folder of format version v: testdata/format/vN.
func Dir(v int) string { return filepath.Join(Root(), "v"+strconv.Itoa(v)) }

// File names inside a version's folder.
const (
	TableDir     = "table"         // the table itself
	InputDir     = "input"         // the sidecars it was ingested from
	EncodingsDir = "encodings"     // byte-exact FVIX, FCIX and FSZS blocks with their decoded JSON
	ExpectedFile = "expected.json" // Expected
)

// Versions lists the format versions that have a frozen table, ascending.
// A test that finds none fails: the fixtures belong to the repository.
func Versions(t testing.TB) []int {
	t.Helper()
	entries, err := os.ReadDir(Root())
	if err != nil {
		t.Fatalf("frozen tables: %v", err)
	}
	var vs []int
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "v"); ok && e.IsDir() {
			if v, err := strconv.Atoi(n); err == nil {
				vs = append(vs, v)
			}
		}
	}
	if len(vs) == 0 {
		t.Fatalf("no frozen tables under %s", Root())
	}
	slices.Sort(vs)
	return vs
}

// Run runs check as a subtest "vN" for every frozen table, with what the
// table of that version must read as.
func Run(t *testing.T, check func(t *testing.T, v int, exp *Expected)) {
	t.Helper()
	for _, v := range Versions(t) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { check(t, v, Load(t, v)) })
	}
}

// Expected is what a frozen table holds, as its writer knew it.
type Expected struct {
	FormatVersion int                `json:"format_version"`
	Schema        table.Schema       `json:"schema"`
	Snapshots     []table.Snapshot   `json:"snapshots"`
	Episodes      []SnapshotEpisodes `json:"episodes"`
	Tags          []table.Tag        `json:"tags"`
	Views         []table.View       `json:"views"`
	Rows          []EpisodeRows      `json:"rows"`
	Videos        []Video            `json:"videos"`
	Frames        []Frame            `json:"frames"`
	Selections    []ViewSelection    `json:"view_selections"`
	Encodings     []Encoding         `json:"encodings"`
	// ManifestLists are the summaries of each snapshot's manifests, as
	// its manifest list holds them (format version 2 and later).
	ManifestLists []SnapshotManifests `json:"manifest_lists,omitempty"`
}

// SnapshotManifests are the summaries of one snapshot's manifests, in the
// order of its manifest list.
type SnapshotManifests struct {
	Snapshot  int64              `json:"snapshot"`
	Summaries []manifest.Summary `json:"summaries"`
}

// SnapshotEpisodes are the episodes of one snapshot, in the order
// Table.Episodes lists them.
type SnapshotEpisodes struct {
	Snapshot int64                `json:"snapshot"`
	Episodes []table.EpisodeEntry `json:"episodes"`
}

// EpisodeRows are the rows Table.Rows returns for one episode version
// (its data file), as JSON: user columns, the episode column, frame
// references, _row_id and the row's position in its episode
// (table.FrameColumn), timestamps in RFC 3339.
type EpisodeRows struct {
	Snapshot int64           `json:"snapshot"`
	Episode  string          `json:"episode"`
	Rows     json.RawMessage `json:"rows"`
}

// Video is one stored payload: where it is, the file it was ingested
// from (a path relative to the module root) and its stored frame sizes.
type Video struct {
	Pack          string  `json:"pack"`
	Offset        int64   `json:"offset"`
	Source        string  `json:"source"`
	Frames        int64   `json:"frames"`
	SizesIdentity string  `json:"sizes_identity"`
	Sizes         []int64 `json:"sizes"`
}

// Frame is one frame of an episode with the SHA-256 of its pixels (8-bit
// RGB, rows top to bottom) as the ffmpeg command line decodes it from the
// source file: ffmpeg -i SOURCE -vf select=eq(n\,N) -pix_fmt rgb24 -f rawvideo.
type Frame struct {
	Snapshot    int64  `json:"snapshot"`
	Episode     string `json:"episode"`
	Column      string `json:"column"`
	Row         int64  `json:"row"`
	VideoFrame  int64  `json:"video_frame"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	RGB24SHA256 string `json:"rgb24_sha256"`
}

// ViewSelection is what a view shows: the matching rows of its episodes
// by group (a plain view) or the first rows of its clips (a clip view),
// worked out by the writer from the rows it ingested, independently of
// the filter code.
type ViewSelection struct {
	View     string        `json:"view"`
	Snapshot int64         `json:"snapshot"`
	Episodes []ViewEpisode `json:"episodes"`
	Window   *table.Window `json:"window,omitempty"`
}

// ViewEpisode is one episode of a view, by group.
type ViewEpisode struct {
	Episode string     `json:"episode"`
	Parts   []ViewPart `json:"parts"`
}

// ViewPart is one group of an episode's rows in a view: the matching rows
// (Ordinals) of a plain view, the first rows of the clips (Starts) of a
// clip view.
type ViewPart struct {
	Group    string  `json:"group"`
	Ordinals []int64 `json:"ordinals,omitempty"`
	Starts   []int64 `json:"starts,omitempty"`
}

// Encoding is one byte-exact binary block under encodings/: File holds
// the bytes, JSON what they decode to. Kind is FVIX (a frame index,
// Source naming the video it indexes and Stream its stream), FCIX (a
// chunk index, Source naming the data file of the table it indexes) or
// FSZS (a sizes block).
type Encoding struct {
	Kind   string `json:"kind"`
	File   string `json:"file"`
	JSON   string `json:"json"`
	Source string `json:"source,omitempty"`
	Stream int    `json:"stream,omitempty"`
	// Scanned marks a frame index built by demuxing with FFmpeg, which
	// tests without FFmpeg cannot build again.
	Scanned bool `json:"scanned,omitempty"`
}

// Load reads the expectations of format version v.
func Load(t testing.TB, v int) *Expected {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(v), ExpectedFile))
	if err != nil {
		t.Fatalf("frozen table v%d: %v", v, err)
	}
	var e Expected
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("frozen table v%d: %s: %v", v, ExpectedFile, err)
	}
	if e.FormatVersion != v {
		t.Fatalf("frozen table v%d: %s says format version %d", v, ExpectedFile, e.FormatVersion)
	}
	for i := range e.Rows {
		rows, err := renameOrdinal(e.Rows[i].Rows)
		if err != nil {
			t.Fatalf("frozen table v%d: %s: rows of %s: %v", v, ExpectedFile, e.Rows[i].Episode, err)
		}
		e.Rows[i].Rows = rows
	}
	return &e
}

// renameOrdinal gives rows recorded when Table.Rows named a row's
// position in its episode "ordinal" (the writer of version 1) under the
// name Rows gives it now, table.FrameColumn, the name filters, --group-by
// and listings know it by. Only the name of the key changed: the
// positions, and the table they are read from, are the same.
func renameOrdinal(raw json.RawMessage) (json.RawMessage, error) {
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, err
	}
	renamed := false
	for _, r := range rows {
		if pos, ok := r["ordinal"]; ok {
			if _, taken := r[table.FrameColumn]; taken {
				return nil, fmt.Errorf("a row has both ordinal and %s", table.FrameColumn)
			}
			r[table.FrameColumn] = pos
			delete(r, "ordinal")
			renamed = true
		}
	}
	if !renamed {
		return raw, nil
	}
	return json.Marshal(rows) // sorted keys, as json.Marshal writes Rows' maps
}

// CopyTable copies the frozen table of version v to a new temporary
// directory and returns it, so that a test may open (and write to) it
// without touching the committed files.
func CopyTable(t testing.TB, v int) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), fmt.Sprintf("frozen-v%d", v))
	if err := CopyDir(filepath.Join(Dir(v), TableDir), dst); err != nil {
		t.Fatalf("copy frozen table v%d: %v", v, err)
	}
	return dst
}

// Open opens a copy of the frozen table of version v (CopyTable).
func Open(t testing.TB, v int) *table.Table {
	t.Helper()
	store, err := storage.NewLocal(CopyTable(t, v))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := table.Open(context.Background(), store, table.Options{})
	if err != nil {
		t.Fatalf("open the frozen table v%d: %v", v, err)
	}
	return tbl
}

// SameJSON reports whether a and b marshal to the same JSON, and returns
// both for messages.
func SameJSON(t testing.TB, a, b any) (same bool, ja, jb string) {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y), string(x), string(y)
}

// CopyDir copies the regular files under src to dst, which must not
// exist yet.
func CopyDir(src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%s exists", dst)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// Source returns the absolute path of a source file named relative to the
// module root.
func Source(rel string) string { return filepath.Join(ModuleRoot(), filepath.FromSlash(rel)) }
