# scripts/lib.sh: what every benchmark script measures and prints with, so
# that all of them report figures the same way. Source it:
#
#   . "$(dirname "$0")/lib.sh"
#
#   emit NAME VALUE UNIT   print one figure: a NAME VALUE UNIT line
#   seconds CMD...         run CMD once (its stdout discarded); print its wall time
#   milliseconds CMD...    the same in milliseconds
#   peak_rss_mb CMD...     run CMD once (its output discarded); print its peak resident memory in MB
#   duckdb_module          the path of DuckDB's Node module (the peer of filter benchmarks),
#                          installed into .cache/duckdb on first use
#   median [VALUE...]      the median of the values (or of stdin's lines)
#   ratio A B              A / B
#   round VALUE            VALUE by the rounding rule
#
# One rounding rule, for every value a helper computes and for nothing
# else (no value is rounded twice): four significant digits, and never
# fewer than the whole integer part, in plain decimal notation (1.201,
# 0.006667, 118.8, 3814, 2228224). The median of an odd number of values
# is the middle one as given; of an even number, the mean of the two middle
# ones, rounded. Benchmarks run each side RUNS times (3 unless set),
# alternating framefs and its peer, and report medians.

# shellcheck shell=bash
RUNS=${RUNS:-3}

# _lib_awk_round is the rounding rule as an awk function, shared by the
# helpers below.
_lib_awk_round='function rnd(v,   a, e, f, d) {
	a = v < 0 ? -v : v
	d = 3
	if (a > 0) {
		e = log(a) / log(10)
		f = int(e)
		if (f > e) f--
		d = 3 - f
	}
	if (d < 0) d = 0
	return sprintf("%." d "f", v)
}'

emit() { printf '%s %s %s\n' "$1" "$2" "$3"; }

milliseconds() {
	local start end
	start=$(date +%s%N)
	"$@" >/dev/null
	end=$(date +%s%N)
	round "$(((end - start) / 1000))e-3"
}

peak_rss_mb() {
	/usr/bin/python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("%.1f" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024))' "$@"
}

# duckdb_module: the path of DuckDB's Node.js module, installed on first use.
duckdb_module() { echo "$(duckdb_dir)/node_modules/@duckdb/node-api/lib/index.js"; }

round() { LC_ALL=C awk -v v="$1" "$_lib_awk_round"' BEGIN {print rnd(v)}'; }

seconds() {
	local start end
	start=$(date +%s%N)
	"$@" >/dev/null
	end=$(date +%s%N)
	round "$(((end - start) / 1000))e-6"
}

# shellcheck disable=SC2119,SC2120 # the scripts that source this file pass the values; median itself passes none, to read stdin
median() {
	if [ $# -gt 0 ]; then
		printf '%s\n' "$@" | median
		return
	fi
	LC_ALL=C sort -g | LC_ALL=C awk "$_lib_awk_round"'
		{v[NR] = $1}
		END {
			if (NR == 0) exit 1
			if (NR % 2) print v[(NR + 1) / 2]
			else print rnd((v[NR / 2] + v[NR / 2 + 1]) / 2)
		}'
}

ratio() { LC_ALL=C awk -v a="$1" -v b="$2" "$_lib_awk_round"' BEGIN {if (b == 0) exit 1; print rnd(a / b)}'; }

# ---------------------------------------------------------------------------
# Setting a script up, shared by the bench-*, e2e-* and demo scripts.
# Sourcing this file sets root, the repository's top directory.
#
#   fail MESSAGE...             print "FAIL: MESSAGE" and exit 1
#   framefs_bin [PATH]          the framefs binary, PATH or else bin/framefs, as an absolute path
#   bench_cache                 .cache/bench, made if missing: what benchmarks keep between runs
#   bench_setup [BIN]           what a benchmark script starts with: sets bin (framefs_bin BIN),
#                               cache (bench_cache), work (a new directory in cache, removed at
#                               exit) and mnt ($work/mnt, unmounted at exit)
#   on_exit CMD [ARG...]        run CMD when the script exits, however it exits; the command
#                               registered last runs first, and its errors are ignored
#   is_mounted MNT              whether a FUSE filesystem is mounted at MNT
#   unmount MNT                 detach the FUSE mount at MNT, lazily if it is busy; nothing if none
#   mount_daemon SRC MNT [ARG...]
#                               a fresh `$bin mount SRC MNT --daemon ARG...` (what was mounted
#                               at MNT is unmounted first); its process id in daemon_pid. Unless
#                               ARG has --spill-dir, the mount spills to a new directory in $work,
#                               so that no run reads frames an earlier one spilled
#   stop_daemon MNT             unmount MNT and wait until the daemon_pid process has exited;
#                               fails if it has not within 60 s
#   stats_value MNT NAME        the value of NAME in the mount's MNT/.stats
#   lavfi_video PATH ARG...     make the video PATH with `ffmpeg -f lavfi ARG...` unless it exists
#                               (benchmarks keep their videos in bench_cache)
#   duckdb_dir                  DuckDB's Node.js API installed from npm into .cache/duckdb once;
#                               prints that directory
#   s3_server DIR NAME          versitygw serving DIR (each subdirectory a bucket) on a loopback
#                               port until exit, with credentials named after NAME; exports the
#                               AWS_* and FRAMEFS_S3_* variables that point framefs at it and sets
#                               s3_pid

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

fail() {
	echo "FAIL: $*"
	exit 1
}

framefs_bin() { realpath "${1:-$root/bin/framefs}"; }

bench_cache() {
	mkdir -p "$root/.cache/bench"
	echo "$root/.cache/bench"
}

bench_setup() {
	bin=$(framefs_bin "${1:-}")
	cache=$(bench_cache)
	work=$(mktemp -d -p "$cache")
	on_exit rm -rf "$work"
	mnt="$work/mnt"
	on_exit unmount "$mnt"
}

_lib_on_exit=()
on_exit() {
	_lib_on_exit+=("$(printf '%q ' "$@")")
	trap _lib_run_on_exit EXIT
}
_lib_run_on_exit() {
	local i
	for ((i = ${#_lib_on_exit[@]} - 1; i >= 0; i--)); do
		eval "${_lib_on_exit[i]}" 2>/dev/null || true
	done
}

is_mounted() { grep -qsF " $1 fuse" /proc/self/mounts; }

unmount() { fusermount3 -u "$1" 2>/dev/null || umount -l "$1" 2>/dev/null || true; }

mount_daemon() {
	local src=$1 mnt=$2 out
	shift 2
	unmount "$mnt"
	mkdir -p "$mnt"
	case " $* " in
	*" --spill-dir "* | *spill_dir=*) ;;
	*) set -- "$@" --spill-dir "$(mktemp -d -p "${work:?mount_daemon keeps spilled frames in work}" spill.XXXXXX)" ;;
	esac
	out=$("${bin:?mount_daemon runs the framefs binary in bin}" mount "$src" "$mnt" --daemon "$@")
	daemon_pid=$(sed -n 's/.*(pid \([0-9]*\).*/\1/p' <<<"$out")
}

stop_daemon() {
	local i
	unmount "$1"
	for ((i = 0; i < 600; i++)); do
		if [ -z "${daemon_pid:-}" ] || ! kill -0 "$daemon_pid" 2>/dev/null; then
			daemon_pid=""
			return 0
		fi
		sleep 0.1
	done
	echo "stop_daemon: the mount daemon (pid $daemon_pid) of $1 did not exit within 60 s" >&2
	return 1
}

stats_value() { awk -v n="$2" '$1==n {print $2}' "$1/.stats"; }

lavfi_video() {
	local path=$1
	shift
	if [ -f "$path" ]; then
		return 0
	fi
	ffmpeg -v error -y -f lavfi "$@" "$path.tmp.mp4"
	mv "$path.tmp.mp4" "$path"
}

duckdb_dir() {
	local duck
	duck="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.cache/duckdb"
	if [ ! -d "$duck/node_modules/@duckdb/node-api" ]; then
		mkdir -p "$duck"
		(cd "$duck" && npm install --no-audit --no-fund --silent @duckdb/node-api@1.5.6-r.1 >/dev/null)
	fi
	echo "$duck"
}

s3_server() {
	local dir=$1 port=$((20000 + RANDOM % 20000))
	export FRAMEFS_S3_ACCESS="$2-access" FRAMEFS_S3_SECRET="$2-secret-$RANDOM$RANDOM"
	s3_pid=$("$root/scripts/versitygw.sh" start "$dir" "$port")
	on_exit kill "$s3_pid"
	export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ACCESS_KEY_ID=$FRAMEFS_S3_ACCESS AWS_SECRET_ACCESS_KEY=$FRAMEFS_S3_SECRET \
		AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
}
