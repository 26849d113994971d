#!/usr/bin/env bash
# Training reads through a real mount, side by side with the peers a team
# would use instead, in one run. Prints NAME VALUE UNIT lines (see
# scripts/bench.sh); ratio:... is framefs speed / peer speed (above 1:
# framefs is faster), except where the name says otherwise.
#
#   epochs   torchvision ImageFolder + DataLoader(shuffle=True, 2 workers),
#            epochs 1 and 2, over the mount vs over the same JPEG files
#            pre-extracted to local disk (cold page cache at epoch 1), at
#            GOP 30 and GOP 250; with frames decoded per frame served and
#            the daemon's CPU per served frame from .stats and /proc
#   disk     the same with memory caches 4x smaller than the dataset's
#            images: spilling what they cannot keep to the default spill
#            directory, and with --cache-dir on local disk
#   views    the training path, default caches, VIEW_EPISODES (4) episodes
#            of 450 frames: views at the model's input size (224x224) as
#            bmp, npy and jpg vs the JPEG folder with Resize((224,224)) in
#            the loader, with batch_size None and 32; full-size bmp and
#            npy views and latest/ vs the JPEG folder; a 224x224 bmp view of
#            every third frame vs a JPEG folder of those frames; frames decoded per served,
#            daemon CPU per served and the daemon's peak anonymous memory
#            beside each; for the bmp 224x224 lines, full-size bmp and
#            latest/, the same files copied to a local folder (..._local_copy):
#            the most a mount can give on this machine
#   pyav     the mount's first epoch vs a PyAV Dataset seeking per item
#   random   300 random frames, one reader: mount (JPEG from latest/ and BMP
#            from a view decoded by PIL, NPY from a view loaded by numpy)
#            vs PyAV exact seek, wall time and CPU per frame; the mean open
#            of the first frame read in each GOP and of the others
#   cores    the daemon's CPU use (cores busy) over a shuffled epoch read by
#            2 loader workers and by 8, and by 1 and 8 readers that decode
#            nothing (--bytes), which leave the cores to the daemon: fills of
#            different GOPs run on every core
#   rss      peak daemon RSS under 16 random readers vs the configured caches
#   forget   daemon RSS after stat of every frame of a 54,000-frame episode
#            and after drop_caches
#
# NOISE=N adds temporal noise of strength N to the videos (ffmpeg's
# noise=alls=N:allf=t; 12 gives about 7 Mbit/s), a stand-in for a camera's,
# whose frames compress far less than the test pattern's.
#
# EPISODES (4) episodes of 1,800 640x480 frames per GOP size; RUNS (3) runs
# of each side, alternated, medians reported (scripts/lib.sh); PARTS picks parts
# (default: all, e.g. PARTS="epochs random").
set -euo pipefail
export LC_ALL=C
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup "$@"
episodes=${EPISODES:-4}
parts=${PARTS:-epochs views disk pyav random cores rss forget}
py=/usr/bin/python3
pyd="$root/scripts/py"
mkdir -p "$mnt"
daemon_pid=""

want() { [[ " $parts " == *" $1 "* ]]; }

# The test pattern the videos are cut from, noisy with NOISE; tag names
# the cached videos made of it.
pattern=(-i "testsrc2=size=640x480:rate=30")
tag=""
if [ -n "${NOISE:-}" ]; then
	pattern+=(-vf "noise=alls=$NOISE:allf=t")
	tag="_noise$NOISE"
	emit video_noise "$NOISE" strength
fi

# mount_wh ARGS...: a fresh mount of the warehouse at $mnt; sets daemon_pid.
mount_wh() { mount_daemon "$work/wh" "$mnt" -o ro "$@"; }
unmount_wh() { stop_daemon "$mnt"; }
rss_mb() { ratio "$(awk -v k="$2" '$1==k":" {print $2}' "/proc/$1/status")" 1024; }

# The videos: EPISODES x 1,800 frames of 640x480 30 fps H.264 (B-frames),
# at GOP 30 and 250, each episode a different stretch of the test pattern.
"$bin" create "$work/wh/gop30" --column 'note:string?' >/dev/null
"$bin" create "$work/wh/gop250" --column 'note:string?' >/dev/null
for gop in 30 250; do
	vids=()
	for ep in $(seq 0 $((episodes - 1))); do
		v="$cache/train_ep${ep}_gop${gop}${tag}.mp4"
		lavfi_video "$v" "${pattern[@]}" -ss $((ep * 60)) -frames:v 1800 \
			-c:v libx264 -preset veryfast -bf 2 -g "$gop" -keyint_min "$gop" -sc_threshold 0 -pix_fmt yuv420p
		ln -sf "$v" "$work/ep$ep.mp4"
		vids+=("$work/ep$ep.mp4")
	done
	"$bin" ingest "$work/wh/gop$gop" "${vids[@]}" >/dev/null # stores the JPEG sizes
done
frames=$((episodes * 1800))

# The peer's dataset: the same JPEG files, copied out of the mount.
mount_wh
for gop in 30 250; do
	cp -r "$mnt/gop$gop/latest/." "$work/jpeg$gop"
	find "$work/jpeg$gop" -name 'frames.*' -delete
done
image_bytes=$(du -sb "$work/jpeg30" | awk '{print $1}')
emit train_dataset_frames "$frames" frames
emit train_dataset_jpeg_bytes_gop30 "$image_bytes" bytes
unmount_wh

# epoch_field E F: field F of epoch E's line in $out, the report of
# shuffled_epochs.py.
epoch_field() { awk -v e="$1" -v f="$2" '$2==e {print $f}' <<<"$out"; }

# anon_peak_start PID: samples the daemon's anonymous memory (RssAnon)
# every 0.2 s in the background until anon_peak_stop, which prints the
# peak in MB.
anon_peak_start() {
	local pid=$1
	peak_file="$work/anon_peak"
	echo 0 >"$peak_file"
	(
		peak=0
		while kill -0 "$pid" 2>/dev/null; do
			kb=$(awk '$1=="RssAnon:" {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
			[ "${kb:-0}" -gt "$peak" ] && peak=$kb && echo "$peak" >"$peak_file"
			sleep 0.2
		done
	) &
	peak_pid=$!
}
anon_peak_stop() {
	kill "$peak_pid" 2>/dev/null || true
	wait "$peak_pid" 2>/dev/null || true
	ratio "$(cat "$peak_file")" 1024
}

# epochs NAME GOP MOUNT_ARGS...: RUNS alternated runs of the peer and the
# mount, two epochs each; emits the medians. PEER_ARGS (shuffled_epochs.py
# options of the JPEG folder's loader), MOUNT_LOADER_ARGS (of the mount's),
# TABLE (default gopGOP), MOUNT_DIR (under the mount's table, default
# latest) and PEER_DIR (default the JPEG folder of gopGOP) change what is
# compared. With LOCAL_COPY=1 each run also reads the mount's files copied
# to a local folder, with the mount's loader and a cold page cache, as the
# JPEG folder is: the most the mount could give on this machine if serving
# cost nothing (NAME_local_copy lines). COPY_FROM names a folder that
# already holds those files, copied instead of the mount's.
epochs() {
	local name=$1 gop=$2
	shift 2
	local peer_args loader_args dir=${MOUNT_DIR:-latest} anons=()
	read -ra peer_args <<<"${PEER_ARGS:-}"
	read -ra loader_args <<<"${MOUNT_LOADER_ARGS:-}"
	local tbl=${TABLE:-gop$gop} peer=${PEER_DIR:-$work/jpeg$gop}
	local p1=() p2=() m1=() m2=() dps=() cpus=() dps2=() cpus2=() c1=() c2=()
	local copy=""
	if [ -n "${LOCAL_COPY:-}" ]; then
		copy="$work/copy_$name"
		rm -rf "$copy"
		if [ -n "${COPY_FROM:-}" ]; then
			cp -r "$COPY_FROM/." "$copy"
		else
			mount_wh "$@"
			cp -rL "$mnt/$tbl/$dir/." "$copy"
			find "$copy" -name 'frames.*' -delete
			unmount_wh
		fi
		# Written back before anything is timed: 1,800 full-size BMPs are
		# 1.6 GB, whose writeback would slow the runs that come first.
		sync
	fi
	for _ in $(seq "$RUNS"); do
		read -r e1 e2 < <("$py" "$pyd/shuffled_epochs.py" "$peer" --evict "${peer_args[@]}" | awk '{print $5}' | paste -sd' ')
		p1+=("$e1") p2+=("$e2")
		if [ -n "$copy" ]; then
			read -r e1 e2 < <("$py" "$pyd/shuffled_epochs.py" "$copy" --evict "${loader_args[@]}" | awk '{print $5}' | paste -sd' ')
			c1+=("$e1") c2+=("$e2")
		fi
		mount_wh "$@"
		anon_peak_start "$daemon_pid"
		out=$("$py" "$pyd/shuffled_epochs.py" "$mnt/$tbl/$dir" "${loader_args[@]}" --daemon-pid "$daemon_pid" --stats "$mnt/.stats")
		anons+=("$(anon_peak_stop)")
		m1+=("$(epoch_field 1 5)") m2+=("$(epoch_field 2 5)")
		dps+=("$(ratio "$(epoch_field 1 7)" "$(epoch_field 1 8)")")
		dps2+=("$(ratio "$(epoch_field 2 7)" "$(epoch_field 2 8)")")
		cpus+=("$(ratio "$(awk '$2==1 {print 1000 * $6}' <<<"$out")" "$(epoch_field 1 8)")")
		cpus2+=("$(ratio "$(awk '$2==2 {print 1000 * $6}' <<<"$out")" "$(epoch_field 2 8)")")
		unmount_wh
	done
	local pm1 pm2 mm1 mm2
	pm1=$(median "${p1[@]}") pm2=$(median "${p2[@]}")
	mm1=$(median "${m1[@]}") mm2=$(median "${m2[@]}")
	emit "${name}_local_jpeg_epoch1" "$pm1" images/s
	emit "${name}_mount_epoch1" "$mm1" images/s
	emit "ratio:${name}_epoch1_vs_local_jpeg" "$(ratio "$mm1" "$pm1")" x
	emit "${name}_epoch1_decoded_per_served" "$(median "${dps[@]}")" frames
	emit "${name}_epoch1_daemon_cpu_per_served" "$(median "${cpus[@]}")" ms
	emit "${name}_local_jpeg_epoch2" "$pm2" images/s
	emit "${name}_mount_epoch2" "$mm2" images/s
	emit "ratio:${name}_epoch2_vs_local_jpeg" "$(ratio "$mm2" "$pm2")" x
	emit "${name}_epoch2_decoded_per_served" "$(median "${dps2[@]}")" frames
	emit "${name}_epoch2_daemon_cpu_per_served" "$(median "${cpus2[@]}")" ms
	emit "${name}_daemon_peak_anon" "$(median "${anons[@]}")" MB
	if [ -n "$copy" ]; then
		local cm1 cm2
		cm1=$(median "${c1[@]}") cm2=$(median "${c2[@]}")
		emit "${name}_local_copy_epoch1" "$cm1" images/s
		emit "ratio:${name}_local_copy_epoch1_vs_local_jpeg" "$(ratio "$cm1" "$pm1")" x
		emit "ratio:${name}_local_copy_epoch2_vs_local_jpeg" "$(ratio "$cm2" "$pm2")" x
		rm -rf "$copy"
	fi
}

# The image cache sized to the dataset's frames, as docs/CACHES.md says.
fit=$((image_bytes + image_bytes / 10))
if want epochs; then
	emit shuffled_image_cache_bytes "$fit" bytes
	for gop in 30 250; do
		epochs "shuffled_gop$gop" "$gop" --cache-bytes "$fit"
	done
fi

# The documented training path: views at the model's input size, read by
# a loader without a resize, against the JPEG folder resized in the
# loader; and a full-size bmp view against the JPEG folder. Default caches
# (256 MiB of images, 256 MiB of pictures), on VIEW_EPISODES (4) episodes
# of 450 frames: their full-size BMPs are 6.5 times the image cache, and
# their packed pictures fit it (docs/CACHES.md says how to size it).
if want views; then
	"$bin" create "$work/wh/views" --column 'note:string?' >/dev/null
	vids=()
	for ep in $(seq 0 $((${VIEW_EPISODES:-4} - 1))); do
		v="$cache/train450_ep${ep}_gop30${tag}.mp4"
		lavfi_video "$v" "${pattern[@]}" -ss $((ep * 60 + 30)) -frames:v 450 \
			-c:v libx264 -preset veryfast -bf 2 -g 30 -keyint_min 30 -sc_threshold 0 -pix_fmt yuv420p
		ln -sf "$v" "$work/v$ep.mp4"
		vids+=("$work/v$ep.mp4")
	done
	"$bin" ingest "$work/wh/views" "${vids[@]}" >/dev/null
	for view in "bmp224 bmp 224x224" "npy224 npy 224x224" "jpg224 jpg 224x224" "bmpfull bmp" "npyfull npy"; do
		read -r name format scale <<<"$view"
		"$bin" view create "$work/wh/views" "$name" --where "note IS NULL" --image-format "$format" ${scale:+--scale "$scale"} >/dev/null
	done
	# Every third frame, as a team subsamples a 30 fps camera to 10 fps.
	"$bin" view create "$work/wh/views" bmp224third --where "note IS NULL AND frame % 3 = 0" --image-format bmp --scale 224x224 >/dev/null
	mount_wh
	cp -r "$mnt/views/latest/." "$work/jpegviews"
	find "$work/jpegviews" -name 'frames.*' -delete
	unmount_wh
	# The peer of the subsampled view: those frames' JPEGs alone.
	mkdir -p "$work/jpegthird"
	(cd "$work/jpegviews" && find . -name '*.jpg' | while read -r f; do
		n=${f##*/}
		if ((10#${n%.jpg} % 3 == 0)); then
			cp --parents "$f" "$work/jpegthird/"
		fi
	done)
	sync # the peers' files written back before anything is timed
	emit views_dataset_frames "$(find "$work/jpegviews" -name '*.jpg' | wc -l)" frames
	emit views_default_caches "$(((256 << 20) * 2 / 1000000))" MB
	export TABLE=views PEER_DIR="$work/jpegviews"
	# The lines of the README's training table also read the mount's own
	# files from a local folder (LOCAL_COPY): what serving them costs is
	# the gap between the two. latest/'s files are those of the JPEG
	# folder, which is copied again for it: its ratio to the JPEG folder is
	# the comparison's own error.
	LOCAL_COPY=1 MOUNT_DIR=views/bmp224 PEER_ARGS="--resize 224" epochs view_bmp224 30
	LOCAL_COPY=1 MOUNT_DIR=views/bmp224 PEER_ARGS="--resize 224 --batch-size 32" MOUNT_LOADER_ARGS="--batch-size 32" epochs view_bmp224_batch32 30
	MOUNT_DIR=views/npy224 PEER_ARGS="--resize 224 --batch-size 32" MOUNT_LOADER_ARGS="--npy --batch-size 32" epochs view_npy224_batch32 30
	MOUNT_DIR=views/jpg224 PEER_ARGS="--resize 224" epochs view_jpg224 30
	LOCAL_COPY=1 MOUNT_DIR=views/bmpfull epochs view_bmp_full 30
	MOUNT_DIR=views/npyfull MOUNT_LOADER_ARGS="--npy" epochs view_npy_full 30
	LOCAL_COPY=1 COPY_FROM="$PEER_DIR" MOUNT_DIR=latest epochs view_latest_jpg 30
	PEER_DIR="$work/jpegthird" MOUNT_DIR=views/bmp224third PEER_ARGS="--resize 224" epochs view_bmp224_every3rd 30
	unset TABLE PEER_DIR
fi

# A dataset 4x larger than the memory caches, spilling (mount_daemon gives
# each mount a fresh spill directory) and with the disk tier (a fresh cache
# directory and mount per run).
if want disk; then
	mem=$((image_bytes / 4))
	mem_args=(--cache-bytes $((mem - (8 << 20))) --picture-cache-bytes $((8 << 20)))
	for gop in 30 250; do
		epochs "spill_4x_gop$gop" "$gop" "${mem_args[@]}"
		disk_args() {
			rm -rf "$work/diskcache"
			echo "${mem_args[@]}" --cache-dir "$work/diskcache"
		}
		# shellcheck disable=SC2046
		epochs "disk_4x_gop$gop" "$gop" $(disk_args)
	done
	emit disk_4x_memory_caches_bytes "$mem" bytes
fi

# One 1,800-frame episode per GOP size, for the PyAV and random-reader
# comparisons.
for gop in 30 250; do
	"$bin" create "$work/wh/one$gop" --column 'note:string?' >/dev/null
	ln -sf "$cache/train_ep0_gop${gop}${tag}.mp4" "$work/one.mp4"
	"$bin" ingest "$work/wh/one$gop" "$work/one.mp4" >/dev/null
	"$bin" view create "$work/wh/one$gop" exact --where TRUE --image-format bmp >/dev/null
	"$bin" view create "$work/wh/one$gop" array --where TRUE --image-format npy >/dev/null
done

if want pyav; then
	for gop in 30 250; do
		pys=() ms=()
		for _ in $(seq "$RUNS"); do
			pys+=("$("$py" "$pyd/pyav_dataset.py" "$cache/train_ep0_gop${gop}.mp4" | awk '{print $5}')")
			mount_wh
			ms+=("$("$py" "$pyd/shuffled_epochs.py" "$mnt/one$gop/latest" --epochs 1 | awk '{print $5}')")
			unmount_wh
		done
		pm=$(median "${pys[@]}") mm=$(median "${ms[@]}")
		emit "pyav_dataset_shuffled_gop$gop" "$pm" images/s
		emit "mount_shuffled_one_episode_gop$gop" "$mm" images/s
		emit "ratio:mount_epoch1_vs_pyav_dataset_gop$gop" "$(ratio "$mm" "$pm")" x
	done
fi

# random_mount DIR [ARGS...]: the 300 random frames read from DIR (under
# the mount) through a fresh mount; sets r_fps, r_cpu (daemon ms per frame)
# and r_dec (frames decoded per frame read), and with ARGS --gop N
# (random_reads.py) r_first and r_other (mean ms to open the first frame
# read in a GOP, and any other).
random_mount() {
	local ep="$mnt/$1" cpu0 cpu1 dec0 dec1
	shift
	mount_wh
	ls "$ep" >/dev/null
	cpu0=$(awk '{print $14+$15}' "/proc/$daemon_pid/stat")
	dec0=$(stats_value "$mnt" framefs_decoder_frames_decoded_total)
	read -r _ _ r_fps _ r_first r_other < <("$py" "$pyd/random_reads.py" mount "$ep" "$work/frames.txt" "$@")
	cpu1=$(awk '{print $14+$15}' "/proc/$daemon_pid/stat")
	dec1=$(stats_value "$mnt" framefs_decoder_frames_decoded_total)
	r_cpu=$(ratio "$((1000 * (cpu1 - cpu0)))" "$((300 * $(getconf CLK_TCK)))")
	r_dec=$(ratio "$((dec1 - dec0))" 300)
	unmount_wh
}

# random_lines SUFFIX FPS CPU DEC: the lines of one way of reading the
# random frames (SUFFIX names it) from the runs' frames/s, daemon CPU per
# frame and frames decoded per frame (the arrays named FPS, CPU and DEC),
# against PyAV's $pf and $pc at GOP $gop.
random_lines() {
	local s=$1 f c
	local -n run_fps=$2 run_cpu=$3 run_dec=$4
	f=$(median "${run_fps[@]}") c=$(median "${run_cpu[@]}")
	emit "random300_mount${s}_gop$gop" "$f" frames/s
	emit "ratio:random300_mount${s}_vs_pyav_gop$gop" "$(ratio "$f" "$pf")" x
	emit "random300_daemon_cpu_per_served${s}_gop$gop" "$c" ms
	emit "ratio:random300_daemon_cpu${s}_vs_pyav_cpu_gop$gop" "$(ratio "$c" "$pc")" x
	emit "random300_decoded_per_served${s}_gop$gop" "$(median "${run_dec[@]}")" frames
}

# 300 random frames (no repeats, the same for both), one reader.
if want random; then
	"$py" -c "import random; r = random.Random(3); print('\n'.join(map(str, r.sample(range(1800), 300))))" >"$work/frames.txt"
	for gop in 30 250; do
		pyfps=() pycpu=() mfps=() mcpu=() mdec=() bfps=() bcpu=() bdec=() nfps=() ncpu=() ndec=()
		for _ in $(seq "$RUNS"); do
			read -r _ _ fps cpu < <("$py" "$pyd/random_reads.py" pyav "$cache/train_ep0_gop${gop}.mp4" "$work/frames.txt")
			pyfps+=("$fps") pycpu+=("$(ratio "$cpu" 0.3)") # ms per frame: 1000 * s / 300
			random_mount "one$gop/latest/one" # JPEG
			mfps+=("$r_fps") mcpu+=("$r_cpu") mdec+=("$r_dec")
			# The same frames as BMPs: the exact RGB pixels, as PyAV hands
			# them over, with no JPEG to encode and decode again.
			random_mount "one$gop/views/exact/one"
			bfps+=("$r_fps") bcpu+=("$r_cpu") bdec+=("$r_dec")
			# And as NPY arrays: the ndarray PyAV returns, loaded by numpy
			# with no image library.
			random_mount "one$gop/views/array/one"
			nfps+=("$r_fps") ncpu+=("$r_cpu") ndec+=("$r_dec")
		done
		pf=$(median "${pyfps[@]}") pc=$(median "${pycpu[@]}")
		emit "random300_pyav_gop$gop" "$pf" frames/s
		emit "random300_pyav_cpu_per_frame_gop$gop" "$pc" ms
		random_lines "" mfps mcpu mdec
		random_lines _bmp_view bfps bcpu bdec
		random_lines _npy_view nfps ncpu ndec
		# One more run of each, timing the opens: the first read into a
		# GOP waits for its fill to reach the frame, the others do not.
		random_mount "one$gop/latest/one" --gop "$gop"
		emit "random300_first_read_in_gop_ms_gop$gop" "$r_first" ms
		emit "random300_other_read_ms_gop$gop" "$r_other" ms
		random_mount "one$gop/views/exact/one" --gop "$gop"
		emit "random300_first_read_in_gop_bmp_view_ms_gop$gop" "$r_first" ms
		emit "random300_other_read_bmp_view_ms_gop$gop" "$r_other" ms
	done
fi

# The daemon's CPU use over one shuffled epoch with 2 and with 8 loader
# workers, and with 1 and 8 readers that decode nothing: CPU seconds per
# wall second, i.e. cores kept busy.
if want cores; then
	# cores_line NAME WORKERS [READER_ARGS...]
	cores_line() {
		local name=$1 workers=$2 busy=() rates=()
		shift 2
		for _ in $(seq "$RUNS"); do
			mount_wh --cache-bytes "$fit"
			out=$("$py" "$pyd/shuffled_epochs.py" "$mnt/gop30/latest" --epochs 1 --workers "$workers" "$@" --daemon-pid "$daemon_pid" --stats "$mnt/.stats")
			rates+=("$(epoch_field 1 5)")
			busy+=("$(ratio "$(epoch_field 1 6)" "$(epoch_field 1 4)")")
			unmount_wh
		done
		emit "cores_${name}_epoch1" "$(median "${rates[@]}")" images/s
		emit "cores_${name}_daemon_cores_busy" "$(median "${busy[@]}")" cores
	}
	cores_line 2_workers 2
	cores_line 8_workers 8
	cores_line bytes_1_reader 1 --bytes
	cores_line bytes_8_readers 8 --bytes
	emit cores_available "$(nproc)" cores
fi

# Peak RSS of the daemon under 16 readers of random frames (60 s).
if want rss; then
	mount_wh
	for r in $(seq 16); do
		"$py" - "$mnt/gop30/latest" "$r" <<'PY' &
import os, random, sys, time
root, seed = sys.argv[1], int(sys.argv[2])
paths = [os.path.join(d, n) for d, _, fs in os.walk(root) for n in fs if n.endswith(".jpg")]
r = random.Random(seed)
end = time.time() + 60
while time.time() < end:
    with open(r.choice(paths), "rb") as f:
        f.read()
PY
	done
	wait
	emit rss16_daemon_peak "$(rss_mb "$daemon_pid" VmHWM)" MB
	# The defaults: 256 MiB of images and 256 MiB of pictures.
	emit rss16_configured_caches "$(((256 << 20) * 2 / 1000000))" MB
	unmount_wh
fi

# stat of every frame of a 54,000-frame episode, then drop_caches: the
# daemon gives the memory of the nodes the kernel forgot back.
if want forget; then
	v="$cache/forget_54000f_320x240.mp4"
	lavfi_video "$v" -i testsrc2=size=320x240:rate=30 -frames:v 54000 -c:v libx264 -preset ultrafast \
		-g 250 -pix_fmt yuv420p
	"$bin" create "$work/wh/long" --column 'note:string?' >/dev/null
	ln -sf "$v" "$work/long.mp4"
	"$bin" ingest "$work/wh/long" "$work/long.mp4" --no-sizes >/dev/null
	mount_wh --image-format bmp
	ls "$mnt/long/latest" >/dev/null
	sleep 1
	cold=$(rss_mb "$daemon_pid" VmRSS)
	# One frame's stat first: it opens the video (its frame index stays in
	# the video cache) and maps the decoder's code from the FFmpeg
	# libraries for the first time. Both happen once per mount, however
	# many frames are visited; the growth that counts is what the other
	# 53,999 nodes leave behind.
	stat "$mnt/long/latest/long/000000.bmp" >/dev/null
	sleep 1
	before=$(rss_mb "$daemon_pid" VmRSS)
	anon_before=$(rss_mb "$daemon_pid" RssAnon)
	"$py" -c "import os, sys; d = sys.argv[1]; print(sum(os.stat(os.path.join(d, n)).st_size > 0 for n in os.listdir(d)))" "$mnt/long/latest/long" >/dev/null
	after_stat=$(rss_mb "$daemon_pid" VmRSS)
	sync
	echo 3 >/proc/sys/vm/drop_caches
	sleep 3
	after_drop=$(rss_mb "$daemon_pid" VmRSS)
	anon_after_drop=$(rss_mb "$daemon_pid" RssAnon)
	emit forget_rss_mounted "$cold" MB
	emit forget_rss_after_first_frame "$before" MB
	emit forget_rss_after_stat_54000 "$after_stat" MB
	emit forget_rss_after_drop_caches "$after_drop" MB
	emit forget_rss_growth_after_drop "$(round "$(awk -v a="$after_drop" -v b="$before" 'BEGIN {print a - b}')")" MB
	emit forget_rss_growth_since_mounted "$(round "$(awk -v a="$after_drop" -v b="$cold" 'BEGIN {print a - b}')")" MB
	# The anonymous part alone: the rest is code and libraries mapped from
	# files, touched for the first time by the work above.
	emit forget_rss_anon_growth_after_drop "$(round "$(awk -v a="$anon_after_drop" -v b="$anon_before" 'BEGIN {print a - b}')")" MB
	emit forget_nodes_released "$(stats_value "$mnt" framefs_nodes_forgotten_total)" nodes
	unmount_wh
fi
