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

duckdb_module() {
	local duck
	duck="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.cache/duckdb"
	if [ ! -d "$duck/node_modules/@duckdb/node-api" ]; then
		mkdir -p "$duck"
		(cd "$duck" && npm install --no-audit --no-fund --silent @duckdb/node-api@1.5.6-r.1 >/dev/null)
	fi
	echo "$duck/node_modules/@duckdb/node-api/lib/index.js"
}

round() { LC_ALL=C awk -v v="$1" "$_lib_awk_round"' BEGIN {print rnd(v)}'; }

seconds() {
	local start end
	start=$(date +%s%N)
	"$@" >/dev/null
	end=$(date +%s%N)
	round "$(((end - start) / 1000))e-6"
}

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
