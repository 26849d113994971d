package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/s3test"
)

// TestIngestS3Sources drives `framefs ingest` and `replace` with S3
// sources: a whole object into an S3 table (copied by the server), a byte
// range of a larger object with its sidecar on S3 into a local table
// (streamed, frame sizes computed through ranged reads). Every frame of
// the ingested episodes equals the frame FFmpeg decodes from the source
// file itself; bad sources fail with errors that name them and commit
// nothing.
func TestIngestS3Sources(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	srv := s3test.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	video := filepath.Join(dir, "cam.mp4")
	// 20 lossless 640x360 frames of noise: about 8 MB, more than the
	// 5 MiB a server-side copy needs.
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-frames:v", "20",
		"-vf", "noise=alls=40:allf=t", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-g", "8", "-pix_fmt", "yuv420p", video).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	data, err := os.ReadFile(video)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := exec.Command("ffmpeg", "-v", "error", "-i", video, "-f", "rawvideo", "-pix_fmt", "rgb24", "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	const frameBytes = 640 * 360 * 3
	if len(raw) != 20*frameBytes {
		t.Fatalf("ffmpeg decoded %d bytes, want 20 frames", len(raw))
	}
	prefix := bytes.Repeat([]byte("archive "), 100000)
	srv.PutObject(t, "fleet/cam.mp4", data)
	srv.PutObject(t, "fleet/day.pack", append(append(append([]byte{}, prefix...), data...), "trailer"...))
	srv.PutObject(t, "fleet/two.pack", append(append(append([]byte{}, prefix...), data...), prefix...))
	var rows strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&rows, "{\"note\": \"row %d\"}\n", i)
	}
	srv.PutObject(t, "fleet/cam.jsonl", []byte(rows.String()))
	srv.PutObject(t, "fleet/inner.jsonl", []byte(rows.String()))

	f := []string{"--s3-cache-dir", "off"}
	s3Table, localTable := srv.URI("tables/robot"), filepath.Join(dir, "robot")
	for _, tbl := range []string{s3Table, localTable} {
		mustRunString(t, append([]string{"create", tbl, "--column", "note:string?"}, f...)...)
	}
	// Into the S3 table: the payload is copied by the server; the sidecar
	// beside the object is found and read from S3.
	out := mustRunString(t, append([]string{"ingest", s3Table, srv.URI("fleet/cam.mp4"), "--no-sizes"}, f...)...)
	read, copied := s3Report(t, out)
	t.Logf("S3 table: %s", strings.TrimSpace(out))
	if copied != int64(len(data)) || read > int64(len(data))/100 {
		t.Errorf("copy into the S3 table: %d bytes read, %d copied, payload %d", read, copied, len(data))
	}
	// Into the local table: a range of a larger object, frame sizes
	// stored (decoded through ranged reads), rows from S3.
	out = mustRunString(t, append([]string{"ingest", localTable, srv.URI("fleet/day.pack"), "--episode", "inner", "--rows", srv.URI("fleet/inner.jsonl"),
		"--offset", strconv.Itoa(len(prefix)), "--length", strconv.Itoa(len(data))}, f...)...)
	read, copied = s3Report(t, out)
	t.Logf("local table: %s", strings.TrimSpace(out))
	if copied != 0 || read < int64(len(data)) || read > int64(len(data))*3 {
		t.Errorf("stream into the local table: %d bytes read, %d copied, payload %d", read, copied, len(data))
	}
	for _, c := range []struct{ table, episode string }{{s3Table, "cam"}, {localTable, "inner"}} {
		for i := 0; i < 20; i++ {
			ppm := mustRunString(t, append([]string{"frame", c.table, "--episode", c.episode, "--frame", strconv.Itoa(i), "--format", "ppm"}, f...)...)
			header := "P6\n640 360\n255\n"
			if !strings.HasPrefix(ppm, header) || !bytes.Equal([]byte(ppm[len(header):]), raw[i*frameBytes:(i+1)*frameBytes]) {
				t.Fatalf("%s episode %s frame %d differs from FFmpeg's decoding of the source file", c.table, c.episode, i)
			}
		}
		if out := mustRunString(t, append([]string{"verify", c.table}, f...)...); !strings.Contains(out, "ok") {
			t.Fatalf("verify %s: %s", c.table, out)
		}
	}
	ls := mustRunString(t, append([]string{"ls", s3Table, "cam", "--json"}, f...)...)
	if !strings.Contains(ls, "row 19") {
		t.Errorf("the sidecar beside the S3 object was not used: %s", ls)
	}
	// A multi-camera episode: COLUMN=SOURCE, every source and the rows on S3.
	front, _ := os.ReadFile(filepath.Join("..", "..", "testdata", "video", "h264_bframes_gop30.mp4"))
	left, _ := os.ReadFile(filepath.Join("..", "..", "testdata", "video", "hevc.mp4"))
	srv.PutObject(t, "fleet/e9/front.mp4", front)
	srv.PutObject(t, "fleet/e9/left.mp4", left)
	srv.PutObject(t, "fleet/e9/rows.jsonl", []byte("{\"note\": \"a\"}\n{\"note\": \"b\"}\n"))
	arm := filepath.Join(dir, "arm")
	mustRunString(t, append([]string{"create", arm, "--column", "note:string?", "--video-column", "front,left"}, f...)...)
	mustRunString(t, append([]string{"ingest", arm, "front=" + srv.URI("fleet/e9/front.mp4"), "left=" + srv.URI("fleet/e9/left.mp4"),
		"--rows", srv.URI("fleet/e9/rows.jsonl"), "--episode", "e9", "--no-sizes"}, f...)...)
	if out := mustRunString(t, append([]string{"verify", arm}, f...)...); !strings.Contains(out, "ok") {
		t.Fatalf("verify %s: %s", arm, out)
	}
	if ls := mustRunString(t, append([]string{"ls", arm, "e9", "--json"}, f...)...); !strings.Contains(ls, fmt.Sprintf(`"length": %d`, len(front))) ||
		!strings.Contains(ls, fmt.Sprintf(`"length": %d`, len(left))) || !strings.Contains(ls, `"note": "b"`) {
		t.Errorf("multi-camera episode from S3: %s", ls)
	}

	// replace with a range of an object.
	mustRunString(t, append([]string{"replace", s3Table, "--episode", "cam", srv.URI("fleet/day.pack"), "--offset", strconv.Itoa(len(prefix)),
		"--length", strconv.Itoa(len(data)), "--no-sizes"}, f...)...)

	// Bad sources: errors that name them, and no commit.
	logBefore := mustRunString(t, append([]string{"log", localTable, "--json"}, f...)...)
	missing := srv.URI("fleet/missing.mp4")
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{missing}, missing},
		{[]string{srv.URI("fleet/cam.mp4"), "--offset", strconv.Itoa(len(data) - 10), "--length", "100"}, "past the end"},
		{[]string{srv.URI("fleet/cam.mp4"), srv.URI("fleet/day.pack"), "--offset", "5"}, "single video"},
		{[]string{srv.URI("fleet/two.pack"), "--episode", "tail", "--offset", strconv.Itoa(len(prefix))}, "without --length takes VIDEO from that byte to its end; if more follows the video there (the next video of a pack), give the video's size with --length"},
		{[]string{srv.URI("fleet/cam.mp4"), "--length", "0"}, "at least one byte"},
		{[]string{"s3://only-a-bucket"}, "s3://BUCKET/KEY"},
	} {
		raw, err := runCLI(context.Background(), append(append([]string{"ingest", localTable}, bad.args...), append(f, "--no-sizes")...)...)
		out := string(raw)
		if err == nil || !strings.Contains(err.Error()+out, bad.want) {
			t.Errorf("ingest %v: want an error with %q, got %v\n%s", bad.args, bad.want, err, out)
		}
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	_, err = runCLI(context.Background(), append([]string{"ingest", localTable, srv.URI("fleet/cam.mp4"), "--episode", "denied", "--no-sizes"}, f...)...)
	if err == nil || !strings.Contains(err.Error(), srv.URI("fleet/cam.mp4")) || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("wrong credentials: %v", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	if logAfter := mustRunString(t, append([]string{"log", localTable, "--json"}, f...)...); logAfter != logBefore {
		t.Errorf("failed ingests changed the table:\n%s\n%s", logBefore, logAfter)
	}
}

var s3ReportRE = regexp.MustCompile(`S3 sources: (\d+) bytes read, (\d+) bytes copied by the server`)

func s3Report(t *testing.T, out string) (read, copied int64) {
	t.Helper()
	m := s3ReportRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no S3 report in %q", out)
	}
	read, _ = strconv.ParseInt(m[1], 10, 64)
	copied, _ = strconv.ParseInt(m[2], 10, 64)
	return read, copied
}
