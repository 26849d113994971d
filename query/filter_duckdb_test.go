package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/framefs/framefs/internal/tabletamper"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/manifest"
	"github.com/framefs/framefs/table/storage"
)

// duckdbMatrix is the set of filters checked against DuckDB. Each runs
// unchanged in both: same names, same literals, same functions.
var duckdbMatrix = []string{
	// comparisons of each type
	"speed >= 60", "speed < 10.5", "speed = 42", "speed != 42", "speed <> 42", "speed > 99.5",
	"gear = 3", "gear <= -1", "gear > 2.5", "odo >= 5000000000", "odo < 1000",
	"ratio = 0.1", "ratio > 0.1", "ratio < 0.30000001",
	"flag", "NOT flag", "flag = TRUE", "flag IS NOT TRUE", "flag IS FALSE",
	"label = 'cat'", "label > 'dog'", "label <= 'b'",
	// NULLs
	"speed IS NULL", "speed IS NOT NULL", "gear IS NULL OR flag IS NULL", "speed = NULL",
	"NOT (speed > 50)", "NOT (gear IN (1, 2))", "gear IN (1, NULL)", "gear NOT IN (1, NULL)",
	// IN, BETWEEN
	"gear IN (0, 2, 4)", "gear NOT IN (0, 2, 4)", "label IN ('cat', 'owl')", "label NOT IN ('cat')",
	"speed BETWEEN 20 AND 40", "speed NOT BETWEEN 20 AND 40", "gear BETWEEN -1 AND 1",
	"ts BETWEEN TIMESTAMP '2026-01-02 03:00:10' AND TIMESTAMP '2026-01-02 03:00:20'",
	// LIKE
	"label LIKE 'c%'", "label LIKE '%o%'", "label LIKE '_at'", "label NOT LIKE '%t'",
	"note LIKE 'a\\%%' ESCAPE '\\'", "note LIKE '%\\_%' ESCAPE '\\'", "note LIKE 'é%'", "note LIKE '%b_'",
	// timestamps
	"ts >= TIMESTAMP '2026-01-02 03:00:30'", "ts < '2026-01-02 03:00:05'", "ts = TIMESTAMP '2026-01-02 03:00:07.5'",
	"ts > DATE '2026-01-02'",
	// lists
	"len(state) >= 2", "len(state) = 0", "state IS NULL", "list_contains(state, 1.5)", "list_contains(state, 0.1)",
	"list_extract(state, 1) > 1", "list_extract(state, -1) = 0.5", "list_contains(words, 'b')", "len(words) > 1 AND list_extract(words, 2) = 'c'",
	// partition columns and the episode id
	"task = 'pick'", "task IN ('place', 'stack')", "task <> 'pick' AND speed > 50", "task LIKE 'p%'",
	"episode_id = 'ep03'", "episode_id IN ('ep01', 'ep05') AND gear >= 2", "episode_id > 'ep04' OR task = 'stack'",
	// combinations
	"(speed > 50 OR gear = 1) AND label IS NOT NULL", "speed > 30 AND speed < 35 OR ratio > 0.8",
	"NOT (task = 'pick' OR flag)", "(flag OR gear > 1) IS FALSE", "speed > gear", "odo > speed",
	"\"speed\" > 70 AND \"task\" = 'place'", "SPEED > 95", "TRUE", "FALSE",
}

// duckdbFile is a Node program that runs each filter of a JSON file in
// DuckDB over the table's Parquet files and prints the matching
// (episode, row) pairs in the table's order. The rows' _index (their
// position in the episode) is also the column frame, as framefs names it.
const duckdbFile = `
import { DuckDBInstance } from '%s';
import { readFileSync } from 'node:fs';
const [glob, exprsFile] = process.argv.slice(2);
const exprs = JSON.parse(readFileSync(exprsFile, 'utf8'));
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
try { await con.run("SET TimeZone = 'UTC'"); } catch (e) {}
// The filters run over a copy of the rows in a DuckDB table: its Parquet
// reader skips row groups by minimums and maximums that leave NaN out, so
// that speed > 3.5 misses the NaN speeds (which DuckDB orders above every
// number) of a file whose largest other speed is 3.5.
await con.run(` + "`" + `CREATE TABLE rows AS SELECT *, _index AS frame FROM read_parquet('${glob}')` + "`" + `);
const out = [];
for (const e of exprs) {
  try {
    const r = await con.runAndReadAll(` + "`" + `SELECT episode_id, _index FROM rows WHERE ${e} ORDER BY task, episode_id, _index` + "`" + `);
    out.push({rows: r.getRows().map(([ep, i]) => ep + '#' + i)});
  } catch (err) {
    out.push({error: String(err.message)});
  }
}
console.log(JSON.stringify(out));
`

// duckdbModule returns the path of DuckDB's Node module in the project's
// .cache, installing it from npm (as the end-to-end scripts do) if needed.
func duckdbModule(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ".cache", "duckdb")
	mod := filepath.Join(dir, "node_modules", "@duckdb", "node-api", "lib", "index.js")
	duckdbInstall.Do(func() {
		if _, err := os.Stat(mod); err == nil {
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			duckdbErr = err
			return
		}
		cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--silent", "@duckdb/node-api@1.5.6-r.1")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			duckdbErr = fmt.Errorf("npm install @duckdb/node-api: %v: %s", err, out)
		}
	})
	if duckdbErr != nil {
		t.Fatalf("DuckDB is needed to check filter semantics (Node.js and npm, see scripts/install-deps.sh): %v", duckdbErr)
	}
	return mod
}

var (
	duckdbInstall sync.Once
	duckdbErr     error
)

// duckdbResult is DuckDB's answer to one filter: the matching rows, or
// the error it reports.
type duckdbResult struct {
	Rows  []string `json:"rows"`
	Error string   `json:"error"`
}

// runDuckDB runs every filter in DuckDB over the Parquet files of glob.
func runDuckDB(t *testing.T, glob string, exprs []string) []duckdbResult {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "query.mjs")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(duckdbFile, duckdbModule(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(exprs)
	exprsFile := filepath.Join(dir, "exprs.json")
	if err := os.WriteFile(exprsFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", script, glob, exprsFile).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var res []duckdbResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("DuckDB output: %v: %s", err, out)
	}
	return res
}

// filterTestSchema has a column of each type, nullable, and a partition.
func filterTestSchema() table.Schema {
	return table.Schema{
		PartitionColumns: []string{"task"},
		Columns: []table.Column{
			{Name: "task", Type: "string"},
			{Name: "speed", Type: "float64", Nullable: true},
			{Name: "ratio", Type: "float32", Nullable: true},
			{Name: "gear", Type: "int32", Nullable: true},
			{Name: "odo", Type: "int64", Nullable: true},
			{Name: "flag", Type: "bool", Nullable: true},
			{Name: "label", Type: "string", Nullable: true},
			{Name: "note", Type: "string", Nullable: true},
			{Name: "ts", Type: "timestamp", Nullable: true},
			{Name: "state", Type: "list<float32>", Nullable: true},
			{Name: "words", Type: "list<string>", Nullable: true},
		},
	}
}

// filterTestTable makes a table of eight episodes in three partitions,
// with random rows (nulls in every nullable column), committed in two
// snapshots so that there are two data files.
func filterTestTable(t *testing.T, store storage.Store) (*table.Table, *table.Snapshot) {
	t.Helper()
	ctx := context.Background()
	tbl, err := table.Create(ctx, store, filterTestSchema(), table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	tasks := []string{"pick", "place", "stack"}
	labels := []any{"cat", "dog", "owl", "bat", "b", "ant", nil}
	notes := []any{"a%b", "a_b", "ab", "éclair", "xbz", "", nil}
	words := []string{"a", "b", "c"}
	maybe := func(v any) any {
		if rng.IntN(7) == 0 {
			return nil
		}
		return v
	}
	base := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	var snap *table.Snapshot
	for batch := 0; batch < 2; batch++ {
		var inputs []table.EpisodeInput
		for k := 0; k < 4; k++ {
			i := batch*4 + k
			ep := fmt.Sprintf("ep%02d", i)
			var b strings.Builder
			// Episodes have speed profiles of their own, so that
			// statistics can skip some of them.
			lo := float64(rng.IntN(80))
			for r := 0; r < 40+rng.IntN(20); r++ {
				state := any(nil)
				if rng.IntN(6) != 0 {
					var st []any
					for n := rng.IntN(4); n > 0; n-- {
						st = append(st, []float64{0.1, 0.5, 1.5, 2}[rng.IntN(4)])
					}
					if st == nil {
						st = []any{}
					}
					state = st
				}
				var ws []any
				for n := rng.IntN(3); n > 0; n-- {
					ws = append(ws, words[rng.IntN(3)])
				}
				row := map[string]any{
					"task":  tasks[i%3],
					"speed": maybe(lo + float64(rng.IntN(41))/2),
					"ratio": maybe([]float64{0.1, 0.2, 0.3, 0.9}[rng.IntN(4)]),
					"gear":  maybe(rng.IntN(6) - 1),
					"odo":   maybe([]int64{12, 999, 5_000_000_000, 7_000_000_123}[rng.IntN(4)]),
					"flag":  maybe(rng.IntN(2) == 0),
					"label": labels[rng.IntN(len(labels))],
					"note":  notes[rng.IntN(len(notes))],
					"ts":    maybe(base.Add(time.Duration(rng.IntN(80)) * 500 * time.Millisecond).Format(time.RFC3339Nano)),
					"state": state,
					"words": ws,
				}
				line, _ := json.Marshal(row)
				b.Write(append(line, '\n'))
			}
			sc, err := table.ParseSidecar(ep+".jsonl", []byte(b.String()))
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, table.EpisodeInput{Episode: ep, Sidecar: sc,
				Videos: map[string]table.VideoFile{"": {Path: fixture("h264_faststart.mp4")}}})
		}
		if snap, err = tbl.AddEpisodes(ctx, inputs, table.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return tbl, snap
}

// TestFiltersMatchDuckDB runs every filter of the matrix through Select
// and through DuckDB over the same Parquet files: same rows, same order.
// It runs twice: with the manifests' statistics, and with them removed
// (as an older framefs wrote them), where Parquet row-group statistics
// prune instead.
func TestFiltersMatchDuckDB(t *testing.T) {
	if len(duckdbMatrix) < 40 {
		t.Fatalf("the matrix has %d filters; keep at least 40", len(duckdbMatrix))
	}
	dir := t.TempDir()
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	tbl, snap := filterTestTable(t, store)
	want := runDuckDB(t, filepath.Join(dir, "data", "*.parquet"), duckdbMatrix)
	if o := runCorpus(t, tbl, snap, duckdbMatrix, want); o.decided == 0 {
		t.Error("statistics decided no episode for any filter")
	}
	// The same table as an older framefs wrote it: manifests without
	// statistics.
	old, stripped := withoutStats(t, store, snap)
	t.Run("row group statistics", func(t *testing.T) {
		if o := runCorpus(t, old, stripped, duckdbMatrix, want); o.decided == 0 {
			t.Error("row-group statistics decided no episode for any filter")
		}
	})
}

// withoutStats makes a table's head as an older framefs wrote it: its
// manifests without column statistics (in a new snapshot, a copy of
// snap). It returns the table reopened and that snapshot.
func withoutStats(t *testing.T, store storage.Store, snap *table.Snapshot) (*table.Table, *table.Snapshot) {
	t.Helper()
	ctx := context.Background()
	if _, err := tabletamper.RewriteEntries(ctx, store, func(e *manifest.Entry) bool {
		e.Stats = nil
		return true
	}); err != nil {
		t.Fatal(err)
	}
	old, err := table.Open(ctx, store, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stripped, err := old.Resolve(ctx, 0, "")
	if err != nil || stripped.ID != snap.ID+1 {
		t.Fatalf("snapshot without statistics: %+v, %v", stripped, err)
	}
	return old, stripped
}
