package inprocess

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/fusefs"
	"github.com/framefs/framefs/internal/treetest"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/table"
)

// pageCache stands in for the kernel's page cache: fusefs stores a whole
// frame image in it when the frame is first opened.
type pageCache struct {
	fs.ServerCallbacks // nil: any other notification panics the test
	mu                 sync.Mutex
	stored             map[uint64][]byte
}

func (c *pageCache) InodeNotifyStoreCache(node uint64, off int64, data []byte) fuse.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	if off != 0 {
		return fuse.EINVAL
	}
	c.stored[node] = slices.Clone(data)
	return fuse.OK
}

func (c *pageCache) get(node uint64) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stored[node]
}

// tree is a table's node tree served in process.
type tree struct {
	t      *testing.T
	tbl    *table.Table
	frames *treetest.Frames
	cache  *pageCache
	raw    fuse.RawFileSystem
}

const rootID = 1 // FUSE_ROOT_ID

func newTree(t *testing.T, tbl *table.Table, opts fusefs.Options) *tree {
	t.Helper()
	tr := &tree{t: t, tbl: tbl, frames: &treetest.Frames{}, cache: &pageCache{stored: map[uint64][]byte{}}}
	root, err := fusefs.NewTableRoot(context.Background(), tbl, tr.frames, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(root.Close)
	second := time.Second
	tr.raw = fs.NewNodeFS(root.Node(), &fs.Options{EntryTimeout: &second, AttrTimeout: &second, ServerCallbacks: tr.cache})
	return tr
}

func header(node uint64) fuse.InHeader {
	return fuse.InHeader{NodeId: node, Caller: fuse.Caller{Owner: fuse.Owner{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}}}
}

func (tr *tree) lookup(parent uint64, name string) (fuse.EntryOut, fuse.Status) {
	h := header(parent)
	var out fuse.EntryOut
	st := tr.raw.Lookup(nil, &h, name, &out)
	return out, st
}

// walk resolves path from the root as the kernel does: a lookup per
// element, following symlinks (latest, tags) by their targets, "..
// " going up. It returns the last entry, not followed if it is a symlink.
func (tr *tree) walk(path string) fuse.EntryOut {
	tr.t.Helper()
	dirs := []fuse.EntryOut{{NodeId: rootID}} // the folders from the root down
	names := strings.Split(path, "/")
	for hops := 0; len(names) > 0; {
		name := names[0]
		names = names[1:]
		if name == ".." {
			dirs = dirs[:max(1, len(dirs)-1)]
			continue
		}
		out, st := tr.lookup(dirs[len(dirs)-1].NodeId, name)
		if !st.Ok() {
			tr.t.Fatalf("lookup %s (at %q): %v", path, name, st)
		}
		if out.Mode&syscall.S_IFMT == syscall.S_IFLNK && len(names) > 0 {
			if hops++; hops > 8 {
				tr.t.Fatalf("lookup %s: too many symlinks", path)
			}
			names = append(strings.Split(tr.readlink(out.NodeId), "/"), names...)
			continue
		}
		dirs = append(dirs, out)
	}
	return dirs[len(dirs)-1]
}

// list reads a directory with OPENDIR, READDIRPLUS and RELEASEDIR, as
// `ls -l` makes the kernel do, and returns its names ("." and ".."
// left out) with the entries READDIRPLUS looked up.
func (tr *tree) list(node uint64) ([]string, map[string]fuse.EntryOut) {
	tr.t.Helper()
	var open fuse.OpenOut
	if st := tr.raw.OpenDir(nil, &fuse.OpenIn{InHeader: header(node)}, &open); !st.Ok() {
		tr.t.Fatalf("opendir %d: %v", node, st)
	}
	defer tr.raw.ReleaseDir(&fuse.ReleaseIn{InHeader: header(node), Fh: open.Fh})
	var names []string
	entries := map[string]fuse.EntryOut{}
	var off uint64
	for {
		buf := make([]byte, 4096)
		list := fuse.NewDirEntryList(buf, off)
		in := &fuse.ReadIn{InHeader: header(node), Fh: open.Fh, Offset: off, Size: uint32(len(buf))}
		if st := tr.raw.ReadDirPlus(nil, in, list); !st.Ok() {
			tr.t.Fatalf("readdirplus %d: %v", node, st)
		}
		des, outs, err := fuse.ParseDirLookupEntries(list.Bytes())
		if err != nil {
			tr.t.Fatal(err)
		}
		if len(des) == 0 {
			return names, entries
		}
		for i, de := range des {
			off = de.Off
			if de.Name == "." || de.Name == ".." {
				continue
			}
			names = append(names, de.Name)
			entries[de.Name] = outs[i]
		}
	}
}

func (tr *tree) getattr(node uint64) fuse.AttrOut {
	tr.t.Helper()
	var out fuse.AttrOut
	if st := tr.raw.GetAttr(nil, &fuse.GetAttrIn{InHeader: header(node)}, &out); !st.Ok() {
		tr.t.Fatalf("getattr %d: %v", node, st)
	}
	return out
}

func (tr *tree) readlink(node uint64) string {
	tr.t.Helper()
	h := header(node)
	target, st := tr.raw.Readlink(nil, &h)
	if !st.Ok() {
		tr.t.Fatalf("readlink %d: %v", node, st)
	}
	return string(target)
}

// open opens a file read-only.
func (tr *tree) open(node uint64) (fuse.OpenOut, fuse.Status) {
	var out fuse.OpenOut
	st := tr.raw.Open(nil, &fuse.OpenIn{InHeader: header(node), Flags: syscall.O_RDONLY}, &out)
	return out, st
}

// read reads an open file to its end in reads of chunk bytes.
func (tr *tree) read(node, fh uint64, chunk int) []byte {
	tr.t.Helper()
	var data []byte
	for {
		buf := make([]byte, chunk)
		in := &fuse.ReadIn{InHeader: header(node), Fh: fh, Offset: uint64(len(data)), Size: uint32(chunk)}
		res, st := tr.raw.Read(nil, in, buf)
		if !st.Ok() {
			tr.t.Fatalf("read %d at %d: %v", node, len(data), st)
		}
		b, st := res.Bytes(buf)
		if !st.Ok() {
			tr.t.Fatal(st)
		}
		data = append(data, b...)
		if len(b) < chunk {
			return data
		}
	}
}

func (tr *tree) release(node, fh uint64) {
	tr.raw.Release(nil, &fuse.ReleaseIn{InHeader: header(node), Fh: fh})
}

// readFile opens, reads and releases a file.
func (tr *tree) readFile(node uint64) []byte {
	tr.t.Helper()
	open, st := tr.open(node)
	if !st.Ok() {
		tr.t.Fatalf("open %d: %v", node, st)
	}
	defer tr.release(node, open.Fh)
	return tr.read(node, open.Fh, 4096)
}

// videoKey is the key fusefs gives the decoder for an episode's video.
func (tr *tree) videoKey(episode string) (media.VideoKey, table.VideoRef) {
	tr.t.Helper()
	ctx := context.Background()
	snap, err := tr.tbl.Snapshot(ctx, 1)
	if err != nil {
		tr.t.Fatal(err)
	}
	e, err := tr.tbl.Episode(ctx, snap, episode)
	if err != nil {
		tr.t.Fatal(err)
	}
	if len(e.Videos) != 1 {
		tr.t.Fatalf("episode %s has %d videos", episode, len(e.Videos))
	}
	var ref table.VideoRef
	for _, r := range e.Videos {
		ref = r
	}
	return media.VideoKey{Object: ref.Pack, Offset: ref.Offset, Length: ref.Length}, ref
}

// served is the image setting the table's frames are served with: its
// schema's.
func (tr *tree) served() media.ImageSetting {
	tr.t.Helper()
	schema, err := tr.tbl.LatestSchema(context.Background())
	if err != nil {
		tr.t.Fatal(err)
	}
	s, err := media.SettingFor(schema.Image.Format, schema.Image.JPEGQuality)
	if err != nil {
		tr.t.Fatal(err)
	}
	return s
}

func TestRootListing(t *testing.T) {
	tr := newTree(t, treetest.RobotTable(t), fusefs.Options{ReadOnly: true})
	names, entries := tr.list(rootID)
	if got := strings.Join(names, " "); got != "latest snapshots tags views .stats" {
		t.Errorf("root lists %q", got)
	}
	for name, mode := range map[string]uint32{"latest": fuse.S_IFLNK, "snapshots": fuse.S_IFDIR, "tags": fuse.S_IFDIR, "views": fuse.S_IFDIR, ".stats": fuse.S_IFREG} {
		e := entries[name]
		if e.NodeId == 0 || e.Mode&syscall.S_IFMT != mode {
			t.Errorf("%s: node %d, mode %o; want a node of type %o", name, e.NodeId, e.Mode, mode)
		}
	}
	if a := tr.getattr(rootID); a.Mode != fuse.S_IFDIR|0o555 || a.Uid != uint32(os.Getuid()) {
		t.Errorf("root: mode %o uid %d", a.Mode, a.Uid)
	}
	if got := tr.readlink(tr.walk("latest").NodeId); got != "snapshots/1" {
		t.Errorf("latest -> %q", got)
	}
	if names, _ := tr.list(tr.walk("snapshots").NodeId); !slices.Equal(names, []string{"1"}) {
		t.Errorf("snapshots/ lists %q", names)
	}
	if names, _ := tr.list(tr.walk("tags").NodeId); !slices.Equal(names, []string{"v1"}) {
		t.Errorf("tags/ lists %q", names)
	}
	if got := tr.readlink(tr.walk("tags/v1").NodeId); got != "../snapshots/1" {
		t.Errorf("tags/v1 -> %q", got)
	}
	if names, _ := tr.list(tr.walk("views").NodeId); len(names) != 0 {
		t.Errorf("views/ of a table without views lists %q", names)
	}
	if names, _ := tr.list(tr.walk("snapshots/1").NodeId); !slices.Equal(names, []string{"task=pick", "task=place"}) {
		t.Errorf("snapshots/1 lists %q", names)
	}
	stats := string(tr.readFile(tr.walk(".stats").NodeId))
	if !strings.Contains(stats, "framefs_lookups_total ") || !strings.Contains(stats, "framefs_frames_served_total 0\n") {
		t.Errorf(".stats:\n%s", stats)
	}
	// A writable tree without a staging directory has no write
	// directories either.
	tw := newTree(t, tr.tbl, fusefs.Options{})
	if names, _ := tw.list(rootID); slices.Contains(names, "ingest") || slices.Contains(names, "replace") {
		t.Errorf("a tree without staging lists %q", names)
	}
}

// TestEpisode: an episode folder lists its frames, rows files and video;
// a frame's stat size is its image's exact size, known without making the
// image; reading gives the server's bytes for the right video and ordinal.
func TestEpisode(t *testing.T) {
	tr := newTree(t, treetest.RobotTable(t), fusefs.Options{ReadOnly: true})
	for _, tc := range []struct {
		path       string
		rows       int
		firstFrame int
	}{
		{"latest/task=pick/ep1", 40, 0},
		{"tags/v1/task=place/ep2", 30, 5},
	} {
		key, ref := tr.videoKey(filepath.Base(tc.path))
		ep := tr.walk(tc.path)
		names, entries := tr.list(ep.NodeId)
		if len(names) != tc.rows+3 || names[0] != "000000.jpg" || names[tc.rows-1] != fmt.Sprintf("%06d.jpg", tc.rows-1) ||
			!slices.Equal(names[tc.rows:], []string{"video.mp4", "frames.jsonl", "frames.parquet"}) {
			t.Fatalf("%s lists %d names: %q", tc.path, len(names), names)
		}
		for _, row := range []int{0, 1, tc.rows - 1} {
			name := fmt.Sprintf("%06d.jpg", row)
			want := treetest.Image(key, tc.firstFrame+row, tr.served())
			// Its size is not stored: the listing makes no image to
			// give it, and leaves it to the lookup.
			if e := entries[name]; e.NodeId != 0 || e.Size != 0 {
				t.Errorf("%s/%s: READDIRPLUS gives node %d of size %d, want none", tc.path, name, e.NodeId, e.Size)
			}
			e := tr.walk(tc.path + "/" + name)
			if e.Size != uint64(len(want)) || e.Mode != fuse.S_IFREG|0o444 {
				t.Errorf("%s/%s: lookup size %d mode %o, want %d, regular 0444", tc.path, name, e.Size, e.Mode, len(want))
			}
			if a := tr.getattr(e.NodeId); a.Size != uint64(len(want)) {
				t.Errorf("%s/%s: getattr size %d, want %d", tc.path, name, a.Size, len(want))
			}
			if got := tr.readFile(e.NodeId); !bytes.Equal(got, want) {
				t.Errorf("%s/%s reads %q..., want %q...", tc.path, name, got[:min(len(got), 40)], want[:40])
			}
		}
		video := tr.walk(tc.path + "/video.mp4")
		data, err := os.ReadFile(treetest.Video(map[string]string{"ep1": "h264_bframes_gop30.mp4", "ep2": "hevc.mp4"}[filepath.Base(tc.path)]))
		if err != nil {
			t.Fatal(err)
		}
		if video.Size != uint64(ref.Length) || !bytes.Equal(tr.readFile(video.NodeId), data) {
			t.Errorf("%s/video.mp4 (%d bytes) is not the ingested video (%d bytes)", tc.path, video.Size, len(data))
		}
		rows := tr.readFile(tr.walk(tc.path + "/frames.jsonl").NodeId)
		if n := bytes.Count(rows, []byte("\n")); n != tc.rows || !bytes.Contains(rows, []byte(`"t":1`)) {
			t.Errorf("%s/frames.jsonl: %d lines:\n%s", tc.path, n, rows)
		}
	}
	// Sizes (none stored at ingest) come frame by frame, for the frames
	// looked up only, and only the frames read were made.
	if tr.frames.SizeCalls() != 0 {
		t.Errorf("FrameSizes called %d times; a JPEG's size needs its image", tr.frames.SizeCalls())
	}
	if got := tr.frames.Sized(); !slices.Equal(got, []int{0, 1, 39, 5, 6, 34}) {
		t.Errorf("frames sized: %v", got)
	}
	if got := tr.frames.Asked(); !slices.Equal(got, []int{0, 1, 39, 5, 6, 34}) {
		t.Errorf("frames made: %v", got)
	}
}

// TestFrameOpenAndRead: the first open hands the whole image to the page
// cache and keeps it for reads; a later open makes it again only when a
// READ comes (the kernel dropped the pages).
func TestFrameOpenAndRead(t *testing.T) {
	tr := newTree(t, treetest.RobotTable(t), fusefs.Options{ReadOnly: true})
	key, _ := tr.videoKey("ep1")
	want := treetest.Image(key, 12, tr.served())
	e := tr.walk("snapshots/1/task=pick/ep1/000012.jpg")
	open, st := tr.open(e.NodeId)
	if !st.Ok() {
		t.Fatal(st)
	}
	if open.OpenFlags&fuse.FOPEN_KEEP_CACHE == 0 {
		t.Errorf("open flags %x lack FOPEN_KEEP_CACHE", open.OpenFlags)
	}
	if got := tr.cache.get(e.NodeId); !bytes.Equal(got, want) {
		t.Errorf("open stored %d bytes in the page cache, want the %d-byte image", len(got), len(want))
	}
	if got := tr.read(e.NodeId, open.Fh, 7); !bytes.Equal(got, want) {
		t.Errorf("reads of 7 bytes give %q", got)
	}
	tr.release(e.NodeId, open.Fh)
	if n := len(tr.frames.Asked()); n != 1 {
		t.Errorf("%d images made for one open", n)
	}
	open, st = tr.open(e.NodeId)
	if !st.Ok() {
		t.Fatal(st)
	}
	if n := len(tr.frames.Asked()); n != 1 {
		t.Errorf("a second open made the image again (%d made)", n)
	}
	if got := tr.read(e.NodeId, open.Fh, 1<<16); !bytes.Equal(got, want) {
		t.Errorf("a read after the second open gives %q", got)
	}
	tr.release(e.NodeId, open.Fh)
	if got := tr.frames.Asked(); !slices.Equal(got, []int{12, 12}) {
		t.Errorf("frames made: %v", got)
	}
}

// TestNames: only the names the folders list resolve; everything else,
// hostile names included, is ENOENT, and nothing is decoded for them.
// ("." and ".." never reach the file system: the kernel resolves them.)
func TestNames(t *testing.T) {
	tr := newTree(t, treetest.RobotTable(t), fusefs.Options{ReadOnly: true})
	ep := tr.walk("latest/task=pick/ep1").NodeId
	for _, name := range []string{"000000.jpg", "000039.jpg", "frames.jsonl", "frames.parquet", "video.mp4"} {
		if _, st := tr.lookup(ep, name); !st.Ok() {
			t.Errorf("lookup %q: %v", name, st)
		}
	}
	hostile := []string{
		"000040.jpg", "999999.jpg", "00039.jpg", "0000039.jpg", "000001.png", "000001.JPG", "000001.jpeg",
		"-00001.jpg", "+00001.jpg", " 00001.jpg", "000001.jpg ", "0x0001.jpg", "00001_.jpg", "1e1.jpg",
		"000001.jpg\x00", "000001.jpg/", "../000001.jpg", "", "a/b", "\xff\xfe.jpg",
		"٠٠٠٠٠١.jpg", strings.Repeat("0", 300) + "1.jpg", "-9223372036854775808.jpg", "9223372036854775808.jpg",
		"video.mp4.jpg", "frames.jsonl ", "FRAMES.JSONL", "video.MP4", "video_.mp4",
	}
	for _, name := range hostile {
		if _, st := tr.lookup(ep, name); st != fuse.ENOENT {
			t.Errorf("lookup %q in an episode: %v, want ENOENT", name, st)
		}
	}
	for _, tc := range []struct {
		dir   uint64
		names []string
	}{
		{rootID, []string{"Latest", "snapshot", "ingest", "replace", "latest/", "\x00"}},
		{tr.walk("snapshots").NodeId, []string{"0", "-1", "01", "+1", "1.0", "1e0", "2", "9223372036854775808", " 1", "0x1"}},
		{tr.walk("tags").NodeId, []string{"v2", "V1", "v1/", "../v1", ""}},
		{tr.walk("snapshots/1").NodeId, []string{"task=Pick", "task=", "ep1", "pick", "task=pick/ep1"}},
		{tr.walk("views").NodeId, []string{"x", "x.where", "x.error", ".x@1-00000000", ".x@0-0", "@1-0"}},
	} {
		for _, name := range tc.names {
			if _, st := tr.lookup(tc.dir, name); st != fuse.ENOENT {
				t.Errorf("lookup %q in node %d: %v, want ENOENT", name, tc.dir, st)
			}
		}
	}
	if got := tr.frames.Asked(); len(got) != 0 {
		t.Errorf("lookups made images: %v", got)
	}
}

// TestErrno: errors map to the errno POSIX gives them: writes to
// read-only trees EROFS, frames the server has no image for ENOENT, any
// other failure EIO (and only that frame fails).
func TestErrno(t *testing.T) {
	tbl := treetest.RobotTable(t)
	for _, readOnly := range []bool{true, false} {
		tr := newTree(t, tbl, fusefs.Options{ReadOnly: readOnly})
		ep := tr.walk("snapshots/1/task=pick/ep1")
		frame := tr.walk("snapshots/1/task=pick/ep1/000003.jpg")
		create := func(dir uint64, name string) fuse.Status {
			in := &fuse.CreateIn{InHeader: header(dir), Flags: syscall.O_WRONLY | syscall.O_CREAT, Mode: 0o644}
			var out fuse.CreateOut
			return tr.raw.Create(nil, in, name, &out)
		}
		for _, tc := range []struct {
			op   string
			st   fuse.Status
			want fuse.Status
		}{
			{"create in an episode", create(ep.NodeId, "new.jpg"), fuse.EROFS},
			{"create in snapshots/", create(tr.walk("snapshots").NodeId, "2"), fuse.EROFS},
			{"create in tags/", create(tr.walk("tags").NodeId, "v2"), fuse.EROFS},
			{"create at the root", create(rootID, "x"), fuse.EROFS},
			{"mkdir in an episode", tr.raw.Mkdir(nil, &fuse.MkdirIn{InHeader: header(ep.NodeId), Mode: 0o755}, "d", &fuse.EntryOut{}), fuse.EROFS},
			{"unlink a frame", tr.raw.Unlink(nil, ptr(header(ep.NodeId)), "000003.jpg"), fuse.EROFS},
			{"truncate a frame", tr.raw.SetAttr(nil, &fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: header(frame.NodeId), Valid: fuse.FATTR_SIZE}}, &fuse.AttrOut{}), fuse.EROFS},
			{"open a frame for writing", tr.raw.Open(nil, &fuse.OpenIn{InHeader: header(frame.NodeId), Flags: syscall.O_RDWR}, &fuse.OpenOut{}), fuse.EROFS},
		} {
			if tc.st != tc.want {
				t.Errorf("read-only %v: %s: %v, want %v", readOnly, tc.op, tc.st, tc.want)
			}
		}
		if readOnly {
			if st := create(tr.walk("views").NodeId, "x.where"); st != fuse.EROFS {
				t.Errorf("create views/x.where in a read-only tree: %v, want EROFS", st)
			}
		}
	}

	tr := newTree(t, tbl, fusefs.Options{ReadOnly: true})
	tr.frames.Fail(map[int]error{
		7: fmt.Errorf("decode: %w", media.ErrFrameRange),
		8: errors.New("packet 8 is corrupt"),
	})
	// Their sizes are not stored: the lookup makes the image, and fails
	// as making it failed.
	ep := tr.walk("latest/task=pick/ep1")
	for name, want := range map[string]fuse.Status{"000007.jpg": fuse.ENOENT, "000008.jpg": fuse.EIO, "000009.jpg": fuse.OK} {
		e, st := tr.lookup(ep.NodeId, name)
		if st != want {
			t.Errorf("lookup %s: %v, want %v", name, st, want)
		}
		if !st.Ok() {
			continue
		}
		open, st := tr.open(e.NodeId)
		if st != fuse.OK {
			t.Errorf("open %s: %v", name, st)
		} else {
			tr.release(e.NodeId, open.Fh)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestImageChoice: the mount's image choice over the table's setting
// names the files and reaches the server.
func TestImageChoice(t *testing.T) {
	tr := newTree(t, treetest.RobotTable(t), fusefs.Options{ReadOnly: true,
		Image: fusefs.ImageChoice{ImageOptions: table.ImageOptions{Format: "png"}, Width: 64}})
	key, _ := tr.videoKey("ep1")
	names, _ := tr.list(tr.walk("latest/task=pick/ep1").NodeId)
	if names[0] != "000000.png" || names[39] != "000039.png" {
		t.Errorf("frames are named %q ... %q", names[0], names[39])
	}
	want := treetest.Image(key, 2, media.ImageSetting{Format: media.FormatPNG, Width: 64})
	if got := tr.readFile(tr.walk("latest/task=pick/ep1/000002.png").NodeId); !bytes.Equal(got, want) {
		t.Errorf("000002.png reads %q", got[:min(len(got), 60)])
	}
	if _, st := tr.lookup(tr.walk("latest/task=pick/ep1").NodeId, "000002.jpg"); st != fuse.ENOENT {
		t.Errorf("lookup of a .jpg in a PNG mount: %v", st)
	}
}

// statsValue reads one value of the tree's .stats.
func (tr *tree) statsValue(name string) int64 {
	tr.t.Helper()
	for _, line := range strings.Split(string(tr.readFile(tr.walk(".stats").NodeId)), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tr.t.Fatalf("%s: %q", name, line)
			}
			return n
		}
	}
	tr.t.Fatalf(".stats has no %s", name)
	return 0
}

// TestLookupsReuseNodes: after a commit, looking up the files of an
// unchanged episode in the new head makes nodes for the new folders only:
// its frames, rows files and video are the inodes the daemon already has
// (their numbers name the episode version), and get the same node ids.
func TestLookupsReuseNodes(t *testing.T) {
	tbl := treetest.RobotTable(t)
	tr := newTree(t, tbl, fusefs.Options{ReadOnly: true, Refresh: time.Millisecond})
	const ep1 = "latest/task=pick/ep1"
	names, _ := tr.list(tr.walk(ep1).NodeId)
	if len(names) != 43 {
		t.Fatalf("%s lists %d names, want 40 frames, a video and two rows files", ep1, len(names))
	}
	files := append(names[:3:3], names[40:]...)
	nodes := func() map[string]uint64 {
		ids := map[string]uint64{}
		for _, name := range files {
			ids[name] = tr.walk(ep1 + "/" + name).NodeId
		}
		return ids
	}
	before := nodes()
	made := tr.statsValue("framefs_nodes_made_total")
	if _, err := tbl.UpdateRows(context.Background(), "ep2", treetest.Rows(t, "ep2", "place", 30)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // past the refresh interval
	if target := tr.readlink(tr.walk("latest").NodeId); target != "snapshots/2" {
		t.Fatalf("latest -> %s after the commit", target)
	}
	after := nodes()
	// snapshots/2, task=pick and ep1 are new folders.
	if n := tr.statsValue("framefs_nodes_made_total") - made; n != 3 {
		t.Errorf("looking up the files of an unchanged episode in the new head made %d nodes, want 3 (its folders)", n)
	}
	for _, name := range files {
		if before[name] == 0 || after[name] != before[name] {
			t.Errorf("%s: node %d in snapshot 1, %d in snapshot 2", name, before[name], after[name])
		}
	}
}

// TestMetadataCacheBytesShown: .stats shows what the metadata caches
// hold, which reading a rows file adds to.
func TestMetadataCacheBytesShown(t *testing.T) {
	tr := newTree(t, treetest.RobotTable(t), fusefs.Options{ReadOnly: true})
	before := tr.statsValue("framefs_metadata_cache_bytes")
	jsonl := tr.readFile(tr.walk("latest/task=pick/ep1/frames.jsonl").NodeId)
	if after := tr.statsValue("framefs_metadata_cache_bytes"); after < before+int64(len(jsonl)) {
		t.Errorf("framefs_metadata_cache_bytes went from %d to %d reading a %d-byte frames.jsonl", before, after, len(jsonl))
	}
}

// TestListingSizes: a listing gives the kernel no file's node or
// attributes and makes no frame, whatever the image setting (files are
// looked up when used: a node handed out with a listing would live until
// the kernel forgets it). A file looked up then has its size: a BMP frame
// from the picture size (one FrameSizes call for the video, no frame
// made).
func TestListingSizes(t *testing.T) {
	tbl := treetest.RobotTable(t)
	bmp := newTree(t, tbl, fusefs.Options{ReadOnly: true, Image: fusefs.ImageChoice{ImageOptions: table.ImageOptions{Format: "bmp"}}})
	jpg := newTree(t, tbl, fusefs.Options{ReadOnly: true})
	for name, tr := range map[string]*tree{"BMP": bmp, "JPEG": jpg} {
		names, entries := tr.list(tr.walk("latest/task=pick/ep1").NodeId)
		for _, n := range names {
			if e := entries[n]; e.NodeId != 0 {
				t.Errorf("%s listing: %s has node %d of size %d, want none", name, n, e.NodeId, e.Size)
			}
		}
		for _, n := range []string{"video.mp4", "frames.jsonl"} {
			if e := tr.walk("latest/task=pick/ep1/" + n); e.NodeId == 0 || e.Size == 0 {
				t.Errorf("%s: %s looked up has node %d of size %d, want both", name, n, e.NodeId, e.Size)
			}
		}
		if sized, made := tr.frames.Sized(), tr.frames.Asked(); len(sized) != 0 || len(made) != 0 {
			t.Errorf("%s listing made frames: sized %v, made %v", name, sized, made)
		}
	}
	key, _ := bmp.videoKey("ep1")
	for i := range 3 {
		want := treetest.Image(key, i, media.ImageSetting{Format: media.FormatBMP})
		if e := bmp.walk(fmt.Sprintf("latest/task=pick/ep1/%06d.bmp", i)); e.NodeId == 0 || e.Size != uint64(len(want)) {
			t.Errorf("BMP frame %d looked up: node %d of size %d, want a node of size %d", i, e.NodeId, e.Size, len(want))
		}
	}
	if n, sized, made := bmp.frames.SizeCalls(), bmp.frames.Sized(), bmp.frames.Asked(); n != 1 || len(sized) != 0 || len(made) != 0 {
		t.Errorf("BMP lookups: %d FrameSizes calls, frames sized %v, made %v; want 1 call and none", n, sized, made)
	}
}
