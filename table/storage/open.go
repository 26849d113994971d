package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// OpenOptions configure Open.
type OpenOptions struct {
	// Create lets Open create a missing local directory. Without it a
	// missing directory is ErrNotFound, so a mistyped path fails instead
	// of making a new directory. (S3 prefixes need no creating.)
	Create bool
	// S3 configures s3:// stores.
	S3 S3Options
}

// IsS3URI reports whether uri names an S3 location (s3://...).
func IsS3URI(uri string) bool { return strings.HasPrefix(uri, "s3://") }

// Open returns the store at uri: an S3 store for s3://bucket/prefix, a
// Local store for anything else (a directory path).
func Open(ctx context.Context, uri string, opts OpenOptions) (Store, error) {
	if IsS3URI(uri) {
		return NewS3(ctx, uri, opts.S3)
	}
	if strings.Contains(uri, "://") {
		return nil, fmt.Errorf("storage: %q: unknown URI scheme (want a directory or s3://BUCKET/PREFIX)", uri)
	}
	if !opts.Create {
		st, err := os.Stat(uri)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: no such directory", ErrNotFound, uri)
		}
		if err != nil {
			return nil, fmt.Errorf("storage: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("storage: %s is not a directory", uri)
		}
	}
	return NewLocal(uri)
}

// Join appends a name to a store location (a path or an s3:// URI).
func Join(uri, name string) string {
	if IsS3URI(uri) {
		return strings.TrimSuffix(uri, "/") + "/" + name
	}
	return filepath.Join(uri, name)
}

// DirLister is implemented by stores that can list the "directories"
// directly below a prefix without listing every object beneath them.
type DirLister interface {
	ListDirs(ctx context.Context, prefix string) ([]string, error)
}

// SubStorer is implemented by stores that can derive the store of the
// keys under NAME/ (a table in a warehouse).
type SubStorer interface {
	Sub(name string) (Store, error)
}

// ListDirs returns the names NAME such that some key of store starts with
// prefix+NAME+"/", sorted.
func ListDirs(ctx context.Context, store Store, prefix string) ([]string, error) {
	if dl, ok := store.(DirLister); ok {
		return dl.ListDirs(ctx, prefix)
	}
	objs, err := store.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		name, _, ok := strings.Cut(strings.TrimPrefix(o.Key, prefix), "/")
		if ok && (len(names) == 0 || names[len(names)-1] != name) {
			names = append(names, name)
		}
	}
	return names, nil
}

// Sub returns the store of the keys under name/ of store.
func Sub(store Store, name string) (Store, error) {
	if ss, ok := store.(SubStorer); ok {
		return ss.Sub(name)
	}
	return nil, fmt.Errorf("storage: %s cannot open sub-stores", store)
}

// ListDirs implements DirLister.
func (l *Local) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	dir := l.root
	if prefix != "" {
		if err := CheckKey(strings.TrimSuffix(prefix, "/")); err != nil {
			return nil, err
		}
		dir = filepath.Join(l.root, filepath.FromSlash(prefix))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("storage: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), TempPrefix) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Sub implements SubStorer; the directory is not created until something
// is written to it.
func (l *Local) Sub(name string) (Store, error) {
	if err := CheckKey(name); err != nil {
		return nil, err
	}
	return &Local{root: filepath.Join(l.root, filepath.FromSlash(name))}, nil
}
