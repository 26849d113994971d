package blockcache

import (
	"context"
	"testing"
)

// TestRandomBurstsDoNotPrefetch: a decoder seeking to random frames reads
// a short contiguous run (one GOP) at each place. Those runs are not a
// sequential stream: prefetching after them fetched blocks nobody read.
func TestRandomBurstsDoNotPrefetch(t *testing.T) {
	const bs = 4096
	c, err := Open(Options{Dir: t.TempDir(), BlockSize: bs, Prefetch: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Wait)
	src := newSource(256*bs, 11)
	r := c.NewReader(context.Background(), src.id("gops"), src.fetch)
	touched := map[int64]bool{}
	for _, blk := range []int64{200, 17, 90, 3, 151, 64, 230, 120, 41, 180} {
		// Three contiguous reads from the middle of the block into the
		// next one, like a GOP that straddles a block boundary.
		off := blk*bs + bs/2
		for i := 0; i < 3; i++ {
			checkRead(t, r, src, off, 1000)
			touched[off/bs], touched[(off+999)/bs] = true, true
			off += 1000
		}
	}
	c.Wait()
	st := c.Stats()
	if st.Prefetches != 0 || st.Misses != int64(len(touched)) {
		t.Fatalf("random bursts touching %d blocks: %d fetches, %d prefetches", len(touched), st.Misses, st.Prefetches)
	}
}

// TestInterleavedSequentialReaders: two readers walking one object in
// order (a decoder's read-ahead and another session of the same video)
// share a Reader; each is still recognised as sequential, and no block is
// fetched twice.
func TestInterleavedSequentialReaders(t *testing.T) {
	const bs = 4096
	c, err := Open(Options{Dir: t.TempDir(), BlockSize: bs, Prefetch: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Wait)
	src := newSource(128*bs, 12)
	r := c.NewReader(context.Background(), src.id("two"), src.fetch)
	a, b := int64(0), int64(64*bs)
	for a < 64*bs {
		checkRead(t, r, src, a, 1000)
		checkRead(t, r, src, b, 1000)
		a += 1000
		b += 1000
	}
	c.Wait()
	st := c.Stats()
	if st.Prefetches < 100 {
		t.Fatalf("two interleaved sequential readers of 128 blocks: only %d prefetches", st.Prefetches)
	}
	if st.Misses > 128+4 {
		t.Fatalf("%d block fetches for 128 blocks", st.Misses)
	}
}
