// Package storagetest holds helpers for tests of what reads a table's
// store: a storage.Store that records the objects read.
package storagetest

import (
	"context"
	"strings"
	"sync"

	"github.com/framefs/framefs/table/storage"
)

// CountingStore is a storage.Store that records the keys of the manifests
// read whole (manifest/..., not the manifest lists), so that a test can
// tell which of a table's manifests a command or a folder read.
type CountingStore struct {
	storage.Store
	mu    sync.Mutex
	reads []string
}

// ReadAll reads an object, recording it if it is a manifest.
func (s *CountingStore) ReadAll(ctx context.Context, key string) ([]byte, error) {
	if strings.HasPrefix(key, "manifest/") && !strings.HasPrefix(key, "manifest/list-") {
		s.mu.Lock()
		s.reads = append(s.reads, key)
		s.mu.Unlock()
	}
	return s.Store.ReadAll(ctx, key)
}

// ManifestReads returns the keys of the manifests read since the last
// call, in the order they were read.
func (s *CountingStore) ManifestReads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.reads
	s.reads = nil
	return out
}
