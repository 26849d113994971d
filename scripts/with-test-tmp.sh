#!/usr/bin/env bash
# Runs CMD with TMPDIR set to a new private directory, then detaches
# whatever CMD left mounted under it (scripts/unmount-stale.sh) and removes
# it, pass or fail. Tests mount under TMPDIR (t.TempDir), so a test that
# died before its cleanup is cleared up without touching anyone else's
# mounts. Exits with CMD's status.
#
#   with-test-tmp.sh CMD [ARG...]
set -u
here=$(dirname "$0")
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/framefs-test.XXXXXX") || exit 1
status=0
TMPDIR=$run_tmp "$@" || status=$?
"$here/unmount-stale.sh" "$run_tmp"
rm -rf --one-file-system "$run_tmp" 2>/dev/null || true
exit $status
