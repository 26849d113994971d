package decoder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/framefs/framefs/videoidx"
)

// realDir holds the real-world fixtures (see its README.md).
const realDir = "../testdata/real"

// realFixture returns the path of a file in realDir.
func realFixture(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(realDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return p
}

// scanFile runs ScanIndex over a whole file.
func scanFile(t testing.TB, path string, opts ScanOptions) (*videoidx.Index, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return ScanIndex(context.Background(), f, fi.Size(), opts)
}

// probe is what ffprobe reports about one stream: its parameters and,
// from decoding it, every frame in output (presentation) order.
type probe struct {
	codec         string
	width, height int
	timeBaseNum   int64
	countedFrames int // -count_frames
	pts           []int64
	key           []bool
}

func runFFprobe(t *testing.T, path string, stream int, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("ffprobe")
	if err != nil {
		t.Fatalf("ffprobe is required to check the index against FFmpeg: %v", err)
	}
	all := append([]string{"-v", "error", "-select_streams", strconv.Itoa(stream)}, args...)
	all = append(all, "-of", "json", path)
	out, err := exec.Command(bin, all...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("ffprobe %s: %v: %s", strings.Join(all, " "), err, ee.Stderr)
		}
		t.Fatalf("ffprobe %s: %v", strings.Join(all, " "), err)
	}
	return out
}

func ffprobeStream(t *testing.T, path string, stream int) probe {
	t.Helper()
	var info struct {
		Streams []struct {
			CodecName    string `json:"codec_name"`
			Width        int    `json:"width"`
			Height       int    `json:"height"`
			TimeBase     string `json:"time_base"`
			NbReadFrames string `json:"nb_read_frames"`
		} `json:"streams"`
	}
	out := runFFprobe(t, path, stream, "-count_frames",
		"-show_entries", "stream=codec_name,width,height,time_base,nb_read_frames")
	if err := json.Unmarshal(out, &info); err != nil || len(info.Streams) != 1 {
		t.Fatalf("ffprobe streams of %s: %v: %s", path, err, out)
	}
	s := info.Streams[0]
	num, _, ok := strings.Cut(s.TimeBase, "/")
	p := probe{codec: s.CodecName, width: s.Width, height: s.Height}
	var err error
	if p.timeBaseNum, err = strconv.ParseInt(num, 10, 64); !ok || err != nil {
		t.Fatalf("ffprobe time base %q", s.TimeBase)
	}
	if p.countedFrames, err = strconv.Atoi(s.NbReadFrames); err != nil {
		t.Fatalf("ffprobe nb_read_frames %q", s.NbReadFrames)
	}

	var frames struct {
		Frames []struct {
			PTS        *int64 `json:"pts"`
			BestEffort *int64 `json:"best_effort_timestamp"`
			KeyFrame   int    `json:"key_frame"`
		} `json:"frames"`
	}
	out = runFFprobe(t, path, stream, "-show_frames",
		"-show_entries", "frame=pts,best_effort_timestamp,key_frame")
	if err := json.Unmarshal(out, &frames); err != nil {
		t.Fatalf("ffprobe frames of %s: %v", path, err)
	}
	for i, f := range frames.Frames {
		ts := f.PTS
		if ts == nil {
			ts = f.BestEffort
		}
		if ts == nil {
			t.Fatalf("ffprobe frame %d of %s has no timestamp", i, path)
		}
		p.pts = append(p.pts, *ts)
		p.key = append(p.key, f.KeyFrame == 1)
	}
	return p
}

// checkAgainstFFprobe compares the index with what FFmpeg decodes: the
// same number of frames, the same presentation timestamps in the same
// order, keyframes in the same places.
func checkAgainstFFprobe(t *testing.T, path string, ix *videoidx.Index) {
	t.Helper()
	p := ffprobeStream(t, path, ix.Stream)
	if ix.Codec != p.codec || ix.Width != p.width || ix.Height != p.height {
		t.Errorf("index says %s %dx%d, ffprobe %s %dx%d", ix.Codec, ix.Width, ix.Height, p.codec, p.width, p.height)
	}
	if ix.Source != videoidx.SourceScan || ix.TrackID != 0 {
		t.Errorf("Source %v TrackID %d, want scan and 0", ix.Source, ix.TrackID)
	}
	if ix.Frames() != p.countedFrames || ix.Frames() != len(p.pts) {
		t.Fatalf("index has %d frames, ffprobe -count_frames %d, -show_frames %d", ix.Frames(), p.countedFrames, len(p.pts))
	}
	for i := range p.pts {
		f := ix.Frame(i)
		if want := p.pts[i] * p.timeBaseNum; f.PTS != want {
			t.Fatalf("frame %d: PTS %d, ffprobe %d (time base numerator %d)", i, f.PTS, want, p.timeBaseNum)
		}
		if f.Key != p.key[i] {
			t.Errorf("frame %d (PTS %d): key %v, ffprobe key_frame %v", i, f.PTS, f.Key, p.key[i])
		}
	}
}

func TestScanIndexMatchesFFprobe(t *testing.T) {
	realFixture(t, "README.md")
	type want struct {
		stream        int
		frames        int
		codec         string
		width, height int
		timescale     uint32
		keyFrames     int
	}
	tests := []struct {
		file string
		opts ScanOptions
		want *want // checked on top of the ffprobe comparison; nil: ffprobe only
	}{
		{"av1_video.mkv", ScanOptions{}, &want{stream: 0, frames: 125, codec: "av1", width: 640, height: 360, timescale: 1000, keyFrames: 1}},
		// FFmpeg's best video stream is the 480x270 one, not the first.
		{"nasa_13013.mp4", ScanOptions{}, &want{stream: 3, frames: 390, codec: "h264", width: 480, height: 270, timescale: 30000}},
		{"nasa_13013.mp4", ScanOptions{HasStream: true, Stream: 0}, &want{stream: 0, frames: 325, codec: "h264", width: 320, height: 180, timescale: 12800}},
		{"nasa_13013.mp4", ScanOptions{HasStream: true, Stream: 3}, &want{stream: 3, frames: 390, codec: "h264", width: 480, height: 270, timescale: 30000}},
		{"h265_video.mp4", ScanOptions{}, &want{stream: 0, frames: 10, codec: "hevc", width: 128, height: 128, timescale: 10240}},
		{"fragmented_h264_aac.mp4", ScanOptions{}, &want{stream: 0, frames: 10, codec: "h264", width: 1280, height: 720, timescale: 90000}},
	}
	// Every other video of the fixture directory, default stream.
	listed := map[string]bool{"truncated_h264_aac.mp4": true}
	for _, tc := range tests {
		listed[tc.file] = true
	}
	for _, pattern := range []string{"*.mp4", "*.mkv"} {
		files, err := filepath.Glob(filepath.Join(realDir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if name := filepath.Base(f); !listed[name] {
				tests = append(tests, struct {
					file string
					opts ScanOptions
					want *want
				}{name, ScanOptions{}, nil})
			}
		}
	}

	for _, tc := range tests {
		name := tc.file
		if tc.opts.HasStream {
			name += fmt.Sprintf("/stream%d", tc.opts.Stream)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := realFixture(t, tc.file)
			ix, err := scanFile(t, path, tc.opts)
			if err != nil {
				t.Fatalf("ScanIndex: %v", err)
			}
			if w := tc.want; w != nil {
				if ix.Stream != w.stream || ix.Frames() != w.frames || ix.Codec != w.codec ||
					ix.Width != w.width || ix.Height != w.height || ix.Timescale != w.timescale {
					t.Errorf("got stream %d, %d frames, %s %dx%d, timescale %d; want stream %d, %d frames, %s %dx%d, timescale %d",
						ix.Stream, ix.Frames(), ix.Codec, ix.Width, ix.Height, ix.Timescale,
						w.stream, w.frames, w.codec, w.width, w.height, w.timescale)
				}
				if w.keyFrames != 0 && ix.KeyFrames() != w.keyFrames {
					t.Errorf("%d keyframes, want %d", ix.KeyFrames(), w.keyFrames)
				}
			}
			checkAgainstFFprobe(t, path, ix)
		})
	}
}

// ffmpegTo runs ffmpeg with args and the output path out, failing the test
// if ffmpeg is missing or fails.
func ffmpegTo(t testing.TB, out string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("ffmpeg is required to make test inputs: %v", err)
	}
	args = append(append([]string{"-v", "error"}, args...), out)
	if b, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v: %s", strings.Join(args, " "), err, b)
	}
	return out
}

func TestScanIndexTimeBaseNumerator(t *testing.T) {
	t.Parallel()
	// AVI stores 29.97 fps as time base 1001/30000 with timestamps
	// counting frames; the index must count 1/30000 s instead.
	path := ffmpegTo(t, filepath.Join(t.TempDir(), "ntsc.avi"),
		"-f", "lavfi", "-i", "testsrc=d=2:r=30000/1001:s=160x120", "-c:v", "mpeg4", "-bf", "0", "-g", "12")
	ix, err := scanFile(t, path, ScanOptions{})
	if err != nil {
		t.Fatalf("ScanIndex: %v", err)
	}
	if p := ffprobeStream(t, path, ix.Stream); p.timeBaseNum != 1001 {
		t.Fatalf("fixture has time base numerator %d, want 1001", p.timeBaseNum)
	}
	checkAgainstFFprobe(t, path, ix)
	if ix.Timescale != 30000 || ix.Frames() != 60 || ix.KeyFrames() != 5 {
		t.Errorf("timescale %d, %d frames, %d keyframes; want 30000, 60, 5", ix.Timescale, ix.Frames(), ix.KeyFrames())
	}
	if d := ix.Frame(30).PTS - ix.Frame(0).PTS; d != 30*1001 {
		t.Errorf("30 frames span %d units, want %d", d, 30*1001)
	}
}

func TestScanIndexEditList(t *testing.T) {
	t.Parallel()
	// Stream copy from 1.3 s starts inside a GOP: the MP4 keeps the GOP
	// from its keyframe and an edit list hides the frames before 1.3 s,
	// which FFmpeg's demuxer returns flagged AV_PKT_FLAG_DISCARD.
	path := ffmpegTo(t, filepath.Join(t.TempDir(), "trimmed.mp4"),
		"-ss", "1.3", "-i", realFixture(t, "nasa_13013.mp4"), "-map", "0:3", "-c", "copy")
	ix, err := scanFile(t, path, ScanOptions{})
	if err != nil {
		t.Fatalf("ScanIndex: %v", err)
	}
	hidden := 0
	for _, s := range ix.Samples {
		if s.Hidden {
			hidden++
		}
	}
	if hidden == 0 || ix.Frames()+hidden != len(ix.Samples) {
		t.Errorf("%d samples, %d hidden, %d frames: want some hidden and the rest presented", len(ix.Samples), hidden, ix.Frames())
	}
	if !ix.Samples[0].Hidden || !ix.Samples[0].Key {
		t.Errorf("first sample %+v: want the hidden keyframe the GOP starts at", ix.Samples[0])
	}
	checkAgainstFFprobe(t, path, ix)
}

func TestScanIndexReorderedWithoutPTS(t *testing.T) {
	t.Parallel()
	// H.264 with B-frames in AVI: packets carry only DTS, so presentation
	// order is unknowable without decoding.
	path := ffmpegTo(t, filepath.Join(t.TempDir(), "bframes.avi"),
		"-i", realFixture(t, "nasa_13013.mp4"), "-map", "0:3", "-c", "copy")
	_, err := scanFile(t, path, ScanOptions{})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("got %v, want an error wrapping ErrUnsupported", err)
	}
	t.Log(err)
}

// boundedReader is an io.ReaderAt that fails the test on any read outside
// [0, size).
type boundedReader struct {
	t    testing.TB
	r    io.ReaderAt
	size int64
}

func (b boundedReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > b.size {
		b.t.Errorf("read of %d bytes at %d outside the %d-byte section", len(p), off, b.size)
	}
	return b.r.ReadAt(p, off)
}

func TestScanIndexByteRange(t *testing.T) {
	for _, file := range []string{"av1_video.mkv", "nasa_13013.mp4", "fragmented_h264_aac.mp4"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			path := realFixture(t, file)
			video, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := scanFile(t, path, ScanOptions{})
			if err != nil {
				t.Fatal(err)
			}

			// Junk before and after, including a copy of the video's own
			// first bytes after it, so a reader that strays out of the
			// section finds plausible data instead of an obvious error.
			rng := rand.New(rand.NewPCG(1, 2))
			before := make([]byte, 12345)
			for i := range before {
				before[i] = byte(rng.Uint32())
			}
			after := append(append([]byte{}, video[:min(len(video), 4096)]...), before[:777]...)
			blob := append(append(append([]byte{}, before...), video...), after...)

			section := io.NewSectionReader(bytes.NewReader(blob), int64(len(before)), int64(len(video)))
			r := boundedReader{t: t, r: section, size: int64(len(video))}
			got, err := ScanIndex(context.Background(), r, int64(len(video)), ScanOptions{})
			if err != nil {
				t.Fatalf("ScanIndex over a section: %v", err)
			}
			if !reflect.DeepEqual(got.Samples, want.Samples) || got.Stream != want.Stream ||
				got.Codec != want.Codec || got.Timescale != want.Timescale {
				t.Fatalf("index over a section differs from the index of the file")
			}
			// Offsets are relative to the section: the bytes they point at
			// are the file's.
			for i, s := range got.Samples {
				if s.Offset < 0 || s.Offset+int64(s.Size) > int64(len(video)) {
					t.Fatalf("sample %d at %d+%d lies outside the video", i, s.Offset, s.Size)
				}
			}
		})
	}
}

func TestScanIndexRejects(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	random := make([]byte, 1<<16)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	audioOnly := ffmpegTo(t, filepath.Join(dir, "audio.mp4"), "-f", "lavfi", "-i", "sine=d=1", "-c:a", "aac")

	tests := []struct {
		name    string
		path    func(t *testing.T) string
		opts    ScanOptions
		is      error  // errors.Is target
		message string // substring of the error
	}{
		{"truncated", func(t *testing.T) string { return realFixture(t, "truncated_h264_aac.mp4") }, ScanOptions{},
			videoidx.ErrTruncated, "the file is truncated"},
		{"empty", func(*testing.T) string { return write("empty.mp4", nil) }, ScanOptions{},
			ErrUnrecognized, "empty"},
		{"random bytes", func(*testing.T) string { return write("random.mp4", random) }, ScanOptions{},
			ErrUnrecognized, "unknown format"},
		{"audio only", func(*testing.T) string { return audioOnly }, ScanOptions{},
			videoidx.ErrNoVideo, "decoder: no video stream (file has 1 stream: #0 audio)"},
		{"audio only, stream 0 asked", func(*testing.T) string { return audioOnly }, ScanOptions{HasStream: true, Stream: 0},
			videoidx.ErrNoVideo, "decoder: stream 0 is not a video stream but audio"},
		{"audio stream asked", func(t *testing.T) string { return realFixture(t, "nasa_13013.mp4") }, ScanOptions{HasStream: true, Stream: 1},
			videoidx.ErrNoVideo, "decoder: stream 1 is not a video stream but audio (file has 6 streams"},
		{"missing stream asked", func(t *testing.T) string { return realFixture(t, "av1_video.mkv") }, ScanOptions{HasStream: true, Stream: 5},
			videoidx.ErrNoVideo, "decoder: stream 5 is not a video stream (file has 1 stream: #0 video)"},
		{"negative stream asked", func(t *testing.T) string { return realFixture(t, "av1_video.mkv") }, ScanOptions{HasStream: true, Stream: -1},
			videoidx.ErrNoVideo, "decoder: stream -1 is not a video stream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := scanFile(t, tc.path(t), tc.opts)
			if err == nil {
				t.Fatalf("ScanIndex succeeded with %d frames, want an error", ix.Frames())
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %q", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q does not say %q", err, tc.message)
			}
			t.Logf("%v", err)
		})
	}
}

// cut writes the first n bytes of the file at path into a temporary file;
// a negative n counts from the end.
func cut(t *testing.T, path string, n int) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n < 0 {
		n += len(b)
	}
	p := filepath.Join(t.TempDir(), fmt.Sprintf("cut%d-%s", n, filepath.Base(path)))
	if err := os.WriteFile(p, b[:n], 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestScanIndexCutFiles(t *testing.T) {
	nasa := realFixture(t, "nasa_13013.mp4") // moov after mdat, at byte 654812
	// The same with the moov first (-movflags faststart): cutting the
	// media data leaves sample tables that point past the end.
	fast := ffmpegTo(t, filepath.Join(t.TempDir(), "faststart.mp4"),
		"-i", nasa, "-map", "0", "-c", "copy", "-movflags", "faststart")
	fi, err := os.Stat(fast)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		n    int
		is   error
	}{
		// No moov at all: FFmpeg cannot tell this from a non-video.
		{"moov last, cut in mdat", nasa, 300000, ErrUnrecognized},
		{"moov last, cut in moov", nasa, -4000, videoidx.ErrTruncated},
		{"moov first, cut early", fast, 30000, videoidx.ErrTruncated},
		{"moov first, cut halfway", fast, int(fi.Size() / 2), videoidx.ErrTruncated},
		// The mdat ends with 4 bytes no sample uses: lose the last byte of the
		// last sample (an audio one) too.
		{"moov first, last sample cut by a byte", fast, -5, videoidx.ErrTruncated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := scanFile(t, cut(t, tc.path, tc.n), ScanOptions{})
			if !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want an error wrapping %q", err, tc.is)
			}
			if !strings.Contains(err.Error(), "truncated") {
				t.Errorf("error %q does not mention truncation", err)
			}
			t.Log(err)
		})
	}
}

// failingReader returns err for every read at or after failAt.
type failingReader struct {
	r      io.ReaderAt
	failAt int64
	err    error
}

func (f failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.failAt {
		return 0, f.err
	}
	return f.r.ReadAt(p, off)
}

func TestScanIndexReaderError(t *testing.T) {
	t.Parallel()
	path := realFixture(t, "nasa_13013.mp4")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	errStorage := errors.New("storage: connection reset")
	for _, at := range []int64{0, 100, fi.Size() / 2} {
		_, err := ScanIndex(context.Background(), failingReader{f, at, errStorage}, fi.Size(), ScanOptions{})
		if !errors.Is(err, errStorage) {
			t.Errorf("failing at %d: got %v, want the reader's error", at, err)
		}
		if errors.Is(err, videoidx.ErrCorrupt) || errors.Is(err, ErrUnrecognized) {
			t.Errorf("failing at %d: a storage error reported as bad data: %v", at, err)
		}
	}
}

// cancellingReader cancels its context once it has served after reads.
type cancellingReader struct {
	r      io.ReaderAt
	after  int64
	reads  atomic.Int64
	cancel context.CancelFunc
}

func (c *cancellingReader) ReadAt(p []byte, off int64) (int, error) {
	if c.reads.Add(1) > c.after {
		c.cancel()
	}
	return c.r.ReadAt(p, off)
}

func TestScanIndexCancel(t *testing.T) {
	t.Parallel()
	path := realFixture(t, "nasa_13013.mp4")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ScanIndex(ctx, f, fi.Size(), ScanOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before the call: got %v", err)
	}

	for _, after := range []int64{1, 3, 6} {
		ctx, cancel := context.WithCancel(context.Background())
		r := &cancellingReader{r: f, after: after, cancel: cancel}
		_, err := ScanIndex(ctx, r, fi.Size(), ScanOptions{})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled after %d reads: got %v", after, err)
		}
	}
}

func FuzzScanIndex(f *testing.F) {
	for _, name := range []string{"small_h264_aac.mp4", "av1_video.mkv", "h265_video.mp4"} {
		b, err := os.ReadFile(filepath.Join(realDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte("\x00\x00\x00\x18ftypisom"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := ScanIndex(context.Background(), bytes.NewReader(b), int64(len(b)), ScanOptions{})
		if err != nil {
			return
		}
		if ix.Frames() == 0 || int64(len(ix.Samples)) > int64(len(b)) {
			t.Fatalf("%d frames from %d samples of %d bytes", ix.Frames(), len(ix.Samples), len(b))
		}
		for i, s := range ix.Samples {
			if s.Offset >= 0 && s.Offset+int64(s.Size) > int64(len(b)) {
				t.Fatalf("sample %d at %d+%d past the end of %d bytes", i, s.Offset, s.Size, len(b))
			}
		}
	})
}

func benchmarkScan(b *testing.B, name string) {
	path := realFixture(b, name)
	video, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(video)))
	for b.Loop() {
		if _, err := ScanIndex(context.Background(), bytes.NewReader(video), int64(len(video)), ScanOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScanIndexNASA(b *testing.B) { benchmarkScan(b, "nasa_13013.mp4") }
func BenchmarkScanIndexAV1(b *testing.B)  { benchmarkScan(b, "av1_video.mkv") }
