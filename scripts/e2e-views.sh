#!/usr/bin/env bash
# End-to-end check of filters and views through the command line and a
# real mount: ls --where and --count, view create/list/delete with bad
# input refused, frames of a view equal to `framefs frame`, EROFS inside a
# view, a view made from a shell and deleted with rm -r; clip views and
# ls --window, their frames equal to `framefs frame` and their lists.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/bin/framefs}")
work=$(mktemp -d)
mnt="$work/mnt"
cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

tbl="$work/robot"
"$bin" create "$tbl" --column 'speed:float64?' --column task:string --column 'label:string?' --partition task >/dev/null
cp "$root/testdata/video/h264_faststart.mp4" "$work/ep_a.mp4"
cp "$root/testdata/video/h264_bframes_gop30.mp4" "$work/ep_b.mp4"
/usr/bin/python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
for ep, task in (("ep_a", "pick"), ("ep_b", "place")):
    with open(f"{w}/{ep}.jsonl", "w") as f:
        for i in range(90):
            f.write(json.dumps({"speed": None if i % 10 == 0 else i * 1.0, "task": task,
                                "label": ["cat", "dog", None][i % 3]}) + "\n")
PY
"$bin" ingest "$tbl" "$work/ep_a.mp4" "$work/ep_b.mp4" >/dev/null

# ls --where and --count.
[ "$("$bin" ls "$tbl" --where "speed >= 80" --count)" = 18 ] || fail "count speed >= 80"
[ "$("$bin" ls "$tbl" --where "task = 'pick' AND label = 'cat'" --count)" = 30 ] || fail "count pick cats"
got=$("$bin" ls "$tbl" --where "speed > 87 AND task = 'place'" --json | jq -c '[.frames[] | [.episode_id, .frame, .speed]]')
[ "$got" = '[["ep_b",88,88],["ep_b",89,89]]' ] || fail "ls --where --json: $got"
"$bin" ls "$tbl" --where "speed IS NULL" | grep -q "^ep_a  *0 " || fail "ls --where text lists episode and frame"

# Bad input: refused, naming the problem; nothing created.
bad() {
	local want=$1
	shift
	if "$bin" "$@" >/dev/null 2>"$work/err"; then fail "accepted: $*"; fi
	grep -q -- "$want" "$work/err" || fail "$*: error $(cat "$work/err"), want $want"
}
bad 'unknown column "spd"' ls "$tbl" --where "spd > 1" --count
bad "cannot compare speed (DOUBLE) with 'fast'" view create "$tbl" v1 --where "speed = 'fast'"
bad 'unterminated string' view create "$tbl" v2 --where "task = 'pick"
bad 'give the view' view create "$tbl" v3 --where ""
bad 'bytes long' view create "$tbl" v4 --where "$(head -c 102400 /dev/zero | tr '\0' ' ')speed > 1"
bad 'one condition' view create "$tbl" v5 --where "1=1; DROP TABLE x"
bad "contains '/'" view create "$tbl" a/b --where "speed > 1"
bad 'reserved' view create "$tbl" .. --where "speed > 1"
bad 'window length 0' view create "$tbl" c0 --window 0
bad 'frame skip -1 is negative' view create "$tbl" c1 --window 4 --frame-skip -1
bad 'hop -2' view create "$tbl" c2 --window 4 --hop -2
bad 'window length 1000000000 is over the limit' view create "$tbl" c3 --window 1000000000
bad 'spans 9999010000 frames' view create "$tbl" c4 --window 10000 --frame-skip 1000000
bad 'give the clip length with --window' view create "$tbl" c5 --where TRUE --hop 3
bad 'window length 0' ls "$tbl" --window 0
[ "$("$bin" view list "$tbl" --json)" = "[]" ] || fail "a refused view was created"

# Views: create, list, pin.
"$bin" view create "$tbl" fast --where "speed >= 80" >/dev/null
"$bin" view create "$tbl" cats --where "label = 'cat'" --snapshot 1 --group-by label >/dev/null
"$bin" view create "$tbl" thumbs --where "speed < 5" --max-side 32 --image-format png >/dev/null
[ "$("$bin" view list "$tbl" --json | jq -c '[.[] | [.view, .snapshot_id // 0]]')" = '[["cats",1],["fast",0],["thumbs",0]]' ] ||
	fail "view list: $("$bin" view list "$tbl" --json)"

# Clip views: windows of 4 frames, every other frame, starting every 5;
# speed is NULL on every 10th row, so 8 windows of each 90-row episode
# hold only matching rows (starts 5, 15, ..., 75).
clipflags=(--where "speed IS NOT NULL" --window 4 --frame-skip 1 --hop 5)
[ "$("$bin" ls "$tbl" "${clipflags[@]}" --count)" = 16 ] || fail "ls --window --count: $("$bin" ls "$tbl" "${clipflags[@]}" --count)"
got=$("$bin" ls "$tbl" "${clipflags[@]}" --json | jq -c '[.clips[0], .clips[15]]')
[ "$got" = '[{"episode":"ep_a","start":5,"frame_indices":[5,7,9,11]},{"episode":"ep_b","start":75,"frame_indices":[75,77,79,81]}]' ] ||
	fail "ls --window --json: $got"
"$bin" view create "$tbl" clips "${clipflags[@]}" | grep -q "clip view, window=4,skip=1,hop=5: 16 clips of 4 frames in 2 episodes" ||
	fail "view create does not report the clips"
"$bin" view create "$tbl" noclips --window 200 | grep -q ": 0 clips" || fail "a view with no clips is not reported"
"$bin" view list "$tbl" | grep -q "^clips .*window=4,skip=1,hop=5" || fail "view list does not show the window"

mkdir -p "$mnt"
"$bin" mount "$tbl" "$mnt" --daemon --refresh 200ms --staging-dir "$work/staging" >/dev/null
[ "$(ls "$mnt/views/fast/task=pick/ep_a" | grep -c jpg)" = 9 ] || fail "view fast lists $(ls "$mnt/views/fast/task=pick/ep_a")"
for n in 81 85 89; do
	"$bin" frame "$tbl" --episode ep_a --frame $n | cmp -s - "$mnt/views/fast/task=pick/ep_a/0000$n.jpg" ||
		fail "frame $n of the view differs from framefs frame"
done
[ "$(ls "$mnt/views/cats/label=cat/ep_b" | grep -c jpg)" = 30 ] || fail "group-by folder"
[ "$(ls "$mnt/views/thumbs/task=place/ep_b" | grep -c png)" = 4 ] || fail "png thumbnails"
size=$(stat -c %s "$mnt/views/thumbs/task=place/ep_b/000003.png")
[ "$(wc -c <"$mnt/views/thumbs/task=place/ep_b/000003.png")" = "$size" ] || fail "thumbnail size at stat"
/usr/bin/python3 -c "import sys,struct; d=open(sys.argv[1],'rb').read(); w,h=struct.unpack('>II',d[16:24]); assert max(w,h)==32,(w,h)" \
	"$mnt/views/thumbs/task=place/ep_b/000003.png" || fail "thumbnail dimensions"
touch "$mnt/views/fast/task=pick/ep_a/x" 2>"$work/err" && fail "created a file in a view"
grep -q "Read-only file system" "$work/err" || fail "not EROFS: $(cat "$work/err")"

# A clip view through the mount: folders match clips.jsonl, frames equal
# `framefs frame` at the clip's frame indices (the first and last clip of
# each episode; the others the snapshot's files, which equal it).
c="$mnt/views/clips"
[ "$(wc -l <"$c/clips.jsonl")" = 16 ] || fail "clips.jsonl: $(cat "$c/clips.jsonl")"
[ "$(find "$c/" -name 'clip-*' -type d | sed "s|^$c/||" | sort)" = "$(jq -r .path "$c/clips.jsonl" | sort)" ] ||
	fail "clip folders differ from clips.jsonl"
[ "$(head -1 "$c/clips.txt")" = "task=pick/ep_a/clip-000005 4 0" ] || fail "clips.txt: $(head -2 "$c/clips.txt")"
jq -r '.path + " " + .episode + " " + (.frame_indices | map(tostring) | join(" "))' "$c/clips.jsonl" |
	while read -r path ep frames; do
		j=0
		for n in $frames; do
			case $path in
			*/clip-000005 | */clip-000075) "$bin" frame "$tbl" --episode "$ep" --frame "$n" >"$work/want.jpg" ;;
			*) cp "$mnt/snapshots/1/$(dirname "$path")/$(printf %06d "$n").jpg" "$work/want.jpg" ;;
			esac
			cmp -s "$work/want.jpg" "$c/$path/0$j.jpg" || fail "$path/0$j.jpg differs from frame $n of $ep"
			j=$((j + 1))
		done
		[ "$(jq -c .frame_indices "$c/$path/clip.json")" = "[${frames// /,}]" ] || fail "$path/clip.json"
	done
cmp "$c/task=place/ep_b/video.mp4" "$work/ep_b.mp4" || fail "video.mp4 of a clip view"
[ "$(ls "$mnt/views/noclips/")" = "$(printf 'clips.jsonl\nclips.txt')" ] || fail "a view with no clips: $(ls "$mnt/views/noclips/")"

# From a shell: NAME.where makes a view, a bad one NAME.error, rm -r deletes.
echo "speed BETWEEN 10 AND 12" >"$mnt/views/mid.where"
[ "$(ls "$mnt/views/mid/task=place/ep_b/")" = "$(printf '000011.jpg\n000012.jpg\nframes.jsonl\nframes.parquet\nvideo.mp4')" ] ||
	fail "mid view: $(ls "$mnt/views/mid/task=place/ep_b/")"
echo "sped > 3" >"$mnt/views/oops.where"
grep -q 'unknown column "sped"' "$mnt/views/oops.error" || fail "oops.error: $(cat "$mnt/views/oops.error")"
rm -r "$mnt/views/mid"
"$bin" view list "$tbl" | grep -q "^mid " && fail "rm -r did not delete view mid"

# A view that follows the head moves with a commit.
cp "$root/testdata/video/h264_vfr.mp4" "$work/ep_c.mp4"
/usr/bin/python3 -c "
import json
with open('$work/ep_c.jsonl', 'w') as f:
    for i in range(60): f.write(json.dumps({'speed': 99.0, 'task': 'stack', 'label': None}) + '\n')"
"$bin" ingest "$tbl" "$work/ep_c.mp4" >/dev/null
for _ in $(seq 50); do [ -d "$mnt/views/fast/task=stack" ] && break; sleep 0.1; done
[ -d "$mnt/views/fast/task=stack/ep_c" ] || fail "view fast did not follow the head"
fusermount3 -u "$mnt"
"$bin" verify "$tbl" >/dev/null || fail "verify"
echo "e2e-views: 1 passed, 0 failed"
