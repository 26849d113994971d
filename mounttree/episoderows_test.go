package mounttree

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/treetest"
	"github.com/framefs/framefs/table"
)

// trickyStrings are strings whose JSON has escapes: HTML characters, a
// literal backslash before "u003c", quotes, control and line separator
// characters, invalid UTF-8.
var trickyStrings = []string{
	"", "plain", "<b>&amp;</b>", `\u003c is not <`, `\\u003c`, `"q" \ /`, "tab\tnl\n", "\u2028\u2029",
	"caf\u00e9 \U0001F600", "\xff\xfe", "<\\>", "&&", `\`,
}

// TestUnescapeHTML: undoing the HTML escapes of json.Marshal gives what
// an encoder with SetEscapeHTML(false) writes.
func TestUnescapeHTML(t *testing.T) {
	strs := append([]string(nil), trickyStrings...)
	rng := rand.New(rand.NewSource(1))
	alphabet := []string{"<", ">", "&", `\`, "u", "0", "3", "c", `"`, "a", "\u2028", "\x00", "\xff"}
	for range 2000 {
		var b []byte
		for range rng.Intn(12) {
			b = append(b, alphabet[rng.Intn(len(alphabet))]...)
		}
		strs = append(strs, string(b))
	}
	for _, s := range strs {
		v := map[string]any{"s": s, "l": []any{s, 1.5}, "k" + s: true}
		escaped, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(v)
		if got := unescapeHTML(escaped); !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Errorf("%q:\n got %s\nwant %s", s, got, want.Bytes())
		}
	}
}

// TestEpisodeRowsCompact: the compact rows give each row's xattrs and
// frames.jsonl line byte for byte as the decoded rows did, for values of
// every column type.
func TestEpisodeRowsCompact(t *testing.T) {
	ts := time.Date(2024, 5, 1, 12, 0, 0, 500_000_000, time.UTC)
	var rows []table.Row
	for i, s := range trickyStrings {
		rows = append(rows, table.Row{
			"episode_id": "ep<1>", "note": s, "names": []any{s, "x"}, "ts": ts.Add(time.Duration(i) * time.Microsecond),
			"f32": 0.1, "f64": 1e-7 * float64(i), "big": int64(9007199254740993) + int64(i), "flag": i%2 == 0,
			"opt": nil, "vec": []any{float64(i), 1.5}, "video": table.FrameRef{Pack: "packs/a&b.mp4", Offset: 7, Length: 9, Frame: int64(i)},
			table.RowIDColumn: int64(100 + i), table.FrameColumn: int64(i),
		})
	}
	r, err := newEpisodeRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	var jsonl bytes.Buffer
	enc := json.NewEncoder(&jsonl)
	for i, row := range rows {
		enc.Encode(row)
		got, err := r.xattrs("ep", int64(i))
		if err != nil {
			t.Fatal(err)
		}
		want := treetest.RowXattrs(row)
		if len(got) != len(want) {
			t.Errorf("row %d: %d xattrs, want %d", i, len(got), len(want))
		}
		for k, w := range want {
			if !bytes.Equal(got[k], w) {
				t.Errorf("row %d %s: %q, want %q", i, k, got[k], w)
			}
		}
	}
	if !bytes.Equal(r.jsonl, jsonl.Bytes()) {
		t.Errorf("frames.jsonl differs:\n%s\nwant\n%s", r.jsonl, jsonl.Bytes())
	}
	// clip.json's rows: as an encoder without HTML escaping, indenting,
	// wrote the decoded rows.
	render := func(rows any) []byte {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", " ")
		if err := enc.Encode(map[string]any{"rows": rows}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	var raws []json.RawMessage
	for i := range rows {
		raws = append(raws, r.unescapedRow(int64(i)))
	}
	if got, want := render(raws), render(rows); !bytes.Equal(got, want) {
		t.Errorf("clip rows differ:\n%s\nwant\n%s", got, want)
	}
	sub, err := r.jsonlOf("ep", []int64{2, 5})
	if err != nil || !bytes.Equal(sub, append(append([]byte(nil), r.line(2)...), r.line(5)...)) {
		t.Errorf("jsonlOf: %s %v", sub, err)
	}
	for _, bad := range []int64{-1, r.len()} {
		if _, err := r.xattrs("ep", bad); err == nil {
			t.Errorf("xattrs of row %d: no error", bad)
		}
		if _, err := r.jsonlOf("ep", []int64{bad}); err == nil {
			t.Errorf("jsonlOf row %d: no error", bad)
		}
	}
	if want := int64(len(jsonl.Bytes())); r.bytes() < want || r.bytes() > want+8*r.len()+1024 {
		t.Errorf("bytes() = %d for %d bytes of JSON and %d rows", r.bytes(), want, r.len())
	}
}

// TestEpisodeRowsUnencodable: values JSON cannot write (NaN, infinities,
// a time past year 9999) show as null in the row's JSON and have no
// xattr, and the episode's other values are served as usual.
func TestEpisodeRowsUnencodable(t *testing.T) {
	rows := []table.Row{
		{"f": math.NaN(), "l": []any{1.5, math.Inf(1)}, "ts": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "s": "ok"},
		{"f": 2.5, "l": []any{1.5}, "ts": time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), "s": "fine"},
	}
	r, err := newEpisodeRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(r.line(0)), `{"f":null,"l":[1.5,null],"s":"ok","ts":null}`+"\n"; got != want {
		t.Errorf("row 0: %s, want %s", got, want)
	}
	x, err := r.xattrs("ep", 0)
	if err != nil || len(x) != 2 || string(x["user.l"]) != "[1.5,null]" || string(x["user.s"]) != "ok" {
		t.Errorf("row 0 xattrs: %q %v", x, err)
	}
	x, err = r.xattrs("ep", 1)
	if err != nil || string(x["user.f"]) != "2.5" || string(x["user.ts"]) != `"2024-01-01T00:00:00Z"` {
		t.Errorf("row 1 xattrs: %q %v", x, err)
	}
}
