package fusefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/table"
)

// frameNames lists the frame files of a folder.
func frameNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range names(t, dir) {
		if strings.HasSuffix(n, ".jpg") || strings.HasSuffix(n, ".bmp") || strings.HasSuffix(n, ".png") {
			out = append(out, n)
		}
	}
	return out
}

func TestViewLayout(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "late", Where: "t >= 25"}); err != nil {
		t.Fatal(err)
	}
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "picks", Where: "task = 'pick' AND t < 3", Snapshot: 1}); err != nil {
		t.Fatal(err)
	}
	views := f.path("robot", "views")
	if got := strings.Join(names(t, views), " "); got != "late late.where picks picks.where" {
		t.Fatalf("views/: %s", got)
	}
	target, err := os.Readlink(filepath.Join(views, "late"))
	if err != nil || !strings.HasPrefix(target, ".late@1-") {
		t.Fatalf("late -> %q (%v)", target, err)
	}
	if data, err := os.ReadFile(filepath.Join(views, "late.where")); err != nil || string(data) != "t >= 25\n" {
		t.Errorf("late.where: %q %v", data, err)
	}
	late := filepath.Join(views, "late")
	if got := strings.Join(names(t, late), " "); got != "task=pick task=place" {
		t.Errorf("late/: %s", got)
	}
	ep1 := filepath.Join(late, "task=pick", "ep1")
	got := names(t, ep1)
	if len(got) != 18 || got[0] != "000025.jpg" || got[14] != "000039.jpg" || got[15] != "frames.jsonl" || got[17] != "video.mp4" {
		t.Errorf("late/task=pick/ep1: %v", got)
	}
	if got := frameNames(t, filepath.Join(late, "task=place", "ep2")); strings.Join(got, " ") != "000025.jpg 000026.jpg 000027.jpg 000028.jpg 000029.jpg" {
		t.Errorf("late/task=place/ep2: %v", got)
	}
	// Episodes and partitions without a match do not appear.
	if got := strings.Join(names(t, filepath.Join(views, "picks")), " "); got != "task=pick" {
		t.Errorf("picks/: %s", got)
	}
	if _, err := os.Stat(filepath.Join(ep1, "000003.jpg")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a frame the view leaves out: %v", err)
	}
	// The rows files hold the view's rows, with their ordinals.
	jsonl, err := os.ReadFile(filepath.Join(ep1, "frames.jsonl"))
	if err != nil || bytes.Count(jsonl, []byte("\n")) != 15 || !bytes.Contains(jsonl, []byte(`"frame":25`)) || bytes.Contains(jsonl, []byte(`"frame":24`)) {
		t.Errorf("frames.jsonl: %s %v", jsonl, err)
	}
	if pq, err := os.ReadFile(filepath.Join(ep1, "frames.parquet")); err != nil || !bytes.HasPrefix(pq, []byte("PAR1")) {
		t.Errorf("frames.parquet: %v", err)
	}
	// The same bytes, and attributes, as under snapshots/.
	for _, name := range []string{"000025.jpg", "000031.jpg", "000039.jpg"} {
		inView, err := os.ReadFile(filepath.Join(ep1, name))
		if err != nil {
			t.Fatal(err)
		}
		inSnap, err := os.ReadFile(f.path("robot", "snapshots", "1", "task=pick", "ep1", name))
		if err != nil || !bytes.Equal(inView, inSnap) {
			t.Errorf("%s differs from the snapshot's (%v)", name, err)
		}
		st, _ := os.Stat(filepath.Join(ep1, name))
		if st.Size() != int64(len(inView)) {
			t.Errorf("%s: stat says %d bytes, read %d", name, st.Size(), len(inView))
		}
	}
	buf := make([]byte, 64)
	n, err := syscall.Getxattr(filepath.Join(ep1, "000031.jpg"), "user.t", buf)
	if err != nil || string(buf[:n]) != "31" {
		t.Errorf("user.t = %q %v", buf[:n], err)
	}
}

func TestViewFollowsHeadAndPinnedSurvivesExpire(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "all-late", Where: "t >= 35"}); err != nil {
		t.Fatal(err)
	}
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "pinned", Where: "t >= 35", Snapshot: 1}); err != nil {
		t.Fatal(err)
	}
	follow := f.path("robot", "views", "all-late")
	pinned := f.path("robot", "views", "pinned")
	if got := strings.Join(names(t, follow), " "); got != "task=pick" {
		t.Fatalf("all-late/: %s", got)
	}
	// A commit adds an episode with matching rows: the view follows.
	if _, err := f.tbl.AddEpisodes(ctx, []table.EpisodeInput{{Videos: map[string]table.VideoFile{"": {Path: video("h264_faststart.mp4")}},
		Sidecar: sidecar(t, "ep3", "stack", 40)}}, table.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		target, _ := os.Readlink(follow)
		return strings.HasPrefix(target, ".all-late@2-")
	}, "the view to show the new commit")
	if got := strings.Join(names(t, follow), " "); got != "task=pick task=stack" {
		t.Errorf("all-late/ after the commit: %s", got)
	}
	if got := strings.Join(names(t, pinned), " "); got != "task=pick" {
		t.Errorf("pinned/ after the commit: %s", got)
	}
	// expire + gc keep the pinned view's snapshot and its files.
	if dropped, err := f.tbl.Expire(ctx, table.ExpireOptions{KeepLast: 1}); err != nil || len(dropped) != 0 {
		t.Fatalf("expire dropped %v (%v)", dropped, err)
	}
	if _, err := f.tbl.GC(ctx, table.GCOptions{Grace: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	// A frame not read before, decoded from the pack as it is now.
	got, err := os.ReadFile(filepath.Join(pinned, "task=pick", "ep1", "000037.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := f.tbl.Snapshot(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := f.tbl.Episode(ctx, snap, "ep1")
	ref := e.Videos["video"]
	v, err := f.tbl.OpenVideo(ctx, ref)
	if err != nil {
		t.Fatalf("the pinned view's video after gc: %v", err)
	}
	defer v.Close()
	dv := media.Video{Key: media.VideoKey{Object: "ref/" + ref.Pack, Offset: ref.Offset, Length: ref.Length}, R: v.Payload, Size: ref.Length, Index: v.Index}
	want, err := f.frames.Frame(ctx, dv, int(ref.FirstFrame+37), media.ImageSetting{Format: media.FormatJPEG, JPEGQuality: 90})
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the pinned view's frame after expire and gc differs from the decoder's (%v)", err)
	}
	if problems, err := f.tbl.Verify(ctx); err != nil || len(problems) != 0 {
		t.Errorf("verify: %v %v", problems, err)
	}
}

func TestViewFromShell(t *testing.T) {
	f := newFixture(t, Options{})
	views := f.path("robot", "views")
	sh := func(script string) (string, error) {
		out, err := exec.Command("sh", "-c", script).CombinedOutput()
		return string(out), err
	}
	if out, err := sh(fmt.Sprintf(`echo "t BETWEEN 10 AND 12" > %s/mid.where`, views)); err != nil {
		t.Fatalf("echo > mid.where: %v %s", err, out)
	}
	v, err := f.tbl.View(context.Background(), "mid")
	if err != nil || v.Where != "t BETWEEN 10 AND 12" || v.Snapshot != 0 {
		t.Fatalf("view mid: %+v %v", v, err)
	}
	if got := frameNames(t, filepath.Join(views, "mid", "task=place", "ep2")); strings.Join(got, " ") != "000010.jpg 000011.jpg 000012.jpg" {
		t.Errorf("mid/task=place/ep2: %v", got)
	}
	// Every third frame, by the frames' positions (ep2's video starts at
	// its frame 5; positions count the episode's rows).
	if out, err := sh(fmt.Sprintf(`echo "frame %% 3 = 0 AND t >= 20" > %s/every3.where`, views)); err != nil {
		t.Fatalf("echo > every3.where: %v %s", err, out)
	}
	every3 := filepath.Join(views, "every3", "task=place", "ep2")
	if got := frameNames(t, every3); strings.Join(got, " ") != "000021.jpg 000024.jpg 000027.jpg" {
		t.Errorf("every3/task=place/ep2: %v", got)
	}
	if rows, err := os.ReadFile(filepath.Join(every3, "frames.jsonl")); err != nil || !bytes.Contains(rows, []byte(`"frame":24,`)) {
		t.Errorf("every3 frames.jsonl: %s %v", rows, err)
	}
	// Bad filters leave NAME.error, and no view.
	for name, filter := range map[string]string{
		"typo":   "tt > 3",
		"type":   "t = 'fast'",
		"quote":  "task = 'pick",
		"empty":  "",
		"inject": "1=1; DROP TABLE x",
	} {
		if out, err := sh(fmt.Sprintf(`printf '%%s' "%s" > %s/%s.where`, filter, views, name)); err != nil {
			t.Fatalf("write %s.where: %v %s", name, err, out)
		}
		msg, err := os.ReadFile(filepath.Join(views, name+".error"))
		if err != nil || len(msg) == 0 {
			t.Errorf("%s.error: %q %v", name, msg, err)
		}
		if _, err := f.tbl.View(context.Background(), name); !errors.Is(err, table.ErrNotFound) {
			t.Errorf("view %s exists after a bad filter: %v", name, err)
		}
	}
	msg, _ := os.ReadFile(filepath.Join(views, "typo.error"))
	if !strings.Contains(string(msg), `unknown column "tt"`) {
		t.Errorf("typo.error: %s", msg)
	}
	if err := os.Remove(filepath.Join(views, "typo.error")); err != nil {
		t.Error(err)
	}
	// A view of the same name is refused; fixing the filter makes it.
	if out, err := sh(fmt.Sprintf(`echo "t > 1" > %s/mid.where`, views)); err == nil {
		t.Errorf("rewriting mid.where succeeded: %s", out)
	}
	if out, err := sh(fmt.Sprintf(`echo "t < 2" > %s/type.where`, views)); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(views, "type.error")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("type.error stays after the view was made: %v", err)
	}
	// A name with / or .. cannot be written at all.
	if err := os.WriteFile(filepath.Join(views, "..where"), []byte("TRUE"), 0o644); err == nil {
		t.Error("wrote ..where")
	}
	// rm -r deletes a view.
	if out, err := sh(fmt.Sprintf(`rm -r %s/mid`, views)); err != nil {
		t.Fatalf("rm -r views/mid: %v %s", err, out)
	}
	if _, err := f.tbl.View(context.Background(), "mid"); !errors.Is(err, table.ErrNotFound) {
		t.Errorf("view mid after rm -r: %v", err)
	}
	got := strings.Join(names(t, views), " ")
	if !strings.Contains(got, "type type.where") || strings.Contains(got, "mid") {
		t.Errorf("views/ after rm -r: %s", got)
	}
}

// TestViewWhereTooLarge: a NAME.where written past the filter limit
// fails with EFBIG, makes no view, and NAME.error says so (it said the
// filter was empty).
func TestViewWhereTooLarge(t *testing.T) {
	f := newFixture(t, Options{})
	where := filepath.Join(f.path("robot", "views"), "big.where")
	huge := strings.Repeat("t > 1 OR ", 100<<10/9) + "t > 2"
	if err := os.WriteFile(where, []byte(huge), 0o644); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("writing %d bytes to big.where: %v, want EFBIG", len(huge), err)
	}
	msg, err := os.ReadFile(filepath.Join(f.path("robot", "views"), "big.error"))
	if err != nil || !strings.Contains(string(msg), "is longer than the 65536 bytes a filter may have") {
		t.Errorf("big.error: %q %v", msg, err)
	}
	if _, err := f.tbl.View(context.Background(), "big"); !errors.Is(err, table.ErrNotFound) {
		t.Errorf("view big exists: %v", err)
	}
}

// TestViewNamesShown: a view name with a bidi override is refused and
// not listed (not even as NAME.error), and NAME.error shows the control
// characters of a bad filter escaped.
func TestViewNamesShown(t *testing.T) {
	f := newFixture(t, Options{})
	views := f.path("robot", "views")
	if err := os.WriteFile(filepath.Join(views, "abc\u202egpj.where"), []byte("TRUE"), 0o644); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a view name with U+202E: %v, want EINVAL", err)
	}
	if err := os.WriteFile(filepath.Join(views, "bell.where"), []byte("task = '\x1b]0;owned\x07"), 0o644); err != nil {
		t.Fatal(err)
	}
	msg, err := os.ReadFile(filepath.Join(views, "bell.error"))
	if err != nil || strings.ContainsAny(string(msg), "\x1b\x07") || !strings.Contains(string(msg), `\x1b]0;owned\x07`) {
		t.Errorf("bell.error: %q %v, want the filter's ESC and BEL escaped", msg, err)
	}
	for _, name := range names(t, views) {
		if strings.ContainsRune(name, '\u202e') || len(name) > 255 {
			t.Errorf("views/ lists %q", name)
		}
	}
}

func TestViewReadOnly(t *testing.T) {
	f := newFixture(t, Options{})
	if _, err := query.CreateView(context.Background(), f.tbl, table.View{Name: "v", Where: "t < 5"}); err != nil {
		t.Fatal(err)
	}
	root := f.path("robot", "views", "v")
	checkReadOnly(t, filepath.Join(root, "task=pick", "ep1"), "000003.jpg", map[string]func() error{
		"top":  func() error { return os.Mkdir(filepath.Join(root, "task=new"), 0o755) },
		"link": func() error { return os.Symlink("x", filepath.Join(root, "l")) },
	})
	// views/ itself takes NAME.where files only.
	if err := os.Mkdir(f.path("robot", "views", "d"), 0o755); !errors.Is(err, syscall.EPERM) {
		t.Errorf("mkdir in views/: %v", err)
	}
	if err := os.WriteFile(f.path("robot", "views", "x.txt"), nil, 0o644); !errors.Is(err, syscall.EPERM) {
		t.Errorf("x.txt in views/: %v", err)
	}
}

func TestViewGroupByAndImage(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "parity", Where: "t < 6", GroupBy: []string{"task", "t"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "thumbs", Where: "t < 4",
		Image: &table.ViewImage{MaxSide: 64}}); err != nil {
		t.Fatal(err)
	}
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "bmp", Where: "t = 2",
		Image: &table.ViewImage{Format: "bmp", Width: 100, Height: 50}}); err != nil {
		t.Fatal(err)
	}
	root := f.path("robot", "views", "parity")
	if got := strings.Join(names(t, root), " "); got != "task=pick task=place" {
		t.Errorf("parity/: %s", got)
	}
	if got := strings.Join(names(t, filepath.Join(root, "task=pick")), " "); got != "t=0 t=1 t=2 t=3 t=4 t=5" {
		t.Errorf("parity/task=pick: %s", got)
	}
	if got := frameNames(t, filepath.Join(root, "task=pick", "t=4", "ep1")); strings.Join(got, " ") != "000004.jpg" {
		t.Errorf("parity/task=pick/t=4/ep1: %v", got)
	}
	// Thumbnails: the longer side is 64, sizes at stat are exact.
	thumb := filepath.Join(f.path("robot", "views", "thumbs"), "task=pick", "ep1", "000002.jpg")
	st, err := os.Stat(thumb)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(thumb)
	if err != nil || int64(len(data)) != st.Size() {
		t.Fatalf("thumbnail: stat %d, read %d (%v)", st.Size(), len(data), err)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil || max(cfg.Width, cfg.Height) != 64 {
		t.Errorf("thumbnail is %dx%d (%v)", cfg.Width, cfg.Height, err)
	}
	bmp := filepath.Join(f.path("robot", "views", "bmp"), "task=pick", "ep1", "000002.bmp")
	data, err = os.ReadFile(bmp)
	if err != nil || len(data) != 54+((3*100+3)&^3)*50 || string(data[:2]) != "BM" {
		t.Errorf("bmp frame: %d bytes %v", len(data), err)
	}
	// The view's frame is the one the decoder makes with that setting.
	snap, _ := f.tbl.Snapshot(ctx, 1)
	e, _ := f.tbl.Episode(ctx, snap, "ep1")
	ref := e.Videos["video"]
	v, err := f.tbl.OpenVideo(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	dv := media.Video{Key: media.VideoKey{Object: "ref/" + ref.Pack, Offset: ref.Offset, Length: ref.Length}, R: v.Payload, Size: ref.Length, Index: v.Index}
	want, err := f.frames.Frame(ctx, dv, int(ref.FirstFrame+2), media.ImageSetting{Format: media.FormatBMP, Width: 100, Height: 50})
	if err != nil || !bytes.Equal(want, data) {
		t.Errorf("the bmp view's frame differs from the decoder's (%v)", err)
	}
}

func TestViewImageFolder(t *testing.T) {
	py := requireTorchvision(t)
	f := newFixture(t, Options{})
	ctx := context.Background()
	if _, err := query.CreateView(ctx, f.tbl, table.View{Name: "odd", Where: "t >= 20 AND t < 33", GroupBy: []string{"task"}}); err != nil {
		t.Fatal(err)
	}
	// ImageFolder's samples over the view: exactly the matching frames,
	// classes the group-by values, each equal to the snapshot's file.
	const check = `
import os, sys, torchvision
root, snap = sys.argv[1], sys.argv[2]
ds = torchvision.datasets.ImageFolder(root)
for path, cls in ds.samples:
    rel = os.path.relpath(path, root)
    task, ep, name = rel.split(os.sep)
    with open(path, 'rb') as a, open(os.path.join(snap, task, ep, name), 'rb') as b:
        assert a.read() == b.read(), rel
    ds[ds.samples.index((path, cls))][0].load()
print(ds.classes, sorted(os.path.relpath(p, root) for p, _ in ds.samples))
`
	out, err := exec.Command(py, "-c", check, f.path("robot", "views", "odd"), f.path("robot", "snapshots", "1")).CombinedOutput()
	if err != nil {
		t.Fatalf("ImageFolder over the view: %v\n%s", err, out)
	}
	var want []string
	for i := 20; i < 33; i++ {
		want = append(want, fmt.Sprintf("'task=pick/ep1/%06d.jpg'", i))
	}
	for i := 20; i < 30; i++ {
		want = append(want, fmt.Sprintf("'task=place/ep2/%06d.jpg'", i))
	}
	wantOut := fmt.Sprintf("['task=pick', 'task=place'] [%s]\n", strings.Join(want, ", "))
	if string(out) != wantOut {
		t.Errorf("ImageFolder saw\n%s\nwant\n%s", out, wantOut)
	}
}
