package mounttree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/framefs/framefs/table"
)

// episodeRows is an episode's rows as the catalog keeps them: their
// frames.jsonl encoding and where each line ends. Decoded rows
// ([]table.Row, a map per row) take about three times the memory of their
// JSON; a frame's xattrs or a clip's rows decode just the lines they need.
// It is immutable once built.
type episodeRows struct {
	// jsonl is frames.jsonl: row i is jsonl[start(i):ends[i]], one JSON
	// object (keys sorted, HTML characters escaped, as json.Encoder writes
	// a table.Row) and a newline.
	jsonl []byte
	ends  []int
	// stringColumns are the columns whose values are strings: their
	// xattr is the string itself, not its JSON.
	stringColumns map[string]bool
	// rawStrings holds the strings that are not valid UTF-8, by row and
	// column: JSON replaced their bad bytes, their xattrs keep them.
	rawStrings map[int64]map[string]string
}

// newEpisodeRows encodes rows.
func newEpisodeRows(rows []table.Row) (*episodeRows, error) {
	r := &episodeRows{ends: make([]int, len(rows)), stringColumns: map[string]bool{}}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i, row := range rows {
		if err := enc.Encode(row); err != nil {
			// An Encoder writes nothing of a value it fails on.
			if err := enc.Encode(encodable(row)); err != nil {
				return nil, fmt.Errorf("encode row %d: %w", i, err)
			}
		}
		r.ends[i] = b.Len()
		for k, v := range row {
			if s, ok := v.(string); ok {
				r.stringColumns[k] = true
				if !utf8.ValidString(s) {
					r.keepRaw(int64(i), k, s)
				}
			}
		}
	}
	r.jsonl = bytes.Clone(b.Bytes()) // without the buffer's spare capacity
	return r, nil
}

// encodable returns row with the values JSON has no way to write (NaN
// and infinite floats, times outside years 0-9999), in lists too, as
// null: frames.jsonl, clip.json and the xattrs all show them so.
func encodable(row table.Row) table.Row {
	out := make(table.Row, len(row))
	for k, v := range row {
		out[k] = encodableValue(v)
	}
	return out
}

func encodableValue(v any) any {
	if list, ok := v.([]any); ok {
		out := make([]any, len(list))
		for i, e := range list {
			out[i] = encodableValue(e)
		}
		return out
	}
	if _, err := json.Marshal(v); err != nil {
		return nil
	}
	return v
}

func (r *episodeRows) keepRaw(i int64, column, s string) {
	if r.rawStrings == nil {
		r.rawStrings = map[int64]map[string]string{}
	}
	if r.rawStrings[i] == nil {
		r.rawStrings[i] = map[string]string{}
	}
	r.rawStrings[i][column] = s
}

func (r *episodeRows) len() int64 { return int64(len(r.ends)) }

// bytes is the memory r holds, for the catalog's byte budget.
func (r *episodeRows) bytes() int64 {
	n := int64(len(r.jsonl)) + 8*int64(len(r.ends))
	for k := range r.stringColumns {
		n += int64(len(k)) + 32
	}
	for _, cols := range r.rawStrings {
		n += 64
		for k, s := range cols {
			n += int64(len(k)+len(s)) + 64
		}
	}
	return n
}

// line returns row i's JSON with its newline. i must be in range.
func (r *episodeRows) line(i int64) []byte {
	start := 0
	if i > 0 {
		start = r.ends[i-1]
	}
	return r.jsonl[start:r.ends[i]]
}

// check reports a row the episode does not have as corruption (a view or
// clip naming rows past the episode's end).
func (r *episodeRows) check(episode string, i int64) error {
	if i < 0 || i >= r.len() {
		return fmt.Errorf("%w: episode %q has no row %d (it has %d)", table.ErrCorrupt, episode, i, r.len())
	}
	return nil
}

// jsonlOf returns the frames.jsonl of the rows at ordinals.
func (r *episodeRows) jsonlOf(episode string, ordinals []int64) ([]byte, error) {
	var b []byte
	for _, i := range ordinals {
		if err := r.check(episode, i); err != nil {
			return nil, err
		}
		b = append(b, r.line(i)...)
	}
	return b, nil
}

// xattrs returns row i's columns as user.* extended attributes: a string
// as itself, any other value as its JSON, nulls left out.
func (r *episodeRows) xattrs(episode string, i int64) (map[string][]byte, error) {
	if err := r.check(episode, i); err != nil {
		return nil, err
	}
	var cols map[string]json.RawMessage
	if err := json.Unmarshal(r.line(i), &cols); err != nil {
		return nil, fmt.Errorf("episode %q row %d: %w", episode, i, err)
	}
	out := make(map[string][]byte, len(cols))
	for k, raw := range cols {
		if string(raw) == "null" {
			continue
		}
		v := []byte(raw)
		if s, ok := r.rawStrings[i][k]; ok {
			v = []byte(s)
		} else if r.stringColumns[k] {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("episode %q row %d column %q: %w", episode, i, k, err)
			}
			v = []byte(s)
		}
		out[UserXattrPrefix+k] = v
	}
	return out, nil
}

// unescapedRow returns row i's JSON (without its newline) with the HTML
// characters json.Encoder escapes by default (<, >, &) as themselves, as
// an encoder with SetEscapeHTML(false) writes them.
func (r *episodeRows) unescapedRow(i int64) json.RawMessage {
	return unescapeHTML(bytes.TrimSuffix(r.line(i), []byte("\n")))
}

// htmlEscapes are encoding/json's escapes of <, > and &.
var htmlEscapes = map[string]byte{`\u003c`: '<', `\u003e`: '>', `\u0026`: '&'}

// unescapeHTML undoes encoding/json's HTML escaping in the valid JSON
// src. Every backslash of valid JSON starts an escape inside a string, so
// walking escape by escape never mistakes an escaped backslash followed
// by "u003c" for an escape of <.
func unescapeHTML(src []byte) []byte {
	if !bytes.Contains(src, []byte(`\u00`)) {
		return src
	}
	out := make([]byte, 0, len(src))
	for i := 0; i < len(src); i++ {
		if src[i] != '\\' || i+1 >= len(src) {
			out = append(out, src[i])
			continue
		}
		if i+6 <= len(src) {
			if c, ok := htmlEscapes[string(src[i:i+6])]; ok {
				out = append(out, c)
				i += 5
				continue
			}
		}
		out = append(out, src[i], src[i+1])
		i++
	}
	return out
}
