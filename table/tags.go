package table

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/framefs/framefs/table/storage"
)

// CreateTag names a snapshot. Tags are immutable: creating an existing tag
// fails with ErrExists.
func (t *Table) CreateTag(ctx context.Context, name string, snapshotID int64) (Tag, error) {
	if err := CheckName("tag", name); err != nil {
		return Tag{}, err
	}
	if _, err := t.Snapshot(ctx, snapshotID); err != nil {
		return Tag{}, err
	}
	tag := Tag{Name: name, Snapshot: snapshotID, Time: t.opts.Now().UTC()}
	if err := t.store.PutIfAbsent(ctx, tagKey(name), marshal(tag)); err != nil {
		if errors.Is(err, storage.ErrExists) {
			return Tag{}, fmt.Errorf("%w: tag %q (tags are immutable: delete it first)", ErrExists, name)
		}
		return Tag{}, err
	}
	// A concurrent expire may have removed the snapshot between the check
	// and the write; do not leave a dangling tag behind.
	if _, err := t.store.ReadAll(ctx, snapshotKey(snapshotID)); errors.Is(err, storage.ErrNotFound) {
		_ = t.store.Delete(ctx, tagKey(name))
		return Tag{}, fmt.Errorf("%w: snapshot %d was expired while tagging", ErrNotFound, snapshotID)
	}
	return tag, nil
}

// DeleteTag removes a tag.
func (t *Table) DeleteTag(ctx context.Context, name string) error {
	if err := CheckName("tag", name); err != nil {
		return err
	}
	if _, err := t.Tag(ctx, name); err != nil {
		return err
	}
	return t.store.Delete(ctx, tagKey(name))
}

// Tag returns a tag by name.
func (t *Table) Tag(ctx context.Context, name string) (Tag, error) {
	if err := CheckName("tag", name); err != nil {
		return Tag{}, err
	}
	var tag Tag
	if err := t.readJSON(ctx, tagKey(name), &tag); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Tag{}, fmt.Errorf("%w: tag %q", ErrNotFound, name)
		}
		return Tag{}, err
	}
	return tag, nil
}

// Tags lists all tags sorted by name.
func (t *Table) Tags(ctx context.Context) ([]Tag, error) {
	objs, err := t.store.List(ctx, prefixTag)
	if err != nil {
		return nil, err
	}
	var out []Tag
	for _, o := range objs {
		name, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, prefixTag), ".json")
		if !ok {
			continue
		}
		tag, err := t.Tag(ctx, name)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, tag)
	}
	return out, nil
}
