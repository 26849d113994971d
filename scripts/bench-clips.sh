#!/usr/bin/env bash
# Clip view benchmarks, side by side with the peer in the same run. Prints
# NAME VALUE UNIT lines (see scripts/bench.sh); ratios are peer time /
# framefs time (above 1: framefs is faster).
#   reading every clip of a window-16, skip-0, hop-8 view (every frame in
#     two clips) over a 1,800-frame 640x480 episode, in clip order, through
#     a fresh mount vs ffmpeg decoding the same 1,800 frames in order to
#     JPEG with one thread; and the frames the mount decoded per distinct
#     frame read (.stats)
#   cp of an episode's video.mp4 from a mount vs cp of the source file,
#     both read from disk (cold) and both from the page cache (warm)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup "$@"
stat_value() { stats_value "$mnt" "$1"; }
remount() { mount_daemon "$work/wh" "$mnt"; }

# A 1,800-frame episode (60 s at 30 fps, GOP 30 with B-frames) and a
# 64 MB video for cp.
clipsrc="$cache/clips_1800f_640x480.mp4"
lavfi_video "$clipsrc" -i testsrc2=size=640x480:rate=30 -frames:v 1800 -c:v libx264 -preset veryfast \
	-g 30 -bf 2 -pix_fmt yuv420p
bigsrc="$cache/clips_cp_64mb.mp4"
lavfi_video "$bigsrc" -i testsrc2=size=1280x720:rate=30 -frames:v 600 -vf noise=alls=20:allf=t \
	-c:v libx264 -preset ultrafast -b:v 25M -maxrate 25M -bufsize 50M -pix_fmt yuv420p
ln -s "$clipsrc" "$work/ep1800.mp4"
ln -s "$bigsrc" "$work/big.mp4"
"$bin" create "$work/wh/clips" --column 'note:string?' >/dev/null
"$bin" ingest "$work/wh/clips" "$work/ep1800.mp4" >/dev/null # stores JPEG sizes
"$bin" view create "$work/wh/clips" c16 --window 16 --frame-skip 0 --hop 8 >/dev/null
"$bin" create "$work/wh/big" --column 'note:string?' >/dev/null
"$bin" ingest "$work/wh/big" "$work/big.mp4" --no-sizes >/dev/null


# Every clip in clip order (224 clips, 3,584 files, 1,800 distinct frames),
# fresh mount each run, vs ffmpeg decoding the 1,800 frames to JPEG.
clipdir="$mnt/clips/views/c16/ep1800"
mount_ss=() ffmpeg_ss=() decoded_ratios=()
for _ in $(seq "$RUNS"); do
	remount
	ls "$clipdir" >/dev/null
	before=$(stat_value framefs_decoder_frames_decoded_total)
	mount_ss+=("$(seconds sh -c "cat '$clipdir'/clip-*/*.jpg")")
	sleep 1 # read-ahead finishing; decoder sessions counted once idle
	after=$(stat_value framefs_decoder_frames_decoded_total)
	decoded_ratios+=("$(ratio $((after - before)) 1800)")
	ffmpeg_ss+=("$(seconds ffmpeg -v error -threads 1 -i "$clipsrc" -f image2pipe -c:v mjpeg -q:v 2 -)")
done
clip_files=("$clipdir"/clip-*/*.jpg)
clip_dirs=("$clipdir"/clip-*/)
files=${#clip_files[@]}
clips=${#clip_dirs[@]}
mount_s=$(median "${mount_ss[@]}")
ffmpeg_s=$(median "${ffmpeg_ss[@]}")
emit clips_w16_h8_1800_frames_count "$clips" clips
emit clips_w16_h8_1800_frames_files_read "$files" files
emit clips_w16_h8_1800_frames_mount_read "$mount_s" s
emit ffmpeg_1thread_jpeg_1800_frames "$ffmpeg_s" s
emit ratio:clips_mount_read_vs_ffmpeg_jpeg "$(ratio "$ffmpeg_s" "$mount_s")" x
emit clips_frames_decoded_per_distinct_frame "$(median "${decoded_ratios[@]}")" x

# cp of the stored video vs cp of the source file, fresh mount each run:
# cold (both files dropped from the page cache first, each on its own with
# posix_fadvise, so the disk is read as by a first copy) and warm (both in
# the page cache; the mount still serves every byte through FUSE).
bigdir="$mnt/big/latest/big"
packs=("$work"/wh/big/video/*)
evict() {
	/usr/bin/python3 -c '
import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)' "$bigsrc" "${packs[@]}"
}
cp_once() { # cp_once SRC: seconds to copy SRC, checked against the source
	local s
	s=$(seconds cp "$1" "$work/copy.mp4")
	cmp -s "$work/copy.mp4" "$bigsrc" || {
		echo "cp of $1 differs from the source" >&2
		exit 1
	}
	rm -f "$work/copy.mp4"
	echo "$s"
}
cold_mounts=() cold_locals=() warm_mounts=() warm_locals=()
for _ in $(seq "$RUNS"); do
	remount
	evict
	cold_mounts+=("$(cp_once "$bigdir/video.mp4")")
	cold_locals+=("$(cp_once "$bigsrc")")
	remount
	cat "$bigsrc" "${packs[@]}" >/dev/null
	warm_mounts+=("$(cp_once "$bigdir/video.mp4")")
	warm_locals+=("$(cp_once "$bigsrc")")
done
emit video_file_size "$(round "$(stat -c %s "$bigsrc")e-6")" MB
report_cp() { # report_cp KIND MOUNT_TIMES LOCAL_TIMES (array names)
	local -n m=$2 l=$3
	local cp_mount cp_local
	cp_mount=$(median "${m[@]}")
	cp_local=$(median "${l[@]}")
	emit "cp_video_mp4_from_mount_$1" "$cp_mount" s
	emit "cp_video_source_file_$1" "$cp_local" s
	emit "ratio:cp_video_mp4_mount_vs_source_$1" "$(ratio "$cp_local" "$cp_mount")" x
}
report_cp cold cold_mounts cold_locals
report_cp warm warm_mounts warm_locals
