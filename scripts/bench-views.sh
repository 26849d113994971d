#!/usr/bin/env bash
# Filter and view benchmarks, side by side with the peer in the same run.
# Prints NAME VALUE UNIT lines (see scripts/bench.sh); ratios are peer time
# / framefs time (above 1: framefs is faster).
#   framefs ls --where --count on a 10,000-episode, 3,000,000-row table vs
#     DuckDB's SELECT count(*) ... WHERE over the same Parquet files, for a
#     selective filter on a non-partition column and for a partition
#     filter; bytes each reads from the table's files (strace)
#   ls -l of a view's episode folder vs the same snapshot folder
#   opening the mount's views/ and its first view
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup "$@"
py=/usr/bin/python3

duck=$(duckdb_module)

# The table: 10,000 episodes of 300 rows in ten commits of 1,000 (so ten
# Parquet files), partitioned by task; each episode drives at a speed of
# its own. Videos are one 300-frame file, stored once per commit. Built
# once and kept in the cache (its name carries a layout version).
tbl="$cache/views_10k_v4/robot"
if [ ! -f "$tbl/.complete" ]; then
	rm -rf "$cache/views_10k_v4"
	src="$cache/views_10k_src"
	rm -rf "$src"
	mkdir -p "$src"
	"$py" - "$src" "$root/testdata/video/h264_gop250.mp4" <<'PY'
import csv, os, random, sys
src, video = sys.argv[1], sys.argv[2]
rng = random.Random(1)
tasks = ["pick", "place", "push", "stack"]
labels = ["cat", "dog", "owl", "bat", ""]
for e in range(10000):
    name = f"ep{e:05d}"
    os.link(video, f"{src}/{name}.mp4")
    base = rng.uniform(0, 120)
    task = tasks[e % 4]
    with open(f"{src}/{name}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["task", "ego_speed_kmh", "gear", "label", "ts"])
        for i in range(300):
            speed = max(0.0, base + rng.uniform(-3, 3))
            label = labels[rng.randrange(5)]
            w.writerow([task, f"{speed:.3f}", 1 + int(speed // 25), label,
                        f"2026-01-{1 + e // 1000:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z"])
PY
	"$bin" create "$tbl" --column task:string --column ego_speed_kmh:float64 --column gear:int32 \
		--column 'label:string?' --column ts:timestamp --partition task >/dev/null
	for k in 0 1 2 3 4 5 6 7 8 9; do
		"$bin" ingest "$tbl" "$src"/ep0${k}???.mp4 --no-sizes >/dev/null
	done
	rm -rf "$src"
	touch "$tbl/.complete"
fi

cat >"$work/count.mjs" <<JS
import { DuckDBInstance } from '$duck';
const [glob, where, runs] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const times = [];
let n;
for (let i = 0; i < Number(runs); i++) {
  const t0 = process.hrtime.bigint();
  const r = await con.runAndReadAll(\`SELECT count(*) AS n FROM read_parquet('\${glob}') WHERE \${where}\`);
  times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  n = r.getRows()[0][0];
}
times.sort((a, b) => a - b);
console.log(String(n), times[Math.floor(times.length / 2)].toFixed(1));
JS

# bytes_read CMD...: bytes the command reads from the table's files (one
# trace file per thread, so that no call is split across lines).
bytes_read() {
	rm -rf "$work/strace"
	mkdir "$work/strace"
	strace -f -ff -qq -y -e trace=read,pread64,preadv,readv -e signal=none -o "$work/strace/t" "$@" >/dev/null
	cat "$work/strace"/t.* | awk -v dir="$tbl/" 'index($0, "<" dir) && $NF ~ /^[0-9]+$/ {n += $NF} END {print n + 0}'
}

# What any framefs command costs before it reads a table (process start:
# the FFmpeg libraries, package initialisation).
start_times=()
for i in 1 2 3 4 5; do start_times+=("$(milliseconds "$bin" --help)"); done
emit "views_framefs_process_start" "$(median "${start_times[@]}")" ms

for case in "selective:ego_speed_kmh >= 119.5" "partition:task = 'stack'"; do
	name=${case%%:*}
	where=${case#*:}
	want=$(node "$work/count.mjs" "$tbl/data/*.parquet" "$where" 1 | cut -d' ' -f1)
	got=$("$bin" ls "$tbl" --where "$where" --count)
	[ "$got" = "$want" ] || { echo "framefs counts $got for $where, DuckDB $want" >&2; exit 1; }
	# Two comparisons: the framefs command against DuckDB's query alone
	# (median of 5 in one session, no process start), and command against
	# command (node starting DuckDB and running the query once).
	duck_ms=$(node "$work/count.mjs" "$tbl/data/*.parquet" "$where" 5 | cut -d' ' -f2)
	times=() duck_proc=()
	for i in 1 2 3 4 5; do
		times+=("$(milliseconds "$bin" ls "$tbl" --where "$where" --count)")
		duck_proc+=("$(milliseconds node "$work/count.mjs" "$tbl/data/*.parquet" "$where" 1)")
	done
	ffs_ms=$(median "${times[@]}")
	duck_proc_ms=$(median "${duck_proc[@]}")
	emit "views_count_${name}_framefs" "$ffs_ms" ms
	emit "views_count_${name}_duckdb_query" "$duck_ms" ms
	emit "views_count_${name}_duckdb_process" "$duck_proc_ms" ms
	emit "ratio:views_count_${name}_vs_duckdb_query" "$(ratio "$duck_ms" "$ffs_ms")" x
	emit "ratio:views_count_${name}_vs_duckdb_process" "$(ratio "$duck_proc_ms" "$ffs_ms")" x
	emit "views_count_${name}_framefs_bytes_read" "$(bytes_read "$bin" ls "$tbl" --where "$where" --count)" bytes
	emit "views_count_${name}_duckdb_bytes_read" "$(bytes_read node "$work/count.mjs" "$tbl/data/*.parquet" "$where" 1)" bytes
	emit "views_count_${name}_matching" "$want" frames
done

# The mount: views of the same table. Frame sizes are computed once per
# video payload (all episodes of a commit share one), so one ls -l warms
# them for every episode compared below.
"$bin" view delete "$tbl" bench-fast >/dev/null 2>&1 || true
"$bin" view delete "$tbl" bench-pick >/dev/null 2>&1 || true
"$bin" view create "$tbl" bench-fast --where "ego_speed_kmh >= 119.5" >/dev/null
"$bin" view create "$tbl" bench-pick --where "task = 'pick' AND ego_speed_kmh >= 0" >/dev/null
mount_daemon "$tbl" "$mnt" -o ro
open_start=$(date +%s%N)
ls "$mnt/views" >/dev/null
ls "$mnt/views/bench-fast/" >/dev/null
open_end=$(date +%s%N)
emit "views_open_views_and_first_view" "$(round "$(((open_end - open_start) / 1000))e-3")" ms
head=$(readlink "$mnt/latest")
ls -l "$mnt/$head/task=pick/ep00000" >/dev/null # frame sizes of the payload
view_times=() snap_times=()
for i in 1 2 3 4 5; do
	ep=$(printf 'ep%05d' $((i * 4)))
	view_times+=("$(milliseconds ls -l "$mnt/views/bench-pick/task=pick/$ep/")")
	ep=$(printf 'ep%05d' $((i * 4 + 100)))
	snap_times+=("$(milliseconds ls -l "$mnt/$head/task=pick/$ep/")")
done
view_ms=$(median "${view_times[@]}")
snap_ms=$(median "${snap_times[@]}")
emit "views_ls_l_episode_300_frames_view" "$view_ms" ms
emit "views_ls_l_episode_300_frames_snapshot" "$snap_ms" ms
emit "ratio:views_ls_l_view_vs_snapshot" "$(ratio "$snap_ms" "$view_ms")" x
unmount "$mnt"
"$bin" view delete "$tbl" bench-fast >/dev/null
"$bin" view delete "$tbl" bench-pick >/dev/null
