package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func val(n int, b byte) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = b
	}
	return v
}

func TestCacheBoundedInBytes(t *testing.T) {
	c := New[int](3*(100+EntryOverhead) + 10)
	for i := range 3 {
		c.Add(i, val(100, byte(i)))
	}
	if st := c.Stats(); st.Entries != 3 || st.Bytes != 3*(100+EntryOverhead) {
		t.Fatalf("stats %+v after three adds", st)
	}
	c.Get(0) // 0 becomes the most recently used
	c.Add(3, val(100, 3))
	if _, ok := c.Get(1); ok {
		t.Error("the least recently used entry (1) survived")
	}
	for _, k := range []int{0, 2, 3} {
		if v, ok := c.Get(k); !ok || v[0] != byte(k) {
			t.Errorf("entry %d: %v %v", k, ok, v)
		}
	}
	// Replacing a value charges the difference.
	c.Add(3, val(10, 3))
	if st := c.Stats(); st.Bytes != 2*(100+EntryOverhead)+10+EntryOverhead {
		t.Errorf("bytes %d after replacing a value", st.Bytes)
	}
	// A value larger than the cache is not kept, and evicts nothing.
	c.Add(9, val(1000, 9))
	if _, ok := c.Get(9); ok || c.Stats().Entries != 3 {
		t.Errorf("oversized value kept or evicted others: %+v", c.Stats())
	}
	c.Remove(0)
	if st := c.Stats(); st.Entries != 2 || st.Bytes != 100+EntryOverhead+10+EntryOverhead {
		t.Errorf("stats %+v after Remove", st)
	}
}

func TestCacheManyTinyValues(t *testing.T) {
	// EntryOverhead bounds the entry count too.
	c := New[int](10 * EntryOverhead)
	for i := range 1000 {
		c.Add(i, nil)
	}
	if st := c.Stats(); st.Entries != 10 || st.Bytes > 10*EntryOverhead {
		t.Errorf("stats %+v", st)
	}
}

func TestLoadDeduplicates(t *testing.T) {
	c := New[string](1 << 20)
	var calls atomic.Int32
	release := make(chan struct{})
	load := func(context.Context) ([]byte, error) {
		calls.Add(1)
		<-release
		return []byte("v"), nil
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Load(context.Background(), "k", load)
			if err != nil || string(v) != "v" {
				t.Errorf("Load: %q %v", v, err)
			}
		}()
	}
	// Let the goroutines pile up on the flight, then finish it.
	for c.Stats().Shared+c.Stats().Misses < 20 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Errorf("loader ran %d times, want 1", calls.Load())
	}
	if v, err := c.Load(context.Background(), "k", load); err != nil || string(v) != "v" || calls.Load() != 1 {
		t.Errorf("cached Load: %q %v, %d calls", v, err, calls.Load())
	}
}

func TestLoadErrors(t *testing.T) {
	c := New[string](1 << 20)
	boom := errors.New("boom")
	if _, err := c.Load(context.Background(), "k", func(context.Context) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("Load: %v", err)
	}
	// Errors are not cached.
	v, err := c.Load(context.Background(), "k", func(context.Context) ([]byte, error) { return []byte("ok"), nil })
	if err != nil || string(v) != "ok" {
		t.Errorf("Load after an error: %q %v", v, err)
	}

	// A panicking loader releases its waiters, who load themselves.
	started := make(chan struct{})
	go func() {
		defer func() { recover() }()
		c.Load(context.Background(), "p", func(context.Context) ([]byte, error) {
			close(started)
			time.Sleep(10 * time.Millisecond)
			panic("loader bug")
		})
	}()
	<-started
	v, err = c.Load(context.Background(), "p", func(context.Context) ([]byte, error) { return []byte("mine"), nil })
	if err != nil || string(v) != "mine" {
		t.Errorf("Load after a panicking loader: %q %v", v, err)
	}
}

func TestLoadProviderCancelled(t *testing.T) {
	c := New[string](1 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Load(ctx, "k", func(ctx context.Context) ([]byte, error) {
			close(started)
			<-ctx.Done()
			return nil, fmt.Errorf("decoding: %w", ctx.Err())
		})
	}()
	<-started
	go func() {
		time.Sleep(5 * time.Millisecond)
		cancel()
	}()
	// This caller's context is fine: the provider's cancellation must not
	// fail it.
	v, err := c.Load(context.Background(), "k", func(context.Context) ([]byte, error) { return []byte("v"), nil })
	if err != nil || string(v) != "v" {
		t.Errorf("Load: %q %v", v, err)
	}
	<-done

	// A waiter whose own context ends stops waiting.
	p, ok := c.Promise("slow")
	if !ok {
		t.Fatal("Promise failed")
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer wcancel()
	if _, err := c.Load(wctx, "slow", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting Load: %v", err)
	}
	p.Fulfil([]byte("late"), nil)
}

func TestPromise(t *testing.T) {
	c := New[int](1 << 20)
	p, ok := c.Promise(1)
	if !ok {
		t.Fatal("Promise on a new key failed")
	}
	if _, ok := c.Promise(1); ok {
		t.Error("second Promise on a key in flight succeeded")
	}
	if !c.Contains(1) {
		t.Error("Contains is false for a promised key")
	}
	got := make(chan []byte)
	go func() {
		v, err := c.Load(context.Background(), 1, func(context.Context) ([]byte, error) {
			t.Error("loader ran although the key was promised")
			return nil, nil
		})
		if err != nil {
			t.Error(err)
		}
		got <- v
	}()
	time.Sleep(5 * time.Millisecond)
	p.Fulfil([]byte("promised"), nil)
	p.Fulfil([]byte("again"), nil) // no effect
	if v := <-got; string(v) != "promised" {
		t.Errorf("Load got %q", v)
	}
	if _, ok := c.Promise(1); ok {
		t.Error("Promise on a cached key succeeded")
	}

	// Abandoned promises make waiters load themselves.
	p2, _ := c.Promise(2)
	go func() {
		time.Sleep(5 * time.Millisecond)
		p2.Abandon()
	}()
	v, err := c.Load(context.Background(), 2, func(context.Context) ([]byte, error) { return []byte("own"), nil })
	if err != nil || string(v) != "own" {
		t.Errorf("Load after Abandon: %q %v", v, err)
	}

	// A promise fulfilled with an error passes it on, uncached.
	p3, _ := c.Promise(3)
	bad := errors.New("bad frame")
	go p3.Fulfil(nil, bad)
	if _, err := c.Load(context.Background(), 3, func(context.Context) ([]byte, error) { return nil, errors.New("not this") }); !errors.Is(err, bad) && err.Error() != "not this" {
		t.Errorf("Load after a failed promise: %v", err)
	}
}

func TestCacheZeroBytes(t *testing.T) {
	c := New[int](0)
	var calls int
	for range 3 {
		if _, err := c.Load(context.Background(), 1, func(context.Context) ([]byte, error) { calls++; return []byte("x"), nil }); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 3 || c.Stats().Entries != 0 {
		t.Errorf("%d loads, %d entries: a zero-byte cache must keep nothing", calls, c.Stats().Entries)
	}
}

func TestCacheConcurrentBounded(t *testing.T) {
	const limit = 50 * (64 + EntryOverhead)
	c := New[int](limit)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k := (g*7919 + i*31) % 300
				if _, err := c.Load(context.Background(), k, func(context.Context) ([]byte, error) { return val(64, byte(k)), nil }); err != nil {
					t.Error(err)
				}
				if st := c.Stats(); st.Bytes > limit {
					t.Errorf("cache holds %d bytes, limit %d", st.Bytes, limit)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestOnEvict(t *testing.T) {
	c := New[int](2 * (100 + EntryOverhead))
	var evicted []int
	c.OnEvict(func(k int, v []byte) {
		if v[0] != byte(k) {
			t.Errorf("evicted %d with the value of %d", k, v[0])
		}
		evicted = append(evicted, k)
	})
	c.Add(0, val(100, 0))
	c.Add(1, val(100, 1))
	c.Remove(1)            // removed, not evicted
	c.Add(0, val(100, 0))  // replaced, not evicted
	c.Add(2, val(100, 2))  // fits
	c.Add(3, val(100, 3))  // evicts 0
	c.Add(4, val(1000, 4)) // too large: neither kept nor evicting
	if fmt.Sprint(evicted) != "[0]" {
		t.Errorf("evicted %v, want [0]", evicted)
	}
}

// fullCache returns a cache filled with n values of 100 bytes, keys 0 to
// n-1 added in order, and the keys it evicts, in order.
func fullCache(n int) (*Cache[int], *[]int) {
	c := New[int](int64(n) * (100 + EntryOverhead))
	evicted := &[]int{}
	c.OnEvict(func(k int, _ []byte) { *evicted = append(*evicted, k) })
	for i := range n {
		c.Add(i, val(100, byte(i)))
	}
	return c, evicted
}

func TestDemoteEvictsFirst(t *testing.T) {
	c, evicted := fullCache(3)
	// 2 is the most recently used, but demoted it goes first; 1 before 2
	// among the demoted, being demoted earlier.
	c.Demote(1)
	c.Demote(2)
	c.Demote(7) // not cached: nothing happens
	if st := c.Stats(); st.Entries != 3 || st.Demoted != 2 || st.Bytes != 3*(100+EntryOverhead) {
		t.Fatalf("stats %+v after demoting two", st)
	}
	// A demoted value is still served, and stays demoted.
	if v, ok := c.Get(2); !ok || v[0] != 2 {
		t.Fatalf("demoted value: %v %v", ok, v)
	}
	if !c.Contains(1) {
		t.Error("Contains misses a demoted value")
	}
	if _, ok := c.Promise(1); ok {
		t.Error("a demoted value was promised again")
	}
	c.Add(3, val(100, 3))
	c.Add(4, val(100, 4))
	if fmt.Sprint(*evicted) != "[1 2]" {
		t.Errorf("evicted %v, want the demoted [1 2] first", *evicted)
	}
	c.Add(5, val(100, 5))
	if fmt.Sprint(*evicted) != "[1 2 0]" {
		t.Errorf("evicted %v, then the least recently used value 0", *evicted)
	}
	st := c.Stats()
	if st.ColdHits != 1 || st.Demoted != 0 || st.Bytes != 3*(100+EntryOverhead) {
		t.Errorf("stats %+v", st)
	}
	// Adding a demoted key again brings it back to the main segment.
	c.Demote(5)
	c.Add(5, val(50, 5))
	if st := c.Stats(); st.Demoted != 0 || st.Bytes != 2*(100+EntryOverhead)+50+EntryOverhead {
		t.Errorf("stats %+v after re-adding a demoted key", st)
	}
}

// TestWait: Wait returns a cached value, waits for one in flight, and
// reports a key that is neither (or whose load was abandoned) without
// loading it or counting a miss.
func TestWait(t *testing.T) {
	c := New[int](1 << 20)
	ctx := context.Background()
	if _, ok, err := c.Wait(ctx, 1); ok || err != nil {
		t.Fatalf("Wait on an unknown key: ok %v, err %v", ok, err)
	}
	c.Add(1, []byte("one"))
	if v, ok, err := c.Wait(ctx, 1); !ok || err != nil || string(v) != "one" {
		t.Fatalf("Wait on a cached key: %q, %v, %v", v, ok, err)
	}
	p, _ := c.Promise(2)
	got := make(chan string)
	go func() {
		v, ok, err := c.Wait(ctx, 2)
		got <- fmt.Sprint(string(v), " ", ok, " ", err)
	}()
	time.Sleep(5 * time.Millisecond)
	p.Fulfil([]byte("two"), nil)
	if g := <-got; g != "two true <nil>" {
		t.Errorf("Wait on a promised key got %s", g)
	}
	p3, _ := c.Promise(3)
	go func() {
		_, ok, err := c.Wait(ctx, 3)
		got <- fmt.Sprint(ok, err)
	}()
	time.Sleep(5 * time.Millisecond)
	p3.Abandon()
	if g := <-got; g != "false <nil>" {
		t.Errorf("Wait on an abandoned promise got %s", g)
	}
	cctx, cancel := context.WithCancel(ctx)
	c.Promise(4)
	cancel()
	if _, ok, err := c.Wait(cctx, 4); ok || !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: %v, %v", ok, err)
	}
	if st := c.Stats(); st.Misses != 0 {
		t.Errorf("Wait counted %d misses", st.Misses)
	}
}

// TestSetMaxBytes: a lower bound evicts at once, demoted values first and
// then the least recently used; a higher one keeps more again.
func TestSetMaxBytes(t *testing.T) {
	const one = 100 + EntryOverhead
	c, evicted := fullCache(4)
	c.Demote(3)
	c.Get(0)
	c.SetMaxBytes(2 * one)
	if fmt.Sprint(*evicted) != "[3 1]" {
		t.Errorf("evicted %v, want the demoted 3, then the least recently used 1", *evicted)
	}
	if st := c.Stats(); st.Entries != 2 || st.Bytes != 2*one || c.MaxBytes() != 2*one {
		t.Errorf("stats %+v, bound %d after lowering the bound", st, c.MaxBytes())
	}
	c.Add(4, val(100, 4))
	if fmt.Sprint(*evicted) != "[3 1 2]" {
		t.Errorf("evicted %v after an add at the lower bound", *evicted)
	}
	c.SetMaxBytes(4 * one)
	c.Add(5, val(100, 5))
	c.Add(6, val(100, 6))
	if st := c.Stats(); st.Entries != 4 || len(*evicted) != 3 {
		t.Errorf("stats %+v, evicted %v after raising the bound", st, *evicted)
	}
	c.SetMaxBytes(-1)
	if st := c.Stats(); st.Entries != 0 || st.Bytes != 0 {
		t.Errorf("stats %+v with a bound below zero", st)
	}
}
