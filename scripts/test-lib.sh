#!/usr/bin/env bash
# Checks the helpers of scripts/lib.sh against known answers.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
check() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

check "round keeps four significant digits" "$(round 1.20149)" 1.201
check "round small values" "$(round 0.0066667)" 0.006667
check "round hundreds" "$(round 118.759)" 118.8
check "round never cuts the integer part" "$(round 2228224.4)" 2228224
check "round negative" "$(round -0.123456)" -0.1235
check "round zero" "$(round 0)" 0.000
check "median of three" "$(median 3 1 2)" 2
check "median keeps an odd middle as given" "$(median 10.2549 1 99)" 10.2549
check "median of four" "$(median 4 1 3 2)" 2.500
check "median of two, rounded" "$(median 1000 1001)" 1000
check "median from stdin" "$(printf '5\n1\n3\n' | median)" 3
check "median sorts numbers, not text" "$(median 9 10 100)" 10
median >/dev/null </dev/null && fail "median of nothing succeeded"
check "ratio" "$(ratio 2 3)" 0.6667
check "ratio of rates" "$(ratio 2000 1.5)" 1333
check "ratio per frame" "$(ratio 12 1800)" 0.006667
ratio 1 0 >/dev/null && fail "ratio by zero succeeded"
check "emit" "$(emit name 1.5 x)" "name 1.5 x"
s=$(seconds sleep 0.2)
awk -v s="$s" 'BEGIN {exit !(s >= 0.2 && s < 5)}' || fail "seconds sleep 0.2: $s"
[[ "$(seconds echo hello)" != *hello* ]] || fail "seconds let the command's output through"
echo "test-lib: ok"
