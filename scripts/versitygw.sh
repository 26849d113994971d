#!/usr/bin/env bash
# versitygw, a real S3-compatible server, for the S3 tests.
#
#   scripts/versitygw.sh build            build it once into .cache/bin (prints the path)
#   scripts/versitygw.sh start DIR PORT   serve DIR on 127.0.0.1:PORT in the background,
#                                         wait until it answers, print its pid
#   scripts/versitygw.sh stop PID         stop a server started here
#
# Tests (internal/s3test) find the binary in .cache/bin, in $VERSITYGW or on
# PATH and start their own servers. The credentials of `start` are
# FRAMEFS_S3_ACCESS / FRAMEFS_S3_SECRET (test defaults otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v1.8.0
BIN=.cache/bin/versitygw

build() {
	if [ -x "$BIN" ] && [ "$(cat "$BIN.version" 2>/dev/null)" = "$VERSION" ]; then
		echo "$PWD/$BIN"
		return
	fi
	mkdir -p .cache/bin
	echo "building versitygw $VERSION (once; takes a few minutes)" >&2
	GOBIN="$PWD/.cache/bin" go install "github.com/versity/versitygw/cmd/versitygw@$VERSION" >&2
	echo "$VERSION" >"$BIN.version"
	echo "$PWD/$BIN"
}

case "${1:-}" in
build)
	build
	;;
start)
	dir=${2:?DIR}
	port=${3:?PORT}
	bin=$(build)
	mkdir -p "$dir"
	"$bin" --port "127.0.0.1:$port" --access "${FRAMEFS_S3_ACCESS:-framefs-test}" \
		--secret "${FRAMEFS_S3_SECRET:-framefs-test-secret}" --quiet posix "$dir" >"$dir.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/" || true)
		if [ "$code" = 403 ] || [ "$code" = 200 ]; then
			echo "$pid"
			exit 0
		fi
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true
	echo "versitygw did not answer on 127.0.0.1:$port; log: $dir.log" >&2
	exit 1
	;;
stop)
	kill "${2:?PID}"
	;;
*)
	echo "usage: $0 build | start DIR PORT | stop PID" >&2
	exit 2
	;;
esac
