#!/usr/bin/env bash
# make demo: a real local control plane, three Steadfast replicas, sample
# AppWrappers (one failing) admitted as Kueue would, pods driven as kubelet
# would, the leader killed and the handover shown, final phases printed
# (tools/demo.py). Stops everything it started, also on Ctrl-C.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/${O:-build}/steadfast"
dir=$(mktemp -d /tmp/steadfast-demo.XXXXXX)
step() { printf '\n==> %s\n' "$*"; }
cleanup() {
	step "stopping the control plane (only the processes this demo started)"
	"$here/test/cluster/down.sh" "$dir" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "building or reusing the control-plane binaries (first build: 15-30 min, progress below)"
"$here/test/cluster/build.sh" >/dev/null
step "starting etcd, kube-apiserver and kube-controller-manager on loopback (TLS, RBAC, audit log)"
"$here/test/cluster/up.sh" "$dir"
# shellcheck disable=SC1091
. "$dir/env"
step "the API server, through Steadfast's own C client"
"$bin" cluster-info --kubeconfig "$KUBECONFIG"
export STEADFAST_CLUSTER_DIR="$dir"
set -a
# shellcheck disable=SC1091
. "$dir/env"
set +a
O=${O:-build} python3 "$here/tools/demo.py"
