package fusefs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/videoidx"
)

// ingestSizer stores JPEG sizes at ingest the way the command line does.
type ingestSizer struct{ frames *serving.Server }

func (s ingestSizer) setting(img table.ImageOptions) media.ImageSetting {
	setting, _ := media.SettingFor(img.Format, img.JPEGQuality)
	return setting
}

func (s ingestSizer) Identity(img table.ImageOptions) string { return decoder.Identity(s.setting(img)) }

func (s ingestSizer) FrameSizes(ctx context.Context, r io.ReaderAt, size int64, ix *videoidx.Index, img table.ImageOptions) ([]int64, error) {
	v := media.Video{Key: media.VideoKey{Object: fmt.Sprintf("ingest:%p", r), Length: size}, R: r, Size: size, Index: ix}
	return s.frames.FrameSizes(ctx, v, s.setting(img))
}

// TestStoredSizes: sizes stored at ingest are what the mount announces,
// and listing with sizes decodes nothing.
func TestStoredSizes(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	tbl, err := table.Open(ctx, f.tbl.Store(), table.Options{Sizer: ingestSizer{f.frames}, Indexer: tableOptions().Indexer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.AddEpisodes(ctx, []table.EpisodeInput{
		{Videos: map[string]table.VideoFile{"": {Path: video("mpeg4_part2.mp4")}}, Sidecar: sidecar(t, "sized", "pick", 50)},
	}, table.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := f.path("robot", "snapshots", "2", "task=pick", "sized")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := f.srv.m.stats.catalog.SizeComputations.Load()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".jpg") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || int64(len(data)) != info.Size() {
			t.Fatalf("%s: stat %d, read %d (%v)", e.Name(), info.Size(), len(data), err)
		}
	}
	if got := f.srv.m.stats.catalog.SizeComputations.Load() - before; got != 0 {
		t.Errorf("%d size computations for an episode with stored sizes", got)
	}
}

// TestConcurrentReaders runs 16 readers of random frames (FRAMEFS_SOAK
// sets the duration; 5 s by default): no error, every read equal to a
// reference, no file descriptor left open.
func TestConcurrentReaders(t *testing.T) {
	duration := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("FRAMEFS_SOAK")); err == nil {
		duration = d
	}
	f := newFixture(t, Options{})
	fdsBefore := openFDs(t)
	var paths []string
	for _, ep := range []string{filepath.Join("task=pick", "ep1"), filepath.Join("task=place", "ep2")} {
		dir := f.path("robot", "snapshots", "1", ep)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".jpg") {
				paths = append(paths, filepath.Join(dir, e.Name()))
			}
		}
	}
	want := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want[p] = data
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	reads := 0
	deadline := time.Now().Add(duration)
	for r := 0; r < 16; r++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			n := 0
			for time.Now().Before(deadline) {
				p := paths[rng.IntN(len(paths))]
				data, err := os.ReadFile(p)
				if err != nil || !bytes.Equal(data, want[p]) {
					t.Errorf("%s: %d bytes, %v", p, len(data), err)
					return
				}
				n++
			}
			mu.Lock()
			reads += n
			mu.Unlock()
		}(uint64(r))
	}
	wg.Wait()
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") || strings.HasPrefix(line, "VmRSS:") {
			t.Log(strings.Join(strings.Fields(line), " "))
		}
	}
	t.Logf("%d reads by 16 readers in %v (image cache limit 16 MiB)", reads, duration)
	runtime.GC()
	if after := openFDs(t); after > fdsBefore+8 {
		t.Errorf("file descriptors: %d before, %d after", fdsBefore, after)
	}
}

func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
