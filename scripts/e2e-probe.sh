#!/usr/bin/env bash
# End-to-end check of `framefs probe`: for every fixture with a golden report
# (testdata/golden, written by scripts/make-golden.sh from ffprobe), the
# command's JSON must give FFmpeg's frame count, every frame's pts and the
# keyframe set; files that cannot be indexed must exit non-zero with a reason
# on stderr.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bin=$(framefs_bin "${1:-}")
real=$root/testdata/real
py=/usr/bin/python3
tmp=$(mktemp -d)
on_exit rm -rf "$tmp"

locate() {
	if [ -f "$root/testdata/video/$1" ]; then echo "$root/testdata/video/$1"
	elif [ -f "$real/$1" ]; then echo "$real/$1"
	fi
}

pass=0 fail=0
for golden in "$root"/testdata/golden/*.stream*.json; do
	name=$(jq -r .file "$golden")
	stream=$(jq -r .stream "$golden")
	video=$(locate "$name")
	if [ -z "$video" ]; then
		echo "FAIL $name: the video of $golden is in neither testdata/video nor testdata/real"
		fail=$((fail + 1))
		continue
	fi
	if ! "$bin" probe --json --frames --track "$stream" "$video" >"$tmp/out.json" 2>"$tmp/err"; then
		echo "FAIL $name stream $stream: $(cat "$tmp/err")"
		fail=$((fail + 1))
		continue
	fi
	if "$py" - "$golden" "$tmp/out.json" <<'PY'; then pass=$((pass + 1)); else echo "FAIL $name stream $stream"; fail=$((fail + 1)); fi
import json, sys
g = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
num, den = g["time_base"]
problems = []
if r["frames"] != g["frames"]:
    problems.append(f'frames {r["frames"]} != ffprobe {g["frames"]}')
if len(r["frame_list"]) != r["frames"]:
    problems.append("frame_list length differs from frames")
for f, pts in zip(r["frame_list"], g["pts"]):
    if abs(f["pts_time"] - pts * num / den) > 1e-6:
        problems.append(f'frame {f["ordinal"]}: pts_time {f["pts_time"]} != ffprobe {pts * num / den}')
        break
keys = [f["ordinal"] for f in r["frame_list"] if f["key"]]
if keys != g["key_frames"]:
    problems.append(f'keyframes {keys} != ffprobe {g["key_frames"]}')
for k in ("codec", "width", "height"):
    if r[k] != g[k]:
        problems.append(f'{k} {r[k]} != ffprobe {g[k]}')
for p in problems:
    print("  " + p)
sys.exit(1 if problems else 0)
PY
done

# Inputs that must be refused with a reason.
bad=("$root/testdata/video/empty.mp4" "$root/testdata/video/random.mp4" "$root/testdata/video/audio_only.mp4" "$real/truncated_h264_aac.mp4")
for video in "${bad[@]}"; do
	if "$bin" probe "$video" >/dev/null 2>"$tmp/err"; then
		echo "FAIL $(basename "$video"): probe succeeded on bad input"
		fail=$((fail + 1))
	elif ! grep -q "$(basename "$video")" "$tmp/err"; then
		echo "FAIL $(basename "$video"): error does not name the file: $(cat "$tmp/err")"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done

echo "e2e-probe: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
