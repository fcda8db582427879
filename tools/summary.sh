#!/usr/bin/env bash
# Adds up the criterion "Synthesis" lines of every suite run by make test and
# prints one closing line "N passed, N failed". Fails when any test failed or
# crashed, or when no test ran at all.
set -euo pipefail
dir=${1:-build/test-results}
passed=0
failed=0
for f in "$dir"/*.log; do
	[ -f "$f" ] || continue
	line=$(grep -a 'Synthesis: Tested:' "$f" | tail -1 | sed 's/\x1b\[[0-9;]*m//g') || true
	[ -n "$line" ] || { echo "summary: $f has no criterion synthesis line" >&2; failed=$((failed + 1)); continue; }
	t=$(echo "$line" | sed -E 's/.*Tested: *([0-9]+).*/\1/')
	p=$(echo "$line" | sed -E 's/.*Passing: *([0-9]+).*/\1/')
	# a test that died in setup or teardown is counted as passed by
	# criterion (it only warns): count it as failed
	torn=$(grep -ac 'exited during its setup or teardown' "$f" || true)
	p=$((p - torn))
	echo "summary: $(basename "$f" .log): $p of $t passed"
	passed=$((passed + p))
	failed=$((failed + t - p))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
