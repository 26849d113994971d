#!/usr/bin/env bash
# `make bench`: every side-by-side benchmark. Prints one line per figure,
# NAME VALUE UNIT; ratios against a peer tool measured in the same run are
# named ratio:... (peer time / framefs time, so above 1 means framefs is
# faster). Writes the same figures to bench-results.json.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/bin/framefs}")
cache="$root/.cache/bench"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
mkdir -p "$cache"

emit() {
	printf '%s %s %s\n' "$1" "$2" "$3" | tee -a "$results"
}

# median_ms CMD...: median wall time of 5 runs, in milliseconds.
median_ms() {
	local times=()
	for _ in 1 2 3 4 5; do
		local start end
		start=$(date +%s%N)
		"$@" >/dev/null 2>&1
		end=$(date +%s%N)
		times+=($(((end - start) / 1000)))
	done
	printf '%s\n' "${times[@]}" | sort -n | awk 'NR==3 {printf "%.3f", $1/1000}'
}

# --- videoidx: index a one-hour 30 fps file (synthesised sample tables).
bench=$(cd "$root" && go test -run '^$' -bench 'ReadMP4Hour|EncodeHour|DecodeHour' -benchtime 20x -benchmem ./videoidx)
awk '/^BenchmarkReadMP4Hour/ {printf "videoidx_index_1h_30fps %.2f ms\n", $3/1e6; printf "videoidx_index_1h_30fps_alloc %.1f MB\n", $7/1e6}
     /^BenchmarkEncodeHour/ {printf "videoidx_encoded_size %s bytes/frame\n", $5}
     /^BenchmarkDecodeHour/ {printf "videoidx_decode_1h_30fps %.2f ms\n", $3/1e6}' <<<"$bench" |
	while read -r name value unit; do emit "$name" "$value" "$unit"; done

# --- framefs probe vs ffprobe listing the same packets (pts + key flag),
# on a 10-minute 30 fps H.264 file with B-frames.
video="$cache/h264_10min.mp4"
if [ ! -f "$video" ]; then
	ffmpeg -v error -y -f lavfi -i testsrc2=size=320x240:rate=30 -t 600 \
		-c:v libx264 -preset ultrafast -bf 2 -g 30 -pix_fmt yuv420p "$video.tmp.mp4"
	mv "$video.tmp.mp4" "$video"
fi
probe_ms=$(median_ms "$bin" probe --json --frames "$video")
ffprobe_ms=$(median_ms ffprobe -v error -select_streams v:0 -show_entries packet=pts,flags -of csv "$video")
emit probe_10min_18000_frames "$probe_ms" ms
emit ffprobe_packets_10min_18000_frames "$ffprobe_ms" ms
emit ratio:probe_vs_ffprobe_packets "$(awk -v a="$ffprobe_ms" -v b="$probe_ms" 'BEGIN {printf "%.2f", a/b}')" x

# Benchmarks of the other parts, each printing NAME VALUE UNIT lines.
for part in bench-table.sh bench-decode.sh bench-mount.sh bench-train.sh bench-s3.sh bench-views.sh; do
	if [ -x "$root/scripts/$part" ]; then
		"$root/scripts/$part" "$bin" | while read -r name value unit; do emit "$name" "$value" "$unit"; done
	fi
done

/usr/bin/python3 - "$results" "$root/bench-results.json" <<'PY'
import json, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
json.dump([{"name": n, "value": float(v), "unit": u} for n, v, u in rows], open(sys.argv[2], "w"), indent=2)
PY
echo "wrote bench-results.json"
