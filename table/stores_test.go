package table

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/table/storage"
)

// storeKind is a kind of store the table tests run against: a local
// directory, or a prefix of a bucket on a real S3 server (versitygw).
type storeKind struct {
	name string
	// newURI returns a new, empty table location (a directory or an
	// s3:// URI); for S3 it starts the test's server on first use and
	// points the AWS environment (inherited by writer processes) at it.
	newURI func(t *testing.T) string
}

var prefixSeq atomic.Int64

// forEachStore runs f as a subtest per store kind. The S3 subtest skips
// when versitygw is missing, and fails instead when FRAMEFS_REQUIRE_S3=1.
func forEachStore(t *testing.T, f func(t *testing.T, k storeKind)) {
	local := storeKind{name: "local", newURI: func(t *testing.T) string { return t.TempDir() }}
	var srv *s3test.Server
	s3 := storeKind{name: "s3", newURI: func(t *testing.T) string {
		if srv == nil {
			srv = s3test.Start(t)
			for _, kv := range srv.Env() {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
		}
		return srv.URI(fmt.Sprintf("t%d/table", prefixSeq.Add(1)))
	}}
	for _, k := range []storeKind{local, s3} {
		t.Run(k.name, func(t *testing.T) {
			if k.name == "s3" {
				srv = nil
			}
			f(t, k)
		})
	}
}

// openTestStore opens a table location as the framefs command does: the
// AWS standard chain for s3:// URIs, with the block cache directory from
// FRAMEFS_TEST_CACHE if set.
func openTestStore(uri string) (storage.Store, error) {
	return storage.Open(context.Background(), uri, storage.OpenOptions{
		Create: true,
		S3:     storage.S3Options{CacheDir: os.Getenv("FRAMEFS_TEST_CACHE")},
	})
}

func mustStore(t *testing.T, uri string) storage.Store {
	t.Helper()
	s, err := openTestStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newTableAt creates the test schema's table at uri.
func newTableAt(t *testing.T, uri string) *Table {
	t.Helper()
	tbl, err := Create(context.Background(), mustStore(t, uri), testSchema(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
