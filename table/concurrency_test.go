package table

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/table/storage"
)

// The test binary doubles as a writer process: with FRAMEFS_TEST_WRITER set
// it ingests episodes into a table and exits, so tests can run several
// writers as separate processes and kill them.
func TestMain(m *testing.M) {
	if spec := os.Getenv("FRAMEFS_TEST_WRITER"); spec != "" {
		os.Exit(runWriter(spec))
	}
	if spec := os.Getenv("FRAMEFS_TEST_VIEWS"); spec != "" {
		os.Exit(runViewWorker(spec))
	}
	os.Exit(m.Run())
}

// runWriter ingests COUNT one-episode commits named PREFIX-N into the
// table at URI (a directory or s3:// URI); spec is "URI|PREFIX|COUNT".
func runWriter(spec string) int {
	parts := strings.Split(spec, "|")
	count, _ := strconv.Atoi(parts[2])
	ctx := context.Background()
	tbl, err := openTestTable(parts[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; i < count; i++ {
		ep := fmt.Sprintf("%s-%03d", parts[1], i)
		in := EpisodeInput{Episode: ep, Videos: map[string]VideoFile{"": {Path: fixture(mp4Fixtures[i%len(mp4Fixtures)])}}}
		if _, err := tbl.AddEpisodes(ctx, []EpisodeInput{in}, AddOptions{}); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", ep, err)
			return 1
		}
	}
	return 0
}

// openTestTable opens the table at uri as a writer process does.
func openTestTable(uri string) (*Table, error) {
	store, err := openTestStore(uri)
	if err != nil {
		return nil, err
	}
	return Open(context.Background(), store, Options{})
}

func nullableTable(t *testing.T, uri string) *Table {
	t.Helper()
	tbl, err := Create(context.Background(), mustStore(t, uri), Schema{Columns: []Column{{Name: "note", Type: "string", Nullable: true}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func startWriter(t *testing.T, uri, prefix string, count int, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("FRAMEFS_TEST_WRITER=%s|%s|%d", uri, prefix, count))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestConcurrentWriters runs writer processes against one table (locally
// four of 12 commits each; on S3 eight of 3, each with its own block cache
// directory, as separate machines would): every episode lands once and
// snapshot ids are contiguous.
func TestConcurrentWriters(t *testing.T) {
	forEachStore(t, func(t *testing.T, k storeKind) {
		writers, commits := 4, 12
		if k.name == "s3" {
			writers, commits = 8, 3
		}
		concurrentWriters(t, k.newURI(t), writers, commits)
	})
}

func concurrentWriters(t *testing.T, uri string, writers, commits int) {
	ctx := context.Background()
	tbl := nullableTable(t, uri)
	var cmds []*exec.Cmd
	for w := 0; w < writers; w++ {
		cmds = append(cmds, startWriter(t, uri, fmt.Sprintf("w%d", w), commits, "FRAMEFS_TEST_CACHE="+t.TempDir()))
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	ids, err := tbl.SnapshotIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := writers * commits
	if len(ids) != total || ids[0] != 1 || ids[total-1] != int64(total) {
		t.Fatalf("snapshot ids %v", ids)
	}
	head, _ := tbl.Head(ctx)
	eps, err := tbl.Episodes(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range eps {
		if seen[e.Episode] {
			t.Fatalf("episode %s twice", e.Episode)
		}
		seen[e.Episode] = true
	}
	if len(eps) != total || head.Episodes != int64(total) {
		t.Fatalf("%d episodes (snapshot says %d)", len(eps), head.Episodes)
	}
	if problems, err := tbl.Verify(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
}

// faultyStore fails every storage operation after a budget is used up,
// standing in for a writer that dies at that point.
type faultyStore struct {
	storage.Store
	budget atomic.Int64
}

var errInjected = errors.New("injected fault")

func (f *faultyStore) spend() error {
	if f.budget.Add(-1) < 0 {
		return errInjected
	}
	return nil
}

func (f *faultyStore) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if err := f.spend(); err != nil {
		return 0, err
	}
	return f.Store.Put(ctx, key, r)
}

func (f *faultyStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := f.spend(); err != nil {
		return err
	}
	return f.Store.PutIfAbsent(ctx, key, data)
}

func (f *faultyStore) ReadAll(ctx context.Context, key string) ([]byte, error) {
	if err := f.spend(); err != nil {
		return nil, err
	}
	return f.Store.ReadAll(ctx, key)
}

func (f *faultyStore) List(ctx context.Context, prefix string) ([]storage.ObjectInfo, error) {
	if err := f.spend(); err != nil {
		return nil, err
	}
	return f.Store.List(ctx, prefix)
}

// checkHealthy opens the table fresh and checks that it is at a valid
// head, verifies, and that gc leaves only live files.
func checkHealthy(t *testing.T, uri string, wantEpisodes map[string]bool) {
	t.Helper()
	ctx := context.Background()
	store := mustStore(t, uri)
	tbl, err := Open(ctx, store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := tbl.Verify(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	head, err := tbl.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if head != nil {
		eps, err := tbl.Episodes(ctx, head)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range eps {
			if _, err := tbl.Rows(ctx, head, e); err != nil {
				t.Fatal(err)
			}
			delete(wantEpisodes, e.Episode)
		}
	}
	for ep := range wantEpisodes {
		t.Fatalf("committed episode %s is missing", ep)
	}
	if _, err := tbl.GC(ctx, GCOptions{Grace: -time.Hour}); err != nil {
		t.Fatal(err)
	}
	live, err := tbl.liveObjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{prefixData, prefixVideo, prefixManifest} {
		objs, _ := store.List(ctx, prefix)
		for _, o := range objs {
			if !live[o.Key] {
				t.Fatalf("gc left %s behind", o.Key)
			}
		}
	}
	if temps, _ := store.(storage.Temporaries).ListTemporaries(context.Background()); len(temps) > 0 {
		t.Fatalf("gc left temporaries %v", temps)
	}
	if problems, err := tbl.Verify(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("verify after gc: %v %v", problems, err)
	}
}

// TestCrashInjected aborts commits after K storage operations, for K up
// to the cost of a whole commit: the table always opens at a valid head
// and gc removes the leftovers.
//
// Each trial costs a verify and a gc, so every second K is tried locally
// and every fourth on S3, from a first K drawn on each run: over runs,
// every K is.
func TestCrashInjected(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		step := 2
		if kind.name == "s3" {
			step = 4
		}
		first := rand.IntN(step)
		t.Logf("K from %d in steps of %d", first, step)
		crashInjected(t, kind.newURI(t), first, step)
	})
}

func crashInjected(t *testing.T, dir string, first, step int) {
	ctx := context.Background()
	nullableTable(t, dir)
	committed := map[string]bool{}
	for k := first; k < 40; k += step {
		fs := &faultyStore{Store: mustStore(t, dir)}
		fs.budget.Store(1 << 40)
		tbl, err := Open(ctx, fs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		fs.budget.Store(int64(k))
		ep := fmt.Sprintf("k%02d", k)
		in := []EpisodeInput{
			{Episode: ep + "a", Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}},
			{Episode: ep + "b", Videos: map[string]VideoFile{"": {Path: fixture("hevc.mp4")}}},
		}
		_, err = tbl.AddEpisodes(ctx, in, AddOptions{})
		if err == nil {
			committed[ep+"a"], committed[ep+"b"] = true, true
		} else if !errors.Is(err, errInjected) {
			t.Fatalf("k=%d: %v", k, err)
		}
		checkHealthy(t, dir, clone(committed))
	}
	if len(committed) == 0 {
		t.Fatal("no commit ever completed: the budget is too small to test anything")
	}
}

func clone(m map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestCrashKill kills writer processes with SIGKILL at random moments
// (20 times locally, 8 on S3).
func TestCrashKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes")
	}
	forEachStore(t, func(t *testing.T, k storeKind) {
		trials := 20
		if k.name == "s3" {
			trials = 8
		}
		crashKill(t, k.newURI(t), trials)
	})
}

func crashKill(t *testing.T, dir string, trials int) {
	tbl := nullableTable(t, dir)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < trials; trial++ {
		cmd := startWriter(t, dir, fmt.Sprintf("t%02d", trial), 1000)
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		head, err := tbl.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		if head != nil {
			eps, _ := tbl.Episodes(ctx, head)
			for _, e := range eps {
				want[e.Episode] = true
			}
		}
		checkHealthy(t, dir, want)
	}
}

// uncheckedFilter lets the tests of this package create views: checking a
// filter is the query package's (query.CheckView, tested there), and
// these tests store filters that are valid.
func uncheckedFilter(*Schema, View) error { return nil }

// runViewWorker (the test binary run with
// FRAMEFS_TEST_VIEWS=URI|PREFIX|COUNT, see TestMain) creates COUNT views PREFIX-N (every third pinned to the
// head of the moment), deleting every other one again, and checks each
// step. The views it keeps are PREFIX-N for odd N.
func runViewWorker(spec string) int {
	parts := strings.Split(spec, "|")
	var count int
	fmt.Sscan(parts[2], &count)
	ctx := context.Background()
	tbl, err := openTestTable(parts[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; i < count; i++ {
		v := View{Name: fmt.Sprintf("%s-%03d", parts[1], i), Where: fmt.Sprintf("note IS NULL OR note != '%d'", i)}
		if i%3 == 0 {
			head, err := tbl.Resolve(ctx, 0, "")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			v.Snapshot = head.ID
		}
		if _, err := tbl.CreateView(ctx, v, uncheckedFilter); err != nil {
			fmt.Fprintf(os.Stderr, "create %s: %v\n", v.Name, err)
			return 1
		}
		if _, err := tbl.View(ctx, v.Name); err != nil {
			fmt.Fprintf(os.Stderr, "read %s: %v\n", v.Name, err)
			return 1
		}
		if i%2 == 0 {
			if err := tbl.DeleteView(ctx, v.Name); err != nil {
				fmt.Fprintf(os.Stderr, "delete %s: %v\n", v.Name, err)
				return 1
			}
		}
	}
	return 0
}

// TestConcurrentViews runs four processes creating and deleting views
// while two others commit, on local disk and S3: every view a process
// kept is there afterwards, none it deleted is, and verify is clean.
func TestConcurrentViews(t *testing.T) {
	forEachStore(t, func(t *testing.T, k storeKind) {
		uri := k.newURI(t)
		tbl := nullableTable(t, uri)
		ctx := context.Background()
		if _, err := tbl.AddEpisodes(ctx, []EpisodeInput{{Episode: "seed", Videos: map[string]VideoFile{"": {Path: fixture("h264_vfr.mp4")}}}}, AddOptions{}); err != nil {
			t.Fatal(err)
		}
		const views, commits = 12, 4
		var procs []*exec.Cmd
		for w := 0; w < 2; w++ {
			procs = append(procs, startWriter(t, uri, fmt.Sprintf("w%d", w), commits))
		}
		for v := 0; v < 4; v++ {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("FRAMEFS_TEST_VIEWS=%s|v%d|%d", uri, v, views))
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			procs = append(procs, cmd)
		}
		for _, p := range procs {
			if err := p.Wait(); err != nil {
				t.Fatalf("a process failed: %v", err)
			}
		}
		names, err := tbl.ViewNames(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for v := 0; v < 4; v++ {
			for i := 1; i < views; i += 2 {
				want = append(want, fmt.Sprintf("v%d-%03d", v, i))
			}
		}
		if strings.Join(names, ",") != strings.Join(want, ",") {
			t.Errorf("views %v\nwant  %v", names, want)
		}
		head, err := tbl.Resolve(ctx, 0, "")
		if err != nil || head.Episodes != 1+2*commits {
			t.Fatalf("head %+v, %v", head, err)
		}
		problems, err := tbl.Verify(ctx)
		if err != nil || len(problems) != 0 {
			t.Fatalf("verify: %v %v", problems, err)
		}
	})
}
