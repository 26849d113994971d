#!/usr/bin/env bash
# LeRobot import benchmark, side by side with cp -r of the same dataset in
# the same run. Prints NAME VALUE UNIT lines (see scripts/bench.sh).
#   framefs import lerobot --no-sizes of a 200-episode v3.0 dataset (2
#   cameras, 640x480, 100 frames each) vs cp -r of the dataset folder, both
#   synced to disk; the import with frame sizes computed.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup "$@"

ds="$cache/lerobot-v3.0-200ep-640x480"
if [ ! -f "$ds/meta/info.json" ]; then
	rm -rf "$ds.tmp"
	(cd "$root" && go run ./internal/lerobottest/mkdataset -version v3.0 -episodes 200 -frames 100 -size 640x480 "$ds.tmp")
	mv "$ds.tmp" "$ds"
fi
bytes=$(du -sb "$ds" | cut -f1)
frames=$(jq .total_frames "$ds/meta/info.json")
find "$ds" -type f -exec cat {} + >/dev/null # both sides start with the dataset in the page cache

cp_times=() import_times=()
for _ in $(seq "$RUNS"); do
	rm -rf "$work/copy" "$work/t"
	cp_times+=("$(seconds sh -c "cp -r '$ds' '$work/copy' && sync -f '$work/copy/meta/info.json'")")
	rm -rf "$work/copy"
	import_times+=("$(seconds sh -c "'$bin' import lerobot '$ds' '$work/t' --no-sizes && sync -f '$work/t/table.json'")")
done
cp_s=$(median "${cp_times[@]}")
import_s=$(median "${import_times[@]}")
rm -rf "$work/t"
sizes_s=$(seconds sh -c "'$bin' import lerobot '$ds' '$work/t' && sync -f '$work/t/table.json'")

emit lerobot_dataset_200ep_size "$(ratio "$bytes" 1000000)" MB
emit lerobot_import_200ep_no_sizes "$import_s" s
emit cp_r_lerobot_200ep "$cp_s" s
emit ratio:lerobot_import_vs_cp_r "$(ratio "$cp_s" "$import_s")" x
emit lerobot_import_200ep_with_sizes "$sizes_s" s
emit lerobot_import_with_sizes_rate "$(ratio "$((2 * frames))" "$sizes_s")" frames/s
