package tabletamper

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/frozentable"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

// claim is another video's digest, as a tampered manifest records it.
var claim = strings.Repeat("ab", 32)

// checkTampered opens the table afresh and checks that its head records
// claim for episode's video column col, and that Verify finds the payload
// does not match it.
func checkTampered(t *testing.T, store storage.Store, id int64, episode, col string) {
	t.Helper()
	ctx := context.Background()
	tbl, err := table.Open(ctx, store, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	head, err := tbl.Head(ctx)
	if err != nil || head.ID != id {
		t.Fatalf("head %+v (%v), want snapshot %d", head, err, id)
	}
	e, err := tbl.Episode(ctx, head, episode)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Videos[col].SHA256; got != claim {
		t.Fatalf("the head records %s for %s/%s, want %s", got, episode, col, claim)
	}
	probs, err := tbl.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range probs {
		found = found || (p.Snapshot == id && strings.Contains(p.Problem, "SHA-256"))
	}
	if !found {
		t.Errorf("verify does not see the tampered digest: %+v", probs)
	}
}

// TestRewriteDigest: a table written by this framefs (Parquet manifests)
// reads the digest the tampered manifests claim.
func TestRewriteDigest(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := table.Create(ctx, store, table.Schema{}, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	video := filepath.Join(frozentable.ModuleRoot(), "testdata", "video", "h264_gop250.mp4")
	data, err := os.ReadFile(video)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	real := hex.EncodeToString(sum[:])
	snap, err := tbl.AddEpisodes(ctx, []table.EpisodeInput{
		{Episode: "a", Videos: map[string]table.VideoFile{"": {Path: video}}},
		{Episode: "b", Videos: map[string]table.VideoFile{"": {Path: video, FirstFrame: 5}}},
	}, table.AddOptions{NoSizes: true})
	if err != nil {
		t.Fatal(err)
	}
	id, n, err := RewriteDigest(ctx, store, real, claim)
	if err != nil || id != snap.ID+1 || n != 2 {
		t.Fatalf("RewriteDigest: snapshot %d, %d references, %v", id, n, err)
	}
	checkTampered(t, store, id, "b", "video")
	if _, _, err := RewriteDigest(ctx, store, real, claim); err == nil {
		t.Error("rewriting a digest no payload records again succeeded")
	}
}

// TestRewriteDigestV1: the same on the frozen table of format version 1,
// whose manifests are JSON; the new snapshot stays of version 1.
func TestRewriteDigestV1(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewLocal(frozentable.CopyTable(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := table.Open(ctx, store, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	head, err := tbl.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e, err := tbl.Episode(ctx, head, "ep-d")
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := RewriteDigest(ctx, store, e.Videos["wrist"].SHA256, claim)
	if err != nil {
		t.Fatal(err)
	}
	checkTampered(t, store, id, "ep-d", "wrist")
	tampered, err := table.Open(ctx, store, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := tampered.Snapshot(ctx, id)
	if err != nil || snap.ManifestList != "" || len(snap.Manifests) == 0 || tampered.FormatVersion() != 1 {
		t.Errorf("snapshot %+v (%v): want a version-1 snapshot of JSON manifests", snap, err)
	}
}
