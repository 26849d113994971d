// Package storagetest holds helpers for tests of what reads a table's
// store: storage.Stores that record the objects read.
package storagetest

import (
	"context"
	"strings"
	"sync"

	"github.com/framefs/framefs/table/storage"
)

// keys is a list of object keys that concurrent reads append to.
type keys struct {
	mu   sync.Mutex
	list []string
}

func (k *keys) add(key string) {
	k.mu.Lock()
	k.list = append(k.list, key)
	k.mu.Unlock()
}

// take returns the keys added since the last call, in the order they were
// added.
func (k *keys) take() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.list
	k.list = nil
	return out
}

// CountingStore is a storage.Store that records the keys of the manifests
// read whole (manifest/..., not the manifest lists), so that a test can
// tell which of a table's manifests a command or a folder read.
type CountingStore struct {
	storage.Store
	reads keys
}

// ReadAll reads an object, recording it if it is a manifest.
func (s *CountingStore) ReadAll(ctx context.Context, key string) ([]byte, error) {
	if strings.HasPrefix(key, "manifest/") && !strings.HasPrefix(key, "manifest/list-") {
		s.reads.add(key)
	}
	return s.Store.ReadAll(ctx, key)
}

// ManifestReads returns the keys of the manifests read since the last
// call, in the order they were read.
func (s *CountingStore) ManifestReads() []string { return s.reads.take() }

// OpenRecordingStore is a storage.Store that records the keys of the
// objects opened for ranged reads (data files, videos).
type OpenRecordingStore struct {
	storage.Store
	opened keys
}

// Open opens an object, recording its key.
func (s *OpenRecordingStore) Open(ctx context.Context, key string) (storage.Object, error) {
	s.opened.add(key)
	return s.Store.Open(ctx, key)
}

// Opened returns the keys of the objects opened since the last call, in
// the order they were opened.
func (s *OpenRecordingStore) Opened() []string { return s.opened.take() }
