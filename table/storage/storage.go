// Package storage is the object store under a framefs table: a flat
// namespace of immutable objects named by slash-separated keys, with ranged
// reads and an atomic create-if-absent that commits are built on.
//
// Implementations: Local (a directory) and S3 (a bucket prefix on S3 or an
// S3-compatible server, reads cached by package blockcache); Open picks one
// for a path or an s3:// URI. Every method takes a context, returns
// ErrNotFound or ErrExists where those apply (test with errors.Is), and
// never exposes a partially written object to readers. The reads of an
// opened object run under the context given to Open: they fail once it
// ends, so a caller that keeps an object open past one request opens it
// with a context that lives as long as it does.
//
// On S3 it also reads objects of any bucket pinned to their ETag
// (PinnedObject, which package table/input reads ingest inputs through)
// and copies ranges of them into a store's objects server-side (Copier,
// s3copy.go).
package storage

import (
	"context"
	"errors"
	"io"
	"time"
)

var (
	// ErrNotFound means the object does not exist.
	ErrNotFound = errors.New("storage: object not found")
	// ErrExists means PutIfAbsent found the key already taken.
	ErrExists = errors.New("storage: object already exists")
	// ErrInvalidKey means a key is empty, absolute, or has "." or ".."
	// elements, NUL bytes or backslashes.
	ErrInvalidKey = errors.New("storage: invalid object key")
	// ErrChanged means an object or file changed while it was being read
	// (its ETag, size or modification time differs from the first look).
	ErrChanged = errors.New("storage: the object changed while it was read")
)

// Store is an object store.
type Store interface {
	// Open returns a handle for ranged reads of an object. Its reads fail
	// with ctx's error once ctx ends.
	Open(ctx context.Context, key string) (Object, error)
	// ReadAll returns the whole content of a (small) object.
	ReadAll(ctx context.Context, key string) ([]byte, error)
	// Put writes an object from r, replacing any previous one; readers see
	// either the old or the new content, never a mix.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// PutIfAbsent creates an object only if key does not exist yet, and
	// returns ErrExists otherwise. Of several concurrent callers with the
	// same key exactly one succeeds: commits rely on it.
	PutIfAbsent(ctx context.Context, key string, data []byte) error
	// Delete removes an object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// List returns the objects whose keys start with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// String names the store for messages (never with credentials).
	String() string
}

// Object is an open object: a fixed size and ranged reads.
type Object interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// Temporaries is implemented by stores in which a writer that crashed
// leaves something behind (a local temporary file, an S3 multipart
// upload, whose parts are stored and billed until it is aborted).
// Garbage collection deletes the old ones.
type Temporaries interface {
	// ListTemporaries returns what crashed or running writers left; Key
	// is opaque, ModTime says when the write started.
	ListTemporaries(ctx context.Context) ([]ObjectInfo, error)
	// DeleteTemporary removes one of them.
	DeleteTemporary(ctx context.Context, info ObjectInfo) error
}

// ObjectInfo describes a listed object.
type ObjectInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
}
