package manifest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

var testLayout = Layout{
	Partitions: []Column{{"task", "string"}, {"shift", "int32"}},
	Videos:     []string{"front", "wrist"},
	Columns: []Column{
		{"speed", "float32"}, {"label", "string"}, {"ts", "timestamp"}, {"ok", "bool"},
		{"count", "int64"}, {"state", "list<float32>"},
	},
}

// testEntries makes n entries; every few entries lacks statistics (as
// written before they existed) or a column's, or a SHA-256, or sizes.
func testEntries(n int) []Entry {
	var out []Entry
	for i := range n {
		ref := func(col string) VideoRef {
			r := VideoRef{Pack: fmt.Sprintf("video/p%d.video", i/100), Offset: int64(i) * 1000, Length: 999,
				SHA256: fmt.Sprintf("%064x", i*7+len(col)), IndexOffset: int64(i)*1000 + 999, IndexLength: 50,
				FirstFrame: int64(i % 5), Frames: 300, Codec: "h264", Width: 640, Height: 480, SourceName: col + ".mp4"}
			if i%3 == 0 {
				r.Sizes = []SizesRef{{Identity: "jpg q=90", Object: "video/s.sizes", Offset: int64(i), Length: 12},
					{Identity: "png", Object: r.Pack, Offset: 5, Length: 7}}
			}
			if i%11 == 0 {
				r.SHA256, r.SourceName = "", ""
			}
			return r
		}
		e := Entry{
			Episode:    fmt.Sprintf("ep%05d", (i*7919)%n),
			Partition:  map[string]string{"task": []string{"pick", "place", "stack"}[i%3], "shift": fmt.Sprint(i%4 - 1)},
			Rows:       int64(10 + i%5),
			FirstRowID: int64(i) * 20,
			DataFile:   fmt.Sprintf("data/d%d.parquet", i/50),
			RowGroup:   i % 50,
			SchemaID:   1 + i%2,
			Videos:     map[string]VideoRef{"front": ref("front"), "wrist": ref("wrist")},
			Time:       time.Date(2026, 1, 2, 3, 4, 5, i, time.UTC),
			Stats: map[string]ColumnStats{
				"speed": {Min: json.RawMessage(fmt.Sprint(float32(i) / 4)), Max: json.RawMessage(fmt.Sprint(float32(i)/4 + 2.5)), Nulls: 0},
				"label": {Min: json.RawMessage(`"a\u003cb"`), Max: json.RawMessage(`"zed"`), Nulls: 1},
				"ts":    {Min: json.RawMessage(fmt.Sprint(1767322800000000 + i)), Max: json.RawMessage("1767322860000000"), Nulls: 0},
				"ok":    {Min: json.RawMessage("false"), Max: json.RawMessage("true"), Nulls: 2},
				"count": {Nulls: int64(10 + i%5)},
				"state": {Nulls: 3},
			},
		}
		switch {
		case i%13 == 0:
			e.Stats = nil
		case i%7 == 0:
			delete(e.Stats, "label")
		}
		out = append(out, e)
	}
	return out
}

func sameEntries(t *testing.T, got, want []Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range want {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if string(g) != string(w) || !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("entry %d reads as\n%s\nwant\n%s", i, g, w)
		}
	}
}

// encoded encodes n test entries and returns a reader of the manifest,
// its bytes and summary, and the entries in manifest order.
func encoded(t *testing.T, n int) (*Reader, []byte, Summary, []Entry) {
	t.Helper()
	entries := testEntries(n)
	data, sum, err := Encode(testLayout, entries)
	if err != nil {
		t.Fatal(err)
	}
	testLayout.Sort(entries)
	r, err := NewReader(data)
	if err != nil {
		t.Fatal(err)
	}
	return r, data, sum, entries
}

// TestRoundTrip: what Encode writes reads back exactly, in manifest
// order, whole or entry by entry, across row groups.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	r, data, sum, want := encoded(t, 2*EntriesPerRowGroup+300)
	if r.Len() != len(want) || r.pf.NumRowGroups() != 3 {
		t.Fatalf("%d entries in %d row groups", r.Len(), r.pf.NumRowGroups())
	}
	all, err := r.Entries(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, all, want)
	positions := []int{0, 5, EntriesPerRowGroup - 1, EntriesPerRowGroup, len(want) - 1}
	some, err := r.Entries(ctx, positions)
	if err != nil {
		t.Fatal(err)
	}
	var picked []Entry
	for _, p := range positions {
		picked = append(picked, want[p])
	}
	sameEntries(t, some, picked)
	// Without statistics: the same entries, Stats left out.
	light, err := r.EntriesWithoutStats(ctx, positions)
	if err != nil {
		t.Fatal(err)
	}
	for i := range picked {
		picked[i].Stats = nil
	}
	sameEntries(t, light, picked)
	if sum.Episodes != int64(len(want)) || sum.Bytes != int64(len(data)) || sum.EpisodeMin != "ep00000" || sum.EpisodeMax != fmt.Sprintf("ep%05d", len(want)-1) {
		t.Errorf("summary %+v", sum)
	}
}

// TestProjection: Read gives each entry's rows, ids, partition values and
// typed statistics, unknown where the entry has none.
func TestProjection(t *testing.T) {
	r, _, _, want := encoded(t, 300)
	proj := Projection{Episodes: true, Partitions: true, Stats: []string{"speed", "label", "state", "nosuch"}, Locations: true}
	b, err := r.Read(context.Background(), proj)
	if err != nil {
		t.Fatal(err)
	}
	// The same from the entries (as version-1 manifests are read).
	ref := BatchOf(testLayout, want, proj)
	if !reflect.DeepEqual(b, ref) {
		t.Fatalf("Read and BatchOf differ:\n%+v\n%+v", b.Stats["label"].Known[:20], ref.Stats["label"].Known[:20])
	}
	for i, e := range want {
		if b.Episodes[i] != e.Episode || b.Rows[i] != e.Rows || b.Partitions["task"][i] != e.Partition["task"] {
			t.Fatalf("entry %d: %s %d %s", i, b.Episodes[i], b.Rows[i], b.Partitions["task"][i])
		}
		st, known := b.Stats["speed"].Stats[i], b.Stats["speed"].Known[i]
		if known != (e.Stats != nil) {
			t.Fatalf("entry %d: speed statistics known %v, entry has %v", i, known, e.Stats)
		}
		if known && (!st.HasRange || string(st.Min.JSON()) != string(e.Stats["speed"].Min)) {
			t.Fatalf("entry %d: speed %+v, want %s", i, st, e.Stats["speed"].Min)
		}
		if _, ok := e.Stats["label"]; ok != b.Stats["label"].Known[i] {
			t.Fatalf("entry %d: label known %v", i, b.Stats["label"].Known[i])
		}
		if b.Stats["nosuch"].Known[i] {
			t.Fatalf("entry %d: statistics of a column the manifest has not", i)
		}
		light := b.Light(i)
		if light.Episode != e.Episode || light.DataFile != e.DataFile || light.RowGroup != e.RowGroup || light.SchemaID != e.SchemaID ||
			light.FirstRowID != e.FirstRowID || light.Rows != e.Rows || (light.Stats == nil) != (e.Stats == nil) ||
			string(light.Stats["speed"].Max) != string(e.Stats["speed"].Max) || light.Partition["shift"] != e.Partition["shift"] {
			t.Fatalf("entry %d: light entry %+v of %+v", i, light, e)
		}
		// A light entry outlives its batch without keeping the batch's
		// column buffers.
		if unsafe.StringData(light.Episode) == unsafe.StringData(b.Episodes[i]) ||
			unsafe.StringData(light.DataFile) == unsafe.StringData(b.Locations.DataFiles[i]) {
			t.Fatalf("entry %d: the light entry's strings are the batch's", i)
		}
	}
}

// TestProjectionOfUnknownColumns: statistics asked of columns the
// manifest has none of are unknown, when no statistics column is read at
// all too.
func TestProjectionOfUnknownColumns(t *testing.T) {
	r, _, _, want := encoded(t, 30)
	for _, proj := range []Projection{{Stats: []string{"nosuch"}}, {Stats: []string{"nosuch"}, Locations: true}} {
		b, err := r.Read(context.Background(), proj)
		if err != nil {
			t.Fatalf("%+v: %v", proj, err)
		}
		if b.Len != len(want) || slices.Contains(b.Stats["nosuch"].Known, true) {
			t.Errorf("%+v: %d entries, known %v", proj, b.Len, b.Stats["nosuch"].Known)
		}
	}
}

// TestSummary: a summary bounds what its manifest holds, and is unknown
// for a column some entry has no statistics of.
func TestSummary(t *testing.T) {
	entries := testEntries(40)[1:13] // entries 1..12: all have statistics; 7 lacks label's
	_, sum, err := Encode(testLayout, entries)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, e := range entries {
		rows += e.Rows
	}
	if sum.Rows != rows || sum.Episodes != 12 {
		t.Errorf("rows %d episodes %d, want %d 12", sum.Rows, sum.Episodes, rows)
	}
	if p := sum.Partitions["shift"]; p.Min.Int != -1 || p.Max.Int != 2 || p.Min.Kind != KindInt {
		t.Errorf("shift range %+v", p)
	}
	if p := sum.Partitions["task"]; p.Min.Str != "pick" || p.Max.Str != "stack" {
		t.Errorf("task range %+v", p)
	}
	if s, ok := sum.Stats["speed"]; !ok || !s.HasRange || s.Min.Float != 0.25 || s.Max.Float != 3+2.5 {
		t.Errorf("speed %+v %v", s, ok)
	}
	if _, ok := sum.Stats["label"]; ok {
		t.Error("label has statistics in the summary though entry 7 has none")
	}
	if s, ok := sum.Stats["count"]; !ok || s.HasRange || s.Nulls != rows {
		t.Errorf("count (all null): %+v %v", s, ok)
	}
	if s, ok := sum.Stats["state"]; !ok || s.HasRange || s.Nulls != 36 {
		t.Errorf("state (a list): %+v %v", s, ok)
	}
	if !sum.Covers(sum.EpisodeMin) || !sum.Covers(sum.EpisodeMax) || sum.Covers("ep9") || !sum.MayHoldPartition(testLayout, []string{"place", "0"}) ||
		sum.MayHoldPartition(testLayout, []string{"zzz"}) || sum.MayHoldPartition(testLayout, []string{"place", "7"}) ||
		sum.MayHoldPartition(testLayout, []string{"place", "x"}) {
		t.Errorf("covers/partitions wrong for %+v", sum)
	}
	// The list keeps it exactly.
	sum.Manifest = "manifest/m.parquet"
	other := sum
	other.Manifest, other.Stats = "manifest/n.parquet", nil
	data, err := EncodeList(testLayout, []Summary{sum, other})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeList(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []Summary{sum, other}) {
		t.Errorf("list reads as\n%+v\nwant\n%+v", got, []Summary{sum, other})
	}
}

// TestBadEntries: entries that cannot be written are refused, naming the
// episode.
func TestBadEntries(t *testing.T) {
	for name, mutate := range map[string]func(*Entry){
		"sha256":    func(e *Entry) { r := e.Videos["front"]; r.SHA256 = "XYZ"; e.Videos["front"] = r },
		"partition": func(e *Entry) { e.Partition["shift"] = "one" },
		"video":     func(e *Entry) { delete(e.Videos, "wrist") },
		"rows":      func(e *Entry) { e.Rows = -1 },
	} {
		entries := testEntries(3)
		mutate(&entries[1])
		if _, _, err := Encode(testLayout, entries); err == nil || !strings.Contains(err.Error(), entries[1].Episode) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := Encode(testLayout, nil); err == nil {
		t.Error("an empty manifest was written")
	}
}
