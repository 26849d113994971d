#!/usr/bin/env bash
# Detaches every framefs FUSE mount under a directory (default: the system
# temp directory), and the small tmpfs staging disks tests mount
# (.../staging-tmpfs), for test runs that died before their cleanup ran.
# Prints what it detached; exits 0.
set -u
base="${1:-${TMPDIR:-/tmp}}"
while read -r _ mnt fstype _; do
	case "$fstype" in
	fuse.framefs | fuse) ;;
	tmpfs) case "$mnt" in */staging-tmpfs) ;; *) continue ;; esac ;;
	*) continue ;;
	esac
	case "$mnt" in "$base"/*) ;; *) continue ;; esac
	echo "unmount-stale: detaching $mnt" >&2
	fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
done </proc/self/mounts
exit 0
