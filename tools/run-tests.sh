#!/usr/bin/env bash
# Runs one criterion test binary, keeping its output in $RESULTS/<name>.log
# for tools/summary.sh, and exits with the binary's status.
#   tools/run-tests.sh NAME BINARY [criterion args...]
set -uo pipefail
name=$1
shift
results=${RESULTS:-build/test-results}
mkdir -p "$results"
"$@" 2>&1 | tee "$results/$name.log"
exit "${PIPESTATUS[0]}"
