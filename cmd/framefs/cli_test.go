package main

import (
	"bytes"
	"context"
	"errors"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/framefs/framefs/fusefs"
	"github.com/framefs/framefs/internal/lerobottest"
	"github.com/framefs/framefs/internal/mounttest"
	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/lerobot"
)

// runCLI runs the framefs command line in process and returns what it
// wrote to stdout.
func runCLI(ctx context.Context, args ...string) ([]byte, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return out.Bytes(), err
}

func mustRun(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := runCLI(context.Background(), args...)
	if err != nil {
		t.Fatalf("framefs %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func mustRunString(t *testing.T, args ...string) string {
	t.Helper()
	return string(mustRun(t, args...))
}

// TestCreateDeclaredEpisodeColumn: `create --column episode_id:string
// --episode-column episode_id` is accepted; a conflicting type is refused
// with a message saying what the column must be.
func TestCreateDeclaredEpisodeColumn(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, "create", filepath.Join(dir, "ok"), "--column", "episode_id:string", "--episode-column", "episode_id",
		"--column", "task:string", "--partition", "task")
	mustRun(t, "create", filepath.Join(dir, "ok_default"), "--column", "episode_id:string")
	_, err := runCLI(context.Background(), "create", filepath.Join(dir, "bad"), "--column", "episode_id:int64", "--episode-column", "episode_id")
	if err == nil || !strings.Contains(err.Error(), "is the episode column") || !strings.Contains(err.Error(), "episode_id:string") {
		t.Fatalf("conflicting type: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad", "table.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused table was created: %v", err)
	}
}

// mountCLI runs `framefs mount SRC MNT -o ro ARGS...` (args[0] is SRC) in
// process until the test ends, and returns its mount point.
func mountCLI(t *testing.T, args ...string) string {
	t.Helper()
	mnt := t.TempDir()
	mountInProcess(t, mnt, append([]string{args[0], mnt, "-o", "ro"}, args[1:]...)...)
	return mnt
}

// mountInProcess runs `framefs mount ARGS...`, mounting at mnt, in this
// process until the test ends or the mount is unmounted, and returns once
// mnt is mounted and no longer polled (mounttest.StopPolls: this process
// reads the mount it serves). The command's result arrives on the
// channel; one the test did not read is checked when it ends.
func mountInProcess(t *testing.T, mnt string, args ...string) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	result, finished := make(chan error, 1), make(chan struct{})
	go func() {
		_, err := runCLI(ctx, append([]string{"mount"}, args...)...)
		result <- err
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
		select {
		case err := <-result:
			if err != nil {
				t.Errorf("mount: %v", err)
			}
		default:
		}
	})
	for deadline := time.Now().Add(30 * time.Second); !fusefs.IsMounted(mnt); {
		select {
		case <-finished:
			t.Fatalf("mount ended: %v", <-result)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the mount did not appear within 30 s")
		}
	}
	if err := mounttest.StopPolls(mnt); err != nil {
		t.Fatal(err)
	}
	return result
}

// TestFrameMatchesMount: `framefs frame` with options not given uses the
// table's own setting, so its bytes equal the mounted file's, and a mount
// given some image options keeps the table's setting for the others.
func TestFrameMatchesMount(t *testing.T) {
	testenv.RequireFUSE(t)
	wh := t.TempDir()
	video := "../../testdata/video/h264_faststart.mp4"
	const ep = "h264_faststart"
	// Quality 75 is neither the table default (90) nor the encoder's (95).
	mustRun(t, "create", filepath.Join(wh, "robot"), "--jpeg-quality", "75")
	mustRun(t, "create", filepath.Join(wh, "arm"), "--image-format", "png")
	mustRun(t, "ingest", filepath.Join(wh, "robot"), video)
	mustRun(t, "ingest", filepath.Join(wh, "arm"), video)
	frame := func(tbl string, flags ...string) []byte {
		return mustRun(t, append([]string{"frame", filepath.Join(wh, tbl), "--episode", ep, "--frame", "5"}, flags...)...)
	}
	read := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	mnt := mountCLI(t, wh)
	mounted := read(filepath.Join(mnt, "robot", "latest", ep, "000005.jpg"))
	for _, flags := range [][]string{nil, {"--format", "jpg"}, {"--jpeg-quality", "75"}, {"--format", "jpg", "--jpeg-quality", "75"}} {
		if !bytes.Equal(frame("robot", flags...), mounted) {
			t.Errorf("framefs frame %v differs from the mounted 000005.jpg", flags)
		}
	}
	if bytes.Equal(frame("robot", "--jpeg-quality", "40"), mounted) {
		t.Error("--jpeg-quality 40 gave the bytes of quality 75")
	}
	if !bytes.Equal(frame("arm"), read(filepath.Join(mnt, "arm", "latest", ep, "000005.png"))) {
		t.Error("framefs frame of a PNG table differs from the mounted 000005.png")
	}

	// --image-format jpg alone keeps each table's JPEG quality.
	mnt = mountCLI(t, wh, "--image-format", "jpg")
	if !bytes.Equal(read(filepath.Join(mnt, "robot", "latest", ep, "000005.jpg")), mounted) {
		t.Error("mount --image-format jpg did not keep the table's JPEG quality")
	}
	if !bytes.Equal(read(filepath.Join(mnt, "arm", "latest", ep, "000005.jpg")), frame("arm", "--format", "jpg")) {
		t.Error("mount --image-format jpg and frame --format jpg differ on a PNG table")
	}

	// --scale alone keeps each table's format.
	mnt = mountCLI(t, wh, "--scale", "80x60")
	for _, p := range []string{filepath.Join("robot", "latest", ep, "000005.jpg"), filepath.Join("arm", "latest", ep, "000005.png")} {
		cfg, format, err := image.DecodeConfig(bytes.NewReader(read(filepath.Join(mnt, p))))
		if err != nil || cfg.Width != 80 || cfg.Height != 60 {
			t.Errorf("%s under --scale 80x60: %s %dx%d, %v", p, format, cfg.Width, cfg.Height, err)
		}
	}
}

// TestFailedCreateLeavesNothing: a create or import lerobot that is
// refused leaves no directory behind (the folders it would have made are
// removed), and a partition column that is not declared is refused with
// the --column that declares it.
func TestFailedCreateLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "warehouse", "robot")
	_, err := runCLI(context.Background(), "create", tbl, "--partition", "task")
	if err == nil || !strings.Contains(err.Error(), "declare it as a column too (--column task:string") {
		t.Fatalf("create with an undeclared partition column: %v", err)
	}
	if _, err := runCLI(context.Background(), "create", tbl, "--column", "frame:int64"); err == nil || !strings.Contains(err.Error(), "is reserved") {
		t.Fatalf("create with a column called frame: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "warehouse")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused create left %s: %v", filepath.Join(dir, "warehouse"), err)
	}

	d := lerobottest.Build(t, filepath.Join(t.TempDir(), "dataset"), lerobottest.Standard(lerobot.V30))
	if _, err := runCLI(context.Background(), "import", "lerobot", d.Dir, tbl, "--partition", "no_such_column", "--no-sizes"); err == nil {
		t.Fatal("import with an unknown partition column succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "warehouse")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused import left %s: %v", filepath.Join(dir, "warehouse"), err)
	}
	// A folder that was there stays.
	if err := os.Mkdir(filepath.Join(dir, "kept"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(context.Background(), "create", filepath.Join(dir, "kept"), "--partition", "task"); err == nil {
		t.Fatal("accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "kept")); err != nil {
		t.Errorf("a refused create removed a folder it did not make: %v", err)
	}
}
