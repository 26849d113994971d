#!/usr/bin/env bash
# Mount benchmarks, side by side with the peer in the same run. Prints
# NAME VALUE UNIT lines (see scripts/bench.sh); ratios are peer time /
# framefs time (above 1: framefs is faster).
#   ls -l of a 10,000-frame episode (sizes stored) vs ls -l of the same
#     frames extracted as JPEG files on local disk
#   cat of every frame of an episode through the mount vs direct decoding
#     through the decoder API (what `framefs frame` does, without FUSE)
#   torchvision ImageFolder + DataLoader (2 workers) over the mount vs over
#     the frames pre-extracted to JPEG on local disk, JPEG and BMP mounts
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup "$@"
py=/usr/bin/python3

remount() { mount_daemon "$work/wh" "$mnt" "$@"; }

for n in 10000 2000; do
	v="$cache/mount_${n}f_640x480.mp4"
	lavfi_video "$v" -i testsrc2=size=640x480:rate=30 -frames:v "$n" -c:v libx264 -preset veryfast \
		-g 30 -bf 2 -pix_fmt yuv420p
	ln -sf "$v" "$work/ep$n.mp4"
done
"$bin" create "$work/wh/bench" --column 'note:string?' >/dev/null
"$bin" ingest "$work/wh/bench" "$work/ep10000.mp4" "$work/ep2000.mp4" >/dev/null # stores JPEG sizes
# The loaders read a table of the 2,000-frame episode alone.
"$bin" create "$work/wh/loader" --column 'note:string?' >/dev/null
"$bin" ingest "$work/wh/loader" "$work/ep2000.mp4" >/dev/null

# ls -l of 10,000 frames.
remount
ep10k="$mnt/bench/latest/ep10000"
mount_ls=$(seconds ls -l "$ep10k")
cp -r "$ep10k" "$work/jpg10k"
sync
local_ls=$(seconds ls -l "$work/jpg10k")
emit mount_ls_l_10000_frames "$mount_ls" s
emit local_ls_l_10000_jpeg_files "$local_ls" s
emit ratio:mount_ls_l_vs_local_ls_l "$(ratio "$local_ls" "$mount_ls")" x

# The throughput figures below alternate framefs and its peer, RUNS times
# each, and report the medians: on a shared 2-core machine one run of
# either can be off by 20%.

# cat of every frame of a 2,000-frame episode, fresh mount each time
# (nothing cached), vs the decoder API reading the same frames in order.
ep2k="$mnt/bench/latest/ep2000"
(cd "$root" && go build -o "$work/benchdecode" ./internal/cmd/benchdecode)
mount_fpss=() direct_fpss=()
for _ in $(seq "$RUNS"); do
	remount
	mount_fpss+=("$(ratio 2000 "$(seconds sh -c "cat '$ep2k'/*.jpg")")")
	direct_fpss+=("$("$work/benchdecode" -video "$cache/mount_2000f_640x480.mp4" -mode seq -format jpeg -quality 90 -name d 2>/dev/null | awk '$1=="d_fps" {print $2}')")
done
mount_fps=$(median "${mount_fpss[@]}")
direct_fps=$(median "${direct_fpss[@]}")
emit mount_cat_2000_frames_fps "$mount_fps" frames/s
emit direct_decode_2000_frames_fps "$direct_fps" frames/s
emit ratio:mount_cat_vs_direct_decode "$(ratio "$mount_fps" "$direct_fps")" x

# ImageFolder + DataLoader, 2 workers, fresh mounts.
mkdir -p "$work/jpgroot"
cp -r "$ep2k" "$work/jpgroot/ep2000"
loader() {
	"$py" - "$1" <<'PY'
import sys, time, torch, torchvision
ds = torchvision.datasets.ImageFolder(sys.argv[1], transform=torchvision.transforms.PILToTensor())
loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
start = time.time()
n = sum(1 for _ in loader)
print(n, time.time() - start)
PY
}
# images/s of one loader run over DIR.
loader_ips() { loader "$1" | tail -1 | (read -r n s && ratio "$n" "$s"); }
local_ipss=() jpeg_ipss=() bmp_ipss=()
for _ in $(seq "$RUNS"); do
	local_ipss+=("$(loader_ips "$work/jpgroot")")
	remount
	jpeg_ipss+=("$(loader_ips "$mnt/loader/latest")")
	remount --image-format bmp
	bmp_ipss+=("$(loader_ips "$mnt/loader/latest")")
done
local_ips=$(median "${local_ipss[@]}")
mount_ips=$(median "${jpeg_ipss[@]}")
bmp_ips=$(median "${bmp_ipss[@]}")
emit imagefolder_local_jpeg "$local_ips" images/s
emit imagefolder_mount_jpeg "$mount_ips" images/s
emit ratio:imagefolder_mount_jpeg_vs_local_jpeg "$(ratio "$mount_ips" "$local_ips")" x
emit imagefolder_mount_bmp "$bmp_ips" images/s
emit ratio:imagefolder_mount_bmp_vs_local_jpeg "$(ratio "$bmp_ips" "$local_ips")" x
