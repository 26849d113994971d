package table

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Episodes cut from one video file (each from its own first frame) share
// one stored payload: within a commit, and across commits with
// ReuseStoredVideos.
func TestEpisodesShareOneVideo(t *testing.T) {
	ctx := context.Background()
	tbl := newTable(t)
	file := fixture("h264_bframes_gop30.mp4")
	size := fileSize(t, file)
	snap, err := tbl.AddEpisodes(ctx, []EpisodeInput{
		{Episode: "a", Videos: map[string]VideoFile{"": {Path: file}}, Sidecar: sidecarFor(t, "a", 10)},
		{Episode: "b", Videos: map[string]VideoFile{"": {Path: file, FirstFrame: 10}}, Sidecar: sidecarFor(t, "b", 15)},
	}, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Summary.BytesAdded >= 2*size {
		t.Errorf("one commit of two episodes of one file wrote %d bytes for a %d-byte file", snap.Summary.BytesAdded, size)
	}
	a, _ := tbl.Episode(ctx, snap, "a")
	b, _ := tbl.Episode(ctx, snap, "b")
	ra, rb := a.Videos["video"], b.Videos["video"]
	if ra.Pack != rb.Pack || ra.Offset != rb.Offset || ra.FirstFrame != 0 || rb.FirstFrame != 10 || rb.Frames != ra.Frames {
		t.Fatalf("refs do not share the payload with their own first frames: %+v / %+v", ra, rb)
	}

	// The next commit references the stored payload: no new bytes.
	snap, err = tbl.AddEpisodes(ctx, []EpisodeInput{
		{Episode: "c", Videos: map[string]VideoFile{"": {Path: file, FirstFrame: 25}}, Sidecar: sidecarFor(t, "c", 5)},
	}, AddOptions{ReuseStoredVideos: true})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := tbl.Episode(ctx, snap, "c")
	rc := c.Videos["video"]
	if snap.Summary.BytesAdded != 0 || rc.Pack != ra.Pack || rc.Offset != ra.Offset || rc.FirstFrame != 25 || rc.Frames != ra.Frames {
		t.Fatalf("reusing commit wrote %d bytes, ref %+v (stored %+v)", snap.Summary.BytesAdded, rc, ra)
	}
	rows, err := tbl.Rows(ctx, snap, c)
	if err != nil || len(rows) != 5 || rows[0]["video"].(FrameRef).Frame != 25 {
		t.Fatalf("rows of c: %v %v", rows, err)
	}
	if probs, err := tbl.Verify(ctx); err != nil || len(probs) > 0 {
		t.Fatalf("verify: %v %v", probs, err)
	}

	// Without the option the same bytes are stored again.
	snap, err = tbl.AddEpisodes(ctx, []EpisodeInput{
		{Episode: "d", Videos: map[string]VideoFile{"": {Path: file}}, Sidecar: sidecarFor(t, "d", 5)},
	}, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Summary.BytesAdded < size {
		t.Errorf("a commit without ReuseStoredVideos wrote %d bytes for a %d-byte file", snap.Summary.BytesAdded, size)
	}
}

// A commit that reuses a stored payload fails, rather than landing a
// reference to an object gc may take, when the episodes holding the
// payload were deleted while it was being prepared.
func TestReusedVideoRemovedMeanwhile(t *testing.T) {
	ctx := context.Background()
	tbl := newTable(t)
	file := fixture("h264_bframes_gop30.mp4")
	if _, err := tbl.AddEpisodes(ctx, []EpisodeInput{
		{Episode: "a", Videos: map[string]VideoFile{"": {Path: file}}, Sidecar: sidecarFor(t, "a", 10)},
	}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, tbl.Store(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	deleted := false
	_, err = tbl.AddEpisodes(ctx, []EpisodeInput{
		{Episode: "b", Videos: map[string]VideoFile{"": {Path: file, FirstFrame: 10}}, Sidecar: sidecarFor(t, "b", 5)},
	}, AddOptions{ReuseStoredVideos: true, Progress: func(step string, done, total int) {
		if !deleted {
			deleted = true
			if _, err := other.DeleteEpisode(ctx, "a"); err != nil {
				t.Error(err)
			}
		}
	}})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("commit reusing a payload deleted meanwhile: %v, want a conflict", err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// Two byte ranges of one local file are two videos: each episode stores
// and references its own range, while episodes cut from one range share
// it.
func TestRangesOfOneFileAreTwoPayloads(t *testing.T) {
	ctx := context.Background()
	tbl := newTable(t)
	a, err := os.ReadFile(fixture("h264_bframes_gop30.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fixture("h264_gop250.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "episodes.bin")
	if err := os.WriteFile(archive, append(append([]byte{}, a...), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	first := VideoFile{Path: archive, Length: int64(len(a))}
	second := VideoFile{Path: archive, Offset: int64(len(a)), Length: int64(len(b))}
	firstLater := first
	firstLater.FirstFrame = 10
	snap, err := tbl.AddEpisodes(ctx, []EpisodeInput{
		{Episode: "a", Videos: map[string]VideoFile{"": first}, Sidecar: sidecarFor(t, "a", 10)},
		{Episode: "b", Videos: map[string]VideoFile{"": second}, Sidecar: sidecarFor(t, "b", 10)},
		{Episode: "a2", Videos: map[string]VideoFile{"": firstLater}, Sidecar: sidecarFor(t, "a2", 10)},
	}, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]VideoRef{}
	for _, ep := range []string{"a", "b", "a2"} {
		e, err := tbl.Episode(ctx, snap, ep)
		if err != nil {
			t.Fatal(err)
		}
		refs[ep] = e.Videos["video"]
	}
	for ep, want := range map[string][]byte{"a": a, "b": b, "a2": a} {
		if got := payloadOf(t, tbl, refs[ep]); !bytes.Equal(got, want) {
			t.Errorf("%s: stored payload (%d bytes) is not its range of the file (%d bytes)", ep, len(got), len(want))
		}
		if refs[ep].SHA256 != sha(want) {
			t.Errorf("%s: SHA-256 %s, want %s", ep, refs[ep].SHA256, sha(want))
		}
	}
	if refs["a"].Pack == refs["b"].Pack && refs["a"].Offset == refs["b"].Offset {
		t.Fatalf("two ranges of one file share one payload: %+v / %+v", refs["a"], refs["b"])
	}
	if refs["a2"].Pack != refs["a"].Pack || refs["a2"].Offset != refs["a"].Offset || refs["a2"].FirstFrame != 10 {
		t.Fatalf("episodes of one range do not share its payload: %+v / %+v", refs["a"], refs["a2"])
	}
	if want := int64(len(a) + len(b)); snap.Summary.BytesAdded < want || snap.Summary.BytesAdded >= want+int64(len(a)) {
		t.Errorf("wrote %d bytes for ranges of %d and %d bytes", snap.Summary.BytesAdded, len(a), len(b))
	}
	if probs, err := tbl.Verify(ctx); err != nil || len(probs) > 0 {
		t.Fatalf("verify: %v %v", probs, err)
	}
}
