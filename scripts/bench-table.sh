#!/usr/bin/env bash
# Table benchmarks, side by side with the peer tool in the same run. Prints
# NAME VALUE UNIT lines (see scripts/bench.sh).
#   ingest --no-sizes of a ~1 GB MP4 vs cp of the same file on the same disk
#   framefs ls of a 10,000-episode table; peak memory as the table grows
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup "$@"

big="$cache/big_1GB.mp4"
lavfi_video "$big" -i testsrc2=size=1280x720:rate=30 -t 24 -vf noise=alls=30:allf=t \
	-c:v libx264 -preset ultrafast -qp 0 -pix_fmt yuv420p
bytes=$(stat -c %s "$big")
cat "$big" >/dev/null # both sides start with the source in the page cache
cp_times=() ingest_times=()
for _ in $(seq "$RUNS"); do
	cp_times+=("$(seconds sh -c "cp '$big' '$work/copy.mp4' && sync '$work/copy.mp4'")")
	rm -f "$work/copy.mp4"
	rm -rf "$work/t"
	"$bin" create "$work/t" --column 'note:string?' >/dev/null
	ingest_times+=("$(seconds sh -c "'$bin' ingest '$work/t' '$big' --no-sizes && sync -f '$work/t/table.json'")")
done
cp_s=$(median "${cp_times[@]}")
ingest_s=$(median "${ingest_times[@]}")
megabytes=$(ratio "$bytes" 1000000)
emit table_ingest_1GB_no_sizes "$(ratio "$megabytes" "$ingest_s")" MB/s
emit cp_1GB "$(ratio "$megabytes" "$cp_s")" MB/s
emit ratio:ingest_vs_cp_throughput "$(ratio "$cp_s" "$ingest_s")" x
emit table_ingest_1GB_peak_rss "$(peak_rss_mb "$bin" ingest "$work/t" "$big" --episode again --no-sizes)" MB

# A table of 10,000 episodes (one commit; identical payloads are stored once).
mkdir -p "$work/eps"
small="$root/testdata/video/h264_vfr.mp4"
for i in $(seq -w 0 9999); do ln "$small" "$work/eps/ep$i.mp4"; done
"$bin" create "$work/t10k" --column 'note:string?' >/dev/null
"$bin" ingest "$work/t10k" "$work"/eps/ep0*.mp4 >/dev/null
rss_small=$(peak_rss_mb "$bin" ls --json "$work/t10k")
"$bin" ingest "$work/t10k" "$work"/eps/ep[1-9]*.mp4 >/dev/null
ls_times=()
for _ in $(seq "$RUNS"); do ls_times+=("$(seconds "$bin" ls --json "$work/t10k")"); done
emit table_ls_10000_episodes "$(median "${ls_times[@]}")" s
emit table_ls_1000_episodes_peak_rss "$rss_small" MB
emit table_ls_10000_episodes_peak_rss "$(peak_rss_mb "$bin" ls --json "$work/t10k")" MB
