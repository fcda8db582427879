#!/usr/bin/env bash
# Runs one criterion test binary, keeping its output in $RESULTS/<name>.log
# for tools/summary.sh, and exits with the binary's status - or 1 when the
# binary passed but its output shows a test that died in its setup or
# teardown (criterion only warns about those) or a sanitizer report.
#   tools/run-tests.sh NAME BINARY [criterion args...]
set -uo pipefail
name=$1
shift
results=${RESULTS:-build/test-results}
mkdir -p "$results"
log=$results/$name.log
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" = 0 ] && grep -aqE 'exited during its setup or teardown|ERROR: (Address|Leak)Sanitizer|runtime error: ' "$log"; then
	echo "run-tests: $name: a test died in its setup or teardown, or a sanitizer reported an error:" >&2
	grep -aE 'exited during its setup or teardown|ERROR: (Address|Leak)Sanitizer|runtime error: |SUMMARY: ' "$log" >&2
	exit 1
fi
if [ "$rc" != 0 ]; then
	# the failures again, at the end, where a truncated CI log keeps them:
	# each [FAIL] line with the assertion lines criterion printed before it
	echo "run-tests: $name: failed (exit $rc); the failures, from $log:" >&2
	awk '/^\[----\]/ { buf[n++ % 6] = $0; next }
	     /^\[(FAIL|CRASH|ERR)/ {
	         for (i = (n > 6 ? n - 6 : 0); i < n; i++) print buf[i % 6]
	         print; n = 0 }' "$log" | tail -60 >&2
fi
exit "$rc"
