#!/usr/bin/env bash
# End-to-end check of scripts/unmount-stale.sh and with-test-tmp.sh: of two
# live framefs mounts, one under a test run's temporary directory and one
# outside it (a user's training mount), only the first is detached.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bin=$(framefs_bin "${1:-}")
work=$(mktemp -d)
on_exit rm -rf "$work"
on_exit unmount "$work/run/mnt"
on_exit unmount "$work/user/mnt"

# The mounts keep what they spill under the user's cache directory by
# default: here, under work.
export XDG_CACHE_HOME="$work/cache"
mkdir -p "$work/wh" "$work/run/mnt" "$work/user/mnt"
"$bin" create "$work/wh/t" >/dev/null
for m in "$work/run/mnt" "$work/user/mnt"; do
	"$bin" mount "$work/wh" "$m" -o ro --daemon >/dev/null
done
is_mounted "$work/run/mnt" || fail "the mount under the run's directory did not come up"
is_mounted "$work/user/mnt" || fail "the mount outside the run's directory did not come up"

"$root/scripts/unmount-stale.sh" "$work/run" 2>/dev/null
is_mounted "$work/run/mnt" && fail "the mount under the run's directory is still there"
is_mounted "$work/user/mnt" || fail "unmount-stale.sh detached a mount outside the run's directory"
ls "$work/user/mnt/t" >/dev/null || fail "the user's mount no longer answers"

"$root/scripts/unmount-stale.sh" 2>/dev/null && fail "unmount-stale.sh without a directory succeeded"

# with-test-tmp.sh gives its command a fresh TMPDIR and clears it after.
# shellcheck disable=SC2016 # $TMPDIR is expanded by the inner shell, as with-test-tmp.sh set it
inner=$(TMPDIR=$work "$root/scripts/with-test-tmp.sh" bash -c 'echo "$TMPDIR"')
case "$inner" in "$work"/framefs-test.*) ;; *) fail "with-test-tmp.sh ran its command with TMPDIR=$inner" ;; esac
[ -e "$inner" ] && fail "with-test-tmp.sh left $inner behind"
TMPDIR=$work "$root/scripts/with-test-tmp.sh" bash -c 'exit 3' && fail "with-test-tmp.sh hid the command's failure"
is_mounted "$work/user/mnt" || fail "with-test-tmp.sh detached a mount outside its directory"
echo "e2e-unmount-stale: ok"
