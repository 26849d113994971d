package lerobot

import (
	"context"
	"fmt"
	"path/filepath"
)

// readEpisodes reads the rows of the given episodes (sorted), each data
// file once, and calls fn per episode, in order, with its rows as table
// sidecar frames: one map per row holding every column of cols (the
// task text included). The dataset must have passed Check.
func (ds *Dataset) readEpisodes(ctx context.Context, eps []int64, cols []Column, fn func(e *Episode, frames []map[string]any) error) error {
	names := make([]string, 0, len(cols))
	for _, c := range cols {
		if c.Name != TaskColumn {
			names = append(names, c.Name)
		}
	}
	dataFiles, _ := ds.files(eps)
	for _, df := range dataFiles {
		if err := ctx.Err(); err != nil {
			return err
		}
		t, err := readParquet(ctx, filepath.Join(ds.Dir, filepath.FromSlash(df.file)), names, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", df.file, err)
		}
		err = ds.episodesOfFile(t, df, cols, fn)
		t.release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (ds *Dataset) episodesOfFile(t *parquetTable, df dataFileEpisodes, cols []Column, fn func(e *Episode, frames []map[string]any) error) error {
	readers := make([]valueReader, len(cols))
	for i, c := range cols {
		if c.Name == TaskColumn {
			continue
		}
		a := t.cols[c.Name]
		if a == nil {
			return fmt.Errorf("%s: column %q is missing", df.file, c.Name)
		}
		readers[i] = newValueReader(a, c)
	}
	base, _ := ds.fileBase(df.file)
	taskIndex := t.cols["task_index"]
	for _, i := range df.episodes {
		e := &ds.Episodes[i]
		start := e.FirstIndex - base
		if start < 0 || start+e.Length > t.rows {
			return fmt.Errorf("%s: episode %d: rows [%d, %d) are outside the file's %d rows", df.file, i, start, start+e.Length, t.rows)
		}
		frames := make([]map[string]any, e.Length)
		for k := range frames {
			row := int(start) + k
			f := make(map[string]any, len(cols))
			for c, col := range cols {
				if col.Name == TaskColumn {
					ti, _ := intAt(taskIndex, row)
					f[col.Name] = ds.Tasks[ti]
					continue
				}
				v, err := readers[c](row)
				if err != nil {
					return fmt.Errorf("%s: episode %d, row %d: column %q: %v", df.file, i, row, col.Name, err)
				}
				f[col.Name] = v
			}
			frames[k] = f
		}
		if err := fn(e, frames); err != nil {
			return err
		}
	}
	return nil
}
