package lerobot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/lerobottest"
	"github.com/framefs/framefs/table"
)

// importPromptly imports dir into a new store and fails the test if that
// takes 20 s; fifo, when set, is then opened for writing so that a reader
// stuck in open returns.
func importPromptly(t *testing.T, dir, fifo string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := importDir(t, dir, newStore(t), ImportOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Errorf("the import blocked for 20 s")
		if fifo != "" {
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		}
		return <-done
	}
}

// wantProblem fails unless err is a validation error with a problem of
// rule at file whose message holds message.
func wantProblem(t *testing.T, err error, rule Rule, file, message string) {
	t.Helper()
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("import: %v, want a validation error", err)
	}
	for _, p := range verr.Problems {
		if p.Rule == rule && p.File == file && strings.Contains(p.Message, message) {
			return
		}
	}
	t.Fatalf("want a %s problem at %s saying %q; got:\n%v", rule, file, message, err)
}

// TestSpecialFilesRefused replaces each kind of file an import reads with
// a FIFO, and some with a link to /dev/zero: the import is refused at
// once, naming the file and what it is, instead of waiting for a writer
// or reading without end.
func TestSpecialFilesRefused(t *testing.T) {
	cases := []struct {
		version, kind string
		// file picks the dataset file replaced.
		file func(d *lerobottest.Dataset) string
	}{
		{V21, "FIFO", func(*lerobottest.Dataset) string { return InfoPath }},
		{V21, "character device", func(*lerobottest.Dataset) string { return InfoPath }},
		{V21, "FIFO", func(*lerobottest.Dataset) string { return legacyEpisodes }},
		{V21, "character device", func(*lerobottest.Dataset) string { return legacyEpisodes }},
		{V21, "FIFO", func(*lerobottest.Dataset) string { return legacyTasks }},
		{V21, "FIFO", func(d *lerobottest.Dataset) string { return d.EpisodeFile[camTop][2] }},
		{V21, "character device", func(d *lerobottest.Dataset) string { return d.EpisodeFile[camTop][2] }},
		{V30, "FIFO", func(*lerobottest.Dataset) string { return episodesDir + "/chunk-000/file-000.parquet" }},
		{V30, "FIFO", func(*lerobottest.Dataset) string { return tasksParquet }},
		{V30, "FIFO", func(d *lerobottest.Dataset) string { return d.DataFiles[1] }},
	}
	built := map[string]*lerobottest.Dataset{}
	for _, c := range cases {
		d := built[c.version]
		if d == nil {
			d = build(t, testSpec(c.version))
			built[c.version] = d
		}
		rel := c.file(d)
		t.Run(c.version+" "+strings.ReplaceAll(rel, "/", ":")+" "+c.kind, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "dataset")
			if err := os.CopyFS(dir, os.DirFS(d.Dir)); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, filepath.FromSlash(rel))
			os.Remove(p)
			fifo := ""
			if c.kind == "FIFO" {
				fifo = p
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
			err := importPromptly(t, dir, fifo)
			wantProblem(t, err, RuleUnreadable, rel, "is a "+c.kind+", not a regular file")
		})
	}
}

// TestMetadataSizeLimits: metadata files larger than their documented
// limits are refused before they are read (sparse files here: reading
// them would take a gigabyte of memory).
func TestMetadataSizeLimits(t *testing.T) {
	for _, c := range []struct {
		rel   string
		limit int64
	}{{InfoPath, MaxInfoBytes}, {legacyEpisodes, MaxMetadataBytes}} {
		t.Run(c.rel, func(t *testing.T) {
			d := build(t, testSpec(V21))
			if err := os.Truncate(filepath.Join(d.Dir, c.rel), c.limit+1); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err := importPromptly(t, d.Dir, "")
			wantProblem(t, err, RuleUnreadable, c.rel, "more than the ")
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("refusing took %s", took)
			}
		})
	}
}

// TestHubCacheLayout imports a dataset laid out as the Hugging Face hub
// cache lays out a download: snapshots/REV/ holds only relative links
// into ../../blobs/, named by content hash. Links to regular files are
// followed wherever they lead, and the import equals a plain one.
func TestHubCacheLayout(t *testing.T) {
	d := build(t, testSpec(V30))
	repo := filepath.Join(t.TempDir(), "datasets--lerobot--pusht")
	rev := "0123456789abcdef0123456789abcdef01234567"
	snapshot := filepath.Join(repo, "snapshots", rev)
	err := filepath.WalkDir(d.Dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(d.Dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		blob := hex.EncodeToString(sum[:])
		if err := os.MkdirAll(filepath.Join(repo, "blobs"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(repo, "blobs", blob), data, 0o644); err != nil {
			return err
		}
		link := filepath.Join(snapshot, rel)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return err
		}
		// snapshots/REV/meta/info.json -> ../../../blobs/HASH
		up := strings.Repeat("../", strings.Count(filepath.ToSlash(rel), "/")+2)
		return os.Symlink(up+"blobs/"+blob, link)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(rev), 0o644)
	if st, err := os.Lstat(filepath.Join(snapshot, InfoPath)); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("info.json is not a link: %v", err)
	}
	store := newStore(t)
	res, err := importDir(t, snapshot, store, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != 6 || res.Frames != 64 {
		t.Errorf("result %+v", res)
	}
	tbl, err := table.Open(context.Background(), store, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkImported(t, d, tbl)
}
