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
		# Ready when it answers HTTP (403 to an anonymous request).
		status=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 && head -c 12 <&3) 2>/dev/null || true)
		if [[ "$status" == HTTP/1.?" "[24]* ]]; then
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
