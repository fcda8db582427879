#!/usr/bin/env bash
# Runs the integration test binary in two lanes at once (make integration):
#   tools/integration.sh BINARY [criterion args...]
# The kueue and node suites start control planes of their own (KUEUE=true,
# KUBELET=true up.sh) and spend most of their time waiting for them: for
# Kueue's admissions, kwok's pod lifecycles, the kubelet's probes. They run
# in a lane of their own beside every other suite (on the control plane
# tools/with-cluster.sh named), which halves the stage's wall time; the
# upgrade suite is make upgrade's. The second lane's output goes to its own
# log ($RESULTS/integration-own-planes.log, read by tools/summary.sh); its
# synthesis and failures are printed once both lanes are done, so the two
# never interleave. Fails when either lane fails. INTEGRATION_LANES=1 runs
# the same tests one after another, in one lane.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$1
shift
results=${RESULTS:-build/test-results}
mkdir -p "$results"
own='@(kueue|node)/*'
if [ "${INTEGRATION_LANES:-2}" = 1 ]; then
	exec "$here/run-tests.sh" integration "$bin" --jobs=1 --filter '!(upgrade/*)' "$@"
fi
err=$results/integration-own-planes.stderr
"$here/run-tests.sh" integration-own-planes "$bin" --jobs=1 --filter "$own" "$@" \
	>/dev/null 2>"$err" &
lane=$!
trap 'kill "$lane" 2>/dev/null' INT TERM
"$here/run-tests.sh" integration "$bin" --jobs=1 --filter "!(@(upgrade|kueue|node)/*)" "$@"
rc=$?
wait "$lane"
rc2=$?
echo "integration: the kueue and node suites, in the second lane ($results/integration-own-planes.log):"
grep -aE '^\[(FAIL|CRASH|ERR)|Synthesis' "$results/integration-own-planes.log" || true
cat "$err" >&2
rm -f "$err"
[ "$rc" = 0 ] && [ "$rc2" = 0 ]
