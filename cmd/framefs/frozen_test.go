package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/frozentable"
	"github.com/framefs/framefs/table"
)

// TestFrozenFrames decodes frames of every frozen table with `framefs
// frame` and compares their pixels with the ffmpeg command line's decoding
// of the source videos, recorded when the table was written; `framefs
// verify` finds the table intact.
func TestFrozenFrames(t *testing.T) {
	frozentable.Run(t, func(t *testing.T, v int, exp *frozentable.Expected) {
		dir := frozentable.CopyTable(t, v)
		if len(exp.Frames) == 0 {
			t.Fatal("the frozen table lists no reference frames")
		}
		for _, f := range exp.Frames {
			out := mustRun(t, "frame", dir, "--snapshot", strconv.FormatInt(f.Snapshot, 10), "--episode", f.Episode,
				"--column", f.Column, "--frame", strconv.FormatInt(f.Row, 10), "--format", "ppm")
			w, h, pix, err := parsePPM(out)
			if err != nil {
				t.Fatalf("%s %s row %d: %v", f.Episode, f.Column, f.Row, err)
			}
			sum := sha256.Sum256(pix)
			if w != f.Width || h != f.Height || hex.EncodeToString(sum[:]) != f.RGB24SHA256 {
				t.Errorf("snapshot %d %s %s row %d (video frame %d): %dx%d pixels with SHA-256 %x, want %dx%d %s",
					f.Snapshot, f.Episode, f.Column, f.Row, f.VideoFrame, w, h, sum, f.Width, f.Height, f.RGB24SHA256)
			}
		}
		if out := mustRunString(t, "verify", dir); out != "ok\n" {
			t.Errorf("verify: %s", out)
		}
	})
}

// parsePPM returns the size and pixels of a binary PPM (P6, maxval 255).
func parsePPM(b []byte) (w, h int, pix []byte, err error) {
	var magic string
	var maxval int
	r := bytes.NewReader(b)
	if _, err := fmt.Fscan(r, &magic, &w, &h, &maxval); err != nil || magic != "P6" {
		return 0, 0, nil, fmt.Errorf("not a binary PPM image (%q...): %v", b[:min(len(b), 16)], err)
	}
	if maxval != 255 {
		return 0, 0, nil, fmt.Errorf("PPM maxval %d", maxval)
	}
	pix = b[len(b)-r.Len()+1:] // one white-space byte after maxval
	if len(pix) != 3*w*h {
		return 0, 0, nil, fmt.Errorf("PPM of %dx%d holds %d bytes of pixels", w, h, len(pix))
	}
	return w, h, pix, nil
}

// TestFrozenUpgrade: `framefs upgrade` brings every frozen table of an
// older format version to the current one, which then lists the same
// episodes and verifies, printing its cost per episode on stderr.
func TestFrozenUpgrade(t *testing.T) {
	frozentable.Run(t, func(t *testing.T, v int, exp *frozentable.Expected) {
		dir := frozentable.CopyTable(t, v)
		last := exp.Snapshots[len(exp.Snapshots)-1]
		out := mustRunString(t, "upgrade", dir)
		if v == table.FormatVersion {
			if !strings.Contains(out, "already") {
				t.Errorf("upgrade of a current table: %s", out)
			}
			return
		}
		want := fmt.Sprintf("from format version %d to %d: snapshot %d holds its %d episodes", v, table.FormatVersion, last.ID+1, last.Episodes)
		if !strings.Contains(out, want) {
			t.Errorf("upgrade says %q, want %q", out, want)
		}
		var listed struct {
			Snapshot int64 `json:"snapshot"`
			Episodes []struct {
				Episode string `json:"episode"`
			} `json:"episodes"`
		}
		if err := json.Unmarshal(mustRun(t, "ls", dir, "--json"), &listed); err != nil {
			t.Fatal(err)
		}
		lastEps := exp.Episodes[len(exp.Episodes)-1].Episodes
		if listed.Snapshot != last.ID+1 || len(listed.Episodes) != len(lastEps) {
			t.Fatalf("after the upgrade ls lists %+v", listed)
		}
		for i, e := range listed.Episodes {
			if e.Episode != lastEps[i].Episode {
				t.Errorf("episode %d is %s, want %s", i, e.Episode, lastEps[i].Episode)
			}
		}
		cmd := newRootCommand()
		var stdout, stderr bytes.Buffer
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs([]string{"verify", dir})
		if err := cmd.ExecuteContext(t.Context()); err != nil || stdout.String() != "ok\n" {
			t.Fatalf("verify: %v\n%s", err, stdout.String())
		}
		if !strings.Contains(stderr.String(), "per episode") || !strings.Contains(stderr.String(), "verified ") {
			t.Errorf("verify printed no cost: %q", stderr.String())
		}
		if out := mustRunString(t, "upgrade", dir); !strings.Contains(out, "already") {
			t.Errorf("upgrade again: %s", out)
		}
	})
}
