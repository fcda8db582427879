#!/usr/bin/env bash
# Runs the libFuzzer targets.
#   tools/fuzz.sh run SECONDS BIN...    fuzz each target for SECONDS, new
#                                       inputs into a scratch dir
#   tools/fuzz.sh regress 0 BIN...      replay every kept corpus/crash input once
# Inputs kept in test/fuzz/corpus/<target>/ are the regression suite.
set -euo pipefail
mode=$1
secs=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
rc=0
for bin in "$@"; do
	t=$(basename "$bin")
	corpus="$here/test/fuzz/corpus/$t"
	mkdir -p "$corpus"
	if [ "$mode" = regress ]; then
		n=$(find "$corpus" -type f | wc -l)
		if ! "$bin" -runs=0 "$corpus" >"$bin.regress.log" 2>&1; then
			echo "fuzz-regress: $t FAILED on a kept input; see $bin.regress.log" >&2
			tail -30 "$bin.regress.log" >&2
			rc=1
		else
			echo "fuzz-regress: $t replayed $n inputs, no crash"
		fi
	else
		scratch=$(mktemp -d)
		echo "fuzz: $t for ${secs}s"
		if ! "$bin" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$corpus/crash-" \
			"$scratch" "$corpus" 2>"$bin.fuzz.log"; then
			echo "fuzz: $t found a crash (kept in $corpus); see $bin.fuzz.log" >&2
			rc=1
		fi
		grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$bin.fuzz.log" | sed "s/^/fuzz: $t /" || true
		rm -rf "$scratch"
	fi
done
exit $rc
