package fusefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/internal/mounttest"
	"github.com/framefs/framefs/internal/tabletest"
	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
)

const (
	followCacheBytes = 8 << 20
	followCommit     = 2 * time.Second
	followRows       = 30
	followVideo      = "h264_faststart.mp4" // 90 frames
)

// TestSoakFollower puts a read-only `framefs mount` (FRAMEFS_BIN, 8 MiB
// image and picture caches) in front of a table that takes a one-episode
// commit every 2 seconds, for FRAMEFS_SOAK_FOLLOW (make soak-follow: 10
// minutes), while a reader lists every episode folder of latest and reads
// one frame of each (the same one each time), as a job following a growing
// dataset does.
// It checks every frame read, and the daemon's memory against its bound
// and the follower rule (soak_memory_test.go), which it prints every
// minute. Skipped unless FRAMEFS_SOAK_FOLLOW is set.
func TestSoakFollower(t *testing.T) {
	duration, bin := soakSetup(t, "FRAMEFS_SOAK_FOLLOW", "soak-follow")
	ctx := context.Background()
	wh, mnt := t.TempDir(), filepath.Join(t.TempDir(), "mnt")
	os.MkdirAll(mnt, 0o755)

	// The writer stores frame sizes at ingest, as the command line does.
	frames := serving.New(decoder.Codec{}, serving.Options{})
	t.Cleanup(func() { frames.Close() })
	robotTable(t, wh)
	opts := tabletest.Options()
	opts.Sizer = ingestSizer{frames}
	tbl := tabletest.Open(t, filepath.Join(wh, "robot"), opts)
	schema, err := tbl.LatestSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	setting, err := media.SettingFor(schema.Image.Format, schema.Image.JPEGQuality)
	if err != nil {
		t.Fatal(err)
	}
	refs := decodeAll(t, video(followVideo), countFrames(t, video(followVideo)), setting)

	logf, err := os.Create(filepath.Join(t.TempDir(), "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command(bin, "mount", wh, mnt, "-o", "ro", "--refresh", "1s", "--spill-dir", filepath.Join(t.TempDir(), "spill"),
		"--cache-bytes", strconv.Itoa(followCacheBytes), "--picture-cache-bytes", strconv.Itoa(followCacheBytes))
	daemon.Stdout, daemon.Stderr = logf, logf
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mounttest.StopDaemon(daemon, mnt, 20*time.Second); logf.Close() })
	latest := filepath.Join(mnt, "robot", "latest")
	waitFor(t, func() bool { _, err := os.Stat(latest); return err == nil }, "the mount")

	var (
		mu sync.Mutex
		// frame is, by episode, the video frame of its first row and the
		// row the reader reads.
		frame    = map[string][2]int{}
		failures []string
		commits  atomic.Int64
		reads    atomic.Int64
		missing  atomic.Int64
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	watch := newMemoryWatch(t, "follower", daemon.Process.Pid, mnt, 2*followCacheBytes, tbl)
	stopWatch, watched := make(chan struct{}), make(chan struct{})
	go func() { watch.run(stopWatch); close(watched) }()

	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the commits
		defer wg.Done()
		rng := rand.New(rand.NewPCG(7, 7))
		for n := 0; time.Now().Before(deadline); n++ {
			name, task, from := fmt.Sprintf("f-%05d", n), []string{"pick", "place"}[n%2], rng.IntN(len(refs)-followRows)
			_, err := tbl.AddEpisodes(ctx, []table.EpisodeInput{{
				Videos:  map[string]table.VideoFile{"": {Path: video(followVideo), FirstFrame: int64(from)}},
				Sidecar: sidecar(t, name, task, followRows),
			}}, table.AddOptions{})
			if err != nil {
				fail("commit %s: %v", name, err)
				return
			}
			mu.Lock()
			frame[name] = [2]int{from, rng.IntN(followRows)}
			mu.Unlock()
			commits.Add(1)
			time.Sleep(followCommit)
		}
	}()
	go func() { // the reader
		defer wg.Done()
		for time.Now().Before(deadline) {
			for _, task := range []string{"pick", "place"} {
				eps, err := os.ReadDir(filepath.Join(latest, "task="+task))
				if err != nil {
					fail("list task=%s: %v", task, err)
					continue
				}
				for _, e := range eps {
					mu.Lock()
					f, ours := frame[e.Name()]
					mu.Unlock()
					if !ours {
						continue // ep1, ep2
					}
					dir := filepath.Join(latest, "task="+task, e.Name())
					names, err := os.ReadDir(dir)
					if err != nil || len(names) != followRows+3 {
						fail("list %s: %d entries, %v", dir, len(names), err)
						continue
					}
					from, i := f[0], f[1]
					got, err := os.ReadFile(filepath.Join(dir, mounttree.FrameName(int64(i), followRows, "jpg")))
					switch {
					case err == nil && bytes.Equal(got, refs[from+i]):
						reads.Add(1)
					case errors.Is(err, syscall.ENOENT):
						missing.Add(1) // latest moved on between listing and reading
					default:
						fail("%s frame %d: %d bytes, %v", dir, i, len(got), err)
					}
				}
			}
		}
	}()
	wg.Wait()
	close(stopWatch)
	<-watched

	t.Logf("follower: %d commits, %d frames read right, 0 wrong, %d ENOENT", commits.Load(), reads.Load(), missing.Load())
	if daemon.ProcessState != nil {
		t.Errorf("the daemon exited: %v", daemon.ProcessState)
	}
	if reads.Load() == 0 || commits.Load() == 0 {
		t.Error("nothing was committed or read")
	}
	for _, f := range failures {
		t.Error(f)
	}
	watch.check(duration, false, true)
}

// soakSetup returns how long a soak runs (the duration in env, else the
// test skips) and the framefs binary it runs (FRAMEFS_BIN); soaks run
// side by side, as make test's short runs do.
func soakSetup(t *testing.T, env, target string) (time.Duration, string) {
	duration, err := time.ParseDuration(os.Getenv(env))
	if err != nil {
		t.Skipf("set %s=DURATION and FRAMEFS_BIN=bin/framefs (make %s)", env, target)
	}
	bin, err := filepath.Abs(os.Getenv("FRAMEFS_BIN"))
	if err != nil || os.Getenv("FRAMEFS_BIN") == "" {
		t.Fatal("FRAMEFS_BIN must name the framefs binary")
	}
	testenv.RequireFUSE(t)
	t.Parallel()
	return duration, bin
}
