package fusefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/internal/mounttest"
	"github.com/framefs/framefs/internal/tabletest"
	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

// dirWarehouse is the warehouse in directory dir.
func dirWarehouse(t testing.TB, dir string) *table.Warehouse {
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return table.NewWarehouse(store, tabletest.Options())
}

// fixture is a warehouse with table "robot" (partitioned by task, one
// video column) mounted at mnt.
type fixture struct {
	wh, mnt string
	tbl     *table.Table
	frames  *serving.Server
	srv     *Server
}

func video(name string) string { return filepath.Join("../testdata/video", name) }

func sidecar(t *testing.T, episode, task string, n int) *table.Sidecar {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"episode_id":%q,"task":%q,"t":%d,"state":[%d,1.5]}`+"\n", episode, task, i, i)
	}
	sc, err := table.ParseSidecar(episode+".jsonl", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// robotTable creates table "robot" in warehouse wh: partitioned by task,
// one video column, two episodes in snapshot 1.
func robotTable(t *testing.T, wh string) *table.Table {
	t.Helper()
	store, err := storage.NewLocal(filepath.Join(wh, "robot"))
	if err != nil {
		t.Fatal(err)
	}
	return robotTableIn(t, store)
}

// robotTableIn creates the table robotTable describes in store.
func robotTableIn(t *testing.T, store storage.Store) *table.Table {
	t.Helper()
	ctx := context.Background()
	schema := table.Schema{
		Columns: []table.Column{
			{Name: "task", Type: "string"}, {Name: "t", Type: "int64"},
			{Name: "state", Type: "list<float32>", Nullable: true},
		},
		PartitionColumns: []string{"task"},
	}
	tbl, err := table.Create(ctx, store, schema, tabletest.Options())
	if err != nil {
		t.Fatal(err)
	}
	_, err = tbl.AddEpisodes(ctx, []table.EpisodeInput{
		{Videos: map[string]table.VideoFile{"": {Path: video("h264_bframes_gop30.mp4")}}, Sidecar: sidecar(t, "ep1", "pick", 40)},
		{Videos: map[string]table.VideoFile{"": {Path: video("hevc.mp4"), FirstFrame: 5}}, Sidecar: sidecar(t, "ep2", "place", 30)},
	}, table.AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func newFixture(t *testing.T, opts Options) *fixture {
	return newFixtureOf(t, opts, robotTable)
}

// newFixtureOf is newFixture with the table newTable creates in the
// warehouse.
func newFixtureOf(t *testing.T, opts Options, newTable func(t *testing.T, wh string) *table.Table) *fixture {
	return newFixtureServing(t, opts, newTable, serving.Options{CacheBytes: 16 << 20})
}

// newFixtureServing is newFixtureOf with a frame server of the given
// options.
func newFixtureServing(t *testing.T, opts Options, newTable func(t *testing.T, wh string) *table.Table, frames serving.Options) *fixture {
	testenv.RequireFUSE(t)
	f := &fixture{wh: t.TempDir(), mnt: filepath.Join(t.TempDir(), "mnt")}
	os.MkdirAll(f.mnt, 0o755)
	f.tbl = newTable(t, f.wh)
	f.frames = serving.New(decoder.Codec{}, frames)
	f.mount(t, dirWarehouse(t, f.wh), opts)
	return f
}

// mount serves wh at f.mnt with f.frames, and unmounts at cleanup (closing
// f.frames), checking that nothing stays mounted.
func (f *fixture) mount(t *testing.T, wh Warehouse, opts Options) {
	t.Helper()
	if opts.Refresh == 0 {
		opts.Refresh = 100 * time.Millisecond
	}
	var err error
	f.srv, err = MountWarehouse(f.mnt, f.wh, wh, f.frames, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The test reads its mount from the process that serves it: see
	// Server.
	f.srv.WaitMount()
	t.Cleanup(func() {
		if err := f.srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
			exec.Command("fusermount3", "-u", "-z", f.mnt).Run()
		}
		f.srv.Wait()
		f.frames.Close()
		if mounttest.Mounted(f.mnt) {
			t.Errorf("%s is still mounted", f.mnt)
		}
	})
}

// readOnlyMount mounts warehouse wh read-only, with a frame server of its
// own made with opts, as a training job's mount is.
func readOnlyMount(t *testing.T, wh string, opts serving.Options) *fixture {
	t.Helper()
	f := &fixture{wh: wh, mnt: filepath.Join(t.TempDir(), "mnt")}
	os.MkdirAll(f.mnt, 0o755)
	f.frames = serving.New(decoder.Codec{}, opts)
	f.mount(t, dirWarehouse(t, wh), Options{ReadOnly: true})
	return f
}

func (f *fixture) path(parts ...string) string {
	return filepath.Join(append([]string{f.mnt}, parts...)...)
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestLayout(t *testing.T) {
	f := newFixture(t, Options{})
	if got := strings.Join(names(t, f.mnt), " "); got != ".stats robot" {
		t.Errorf("root: %s", got)
	}
	if got := strings.Join(names(t, f.path("robot")), " "); got != "latest snapshots tags views" {
		t.Errorf("table: %s", got)
	}
	if target, err := os.Readlink(f.path("robot", "latest")); err != nil || target != "snapshots/1" {
		t.Errorf("latest -> %q %v", target, err)
	}
	if got := strings.Join(names(t, f.path("robot", "latest")), " "); got != "task=pick task=place" {
		t.Errorf("snapshot: %s", got)
	}
	ep := f.path("robot", "latest", "task=pick", "ep1")
	got := names(t, ep)
	if len(got) != 43 || got[0] != "000000.jpg" || got[39] != "000039.jpg" || got[40] != "frames.jsonl" || got[41] != "frames.parquet" || got[42] != "video.mp4" {
		t.Errorf("episode folder: %d entries %v...", len(got), got[:3])
	}
	data, err := os.ReadFile(filepath.Join(ep, "frames.jsonl"))
	if err != nil || bytes.Count(data, []byte("\n")) != 40 {
		t.Errorf("frames.jsonl: %d lines, %v", bytes.Count(data, []byte("\n")), err)
	}
	st, err := os.Stat(filepath.Join(ep, "000000.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := f.tbl.Snapshot(context.Background(), 1)
	e, err := f.tbl.Episode(context.Background(), snap, "ep1")
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().Equal(e.Time) {
		t.Errorf("mtime %v, the episode's commit time %v", st.ModTime(), e.Time)
	}
	st2, _ := os.Stat(filepath.Join(ep, "000000.jpg"))
	if st.Sys().(*syscall.Stat_t).Ino != st2.Sys().(*syscall.Stat_t).Ino {
		t.Error("inode numbers change between lookups")
	}
}

// TestFramesMatchDecoder reads every frame through the mount and compares
// it with the decoder's own output and with the size stat reported, once
// from the page cache that opening it filled and once through READ.
func TestFramesMatchDecoder(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	snap, _ := f.tbl.Head(ctx)
	eps, _ := f.tbl.Episodes(ctx, snap)
	var readsBefore int64
	var paths []string
	for _, e := range eps {
		ref := e.Videos["video"]
		v, err := f.tbl.OpenVideo(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		dv := media.Video{Key: media.VideoKey{Object: "direct/" + ref.Pack, Offset: ref.Offset, Length: ref.Length}, R: v.Payload, Size: ref.Length, Index: v.Index}
		dir := f.path("robot", "latest", "task="+e.Partition["task"], e.Episode)
		for i := int64(0); i < e.Rows; i++ {
			name := filepath.Join(dir, mounttree.FrameName(i, e.Rows, "jpg"))
			st, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := f.frames.Frame(ctx, dv, int(ref.FirstFrame+i), media.ImageSetting{Format: media.FormatJPEG, JPEGQuality: 90})
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(got)) != st.Size() || !bytes.Equal(got, want) {
				t.Fatalf("%s: %d bytes (stat %d), decoder gives %d bytes, equal=%v", name, len(got), st.Size(), len(want), bytes.Equal(got, want))
			}
			// Open put the image in the page cache, so reading it
			// needed no READ request. Once its pages are evicted, the
			// next read comes back through READ, with the same bytes.
			reads := f.srv.m.stats.frameReads.Load()
			if reads != readsBefore {
				t.Fatalf("%s: %d READ requests for a frame whose open filled the page cache", name, reads-readsBefore)
			}
			evictPages(t, name)
			again, err := os.ReadFile(name)
			if err != nil || !bytes.Equal(again, want) {
				t.Fatalf("%s after its pages were dropped: %d bytes, equal=%v, %v", name, len(again), bytes.Equal(again, want), err)
			}
			if readsBefore = f.srv.m.stats.frameReads.Load(); readsBefore == reads {
				t.Fatalf("%s: read after its pages were dropped without a READ request", name)
			}
			paths = append(paths, name)
		}
		v.Close()
	}
	// A second epoch over pages the kernel holds asks the decoder for
	// nothing.
	before := f.frames.CacheStats()
	for _, name := range paths {
		if _, err := os.ReadFile(name); err != nil {
			t.Fatal(err)
		}
	}
	if after := f.frames.CacheStats(); after.Hits+after.Misses != before.Hits+before.Misses {
		t.Errorf("reading %d frames held in the page cache again made %d image requests", len(paths), after.Hits+after.Misses-before.Hits-before.Misses)
	}
}

// evictPages drops the page-cache pages of a file.
func evictPages(t *testing.T, name string) {
	t.Helper()
	fd, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if err := unix.Fadvise(int(fd.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

func TestReadOnly(t *testing.T) {
	f := newFixture(t, Options{})
	checkReadOnly(t, f.path("robot", "snapshots", "1", "task=pick", "ep1"), "000003.jpg", map[string]func() error{
		"latest":  func() error { return os.Remove(f.path("robot", "latest")) },
		"snapdir": func() error { return os.Mkdir(f.path("robot", "snapshots", "9"), 0o755) },
		"tagfile": func() error { return os.WriteFile(f.path("robot", "tags", "x"), nil, 0o644) },
	})
}

// checkReadOnly tries every kind of change to an episode folder and one of
// its frames, and the extra ones: each must fail with EROFS and leave the
// frame as it was.
func checkReadOnly(t *testing.T, dir, frameName string, extra map[string]func() error) {
	t.Helper()
	frame := filepath.Join(dir, frameName)
	before, _ := os.ReadFile(frame)
	attempts := map[string]func() error{
		"create":   func() error { return os.WriteFile(filepath.Join(dir, "new.jpg"), []byte("x"), 0o644) },
		"write":    func() error { return os.WriteFile(frame, []byte("x"), 0o644) },
		"truncate": func() error { return os.Truncate(frame, 0) },
		"unlink":   func() error { return os.Remove(frame) },
		"rename":   func() error { return os.Rename(frame, filepath.Join(dir, "x.jpg")) },
		"chmod":    func() error { return os.Chmod(frame, 0o777) },
		"mkdir":    func() error { return os.Mkdir(filepath.Join(dir, "d"), 0o755) },
		"rmdir":    func() error { return os.Remove(dir) },
		"symlink":  func() error { return os.Symlink("x", filepath.Join(dir, "l")) },
		"setxattr": func() error { return syscall.Setxattr(frame, "user.x", []byte("1"), 0) },
		"rows":     func() error { return os.WriteFile(filepath.Join(dir, "frames.jsonl"), nil, 0o644) },
	}
	for op, try := range extra {
		attempts[op] = try
	}
	for op, try := range attempts {
		if err := try(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", op, err)
		}
	}
	after, _ := os.ReadFile(frame)
	if !bytes.Equal(before, after) || len(after) == 0 {
		t.Error("a refused write changed the frame")
	}
}

func TestXattrs(t *testing.T) {
	f := newFixture(t, Options{})
	frame := f.path("robot", "latest", "task=place", "ep2", "000007.jpg")
	get := func(name string) string {
		buf := make([]byte, 256)
		n, err := syscall.Getxattr(frame, name, buf)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return string(buf[:n])
	}
	if got := get("user.episode_id"); got != "ep2" {
		t.Errorf("episode_id %q", got)
	}
	if got := get("user.t"); got != "7" {
		t.Errorf("t %q", got)
	}
	if got := get("user.state"); got != "[7,1.5]" {
		t.Errorf("state %q", got)
	}
	buf := make([]byte, 1024)
	n, err := syscall.Listxattr(frame, buf)
	if err != nil || !strings.Contains(string(buf[:n]), "user.task\x00") {
		t.Errorf("listxattr %q %v", buf[:n], err)
	}
}

// TestNewCommitsAndExpire: a commit shows up under latest without a
// remount, and an expired snapshot disappears while an open file of it
// keeps working.
func TestNewCommitsAndExpire(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	old, err := os.Open(f.path("robot", "snapshots", "1", "task=pick", "ep1", "000001.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := f.tbl.AddEpisodes(ctx, []table.EpisodeInput{
		{Videos: map[string]table.VideoFile{"": {Path: video("h264_gop250.mp4")}}, Sidecar: sidecar(t, "ep3", "pick", 20)},
	}, table.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		target, _ := os.Readlink(f.path("robot", "latest"))
		if target == "snapshots/2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("latest still points to %q", target)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(f.path("robot", "latest", "task=pick", "ep3", "000019.jpg")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.tbl.Expire(ctx, table.ExpireOptions{KeepLast: 1}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		_, err := os.Stat(f.path("robot", "snapshots", "1"))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("expired snapshot 1 still there: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	buf := make([]byte, 4)
	if _, err := old.ReadAt(buf, 0); err != nil || !bytes.Equal(buf[:2], []byte{0xff, 0xd8}) {
		t.Fatalf("open file of an expired snapshot: %x %v", buf, err)
	}
}

// TestClients runs the tools users run against the mount.
func TestClients(t *testing.T) {
	f := newFixture(t, Options{Image: ImageChoice{ImageOptions: table.ImageOptions{Format: "bmp"}}})
	snap := f.path("robot", "snapshots", "1")
	out := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		b, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, b)
		}
		return string(b)
	}
	if n := strings.Count(run("find", snap, "-name", "*.bmp"), "\n"); n != 70 {
		t.Errorf("find: %d frames, want 70", n)
	}
	run("cp", "-r", snap, filepath.Join(out, "cp"))
	run("tar", "cf", filepath.Join(out, "snap.tar"), "-C", snap, ".")
	run("mkdir", filepath.Join(out, "tar"))
	run("tar", "xf", filepath.Join(out, "snap.tar"), "-C", filepath.Join(out, "tar"))
	run("diff", "-r", filepath.Join(out, "cp"), filepath.Join(out, "tar"))
	run("diff", "-r", snap, filepath.Join(out, "cp"))
	run("rsync", "-a", snap+"/", filepath.Join(out, "rsync"))
	run("diff", "-r", snap, filepath.Join(out, "rsync"))
	// du of the files adds up what stat announced; the copy must agree.
	du := run("find", snap, "-type", "f", "-printf", "%s\n")
	duCopy := run("find", filepath.Join(out, "cp"), "-type", "f", "-printf", "%s\n")
	if sum(du) != sum(duCopy) || sum(du) == 0 {
		t.Errorf("file sizes: mount %d bytes, copy %d bytes", sum(du), sum(duCopy))
	}
	run("du", "-s", snap)
	stats, err := os.ReadFile(f.path(".stats"))
	if err != nil || !strings.Contains(string(stats), "framefs_frames_served_total") {
		t.Errorf(".stats: %v %s", err, stats)
	}
}

func sum(lines string) int64 {
	var total int64
	for _, l := range strings.Fields(lines) {
		var n int64
		fmt.Sscan(l, &n)
		total += n
	}
	return total
}
