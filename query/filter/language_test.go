package filter

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fixedRows are six rows with every kind of NULL, for tests whose answers
// are worked out by hand: gear, flag, big.
//
//	row  gear  flag   big
//	0    1     true   0
//	1    6     false  MaxInt64
//	2    NULL  true   MinInt64
//	3    6     NULL   NULL
//	4    -2    false  5
//	5    NULL  NULL   -5
func fixedRows() rows {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "gear", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "big", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 6, 0, 6, -2, 0}, []bool{true, true, false, true, true, false})
	b.Field(1).(*array.BooleanBuilder).AppendValues([]bool{true, false, true, false, false, false}, []bool{true, true, true, false, true, false})
	b.Field(2).(*array.Int64Builder).AppendValues([]int64{0, math.MaxInt64, math.MinInt64, 0, 5, -5}, []bool{true, true, true, false, true, true})
	rec := b.NewRecordBatch()
	out := rows{n: 6, cols: map[string]arrow.Array{}}
	for i, f := range schema.Fields() {
		out.cols[f.Name] = rec.Column(i)
	}
	return out
}

// matching returns the rows a filter matches, or its error.
func matching(t *testing.T, text string, r rows) (string, error) {
	t.Helper()
	f, err := Compile(text, arrow.NewSchema([]arrow.Field{
		{Name: "gear", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "big", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil))
	if err != nil {
		return "", err
	}
	match, err := f.Eval(r.n, r.column)
	if err != nil {
		return "", err
	}
	var out []string
	for i, m := range match {
		if m {
			out = append(out, fmt.Sprint(i))
		}
	}
	return strings.Join(out, ","), nil
}

// TestThreeValuedLogic checks boolean expressions as values, by hand.
func TestThreeValuedLogic(t *testing.T) {
	r := fixedRows()
	for _, tc := range []struct{ filter, want string }{
		{"gear > 5", "1,3"},
		{"(gear > 5) = TRUE", "1,3"},
		{"(gear > 5) = FALSE", "0,4"},
		{"((gear > 5) = TRUE) IS NULL", "2,5"},
		{"(gear > 5) = flag", "4"},
		{"flag = (gear > 5)", "4"},
		{"(gear > 5) IN (TRUE)", "1,3"},
		{"(gear > 5) IN (FALSE, NULL)", "0,4"},
		{"(gear > 5) = NOT (gear <= 5)", "0,1,3,4"},
		{"NOT ((gear > 5) = TRUE)", "0,4"},
		{"(gear > 5) IS NOT DISTINCT FROM flag", "4,5"},
		{"(gear > 5) < flag", "0"},
		{"flag IS NULL = TRUE", "3,5"},
		{"gear IN (6, NULL)", "1,3"},
		{"gear NOT IN (6, NULL)", ""},
		{"NULL", ""},
		{"flag OR NULL", "0,2"},
		{"NOT (flag AND NULL)", "1,4"},
		{"gear BETWEEN 0 AND 5 = TRUE", "0"},
	} {
		got, err := matching(t, tc.filter, r)
		if err != nil || got != tc.want {
			t.Errorf("%s: rows %q (%v), want %q", tc.filter, got, err, tc.want)
		}
	}
}

// TestValueErrors checks that a value that cannot be computed fails the
// filter exactly where a row's outcome depends on it.
func TestValueErrors(t *testing.T) {
	r := fixedRows()
	for _, tc := range []struct {
		filter string
		want   string // rows, or the error
	}{
		{"big + 1 > 0", "0,1,4"}, // big > -1: nothing to overflow
		{"big + big > 0", "error: integer overflow: 9223372036854775807 + 9223372036854775807"},
		{"big < 0 OR big + big > 0", "error: integer overflow"}, // row 1: FALSE OR overflow
		{"big < 10 AND big + big > 0", "error: integer overflow: -9223372036854775808 + -9223372036854775808"},
		{"big > 100 AND big + big > 0", "error: integer overflow"},
		{"big BETWEEN -10 AND 10 AND big * 2 > 0", "4"},
		{"(big BETWEEN -10 AND 10) = TRUE AND abs(big) > 0", "4,5"},
		{"gear > 5 AND -big > 0", ""}, // the smallest big is in row 2, where gear is NULL
		{"flag AND -big > 0", "error: integer overflow: -(-9223372036854775808) does not fit in BIGINT"},
		{"flag AND NULL AND -big > 0", ""}, // NULL AND x needs no x where rows are selected
		{"NOT (flag AND NULL AND -big > 0)", "error: integer overflow"},
		{"big IN (0, 5) OR big * 2 = 14", "0,4"}, // big = 7
		{"coalesce(big, 0) > 0 OR big * 3 > 1", "error: integer overflow: -9223372036854775808 * 3"},
		{"TRY_CAST(big AS INTEGER) IS NULL", "1,2,3"},
		{"CAST(big AS INTEGER) = 5", "4"}, // big = 5: the cast is not needed
		{"abs(CAST(big AS INTEGER)) = 5", "error: BIGINT 9223372036854775807 does not fit in INTEGER"},
		{"gear % 0 IS NULL", "0,1,2,3,4,5"},
		{"gear // 0 IS NULL AND gear / 0 > 0", "0,1,3"},
		// a constant that fails fails where it is computed, not before
		{"gear = 2147483647 + 1", "error: integer overflow: 2147483647 + 1 does not fit in INTEGER"},
		{"2147483647 + 1 IN (0)", "error: integer overflow: 2147483647 + 1 does not fit in INTEGER"},
		{"gear > 100 AND gear = 2147483647 + 1", ""},
		{"gear > 5 AND gear <> CAST(3000000000 AS INTEGER)", "error: BIGINT 3000000000 does not fit in INTEGER"},
		{"gear > 100 AND big < CAST(1e3 / 0 AS BIGINT)", ""},
		{"coalesce(gear, 0) < 100 OR big = CAST(3000000000 AS INTEGER)", "0,1,2,3,4,5"},
	} {
		got, err := matching(t, tc.filter, r)
		if err != nil {
			var ee *EvalError
			if !errors.As(err, &ee) || !errors.Is(err, ErrValue) {
				t.Errorf("%s: %v, want an EvalError", tc.filter, err)
			}
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, tc.want) && !strings.Contains(got, strings.TrimPrefix(tc.want, "error: ")) || tc.want == "" && got != "" {
			t.Errorf("%s: %q, want %q", tc.filter, got, tc.want)
		}
	}
}

// TestMoveConstantsPrunes checks that a comparison of arithmetic on a
// column with a constant is decided by the column's statistics.
func TestMoveConstantsPrunes(t *testing.T) {
	stats := func(lo, hi int64) StatsFunc {
		return func(name string) (ColumnStats, bool) {
			return ColumnStats{HasRange: true, Min: Int(lo), Max: Int(hi), Nulls: 0, Rows: 10}, true
		}
	}
	for _, tc := range []struct {
		filter string
		lo, hi int64
		want   Decision
	}{
		{"gear + 1 > 30", 0, 10, None},
		{"gear + 1 > 30", 40, 50, All},
		{"gear * 2 = 21", 0, 100, None},
		{"gear * 2 <> 21", 0, 100, All},
		{"10 - gear < 0", 0, 10, None},
		{"10 - gear < 0", 11, 20, All},
		{"gear * -2 >= -4", 3, 9, None},
		{"-gear > 5", 0, 5, None},
		{"abs(gear) < 3", -2, 2, All},
		{"gear % 3 = 5", 0, 100, None},
		{"big * 2 > 0", math.MaxInt64 - 5, math.MaxInt64, All},
		{"big + big > 0", math.MaxInt64 - 5, math.MaxInt64, Some}, // a row may overflow
		{"CAST(big AS INTEGER) = 5", 10, 20, None},
	} {
		f, err := Compile(tc.filter, arrow.NewSchema([]arrow.Field{
			{Name: "gear", Type: arrow.PrimitiveTypes.Int32}, {Name: "big", Type: arrow.PrimitiveTypes.Int64},
		}, nil))
		if err != nil {
			t.Fatal(err)
		}
		if d := f.Prune(stats(tc.lo, tc.hi)); d != tc.want {
			t.Errorf("%s over [%d, %d]: %s, want %s", tc.filter, tc.lo, tc.hi, d, tc.want)
		}
	}
}

// TestHostileFilters checks that filters made to exhaust the parser or
// the matcher are refused or run in bounded time, and that a long flat
// chain of terms is not taken for deep nesting.
func TestHostileFilters(t *testing.T) {
	for _, tc := range []struct {
		name, filter, want string
	}{
		{"1 MB", "speed > 1 OR " + strings.Repeat("x", 1<<20), "bytes long"},
		{"10,000 parentheses", strings.Repeat("(", 10000) + "speed > 1" + strings.Repeat(")", 10000), "nests more than 256 levels"},
		{"10,000 NOTs", strings.Repeat("NOT ", 10000) + "flag", "nests more than 256 levels"},
		{"10,000 minus signs", strings.Repeat("- ", 10000) + "gear > 1", "nests more than 256 levels"},
		{"nested calls", strings.Repeat("abs(", 3000) + "gear" + strings.Repeat(")", 3000) + " > 1", "nests more than 256 levels"},
		{"nested lists", strings.Repeat("[", 3000) + "1" + strings.Repeat("]", 3000) + " = state", "nests more than 256 levels"},
	} {
		_, err := Compile(tc.filter, testSchema)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}

	// Flat chains: thousands of terms compile and evaluate.
	rng := rand.New(rand.NewPCG(9, 9))
	r := randomRows(rng, 1000, false)
	var terms []string
	for i := 0; i < 3000; i++ {
		terms = append(terms, fmt.Sprintf("gear = %d", i+100))
	}
	terms = append(terms, "gear = 2")
	for _, op := range []string{" OR ", " AND "} {
		text := strings.Join(terms, op)
		f, err := Compile(text, testSchema)
		if err != nil {
			t.Fatalf("%d terms joined by%s: %v", len(terms), op, err)
		}
		got, err := countMatches(f, r)
		want, _ := countMatches(mustCompile(t, "gear = 2"), r)
		if op == " AND " {
			want = 0
		}
		if err != nil || got != want {
			t.Errorf("%d terms joined by%s: %d matches (%v), want %d", len(terms), op, got, err, want)
		}
	}
	// A chain of arithmetic as long as the length limit allows.
	sum := "gear" + strings.Repeat(" + 1", (MaxLength-20)/4) + " > 0"
	if _, err := Compile(sum, testSchema); err != nil {
		t.Errorf("a sum of %d terms: %v", (MaxLength-20)/4, err)
	}

	// Patterns that make backtracking matchers take exponential time: a
	// matcher that backtracks would not finish within the test's timeout
	// (BenchmarkHostileLike times them).
	for _, p := range hostileLikePatterns {
		m, err := compileLike(p, -1)
		if err != nil {
			t.Fatal(err)
		}
		if m.match(hostileLikeText) {
			t.Errorf("%q matched a string of a's", p)
		}
	}
}

// hostileLikePatterns make a backtracking LIKE matcher take exponential
// time on hostileLikeText.
var (
	hostileLikePatterns = []string{strings.Repeat("%a", 30) + "%b", "%" + strings.Repeat("_", 200) + "b%", strings.Repeat("a%", 50) + "b"}
	hostileLikeText     = strings.Repeat("a", 60000)
)

// BenchmarkHostileLike times the hostile patterns on their text: about
// linear in the text's length times the pattern's.
func BenchmarkHostileLike(b *testing.B) {
	for _, p := range hostileLikePatterns {
		m, err := compileLike(p, -1)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%.12s", p), func(b *testing.B) {
			for b.Loop() {
				m.match(hostileLikeText)
			}
		})
	}
}

func mustCompile(t *testing.T, text string) *Filter {
	t.Helper()
	f, err := Compile(text, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestI128 checks 128-bit arithmetic against math/big.
func TestI128(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 8))
	toBig := func(a i128) *big.Int {
		b := new(big.Int).SetInt64(a.hi)
		b.Lsh(b, 64)
		return b.Add(b, new(big.Int).SetUint64(a.lo))
	}
	random := func() i128 {
		switch rng.IntN(4) {
		case 0:
			return i128From(rng.Int64() - rng.Int64())
		case 1:
			return i128From(int64(rng.IntN(2000) - 1000))
		}
		v := i128{hi: rng.Int64N(1<<40) - 1<<39, lo: rng.Uint64()}
		return v
	}
	for i := 0; i < 20000; i++ {
		a, b := random(), random()
		ba, bb := toBig(a), toBig(b)
		if got, want := toBig(a.add(b)), new(big.Int).Add(ba, bb); got.Cmp(want) != 0 {
			t.Fatalf("%v + %v = %v, want %v", ba, bb, got, want)
		}
		if got, want := a.cmp(b), ba.Cmp(bb); got != want {
			t.Fatalf("cmp(%v, %v) = %d, want %d", ba, bb, got, want)
		}
		prod := new(big.Int).Mul(ba, bb)
		if p, ok := a.mul(b); ok != (prod.BitLen() < 127) || ok && toBig(p).Cmp(prod) != 0 {
			t.Fatalf("%v * %v = %v (%v), want %v", ba, bb, toBig(p), ok, prod)
		}
		if !b.isZero() {
			q, r := a.quoRem(b)
			wq, wr := new(big.Int).QuoRem(ba, bb, new(big.Int))
			if toBig(q).Cmp(wq) != 0 || toBig(r).Cmp(wr) != 0 {
				t.Fatalf("%v quoRem %v = %v, %v, want %v, %v", ba, bb, toBig(q), toBig(r), wq, wr)
			}
		}
		if a.String() != ba.String() {
			t.Fatalf("String %s, want %s", a.String(), ba.String())
		}
	}
	for _, tc := range []struct {
		v     int64
		scale int
		want  string
	}{{150, 2, "1.50"}, {-5, 2, "-0.05"}, {7, 0, "7"}, {-125, 1, "-12.5"}} {
		if got := formatDecimal(i128From(tc.v), tc.scale); got != tc.want {
			t.Errorf("formatDecimal(%d, %d) = %s, want %s", tc.v, tc.scale, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    int64
		k    int
		want int64
	}{{125, 1, 13}, {-125, 1, -13}, {124, 1, 12}, {135, 2, 1}, {-150, 2, -2}} {
		if got, _ := i128From(tc.v).scaleDown(tc.k).int64(); got != tc.want {
			t.Errorf("scaleDown(%d, %d) = %d, want %d", tc.v, tc.k, got, tc.want)
		}
	}
}

// TestFormatFloat checks floats written as DuckDB casts them to VARCHAR.
func TestFormatFloat(t *testing.T) {
	for _, tc := range []struct {
		f      float64
		single bool
		want   string
	}{
		{1.5, false, "1.5"}, {100, false, "100.0"}, {1e15, false, "1000000000000000.0"}, {1e16, false, "1e+16"},
		{1e20, false, "1e+20"}, {1e-5, false, "1e-05"}, {0.0001, false, "0.0001"}, {math.NaN(), false, "nan"},
		{math.Inf(-1), false, "-inf"}, {math.Copysign(0, -1), false, "-0.0"}, {float64(float32(0.1)), true, "0.1"},
		{float64(float32(0.1)), false, "0.10000000149011612"}, {3.4e38, true, "3.4e+38"}, {16777216, true, "16777216.0"},
		{math.Copysign(math.NaN(), -1), false, "-nan"}, {defaultNaN, true, "-nan"},
	} {
		if got := formatFloat(tc.f, tc.single); got != tc.want {
			t.Errorf("formatFloat(%v, %v) = %s, want %s", tc.f, tc.single, got, tc.want)
		}
	}
}

// TestFloatRemainder checks x % y of floats against what DuckDB answered,
// NaN signs included (CAST(x % y AS VARCHAR) shows them).
func TestFloatRemainder(t *testing.T) {
	nan, neg, inf := math.NaN(), math.Copysign(math.NaN(), -1), math.Inf(1)
	for _, tc := range []struct {
		x, y float64
		want string
	}{
		{2.5, 2, "0.5"}, {-2, 2, "-0.0"}, {-2.5, inf, "-2.5"}, {math.Copysign(0, -1), inf, "-0.0"}, {13.333333333333334, 7, "6.333333333333334"},
		{inf, 6, "-nan"}, {-inf, 2, "-nan"}, {2.5, 0, "-nan"}, {inf, 0, "-nan"},
		{nan, 0, "nan"}, {neg, 2, "-nan"}, {neg, inf, "-nan"}, {neg, 0, "-nan"},
		{2, neg, "-nan"}, {inf, neg, "-nan"}, {inf, nan, "nan"}, {0, neg, "-nan"},
		{neg, nan, "nan"}, {nan, neg, "nan"}, {neg, neg, "-nan"}, {nan, nan, "nan"},
	} {
		if got := formatFloat(floatArith(opMod, tc.x, tc.y, false), false); got != tc.want {
			t.Errorf("%v %% %v = %s, want %s", tc.x, tc.y, got, tc.want)
		}
	}
}
