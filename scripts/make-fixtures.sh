#!/usr/bin/env bash
# make-fixtures.sh: generate the small synthetic test videos in testdata/video/.
#
# Every file is made with the ffmpeg command line from lavfi sources (testsrc2,
# mandelbrot, sine), so nothing is copied from elsewhere. Output is meant to be
# deterministic: single-threaded encoders, bitexact flags, no metadata and no
# creation timestamps. Running the script twice with the same ffmpeg/x264/x265
# build gives byte-identical files. (x264 and x265 embed their own version in the
# stream, so a different encoder build gives different, but equivalent, bytes.)
#
# Usage: scripts/make-fixtures.sh        (any working directory)
#        FFMPEG=/path/ffmpeg FFPROBE=/path/ffprobe scripts/make-fixtures.sh
set -euo pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/testdata/video"
FFMPEG="${FFMPEG:-/usr/bin/ffmpeg}"
FFPROBE="${FFPROBE:-/usr/bin/ffprobe}"
PY=/usr/bin/python3

mkdir -p "$OUT"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# Options shared by every ffmpeg run.
IN=(-hide_banner -nostdin -loglevel error -y)
# Output-side options for reproducible files: no metadata copied from the input,
# bitexact muxer (no "Lavf<version>" string, creation time 0) and bitexact codec.
BITEXACT=(-map_metadata -1 -map_chapters -1 -fflags +bitexact -flags +bitexact -threads 1)
# libx264: single thread, CRF 35, fixed GOP of 30, no scene-cut keyframes, 3 B-frames.
X264=(-c:v libx264 -preset medium -pix_fmt yuv420p -crf 35
      -x264-params threads=1:sliced-threads=0:lookahead-threads=1
      -bf 3 -g 30 -keyint_min 30 -sc_threshold 0)
# Test pattern: 160x120, 30 fps, 3 s (90 frames).
SRC_90=(-f lavfi -i testsrc2=size=160x120:rate=30:duration=3)

# produce NAME ARGS...: run ffmpeg writing to a temp file, then move it into place,
# so an interrupted run never leaves a half-written fixture behind.
produce() {
    local name="$1"; shift
    local tmp="$TMP/$name"
    "$FFMPEG" "${IN[@]}" "$@" "$tmp"
    mv -f "$tmp" "$OUT/$name"
}

# count FILE: print "frames packets" of the first video stream.
count() {
    "$FFPROBE" -v error -select_streams v:0 -count_frames -count_packets \
        -show_entries stream=nb_read_frames,nb_read_packets -of csv=p=0 "$1" | tr ',' ' '
}

# The plain case: H.264 with B-frames (reordering, ctts, an edit list for the
# initial composition delay), a keyframe every 30 frames, and moov at the end of
# the file (ffmpeg's default), so the index must be found after mdat.
produce h264_bframes_gop30.mp4 "${SRC_90[@]}" "${X264[@]}" "${BITEXACT[@]}"

# Same stream as above but with moov before mdat (-movflags +faststart), the
# layout of most files served on the web.
produce h264_faststart.mp4 "${SRC_90[@]}" "${X264[@]}" "${BITEXACT[@]}" -movflags +faststart

# Long GOP (250): 300 frames with only two keyframes (0 and 250), so seeking to a
# late frame needs decoding from far back. Tiny resolution keeps it small.
produce h264_gop250.mp4 -f lavfi -i testsrc2=size=96x64:rate=30:duration=10 \
    "${X264[@]}" -g 250 -keyint_min 250 "${BITEXACT[@]}"

# Edit list that drops leading frames. A stream copy that starts between
# keyframes (-ss 0.5 with GOP 30 at 30 fps) keeps the packets from the previous
# keyframe on, and the muxer writes an elst whose media_time skips the 15 frames
# before 0.5 s: they are decoded (needed as references) but not presented.
# Proof: ffprobe reports fewer decoded frames than packets (checked below).
"$FFMPEG" "${IN[@]}" "${SRC_90[@]}" "${X264[@]}" "${BITEXACT[@]}" "$TMP/editlist_src.mp4"
produce h264_editlist.mp4 -ss 0.5 -i "$TMP/editlist_src.mp4" -map 0:v -c copy "${BITEXACT[@]}"
read -r frames packets < <(count "$OUT/h264_editlist.mp4")
if (( frames >= packets )); then
    echo "make-fixtures: h264_editlist.mp4: expected fewer frames than packets, got $frames frames, $packets packets" >&2
    exit 1
fi

# Negative composition offsets: with -movflags negative_cts_offsets the muxer
# writes a version 1 ctts box with signed offsets (first sample: dts 0, offset 0)
# and an elst with media_time 0, instead of positive offsets plus an elst that
# skips the composition delay. Presented pts are the same as in
# h264_bframes_gop30.mp4. Note: ffmpeg's demuxer shifts dts by the most negative
# offset (-1024) so that dts <= pts; the dts in the file itself start at 0.
produce h264_negative_cts.mp4 "${SRC_90[@]}" "${X264[@]}" "${BITEXACT[@]}" -movflags negative_cts_offsets
# The box is "....ctts" followed by the version byte; require version 1.
if ! "$PY" - "$OUT/h264_negative_cts.mp4" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
i = data.find(b"ctts")
sys.exit(0 if i >= 0 and data[i + 4] == 1 else 1)
EOF
then
    echo "make-fixtures: h264_negative_cts.mp4: ctts box missing or not version 1" >&2
    exit 1
fi

# Fragmented MP4 (empty moov, one moof/mdat per keyframe): sample tables live in
# trun boxes, not in stbl. B-frames, GOP 30, 90 frames. There is no edit list,
# so the composition delay stays: ffprobe's first pts is 1024, not 0.
produce h264_fragmented.mp4 "${SRC_90[@]}" "${X264[@]}" "${BITEXACT[@]}" -movflags frag_keyframe+empty_moov

# Variable frame rate: every third frame (n mod 3 == 1) is dropped and the
# remaining frames keep their original timestamps (-fps_mode vfr), so pts
# deltas alternate between one and two frame durations (512 and 1024 ticks).
produce h264_vfr.mp4 "${SRC_90[@]}" -vf "select=not(eq(mod(n\,3)\,1))" -fps_mode vfr \
    "${X264[@]}" "${BITEXACT[@]}"
if ! "$FFPROBE" -v error -select_streams v:0 -show_entries frame=pts -of json "$OUT/h264_vfr.mp4" |
    "$PY" -c '
import json, sys
pts = [f["pts"] for f in json.load(sys.stdin)["frames"]]
d = {b - a for a, b in zip(pts, pts[1:])}
sys.exit(0 if len(d) > 1 else 1)'
then
    echo "make-fixtures: h264_vfr.mp4: pts deltas are all equal, expected variable frame rate" >&2
    exit 1
fi

# HEVC (libx265) with B-frames in an hvc1-tagged track (parameter sets only in
# hvcC, the tag Apple players want). x265 runs without a thread pool and without
# frame threads; info=0 leaves out the SEI carrying x265's version and options.
# x265's default open GOP is kept on purpose: frame 30 is a CRA (flagged as a
# key/sync sample), not an IDR, and the three packets that follow it in decode
# order are RASL pictures presented *before* it (frames 27-29) that reference
# the previous GOP.
produce hevc.mp4 -f lavfi -i mandelbrot=size=160x120:rate=30 -frames:v 60 \
    -c:v libx265 -pix_fmt yuv420p -crf 35 -preset medium -tag:v hvc1 \
    -x265-params pools=none:frame-threads=1:lookahead-slices=0:bframes=3:keyint=30:min-keyint=30:scenecut=0:info=0:log-level=error \
    "${BITEXACT[@]}"

# MPEG-4 Part 2 (a non-AVC codec in MP4, decoded by the native ffmpeg decoder)
# with 2 B-frames, 60 frames, GOP 30. The encoder codes the last frame (59) as
# an I-frame when it flushes, so keyframes are 0, 30 and 59.
produce mpeg4_part2.mp4 -f lavfi -i testsrc2=size=160x120:rate=30:duration=2 \
    -c:v mpeg4 -bf 2 -g 30 -q:v 12 -pix_fmt yuv420p "${BITEXACT[@]}"

# Video plus audio with the AAC track first (stream 0 audio, stream 1 video), so
# the video stream index is not 0 and video chunk offsets interleave with audio
# chunks in mdat.
produce h264_with_audio.mp4 "${SRC_90[@]}" \
    -f lavfi -i sine=frequency=440:sample_rate=44100:duration=3 \
    -map 1:a -map 0:v "${X264[@]}" -c:a aac -b:a 32k "${BITEXACT[@]}"

# A valid MP4 with no video stream at all: must be refused (no video), not crash.
produce audio_only.mp4 -f lavfi -i sine=frequency=440:sample_rate=44100:duration=1 \
    -c:a aac -b:a 32k "${BITEXACT[@]}"

# Zero-byte file: must be refused cleanly.
: > "$TMP/empty.mp4"
mv -f "$TMP/empty.mp4" "$OUT/empty.mp4"

# 4096 bytes of deterministic garbage (SHA-256 in counter mode, fixed seed):
# not a container at all, must be refused cleanly.
"$PY" - "$TMP/random.mp4" <<'EOF'
import hashlib, sys
out = b"".join(hashlib.sha256(b"framefs random.mp4 %d" % i).digest() for i in range(128))
open(sys.argv[1], "wb").write(out[:4096])
EOF
mv -f "$TMP/random.mp4" "$OUT/random.mp4"

written=("$OUT"/*.mp4)
total=$(du -cb "${written[@]}" | tail -n1 | cut -f1)
echo "make-fixtures: wrote ${#written[@]} files, $total bytes, into $OUT"
