#!/usr/bin/env bash
# `make bench`: every side-by-side benchmark. Prints one line per figure,
# NAME VALUE UNIT; ratios against a peer tool measured in the same run are
# named ratio:... (peer time / framefs time, so above 1 means framefs is
# faster). Writes the same figures to bench-results.json. Every script
# measures, rounds and takes medians with scripts/lib.sh.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bin=$(framefs_bin "${1:-}")
cache=$(bench_cache)
results=$(mktemp)
on_exit rm -f "$results"

# record NAME VALUE UNIT: emit a figure and keep it for bench-results.json.
record() { emit "$@" | tee -a "$results"; }

# median_ms CMD...: median wall time of RUNS runs, in milliseconds.
median_ms() {
	local times=()
	for _ in $(seq "$RUNS"); do
		times+=("$(seconds "$@" 2>/dev/null)")
	done
	ratio "$(median "${times[@]}")" 0.001
}

# --- videoidx: index a one-hour 30 fps file (synthesised sample tables).
bench=$(cd "$root" && go test -run '^$' -bench 'ReadMP4Hour|EncodeHour|DecodeHour' -benchtime 20x -benchmem ./videoidx)
# field BENCHMARK N: field N of the benchmark's result line.
field() { awk -v b="$1" -v n="$2" '$1 ~ ("^" b "(-[0-9]+)?$") {print $n}' <<<"$bench"; }
record videoidx_index_1h_30fps "$(ratio "$(field BenchmarkReadMP4Hour 3)" 1000000)" ms
record videoidx_index_1h_30fps_alloc "$(ratio "$(field BenchmarkReadMP4Hour 7)" 1000000)" MB
record videoidx_encoded_size "$(field BenchmarkEncodeHour 5)" bytes/frame
record videoidx_decode_1h_30fps "$(ratio "$(field BenchmarkDecodeHour 3)" 1000000)" ms

# --- framefs probe vs ffprobe listing the same packets (pts + key flag),
# on a 10-minute 30 fps H.264 file with B-frames.
video="$cache/h264_10min.mp4"
lavfi_video "$video" -i testsrc2=size=320x240:rate=30 -t 600 \
	-c:v libx264 -preset ultrafast -bf 2 -g 30 -pix_fmt yuv420p
probe_ms=$(median_ms "$bin" probe --json --frames "$video")
ffprobe_ms=$(median_ms ffprobe -v error -select_streams v:0 -show_entries packet=pts,flags -of csv "$video")
record probe_10min_18000_frames "$probe_ms" ms
record ffprobe_packets_10min_18000_frames "$ffprobe_ms" ms
record ratio:probe_vs_ffprobe_packets "$(ratio "$ffprobe_ms" "$probe_ms")" x

# Benchmarks of the other parts, each printing NAME VALUE UNIT lines.
for part in bench-table.sh bench-lerobot.sh bench-decode.sh bench-mount.sh bench-train.sh bench-s3.sh bench-views.sh bench-clips.sh bench-scale.sh; do
	if [ -x "$root/scripts/$part" ]; then
		"$root/scripts/$part" "$bin" | while read -r name value unit; do record "$name" "$value" "$unit"; done
	fi
done

/usr/bin/python3 - "$results" "$root/bench-results.json" <<'PY'
import json, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
json.dump([{"name": n, "value": float(v), "unit": u} for n, v, u in rows], open(sys.argv[2], "w"), indent=2)
PY
echo "wrote bench-results.json"
