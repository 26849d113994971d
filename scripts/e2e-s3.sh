#!/usr/bin/env bash
# End-to-end check of the command line on S3: starts versitygw (built by
# scripts/versitygw.sh), then creates, ingests, tags, reads, verifies,
# mounts and garbage-collects a table at s3://BUCKET/warehouse/robot.
# Without versitygw it skips, unless FRAMEFS_REQUIRE_S3=1.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bin=$(framefs_bin "${1:-}")
# out CMD...: CMD's stdout and stderr, whatever its exit status. Output
# checked for a match is read whole first (out, or said=$(CMD)): grep -q
# leaving a pipe at its first match would kill a writer with more to write
# (SIGPIPE), which pipefail reports as a failure.
out() { "$@" 2>&1 || true; }

if [ ! -x "$root/.cache/bin/versitygw" ]; then
	[ "${FRAMEFS_REQUIRE_S3:-}" = 1 ] && fail "versitygw missing: run scripts/versitygw.sh build"
	reason="versitygw missing: run scripts/versitygw.sh build (FRAMEFS_REQUIRE_S3=1 makes this a failure)"
	echo "e2e-s3: skipped: $reason"
	[ -n "${FRAMEFS_SKIP_LOG:-}" ] && printf '%s\te2e-s3.sh\n' "$reason" >>"$FRAMEFS_SKIP_LOG"
	exit 0
fi
work=$(mktemp -d)
on_exit rm -rf "$work"
mkdir -p "$work/data/frames" "$work/mnt" # a directory of the posix backend is a bucket
s3_server "$work/data" e2e
on_exit unmount "$work/mnt"
f=(--s3-cache-dir "$work/cache")
tbl=s3://frames/warehouse/robot

"$bin" create "$tbl" --column 'note:string?' "${f[@]}" >/dev/null
out "$bin" create "$tbl" "${f[@]}" | grep -q "a table exists there" || fail "create over a table"
said=$("$bin" ingest "$tbl" "$root/testdata/video/h264_faststart.mp4" "$root/testdata/video/hevc.mp4" "${f[@]}")
grep -q "added 2 episodes" <<<"$said" || fail ingest
"$bin" tag "$tbl" create v1 "${f[@]}" >/dev/null
"$bin" delete "$tbl" --episode hevc "${f[@]}" >/dev/null
[ "$("$bin" log "$tbl" --json "${f[@]}" | jq length)" = 2 ] || fail "log"
[ "$("$bin" ls "$tbl" --tag v1 --json "${f[@]}" | jq '.episodes | length')" = 2 ] || fail "ls --tag v1"
[ "$("$bin" ls "$tbl" --json "${f[@]}" | jq '.episodes | length')" = 1 ] || fail "ls head"
said=$("$bin" verify "$tbl" "${f[@]}")
grep -q '^ok$' <<<"$said" || fail verify
"$bin" frame "$tbl" --tag v1 --episode hevc --frame 5 "${f[@]}" >"$work/frame.jpg"
"$bin" warm "$tbl" "${f[@]}" >/dev/null
out "$bin" ls s3://frames/warehouse/missing "${f[@]}" | grep -q "no table" || fail "missing table"
"$bin" ls s3://frames/warehouse/robot "${f[@]}" --s3-cache-dir off >/dev/null || fail "no cache"
AWS_SECRET_ACCESS_KEY=wrong out "$bin" ls "$tbl" "${f[@]}" | grep -q SignatureDoesNotMatch || fail "a wrong secret was accepted"
out "$bin" ls s3://nosuchbucket/t "${f[@]}" | grep -q 'bucket "nosuchbucket" does not exist' || fail "missing bucket"

# Mount the warehouse; the tagged frame reads as `framefs frame` wrote it.
mount_daemon s3://frames/warehouse "$work/mnt" "${f[@]}"
cmp "$work/mnt/robot/tags/v1/hevc/000005.jpg" "$work/frame.jpg" || fail "mounted frame differs"
[ "$(cd "$work/mnt/robot/latest/" && echo *)" = "h264_faststart" ] || fail "latest"
grep -q '^framefs_s3_get_requests_total [1-9]' "$work/mnt/.stats" || fail ".stats has no S3 counters"
stop_daemon "$work/mnt"
is_mounted "$work/mnt" && fail "the mount is still there after the daemon exited"

"$bin" expire "$tbl" --keep-last 1 "${f[@]}" >/dev/null
"$bin" tag "$tbl" delete v1 "${f[@]}"
said=$("$bin" expire "$tbl" --keep-last 1 "${f[@]}")
grep -q "expired 1" <<<"$said" || fail expire
gcout=$("$bin" gc "$tbl" --grace 1ms "${f[@]}")
grep -q "^removed [1-9]" <<<"$gcout" || fail "gc: $gcout"
said=$("$bin" verify "$tbl" "${f[@]}")
grep -q '^ok$' <<<"$said" || fail "verify after gc"
echo "e2e-s3: ok"
