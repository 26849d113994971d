package table

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/table/input"
	"github.com/framefs/framefs/table/storage"
)

// paddedMP4 is a fixture followed by a free box of pad bytes: a valid MP4
// as large as a test needs (server-side copies take 5 MiB or more) whose
// sample tables are the fixture's.
func paddedMP4(t *testing.T, fixtureName string, pad int) []byte {
	t.Helper()
	data, err := os.ReadFile(fixture(fixtureName))
	if err != nil {
		t.Fatal(err)
	}
	box := make([]byte, 8+pad)
	binary.BigEndian.PutUint32(box, uint32(len(box)))
	copy(box[4:], "free")
	rand.NewChaCha8([32]byte{byte(pad)}).Read(box[8:]) // incompressible, like media data
	return append(data, box...)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sourceTest is a versitygw with source objects, and table locations on
// it or on local disk.
type sourceTest struct {
	srv    *s3test.Server
	inputs *input.Opener
}

func newSourceTest(t *testing.T) *sourceTest {
	srv := s3test.Start(t)
	for _, kv := range srv.Env() { // the table stores use the AWS chain
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return &sourceTest{srv: srv, inputs: input.NewOpener(srv.Options())}
}

// table creates a table with one nullable column, on local disk or on
// the server, reading inputs through st.inputs.
func (st *sourceTest) table(t *testing.T, onS3 bool, name string) (*Table, storage.Store) {
	t.Helper()
	uri := filepath.Join(t.TempDir(), name)
	if onS3 {
		uri = st.srv.URI("tables/" + name)
	}
	store := mustStore(t, uri)
	tbl, err := Create(context.Background(), store, Schema{Columns: []Column{{Name: "note", Type: "string", Nullable: true}}}, Options{Inputs: st.inputs})
	if err != nil {
		t.Fatal(err)
	}
	return tbl, store
}

func payloadOf(t *testing.T, tbl *Table, ref VideoRef) []byte {
	t.Helper()
	v, err := tbl.OpenVideo(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	b, err := io.ReadAll(v.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIngestFromS3: one commit of an S3 object, a small S3 object, a byte
// range inside a larger S3 object and a local file, into a local table
// and into an S3 table on the same server. Payloads are stored byte for
// byte with their SHA-256, the table verifies, and the node reads from S3
// only what indexing needs when the server copies (S3 table), or the
// payload once when it streams (local table).
func TestIngestFromS3(t *testing.T) {
	ctx := context.Background()
	st := newSourceTest(t)
	big := paddedMP4(t, "h264_bframes_gop30.mp4", 5<<20)
	small, _ := os.ReadFile(fixture("hevc.mp4"))
	inner := paddedMP4(t, "h264_fragmented.mp4", 5<<20)
	archive := append(append(bytes.Repeat([]byte{0xAB}, 1<<20+17), inner...), bytes.Repeat([]byte{0xCD}, 300<<10)...)
	st.srv.PutObject(t, "fleet/ep-big.mp4", big)
	st.srv.PutObject(t, "fleet/ep-small.mp4", small)
	st.srv.PutObject(t, "fleet/archive.tar", archive)
	for _, onS3 := range []bool{false, true} {
		t.Run(map[bool]string{false: "local table", true: "s3 table"}[onS3], func(t *testing.T) {
			tbl, store := st.table(t, onS3, "robot")
			before := st.inputs.Stats()
			inputs := []EpisodeInput{
				{Videos: map[string]VideoFile{"": {Path: st.srv.URI("fleet/ep-big.mp4")}}},
				{Videos: map[string]VideoFile{"": {Path: st.srv.URI("fleet/ep-small.mp4"), FirstFrame: 2}}},
				{Episode: "inner", Videos: map[string]VideoFile{"": {Path: st.srv.URI("fleet/archive.tar"), Offset: 1<<20 + 17, Length: int64(len(inner))}}},
				{Videos: map[string]VideoFile{"": {Path: fixture("h264_gop250.mp4")}}},
			}
			snap, err := tbl.AddEpisodes(ctx, inputs, AddOptions{NoSizes: true})
			if err != nil {
				t.Fatal(err)
			}
			local, _ := os.ReadFile(fixture("h264_gop250.mp4"))
			want := map[string][]byte{"ep-big": big, "ep-small": small, "inner": inner, "h264_gop250": local}
			var copied int64
			for ep, data := range want {
				e, err := tbl.Episode(ctx, snap, ep)
				if err != nil {
					t.Fatal(err)
				}
				ref := e.Videos["video"]
				if got := payloadOf(t, tbl, ref); !bytes.Equal(got, data) {
					t.Fatalf("%s: stored payload differs from its source (%d bytes, want %d)", ep, len(got), len(data))
				}
				if ref.SHA256 != sha(data) {
					t.Fatalf("%s: manifest SHA-256 %s, payload's %s", ep, ref.SHA256, sha(data))
				}
				if onS3 && len(data) >= storage.MinPartSize && ref.Offset > ref.IndexOffset {
					t.Errorf("%s: a copied payload must come before the indexes in the pack (payload at %d, index at %d)", ep, ref.Offset, ref.IndexOffset)
				}
				if len(data) >= storage.MinPartSize {
					copied += int64(len(data))
				}
			}
			if e, _ := tbl.Episode(ctx, snap, "ep-small"); e.Rows != e.Videos["video"].Frames-2 || e.Videos["video"].SourceName != "ep-small.mp4" {
				t.Fatalf("ep-small: %d rows, %+v", e.Rows, e.Videos["video"])
			}
			if problems, err := tbl.Verify(ctx); err != nil || len(problems) > 0 {
				t.Fatalf("verify: %v %v", problems, err)
			}
			after := st.inputs.Stats()
			read := after.BytesRead - before.BytesRead
			t.Logf("sources: %d GETs, %d HEADs, %d bytes read for %d bytes of payloads of 5 MiB and more, %d of smaller ones",
				after.GETs-before.GETs, after.HEADs-before.HEADs, read, copied, len(small))
			if s3store, ok := store.(*storage.S3); ok {
				ss := s3store.Stats()
				t.Logf("table store: %d copies, %d bytes copied server-side, %d bytes written", ss.Copies, ss.BytesCopied, ss.BytesWritten)
				if ss.BytesCopied != copied {
					t.Errorf("%d bytes copied server-side, want %d", ss.BytesCopied, copied)
				}
				// Indexing reads a few small blocks; small payloads stream.
				if read-int64(len(small)) > copied/100 {
					t.Errorf("the node read %d bytes from S3 for %d bytes copied server-side", read, copied)
				}
			} else if read > (copied+int64(len(small)))*101/100 {
				t.Errorf("the node read %d bytes from S3 to stream %d bytes", read, copied+int64(len(small)))
			}
			// A range of an object as the new video of an episode.
			snap, err = tbl.ReplaceVideo(ctx, "ep-big", "", VideoFile{Path: st.srv.URI("fleet/archive.tar"), Offset: 1<<20 + 17, Length: int64(len(inner))}, AddOptions{NoSizes: true})
			if err != nil {
				t.Fatal(err)
			}
			e, _ := tbl.Episode(ctx, snap, "ep-big")
			if got := payloadOf(t, tbl, e.Videos["video"]); !bytes.Equal(got, inner) {
				t.Fatal("replaced video differs from its source")
			}
		})
	}
}

// TestIngestFromS3Faults: sources that change, vanish, are out of reach
// or out of range fail the commit with errors that name them, and nothing
// is committed; answers cut short are retried and never stored short.
func TestIngestFromS3Faults(t *testing.T) {
	ctx := context.Background()
	st := newSourceTest(t)
	big := paddedMP4(t, "h264_faststart.mp4", 5<<20)
	st.srv.PutObject(t, "fleet/a.mp4", big)
	st.srv.PutObject(t, "fleet/b.mp4", big)
	uriA, uriB := st.srv.URI("fleet/a.mp4"), st.srv.URI("fleet/b.mp4")
	heads := func(tbl *Table) []int64 {
		ids, err := tbl.SnapshotIDs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	for _, onS3 := range []bool{false, true} {
		t.Run(map[bool]string{false: "local table", true: "s3 table"}[onS3], func(t *testing.T) {
			tbl, _ := st.table(t, onS3, "faults")
			one := func(uri string, vf VideoFile) []EpisodeInput {
				vf.Path = uri
				return []EpisodeInput{{Videos: map[string]VideoFile{"": vf}}}
			}
			// Replaced after its index was read, before the payload was
			// copied or streamed.
			replaced := randomVideo(t, big)
			_, err := tbl.AddEpisodes(ctx, append(one(uriA, VideoFile{}), one(uriB, VideoFile{})...), AddOptions{NoSizes: true,
				Progress: func(step string, done, total int) {
					if step == "checking videos" && done == total {
						st.srv.PutObject(t, "fleet/b.mp4", replaced)
					}
				}})
			if !errors.Is(err, storage.ErrChanged) || !strings.Contains(err.Error(), uriB) {
				t.Fatalf("a source replaced after indexing: %v", err)
			}
			st.srv.PutObject(t, "fleet/b.mp4", big)
			missing := st.srv.URI("fleet/missing.mp4")
			_, err = tbl.AddEpisodes(ctx, append(one(uriA, VideoFile{}), one(missing, VideoFile{})...), AddOptions{NoSizes: true})
			if !errors.Is(err, ErrInvalidInput) || !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), missing) {
				t.Fatalf("missing key: %v", err)
			}
			_, err = tbl.AddEpisodes(ctx, one(uriA, VideoFile{Offset: int64(len(big)) - 100, Length: 200}), AddOptions{NoSizes: true})
			if !errors.Is(err, input.ErrOutOfRange) || !strings.Contains(err.Error(), uriA) {
				t.Fatalf("range past the end: %v", err)
			}
			_, err = tbl.AddEpisodes(ctx, one(uriA, VideoFile{Offset: 100}), AddOptions{NoSizes: true})
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), uriA) {
				t.Fatalf("a range that is no video: %v", err)
			}
			opts := st.srv.Options()
			opts.Credentials, opts.MaxAttempts = credentials.NewStaticCredentialsProvider(st.srv.AccessKey, "wrong-secret", ""), 2
			denied, err := Open(ctx, mustStore(t, tbl.store.String()), Options{Inputs: input.NewOpener(opts)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = denied.AddEpisodes(ctx, one(uriA, VideoFile{}), AddOptions{NoSizes: true})
			if err == nil || !strings.Contains(err.Error(), uriA) || !strings.Contains(err.Error(), "403") {
				t.Fatalf("wrong credentials: %v", err)
			}
			if ids := heads(tbl); len(ids) != 0 {
				t.Fatalf("failed ingests committed snapshots %v", ids)
			}
			// Answers cut short or failing at random: retried, and what is
			// committed is exactly the source.
			proxy := s3test.StartFaultProxy(t, st.srv.Endpoint, s3test.Faults{Truncate: 0.3, Error: 0.1}, 5)
			popts := st.srv.Options()
			popts.Endpoint, popts.MaxBackoff = proxy.Endpoint, 20*time.Millisecond
			flaky, _ := Open(ctx, tbl.store, Options{Inputs: input.NewOpener(popts)})
			snap, err := flaky.AddEpisodes(ctx, one(uriA, VideoFile{}), AddOptions{NoSizes: true})
			t.Logf("through faults (%d truncations, %d errors): %v", proxy.Truncations.Load(), proxy.Errors.Load(), err)
			if err == nil {
				e, _ := tbl.Episode(ctx, snap, "a")
				if got := payloadOf(t, tbl, e.Videos["video"]); !bytes.Equal(got, big) {
					t.Fatal("a payload read through faults differs from its source")
				}
			} else if len(heads(tbl)) != 0 {
				t.Fatal("a failed ingest committed")
			}
		})
	}
}

// randomVideo returns other bytes of the same length as v that are still
// the same MP4 (the padding differs): a replacement the index read first
// cannot tell apart, only the version can.
func randomVideo(t *testing.T, v []byte) []byte {
	out := bytes.Clone(v)
	out[len(out)-1] ^= 0xff
	return out
}

// TestS3SourceSharedByEpisodes: episodes cut from one S3 object, in one
// commit, share one payload: the object is indexed once and stored once
// (copied server-side into an S3 table, streamed once into a local one),
// and every reference carries its SHA-256.
func TestS3SourceSharedByEpisodes(t *testing.T) {
	ctx := context.Background()
	st := newSourceTest(t)
	big := paddedMP4(t, "h264_bframes_gop30.mp4", 5<<20)
	st.srv.PutObject(t, "fleet/run.mp4", big)
	uri := st.srv.URI("fleet/run.mp4")
	for _, onS3 := range []bool{false, true} {
		t.Run(map[bool]string{false: "local table", true: "s3 table"}[onS3], func(t *testing.T) {
			tbl, store := st.table(t, onS3, "robot")
			before := st.inputs.Stats()
			var inputs []EpisodeInput
			for i, ep := range []string{"a", "b", "c"} {
				inputs = append(inputs, EpisodeInput{Episode: ep, Videos: map[string]VideoFile{"": {Path: uri, FirstFrame: int64(10 * i)}}})
			}
			snap, err := tbl.AddEpisodes(ctx, inputs, AddOptions{NoSizes: true})
			if err != nil {
				t.Fatal(err)
			}
			var first VideoRef
			for i, ep := range []string{"a", "b", "c"} {
				e, err := tbl.Episode(ctx, snap, ep)
				if err != nil {
					t.Fatal(err)
				}
				ref := e.Videos["video"]
				if ref.SHA256 != sha(big) || ref.FirstFrame != int64(10*i) {
					t.Fatalf("%s: %+v, want SHA-256 %s from frame %d", ep, ref, sha(big), 10*i)
				}
				if i == 0 {
					first = ref
					if got := payloadOf(t, tbl, ref); !bytes.Equal(got, big) {
						t.Fatal("stored payload differs from its source")
					}
				} else if ref.Pack != first.Pack || ref.Offset != first.Offset {
					t.Fatalf("%s does not share the payload of a: %+v / %+v", ep, ref, first)
				}
			}
			if snap.Summary.BytesAdded >= 2*int64(len(big)) {
				t.Errorf("three episodes of one object wrote %d bytes for a %d-byte object", snap.Summary.BytesAdded, len(big))
			}
			if problems, err := tbl.Verify(ctx); err != nil || len(problems) > 0 {
				t.Fatalf("verify: %v %v", problems, err)
			}
			read := st.inputs.Stats().BytesRead - before.BytesRead
			if s3store, ok := store.(*storage.S3); ok {
				ss := s3store.Stats()
				if ss.Copies != 1 || ss.BytesCopied != int64(len(big)) {
					t.Errorf("%d copies of %d bytes server-side, want one of %d", ss.Copies, ss.BytesCopied, len(big))
				}
				if read > int64(len(big))/100 {
					t.Errorf("the node read %d bytes of an object the server copied", read)
				}
			} else if read > int64(len(big))*101/100 {
				t.Errorf("the node read %d bytes from S3 to stream one %d-byte object", read, len(big))
			}
		})
	}
}
