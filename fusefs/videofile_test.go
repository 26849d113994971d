package fusefs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/framefs/framefs/internal/treetest"
	"github.com/framefs/framefs/table"
)

// ffprobeFrames counts the frames FFmpeg decodes from a video file.
func ffprobeFrames(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames",
		"-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}

// TestStoredVideoFiles: an episode folder shows its stored video as a
// file, the bytes given to ingest, read-only; episodes of one video show
// one file.
func TestStoredVideoFiles(t *testing.T) {
	f := newFixture(t, Options{})
	for _, ep := range []struct{ dir, source string }{
		{filepath.Join("task=pick", "ep1"), "h264_bframes_gop30.mp4"},
		{filepath.Join("task=place", "ep2"), "hevc.mp4"},
	} {
		mounted := f.path("robot", "latest", ep.dir, "video.mp4")
		got, err := os.ReadFile(mounted)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(video(ep.source))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, the ingested file has %d, or they differ", ep.dir, len(got), len(want))
		}
		if st, err := os.Stat(mounted); err != nil || st.Size() != int64(len(want)) {
			t.Errorf("%s: stat %v, %v; want %d bytes", ep.dir, st, err, len(want))
		}
		if n, m := ffprobeFrames(t, mounted), ffprobeFrames(t, video(ep.source)); n != m {
			t.Errorf("%s: ffprobe decodes %s frames from the mounted file, %s from the source", ep.dir, n, m)
		}
		_, err = os.OpenFile(mounted, os.O_WRONLY, 0)
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: open for writing: %v, want EROFS", ep.dir, err)
		}
	}
	// Episodes cut from one video share its file.
	ctx := context.Background()
	if _, err := f.tbl.AddEpisodes(ctx, []table.EpisodeInput{
		{Videos: map[string]table.VideoFile{"": {Path: video("hevc.mp4"), FirstFrame: 40}}, Sidecar: sidecar(t, "ep3", "place", 10)},
	}, table.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := os.Stat(f.path("robot", "snapshots", "2")); return err == nil }, "snapshot 2")
	ino := func(p string) uint64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	a, b := f.path("robot", "snapshots", "2", "task=place", "ep2", "video.mp4"), f.path("robot", "snapshots", "2", "task=place", "ep3", "video.mp4")
	same := ino(a) == ino(b)
	ep2, _ := f.tbl.Episode(ctx, treetest.Snapshot(t, f.tbl, 2), "ep2")
	ep3, _ := f.tbl.Episode(ctx, treetest.Snapshot(t, f.tbl, 2), "ep3")
	if shared := ep2.Videos["video"].Pack == ep3.Videos["video"].Pack && ep2.Videos["video"].Offset == ep3.Videos["video"].Offset; shared != same {
		t.Errorf("episodes sharing a payload: %v; sharing a file: %v", shared, same)
	}
}
