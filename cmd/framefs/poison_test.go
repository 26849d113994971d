package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/framefs/framefs/internal/tabletamper"
	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/table/storage"
)

// TestCacheDirNotPoisonedByATable is the attack on a disk tier shared by
// the tables of a node: table evil holds video B but records video A's
// SHA-256 for it, as anyone who can write the table's objects can make it
// do (a new head snapshot whose manifests claim it). Its frames are read through a mount with --cache-dir D; then table
// victim, which holds video A itself, is read through another mount with
// the same D. Every frame of victim is its own (what `framefs frame`
// writes), and the mount logs the mismatch.
func TestCacheDirNotPoisonedByATable(t *testing.T) {
	testenv.RequireFUSE(t)
	wh, cacheDir := t.TempDir(), t.TempDir()
	videoA, videoB := "../../testdata/video/h264_bframes_gop30.mp4", "../../testdata/video/hevc.mp4"
	shaOf := func(path string) string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		return hex.EncodeToString(sum[:])
	}
	shaA, shaB := shaOf(videoA), shaOf(videoB)
	for _, tbl := range []struct{ name, video string }{{"victim", videoA}, {"evil", videoB}} {
		mustRun(t, "create", filepath.Join(wh, tbl.name))
		mustRun(t, "ingest", filepath.Join(wh, tbl.name), tbl.video, "--episode", "ep", "--no-sizes")
	}
	evil, err := storage.NewLocal(filepath.Join(wh, "evil"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tabletamper.RewriteDigest(context.Background(), evil, shaB, shaA); err != nil {
		t.Fatal(err)
	}

	frame := func(mnt, tbl string, k int) string {
		return filepath.Join(mnt, tbl, "latest", "ep", fmt.Sprintf("%06d.jpg", k))
	}
	mnt, _, stop := startMount(t, wh, "--cache-dir", cacheDir)
	for k := range 60 { // video B's frames, which evil serves
		readPromptly(t, frame(mnt, "evil", k), func() {})
	}
	stop()

	mnt, _, _ = startMount(t, wh, "--cache-dir", cacheDir)
	wrong := 0
	for k := range 90 {
		got := readPromptly(t, frame(mnt, "victim", k), func() {})
		want := mustRun(t, "frame", filepath.Join(wh, "victim"), "--episode", "ep", "--frame", fmt.Sprint(k))
		if !bytes.Equal(got, want) {
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d of 90 frames of victim read through the shared disk tier are not its own", wrong)
	}
}
