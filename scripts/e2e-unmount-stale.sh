#!/usr/bin/env bash
# End-to-end check of scripts/unmount-stale.sh and with-test-tmp.sh: of two
# live framefs mounts, one under a test run's temporary directory and one
# outside it (a user's training mount), only the first is detached.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/bin/framefs}")
work=$(mktemp -d)
cleanup() {
	for m in "$work"/run/mnt "$work"/user/mnt; do
		grep -qs " $m fuse" /proc/self/mounts && { fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m"; }
	done
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
mounted() { grep -qs " $1 fuse" /proc/self/mounts; }

mkdir -p "$work/wh" "$work/run/mnt" "$work/user/mnt"
"$bin" create "$work/wh/t" >/dev/null
for m in "$work/run/mnt" "$work/user/mnt"; do
	"$bin" mount "$work/wh" "$m" -o ro --daemon >/dev/null
done
mounted "$work/run/mnt" && mounted "$work/user/mnt" || fail "the two mounts did not come up"

"$root/scripts/unmount-stale.sh" "$work/run" 2>/dev/null
mounted "$work/run/mnt" && fail "the mount under the run's directory is still there"
mounted "$work/user/mnt" || fail "unmount-stale.sh detached a mount outside the run's directory"
ls "$work/user/mnt/t" >/dev/null || fail "the user's mount no longer answers"

"$root/scripts/unmount-stale.sh" 2>/dev/null && fail "unmount-stale.sh without a directory succeeded"

# with-test-tmp.sh gives its command a fresh TMPDIR and clears it after.
inner=$(TMPDIR=$work "$root/scripts/with-test-tmp.sh" bash -c 'echo "$TMPDIR"')
case "$inner" in "$work"/framefs-test.*) ;; *) fail "with-test-tmp.sh ran its command with TMPDIR=$inner" ;; esac
[ -e "$inner" ] && fail "with-test-tmp.sh left $inner behind"
TMPDIR=$work "$root/scripts/with-test-tmp.sh" bash -c 'exit 3' && fail "with-test-tmp.sh hid the command's failure"
mounted "$work/user/mnt" || fail "with-test-tmp.sh detached a mount outside its directory"
echo "e2e-unmount-stale: ok"
