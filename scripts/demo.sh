#!/usr/bin/env bash
# `make run`: makes a small demo table from videos generated here, mounts it
# at ./mnt and shows what to try. The table lives in ./demo/warehouse; run it
# again to remount (an earlier demo mount is replaced).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bin=$(framefs_bin "${1:-}")
demo="$root/demo"
wh="$demo/warehouse"
mnt="$root/mnt"

if [ ! -f "$wh/robot/table.json" ]; then
	echo "== making demo videos (ffmpeg) and a table at demo/warehouse/robot"
	rm -rf "$demo"
	mkdir -p "$demo/videos" "$wh"
	i=0
	for spec in "testsrc2:pick" "mandelbrot:pick" "life=s=320x240:mold=10:r=30:ratio=0.1:death_color=#C83232:life_color=#00ff00:place"; do
		src=${spec%:*}
		task=${spec##*:}
		ep=$(printf "episode-%02d" "$i")
		case "$src" in life*) input="$src" ;; *) input="$src=size=320x240:rate=30" ;; esac
		ffmpeg -v error -y -f lavfi -i "$input" -t 4 -c:v libx264 -preset veryfast -g 30 -bf 2 \
			-pix_fmt yuv420p "$demo/videos/$ep.mp4"
		/usr/bin/python3 - "$demo/videos/$ep.jsonl" "$task" <<'PY'
import json, math, sys
out, task = sys.argv[1], sys.argv[2]
with open(out, "w") as f:
    for n in range(120):
        t = n / 30
        f.write(json.dumps({"timestamp": t, "task": task,
                            "state": [round(math.sin(t), 4), round(math.cos(t), 4)],
                            "action": n % 4}) + "\n")
PY
		i=$((i + 1))
	done
	"$bin" create "$wh/robot" --column timestamp:float64 --column task:string \
		--column 'state:list<float32>' --column action:int64 --partition task
	"$bin" ingest "$wh/robot" "$demo"/videos/*.mp4
	"$bin" tag "$wh/robot" create demo-v1
fi

unmount "$mnt"
mkdir -p "$mnt"
"$bin" mount "$wh" "$mnt" --daemon --staging-dir "$demo/staging"

cat <<EOT

framefs is serving demo/warehouse at ./mnt. Try:

  ls mnt/robot                                  latest, snapshots, tags, ingest, replace
  ls -l mnt/robot/latest/task=pick/episode-00 | head
  cp mnt/robot/latest/task=pick/episode-00/000042.jpg /tmp/ && xdg-open /tmp/000042.jpg
  head -3 mnt/robot/latest/task=pick/episode-00/frames.jsonl
  getfattr -d mnt/robot/latest/task=pick/episode-00/000042.jpg
  cat mnt/.stats
  cp demo/videos/episode-02.mp4 mnt/robot/ingest/new-02.mp4      drag a video in...
  cp demo/videos/episode-02.jsonl mnt/robot/ingest/new-02.jsonl  ...with its rows;
  cat mnt/robot/ingest/.status; ls mnt/robot/latest/task=place    2 s later it is committed
  $bin ls demo/warehouse/robot
  /usr/bin/python3 -c "import torchvision; ds = torchvision.datasets.ImageFolder('mnt/robot/tags/demo-v1/task=pick'); print(len(ds), ds.classes)"

Unmount with: fusermount3 -u mnt
EOT
