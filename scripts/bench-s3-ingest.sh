#!/usr/bin/env bash
# Ingest from S3, side by side with the peers in the same run, against a
# real versitygw on loopback (built by scripts/versitygw.sh). Prints NAME
# VALUE UNIT lines (see scripts/bench.sh) from internal/s3bench:
#   a 1 GB H.264 episode on S3 into an S3 table with --no-sizes (copied by
#   the server): bytes the node reads from S3 / payload (target <= 0.01),
#   time vs the server's own CopyObject of the object (target <= 1.5x) and
#   vs its own one-part multipart copy; into a local table (streamed): bytes
#   read, throughput vs the AWS SDK's download manager (target >= 0.8x).
# Without versitygw it prints nothing, unless FRAMEFS_REQUIRE_S3=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/bin/framefs}")
cache="$root/.cache/bench"
mkdir -p "$cache"

if ! gw=$("$root/scripts/versitygw.sh" build 2>/dev/null) || [ ! -x "$gw" ]; then
	if [ "${FRAMEFS_REQUIRE_S3:-}" = 1 ]; then
		echo "bench-s3-ingest: versitygw missing (scripts/versitygw.sh build)" >&2
		exit 1
	fi
	echo "bench-s3-ingest: versitygw missing, skipped (scripts/versitygw.sh build)" >&2
	exit 0
fi

# About 1 GB: 165 s of 1280x720 30 fps H.264 at 50 Mbit/s (moov at the
# end, as cameras and ffmpeg write it), made once.
video="$cache/s3_ingest_720p_1GB.mp4"
if [ ! -f "$video" ]; then
	ffmpeg -v error -y -f lavfi -i testsrc2=size=1280x720:rate=30 -t 165 -vf noise=alls=12:allf=t \
		-c:v libx264 -preset ultrafast -b:v 50M -maxrate 50M -bufsize 100M -g 60 -pix_fmt yuv420p "$video.tmp.mp4"
	mv "$video.tmp.mp4" "$video"
fi

work=$(mktemp -d -p "$cache")
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
port=$((20000 + RANDOM % 20000))
mkdir -p "$work/data" "$work/local"
export FRAMEFS_S3_ACCESS=bench-access FRAMEFS_S3_SECRET="bench-secret-$RANDOM$RANDOM"
pid=$("$root/scripts/versitygw.sh" start "$work/data" "$port")
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ACCESS_KEY_ID=$FRAMEFS_S3_ACCESS AWS_SECRET_ACCESS_KEY=$FRAMEFS_S3_SECRET \
	AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null

(cd "$root" && go build -o "$work/s3bench" ./internal/s3bench)
"$work/s3bench" -bin "$bin" -video "$video" -bucket bench -work "$work/local" -runs "${RUNS:-3}"
