// Package tabletest holds what tests of real tables share across
// packages, beyond the FFmpeg-free helpers of the mount's tree
// (internal/treetest): table options with FFmpeg's frame indexer, wired as
// the framefs command wires it; opening a table in a local directory; and
// test inputs made with the ffmpeg command from its lavfi sources. It
// needs FFmpeg (package decoder) and is imported by tests only.
package tabletest

import (
	"context"
	"io"
	"os/exec"
	"strconv"
	"testing"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// Options are table options whose indexer is FFmpeg's (the best video
// stream of a file, as the ffmpeg command picks it), as the framefs
// command opens tables.
func Options() table.Options {
	return table.Options{Indexer: func(ctx context.Context, r io.ReaderAt, size int64) (*videoidx.Index, error) {
		return decoder.IndexVideo(ctx, r, size, videoidx.BestStream)
	}}
}

// Open opens the table in local directory dir with opts, failing the
// test if it cannot.
func Open(t testing.TB, dir string, opts table.Options) *table.Table {
	t.Helper()
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := table.Open(context.Background(), store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// Lavfi writes out with the ffmpeg command: the first frames frames of
// the lavfi source (such as "testsrc2=size=320x240:rate=30"), then the
// output options args (encoder, GOP, pixel format); out's extension picks
// the container, or an image sequence for a pattern such as img%03d.png.
func Lavfi(t testing.TB, out, source string, frames int, args ...string) {
	t.Helper()
	cmdArgs := []string{"-v", "error", "-f", "lavfi", "-i", source, "-frames:v", strconv.Itoa(frames)}
	cmdArgs = append(append(cmdArgs, args...), out)
	if b, err := exec.Command("ffmpeg", cmdArgs...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", cmdArgs, err, b)
	}
}
