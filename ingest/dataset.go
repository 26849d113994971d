package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/framefs/framefs/lerobot"
	"github.com/framefs/framefs/table"
)

// importDataset imports a LeRobot dataset folder (one holding
// meta/info.json) with package lerobot, as framefs import lerobot does:
// every episode the table does not hold yet, in bounded commits. No
// journal is needed: a run cut short by a crash is redone when the
// folder is looked at again, and skips the episodes that landed.
func (s *Stager) importDataset(ctx context.Context, tbl *table.Table, g *group) error {
	if len(g.entries) > 1 {
		var others []string
		for _, e := range g.entries {
			if e.kind != kindDataset {
				others = append(others, e.name)
			}
		}
		s.fail(g, problemFailed, fmt.Sprintf("%s/ is a LeRobot dataset, imported on its own: move %v away", g.name, others))
		return nil
	}
	name := g.entries[0].name
	s.setRunning("importing LeRobot dataset " + name + "/")
	defer s.setRunning("")
	dir := filepath.Join(s.opts.Dir, name)
	ds, err := lerobot.Open(ctx, dir)
	var res *lerobot.ImportResult
	if err == nil {
		res, err = lerobot.ImportInto(ctx, ds, tbl, lerobot.ImportOptions{
			NoSizes: s.opts.AddOptions.NoSizes,
			Committed: func(snap *table.Snapshot) {
				s.mu.Lock()
				s.stats.Episodes += snap.Summary.EpisodesAdded
				s.mu.Unlock()
				s.committed(snap, fmt.Sprintf("imported %d episodes (%d frames) of LeRobot dataset %s/",
					snap.Summary.EpisodesAdded, snap.Summary.FramesAdded, name))
			},
		})
	}
	if err != nil {
		var verr *lerobot.ValidationError
		switch {
		case errors.As(err, &verr):
			s.fail(g, problemFailed, fmt.Sprintf("%s/ is a LeRobot dataset that cannot be imported: %s", name, verr.Summary()))
		case errors.Is(err, table.ErrInvalidInput), errors.Is(err, table.ErrInvalidName), errors.Is(err, table.ErrExists),
			errors.Is(err, fs.ErrNotExist), errors.Is(err, lerobot.ErrInvalidDataset):
			s.fail(g, problemFailed, fmt.Sprintf("%s/: %v", name, err))
		default:
			s.transient(err) // storage or a concurrent commit: try again
			return err
		}
		return nil
	}
	s.log.Info("imported LeRobot dataset", "dataset", name, "episodes", res.Imported, "skipped", res.Skipped)
	s.done(g, g.entries)
	return nil
}
