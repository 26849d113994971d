#!/usr/bin/env bash
# bench-decode.sh: frame serving side by side with the tools people would
# otherwise use, in one run on the same machine, so that the ratios hold
# even where absolute times drift (shared machines).
#
#   (a) every frame in order as JPEG: framefs frame server at its default
#       quality (95; libjpeg-turbo) vs `ffmpeg -threads 1 ... -c:v mjpeg
#       -q:v 2`, with the mean image size of both (framefs's are larger)
#   (b) every frame in order as BMP: framefs vs `ffmpeg ... -c:v bmp`
#   (c) 500 random frames (one fixed list for both, no frame twice) with an
#       exact seek per frame: framefs (BMP) vs PyAV (container.seek to the
#       keyframe, decode to the target PTS, to_ndarray rgb24), at GOP 30
#       and GOP 250. PyAV runs with its default settings (slice threading,
#       automatic thread count; x264's single-slice frames decode on one
#       thread that way); framefs with its defaults: one decoder thread, a
#       64 MiB image cache (never hit: no frame is read twice) and the
#       256 MiB cache of decoded pictures, which serves a frame an earlier
#       request decoded on its way to another
#   (d) peak RSS of every framefs run
#
# Prints NAME VALUE UNIT lines. ratio:... = framefs fps / peer fps, so
# above 1 means framefs is faster. Figures are medians of RUNS runs (3;
# scripts/lib.sh).
#
# Usage: scripts/bench-decode.sh            (any working directory)
set -euo pipefail
export LC_ALL=C
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
cache=$(bench_cache)
random_frames=${RANDOM_FRAMES:-500}
py=/usr/bin/python3 # Debian's python3-av belongs to it
tmp=$(mktemp -d)
on_exit rm -rf "$tmp"

if ! "$py" -c 'import av, numpy' 2>/dev/null; then
	echo "bench-decode: PyAV is missing: apt-get install -y python3-av python3-numpy python3-pil" >&2
	exit 1
fi

# 60 s of 640x480 30 fps H.264 test pattern, GOP 30 and GOP 250.
for gop in 30 250; do
	lavfi_video "$cache/testsrc2_640x480_60s_gop$gop.mp4" -i testsrc2=size=640x480:rate=30 -t 60 \
		-c:v libx264 -preset veryfast -pix_fmt yuv420p -g "$gop" -keyint_min "$gop" -sc_threshold 0
done
gop30="$cache/testsrc2_640x480_60s_gop30.mp4"
frames=1800

bench="$tmp/benchdecode"
(cd "$root" && go build -o "$bench" ./internal/cmd/benchdecode)

# framefs NAME ARGS...: run benchdecode RUNS times; emit median fps and
# the largest peak RSS; leave the fps in $fps.
framefs() {
	local name=$1
	shift
	local fpss=() rss=0
	for _ in $(seq "$RUNS"); do
		out=$("$bench" -name x "$@" 2>/dev/null)
		fpss+=("$(awk '$1=="x_fps" {print $2}' <<<"$out")")
		rss=$(awk -v r="$rss" '$1=="x_peak_rss" {print ($2>r)?$2:r}' <<<"$out")
	done
	fps=$(median "${fpss[@]}")
	emit "framefs_${name}_fps" "$fps" frames/s
	emit "framefs_${name}_peak_rss" "$rss" MB
}

# peer NAME FRAMES CMD...: median fps of CMD over RUNS runs; sets $peer_fps.
peer() {
	local name=$1 n=$2
	shift 2
	local fpss=()
	for _ in $(seq "$RUNS"); do
		fpss+=("$(ratio "$n" "$(seconds "$@")")")
	done
	peer_fps=$(median "${fpss[@]}")
	emit "${name}_fps" "$peer_fps" frames/s
}

# emit_ratio NAME A B: the figure ratio:NAME, A / B.
emit_ratio() { emit "ratio:$1" "$(ratio "$2" "$3")" x; }

ffmpeg_seq() { ffmpeg -v error -threads 1 -i "$1" -f image2pipe -c:v "$2" "${@:3}" - >/dev/null; }

# (a) sequential JPEG.
framefs seq_jpeg_gop30 -video "$gop30" -mode seq -format jpeg
fa=$fps
emit framefs_seq_jpeg_gop30_mean_bytes "$("$bench" -name x -video "$gop30" -mode seq -format jpeg 2>/dev/null | awk '$1=="x_mean_image_bytes" {print $2}')" bytes
peer ffmpeg_seq_jpeg_gop30 "$frames" ffmpeg_seq "$gop30" mjpeg -q:v 2
emit ffmpeg_seq_jpeg_gop30_mean_bytes "$(ratio "$(ffmpeg -v error -threads 1 -i "$gop30" -f image2pipe -c:v mjpeg -q:v 2 - | wc -c)" "$frames")" bytes
emit_ratio seq_jpeg_vs_ffmpeg "$fa" "$peer_fps"

# (b) sequential BMP.
framefs seq_bmp_gop30 -video "$gop30" -mode seq -format bmp
fb=$fps
peer ffmpeg_seq_bmp_gop30 "$frames" ffmpeg_seq "$gop30" bmp
emit_ratio seq_bmp_vs_ffmpeg "$fb" "$peer_fps"

# (c) random access with an exact seek per frame, same frames for both.
cat >"$tmp/pyav_random.py" <<'PY'
import sys, time
import av

path, frames_file = sys.argv[1], sys.argv[2]
targets = [int(x) for x in open(frames_file).read().split()]
container = av.open(path)
stream = container.streams.video[0]  # PyAV's default threading
# Presentation timestamps of every frame, from the packets.
pts = sorted(p.pts for p in container.demux(stream) if p.pts is not None)
start = time.perf_counter()
for i in targets:
    want = pts[i]
    container.seek(want, backward=True, any_frame=False, stream=stream)
    for frame in container.decode(stream):
        if frame.pts == want:
            frame.to_ndarray(format="rgb24")
            break
        if frame.pts > want:
            raise SystemExit("frame %d not found" % i)
print(len(targets) / (time.perf_counter() - start))
PY
"$py" -c "import random; r = random.Random(1); print('\n'.join(map(str, r.sample(range($frames), $random_frames))))" >"$tmp/frames.txt"

for gop in 30 250; do
	v="$cache/testsrc2_640x480_60s_gop$gop.mp4"
	framefs "random_bmp_gop$gop" -video "$v" -mode random -frames "$tmp/frames.txt" -format bmp
	fr=$fps
	fpss=()
	for _ in $(seq "$RUNS"); do
		fpss+=("$(round "$("$py" "$tmp/pyav_random.py" "$v" "$tmp/frames.txt")")")
	done
	pyfps=$(median "${fpss[@]}")
	emit "pyav_random_rgb_gop${gop}_fps" "$pyfps" frames/s
	emit_ratio "random_gop${gop}_vs_pyav" "$fr" "$pyfps"
done
