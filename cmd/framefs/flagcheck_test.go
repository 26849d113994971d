package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/lerobottest"
	"github.com/framefs/framefs/internal/testenv"
)

// TestGCGraceZero: `gc --grace 0s` removes the files no snapshot
// references however young they are; the default grace keeps them.
func TestGCGraceZero(t *testing.T) {
	tbl := filepath.Join(t.TempDir(), "robot")
	mustRun(t, "create", tbl)
	mustRun(t, "ingest", tbl, "../../testdata/video/h264_faststart.mp4")
	mustRun(t, "delete", tbl, "--episode", "h264_faststart")
	mustRun(t, "expire", tbl, "--keep-last", "1")
	removed := regexp.MustCompile(`removed (\d+) files`)
	if out := mustRunString(t, "gc", tbl); removed.FindStringSubmatch(out)[1] != "0" {
		t.Fatalf("gc with the default grace removed young files: %s", out)
	}
	out := mustRunString(t, "gc", tbl, "--grace", "0s")
	if m := removed.FindStringSubmatch(out); m == nil || m[1] == "0" {
		t.Fatalf("gc --grace 0s: %s, want the unreferenced files removed", out)
	}
	if _, err := runCLI(context.Background(), "gc", tbl, "--grace", "-1s"); err == nil || !strings.Contains(err.Error(), "--grace -1s: want 0 or more") {
		t.Errorf("gc --grace -1s: %v", err)
	}
	if out := mustRunString(t, "verify", tbl); !strings.Contains(out, "ok") {
		t.Errorf("verify after gc --grace 0s: %s", out)
	}
}

// TestExpireKeepLastZero: `expire --keep-last 0` is an answer, not a
// missing one: every snapshot but the head goes.
func TestExpireKeepLastZero(t *testing.T) {
	tbl := filepath.Join(t.TempDir(), "robot")
	mustRun(t, "create", tbl)
	mustRun(t, "ingest", tbl, "../../testdata/video/h264_faststart.mp4")
	mustRun(t, "ingest", tbl, "../../testdata/video/hevc.mp4")
	if out := mustRunString(t, "expire", tbl, "--keep-last", "0"); !strings.HasPrefix(out, "expired 1 snapshots") {
		t.Errorf("expire --keep-last 0: %s", out)
	}
	if _, err := runCLI(context.Background(), "expire", tbl); err == nil || !strings.Contains(err.Error(), "say what to expire") {
		t.Errorf("expire without a bound: %v", err)
	}
}

// TestFlagValuesRefused: a value a flag would silently turn into another
// (its default, mostly) is refused with a message naming the flag, before
// anything runs, on the command line and in mount -o options alike.
func TestFlagValuesRefused(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "robot")
	mustRun(t, "create", tbl)
	mustRun(t, "ingest", tbl, "../../testdata/video/h264_faststart.mp4")
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", filepath.Join(dir, "new"), "--jpeg-quality", "0"}, "--jpeg-quality 0: want a value above 0"},
		{[]string{"frame", tbl, "--episode", "h264_faststart", "--snapshot", "0"}, "--snapshot 0: want a value above 0"},
		{[]string{"frame", tbl, "--episode", "h264_faststart", "--snapshot", "-3"}, "--snapshot -3: want a value above 0"},
		{[]string{"ls", tbl, "--snapshot", "0"}, "--snapshot 0: want a value above 0"},
		{[]string{"tag", "create", tbl, "v1", "--snapshot", "0"}, "--snapshot 0"},
		{[]string{"view", "create", tbl, "v", "--where", "TRUE", "--max-side", "0"}, "--max-side 0: want a value above 0"},
		{[]string{"import", "lerobot", missing, filepath.Join(dir, "t2"), "--batch", "0"}, "--batch 0: want a value above 0"},
		{[]string{"import", "lerobot", missing, filepath.Join(dir, "t2"), "--timestamp-tolerance", "-1"}, "--timestamp-tolerance -1: want 0 or more"},
		{[]string{"import", "lerobot", missing, filepath.Join(dir, "t2"), "--episodes", ""}, "--episodes was given an empty value"},
		{[]string{"ingest-images", tbl, missing, "--fps", "0"}, "--fps 0: want a value above 0"},
		{[]string{"ls", tbl, "--s3-cache-dir", ""}, "--s3-cache-dir was given an empty value"},
		{[]string{"ls", tbl, "--s3-cache-bytes", "-1"}, "--s3-cache-bytes -1: want 0 or more"},
		{[]string{"mount", missing, missing, "--max-sessions", "0"}, "--max-sessions 0: want a value above 0"},
		{[]string{"mount", missing, missing, "--refresh", "0s"}, "--refresh 0s: want a value above 0"},
		{[]string{"mount", missing, missing, "--cache-bytes", "-1"}, "--cache-bytes -1: want 0 or more"},
		{[]string{"mount", missing, missing, "-o", "ro,refresh=0"}, "--refresh 0s: want a value above 0"},
		{[]string{"mount", missing, missing, "-o", "settle=-1s"}, "--settle -1s: want a value above 0"},
		{[]string{"mount", missing, missing, "-o", "cache_dir="}, "--cache-dir was given an empty value"},
		{[]string{"mount", missing, missing, "-o", "jpeg_quality=0"}, "--jpeg-quality 0: want a value above 0"},
	} {
		_, err := runCLI(context.Background(), c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("framefs %q: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestTimestampToleranceZero: `import lerobot --timestamp-tolerance 0`
// asks for exact timestamps, which float32 timestamps of a 30 fps
// dataset are not; the default tolerance accepts them.
func TestTimestampToleranceZero(t *testing.T) {
	d := lerobottest.Build(t, filepath.Join(t.TempDir(), "dataset"), lerobottest.Standard("v2.1"))
	_, err := runCLI(context.Background(), "import", "lerobot", d.Dir, filepath.Join(t.TempDir(), "t"), "--timestamp-tolerance", "0")
	if err == nil || !strings.Contains(err.Error(), "timestamp") || !strings.Contains(err.Error(), "(tolerance 0;") {
		t.Fatalf("import with --timestamp-tolerance 0: %v", err)
	}
	mustRun(t, "import", "lerobot", d.Dir, filepath.Join(t.TempDir(), "t"))
}

// TestMountCacheBytesZero: `mount --cache-bytes 0` keeps no image in
// memory (it used to mean the 256 MiB default).
func TestMountCacheBytesZero(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Missing(t, testenv.FUSE, fmt.Sprintf("no FUSE device: %v", err))
	}
	wh := t.TempDir()
	mustRun(t, "create", filepath.Join(wh, "robot"))
	mustRun(t, "ingest", filepath.Join(wh, "robot"), "../../testdata/video/h264_faststart.mp4")
	mnt := mountCLI(t, wh, "--cache-bytes", "0")
	if _, err := os.ReadFile(filepath.Join(mnt, "robot", "latest", "h264_faststart", "000003.jpg")); err != nil {
		t.Fatal(err)
	}
	stats, err := os.ReadFile(filepath.Join(mnt, ".stats"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stats), "\nframefs_image_cache_bytes 0\n") {
		t.Errorf(".stats of a mount with --cache-bytes 0:\n%s", regexp.MustCompile(`(?m)^framefs_image_cache_bytes.*$`).Find(stats))
	}
}
