package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"testing"

	"github.com/framefs/framefs/internal/frozentable"
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
