package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Local is a Store in a directory of the local filesystem. Objects are
// files; a key's slashes are directories. Writes go to a temporary file in
// the target directory first, so a crash never leaves a partial object
// under its final name (leftover temporaries start with ".tmp-" and are
// removed by ignoring them in List and by garbage collection).
type Local struct {
	root string
}

// NewLocal returns a store rooted at dir, creating the directory if needed.
func NewLocal(dir string) (*Local, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return &Local{root: abs}, nil
}

func (l *Local) String() string { return l.root }

// TempPrefix begins the names of files being written; List never returns
// them, and one left behind by a killed process is no object.
const TempPrefix = ".tmp-"

// CheckKey validates an object key.
func CheckKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.ContainsAny(key, "\x00\\") {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	for _, part := range strings.Split(key, "/") {
		if part == "" || part == "." || part == ".." || strings.HasPrefix(part, TempPrefix) {
			return fmt.Errorf("%w: %q", ErrInvalidKey, key)
		}
	}
	return nil
}

func (l *Local) path(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(l.root, filepath.FromSlash(key)), nil
}

func notFound(err error, key string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("storage: %w", err)
}

type localObject struct {
	*os.File
	ctx  context.Context // from Open: reads fail once it ends
	size int64
}

func (o localObject) Size() int64 { return o.size }

func (o localObject) ReadAt(p []byte, off int64) (int, error) {
	if err := o.ctx.Err(); err != nil {
		return 0, fmt.Errorf("storage: read %s: %w", o.Name(), err)
	}
	return o.File.ReadAt(p, off)
}

// Open implements Store.
func (l *Local) Open(ctx context.Context, key string) (Object, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, notFound(err, key)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: %w", err)
	}
	return localObject{File: f, ctx: ctx, size: st.Size()}, nil
}

// ReadAll implements Store.
func (l *Local) ReadAll(ctx context.Context, key string) ([]byte, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, notFound(err, key)
	}
	return b, nil
}

// writeTemp writes r to a new temporary file beside the final path and
// syncs it, returning its name.
func writeTemp(ctx context.Context, final string, r io.Reader) (string, int64, error) {
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, fmt.Errorf("storage: %w", err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, TempPrefix+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", 0, fmt.Errorf("storage: %w", err)
	}
	n, err := io.Copy(f, contextReader{ctx, r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", 0, fmt.Errorf("storage: write %s: %w", final, err)
	}
	return tmp, n, nil
}

// Put implements Store.
func (l *Local) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	p, err := l.path(key)
	if err != nil {
		return 0, err
	}
	tmp, n, err := writeTemp(ctx, p, r)
	if err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("storage: %w", err)
	}
	return n, syncDir(filepath.Dir(p))
}

// PutIfAbsent implements Store: the complete temporary file is hard-linked
// to the final name, which fails if the name exists, so exactly one of
// several concurrent creators wins and nobody sees a partial object.
func (l *Local) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	tmp, _, err := writeTemp(ctx, p, strings.NewReader(string(data)))
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, key)
		}
		return fmt.Errorf("storage: %w", err)
	}
	return syncDir(filepath.Dir(p))
}

// Delete implements Store.
func (l *Local) Delete(ctx context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// List implements Store.
func (l *Local) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	// Walk only the directory that holds the prefix.
	dir := l.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		dir = filepath.Join(l.root, filepath.FromSlash(prefix[:i]))
	}
	var out []ObjectInfo
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), TempPrefix) || d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		out = append(out, ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: list %q: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// ListTemporaries implements Temporaries: the temporary files writers
// left behind when they crashed mid-write (or are writing now).
func (l *Local) ListTemporaries(ctx context.Context) ([]ObjectInfo, error) {
	var out []ObjectInfo
	err := filepath.WalkDir(l.root, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), TempPrefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return nil
		}
		out = append(out, ObjectInfo{Key: filepath.ToSlash(rel), Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: list temporary files of %s: %w", l.root, err)
	}
	return out, nil
}

// DeleteTemporary implements Temporaries: it removes a file returned by
// ListTemporaries.
func (l *Local) DeleteTemporary(ctx context.Context, info ObjectInfo) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir, name := filepath.Split(filepath.FromSlash(info.Key))
	if !strings.HasPrefix(name, TempPrefix) || strings.Contains(info.Key, "..") {
		return fmt.Errorf("%w: %q is not a temporary file", ErrInvalidKey, info.Key)
	}
	if err := os.Remove(filepath.Join(l.root, dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("storage: sync %s: %w", dir, err)
	}
	return nil
}

type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// WriteTo lets a reader that knows how to write itself (a pack streaming
// whole files, which the kernel copies without passing them through user
// space) do so; it checks the context between its parts.
func (c contextReader) WriteTo(w io.Writer) (int64, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if wt, ok := c.r.(io.WriterTo); ok {
		return wt.WriteTo(w)
	}
	return io.Copy(w, struct{ io.Reader }{c})
}
