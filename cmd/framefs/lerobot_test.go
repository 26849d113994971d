package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/fusefs"
	"github.com/framefs/framefs/internal/lerobottest"
	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/internal/tabletest"
	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/lerobot"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
)

// The test binary doubles as the framefs command: with FRAMEFS_TEST_MAIN
// set it runs main with those arguments (separated by \x1f), so that
// tests can run, and kill, a real framefs process.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("FRAMEFS_TEST_MAIN"); ok {
		os.Args = append([]string{"framefs"}, strings.Split(args, "\x1f")...)
		main()
		os.Exit(0)
	}
	flag.Parse()
	if *writeFrozenTable {
		os.Exit(writeFrozen())
	}
	// Mounts spill (and stage) under the user's cache directory by
	// default: the tests' mounts, in process or not, use one of their own.
	xdg, err := os.MkdirTemp("", "framefs-xdg-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CACHE_HOME", xdg)
	code := m.Run()
	os.RemoveAll(xdg)
	lerobottest.RemoveCache()
	os.Exit(code)
}

// framefsCmd is a framefs process running args.
func framefsCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), "FRAMEFS_TEST_MAIN="+strings.Join(args, "\x1f"))
	return cmd
}

func runFramefs(t *testing.T, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := framefsCmd(t.Context(), args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("framefs %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// TestLeRobotFramesThroughMount imports v3.0 and v2.1 datasets with the
// command (frame sizes computed) and reads every frame of episode 3, of
// both cameras (AV1 and H.264), through a real mount as PPM: each equals
// the frame the ffmpeg command decodes from the source file at the
// episode's position in it.
func TestLeRobotFramesThroughMount(t *testing.T) {
	testenv.RequireFUSE(t)
	ctx := context.Background()
	for _, version := range []string{lerobot.V30, lerobot.V21} {
		t.Run(version, func(t *testing.T) {
			d := lerobottest.Build(t, filepath.Join(t.TempDir(), "dataset"), lerobottest.Standard(version))
			tblDir := filepath.Join(t.TempDir(), "robot")
			var res lerobot.ImportResult
			if err := json.Unmarshal(runFramefs(t, "import", "lerobot", d.Dir, tblDir, "--json"), &res); err != nil {
				t.Fatal(err)
			}
			if res.Imported != 6 || res.Frames != 64 {
				t.Fatalf("import result %+v", res)
			}
			tbl := tabletest.Open(t, tblDir, tableOptions())
			snap, _ := tbl.Head(ctx)
			ep, err := tbl.Episode(ctx, snap, "episode_000003")
			if err != nil {
				t.Fatal(err)
			}
			mnt := filepath.Join(t.TempDir(), "mnt")
			os.MkdirAll(mnt, 0o755)
			frames := serving.New(decoder.Codec{}, serving.Options{CacheBytes: 8 << 20})
			srv, err := fusefs.MountTable(mnt, tblDir, tbl, frames, fusefs.Options{
				ReadOnly: true, Image: fusefs.ImageChoice{ImageOptions: table.ImageOptions{Format: "ppm"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			srv.WaitMount() // read from this process: see fusefs.Server
			t.Cleanup(func() {
				if err := srv.Unmount(); err != nil {
					t.Errorf("unmount: %v", err)
					exec.Command("fusermount3", "-u", "-z", mnt).Run()
				}
				srv.Wait()
				frames.Close()
			})
			length := d.Spec.Lengths[3]
			for _, cam := range d.Spec.Cameras {
				ref := ep.Videos[cam.Key]
				src := filepath.Join(d.Dir, d.EpisodeFile[cam.Key][3])
				first := d.EpisodeFirst[cam.Key][3]
				if ref.SHA256 != lerobottest.FileSHA256(t, src) || ref.FirstFrame != first {
					t.Fatalf("%s: stored %s from frame %d, source %s from frame %d", cam.Key, ref.SHA256, ref.FirstFrame, src, first)
				}
				want, err := lerobottest.Frames(ctx, src, int(first), length, cam.Width, cam.Height)
				if err != nil {
					t.Fatal(err)
				}
				dir := filepath.Join(mnt, "latest", "episode_000003", cam.Key)
				entries, err := os.ReadDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				if len(entries) != length {
					t.Fatalf("%s holds %d entries, the episode has %d frames", dir, len(entries), length)
				}
				header := fmt.Sprintf("P6\n%d %d\n255\n", cam.Width, cam.Height)
				for k := range length {
					name := filepath.Join(dir, fmt.Sprintf("%06d.ppm", k))
					st, err := os.Stat(name)
					if err != nil {
						t.Fatal(err)
					}
					got, err := os.ReadFile(name)
					if err != nil {
						t.Fatal(err)
					}
					if int64(len(got)) != st.Size() || !bytes.HasPrefix(got, []byte(header)) {
						t.Fatalf("%s: %d bytes (stat %d), header %q", name, len(got), st.Size(), got[:min(len(got), 15)])
					}
					if !bytes.Equal(got[len(header):], want[k]) {
						t.Fatalf("%s differs from frame %d of %s decoded by ffmpeg", name, int(first)+k, src)
					}
				}
			}
			rows, err := os.ReadFile(filepath.Join(mnt, "latest", "episode_000003", "frames.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(rows)), "\n")
			var row map[string]any
			if len(lines) != length || json.Unmarshal([]byte(lines[4]), &row) != nil || row["task"] != "push the button" || row["frame_index"] != 4.0 {
				t.Fatalf("frames.jsonl of episode 3: %d lines, row 4 %v", len(lines), row)
			}
		})
	}
}

// episodeState is what an imported episode must hold.
type episodeState struct {
	rows   int64
	videos string
}

func tableState(t *testing.T, dir string) (map[string]episodeState, map[string]int) {
	t.Helper()
	ctx := context.Background()
	tbl := tabletest.Open(t, dir, tableOptions())
	if probs, err := tbl.Verify(ctx); err != nil || len(probs) > 0 {
		t.Fatalf("verify %s: %v %v", dir, probs, err)
	}
	snap, err := tbl.Head(ctx)
	if err != nil || snap == nil {
		return map[string]episodeState{}, map[string]int{}
	}
	eps, err := tbl.Episodes(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]episodeState{}
	payloads := map[string]map[string]bool{}
	for _, e := range eps {
		if _, dup := out[e.Episode]; dup {
			t.Fatalf("%s: episode %s twice", dir, e.Episode)
		}
		var vids []string
		for _, cam := range []string{lerobottest.CamTop, lerobottest.CamWrist} {
			ref := e.Videos[cam]
			vids = append(vids, fmt.Sprintf("%s:%s@%d", cam, ref.SHA256[:12], ref.FirstFrame))
			if payloads[cam] == nil {
				payloads[cam] = map[string]bool{}
			}
			payloads[cam][fmt.Sprintf("%s@%d", ref.Pack, ref.Offset)] = true
		}
		rows, err := tbl.Rows(ctx, snap, e)
		if err != nil || int64(len(rows)) != e.Rows {
			t.Fatalf("%s rows: %d, %v", e.Episode, len(rows), err)
		}
		out[e.Episode] = episodeState{rows: e.Rows, videos: strings.Join(vids, " ")}
	}
	counts := map[string]int{}
	for cam, p := range payloads {
		counts[cam] = len(p)
	}
	return out, counts
}

// TestLeRobotImportKilled kills the import command (SIGKILL) at random
// points, four times (each with a rerun: the test's cost is in these, so
// the kill points are drawn afresh on every run rather than many per run):
// each time the table left behind is valid and holds complete episodes
// only, and a rerun completes the import without duplicating an episode
// or storing a video file twice.
func TestLeRobotImportKilled(t *testing.T) {
	d := lerobottest.Build(t, filepath.Join(t.TempDir(), "dataset"), lerobottest.Standard(lerobot.V30))
	work := t.TempDir()
	// A clean import with and without frame sizes, timed: kills land
	// anywhere from checking the dataset to the last commit.
	var full [2]time.Duration
	var want map[string]episodeState
	var wantPayloads map[string]int
	for mode, extra := range [][]string{nil, {"--no-sizes"}} {
		ref := filepath.Join(work, fmt.Sprintf("reference%d", mode))
		start := time.Now()
		runFramefs(t, append([]string{"import", "lerobot", d.Dir, ref, "--batch", "1"}, extra...)...)
		full[mode] = time.Since(start)
		want, wantPayloads = tableState(t, ref)
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	t.Logf("clean imports: %v with frame sizes, %v without; seed %d", full[0], full[1], seed)
	for trial := range 4 {
		dir := filepath.Join(work, fmt.Sprintf("trial%d", trial))
		args := []string{"import", "lerobot", d.Dir, dir, "--batch", "1"}
		if trial%2 == 1 {
			args = append(args, "--no-sizes")
		}
		cmd := framefsCmd(context.Background(), args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := full[trial%2]/5 + time.Duration(rng.Int64N(int64(full[trial%2]*4/5)))
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		finished := err == nil
		var got map[string]episodeState
		if _, statErr := os.Stat(filepath.Join(dir, "table.json")); statErr == nil {
			got, _ = tableState(t, dir)
		}
		for id, st := range got {
			if st != want[id] {
				t.Fatalf("trial %d: after the kill %s is %+v, want %+v", trial, id, st, want[id])
			}
		}
		runFramefs(t, args...)
		after, payloads := tableState(t, dir)
		if fmt.Sprint(after) != fmt.Sprint(want) || fmt.Sprint(payloads) != fmt.Sprint(wantPayloads) {
			t.Fatalf("trial %d: after the rerun\n%v\n%v\nwant\n%v\n%v", trial, after, payloads, want, wantPayloads)
		}
		t.Logf("trial %d: killed after %v (finished before the kill: %v), %d of %d episodes committed; the rerun completed it, %v payloads",
			trial, delay.Round(time.Millisecond), finished, len(got), len(want), payloads)
	}
}

// TestLeRobotOnS3 imports a v3.0 dataset into a table on S3 (versitygw)
// in several commits, and exports it back: the exported videos are the
// source files byte for byte.
func TestLeRobotOnS3(t *testing.T) {
	srv := s3test.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	d := lerobottest.Build(t, filepath.Join(t.TempDir(), "dataset"), lerobottest.Standard(lerobot.V30))
	uri := srv.URI("wh/robots")
	var res lerobot.ImportResult
	out := runFramefs(t, "--s3-cache-dir", "off", "import", "lerobot", d.Dir, uri, "--batch", "4", "--no-sizes", "--json")
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.Imported != 6 || len(res.Snapshots) != 2 {
		t.Fatalf("import result %+v", res)
	}
	exported := filepath.Join(t.TempDir(), "exported")
	runFramefs(t, "--s3-cache-dir", "off", "export", "lerobot", uri, exported)
	for _, cam := range d.Spec.Cameras {
		for i, rel := range d.Videos[cam.Key] {
			got := lerobottest.FileSHA256(t, filepath.Join(exported, "videos", cam.Key, "chunk-000", fmt.Sprintf("file-%03d.mp4", i)))
			if want := lerobottest.FileSHA256(t, filepath.Join(d.Dir, rel)); got != want {
				t.Errorf("%s file %d: exported %s, source %s", cam.Key, i, got, want)
			}
		}
	}
}
