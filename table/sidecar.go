package table

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/framefs/framefs/internal/timestamp"
)

// SidecarExtensions are the metadata file types ParseSidecar reads.
var SidecarExtensions = []string{".jsonl", ".json", ".csv", ".parquet"}

// maxSidecarRows bounds a sidecar: more rows than any video could have
// frames is a mistake, not data.
const maxSidecarRows = 50_000_000

// Sidecar is the metadata of one episode as read from its file, before it
// is checked against a schema.
type Sidecar struct {
	// Name is the file name, for messages.
	Name string
	// Episode holds fields that apply to every row (the "episode" object
	// of the JSON form), merged into each row by Rows.
	Episode map[string]any
	// Frames holds one object per frame row, in order.
	Frames []map[string]any
}

// ParseSidecar reads a sidecar; its format follows the extension of name.
// data is the whole file (sidecars hold metadata, not media).
func ParseSidecar(name string, data []byte) (*Sidecar, error) {
	sc := &Sidecar{Name: name}
	var err error
	switch ext := strings.ToLower(filepath.Ext(name)); ext {
	case ".jsonl":
		err = sc.parseJSONL(data)
	case ".json":
		err = sc.parseJSON(data)
	case ".csv":
		err = sc.parseCSV(data)
	case ".parquet":
		err = sc.parseParquet(data)
	default:
		return nil, fmt.Errorf("%w: %s: unknown sidecar type %q (use %s)", ErrInvalidInput, name, ext, strings.Join(SidecarExtensions, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidInput, name, err)
	}
	if len(sc.Frames) > maxSidecarRows {
		return nil, fmt.Errorf("%w: %s: %d rows is more than %d", ErrInvalidInput, name, len(sc.Frames), maxSidecarRows)
	}
	return sc, nil
}

func decodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	if obj == nil {
		return nil, errors.New("not a JSON object")
	}
	return obj, nil
}

func (sc *Sidecar) parseJSONL(data []byte) error {
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(make([]byte, 0, 64<<10), 64<<20)
	line := 0
	for s.Scan() {
		line++
		text := bytes.TrimSpace(s.Bytes())
		if len(text) == 0 {
			continue
		}
		obj, err := decodeObject(text)
		if err != nil {
			return fmt.Errorf("line %d: %v", line, err)
		}
		sc.Frames = append(sc.Frames, obj)
	}
	return s.Err()
}

func (sc *Sidecar) parseJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	frames := v
	if obj, ok := v.(map[string]any); ok {
		for k := range obj {
			if k != "episode" && k != "frames" {
				return fmt.Errorf(`unknown key %q: want {"episode": {...}, "frames": [...]} or an array of frames`, k)
			}
		}
		if ep, ok := obj["episode"]; ok {
			if sc.Episode, ok = ep.(map[string]any); !ok {
				return errors.New(`"episode" is not an object`)
			}
		}
		frames = obj["frames"]
	}
	list, ok := frames.([]any)
	if !ok {
		return errors.New(`want an array of frame objects (or {"episode": {...}, "frames": [...]})`)
	}
	for i, f := range list {
		obj, ok := f.(map[string]any)
		if !ok {
			return fmt.Errorf("frame %d is not an object", i)
		}
		sc.Frames = append(sc.Frames, obj)
	}
	return nil
}

// parseCSV reads a header line and one frame per line. An empty field is
// null (left out of the frame); the others are csvText, typed later by the
// schema.
func (sc *Sidecar) parseCSV(data []byte) error {
	r := csv.NewReader(bytes.NewReader(data))
	r.ReuseRecord = false
	header, err := r.Read()
	if err != nil {
		if err == io.EOF {
			return errors.New("empty CSV (want a header line)")
		}
		return err
	}
	for i, h := range header {
		header[i] = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		obj := make(map[string]any, len(header))
		for i, v := range rec {
			if v != "" {
				obj[header[i]] = csvText(v)
			}
		}
		sc.Frames = append(sc.Frames, obj)
	}
}

// csvText marks a value that came from CSV text: it converts to any
// scalar type by parsing.
type csvText string

func (sc *Sidecar) parseParquet(data []byte) error {
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return err
	}
	defer tbl.Release()
	n := int(tbl.NumRows())
	if n > maxSidecarRows {
		return fmt.Errorf("%d rows is more than %d", n, maxSidecarRows)
	}
	sc.Frames = make([]map[string]any, n)
	for i := range sc.Frames {
		sc.Frames[i] = map[string]any{}
	}
	for c := 0; c < int(tbl.NumCols()); c++ {
		name := tbl.Schema().Field(c).Name
		i := 0
		for _, chunk := range tbl.Column(c).Data().Chunks() {
			for k := 0; k < chunk.Len(); k++ {
				if v := RowValue(chunk, k); v != nil {
					sc.Frames[i][name] = v
				}
				i++
			}
		}
	}
	return nil
}

// EpisodeID returns the episode id the sidecar names in the episode
// column (in its episode object or consistently in every frame), or "".
func (sc *Sidecar) EpisodeID(s *Schema) (string, error) {
	id := ""
	take := func(v any, where string) error {
		str, err := convertValue("string", v)
		if err != nil {
			return fmt.Errorf("%w: %s: %s %q: %v", ErrInvalidInput, sc.Name, where, s.EpisodeColumn, err)
		}
		if id != "" && str != id {
			return fmt.Errorf("%w: %s: %s names episode %q, earlier rows %q; one sidecar holds one episode", ErrInvalidInput, sc.Name, where, str, id)
		}
		id = str.(string)
		return nil
	}
	if v, ok := sc.Episode[s.EpisodeColumn]; ok && v != nil {
		if err := take(v, "episode object, column"); err != nil {
			return "", err
		}
	}
	for i, f := range sc.Frames {
		if v, ok := f[s.EpisodeColumn]; ok && v != nil {
			if err := take(v, fmt.Sprintf("row %d, column", i+1)); err != nil {
				return "", err
			}
		}
	}
	return id, nil
}

// Rows converts the sidecar to typed rows of schema s. Every error names
// the file, the row (1-based) and the column.
func (sc *Sidecar) Rows(s *Schema) ([]Row, error) {
	known := map[string]bool{s.EpisodeColumn: true}
	for _, c := range s.Columns {
		known[c.Name] = true
	}
	check := func(obj map[string]any, where string) error {
		for k := range obj {
			if s.IsVideoColumn(k) {
				return fmt.Errorf("%w: %s: %s sets video column %q; videos come from video files, not sidecars", ErrInvalidInput, sc.Name, where, k)
			}
			if k == FrameColumn && s.HasFrameColumn() {
				return fmt.Errorf("%w: %s: %s sets %q, which is reserved: it is each row's position in its episode (0, 1, ...), which framefs knows without a sidecar; rename the column (e.g. frame_index) or leave it out",
					ErrInvalidInput, sc.Name, where, k)
			}
			if !known[k] {
				return fmt.Errorf("%w: %s: %s has unknown column %q (the schema has %s; add it with --allow-new-columns)",
					ErrInvalidInput, sc.Name, where, k, columnList(s))
			}
		}
		return nil
	}
	if err := check(sc.Episode, "the episode object"); err != nil {
		return nil, err
	}
	rows := make([]Row, len(sc.Frames))
	for i, f := range sc.Frames {
		where := fmt.Sprintf("row %d", i+1)
		if err := check(f, where); err != nil {
			return nil, err
		}
		row := make(Row, len(s.Columns))
		for _, c := range s.Columns {
			v, ok := f[c.Name]
			if !ok {
				v = sc.Episode[c.Name]
			}
			if v == nil {
				if !c.Nullable {
					return nil, fmt.Errorf("%w: %s: %s: column %q is missing and not nullable", ErrInvalidInput, sc.Name, where, c.Name)
				}
				row[c.Name] = nil
				continue
			}
			cv, err := convertValue(c.Type, v)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %s: column %q: %v", ErrInvalidInput, sc.Name, where, c.Name, err)
			}
			row[c.Name] = cv
		}
		rows[i] = row
	}
	return rows, nil
}

func columnList(s *Schema) string {
	names := []string{s.EpisodeColumn}
	for _, c := range s.Columns {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// convertValue converts a sidecar value (JSON, CSV text or Parquet) to the
// Row representation of type t.
func convertValue(t Type, v any) (any, error) {
	if elem, ok := t.Elem(); ok {
		if text, ok := v.(csvText); ok {
			dec := json.NewDecoder(strings.NewReader(string(text)))
			dec.UseNumber()
			var parsed any
			if err := dec.Decode(&parsed); err != nil {
				return nil, fmt.Errorf("want a JSON array for %s, have %q", t, text)
			}
			v = parsed
		}
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("want a list for %s, have %s", t, describe(v))
		}
		// Lists already in Row form (read from Parquet) are kept as they
		// are; a copy is made only when an element changes.
		var out []any
		for i, e := range list {
			if e == nil {
				return nil, fmt.Errorf("element %d is null", i)
			}
			ce, err := convertValue(elem, e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %v", i, err)
			}
			if out == nil && ce != e {
				out = make([]any, len(list))
				copy(out, list[:i])
			}
			if out != nil {
				out[i] = ce
			}
		}
		if out == nil {
			return list, nil
		}
		return out, nil
	}
	switch t {
	case "string":
		switch x := v.(type) {
		case string:
			return x, nil
		case csvText:
			return string(x), nil
		case json.Number:
			return x.String(), nil
		}
	case "bool":
		switch x := v.(type) {
		case bool:
			return x, nil
		case csvText:
			b, err := strconv.ParseBool(strings.TrimSpace(string(x)))
			if err == nil {
				return b, nil
			}
		}
	case "int32", "int64":
		var n int64
		var err error
		switch x := v.(type) {
		case json.Number:
			n, err = parseInt(x.String())
		case csvText:
			n, err = parseInt(strings.TrimSpace(string(x)))
		case int64:
			n = x
		case float64:
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return nil, fmt.Errorf("%v is not an integer", x)
			}
			n = int64(x)
		default:
			return nil, fmt.Errorf("want %s, have %s", t, describe(v))
		}
		if err != nil {
			return nil, err
		}
		if t == "int32" && (n < math.MinInt32 || n > math.MaxInt32) {
			return nil, fmt.Errorf("%d does not fit in int32", n)
		}
		return n, nil
	case "float32", "float64":
		switch x := v.(type) {
		case json.Number:
			return strconv.ParseFloat(x.String(), 64)
		case csvText:
			f, err := strconv.ParseFloat(strings.TrimSpace(string(x)), 64)
			if err != nil {
				return nil, fmt.Errorf("%q is not a number", x)
			}
			return f, nil
		case float64:
			return x, nil
		case int64:
			return float64(x), nil
		}
	case "timestamp":
		return convertTimestamp(v)
	}
	return nil, fmt.Errorf("want %s, have %s", t, describe(v))
}

// timestampForms says how a sidecar may give a timestamp, for messages.
const timestampForms = "a string such as \"2026-01-02 03:04:05\", \"2026-01-02T03:04:05.5Z\" or \"2026-01-02 04:04:05+01:00\" (UTC when no offset is given), or a number of seconds since 1970-01-01 UTC"

// convertTimestamp reads a timestamp: a string in the forms DuckDB reads
// for a TIMESTAMP WITH TIME ZONE, a number of Unix seconds (JSON, CSV,
// or an integer or float column of a Parquet sidecar; a fraction is kept
// to the microsecond), or a Parquet timestamp. A time outside years 1 to
// 9999 is refused, never wrapped: a milliseconds value read as seconds
// lands tens of thousands of years away.
func convertTimestamp(v any) (any, error) {
	switch x := v.(type) {
	case time.Time:
		// time.Time holds far more than microseconds do: check the year
		// before converting.
		if y := x.UTC().Year(); y < 1 || y > 9999 {
			return nil, fmt.Errorf("%s is outside years 1 to 9999", x.UTC().Format(time.RFC3339Nano))
		}
		return x.UTC().Truncate(time.Microsecond), nil
	case json.Number:
		return secondsTimestamp(x.String())
	case int64:
		return secondsTimestamp(strconv.FormatInt(x, 10))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%v is not a time; write %s", x, timestampForms)
		}
		return secondsTimestamp(strconv.FormatFloat(x, 'f', -1, 64))
	case csvText:
		text := strings.TrimSpace(string(x))
		if _, err := strconv.ParseFloat(text, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return secondsTimestamp(text)
		}
		v = string(x)
	}
	str, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("want a time (%s), have %s", timestampForms, describe(v))
	}
	us, err := timestamp.Parse(str)
	if err != nil {
		return nil, err
	}
	return time.UnixMicro(us).UTC(), nil
}

// secondsTimestamp reads a number of Unix seconds exactly (a decimal
// numeral; digits past the microsecond are dropped).
func secondsTimestamp(text string) (any, error) {
	tooFar := fmt.Errorf("%s seconds since 1970 is outside years 1 to 9999: a number is Unix seconds (divide milliseconds by 1000, microseconds by 1000000), or write %s",
		clipText(text), timestampForms)
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		// 1e999999999 would take gigabytes as an exact number.
		if exp, err := strconv.Atoi(text[i+1:]); err != nil || exp > 400 || exp < -400 {
			return nil, tooFar
		}
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok || strings.ContainsAny(text, "/xXpP") {
		return nil, fmt.Errorf("%s is not a number of seconds", clipText(text))
	}
	micros := new(big.Int).Quo(new(big.Int).Mul(r.Num(), big.NewInt(1e6)), r.Denom())
	if r.Sign() < 0 && new(big.Rat).SetInt(micros).Cmp(new(big.Rat).Mul(r, big.NewRat(1e6, 1))) != 0 {
		micros.Sub(micros, big.NewInt(1)) // floor: earlier instants stay earlier
	}
	lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro(), time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
	if !micros.IsInt64() || micros.Int64() < lo || micros.Int64() > hi {
		return nil, tooFar
	}
	return time.UnixMicro(micros.Int64()).UTC(), nil
}

// clipText shortens a value quoted in a message.
func clipText(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "..."
}

func parseInt(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return n, nil
	}
	f, ferr := strconv.ParseFloat(s, 64)
	if ferr == nil && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return int64(f), nil
	}
	return 0, fmt.Errorf("%s is not an integer", s)
}

func describe(v any) string {
	switch x := v.(type) {
	case json.Number:
		return "number " + x.String()
	case string:
		return fmt.Sprintf("string %q", x)
	case csvText:
		return fmt.Sprintf("text %q", string(x))
	case bool:
		return fmt.Sprintf("bool %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
