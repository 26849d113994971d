#!/usr/bin/env bash
# Detaches the FUSE mounts, and the small tmpfs staging disks tests mount
# (.../staging-tmpfs), under DIR: the private temporary directory of one
# test run (`make unit`, `make soak`, ...), for tests that died before
# their cleanup ran. Only what lies under DIR is touched, so a user's own
# mounts (a training mount under /tmp, another test run's) are left alone;
# there is no default DIR for that reason. Prints what it detached; exits 0.
#
#   unmount-stale.sh DIR
set -u
if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: unmount-stale.sh DIR (the test run's own temporary directory)" >&2
	exit 2
fi
base=$(realpath -m -- "$1")
case "$base" in / | "") echo "unmount-stale: refusing to scan $1" >&2; exit 2 ;; esac
while read -r _ mnt fstype _; do
	case "$fstype" in
	fuse.framefs | fuse) ;;
	tmpfs) case "$mnt" in */staging-tmpfs) ;; *) continue ;; esac ;;
	*) continue ;;
	esac
	# /proc/self/mounts escapes spaces and the like as octal (\040).
	mnt=$(printf '%b' "$mnt")
	case "$mnt" in "$base"/*) ;; *) continue ;; esac
	echo "unmount-stale: detaching $mnt" >&2
	fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
done </proc/self/mounts
exit 0
