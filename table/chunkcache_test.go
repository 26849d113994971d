package table

import (
	"fmt"
	"testing"
)

// TestChunkIndexCacheBounded: the chunk indexes a table keeps stay within
// their byte bound however many data files filters read, each charged
// its row groups' locations.
func TestChunkIndexCacheBounded(t *testing.T) {
	tbl := newTable(t)
	ix := &ChunkIndex{columns: map[string]int{"speed": 0, "gear": 1}, groups: make([]chunkGroup, 10000)}
	locs := make([]chunkLoc, 2*len(ix.groups))
	for g := range ix.groups {
		ix.groups[g].chunks = locs[2*g : 2*g+2]
	}
	if b := ix.bytes(); b < 10000*(8+24+2*16) || b > 10000*100 {
		t.Fatalf("an index of 10,000 row groups of 2 columns is charged %d bytes", b)
	}
	for i := range 200 {
		tbl.chunkIndexes.Add(fmt.Sprintf("data/%d.chunks", i), ix, ix.bytes())
		if b := tbl.chunkIndexes.Bytes(); b > maxChunkIndexBytes {
			t.Fatalf("after %d indexes: %d bytes kept, bound %d", i+1, b, maxChunkIndexBytes)
		}
	}
	if n := tbl.chunkIndexes.Len(); n >= 200 || n == 0 {
		t.Errorf("%d of 200 indexes of %d bytes kept under %d", n, ix.bytes(), maxChunkIndexBytes)
	}
}
