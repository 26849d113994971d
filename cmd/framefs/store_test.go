package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/table"
)

// TestWarehouse runs the mount's warehouse over a directory and over an
// S3 prefix: tables are the children holding a table.json, Create makes
// one and refuses a name in use, and a mistyped local path is an error
// that creates nothing.
func TestWarehouse(t *testing.T) {
	ctx := context.Background()
	stores := &storeFlags{cacheDir: "off", cacheBytes: 1 << 20, pathStyle: "auto"}
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			if kind == "s3" {
				srv := s3test.Start(t)
				for _, kv := range srv.Env() {
					k, v, _ := strings.Cut(kv, "=")
					t.Setenv(k, v)
				}
				root = srv.URI("wh")
			} else {
				os.MkdirAll(filepath.Join(root, "notes"), 0o755)
				os.WriteFile(filepath.Join(root, "notes", "x.txt"), []byte("x"), 0o644)
			}
			store, err := stores.openStore(ctx, root, false)
			if err != nil {
				t.Fatal(err)
			}
			wh := table.NewWarehouse(store, tableOptions())
			for _, name := range []string{"robot", "arm"} {
				if _, err := wh.Create(ctx, name); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := wh.Create(ctx, "robot"); !errors.Is(err, table.ErrExists) {
				t.Fatalf("second create: %v", err)
			}
			if _, err := wh.Create(ctx, "../x"); err == nil {
				t.Fatal("created a table named ../x")
			}
			names, err := wh.Tables(ctx)
			if err != nil || strings.Join(names, ",") != "arm,robot" {
				t.Fatalf("tables %v %v", names, err)
			}
			if _, err := wh.Open(ctx, "robot"); err != nil {
				t.Fatal(err)
			}
			if _, err := wh.Open(ctx, "missing"); !errors.Is(err, table.ErrNotFound) {
				t.Fatalf("open missing: %v", err)
			}
			if err := stores.checkCreatable(ctx, root+"/robot"); !errors.Is(err, table.ErrExists) {
				t.Fatalf("create over a table: %v", err)
			}
			if _, err := stores.openTable(ctx, root+"/robot"); err != nil {
				t.Fatal(err)
			}
			if ok, err := table.IsTable(ctx, store); ok || err != nil {
				t.Fatalf("the warehouse taken for a table: %v %v", ok, err)
			}
		})
	}
	// A typo'd local path fails and creates nothing.
	typo := filepath.Join(t.TempDir(), "robto")
	if _, err := stores.openTable(ctx, typo); err == nil || !strings.Contains(err.Error(), typo) {
		t.Fatalf("open a missing table: %v", err)
	}
	if _, err := os.Stat(typo); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("opening a missing table made %s", typo)
	}
}

// TestCreateOverAKilledCreate: `framefs create` where a killed create left
// its schema (and a temporary) makes the table; a directory holding
// anything else is refused, naming what is there.
func TestCreateOverAKilledCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "robot")
	runFramefs(t, "create", dir, "--column", "note:string?")
	os.Remove(filepath.Join(dir, "table.json"))
	os.WriteFile(filepath.Join(dir, ".tmp-0123456789abcdef"), []byte("{"), 0o644)
	runFramefs(t, "create", dir, "--column", "note:string?")
	if _, err := os.Stat(filepath.Join(dir, "table.json")); err != nil {
		t.Fatalf("the create over the leftovers made no table: %v", err)
	}

	other := filepath.Join(t.TempDir(), "robot")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("x"), 0o644)
	out, err := framefsCmd(context.Background(), "create", other, "--column", "note:string?").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not empty (notes.txt)") {
		t.Fatalf("create in a folder of other files: %v\n%s", err, out)
	}
}
