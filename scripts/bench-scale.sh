#!/usr/bin/env bash
# Tables of many episodes, side by side with the peer in the same run.
# Prints NAME VALUE UNIT lines (see scripts/bench.sh); ratios are peer /
# framefs (above 1: framefs is faster or smaller). Per size (10,000,
# 100,000 and 1,000,000 episodes of 10 rows, four task partitions, one
# short video; BENCH_SCALE_SIZES to choose):
#   table metadata bytes per episode (what the head snapshot needs, and all
#     metadata objects of the table)
#   a one-episode commit (ingest of one video and sidecar): wall time, and
#     the CPU time it used (what shared machines' load does not change)
#   ls --where --count of a selective filter on a non-partition column:
#     time and peak RSS, vs DuckDB's SELECT count(*) over the same Parquet
#     files (the query alone in one session, and the whole process)
#   the mount: time to list a partition folder (a quarter of the
#     episodes) and the daemon's CPU time for it, its RSS a second after
#     and its peak RSS, time to open one frame in it (sizes up to
#     BENCH_SCALE_MOUNT_MAX episodes)
#   verify: time, peak RSS and its cost per episode
# and then, on stderr, the targets for the largest size, each figure
# against its target (also as target_met:NAME 1|0 lines).
# Tables are built once (internal/cmd/benchtable, commits of 10,000
# episodes) and kept in .cache/bench; commits go to hard-linked copies.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib.sh"
bin=$(realpath "${1:-$root/bin/framefs}")
cache="$root/.cache/bench/scale_v1"
mkdir -p "$cache"
work=$(mktemp -d -p "$cache")
mnt="$work/mnt"
py=/usr/bin/python3
sizes=${BENCH_SCALE_SIZES:-"10000 100000 1000000"}
mount_max=${BENCH_SCALE_MOUNT_MAX:-1000000}
video="$root/testdata/video/h264_vfr.mp4"
where="speed >= 99.5"
cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

duck=$(duckdb_module)
(cd "$root" && go build -o "$work/benchtable" ./internal/cmd/benchtable)

# rss_mb PID [FIELD]: a process's resident memory (VmRSS, or FIELD of
# /proc/PID/status such as VmHWM), in MB.
rss_mb() { ratio "$(awk -v f="${2:-VmRSS}:" '$1==f {print $2}' "/proc/$1/status")" 1024; }
# cpu_ticks PID: the CPU time a process has used, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks_per_s=$(getconf CLK_TCK)
# cpu_ms CMD...: the CPU time (user + system) CMD used, in milliseconds.
cpu_ms() {
	/usr/bin/time -f '%U %S' -o "$work/cpu.txt" "$@" >/dev/null
	round "$(awk '{print ($1 + $2) * 1000}' "$work/cpu.txt")"
}

cat >"$work/duck.mjs" <<JS
import { DuckDBInstance } from '$duck';
const [mode, arg, where, runs] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
if (mode === 'count') {
  const times = [];
  let n;
  for (let i = 0; i < Number(runs); i++) {
    const t0 = process.hrtime.bigint();
    const r = await con.runAndReadAll(\`SELECT count(*) AS n FROM read_parquet('\${arg}') WHERE \${where}\`);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    n = r.getRows()[0][0];
  }
  times.sort((a, b) => a - b);
  console.log(String(n), times[Math.floor(times.length / 2)].toFixed(1));
} else {
  // The bytes and episodes of the manifests a manifest list names.
  const r = await con.runAndReadAll(\`SELECT sum(bytes), sum(episodes), count(*) FROM read_parquet('\${arg}')\`);
  console.log(r.getRows()[0].map(String).join(' '));
}
JS

# What any framefs command costs before it reads a table.
start_ms=()
for _ in 1 2 3; do start_ms+=("$(milliseconds "$bin" --help)"); done
emit scale_framefs_process_start "$(median "${start_ms[@]}")" ms
emit scale_framefs_process_start_rss "$(peak_rss_mb "$bin" --help)" MB

largest=""
declare -A fig
for n in $sizes; do
	largest=$n
	dir="$cache/e$n"
	tbl="$dir/t"
	if [ ! -f "$dir/.complete" ]; then
		rm -rf "$dir"
		mkdir -p "$dir"
		"$work/benchtable" -table "$tbl" -episodes "$n" -per-commit 10000 -video "$video" >"$dir/build.txt"
		touch "$dir/.complete"
	fi
	emit "scale_${n}_build" "$(awk '$1=="benchtable_build" {print $2}' "$dir/build.txt")" s

	# Metadata: the head's snapshot, manifest list and manifests; and
	# every metadata object (all snapshots, lists and manifests).
	head=$(find "$tbl/snapshot" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tail -1)
	list=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["manifest_list"])' "$tbl/snapshot/$head")
	read -r mbytes _ mcount < <(node "$work/duck.mjs" list "$tbl/$list")
	headbytes=$((mbytes + $(stat -c %s "$tbl/$list") + $(stat -c %s "$tbl/snapshot/$head")))
	allbytes=$(du -sb --apparent-size "$tbl/snapshot" "$tbl/manifest" | awk '{n += $1} END {print n}')
	fig[meta_$n]=$(ratio "$headbytes" "$n")
	emit "scale_${n}_head_metadata_per_episode" "${fig[meta_$n]}" bytes
	emit "scale_${n}_all_metadata_per_episode" "$(ratio "$allbytes" "$n")" bytes
	emit "scale_${n}_head_manifests" "$mcount" manifests

	# A one-episode commit, on a copy whose files are hard links (a commit
	# only adds files).
	rm -rf "$work/commit"
	cp -al "$tbl" "$work/commit"
	commit_times=() commit_cpu=()
	"$py" -c 'import json, sys
for r in range(10): print(json.dumps({"task": "pick", "speed": 1.5 + r, "gear": 0, "label": None}))' >"$work/one.jsonl"
	for i in $(seq "$RUNS"); do
		commit_times+=("$(milliseconds "$bin" ingest "$work/commit" "$video" --rows "$work/one.jsonl" --episode "bench-one-$i" --no-sizes)")
		commit_cpu+=("$(cpu_ms "$bin" ingest "$work/commit" "$video" --rows "$work/one.jsonl" --episode "bench-cpu-$i" --no-sizes)")
	done
	fig[commit_$n]=$(median "${commit_times[@]}")
	emit "scale_${n}_one_episode_commit" "${fig[commit_$n]}" ms
	emit "scale_${n}_one_episode_commit_cpu" "$(median "${commit_cpu[@]}")" ms
	rm -rf "$work/commit"

	# ls --where --count against DuckDB over the same data files.
	want=$(node "$work/duck.mjs" count "$tbl/data/*.parquet" "$where" 1 | cut -d' ' -f1)
	got=$("$bin" ls "$tbl" --where "$where" --count)
	[ "$got" = "$want" ] || { echo "framefs counts $got for $where, DuckDB $want" >&2; exit 1; }
	duck_ms=$(node "$work/duck.mjs" count "$tbl/data/*.parquet" "$where" 3 | cut -d' ' -f2)
	ls_times=() duck_proc=()
	for _ in $(seq "$RUNS"); do
		ls_times+=("$(milliseconds "$bin" ls "$tbl" --where "$where" --count)")
		duck_proc+=("$(milliseconds node "$work/duck.mjs" count "$tbl/data/*.parquet" "$where" 1)")
	done
	fig[count_$n]=$(median "${ls_times[@]}")
	fig[duck_$n]=$duck_ms
	fig[count_rss_$n]=$(peak_rss_mb "$bin" ls "$tbl" --where "$where" --count)
	duck_proc_ms=$(median "${duck_proc[@]}")
	emit "scale_${n}_count_framefs" "${fig[count_$n]}" ms
	emit "scale_${n}_count_duckdb_query" "$duck_ms" ms
	emit "scale_${n}_count_duckdb_process" "$duck_proc_ms" ms
	emit "ratio:scale_${n}_count_vs_duckdb_query" "$(ratio "$duck_ms" "${fig[count_$n]}")" x
	emit "ratio:scale_${n}_count_vs_duckdb_process" "$(ratio "$duck_proc_ms" "${fig[count_$n]}")" x
	emit "scale_${n}_count_framefs_peak_rss" "${fig[count_rss_$n]}" MB
	emit "scale_${n}_count_duckdb_process_peak_rss" "$(peak_rss_mb node "$work/duck.mjs" count "$tbl/data/*.parquet" "$where" 1)" MB
	emit "scale_${n}_count_matching" "$want" frames

	# The mount: list a partition folder, its RSS after, open a frame.
	if [ "$n" -le "$mount_max" ]; then
		mkdir -p "$mnt"
		out=$("$bin" mount "$tbl" "$mnt" -o ro --daemon)
		pid=$(sed -n 's/.*(pid \([0-9]*\),.*/\1/p' <<<"$out")
		snapdir=$(readlink "$mnt/latest")
		ticks=$(cpu_ticks "$pid")
		start=$(date +%s%N)
		# ls, as users list a folder: find looks every entry up.
		# shellcheck disable=SC2012
		listed=$(ls "$mnt/$snapdir/task=pick" | wc -l)
		end=$(date +%s%N)
		ticks=$(($(cpu_ticks "$pid") - ticks))
		fig[list_$n]=$(round "$(((end - start) / 1000))e-3")
		fig[listed_$n]=$listed
		# A second for the memory the listing decoded to go back (the
		# daemon trims when a large listing is closed).
		sleep 1
		fig[mount_rss_$n]=$(rss_mb "$pid")
		peak=$(rss_mb "$pid" VmHWM)
		# (awk reads all of ls's output: no SIGPIPE under pipefail)
		ep=$(find "$mnt/$snapdir/task=pick" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | awk 'NR == 1')
		frame=$(find "$mnt/$snapdir/task=pick/$ep" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | awk '!/^frames\./ && !found {print; found = 1}')
		fig[frame_$n]=$(milliseconds cat "$mnt/$snapdir/task=pick/$ep/$frame")
		emit "scale_${n}_mount_list_partition" "${fig[list_$n]}" ms
		emit "scale_${n}_mount_list_partition_cpu" "$(ratio "$((ticks * 1000))" "$ticks_per_s")" ms
		emit "scale_${n}_mount_partition_episodes" "$listed" episodes
		emit "scale_${n}_mount_rss_after_listing" "${fig[mount_rss_$n]}" MB
		emit "scale_${n}_mount_peak_rss" "$peak" MB
		emit "scale_${n}_mount_open_frame" "${fig[frame_$n]}" ms
		fusermount3 -u "$mnt"
		while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	fi

	# verify: its time, peak RSS and the cost per episode it prints.
	"$py" - "$bin" "$tbl" >"$work/verify.txt" <<'PY'
import resource, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.run([sys.argv[1], "verify", sys.argv[2]], capture_output=True, text=True)
elapsed = time.monotonic() - t0
if p.returncode != 0 or p.stdout.strip() != "ok":
    sys.exit("verify failed: " + p.stdout + p.stderr)
cost = [l for l in p.stderr.splitlines() if l.startswith("verified ")][-1]
print("%.1f %.1f %s" % (elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, cost))
PY
	read -r vsec vrss vcost <"$work/verify.txt"
	fig[verify_$n]=$(round "$vsec")
	fig[verify_rss_$n]=$vrss
	emit "scale_${n}_verify" "${fig[verify_$n]}" s
	emit "scale_${n}_verify_peak_rss" "$vrss" MB
	emit "scale_${n}_verify_per_episode" "$(ratio "$(LC_ALL=C awk -v s="$vsec" 'BEGIN {print s * 1e6}')" "$n")" us
	echo "$n episodes: $vcost" >&2
done

# The targets of the largest size, each figure against its target.
n=$largest
small=${sizes%% *}
met() { if LC_ALL=C awk "BEGIN {exit !($1)}"; then echo 1; else echo 0; fi; }
row() { # NAME FIGURE TARGET CONDITION
	local ok
	ok=$(met "$4")
	printf '%-54s %-24s %-40s %s\n' "$1" "$2" "$3" "$([ "$ok" = 1 ] && echo met || echo MISSED)" >&2
	emit "target_met:$5" "$ok" bool
}
{
	echo
	printf '%-54s %-24s %-40s %s\n' "targets ($n episodes)" figure target ""
} >&2
c=${fig[commit_$n]} c0=${fig[commit_$small]}
row "one-episode commit" "$c ms ($(ratio "$c" "$c0")x $small)" "<= 500 ms and <= 1.5x at $small" "$c <= 500 && $c <= 1.5 * $c0" one_episode_commit
row "ls --where --count: time vs DuckDB query" "${fig[count_$n]} ms / ${fig[duck_$n]} ms" "<= 1.5x DuckDB" "${fig[count_$n]} <= 1.5 * ${fig[duck_$n]}" count_time
row "ls --where --count: RSS" "${fig[count_rss_$n]} MB" "<= 300 MB" "${fig[count_rss_$n]} <= 300" count_rss
if [ -n "${fig[list_$n]:-}" ]; then
	listed=${fig[listed_$n]}
	row "mount: list a partition folder ($listed episodes)" "${fig[list_$n]} ms" "<= 2000 ms" "${fig[list_$n]} <= 2000" mount_list
	row "mount: open a frame in it" "${fig[frame_$n]} ms" "<= 50 ms" "${fig[frame_$n]} <= 50" mount_frame
	row "mount RSS after listing it" "${fig[mount_rss_$n]} MB" "<= 250 MB + 500 B x $listed = $(ratio "$((250 * 1048576 + 500 * listed))" 1048576) MB" \
		"${fig[mount_rss_$n]} <= 250 + 500 * $listed / 1048576" mount_rss
else
	echo "mount: not measured above BENCH_SCALE_MOUNT_MAX=$mount_max episodes" >&2
fi
row "verify: time" "${fig[verify_$n]} s" "<= 600 s" "${fig[verify_$n]} <= 600" verify_time
row "verify: RSS" "${fig[verify_rss_$n]} MB" "<= 300 MB" "${fig[verify_rss_$n]} <= 300" verify_rss
row "table metadata per episode (head)" "${fig[meta_$n]} bytes" "<= 200 bytes" "${fig[meta_$n]} <= 200" metadata
