package table

import (
	"bytes"
	"context"
	"fmt"
)

// FormatVersion returns the format version table.json declares (the
// version of the newest metadata the table may hold).
func (t *Table) FormatVersion() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.meta.FormatVersion
}

// upgradeMeta rewrites table.json with the current format version when it
// declares an older one, before a commit writes metadata of the current
// version: a reader that knows only the older version then refuses the
// table when it opens it (saying to upgrade framefs) instead of failing
// on the first new snapshot it reads. table.json is the only object a
// commit ever replaces, once per version, with the same content but its
// version; concurrent upgrades write the same bytes.
func (t *Table) upgradeMeta(ctx context.Context) error {
	t.mu.Lock()
	meta := t.meta
	t.mu.Unlock()
	if meta.FormatVersion >= FormatVersion {
		return nil
	}
	meta.FormatVersion = FormatVersion
	if meta.Features == nil {
		meta.Features = []string{}
	}
	if _, err := t.store.Put(ctx, keyTableMeta, bytes.NewReader(marshal(meta))); err != nil {
		return fmt.Errorf("upgrade %s to format version %d: %w", keyTableMeta, FormatVersion, err)
	}
	t.mu.Lock()
	t.meta = meta
	t.mu.Unlock()
	return nil
}

// UpgradeReport says what Upgrade did.
type UpgradeReport struct {
	// From and To are the format versions before and after.
	From, To int
	// Snapshot is the snapshot that holds the head's episodes in the
	// current format (nil when the table has no snapshots, or its head
	// was current already).
	Snapshot *Snapshot
}

// Upgrade brings a table to the current format version: table.json
// declares it, and a commit of kind "upgrade" writes the head's episodes
// again as current metadata (for a version-1 table: Parquet manifests and
// a manifest list in place of JSON manifests), changing no episode. Older
// snapshots stay as they are and are read as before. A table already
// current is left alone. Any commit upgrades the same way; Upgrade does it
// without changing anything else.
func (t *Table) Upgrade(ctx context.Context) (UpgradeReport, error) {
	rep := UpgradeReport{From: t.FormatVersion(), To: FormatVersion}
	head, err := t.Head(ctx)
	if err != nil {
		return rep, err
	}
	if rep.From >= FormatVersion && (head == nil || head.FormatVersion >= FormatVersion) {
		return rep, nil
	}
	if head == nil || head.FormatVersion >= FormatVersion {
		return rep, t.upgradeMeta(ctx)
	}
	schema, err := t.LatestSchema(ctx)
	if err != nil {
		return rep, err
	}
	rep.Snapshot, err = t.commit(ctx, change{kind: KindUpgrade, schemaID: schema.ID})
	return rep, err
}
