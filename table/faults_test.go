package table

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/table/storage"
)

// TestS3FaultyNetwork commits and reads through a proxy that drops
// connections, truncates answers, delays and answers 500/503 at random.
// Every commit is all or nothing: those reported done are in the table,
// none is there twice, reads return the stored bytes or an error, and the
// table verifies clean afterwards.
func TestS3FaultyNetwork(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	faults := s3test.Faults{Error: 0.08, DropBefore: 0.03, DropAfter: 0.05, Truncate: 0.1, MaxDelay: 3 * time.Millisecond}
	seed := uint64(7)
	if v, err := strconv.ParseUint(os.Getenv("FRAMEFS_FAULT_SEED"), 10, 64); err == nil {
		seed = v // FRAMEFS_FAULT_SEED=N explores other fault sequences
	}
	proxy := s3test.StartFaultProxy(t, srv.Endpoint, faults, seed)
	direct := srv.Open(t, "faulty/table", nil)
	if _, err := Create(ctx, direct, Schema{Columns: []Column{{Name: "note", Type: "string", Nullable: true}}}, Options{}); err != nil {
		t.Fatal(err)
	}
	faulty := srv.Open(t, "faulty/table", func(o *storage.S3Options) {
		o.Endpoint = proxy.Endpoint
		o.MaxBackoff = 20 * time.Millisecond
		o.CacheDir = t.TempDir()
	})
	var tbl *Table
	var err error
	for try := 0; try < 5 && tbl == nil; try++ {
		tbl, err = Open(ctx, faulty, Options{})
	}
	if tbl == nil {
		t.Fatalf("open through the proxy: %v", err)
	}
	attempted, committed := map[string]string{}, map[string]bool{}
	for i := 0; i < 12; i++ {
		ep := fmt.Sprintf("f%02d", i)
		video := mp4Fixtures[i%len(mp4Fixtures)]
		attempted[ep] = video
		_, err := tbl.AddEpisodes(ctx, []EpisodeInput{{Episode: ep, Videos: map[string]VideoFile{"": {Path: fixture(video)}}}}, AddOptions{})
		if err == nil {
			committed[ep] = true
		} else {
			t.Logf("commit %s failed: %v", ep, err)
		}
	}
	if len(committed) < 6 {
		t.Fatalf("only %d of 12 commits succeeded through retries", len(committed))
	}
	// Read every episode's payload through the faulty proxy.
	var reads, readErrs int
	head, err := tbl.Head(ctx)
	if err != nil || head == nil {
		t.Logf("head through the proxy: %v %v", head, err)
	} else {
		eps, err := tbl.Episodes(ctx, head)
		if err != nil {
			t.Logf("episodes through the proxy: %v", err)
		} else {
			for _, e := range eps {
				v, err := tbl.OpenVideo(ctx, e.Videos["video"])
				if err != nil {
					readErrs++
					continue
				}
				h := sha256.New()
				_, err = io.Copy(h, v.Payload)
				v.Close()
				if err != nil {
					readErrs++
					continue
				}
				reads++
				if got, want := fmt.Sprintf("%x", h.Sum(nil)), fileSHA(t, fixture(attempted[e.Episode])); got != want {
					t.Fatalf("%s: read wrong bytes through the faulty proxy", e.Episode)
				}
			}
		}
	}
	if reads == 0 {
		t.Error("no payload could be read through the proxy")
	}
	t.Logf("%d of 12 commits done; %d payload reads right, %d failed cleanly; proxy: %d requests, %d errors, %d drops, %d truncations",
		len(committed), reads, readErrs, proxy.Requests.Load(), proxy.Errors.Load(), proxy.Drops.Load(), proxy.Truncations.Load())

	// Check directly, without faults.
	dtbl, err := Open(ctx, direct, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := dtbl.Verify(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	ids, _ := dtbl.SnapshotIDs(ctx)
	for i, id := range ids {
		if id != int64(i+1) {
			t.Fatalf("snapshot ids %v are not contiguous", ids)
		}
	}
	head, err = dtbl.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := dtbl.Episodes(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range eps {
		if seen[e.Episode] || attempted[e.Episode] == "" {
			t.Fatalf("episode %s twice or never written", e.Episode)
		}
		seen[e.Episode] = true
	}
	for ep := range committed {
		if !seen[ep] {
			t.Fatalf("commit of %s was reported done but is not in the table", ep)
		}
	}
	if len(ids) != len(seen) {
		t.Fatalf("%d snapshots for %d episodes: a commit landed twice", len(ids), len(seen))
	}
}

// TestS3GCAbortsStaleUploads: a multipart upload a crashed writer left is
// the S3 form of a temporary file; gc aborts it once older than the grace
// period, and only under its own table's prefix.
func TestS3GCAbortsStaleUploads(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	store := srv.Open(t, "gc/table", nil)
	tbl, err := Create(ctx, store, testSchema(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv.StartUpload(t, "gc/table/video/crashed.video")
	srv.StartUpload(t, "gc/other/video/crashed.video")
	rep, err := tbl.GC(ctx, GCOptions{Grace: time.Hour})
	if err != nil || len(rep.Removed) != 0 {
		t.Fatalf("gc removed a young upload: %v %v", rep.Removed, err)
	}
	rep, err = tbl.GC(ctx, GCOptions{Grace: -time.Hour})
	if err != nil || len(rep.Removed) != 1 {
		t.Fatalf("gc: %v %v", rep.Removed, err)
	}
	if ups, _ := store.ListTemporaries(ctx); len(ups) != 0 {
		t.Fatalf("uploads left: %v", ups)
	}
	if ups, _ := srv.Open(t, "gc/other", nil).ListTemporaries(ctx); len(ups) != 1 {
		t.Fatalf("another table's upload was touched: %v", ups)
	}
}
