package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/framefs/framefs/table/storage"
)

// evolveFor returns the schema to ingest sidecars with: s itself when they
// only use known columns, else a new schema version with the unknown ones
// added as nullable columns, their types inferred from the values.
func (t *Table) evolveFor(ctx context.Context, s *Schema, sidecars []*Sidecar) (*Schema, error) {
	added := map[string]Type{}
	var order []string
	for _, sc := range sidecars {
		if sc == nil {
			continue
		}
		objs := append([]map[string]any{sc.Episode}, sc.Frames...)
		for _, obj := range objs {
			for k, v := range obj {
				if k == s.EpisodeColumn || s.IsVideoColumn(k) || v == nil || k == FrameColumn && s.HasFrameColumn() {
					continue // Rows says what is wrong with a reserved name
				}
				if _, ok := s.Column(k); ok {
					continue
				}
				typ, err := inferType(v)
				if err != nil {
					return nil, fmt.Errorf("%w: %s: new column %q: %v", ErrInvalidInput, sc.Name, k, err)
				}
				prev, seen := added[k]
				switch {
				case !seen:
					order = append(order, k)
					added[k] = typ
				case prev != typ && prev == "int64" && typ == "float64":
					added[k] = typ // 1 and 1.5 in one column: float64
				case prev != typ && !(prev == "float64" && typ == "int64"):
					return nil, fmt.Errorf("%w: %s: new column %q holds both %s and %s values", ErrInvalidInput, sc.Name, k, prev, typ)
				}
			}
		}
	}
	if len(added) == 0 {
		return s, nil
	}
	sort.Strings(order)
	next := *s
	next.ID = s.ID + 1
	next.Columns = append([]Column(nil), s.Columns...)
	for _, name := range order {
		next.Columns = append(next.Columns, Column{Name: name, Type: added[name], Nullable: true})
	}
	if err := next.Validate(); err != nil {
		return nil, err
	}
	if err := checkReservedNames(s, &next); err != nil {
		return nil, err
	}
	if err := t.store.PutIfAbsent(ctx, schemaKey(next.ID), marshal(next)); err != nil {
		if errors.Is(err, storage.ErrExists) {
			return nil, fmt.Errorf("%w: another writer changed the schema to version %d meanwhile; run the command again", ErrConflict, next.ID)
		}
		return nil, err
	}
	t.mu.Lock()
	t.schemas[next.ID] = &next
	t.mu.Unlock()
	return &next, nil
}

// inferType guesses the column type of a sidecar value.
func inferType(v any) (Type, error) {
	switch x := v.(type) {
	case bool:
		return "bool", nil
	case string, csvText:
		return "string", nil
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "int64", nil
		}
		return "float64", nil
	case int64:
		return "int64", nil
	case float64:
		return "float64", nil
	case []any:
		var elem Type
		for _, e := range x {
			t, err := inferType(e)
			if err != nil {
				return "", err
			}
			if _, isList := t.Elem(); isList {
				return "", errors.New("nested lists are not supported")
			}
			if elem == "" || elem == "int64" && t == "float64" {
				elem = t
			} else if elem != t && !(elem == "float64" && t == "int64") {
				return "", fmt.Errorf("a list mixes %s and %s", elem, t)
			}
		}
		if elem == "" {
			return "", errors.New("cannot tell the element type of an empty list")
		}
		if elem == "float64" {
			elem = "float32" // robot states and actions: float32 is the norm
		}
		return Type("list<" + string(elem) + ">"), nil
	}
	return "", fmt.Errorf("cannot store %s", describe(v))
}

// Redefine gives a table that has no snapshots yet a new schema (the next
// schema version): a table made empty, whose columns arrive with its
// first data, takes them from a schema file then. Once a snapshot exists
// only AddOptions.AllowNewColumns changes the schema.
func (t *Table) Redefine(ctx context.Context, s Schema) (*Schema, error) {
	ids, err := t.SnapshotIDs(ctx)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		return nil, fmt.Errorf("%w: the table already has snapshots; its schema changes only by adding columns", ErrInvalidInput)
	}
	cur, err := t.LatestSchema(ctx)
	if err != nil {
		return nil, err
	}
	s.ID = 0
	next, err := s.withDefaults().foldEpisodeColumn()
	if err != nil {
		return nil, err
	}
	next.ID = cur.ID + 1
	if err := next.Validate(); err != nil {
		return nil, err
	}
	if err := checkReservedNames(cur, &next); err != nil {
		return nil, err
	}
	if err := t.store.PutIfAbsent(ctx, schemaKey(next.ID), marshal(next)); err != nil {
		if errors.Is(err, storage.ErrExists) {
			return nil, fmt.Errorf("%w: another writer changed the schema to version %d meanwhile", ErrConflict, next.ID)
		}
		return nil, err
	}
	t.mu.Lock()
	t.schemas[next.ID] = &next
	t.mu.Unlock()
	return &next, nil
}
