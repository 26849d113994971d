package filter

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "episode_id", Type: arrow.BinaryTypes.String},
	{Name: "task", Type: arrow.BinaryTypes.String},
	{Name: "speed", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "gear", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "state", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
	{Name: "Mixed Case", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ filter, want string }{
		{"", "empty"},
		{"   ", "empty"},
		{"spd > 3", `unknown column "spd" (did you mean "speed"?)`},
		{"nope = 1", `unknown column "nope"; the columns are`},
		{"speed = 'fast'", `cannot compare speed (DOUBLE) with 'fast': cannot cast "fast" to DOUBLE: not a number`},
		{"task > 3", "cannot order task (VARCHAR) against 3 (INTEGER); cast one of them: CAST(task AS INTEGER)"},
		{"task = 'abc", "unterminated string"},
		{`"task = 'a'`, "unterminated quoted name"},
		{"1=1; DROP TABLE x", "one condition"},
		{"speed > 1 ORDER BY speed", "one condition"},
		{"speed > 1 UNION SELECT * FROM y", "one condition"},
		{"speed > (SELECT 1)", "subqueries"},
		{"speed IN (SELECT 1)", "subqueries"},
		{"EXISTS (SELECT 1)", "subqueries"},
		{"speed > 1 > 0", "cannot follow another comparison of its kind without parentheses: write (speed > 1) > ..."},
		{"speed ^ 2 > 1", "the power operator ^ is not supported"},
		{"speed -> 1", "operator -> is not supported"},
		{"regexp_matches(task, 'a')", "function regexp_matches is not supported in filters; the functions are abs, lower"},
		{"CASE WHEN flag THEN 1 END = 1", "CASE is not supported"},
		{"ts > TIMESTAMP '2026-01-02' - INTERVAL 1 DAY", "INTERVAL is not supported"},
		{"task SIMILAR TO 'a'", "SIMILAR is not supported in filters; match patterns with LIKE or ILIKE"},
		{"task GLOB 'a*'", "GLOB is not supported"},
		{"CAST(speed AS SMALLINT) = 1", "type SMALLINT is not supported in filters; the types are BOOLEAN, INTEGER"},
		{"CAST(ts AS INTEGER) = 1", "does not cast to INTEGER"},
		{"speed = ANY([1])", "ANY (...) is not supported"},
		{"speed > ?", "placeholders such as ? are not supported"},
		{"(speed, gear) = (1, 2)", "row values"},
		{"count(*) > 1", "aggregate calls"},
		{"flag + 1 > 0", "flag is BOOLEAN, and + takes numbers; CAST(flag AS INTEGER) makes it one"},
		{"ts + 1 > 0", "arithmetic on timestamps is not supported"},
		{"state > 1", "cannot compare state (FLOAT[]) with 1 (INTEGER)"},
		{"state", "state is FLOAT[], not a condition"},
		{"ts", "not a condition"},
		{"task LIKE gear", "LIKE takes a constant 'pattern' string; gear is not one"},
		{"speed LIKE 'a%'", "LIKE matches strings; speed is DOUBLE"},
		{"task LIKE 'a' ESCAPE 'ab'", "ESCAPE takes one character"},
		{"task LIKE 'a\\' ESCAPE '\\'", "ends with its escape character"},
		{"ts > TIMESTAMP 'yesterday'", "not a timestamp"},
		{"ts > TIMESTAMP '2026-01-02 04:00:00+01:00'", "a TIMESTAMP has no time zone, so its offset would be ignored; write TIMESTAMPTZ '2026-01-02 04:00:00+01:00'"},
		{"ts > '2026-01-02 04:00:00 +01:00'", "write the offset right after the time, without a space"},
		{"ts > '2026-01-02 04:00:00 Europe/Paris'", "time zone \"Europe/Paris\" is not supported"},
		{"ts > TIME '04:00'", "TIME literals are not supported"},
		{"t.speed > 1", "without a table name"},
		{"speed >", "incomplete"},
		{"speed > > 1", "syntax error at line 1, column"},
		{"speed = 1 AND", "incomplete"},
		{strings.Repeat("(", 300) + "speed > 1" + strings.Repeat(")", 300), "nests more than"},
		{"speed > 1 OR " + strings.Repeat("speed > 1 OR ", MaxLength/10) + "speed > 1", "bytes long"},
		{"list_extract(state, 'a') > 1", "integer position"},
		{"len(speed) > 1", "length takes a string or a list; speed is DOUBLE"},
		{"list_contains(task, 'a')", "list_contains takes a list first; task is VARCHAR"},
		{"list_contains(state, 'a')", "cannot cast \"a\" to FLOAT"},
		{"abs(task) > 1", "abs takes a number; task is VARCHAR"},
		{"upper(speed) = 'A'", "upper takes a string; speed is DOUBLE"},
		{"state || 'a' = 'b'", "|| joins two lists or two strings"},
		{"CAST(speed AS DECIMAL(40, 2)) = 1", "DECIMAL(40, 2): the width is 1 to 38 digits"},
		{"speed = 0x10", "hexadecimal and binary numbers are not supported"},
		{"speed = 1e999", "out of range"},
		{"gear = 'abc'", `cannot cast "abc" to INTEGER`},
		{"speed[1] = 1", "list_extract takes a list; speed is DOUBLE"},
	} {
		_, err := Compile(tc.filter, testSchema)
		if err == nil {
			t.Errorf("%.60q: compiled", tc.filter)
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60q: error %q, want it to contain %q", tc.filter, err, tc.want)
		}
	}
}

func TestCompileColumns(t *testing.T) {
	f, err := Compile(`"Mixed Case" > 1 AND SPEED > 2 OR mixed_case_not_here IS NULL`, testSchema)
	if err == nil {
		t.Fatalf("compiled %v", f)
	}
	f, err = Compile(`"Mixed Case" > 1 AND SPEED > 2 OR task IS NULL`, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Columns(), ","); got != "Mixed Case,speed,task" {
		t.Errorf("columns %s", got)
	}
}

// rows is a small set of rows for evaluation tests.
type rows struct {
	n    int
	cols map[string]arrow.Array
}

func (r rows) column(name string) arrow.Array { return r.cols[name] }

func randomRows(rng *rand.Rand, n int, constant bool) rows {
	mem := memory.DefaultAllocator
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	tasks := []string{"pick", "place", "push", "pi_ck", "Pick"}
	ep := fmt.Sprintf("ep%d", rng.IntN(5))
	task := tasks[rng.IntN(len(tasks))]
	for i := 0; i < n; i++ {
		b.Field(0).(*array.StringBuilder).Append(ep)
		if !constant {
			task = tasks[rng.IntN(len(tasks))]
		}
		b.Field(1).(*array.StringBuilder).Append(task)
		switch rng.IntN(16) {
		case 0, 1:
			b.Field(2).AppendNull()
		case 2:
			b.Field(2).(*array.Float64Builder).Append(math.NaN())
		default:
			b.Field(2).(*array.Float64Builder).Append(float64(rng.IntN(200)) / 2)
		}
		if rng.IntN(8) == 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Int32Builder).Append(int32(rng.IntN(7) - 1))
		}
		if rng.IntN(8) == 0 {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		}
		if rng.IntN(8) == 0 {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 1, 2, 3, 4, rng.IntN(60), 0, time.UTC).UnixMicro()))
		}
		lb := b.Field(6).(*array.ListBuilder)
		if rng.IntN(8) == 0 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for k := rng.IntN(4); k > 0; k-- {
				lb.ValueBuilder().(*array.Float32Builder).Append(float32(rng.IntN(6)) / 2)
			}
		}
		switch rng.IntN(10) {
		case 0:
			b.Field(7).(*array.Int64Builder).Append(math.MaxInt64 - int64(rng.IntN(3)))
		case 1:
			b.Field(7).(*array.Int64Builder).Append(math.MinInt64)
		default:
			b.Field(7).(*array.Int64Builder).Append(int64(rng.IntN(10)))
		}
	}
	rec := b.NewRecordBatch()
	out := rows{n: n, cols: map[string]arrow.Array{}}
	for i, f := range testSchema.Fields() {
		out.cols[f.Name] = rec.Column(i)
	}
	return out
}

// statsOf computes exact statistics of rows, as a manifest would hold.
func statsOf(r rows) StatsFunc {
	return func(name string) (ColumnStats, bool) {
		a := r.cols[name]
		if a == nil {
			return ColumnStats{}, false
		}
		t, _ := typeOfArrow(a.DataType())
		s := ColumnStats{Nulls: int64(a.NullN()), Rows: int64(a.Len())}
		if t.id == tList {
			return s, true
		}
		v, _ := arrayVec(a, t)
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				continue
			}
			var x Value
			switch t.kind() {
			case KindBool:
				x = Bool(v.tri[i] == triT)
			case KindInt:
				x = Int(v.ints[i])
			case KindTimestamp:
				x = TimestampMicros(v.ints[i])
			case KindFloat:
				x = Float(v.flts[i])
			case KindString:
				x = String(v.strs[i])
			}
			if !s.HasRange || compareValues(x, s.Min) < 0 {
				s.Min = x
			}
			if !s.HasRange || compareValues(x, s.Max) > 0 {
				s.Max = x
			}
			s.HasRange = true
		}
		return s, true
	}
}

// countMatches evaluates f over r and counts the matching rows; a row
// that fails the filter is an *EvalError.
func countMatches(f *Filter, r rows) (int, error) {
	out := make([]bool, r.n)
	return f.EvalInto(r.n, r.column, out)
}

var propertyFilters = []string{
	"speed >= 50", "speed < 10 OR speed > 90", "speed = 40.5", "speed != 40.5", "speed BETWEEN 20 AND 30",
	"speed NOT BETWEEN 20 AND 30", "gear IN (1, 2)", "gear NOT IN (1, NULL)", "gear IN (0, NULL)", "gear IS NULL",
	"NOT (gear > 2)", "flag", "NOT flag", "flag IS NOT TRUE", "flag = FALSE", "task = 'pick'", "task LIKE 'pi%'",
	"task LIKE 'pi_ck'", "task NOT LIKE '%ck'", "task LIKE 'pi\\_%' ESCAPE '\\'", "task IN ('place', 'push')",
	"ts >= TIMESTAMP '2026-01-02 03:04:30'", "ts < '2026-01-02 03:04:10'", "episode_id = 'ep1'",
	"episode_id > 'ep2' AND speed > 20", "len(state) >= 2", "list_contains(state, 1.5)", "list_extract(state, 1) > 1",
	"list_extract(state, -1) = 0", "state IS NULL", "\"Mixed Case\" = 3 OR gear = 3", "speed > gear",
	"task = 'pick' AND (speed > 50 OR gear IS NULL)", "NOT (task = 'pick' OR flag)", "speed = NULL", "NULL IS NULL",
	"(flag OR gear > 1) IS FALSE", "TRUE", "FALSE OR speed > 99",
	// boolean values, arithmetic, casts, functions
	"(gear > 2) = TRUE", "(gear > 2) = flag", "flag = (speed > 50)", "(gear > 2) IN (TRUE)", "((gear > 2) = TRUE) IS NULL",
	"NOT ((gear > 2) = TRUE)", "(gear > 2) = NOT (gear <= 2)", "gear * 2 + 1 > 5", "gear % 3 = 0", "-gear > 1",
	"gear + \"Mixed Case\" > 8", "speed / 2 > 20", "speed * 10 = gear", "gear - 1 = 2", "2 - gear < 0", "gear * -2 >= -4",
	"gear * 2 = 5", "gear // 2 = 1", "abs(gear) = 1", "abs(speed - 50) < 10", "gear + 0.5 > 2", "gear * 0.1 = 0.3",
	"\"Mixed Case\" * 9223372036854775807 > 0", "\"Mixed Case\" + 9223372036854775800 > 0", "-\"Mixed Case\" < 0",
	"CAST(gear AS BIGINT) = 2", "CAST(speed AS INTEGER) = 40", "gear::VARCHAR = '2'", "CAST(flag AS INTEGER) = 1",
	"flag = 1", "gear = '2'", "lower(task) = 'pick'", "upper(task) LIKE 'PI%'", "task ILIKE 'PI%'", "length(task) = 4",
	"task || episode_id LIKE 'pick%'", "coalesce(gear, 0) = 0", "coalesce(speed, gear) > 50", "gear IN (\"Mixed Case\", 2)",
	"gear IS DISTINCT FROM 2", "gear IS NOT DISTINCT FROM NULL", "state = [0.5]", "state[1] > 1", "len(state) = 0",
	"ts::DATE = DATE '2026-01-02'", "CAST(ts AS VARCHAR) LIKE '2026-01-02 03:04:1%'", "NULL", "gear > 2 OR NULL",
	"gear > 2 AND NULL", "NOT (gear > 2 AND NULL)",
}

// TestPruneAgreesWithEval checks that statistics never contradict
// evaluation: None means no row matches, All that every row does.
func TestPruneAgreesWithEval(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, text := range propertyFilters {
		f, err := Compile(text, testSchema)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		decisions := map[Decision]int{}
		failures := 0
		for round := 0; round < 300; round++ {
			r := randomRows(rng, 1+rng.IntN(6), round%2 == 0)
			matches, err := countMatches(f, r)
			d := f.Prune(statsOf(r))
			decisions[d]++
			if err != nil {
				failures++
				var ee *EvalError
				if !errors.As(err, &ee) || !errors.Is(err, ErrValue) {
					t.Fatalf("%s: %v", text, err)
				}
				if d != Some {
					t.Fatalf("%s: statistics say %s, evaluation fails: %v", text, d, err)
				}
				continue
			}
			if d == None && matches > 0 || d == All && matches != r.n {
				t.Fatalf("%s: statistics say %s, evaluation matched %d of %d rows", text, d, matches, r.n)
			}
		}
		t.Logf("%-50s %v, %d failed", text, decisions, failures)
	}
}

func TestLike(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		escape  rune
		s       string
		want    bool
	}{
		{"abc", -1, "abc", true}, {"abc", -1, "abcd", false}, {"", -1, "", true}, {"", -1, "a", false},
		{"a%", -1, "abc", true}, {"a%", -1, "ba", false}, {"%c", -1, "abc", true}, {"%b%", -1, "abc", true},
		{"%", -1, "", true}, {"_", -1, "é", true}, {"_", -1, "ab", false}, {"a_c", -1, "abc", true},
		{"a%c%e", -1, "abcde", true}, {"a%c%e", -1, "abcdf", false}, {"%a%a", -1, "aXa", true},
		{"a\\%", '\\', "a%", true}, {"a\\%", '\\', "ab", false}, {"a\\%%", '\\', "a%bc", true},
		{"%_b", -1, "ab", true}, {"%_b", -1, "b", false}, {"a%%b", -1, "ab", true}, {"ab%ab", -1, "ab", false},
	} {
		m, err := compileLike(tc.pattern, tc.escape)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.match(tc.s); got != tc.want {
			t.Errorf("%q LIKE %q = %v, want %v", tc.s, tc.pattern, got, tc.want)
		}
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range propertyFilters {
		f.Add(s)
	}
	for _, s := range []string{"1=1; DROP TABLE x", "task LIKE '%\\%' ESCAPE '\\'", "gear > 5 = flag", "[1, NULL] < [1, 2]",
		"CAST('2026-01-02 04:00+01:00' AS TIMESTAMPTZ) < ts", "TRY_CAST(task AS DECIMAL(4, 1)) IS NULL", "(((gear)))::DOUBLE // 0",
		"coalesce(NULL, state, [1.5]) || [2] = [1.5, 2]", "0.1 + 0.2 = 0.3 AND 2147483647 + 1 > 0", "-- comment\n gear /* x */ > 1"} {
		f.Add(s)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	r := randomRows(rng, 20, false)
	f.Fuzz(func(t *testing.T, text string) {
		flt, err := Compile(text, testSchema)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: error without ErrInvalid: %v", text, err)
			}
			return
		}
		matches, err := countMatches(flt, r)
		d := flt.Prune(statsOf(r))
		if err != nil {
			if !errors.Is(err, ErrValue) || d != Some {
				t.Fatalf("%q: statistics say %s, evaluation: %v", text, d, err)
			}
			return
		}
		if d == None && matches > 0 || d == All && matches != r.n {
			t.Fatalf("%q: statistics say %s, evaluation matched %d of %d rows", text, d, matches, r.n)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	const text = "ego_speed_kmh >= 60 AND task IN ('pick', 'place') AND ts >= TIMESTAMP '2026-01-02 03:04:05' AND label LIKE 'c%'"
	for i := 0; i < b.N; i++ {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEval evaluates a filter over 64K-row batches (rows/s is what
// a scan of Parquet row groups gets once the columns are decoded).
func BenchmarkEval(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	r := randomRows(rng, 64<<10, false)
	f, err := Compile("speed >= 50 AND (task = 'pick' OR gear IN (1, 2)) AND flag IS NOT NULL", testSchema)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]bool, r.n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.EvalInto(r.n, r.column, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(r.n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
}
