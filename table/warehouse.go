package table

import (
	"context"
	"errors"
	"fmt"

	"github.com/framefs/framefs/table/storage"
)

// Warehouse is a store of tables: a table NAME is the prefix (directory)
// NAME/ of the store, holding a table.json.
type Warehouse struct {
	store storage.Store
	opts  Options
}

// NewWarehouse returns the warehouse in store; its tables open with opts.
func NewWarehouse(store storage.Store, opts Options) *Warehouse {
	return &Warehouse{store: store, opts: opts}
}

// String names the warehouse's store.
func (w *Warehouse) String() string { return w.store.String() }

// Tables lists the table names, sorted.
func (w *Warehouse) Tables(ctx context.Context) ([]string, error) {
	dirs, err := storage.ListDirs(ctx, w.store, "")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, name := range dirs {
		if CheckName("table", name) != nil {
			continue
		}
		if _, err := w.store.ReadAll(ctx, name+"/"+keyTableMeta); err == nil {
			names = append(names, name)
		} else if !errors.Is(err, storage.ErrNotFound) {
			return nil, err
		}
	}
	return names, nil
}

// Open opens table NAME.
func (w *Warehouse) Open(ctx context.Context, name string) (*Table, error) {
	sub, err := w.sub(name)
	if err != nil {
		return nil, err
	}
	return Open(ctx, sub, w.opts) // ErrNotFound without a table.json
}

// Create makes a new, empty table NAME: no columns but the episode id
// and the video, until its first sidecars or a schema file add them. A
// name already in use, even by a directory without a table, is refused.
func (w *Warehouse) Create(ctx context.Context, name string) (*Table, error) {
	sub, err := w.sub(name)
	if err != nil {
		return nil, err
	}
	dirs, err := storage.ListDirs(ctx, w.store, "")
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if d == name {
			return nil, fmt.Errorf("%w: %s", ErrExists, sub)
		}
	}
	return Create(ctx, sub, Schema{}, w.opts)
}

// Location names table NAME's store as Table.String does, without
// opening it.
func (w *Warehouse) Location(name string) string {
	if sub, err := w.sub(name); err == nil {
		return sub.String()
	}
	return storage.Join(w.store.String(), name)
}

func (w *Warehouse) sub(name string) (storage.Store, error) {
	if err := CheckName("table", name); err != nil {
		return nil, err
	}
	return storage.Sub(w.store, name)
}

// IsTable reports whether store holds a table (has a table.json).
func IsTable(ctx context.Context, store storage.Store) (bool, error) {
	_, err := store.ReadAll(ctx, keyTableMeta)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
