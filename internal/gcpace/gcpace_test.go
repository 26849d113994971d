package gcpace

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/procstatus"
)

func TestPercent(t *testing.T) {
	const MiB = 1 << 20
	for _, c := range []struct {
		name                string
		live, cached, floor int64
		percent, want       int
	}{
		{"nothing live yet", 0, 0, 32 * MiB, 100, 100},
		{"no cache", 100 * MiB, 0, 32 * MiB, 100, 100},
		{"a 64 MiB cache beside 36 MiB", 100 * MiB, 64 * MiB, 8 * MiB, 100, 36},
		{"half of the rest", 100 * MiB, 60 * MiB, 8 * MiB, 50, 20},
		{"all cache: the floor", 256 * MiB, 256 * MiB, 32 * MiB, 100, 13},
		{"cache above live (counted before a collection)", 100 * MiB, 150 * MiB, 32 * MiB, 100, 32},
		{"a small heap: the floor, not twice the live heap", 10 * MiB, 0, 32 * MiB, 100, 320},
		{"a small heap's caches take no headroom", 10 * MiB, 6 * MiB, 16 * MiB, 100, 160},
		{"a heap far below its floor: the runtime's minimum heap at the floor", 1, 0, 32 * MiB, 100, 800},
		{"never below 1", 1 << 40, 1 << 40, 1, 100, 1},
	} {
		if got := Percent(c.live, c.cached, c.percent, c.floor); got != c.want {
			t.Errorf("%s: Percent(%d, %d, %d, %d) = %d, want %d", c.name, c.live, c.cached, c.percent, c.floor, got, c.want)
		}
	}
}

// TestRunLowersTheHeapGoal holds a 192 MiB cache of byte slices and
// checks that Run brings the collector's goal from about twice the live
// heap down to the live heap plus the floor, and that GOGC is put back
// when it stops.
func TestRunLowersTheHeapGoal(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: Run leaves it alone")
	}
	const cacheBytes = 192 << 20
	const floor = 16 << 20
	cache := make([][]byte, cacheBytes>>20)
	for i := range cache {
		cache[i] = make([]byte, 1<<20)
		for j := 0; j < len(cache[i]); j += 4 << 10 {
			cache[i][j] = byte(i) // resident, as a cache's bytes are
		}
	}
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	runtime.GC()
	if goal := heapGoal(); goal < 2*cacheBytes {
		t.Fatalf("with GOGC=100 the heap goal is %d MiB, want about twice the %d MiB cache", goal>>20, cacheBytes>>20)
	}

	stop := startRun(Options{Cached: func() int64 { return cacheBytes }, MinHeadroom: floor, Every: 5 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		live, goal := heapLive(), heapGoal()
		if goal <= live+floor+live/50 {
			t.Logf("live %d MiB, goal %d MiB, GOGC %d", live>>20, goal>>20, gogc())
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s the heap goal is still %d MiB for %d MiB live (GOGC %d), want at most live + %d MiB",
				goal>>20, live>>20, gogc(), floor>>20)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if got := gogc(); got != 100 {
		t.Errorf("GOGC after Run returned: %d, want 100 back", got)
	}
	runtime.KeepAlive(cache)
}

// memory reads the runtime's memory as Run does.
func memory() Memory {
	m, _ := ReadMemory()
	return m
}

// procStatus returns a field of this process's /proc/self/status in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	n, err := procstatus.Bytes(0, field)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func heapGoal() int64 { return memory().Goal }
func heapLive() int64 { return memory().Live }
func gogc() int64     { return memory().GCPercent }

// TestRunPacesEachCollection: after each collection GOGC is what Percent
// gives for the live heap it found, even when that moves it by a few
// percent (a cache of 200 MiB that grows by 8 MiB moves it from 32 to 31).
func TestRunPacesEachCollection(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: Run leaves it alone")
	}
	const floor = 64 << 20
	var cache [][]byte
	var cached atomic.Int64
	grow := func(mib int) {
		for range mib {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4 << 10 {
				b[j] = 1
			}
			cache = append(cache, b)
		}
		cached.Store(int64(len(cache)) << 20)
	}
	grow(200)
	stop := startRun(Options{Cached: cached.Load, MinHeadroom: floor, Every: 5 * time.Millisecond})
	defer stop()
	paced := func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			runtime.GC()
			time.Sleep(20 * time.Millisecond)
			want := Percent(heapLive(), cached.Load(), 100, floor)
			if got := int(gogc()); got == want {
				return
			} else if time.Now().After(deadline) {
				t.Fatalf("GOGC %d after a collection that found %d MiB live, %d MiB of it cache; want %d", got, heapLive()>>20, cached.Load()>>20, want)
			}
		}
	}
	paced()
	before := gogc()
	grow(8)
	paced()
	t.Logf("GOGC %d, then %d", before, gogc())
	runtime.KeepAlive(cache)
}

func TestLimit(t *testing.T) {
	const MiB = 1 << 20
	for _, c := range []struct {
		name                               string
		budget, outside, live, floor, want int64
	}{
		{"what C leaves", 400 * MiB, 120 * MiB, 100 * MiB, 32 * MiB, 280 * MiB},
		{"nothing outside Go", 400 * MiB, 0, 100 * MiB, 32 * MiB, 400 * MiB},
		{"outside over-counted below zero", 400 * MiB, -5 * MiB, 100 * MiB, 32 * MiB, 400 * MiB},
		{"a heap past the budget keeps its floor", 400 * MiB, 300 * MiB, 150 * MiB, 32 * MiB, 182 * MiB},
	} {
		if got := Limit(c.budget, c.outside, c.live, c.floor); got != c.want {
			t.Errorf("%s: Limit = %d MiB, want %d MiB", c.name, got>>20, c.want>>20)
		}
	}
}

func TestPacedLimit(t *testing.T) {
	const MiB = 1 << 20
	for _, c := range []struct {
		name                         string
		live                         int64
		percent                      int
		unused, nonHeap, floor, want int64
	}{
		{"the goal and the runtime's other memory", 100 * MiB, 50, 4 * MiB, 10 * MiB, 32 * MiB, 160 * MiB},
		{"room between objects takes at most half the floor", 20 * MiB, 160, 30 * MiB, 6 * MiB, 32 * MiB, 72 * MiB},
		{"nothing live yet", 0, 100, 0, 5 * MiB, 32 * MiB, 21 * MiB},
	} {
		if got := PacedLimit(c.live, c.percent, c.unused, c.nonHeap, c.floor); got != c.want {
			t.Errorf("%s: PacedLimit = %d MiB, want %d MiB", c.name, got>>20, c.want>>20)
		}
	}
}

// TestRunSetsTheLimitFromThePacing checks that Run, pacing a heap with a
// cache and no budget, sets the soft limit to the goal it paced plus the
// runtime's memory besides the heap, and puts the limit it found back
// when it stops.
func TestRunSetsTheLimitFromThePacing(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: Run leaves the limit alone")
	}
	const cacheBytes, floor = 64 << 20, 16 << 20
	cache := make([][]byte, cacheBytes>>20)
	for i := range cache {
		cache[i] = make([]byte, 1<<20)
	}
	before := debug.SetMemoryLimit(-1)
	stop := startRun(Options{Cached: func() int64 { return cacheBytes }, MinHeadroom: floor, Every: 5 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		limit := debug.SetMemoryLimit(-1)
		m := memory()
		percent := int(m.GCPercent)
		want := PacedLimit(m.Live, percent, m.Unused, m.Overhead(), floor)
		// What moved between Run's look at the metrics and this one.
		if d := limit - want; d < 4<<20 && d > -4<<20 {
			t.Logf("limit %d MiB for %d MiB live at GOGC %d", limit>>20, m.Live>>20, percent)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s the soft limit is %d MiB, want about %d MiB (%d MiB live at GOGC %d)", limit>>20, want>>20, m.Live>>20, percent)
		}
	}
	stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("soft limit after Run returned: %d, want %d back", got, before)
	}
	runtime.KeepAlive(cache)
}

// TestRunSetsTheLimitFromTheBudget checks that Run with a Budget sets the
// Go heap's soft limit to the budget less this process's anonymous memory
// outside the Go runtime, and puts the limit it found back when it stops.
func TestRunSetsTheLimitFromTheBudget(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: Run leaves the limit alone")
	}
	procStatus(t, "RssAnon")
	const budget = 3 << 30
	before := debug.SetMemoryLimit(-1)
	stop := startRun(Options{Budget: budget, Every: 5 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for {
		limit := debug.SetMemoryLimit(-1)
		// The test binary has little outside the Go runtime (the race
		// detector's shadow memory, when it runs): the limit is the
		// budget less that, give or take what moved since Run sampled
		// it (it was unlimited before).
		outside := max(procStatus(t, "RssAnon")-memory().Resident, 0)
		if limit <= budget && limit > budget-outside-64<<20 {
			t.Logf("limit %d MiB of a %d MiB budget, %d MiB outside the Go runtime", limit>>20, budget>>20, outside>>20)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s the soft limit is %d MiB, want at most the %d MiB budget less the %d MiB outside the Go runtime", limit>>20, budget>>20, outside>>20)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("soft limit after Run returned: %d, want %d back", got, before)
	}
}

func TestCacheBound(t *testing.T) {
	const MiB = 1 << 20
	for _, c := range []struct {
		name                           string
		bound, configured, short, want int64
	}{
		{"short: lower by what is short", 64 * MiB, 64 * MiB, 10 * MiB, 54 * MiB},
		{"never below a quarter of the configured size", 20 * MiB, 64 * MiB, 10 * MiB, 16 * MiB},
		{"room: take back half of it", 40 * MiB, 64 * MiB, -10 * MiB, 45 * MiB},
		{"never above the configured size", 60 * MiB, 64 * MiB, -100 * MiB, 64 * MiB},
		{"nothing short", 64 * MiB, 64 * MiB, 0, 64 * MiB},
	} {
		if got := CacheBound(c.bound, c.configured, c.short); got != c.want {
			t.Errorf("%s: CacheBound = %d MiB, want %d MiB", c.name, got>>20, c.want>>20)
		}
	}
}

// TestRunYieldsWhenShort checks that Run tells the caches, after a
// collection, what they are short: with a budget far below the live
// heap they are short, with one far above it they have room. (How much
// is not checked: what the runtime has mapped but not touched counts as
// resident in its measure, which makes the memory outside it look
// smaller than it is in a test binary.)
func TestRunYieldsWhenShort(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: Run leaves the limit alone")
	}
	const MiB = 1 << 20
	ballast := make([]byte, 64*MiB)
	for i := range ballast {
		ballast[i] = byte(i)
	}
	for _, c := range []struct {
		name   string
		budget int64
		short  func(int64) bool
	}{
		{"budget under the live heap", 16 * MiB, func(s int64) bool { return s > 0 }},
		{"budget far above it", 4 << 30, func(s int64) bool { return s < 0 }},
	} {
		told := make(chan int64, 100)
		stop := startRun(Options{Budget: c.budget, Every: 5 * time.Millisecond, Yield: func(s int64) {
			select {
			case told <- s:
			default:
			}
		}})
		var got int64
		deadline := time.After(10 * time.Second)
	wait:
		for {
			runtime.GC()
			select {
			case got = <-told:
				break wait
			case <-deadline:
				t.Fatalf("%s: Yield was not called in 10 s", c.name)
			case <-time.After(20 * time.Millisecond):
			}
		}
		stop()
		if !c.short(got) {
			t.Errorf("%s: caches told they are short %d MiB", c.name, got/MiB)
		}
	}
	runtime.KeepAlive(ballast)
}

// startRun runs Run with opts until the returned stop is called; stop
// returns once Run has put back what it changed.
func startRun(opts Options) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, opts)
	}()
	return func() { cancel(); <-done }
}
