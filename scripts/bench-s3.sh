#!/usr/bin/env bash
# S3 mount benchmarks against a real versitygw on loopback (built by
# scripts/versitygw.sh), side by side with the same episode mounted from a
# local-disk table in the same run. Prints NAME VALUE UNIT lines (see
# scripts/bench.sh).
#   (a) cold block cache, every frame of a 60 s 640x480 30 fps H.264
#       episode read in order through the mount: bytes fetched from S3 /
#       the episode's video payload (target <= 1.2), GETs, GETs and bytes
#       per frame (from the mount's .stats framefs_s3_* counters), and
#       its frames/s (on loopback, so mostly decoding)
#   (b) warm block cache (a new mount over the cache (a) filled): frames/s
#       of the same sequential read vs the local-disk mount (target >= 0.9),
#       and the mount daemons' CPU time for it (local / S3: steadier than
#       frames/s when other jobs share the machine)
#   (c) cold block cache, 300 frames in a fixed random order: GETs and
#       bytes fetched per frame
#   (d) the same for 8 random frames of a 3-minute GOP-250 episode served
#       as BMP (a frame costs its GOP, ~1 MB; reads this sparse show what
#       is fetched beyond the GOPs decoded)
#   (e) ingest of a 1 GB episode stored on S3 (internal/s3bench): into an
#       S3 table with --no-sizes (copied by the server), bytes the node
#       reads from S3 / payload (target <= 0.01) and time vs the server's
#       own CopyObject (target <= 1.5x) and one-part multipart copy; into a
#       local table (streamed), bytes read and throughput vs the AWS SDK's
#       download manager (target >= 0.8x)
# Every mount is a fresh process, so only the block cache carries over.
# Without versitygw it prints nothing, unless FRAMEFS_REQUIRE_S3=1.
set -euo pipefail
export LC_ALL=C
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup "$@"
py=/usr/bin/python3
random_frames=${RANDOM_FRAMES:-300}

if ! gw=$("$root/scripts/versitygw.sh" build 2>/dev/null) || [ ! -x "$gw" ]; then
	if [ "${FRAMEFS_REQUIRE_S3:-}" = 1 ]; then
		echo "bench-s3: versitygw missing (scripts/versitygw.sh build)" >&2
		exit 1
	fi
	echo "bench-s3: versitygw missing, skipped (scripts/versitygw.sh build)" >&2
	exit 0
fi

on_exit rm -f "${TMPDIR:-/tmp}/framefs-$(tr / _ <<<"${mnt#/}").log" # the mount daemon's log

# 60 s of 640x480 30 fps H.264 (GOP 30, B-frames), made once.
video="$cache/s3_640x480_60s.mp4"
lavfi_video "$video" -i testsrc2=size=640x480:rate=30 -t 60 -c:v libx264 -preset veryfast \
	-g 30 -bf 2 -pix_fmt yuv420p
frames=1800
payload=$(stat -c %s "$video") # stored byte for byte: the episode's video payload
sparse_video="$cache/s3_640x480_180s_gop250.mp4"
lavfi_video "$sparse_video" -i testsrc2=size=640x480:rate=30 -t 180 -c:v libx264 -preset veryfast \
	-g 250 -bf 2 -pix_fmt yuv420p

mkdir -p "$work/data/frames" "$mnt"
s3_server "$work/data" bench
on_exit unmount "$mnt" # before the server stops

ln -s "$video" "$work/ep.mp4"
"$bin" create s3://frames/wh/bench --column 'note:string?' --s3-cache-dir "$work/ingest-cache" >/dev/null
"$bin" ingest s3://frames/wh/bench "$work/ep.mp4" --s3-cache-dir "$work/ingest-cache" >/dev/null # stores JPEG sizes
ln -s "$sparse_video" "$work/long.mp4"
"$bin" create s3://frames/wh/sparse --column 'note:string?' --s3-cache-dir "$work/ingest-cache" >/dev/null
"$bin" ingest s3://frames/wh/sparse "$work/long.mp4" --no-sizes --s3-cache-dir "$work/ingest-cache" >/dev/null
"$bin" create "$work/local/bench" --column 'note:string?' >/dev/null
"$bin" ingest "$work/local/bench" "$work/ep.mp4" >/dev/null

# mount_src SRC ARGS...: a fresh, read-only mount daemon at $mnt; its pid
# in $daemon_pid.
mount_src() {
	local src=$1
	shift
	mount_daemon "$src" "$mnt" -o ro "$@"
}
# cpu_seconds: user + system CPU time of the mount daemon so far (less
# disturbed by other processes on a shared machine than wall time).
cpu_seconds() { ratio "$(awk '{print $14 + $15}' "/proc/$daemon_pid/stat")" "$(getconf CLK_TCK)"; }
# counter NAME: a counter of the mount's .stats.
counter() { stats_value "$mnt" "$1"; }
snapshot() { gets0=$(counter framefs_s3_get_requests_total) bytes0=$(counter framefs_s3_read_bytes_total); }
delta_gets() { echo $(($(counter framefs_s3_get_requests_total) - gets0)); }
delta_bytes() { echo $(($(counter framefs_s3_read_bytes_total) - bytes0)); }

# read_seq DIR: reads every frame of DIR in name order (stat, then the
# whole file, as a loader would); prints frames/s.
read_seq() {
	"$py" - "$1" <<'PY'
import os, sys, time
d = sys.argv[1]
names = sorted(n for n in os.listdir(d) if n.endswith(".jpg"))
start = time.time()
for n in names:
    p = os.path.join(d, n)
    size = os.stat(p).st_size
    with open(p, "rb") as f:
        data = f.read()
    if len(data) != size:
        sys.exit("%s: read %d bytes, stat said %d" % (p, len(data), size))
print(len(names), time.time() - start)
PY
}
# seq_fps DIR: frames/s of read_seq DIR.
seq_fps() { read_seq "$1" | (read -r n s && ratio "$n" "$s"); }

# read_random DIR N [EXT]: reads N frames of DIR in a fixed pseudo-random
# order.
read_random() {
	"$py" - "$1" "$2" "${3:-.jpg}" <<'PY'
import os, random, sys
d, n, ext = sys.argv[1], int(sys.argv[2]), sys.argv[3]
names = sorted(x for x in os.listdir(d) if x.endswith(ext))
for name in random.Random(7).sample(names, n):
    with open(os.path.join(d, name), "rb") as f:
        f.read()
PY
}

ep="$mnt/bench/latest/ep"

# (a) cold block cache, sequential.
mount_src s3://frames/wh --s3-cache-dir "$work/cache-seq"
snapshot
cold_fps=$(seq_fps "$ep")
gets=$(delta_gets)
bytes=$(delta_bytes)
emit s3_cold_seq_fetched_vs_payload "$(ratio "$bytes" "$payload")" x
emit s3_cold_seq_gets "$gets" requests
emit s3_cold_seq_gets_per_frame "$(ratio "$gets" "$frames")" requests/frame
emit s3_cold_seq_bytes_per_frame "$(ratio "$bytes" "$frames")" bytes/frame
emit s3_cold_seq_fps "$cold_fps" frames/s

# (b) warm block cache vs local disk, each on a fresh mount, alternately,
# RUNS times each (medians), and the mount daemon's CPU time for the read.
warm_runs=() local_runs=() warm_cpus=() local_cpus=()
for _ in $(seq "$RUNS"); do
	mount_src s3://frames/wh --s3-cache-dir "$work/cache-seq"
	snapshot
	warm_runs+=("$(seq_fps "$ep")")
	warm_cpus+=("$(cpu_seconds)")
	warm_gets=$(delta_gets) warm_bytes=$(delta_bytes)
	mount_src "$work/local"
	local_runs+=("$(seq_fps "$ep")")
	local_cpus+=("$(cpu_seconds)")
done
warm_fps=$(median "${warm_runs[@]}")
local_fps=$(median "${local_runs[@]}")
warm_cpu=$(median "${warm_cpus[@]}")
local_cpu=$(median "${local_cpus[@]}")
emit s3_warm_seq_fps "$warm_fps" frames/s
emit local_seq_fps "$local_fps" frames/s
emit s3_warm_seq_gets "$warm_gets" requests # whole reads of table metadata only
emit s3_warm_seq_fetched_bytes "$warm_bytes" bytes
emit ratio:s3_warm_seq_vs_local "$(ratio "$warm_fps" "$local_fps")" x
emit s3_warm_seq_daemon_cpu "$warm_cpu" s
emit local_seq_daemon_cpu "$local_cpu" s
emit ratio:s3_warm_seq_daemon_cpu_vs_local "$(ratio "$local_cpu" "$warm_cpu")" x

# (c) cold block cache, random order.
mount_src s3://frames/wh --s3-cache-dir "$work/cache-random"
snapshot
read_random "$ep" "$random_frames"
gets=$(delta_gets)
bytes=$(delta_bytes)
emit "s3_cold_random_${random_frames}_gets_per_frame" "$(ratio "$gets" "$random_frames")" requests/frame
emit "s3_cold_random_${random_frames}_bytes_per_frame" "$(ratio "$bytes" "$random_frames")" bytes/frame
emit "s3_cold_random_${random_frames}_fetched_vs_payload" "$(ratio "$bytes" "$payload")" x

# (d) cold block cache, a few random frames of a long GOP-250 episode.
mount_src s3://frames/wh --s3-cache-dir "$work/cache-sparse" --image-format bmp
ls "$mnt/sparse/latest/long" >/dev/null # the listing's own reads (index, rows) are not counted
snapshot
read_random "$mnt/sparse/latest/long" 8 .bmp
gets=$(delta_gets)
bytes=$(delta_bytes)
emit s3_cold_sparse_random_8_gop250_gets_per_frame "$(ratio "$gets" 8)" requests/frame
emit s3_cold_sparse_random_8_gop250_bytes_per_frame "$(ratio "$bytes" 8)" bytes/frame

# (e) ingest from S3: about 1 GB, 165 s of 1280x720 30 fps H.264 at
# 50 Mbit/s with the moov at the end, as cameras and ffmpeg write it.
unmount "$mnt"
big="$cache/s3_ingest_720p_1GB.mp4"
lavfi_video "$big" -i testsrc2=size=1280x720:rate=30 -t 165 -vf noise=alls=12:allf=t \
	-c:v libx264 -preset ultrafast -b:v 50M -maxrate 50M -bufsize 100M -g 60 -pix_fmt yuv420p
mkdir -p "$work/ingest-local"
(cd "$root" && go build -o "$work/s3bench" ./internal/s3bench)
"$work/s3bench" -bin "$bin" -video "$big" -bucket ingest -work "$work/ingest-local" -runs "${INGEST_RUNS:-3}" -server-pid "$s3_pid"
