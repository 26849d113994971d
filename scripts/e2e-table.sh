#!/usr/bin/env bash
# End-to-end check of the table command line and of the table's Parquet
# files in an independent reader (DuckDB, installed from npm into .cache).
# Creates a table, ingests videos with sidecars of each kind, then checks
# `framefs ls --json` against the sidecars and DuckDB's reading of the data
# files against `framefs ls`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/bin/framefs}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

duck="$root/.cache/duckdb"
if [ ! -d "$duck/node_modules/@duckdb/node-api" ]; then
	mkdir -p "$duck"
	(cd "$duck" && npm install --no-audit --no-fund --silent @duckdb/node-api@1.5.6-r.1 >/dev/null)
fi

tbl="$work/wh/robot"
"$bin" create "$tbl" --column 'timestamp:float64' --column 'state:list<float32>?' --column 'task:string' --partition task >/dev/null

# Three episodes, three sidecar formats.
cp "$root/testdata/video/h264_faststart.mp4" "$work/ep_a.mp4"
cp "$root/testdata/video/hevc.mp4" "$work/ep_b.mp4"
cp "$root/testdata/video/h264_gop250.mp4" "$work/ep_c.mp4"
/usr/bin/python3 - "$work" <<'PY'
import json, sys, csv
w = sys.argv[1]
with open(f"{w}/ep_a.jsonl", "w") as f:
    for i in range(90):
        f.write(json.dumps({"timestamp": i / 30, "state": [i, i + 0.5], "task": "pick"}) + "\n")
json.dump({"episode": {"task": "place"}, "frames": [{"timestamp": i / 30, "state": [i]} for i in range(60)]},
          open(f"{w}/ep_b.json", "w"))
with open(f"{w}/ep_c.csv", "w", newline="") as f:
    wr = csv.writer(f)
    wr.writerow(["timestamp", "task"])
    for i in range(250):
        wr.writerow([i / 30, "pick"])
PY
"$bin" ingest "$tbl" "$work/ep_a.mp4" "$work/ep_b.mp4" "$work/ep_c.mp4" >/dev/null

"$bin" ls --json "$tbl" >"$work/ls.json"
got=$(jq -c '[.snapshot, [.episodes[] | [.episode, .frames, .partition.task]]]' "$work/ls.json")
want='[1,[["ep_a",90,"pick"],["ep_c",250,"pick"],["ep_b",60,"place"]]]'
[ "$got" = "$want" ] || fail "framefs ls: $got, want $want"

"$bin" ls --json "$tbl" ep_a >"$work/ls_ep_a.json"
jq -e '.rows | length == 90 and .[7].frame == 7 and .[7].state == [7, 7.5] and .[7].task == "pick" and .[7].video.frame == 7' \
	"$work/ls_ep_a.json" >/dev/null || fail "framefs ls ep_a rows"

# DuckDB reads the same rows from the Parquet files.
cat >"$work/query.mjs" <<'JS'
import { DuckDBInstance } from '@duckdb/node-api';
const [glob] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const reader = await con.runAndReadAll(`
  SELECT episode_id, count(*) AS n, max(_index) AS last, sum(len(state)) AS states,
         min(task) AS task, count(DISTINCT video.pack) AS packs, max(video.frame) AS last_frame
  FROM read_parquet('${glob}') GROUP BY episode_id ORDER BY episode_id`);
console.log(JSON.stringify(reader.getRowObjectsJson()));
JS
sed -i "s#'@duckdb/node-api'#'$duck/node_modules/@duckdb/node-api/lib/index.js'#" "$work/query.mjs"
node "$work/query.mjs" "$tbl/data/*.parquet" >"$work/duck.json" || fail "DuckDB could not read the data files"
got=$(jq -c '[.[] | [.episode_id, (.n|tonumber), (.last|tonumber), (.states|tonumber? // null), .task, (.packs|tonumber), (.last_frame|tonumber)]]' "$work/duck.json")
want='[["ep_a",90,89,180,"pick",1,89],["ep_b",60,59,60,"place",1,59],["ep_c",250,249,null,"pick",1,249]]'
[ "$got" = "$want" ] || fail "DuckDB read $got, want $want"

# Bad input is refused with the file named and nothing committed.
head -c 100000 "$root/testdata/video/h264_gop250.mp4" >"$work/cut.mp4"
if "$bin" ingest "$tbl" "$work/cut.mp4" 2>"$work/err"; then fail "a cut video was ingested"; fi
grep -q "cut" "$work/err" || fail "error does not name the file: $(cat "$work/err")"
"$bin" ingest "$tbl" "$work/ep_a.mp4" 2>"$work/err" && fail "an existing episode was ingested again"
grep -q "already in the table" "$work/err" || fail "duplicate episode error: $(cat "$work/err")"
[ "$("$bin" log --json "$tbl" | jq length)" = 1 ] || fail "failed ingests committed"

"$bin" tag "$tbl" create v1 >/dev/null
"$bin" delete "$tbl" --episode ep_b >/dev/null
[ "$("$bin" ls --json --tag v1 "$tbl" | jq '.episodes | length')" = 3 ] || fail "time travel by tag"
[ "$("$bin" ls --json "$tbl" | jq '.episodes | length')" = 2 ] || fail "delete"
"$bin" verify "$tbl" >/dev/null || fail "verify"
echo "e2e-table: 1 passed, 0 failed"
