#!/usr/bin/env bash
# `make run`: shows what framefs can do today on the project's own demo
# videos: it indexes each one without decoding a frame (frame count, GOP
# structure, B-frames, edit lists, fragments) and refuses broken files with a
# reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/bin/framefs}")

echo "== framefs probe: frame indexes of the demo videos in testdata/video"
printf '%-24s %-6s %-9s %6s %6s %5s %4s %4s %4s\n' file codec size frames fps keys gop B edit
for video in "$root"/testdata/video/*.mp4; do
	name=$(basename "$video")
	if out=$("$bin" probe --json "$video" 2>&1); then
		jq -r --arg n "$name" '[$n, .codec, "\(.width)x\(.height)", .frames, (.fps*100|round/100),
			.keyframes, .longest_gop, (if .b_frames then "yes" else "no" end),
			(if .edit_list then "yes" else "no" end)] | @tsv' <<<"$out" |
			awk -F'\t' '{printf "%-24s %-6s %-9s %6s %6s %5s %4s %4s %4s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9}'
	else
		printf '%-24s refused: %s\n' "$name" "${out#framefs: }"
	fi
done
echo
echo "== framefs probe --frames testdata/video/h264_editlist.mp4 (first frames)"
"$bin" probe --frames "$root/testdata/video/h264_editlist.mp4" | head -22
echo
echo "Try: $bin probe --json --frames FILE"
