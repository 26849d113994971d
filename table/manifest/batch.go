package manifest

// BatchOf makes the batch Read would give for entries read from a
// version-1 (JSON) manifest, whose statistics are JSON: the layout's
// column types say how to read them.
func BatchOf(l Layout, entries []Entry, proj Projection) *Batch {
	n := len(entries)
	b := &Batch{Len: n, Rows: make([]int64, n)}
	for i := range entries {
		b.Rows[i] = entries[i].Rows
	}
	if proj.Episodes {
		b.Episodes = make([]string, n)
		for i := range entries {
			b.Episodes[i] = entries[i].Episode
		}
	}
	if proj.Partitions {
		b.Partitions = map[string][]string{}
		for _, p := range l.Partitions {
			vals := make([]string, n)
			for i := range entries {
				vals[i] = entries[i].Partition[p.Name]
			}
			b.Partitions[p.Name] = vals
		}
	}
	if proj.Locations {
		l := &Locations{DataFiles: make([]string, n), RowGroups: make([]int, n), SchemaIDs: make([]int, n),
			FirstRowIDs: make([]int64, n), HasStats: make([]bool, n)}
		for i, e := range entries {
			l.DataFiles[i], l.RowGroups[i], l.SchemaIDs[i], l.FirstRowIDs[i] = e.DataFile, e.RowGroup, e.SchemaID, e.FirstRowID
			l.HasStats[i] = e.Stats != nil
		}
		b.Locations = l
	}
	if len(proj.Stats) > 0 {
		types := map[string]string{}
		for _, c := range l.Columns {
			types[c.Name] = c.Type
		}
		b.Stats = map[string]EntryStats{}
		for _, c := range proj.Stats {
			es := EntryStats{Known: make([]bool, n), Stats: make([]Stats, n)}
			typ, known := types[c]
			for i := range entries {
				if cs, ok := entries[i].Stats[c]; ok && known {
					es.Stats[i], es.Known[i] = TypedStats(typ, cs, entries[i].Rows)
				}
			}
			b.Stats[c] = es
		}
	}
	return b
}
