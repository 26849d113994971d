package query

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/framefs/framefs/table/storage"
)

// filterGen writes random filters over the corpus table's columns:
// expressions of every kind nested a few levels, mostly well typed, some
// not. They find what a hand-written corpus misses.
type filterGen struct {
	rng *rand.Rand
}

func (g *filterGen) pick(s ...string) string { return s[g.rng.IntN(len(s))] }

func (g *filterGen) boolean(depth int) string {
	if depth <= 0 {
		return g.pick("flag", "TRUE", "FALSE", "NULL", "count > 5", "label = 'cat'", "tags IS NULL", "score >= 2.5")
	}
	d := depth - 1
	switch g.rng.IntN(16) {
	case 0:
		return g.number(d) + " " + g.pick("=", "<>", "<", "<=", ">", ">=") + " " + g.number(d)
	case 1:
		return g.text(d) + " " + g.pick("=", "<>", "<", ">=") + " " + g.text(d)
	case 2:
		return "(" + g.boolean(d) + ") " + g.pick("AND", "OR") + " (" + g.boolean(d) + ")"
	case 3:
		return "NOT (" + g.boolean(d) + ")"
	case 4:
		return g.pick(g.number(d), g.text(d), g.list(d)) + " IS " + g.pick("", "NOT ") + "NULL"
	case 5:
		return "(" + g.boolean(d) + ") IS " + g.pick("", "NOT ") + g.pick("TRUE", "FALSE")
	case 6:
		return g.number(d) + g.pick(" IN ", " NOT IN ") + "(" + g.number(d) + ", " + g.number(d) + ", " + g.pick("NULL", "7", "2.5") + ")"
	case 7:
		return g.number(d) + g.pick(" BETWEEN ", " NOT BETWEEN ") + g.number(d) + " AND " + g.number(d)
	case 8:
		return g.text(d) + g.pick(" LIKE ", " NOT LIKE ", " ILIKE ") + g.pick("'c%'", "'%a%'", "'_'", "''", "'%'", "'1%'", "'%T'")
	case 9:
		return g.pick("list_contains(tags, "+g.text(d)+")", "list_contains(nums, "+g.number(d)+")", "list_contains(vals, "+g.number(d)+")")
	case 10:
		return "(" + g.boolean(d) + ") " + g.pick("=", "<>", "<") + " (" + g.boolean(d) + ")"
	case 11:
		return g.list(d) + " " + g.pick("=", "<>", "<", ">") + " " + g.list(d)
	case 12:
		return "ts " + g.pick("<", ">=", "=") + " " + g.pick("'2026-01-02 03:00:05'", "TIMESTAMP '2026-01-02 03:00:10.5'",
			"TIMESTAMPTZ '2026-01-02 04:00:07+01:00'", "DATE '2026-01-02'", "CAST('2026-01-02 03:00:12' AS TIMESTAMP)")
	case 13:
		return g.number(d) + " IS " + g.pick("", "NOT ") + "DISTINCT FROM " + g.number(d)
	case 14:
		return "coalesce(flag, " + g.boolean(d) + ")"
	default:
		return "CAST(" + g.number(d) + " AS BOOLEAN)"
	}
}

func (g *filterGen) number(depth int) string {
	if depth <= 0 {
		return g.pick("count", "n32", "big", "score", "speed", "frame", "0", "1", "-3", "7", "2147483647", "3000000000",
			"0.5", "2.5", "0.1", "1e3", "40.0", "NULL")
	}
	d := depth - 1
	switch g.rng.IntN(11) {
	case 0, 1:
		return "(" + g.number(d) + " " + g.pick("+", "-", "*", "/", "%", "//") + " " + g.number(d) + ")"
	case 2:
		return "-" + g.number(d)
	case 3:
		return "abs(" + g.number(d) + ")"
	case 4:
		return "CAST(" + g.number(d) + " AS " + g.pick("INTEGER", "BIGINT", "DOUBLE", "FLOAT", "DECIMAL(10,2)", "DECIMAL(18,0)") + ")"
	case 5:
		return "coalesce(" + g.number(d) + ", " + g.number(d) + ")"
	case 6:
		return g.pick("len(tags)", "length(label)", "len(nums)", "strlen(code)")
	case 7:
		return g.pick("nums[1]", "nums[-1]", "list_extract(vals, 2)", "nums[0]")
	case 8:
		return "TRY_CAST(code AS " + g.pick("INTEGER", "DOUBLE", "DECIMAL(4,1)") + ")"
	default:
		return g.number(0)
	}
}

func (g *filterGen) text(depth int) string {
	if depth <= 0 {
		return g.pick("label", "code", "task", "episode_id", "'cat'", "''", "'10'", "'É'", "NULL")
	}
	d := depth - 1
	switch g.rng.IntN(6) {
	case 0:
		return g.pick("lower(", "upper(") + g.text(d) + ")"
	case 1:
		return g.text(d) + " || " + g.pick(g.text(d), g.number(d))
	case 2:
		return "CAST(" + g.number(d) + " AS VARCHAR)"
	case 3:
		return "coalesce(" + g.text(d) + ", " + g.text(d) + ")"
	case 4:
		return g.pick("tags[1]", "tags[-1]", "concat(label, code)")
	default:
		return g.text(0)
	}
}

func (g *filterGen) list(depth int) string {
	if depth <= 0 {
		return g.pick("tags", "vals", "nums", "[]", "['a', 'b']", "[1, 2]", "[0.5]")
	}
	return g.pick("tags", "nums", "vals", "tags || ['c']", "nums || [3]", "coalesce(nums, [0])", "[1, NULL]")
}

// TestRandomFiltersMatchDuckDB runs generated filters through framefs and
// DuckDB and compares their answers as TestFilterCorpus does. The seed is
// fixed; FRAMEFS_FILTER_SEED and FRAMEFS_FILTER_COUNT explore others
// (`make fuzz` runs thousands with a new seed).
func TestRandomFiltersMatchDuckDB(t *testing.T) {
	seed, count := uint64(2026), 200
	if s, err := strconv.ParseUint(os.Getenv("FRAMEFS_FILTER_SEED"), 10, 64); err == nil {
		seed = s
	}
	if n, err := strconv.Atoi(os.Getenv("FRAMEFS_FILTER_COUNT")); err == nil {
		count = n
	}
	g := &filterGen{rng: rand.New(rand.NewPCG(seed, 26))}
	seen := map[string]bool{}
	var exprs []string
	for len(exprs) < count {
		e := g.boolean(1 + g.rng.IntN(3))
		if !seen[e] {
			seen[e] = true
			exprs = append(exprs, e)
		}
	}
	dir := t.TempDir()
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	tbl, snap := corpusTable(t, store)
	want := runDuckDB(t, filepath.Join(dir, "data", "*.parquet"), exprs)
	o := runCorpus(t, tbl, snap, exprs, want)
	refusedBoth := 0
	for _, w := range want {
		if w.Error != "" {
			refusedBoth++
		}
	}
	t.Logf("%d generated filters (seed %d): %v (%d refused by DuckDB)", len(exprs), seed, o, refusedBoth)
	if refusedBoth > len(exprs)/2 {
		t.Errorf("DuckDB refuses %d of %d generated filters: the generator makes too few valid ones", refusedBoth, len(exprs))
	}
}
