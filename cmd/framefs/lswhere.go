package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/query/filter"
	"github.com/framefs/framefs/table"
)

// lsWhereOptions are the flags of `framefs ls --where`.
type lsWhereOptions struct {
	// where is the filter (SQL WHERE syntax).
	where string
	// episode restricts the listing to one episode.
	episode string
	// count prints the number of matching frames instead of the frames.
	count bool
	// asJSON prints JSON.
	asJSON bool
}

// filter compiles the --where filter (every row without one).
func (o lsWhereOptions) filter(ctx context.Context, tbl *table.Table, snap *table.Snapshot) (*filter.Filter, error) {
	where := o.where
	if where == "" {
		where = "TRUE"
	}
	return query.CompileFilter(ctx, tbl, snap, where)
}

// runLsWhere lists (or counts) the frames of a snapshot that match a
// filter: episode, frame and the row's columns.
func runLsWhere(ctx context.Context, out io.Writer, tbl *table.Table, snap *table.Snapshot, o lsWhereOptions) error {
	// A one-shot command over a table's manifests allocates much and
	// keeps little: collect garbage less often, up to a bound on the heap.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer limitBatchHeap()()
	f, err := o.filter(ctx, tbl, snap)
	if err != nil {
		return err
	}
	sel, err := query.Select(ctx, tbl, snap, f, query.SelectOptions{Episode: o.episode, CountOnly: o.count})
	if err != nil {
		return err
	}
	if o.count {
		if o.asJSON {
			return printJSON(out, map[string]any{"snapshot": snap.ID, "frames": sel.Frames,
				"episodes": sel.Matched, "stats": sel.Stats})
		}
		_, err := fmt.Fprintln(out, sel.Frames)
		return err
	}
	schema, err := tbl.Schema(ctx, snap.SchemaID)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	defer w.Flush()
	var tw *tabwriter.Writer
	if o.asJSON {
		fmt.Fprintf(w, "{\"snapshot\": %d, \"count\": %d, \"frames\": [", snap.ID, sel.Frames)
	} else {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		header := []string{"EPISODE", "FRAME"}
		for _, c := range schema.Columns {
			header = append(header, strings.ToUpper(c.Name))
		}
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	first := true
	for _, e := range sel.Episodes {
		rows, err := tbl.Rows(ctx, snap, e.Entry)
		if err != nil {
			return err
		}
		for _, p := range e.Parts {
			ordinals := p.Ordinals
			if ordinals == nil {
				ordinals = make([]int64, len(rows))
				for i := range ordinals {
					ordinals[i] = int64(i)
				}
			}
			for _, i := range ordinals {
				if err := ctx.Err(); err != nil {
					return err
				}
				r := rows[i]
				if o.asJSON {
					// The keys are the names filters know the values by.
					obj := map[string]any{schema.EpisodeColumn: e.Entry.Episode, table.FrameColumn: i}
					for _, c := range schema.Columns {
						obj[c.Name] = r[c.Name]
					}
					data, err := json.Marshal(obj)
					if err != nil {
						return err
					}
					writeJSONItem(w, data, &first)
					continue
				}
				cells := []string{e.Entry.Episode, fmt.Sprint(i)}
				for _, c := range schema.Columns {
					cells = append(cells, cell(r[c.Name]))
				}
				fmt.Fprintln(tw, strings.Join(cells, "\t"))
			}
		}
	}
	if o.asJSON {
		w.WriteString("\n]}\n")
		return nil
	}
	return tw.Flush()
}

// writeJSONItem writes an item of a JSON array streamed one item a line;
// first is set before the first item.
func writeJSONItem(w *bufio.Writer, data []byte, first *bool) {
	if !*first {
		w.WriteByte(',')
	}
	w.WriteString("\n  ")
	w.Write(data)
	*first = false
}

// cell formats a value for the text listing: strings as they are, NULL
// as NULL, everything else as JSON.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	}
	data, _ := json.Marshal(v)
	return string(data)
}
