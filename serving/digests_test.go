package serving

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
)

// memoryStore is an ImageStore in memory that counts its use.
type memoryStore struct {
	mu         sync.Mutex
	m          map[string][]byte
	gets, puts int
}

func (s *memoryStore) Get(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	b, ok := s.m[key]
	return b, ok
}

func (s *memoryStore) Contains(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[key]
	return ok
}

func (s *memoryStore) Put(key string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.puts++
	s.m[key] = b
}

// TestStoreNeedsTheVideosDigest: the store is shared by every table and
// daemon, and keyed by the digest a video's table records. A video whose
// bytes do not have the digest it claims is never read from or written to
// the store (a table claiming another video's digest cannot put its frames
// under that video's name); a video whose bytes do is, after one read of
// it.
func TestStoreNeedsTheVideosDigest(t *testing.T) {
	bytesA, bytesB := strings.Repeat("video A ", 1000), strings.Repeat("video B ", 1000)
	sum := sha256.Sum256([]byte(bytesA))
	digestA := "sha256:" + hex.EncodeToString(sum[:])
	store := &memoryStore{}

	liar := countingVideo(t, "evil", 60, 30)
	liar.R, liar.Size, liar.Digest = strings.NewReader(bytesB), int64(len(bytesB)), digestA
	evil := New(&countingCodec{}, Options{Store: store, Readahead: -1})
	shuffledRead(t, evil, liar, bmp, 1, -1)
	if hashed, failed := evil.DigestChecks(); failed != 1 || hashed != int64(len(bytesB)) {
		t.Errorf("digest checks: %d bytes hashed, %d failed; want the video read once and refused", hashed, failed)
	}
	evil.Close()
	if store.puts != 0 || store.gets != 0 {
		t.Fatalf("a video that is not what its digest says: %d puts, %d gets of the store; want none", store.puts, store.gets)
	}

	honest := countingVideo(t, "victim", 60, 30)
	honest.R, honest.Size, honest.Digest = strings.NewReader(bytesA), int64(len(bytesA)), digestA
	first := New(&countingCodec{}, Options{Store: store, Readahead: -1})
	shuffledRead(t, first, honest, bmp, 1, -1)
	first.Close()
	if store.puts != 60 {
		t.Errorf("%d images put in the store for 60 frames of a verified video", store.puts)
	}
	c := &countingCodec{}
	second := New(c, Options{Store: store, Readahead: -1})
	defer second.Close()
	shuffledRead(t, second, honest, bmp, 2, -1)
	if d := c.decoded.Load(); d != 0 || second.StoreHits() != 60 {
		t.Errorf("a second server decoded %d pictures and took %d frames from the store; want 0 and 60", d, second.StoreHits())
	}
	if hashed, failed := second.DigestChecks(); hashed != int64(len(bytesA)) || failed != 0 {
		t.Errorf("the second server hashed %d bytes (%d failed); want the video read once", hashed, failed)
	}
	if _, err := second.FrameSizes(context.Background(), honest, bmp); err != nil {
		t.Fatal(err)
	}
}
