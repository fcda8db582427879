#!/usr/bin/env bash
# make demo: a real local control plane with Kueue, kube-scheduler and kwok's
# fake nodes (KUEUE=true test/cluster/up.sh), three Steadfast replicas, and
# AppWrappers that Kueue admits in waves, one failing, one preempting, the
# leader killed mid-run (tools/demo.py). One line per step; the components'
# output goes to logs in the state directory. Stops everything it started,
# also on Ctrl-C.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/${O:-build}/steadfast"
dir=$(mktemp -d /tmp/steadfast-demo.XXXXXX)
# the logs outlive the state directory, which down.sh removes
logs=$(mktemp -d /tmp/steadfast-demo-logs.XXXXXX)
t0=$(date +%s)
step() { printf '==> %s\n' "$*"; }
cleanup() {
	"$here/test/cluster/down.sh" "$dir" >/dev/null 2>&1 || true
	step "control plane stopped (only the processes this demo started); $(( $(date +%s) - t0 )) s in all; logs in $logs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "building or reusing the control plane, kube-scheduler, Kueue and kwok (first build: 30-45 min on 2 cores)"
"$here/test/cluster/build.sh" --kueue >/dev/null
if ! KUEUE=true "$here/test/cluster/up.sh" "$dir" >"$logs/up.log" 2>&1; then
	tail -n 20 "$logs/up.log" >&2
	echo "demo: KUEUE=true test/cluster/up.sh failed (log above, in full in $logs/up.log)" >&2
	exit 1
fi
set -a
# shellcheck disable=SC1091
. "$dir/env"
set +a
step "etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok ($STEADFAST_KWOK_NODES) and Kueue $STEADFAST_KUEUE_VERSION up on loopback in $(( $(date +%s) - t0 )) s; $("$bin" cluster-info --kubeconfig "$KUBECONFIG" | head -n 1)"
DEMO_LOGS=$logs O=${O:-build} python3 "$here/tools/demo.py"
