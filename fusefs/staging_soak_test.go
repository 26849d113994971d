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
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/mounttest"
	"github.com/framefs/framefs/internal/procstatus"
	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/internal/tabletest"
	"github.com/framefs/framefs/internal/treetest"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/mounttree"
	"github.com/framefs/framefs/table"
)

// TestSoakWriteDirectories puts a real `framefs mount` (FRAMEFS_BIN) under
// the mix its write directories meet, for FRAMEFS_SOAK_WRITE (make
// soak-write: 10 minutes): pairs dragged in with cp, videos written by
// several processes with pauses longer than the settle time, writers
// killed and their files removed before they commit, episodes deleted,
// snapshots expired and files collected with the command line, and 8
// readers of frames. It ends with `framefs verify` clean, every episode
// dropped in committed exactly as written, no error file for a file that
// was written completely, no wrong byte read, and the daemon's anonymous
// memory within its bound and not growing with time (soak_memory_test.go;
// printed every minute). Skipped unless FRAMEFS_SOAK_WRITE is set.
//
// With FRAMEFS_SOAK_STORE=s3 (make soak-write SOAK_STORE=s3) the table is
// in an S3 warehouse on a local versitygw, and a second, read-only mount
// of it (another node) serves half of the readers: frames read there
// while the first node commits, deletes, expires and collects. The second
// node reaches S3 through a proxy that fails, drops and truncates a few
// percent of its requests (soakFaults): its reads must still all be
// right, since the store retries.
func TestSoakWriteDirectories(t *testing.T) {
	duration, bin := soakSetup(t, "FRAMEFS_SOAK_WRITE", "soak-write")
	s := newSoak(t, bin)
	s.run(duration)
	s.check()
}

const (
	soakCacheBytes   = 64 << 20
	soakPictureBytes = 64 << 20
	soakSettle       = time.Second
	soakPause        = 1500 * time.Millisecond // > soakSettle
	soakReaders      = 8
)

// soakFaults are what the second node's S3 requests meet: about 8% of
// them fail one way or another, and the store tries each up to 8 times
// (storage.S3Options.MaxAttempts).
var soakFaults = s3test.Faults{Error: 0.03, DropBefore: 0.01, DropAfter: 0.01, Truncate: 0.03, MaxDelay: 10 * time.Millisecond}

// soakVideos are what gets dropped; an episode's name ends in its index.
var soakVideos = []string{"h264_faststart.mp4", "h264_vfr.mp4", "h264_gop250.mp4", "h264_bframes_gop30.mp4", "mpeg4_part2.mp4", "hevc.mp4", "h264_negative_cts.mp4"}

// soakRows is the number of rows dropped with video k (at most 60).
func soakRows(frames int) int { return min(frames, 60) }

type soak struct {
	t               *testing.T
	bin, wh, tblDir string // wh and tblDir: directories, or s3:// URIs
	// node is the mount whose write directories the soak drives; in is
	// its ingest/.
	node
	in string
	// env reaches the S3 server for every framefs process (nil locally);
	// openTable opens the table afresh, as another process would.
	env       []string
	openTable func() *table.Table
	// other is the second node's read-only mount, which reaches S3
	// through proxy (S3 only).
	other      *node
	proxy      *s3test.FaultProxy
	otherReads atomic.Int64
	refs       [][][]byte // video index -> frame -> image
	// duration is how long run was asked to run.
	duration time.Duration
	src      string // sidecars to drag in

	mu        sync.Mutex
	expected  map[string]int // episode dropped -> video index
	deleted   map[string]bool
	abandoned map[string]bool
	problems  map[string]string // error files seen -> text
	failures  []string

	drops, multi, abandons, deletes, expires, gcs, gcRemoved atomic.Int64
	reads, readENOENT                                        atomic.Int64
	rssPeak                                                  atomic.Int64
	rssPeakAnon, rssPeakFile                                 int64 // the parts of the peak sample; watch alone writes them
}

// node is a `framefs mount` of the soak's warehouse and what watches it.
type node struct {
	mnt    string
	daemon *exec.Cmd
	log    string // the daemon's log
	memory *memoryWatch
}

func newSoak(t *testing.T, bin string) *soak {
	s := &soak{t: t, bin: bin, src: t.TempDir(),
		expected: map[string]int{}, deleted: map[string]bool{}, abandoned: map[string]bool{}, problems: map[string]string{}}
	var tbl *table.Table
	switch store := os.Getenv("FRAMEFS_SOAK_STORE"); store {
	case "", "local":
		s.wh = t.TempDir()
		s.tblDir = filepath.Join(s.wh, "robot")
		tbl = robotTable(t, s.wh)
		s.openTable = func() *table.Table { return tabletest.Open(t, s.tblDir, tabletest.Options()) }
	case "s3":
		gw := s3test.Start(t)
		s.wh, s.tblDir = gw.URI("warehouse"), gw.URI("warehouse/robot")
		// The command line's default block cache goes under the test's
		// own directory.
		s.env = append(gw.Env(), "XDG_CACHE_HOME="+t.TempDir())
		tbl = s3RobotTable(t, gw.Open(t, "warehouse", nil))
		s.proxy = s3test.StartFaultProxy(t, gw.Endpoint, soakFaults, 1)
		s.openTable = func() *table.Table {
			tbl, err := table.Open(context.Background(), gw.Open(t, "warehouse/robot", nil), tabletest.Options())
			if err != nil {
				t.Fatal(err)
			}
			return tbl
		}
	default:
		t.Fatalf("FRAMEFS_SOAK_STORE=%q: want local or s3", store)
	}
	schema, err := tbl.LatestSchema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	setting, err := media.SettingFor(schema.Image.Format, schema.Image.JPEGQuality)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range soakVideos {
		n := countFrames(t, video(v))
		s.refs = append(s.refs, decodeAll(t, video(v), n, setting))
	}
	// FRAMEFS_SOAK_LOG keeps the daemon's log (with GODEBUG=gctrace=1,
	// say) for a look afterwards.
	s.node = *s.mount("soak-write", os.Getenv("FRAMEFS_SOAK_LOG"), nil,
		"--staging-dir", filepath.Join(t.TempDir(), "staging"), "--settle", soakSettle.String())
	s.in = filepath.Join(s.mnt, "robot", "ingest")
	waitFor(t, func() bool { _, err := os.ReadFile(filepath.Join(s.in, ".status")); return err == nil }, "the write directories")
	if s.env != nil {
		// Heap profiles (FRAMEFS_HEAPPROFILE) of the second mount go
		// beside the first's.
		var env []string
		if p := os.Getenv("FRAMEFS_HEAPPROFILE"); p != "" {
			env = []string{"FRAMEFS_HEAPPROFILE=" + p + ".second"}
		}
		s.other = s.mount("soak-write's second mount", "", env, "-o", "ro", "--s3-endpoint", s.proxy.Endpoint)
	}
	return s
}

// mount starts `framefs mount` of the warehouse with the soak's caches
// (and, on S3, a block cache of its own, as another machine has), with
// env added to its environment, logging to log (a new file if ""), and
// returns it once its table's folder is there, watched under name. It is
// stopped when the test ends.
func (s *soak) mount(name, log string, env []string, args ...string) *node {
	t := s.t
	n := &node{mnt: filepath.Join(t.TempDir(), "mnt"), log: log}
	if n.log == "" {
		n.log = filepath.Join(t.TempDir(), "daemon.log")
	}
	os.MkdirAll(n.mnt, 0o755)
	logf, err := os.Create(n.log)
	if err != nil {
		t.Fatal(err)
	}
	args = append([]string{"mount", s.wh, n.mnt, "--spill-dir", filepath.Join(t.TempDir(), "spill"), "--refresh", "1s",
		"--cache-bytes", strconv.Itoa(soakCacheBytes), "--picture-cache-bytes", strconv.Itoa(soakPictureBytes)}, args...)
	if s.env != nil {
		args = append(args, "--s3-cache-dir", filepath.Join(t.TempDir(), "blocks"))
	}
	n.daemon = exec.Command(s.bin, args...)
	n.daemon.Env = append(append(os.Environ(), s.env...), env...)
	n.daemon.Stdout, n.daemon.Stderr = logf, logf
	if err := n.daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mounttest.StopDaemon(n.daemon, n.mnt, 20*time.Second); logf.Close() })
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(n.mnt, "robot", "latest")); return err == nil }, name)
	n.memory = newMemoryWatch(t, name, n.daemon.Process.Pid, n.mnt, soakCacheBytes+soakPictureBytes, s.openTable())
	return n
}

// waitExists waits (a while) until path exists.
func waitExists(path string) {
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countFrames is the number of frames FFmpeg decodes from a video.
func countFrames(t *testing.T, path string) int {
	out, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("ffprobe %s: %q", path, out)
	}
	return n
}

func (s *soak) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) < 50 {
		s.failures = append(s.failures, fmt.Sprintf(format, args...))
	}
}

// framefs runs the command line against the table.
func (s *soak) framefs(args ...string) (string, error) {
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(os.Environ(), s.env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sidecar writes the rows for video k under dir and returns the path.
func (s *soak) sidecar(dir, name string, k int) string {
	path := filepath.Join(dir, name+".jsonl")
	if err := os.WriteFile(path, []byte(rowsFor("pick", soakRows(len(s.refs[k])))), 0o644); err != nil {
		s.fail("sidecar %s: %v", name, err)
	}
	return path
}

func (s *soak) expect(name string, k int) {
	s.mu.Lock()
	s.expected[name] = k
	s.mu.Unlock()
}

// every runs f every interval until deadline, with its own sequence
// number and random source.
func every(wg *sync.WaitGroup, deadline time.Time, interval time.Duration, seed uint64, f func(n int, rng *rand.Rand)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 3))
		for n := 0; time.Now().Before(deadline); n++ {
			f(n, rng)
			time.Sleep(interval/2 + time.Duration(rng.Int64N(int64(interval))))
		}
	}()
}

func (s *soak) run(duration time.Duration) {
	s.duration = duration
	deadline := time.Now().Add(duration)
	var wg, writers sync.WaitGroup
	stopWatch := make(chan struct{})
	var watches sync.WaitGroup
	watches.Go(func() { s.watch(stopWatch) })
	watches.Go(func() { s.memory.run(stopWatch) })
	if s.other != nil {
		watches.Go(func() { s.other.memory.run(stopWatch) })
	}

	// Drag-ins: a pair copied with one cp, as a file manager does.
	every(&wg, deadline, 700*time.Millisecond, 1, func(n int, rng *rand.Rand) {
		k := rng.IntN(len(soakVideos))
		name := fmt.Sprintf("drag-%05d-%d", n, k)
		mp4 := filepath.Join(s.src, name+".mp4")
		if err := os.Link(video(soakVideos[k]), mp4); err != nil {
			data, _ := os.ReadFile(video(soakVideos[k]))
			os.WriteFile(mp4, data, 0o644)
		}
		side := s.sidecar(s.src, name, k)
		if out, err := exec.Command("cp", mp4, side, s.in+"/").CombinedOutput(); err != nil {
			s.fail("cp %s: %v %s", name, err, out)
			return
		}
		os.Remove(mp4)
		os.Remove(side)
		s.expect(name, k)
		s.drops.Add(1)
	})

	// Multi-process writers, each pausing longer than the settle time.
	shapes := []string{
		`( head -c 8000 "$SRC"; sleep $PAUSE; tail -c +8001 "$SRC" ) > "$DST"`,
		`( head -c 8000 "$SRC"; sleep $PAUSE; tail -c +8001 "$SRC" ) | tee "$DST" > /dev/null`,
		`exec 3> "$DST"; cat "$SRC" >&3; sleep $PAUSE; exec 3>&-`,
	}
	every(&wg, deadline, time.Second, 2, func(n int, rng *rand.Rand) {
		k := rng.IntN(len(soakVideos))
		name := fmt.Sprintf("mp-%05d-%d", n, k)
		dst := filepath.Join(s.in, name+".mp4")
		cmd := exec.Command("bash", "-c", shapes[n%len(shapes)])
		cmd.Env = append(os.Environ(), "SRC="+video(soakVideos[k]), "DST="+dst, "PAUSE="+fmt.Sprint(soakPause.Seconds()))
		if err := cmd.Start(); err != nil {
			s.fail("writer %s: %v", name, err)
			return
		}
		s.expect(name, k)
		s.multi.Add(1)
		writers.Add(1)
		go func() {
			defer writers.Done()
			// The sidecar once the video is open: a lone sidecar would
			// rightly get an error.
			waitExists(dst)
			s.sidecar(s.in, name, k)
			if err := cmd.Wait(); err != nil {
				s.fail("writer %s: %v", name, err)
			}
		}()
	})

	// Writers killed mid-way, their files removed before they settle.
	every(&wg, deadline, 8*time.Second, 3, func(n int, rng *rand.Rand) {
		k := rng.IntN(len(soakVideos))
		name := fmt.Sprintf("gone-%05d-%d", n, k)
		dst := filepath.Join(s.in, name+".mp4")
		cmd := exec.Command("bash", "-c", `( head -c 8000 "$SRC"; sleep 30; tail -c +8001 "$SRC" ) > "$DST"`)
		cmd.Env = append(os.Environ(), "SRC="+video(soakVideos[k]), "DST="+dst)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			s.fail("writer %s: %v", name, err)
			return
		}
		s.mu.Lock()
		s.abandoned[name] = true
		s.mu.Unlock()
		waitExists(dst)
		s.sidecar(s.in, name, k)
		time.Sleep(time.Second)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		// The sidecar first: a lone video just closed is not settled.
		for _, f := range []string{name + ".jsonl", name + ".mp4"} {
			if err := os.Remove(filepath.Join(s.in, f)); err != nil {
				s.fail("rm %s: %v", f, err)
			}
		}
		s.abandons.Add(1)
	})

	// Episodes deleted, snapshots expired, files collected.
	every(&wg, deadline, 5*time.Second, 4, func(n int, rng *rand.Rand) {
		s.mu.Lock()
		var names []string
		for name := range s.expected {
			if !s.deleted[name] {
				names = append(names, name)
			}
		}
		s.mu.Unlock()
		sort.Strings(names)
		for _, name := range names[:max(0, len(names)-20)] { // committed by now
			if out, err := s.framefs("delete", s.tblDir, "--episode", name); err != nil {
				if strings.Contains(out, "not found") {
					continue // not committed yet
				}
				s.fail("framefs delete %s: %v %s", name, err, out)
				return
			}
			s.mu.Lock()
			s.deleted[name] = true
			s.mu.Unlock()
			s.deletes.Add(1)
			return
		}
	})
	every(&wg, deadline, 15*time.Second, 5, func(int, *rand.Rand) {
		if out, err := s.framefs("expire", s.tblDir, "--keep-last", "3"); err != nil {
			s.fail("framefs expire: %v %s", err, out)
		}
		s.expires.Add(1)
	})
	every(&wg, deadline, 30*time.Second, 6, func(int, *rand.Rand) {
		out, err := s.framefs("gc", s.tblDir, "--grace", "30s")
		if err != nil {
			s.fail("framefs gc: %v %s", err, out)
			return
		}
		var removed int64
		fmt.Sscanf(out, "removed %d files", &removed)
		s.gcRemoved.Add(removed)
		s.gcs.Add(1)
	})

	for r := 0; r < soakReaders; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 11))
			mnt := s.mnt
			if s.other != nil && r%2 == 1 {
				mnt = s.other.mnt
			}
			for time.Now().Before(deadline) {
				s.readOne(rng, mnt, r < 2)
			}
		}(r)
	}

	wg.Wait()
	writers.Wait()
	// Everything dropped commits: ingest/ empties.
	end := time.Now().Add(3 * time.Minute)
	for {
		entries, _ := os.ReadDir(s.in)
		if len(entries) == 1 {
			break
		}
		if time.Now().After(end) {
			status, _ := os.ReadFile(filepath.Join(s.in, ".status"))
			s.fail("ingest/ did not empty:\n%s", status)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stopWatch)
	watches.Wait()
}

// readOne reads a random frame of a random episode through the mount at
// mnt, from latest or (old) from any live snapshot, and checks it against
// the decoder's.
func (s *soak) readOne(rng *rand.Rand, mnt string, old bool) {
	base := filepath.Join(mnt, "robot", "latest")
	if old {
		snaps, err := os.ReadDir(filepath.Join(mnt, "robot", "snapshots"))
		if err != nil || len(snaps) == 0 {
			return
		}
		base = filepath.Join(mnt, "robot", "snapshots", snaps[rng.IntN(len(snaps))].Name())
	}
	eps, err := os.ReadDir(filepath.Join(base, "task=pick"))
	if err != nil || len(eps) == 0 {
		return // expired meanwhile
	}
	name := eps[rng.IntN(len(eps))].Name()
	var frames [][]byte
	var rows int
	switch {
	case name == "ep1":
		frames, rows = s.refs[3], 40 // h264_bframes_gop30.mp4
	default:
		k, err := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
		if err != nil || k >= len(s.refs) {
			s.fail("unexpected episode %q", name)
			return
		}
		frames, rows = s.refs[k], soakRows(len(s.refs[k]))
	}
	i := rng.IntN(rows)
	got, err := os.ReadFile(filepath.Join(base, "task=pick", name, mounttree.FrameName(int64(i), int64(rows), "jpg")))
	switch {
	case err == nil && bytes.Equal(got, frames[i]):
		s.reads.Add(1)
		if mnt != s.mnt {
			s.otherReads.Add(1)
		}
	case err == nil:
		s.fail("%s frame %d of %s: wrong bytes (%d, want %d)", name, i, base, len(got), len(frames[i]))
	case errors.Is(err, syscall.ENOENT):
		s.readENOENT.Add(1) // deleted or expired since listed
	default:
		// EIO included: a frame of an episode gone since it was listed is
		// ENOENT, and nothing else the soak does breaks a frame.
		s.fail("%s frame %d of %s: %v", name, i, base, err)
	}
}

// watch records every error file that appears in ingest/ and the
// daemon's RSS.
func (s *soak) watch(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(250 * time.Millisecond):
		}
		for _, name := range errorFiles(s.in) {
			text, _ := os.ReadFile(filepath.Join(s.in, name))
			s.mu.Lock()
			if _, seen := s.problems[name]; !seen {
				s.problems[name] = string(text)
			}
			s.mu.Unlock()
		}
		pid := s.daemon.Process.Pid
		if rss := procStatusBytes(pid, "VmRSS"); rss > s.rssPeak.Load() {
			s.rssPeak.Store(rss)
			// Anonymous memory is the heaps (Go's and FFmpeg's); the
			// rest is code and libraries mapped from files.
			s.rssPeakAnon, s.rssPeakFile = procStatusBytes(pid, "RssAnon"), procStatusBytes(pid, "RssFile")
		}
	}
}

// logErrors returns the ERROR lines of the daemon log at path, each
// after prefix.
func logErrors(path, prefix string) []string {
	data, _ := os.ReadFile(path)
	var lines []string
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, " ERROR ") {
			lines = append(lines, prefix+strings.TrimSpace(line))
		}
	}
	return lines
}

// procStatusBytes reads a memory field of /proc/PID/status: 0 once the
// daemon is gone.
func procStatusBytes(pid int, field string) int64 {
	n, _ := procstatus.Bytes(pid, field)
	return n
}

func (s *soak) check() {
	t := s.t
	hwm := procStatusBytes(s.daemon.Process.Pid, "VmHWM")
	commits := stagingStat(t, s.mnt, "ingest_commits_total", "ingest")
	episodes := stagingStat(t, s.mnt, "ingest_episodes_total", "ingest")
	failures := stagingStat(t, s.mnt, "ingest_failures_total", "ingest")

	// Every dropped episode not deleted is in the head, as written.
	head, eps := treetest.HeadEpisodes(t, s.openTable())
	inHead := map[string]bool{}
	for _, e := range eps {
		inHead[e.Episode] = true
		k, ok := s.expected[e.Episode]
		if !ok {
			if e.Episode != "ep1" && e.Episode != "ep2" {
				s.fail("episode %s in the table was never dropped in", e.Episode)
			}
			continue
		}
		if e.Videos["video"].SHA256 != sha(t, video(soakVideos[k])) || e.Rows != int64(soakRows(len(s.refs[k]))) {
			s.fail("episode %s: stored video or rows differ from what was dropped", e.Episode)
		}
	}
	for name := range s.expected {
		if !s.deleted[name] && !inHead[name] {
			s.fail("episode %s was dropped in but is not in the table", name)
		}
	}
	for name := range s.abandoned {
		if inHead[name] {
			s.fail("episode %s was committed from a killed writer's removed files", name)
		}
	}
	// verify prints its problems, or ok, on stdout, and what it checked
	// on stderr.
	var stderr strings.Builder
	verify := exec.Command(s.bin, "verify", s.tblDir)
	verify.Env = append(os.Environ(), s.env...)
	verify.Stderr = &stderr
	stdout, err := verify.Output()
	out := strings.TrimSpace(string(stdout))
	if err != nil || out != "ok" {
		s.fail("framefs verify: %v\n%s%s", err, stdout, stderr.String())
	}
	if s.daemon.ProcessState != nil {
		s.fail("the daemon exited: %v", s.daemon.ProcessState)
	}
	errorLines := logErrors(s.log, "")
	if s.other != nil {
		if s.other.daemon.ProcessState != nil {
			s.fail("the second mount's daemon exited: %v", s.other.daemon.ProcessState)
		}
		errorLines = append(errorLines, logErrors(s.other.log, "second mount: ")...)
	}
	for name, text := range s.problems {
		s.fail("%s appeared for a file written completely: %s", name, text)
	}

	t.Logf("soak: %d drag-ins, %d multi-process writers, %d killed writers removed, %d episode deletes, %d expires, %d gc runs (%d files removed)",
		s.drops.Load(), s.multi.Load(), s.abandons.Load(), s.deletes.Load(), s.expires.Load(), s.gcs.Load(), s.gcRemoved.Load())
	t.Logf("soak: the mount committed %d snapshots with %d episodes; %d ingest failures; %d error files seen", commits, episodes, failures, len(s.problems))
	t.Logf("soak: %d readers read %d frames right, 0 wrong; %d ENOENT (deleted or expired since listed)", soakReaders, s.reads.Load(), s.readENOENT.Load())
	if s.other != nil {
		t.Logf("soak: on S3; %d of those frames were read through the second, read-only mount; its %d S3 requests met %d errors, %d dropped connections, %d truncated bodies",
			s.otherReads.Load(), s.proxy.Requests.Load(), s.proxy.Errors.Load(), s.proxy.Drops.Load(), s.proxy.Truncations.Load())
	}
	t.Logf("soak: %d episodes in the head, %d snapshots; framefs verify: %s (%s)", len(eps), head.ID, out, strings.TrimSpace(stderr.String()))
	t.Logf("soak: daemon RSS peak %.1f MiB (anonymous %.1f MiB, mapped from files %.1f MiB; VmHWM %.1f MiB); %d ERROR log lines",
		float64(s.rssPeak.Load())/(1<<20), float64(s.rssPeakAnon)/(1<<20), float64(s.rssPeakFile)/(1<<20), float64(hwm)/(1<<20), len(errorLines))
	for _, line := range errorLines[:min(len(errorLines), 10)] {
		t.Logf("soak: daemon log: %s", line)
	}
	s.memory.check(s.duration, true, false)
	if s.other != nil {
		// The second mount is held to the bound alone. It grows with
		// the head (130 episodes a minute) and stays well under the
		// bound: its picture and metadata caches fill all run long, and
		// it keeps a node for each of the ever more distinct frames its
		// readers open until the kernel forgets it (docs/CACHES.md).
		// The first mount's memory stops growing because its image
		// cache gives way under the bound, which the second's need not.
		s.other.memory.check(s.duration, false, false)
	}
	if s.reads.Load() == 0 || commits == 0 {
		s.fail("nothing was read or committed")
	}
	if failures > 0 {
		s.fail("%d ingest failures", failures)
	}
	for _, f := range s.failures {
		t.Error(f)
	}
}
