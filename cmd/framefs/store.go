package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// storeFlags are the global flags that say how to reach tables on S3;
// they map onto storage.S3Options. The root command owns one and hands it
// to every subcommand that opens a table, so flag parsing fills it before
// any command runs.
type storeFlags struct {
	endpoint   string
	pathStyle  string
	cacheDir   string
	cacheBytes int64
}

func (f *storeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.endpoint, "s3-endpoint", "", "URL of an S3-compatible server (default: AWS_ENDPOINT_URL, else AWS S3)")
	fs.StringVar(&f.pathStyle, "s3-path-style", "auto", "path-style S3 addressing: auto (on with a custom endpoint), true or false")
	fs.StringVar(&f.cacheDir, "s3-cache-dir", "", "local block cache for S3 reads (default $XDG_CACHE_HOME/framefs/s3 or ~/.cache/framefs/s3; \"off\" disables)")
	fs.Int64Var(&f.cacheBytes, "s3-cache-bytes", 1<<30, "size limit of the S3 block cache, in bytes (0: no cache)")
	nonNegative(fs, "s3-cache-bytes")
}

// s3Options maps the flags onto storage options.
func (f *storeFlags) s3Options() (storage.S3Options, error) {
	opts := storage.S3Options{Endpoint: f.endpoint, CacheBytes: f.cacheBytes}
	switch f.pathStyle {
	case "", "auto":
	case "true", "false":
		v := f.pathStyle == "true"
		opts.PathStyle = &v
	default:
		return opts, fmt.Errorf("--s3-path-style %q: want auto, true or false", f.pathStyle)
	}
	switch f.cacheDir {
	case "off", "none":
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return opts, fmt.Errorf("no cache directory for S3 reads (%v): give --s3-cache-dir", err)
		}
		opts.CacheDir = filepath.Join(base, "framefs", "s3")
	default:
		opts.CacheDir = f.cacheDir
	}
	if f.cacheBytes <= 0 {
		opts.CacheDir = ""
	}
	return opts, nil
}

// tableOptions wires the FFmpeg-backed pieces of package decoder into the
// table library, which itself builds without cgo.
func tableOptions() table.Options {
	return table.Options{
		Indexer: func(ctx context.Context, r io.ReaderAt, size int64) (*videoidx.Index, error) {
			return decoder.IndexVideo(ctx, r, size, videoidx.BestStream)
		},
	}
}

// openStore opens a table or warehouse location: a directory (which must
// exist unless create is set, so a typo never makes one) or an
// s3://bucket/prefix URI.
func (f *storeFlags) openStore(ctx context.Context, uri string, create bool) (storage.Store, error) {
	s3opts, err := f.s3Options()
	if err != nil {
		return nil, err
	}
	return storage.Open(ctx, uri, storage.OpenOptions{Create: create, S3: s3opts})
}

func (f *storeFlags) openTable(ctx context.Context, uri string) (*table.Table, error) {
	return f.openTableWith(ctx, uri, tableOptions())
}

func (f *storeFlags) openTableWith(ctx context.Context, uri string, opts table.Options) (*table.Table, error) {
	store, err := f.openStore(ctx, uri, false)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", uri, err)
	}
	return table.Open(ctx, store, opts)
}

// checkCreatable refuses to create a table where one exists or where
// other files are.
func (f *storeFlags) checkCreatable(ctx context.Context, uri string) error {
	if !storage.IsS3URI(uri) {
		if entries, err := os.ReadDir(uri); err == nil && len(entries) > 0 {
			if _, err := os.Stat(filepath.Join(uri, "table.json")); err == nil {
				return fmt.Errorf("%s: %w: a table exists there", uri, table.ErrExists)
			}
			return fmt.Errorf("%s: the directory is not empty", uri)
		}
		return nil
	}
	store, err := f.openStore(ctx, uri, false)
	if err != nil {
		return err
	}
	if _, err := store.ReadAll(ctx, "table.json"); err == nil {
		return fmt.Errorf("%s: %w: a table exists there", uri, table.ErrExists)
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	objs, err := store.List(ctx, "")
	if err != nil {
		return err
	}
	if len(objs) > 0 {
		return fmt.Errorf("%s: the prefix is not empty (%d objects, e.g. %s)", uri, len(objs), objs[0].Key)
	}
	return nil
}

// madeDirs notes the directories of a local location that do not exist
// yet; the function it returns removes those a failed command made, while
// they are empty, so that a refused create or import leaves no empty
// folder named after the table.
func madeDirs(uri string) func(err *error) {
	var missing []string // deepest first
	if !storage.IsS3URI(uri) {
		for d := filepath.Clean(uri); ; d = filepath.Dir(d) {
			if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
				break
			}
			missing = append(missing, d)
		}
	}
	return func(err *error) {
		if *err == nil {
			return
		}
		for _, d := range missing {
			if os.Remove(d) != nil {
				return // not empty: something else is there
			}
		}
	}
}

// baseName is the last element of a path or URI (a table's name).
func baseName(uri string) string {
	if storage.IsS3URI(uri) {
		uri = strings.TrimRight(uri, "/")
		return uri[strings.LastIndex(uri, "/")+1:]
	}
	return filepath.Base(uri)
}
