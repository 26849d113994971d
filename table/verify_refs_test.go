package table

import "testing"

// TestFileRefsStayCompact: verify's references to one data file's row
// groups drop their repeats as they grow, keeping the first reference of
// each row group (and those that disagree on its rows).
func TestFileRefsStayCompact(t *testing.T) {
	var f fileRefs
	const rowGroups = 3000
	for pass := range int32(8) { // 8 manifests referencing every row group
		for rg := range int32(rowGroups) {
			f.add(rowGroupRef{rowGroup: rg, snapshot: pass, rows: 10})
		}
	}
	f.add(rowGroupRef{rowGroup: 7, snapshot: 9, rows: 11}) // a disagreement
	if n := len(f.refs); n > 3*rowGroups {
		t.Errorf("%d references kept for %d row groups", n, rowGroups)
	}
	refs := compactRefs(f.refs)
	if len(refs) != rowGroups+1 || refs[7] != (rowGroupRef{7, 0, 10}) || refs[8] != (rowGroupRef{7, 9, 11}) {
		t.Errorf("%d references after compaction, row group 7's: %v %v", len(refs), refs[7], refs[8])
	}
}
