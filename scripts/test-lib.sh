#!/usr/bin/env bash
# Checks the helpers of scripts/lib.sh against known answers.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
check() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

check "round keeps four significant digits" "$(round 1.20149)" 1.201
check "round small values" "$(round 0.0066667)" 0.006667
check "round hundreds" "$(round 118.759)" 118.8
check "round never cuts the integer part" "$(round 2228224.4)" 2228224
check "round negative" "$(round -0.123456)" -0.1235
check "round zero" "$(round 0)" 0.000
check "median of three" "$(median 3 1 2)" 2
check "median keeps an odd middle as given" "$(median 10.2549 1 99)" 10.2549
check "median of four" "$(median 4 1 3 2)" 2.500
check "median of two, rounded" "$(median 1000 1001)" 1000
check "median from stdin" "$(printf '5\n1\n3\n' | median)" 3
check "median sorts numbers, not text" "$(median 9 10 100)" 10
median >/dev/null </dev/null && fail "median of nothing succeeded"
check "ratio" "$(ratio 2 3)" 0.6667
check "ratio of rates" "$(ratio 2000 1.5)" 1333
check "ratio per frame" "$(ratio 12 1800)" 0.006667
ratio 1 0 >/dev/null && fail "ratio by zero succeeded"
check "emit" "$(emit name 1.5 x)" "name 1.5 x"
s=$(seconds sleep 0.2)
awk -v s="$s" 'BEGIN {exit !(s >= 0.2 && s < 5)}' || fail "seconds sleep 0.2: $s"
[[ "$(seconds echo hello)" != *hello* ]] || fail "seconds let the command's output through"

# The setup helpers.
lib="$(dirname "$0")/lib.sh"
check "fail" "$(bash -c ". '$lib'; fail boom; echo not reached")" "FAIL: boom"
bash -c ". '$lib'; fail boom" >/dev/null && fail "fail exited 0"
out=$(bash -c ". '$lib'; on_exit echo first; on_exit false; on_exit echo second; exit 3") && fail "on_exit changed the exit status"
check "on_exit runs the last registered first, past a failing one" "${out//$'\n'/ }" "second first"
check "root" "$root" "$(cd "$(dirname "$0")/.." && pwd)"
check "framefs_bin makes a path absolute" "$(cd "$root/scripts" && framefs_bin lib.sh)" "$root/scripts/lib.sh"
check "bench_cache" "$(bench_cache)" "$root/.cache/bench"
[ -d "$root/.cache/bench" ] || fail "bench_cache did not make the directory"
out=$(bash -c ". '$lib'; bench_setup '$lib'; echo \"\$bin \$cache \$work \$mnt\"")
read -r b c w m <<<"$out"
check "bench_setup bin" "$b" "$root/scripts/lib.sh"
check "bench_setup cache" "$c" "$root/.cache/bench"
check "bench_setup mnt" "$m" "$w/mnt"
case "$w" in "$root/.cache/bench/"?*) ;; *) fail "bench_setup work is $w" ;; esac
[ -e "$w" ] && fail "bench_setup left its work directory behind"
tmp=$(mktemp -d)
on_exit rm -rf "$tmp"
printf 'framefs_x_total 12\nframefs_x 5\n' >"$tmp/.stats"
check "stats_value" "$(stats_value "$tmp" framefs_x)" 5
check "stats_value of a missing name" "$(stats_value "$tmp" framefs_y)" ""
is_mounted "$tmp" && fail "is_mounted: a plain directory"
unmount "$tmp" || fail "unmount of a plain directory failed"
sleep 0.3 &
daemon_pid=$!
stop_daemon "$tmp"
kill -0 "$!" 2>/dev/null && fail "stop_daemon returned before the daemon exited"
check "stop_daemon clears daemon_pid" "$daemon_pid" ""
lavfi_video "$tmp/v.mp4" -i testsrc2=size=32x32:rate=10 -frames:v 3 -c:v libx264 -pix_fmt yuv420p
check "lavfi_video frames" "$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$tmp/v.mp4")" 3
[ -e "$tmp/v.mp4.tmp.mp4" ] && fail "lavfi_video left its temporary file"
echo kept >"$tmp/v.mp4"
lavfi_video "$tmp/v.mp4" -i testsrc2=size=32x32:rate=10 -frames:v 3 -c:v libx264 -pix_fmt yuv420p
check "lavfi_video keeps a video made before" "$(cat "$tmp/v.mp4")" kept
echo "test-lib: ok"
