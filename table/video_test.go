package table

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/table/storage"
)

// TestVideoReadsAfterClose: a mount's cache of open videos closes the
// ones it evicts while a decoder may still read them. Their reads return
// the payload all the same, and ErrNotFound once the pack is gone.
func TestVideoReadsAfterClose(t *testing.T) {
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := s3test.Start(t)
	for _, tc := range []struct {
		name  string
		store storage.Store
	}{{"local", local}, {"s3", srv.Open(t, "closed/table", nil)}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tbl, err := Create(ctx, tc.store, testSchema(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := tbl.AddEpisodes(ctx, []EpisodeInput{{Episode: "a",
				Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}, Sidecar: sidecarFor(t, "a", 10)}}, AddOptions{})
			if err != nil {
				t.Fatal(err)
			}
			eps, err := tbl.Episodes(ctx, snap)
			if err != nil || len(eps) != 1 {
				t.Fatalf("episodes: %v %v", eps, err)
			}
			ref := eps[0].Videos["video"]
			want, err := os.ReadFile(fixture("h264_faststart.mp4"))
			if err != nil {
				t.Fatal(err)
			}
			v, err := tbl.OpenVideo(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			read := func() ([]byte, error) {
				b := make([]byte, v.Payload.Size())
				_, err := v.Payload.ReadAt(b, 0)
				return b, err
			}
			if got, err := read(); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("open video: read %d bytes, %v; want the %d bytes ingested", len(got), err, len(want))
			}
			if err := v.Close(); err != nil {
				t.Fatal(err)
			}
			if got, err := read(); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("closed video: read %d bytes, %v; want the %d bytes ingested", len(got), err, len(want))
			}
			if err := tc.store.Delete(ctx, ref.Pack); err != nil {
				t.Fatal(err)
			}
			if _, err := read(); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("closed video whose pack is gone: %v, want ErrNotFound", err)
			}
		})
	}
}
