#!/usr/bin/env bash
# make-golden.sh: write FFmpeg's view of every test video into testdata/golden/.
#
# What the goldens are for: framefs builds its own frame index from the MP4
# sample tables (stts/ctts/stss/elst, or trun in fragmented files). Tests compare
# that index with what FFmpeg (ffprobe 5.1) reports for the same stream: the
# number of decoded frames, the pts of every frame in presentation order, and
# the ordinals of the keyframes. A mismatch means framefs would serve a
# different frame N than `ffmpeg -vf select=eq(n\,N)` produces.
#
# Inputs: every testdata/video/*.mp4 that has a video stream, and the
# real-world files in testdata/real/ listed below. Every video stream of a
# file gets its own golden (nasa_13013.mp4 has two: streams 0 and 3).
#
# Output: testdata/golden/<basename>.stream<S>.json, S = FFmpeg stream index:
#   {
#     "file": "h264_bframes_gop30.mp4",   base name of the video
#     "stream": 0,                         FFmpeg stream index
#     "codec": "h264",                     ffprobe codec_name
#     "width": 160,
#     "height": 120,
#     "time_base": [1, 15360],             stream time base, [num, den]
#     "frames": 90,                        -count_frames nb_read_frames
#     "packets": 90,                       -count_packets nb_read_packets
#     "pts": [0, 512, ...],                pts of every decoded frame, presentation
#                                          order, stream time base (-show_frames)
#     "key_frames": [0, 30, 60],           ordinals in "pts" of frames with key_frame=1
#     "packet_pts_key": [[0, true], ...]  every packet in decode order:
#                                          [pts, "K" in flags] (-show_packets)
#   }
# One key per line, arrays on one line. If a decoded frame has no pts, its
# best_effort_timestamp is used instead and a warning goes to stderr; a packet
# without pts is written as null (no file here needs either).
#
# And testdata/golden/best_stream.json: file name -> index of the video stream
# the ffmpeg command line picks when no -map is given (read from its "Stream
# mapping:" output). nasa_13013.mp4 -> 3 (the larger of its two video streams).
#
# The output depends only on the input files and the ffprobe/ffmpeg build, so
# running the script again gives byte-identical files.
#
# Usage: scripts/make-golden.sh          (any working directory)
set -euo pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VIDEO_DIR="$ROOT/testdata/video"
REAL_DIR="$ROOT/testdata/real"
OUT="$ROOT/testdata/golden"
FFMPEG="${FFMPEG:-/usr/bin/ffmpeg}"
FFPROBE="${FFPROBE:-/usr/bin/ffprobe}"
# Debian's Python (standard library only), not whatever python3 is first on PATH.
PY=/usr/bin/python3

REAL_FILES=(
    nasa_13013.mp4
    h264_10bits.mp4
    h265_10bits.mp4
    h265_video.mp4
    bt709_full_range.mp4
    av1_video.mkv
    fragmented_h264_aac.mp4
    small_h264_aac.mp4
)

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/golden"

inputs=()
for f in "$VIDEO_DIR"/*.mp4; do
    [[ -e "$f" ]] && inputs+=("$f")
done
for f in "${REAL_FILES[@]}"; do
    if [[ ! -e "$REAL_DIR/$f" ]]; then
        echo "make-golden: $REAL_DIR/$f is missing" >&2
        exit 1
    fi
    inputs+=("$REAL_DIR/$f")
done

# video_streams FILE: print the index of every video stream (attached pictures
# such as cover art are not video). Prints nothing for files ffprobe cannot
# open (empty.mp4, random.mp4) or that have no video (audio_only.mp4).
video_streams() {
    "$FFPROBE" -v quiet -show_entries stream=index,codec_type:stream_disposition=attached_pic \
        -of json "$1" 2>/dev/null | "$PY" -c '
import json, sys
try:
    streams = json.load(sys.stdin).get("streams", [])
except ValueError:
    streams = []
for s in streams:
    if s.get("codec_type") == "video" and not s.get("disposition", {}).get("attached_pic"):
        print(s["index"])' || true
}

# best_stream FILE: index of the input stream ffmpeg maps to its output video
# stream by default. -an -sn -dn leave the video mapping as the only one.
best_stream() {
    "$FFMPEG" -hide_banner -nostdin -loglevel info -i "$1" -an -sn -dn -frames:v 1 -f null - 2>&1 |
        "$PY" -c '
import re, sys
lines = sys.stdin.read().splitlines()
start = lines.index("Stream mapping:")
for line in lines[start + 1:]:
    m = re.match(r"\s+Stream #0:(\d+) -> #0:0\b", line)
    if m:
        print(m.group(1))
        sys.exit(0)
sys.exit("no video stream mapping found")'
}

: > "$TMP/best.tsv"
for path in "${inputs[@]}"; do
    name="$(basename "$path")"
    mapfile -t streams < <(video_streams "$path")
    if (( ${#streams[@]} == 0 )); then
        echo "make-golden: $name: no video stream, no golden" >&2
        continue
    fi
    printf '%s\t%s\n' "$name" "$(best_stream "$path")" >> "$TMP/best.tsv"

    for s in "${streams[@]}"; do
        "$FFPROBE" -v error -select_streams "$s" -count_frames -count_packets \
            -show_entries stream=index,codec_name,width,height,time_base,nb_read_frames,nb_read_packets \
            -of json "$path" > "$TMP/stream.json"
        "$FFPROBE" -v error -select_streams "$s" \
            -show_entries frame=pts,best_effort_timestamp,key_frame \
            -of json "$path" > "$TMP/frames.json"
        "$FFPROBE" -v error -select_streams "$s" \
            -show_entries packet=pts,dts,flags \
            -of json "$path" > "$TMP/packets.json"
        "$PY" - "$name" "$s" "$TMP" > "$TMP/golden/$name.stream$s.json" <<'EOF'
import json, sys

name, stream, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda n: json.load(open(f"{tmp}/{n}.json"))
info = load("stream")["streams"][0]
frames = load("frames").get("frames", [])
packets = load("packets").get("packets", [])

def die(msg):
    sys.exit(f"make-golden: {name} stream {stream}: {msg}")

if info["index"] != stream:
    die(f"ffprobe returned stream {info['index']}")
num, den = (int(x) for x in info["time_base"].split("/"))
n_frames, n_packets = int(info["nb_read_frames"]), int(info["nb_read_packets"])
if len(frames) != n_frames:
    die(f"-show_frames listed {len(frames)} frames, -count_frames {n_frames}")
if len(packets) != n_packets:
    die(f"-show_packets listed {len(packets)} packets, -count_packets {n_packets}")

pts = []
for i, f in enumerate(frames):
    if "pts" in f:
        pts.append(f["pts"])
    elif "best_effort_timestamp" in f:
        print(f"make-golden: {name} stream {stream}: frame {i} has no pts, "
              f"using best_effort_timestamp", file=sys.stderr)
        pts.append(f["best_effort_timestamp"])
    else:
        die(f"frame {i} has neither pts nor best_effort_timestamp")
key_frames = [i for i, f in enumerate(frames) if f.get("key_frame") == 1]
packet_pts_key = [[p.get("pts"), "K" in p.get("flags", "")] for p in packets]

fields = [
    ("file", name),
    ("stream", stream),
    ("codec", info["codec_name"]),
    ("width", info["width"]),
    ("height", info["height"]),
    ("time_base", [num, den]),
    ("frames", n_frames),
    ("packets", n_packets),
    ("pts", pts),
    ("key_frames", key_frames),
    ("packet_pts_key", packet_pts_key),
]
body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in fields)
sys.stdout.write("{\n" + body + "\n}\n")
EOF
    done
done

"$PY" - "$TMP/best.tsv" > "$TMP/golden/best_stream.json" <<'EOF'
import json, sys
best = {}
for line in open(sys.argv[1]):
    name, index = line.rstrip("\n").split("\t")
    best[name] = int(index)
sys.stdout.write(json.dumps(best, indent=2, sort_keys=True) + "\n")
EOF

# Replace the previous goldens (only the files this script writes).
mkdir -p "$OUT"
rm -f "$OUT"/*.stream*.json "$OUT/best_stream.json"
mv "$TMP"/golden/*.json "$OUT"/
written=("$OUT"/*.json)
echo "make-golden: wrote ${#written[@]} files into $OUT"
