#!/usr/bin/env bash
# Stops the local test control plane started by up.sh and removes its state
# directory. Only the processes recorded in STATE_DIR/pids are signalled, and
# only after checking each still is the recorded binary running for this
# state directory (SIGTERM, up to 10 s grace, then SIGKILL). Safe to run when
# nothing is up.
# ---- kubelet (KUBELET=true) ----
# A node started with KUBELET=true goes first, with its containers, cgroups
# and mounts (node.sh, node_stop).
# ---- end kubelet ----
#
#   test/cluster/down.sh [STATE_DIR]     default STATE_DIR: <repo>/.cluster
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
# ---- kubelet (KUBELET=true) ----
. "$here/node.sh"
# ---- end kubelet ----

dir=$(cluster_state_dir "${1:-}")

if [ ! -e "$dir" ]; then
  log "nothing to stop: $dir does not exist"
  exit 0
fi
[ -d "$dir" ] || die "$dir is not a directory"
if [ ! -f "$dir/$CLUSTER_MARKER" ]; then
  if [ -z "$(ls -A "$dir")" ]; then
    rmdir "$dir"
    log "removed empty $dir"
    exit 0
  fi
  die "$dir is not a cluster state directory (no $CLUSTER_MARKER); not touching it"
fi

exec 8<"$dir"
# Waits for an up.sh or restart in progress, but not forever: processes
# started by an older up.sh may hold this lock themselves.
flock -w 15 8 || log "state dir still locked after 15 s; stopping anyway"

rc=0
# ---- kubelet (KUBELET=true) ----
# the node first: its containers, shims, cgroups and mounts go with it
node_stop "$dir" || rc=1
# ---- end kubelet ----
for c in $ALL_COMPONENTS; do
  stop_component "$c" "$dir" || rc=1
done
[ "$rc" = 0 ] || die "some processes could not be stopped; keeping $dir"

rm -rf "$dir"
log "cluster stopped; removed $dir"
