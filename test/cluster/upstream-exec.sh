#!/usr/bin/env bash
# Runs the upstream AppWrapper controller (the command after NAMESPACE) out
# of cluster as if in a pod of NAMESPACE. controller-runtime's leader
# election finds its Lease namespace only in the file a pod has,
# /var/run/secrets/kubernetes.io/serviceaccount/namespace (upstream's main
# sets no LeaderElectionNamespace), and exits without it. So that nothing
# is written to the machine's /run, this script re-executes itself in a
# private mount namespace, mounts a tmpfs over /run/secrets' parent there
# (/run: /var/run is a link to it; the namespace only lives as long as the
# process) and writes that one file, then execs the command: it keeps this
# process's pid, so a signal sent to the pid reaches the controller itself
# (as kueue-exec.sh does for Kueue). The kubeconfig comes from $KUBECONFIG
# and upstream's own namespace from $NAMESPACE, both in the environment.
#
#   upstream-exec.sh NAMESPACE COMMAND [ARG...]      (needs CAP_SYS_ADMIN: root)
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: upstream-exec.sh NAMESPACE COMMAND [ARG...]" >&2; exit 64; }
ns=$1
shift
if [ "${STEADFAST_UPSTREAM_MOUNT_NS:-}" != "$$" ]; then
  # unshare execs in place (no --fork): the pid stays the same.
  export STEADFAST_UPSTREAM_MOUNT_NS=$$
  exec unshare --mount --propagation private -- "$0" "$ns" "$@"
fi
unset STEADFAST_UPSTREAM_MOUNT_NS
# /run hidden in this namespace only: the controller needs nothing there
# but this file (it talks to 127.0.0.1, no resolver).
mount -t tmpfs -o size=1m,mode=0755 steadfast-upstream-run /run
mkdir -p /run/secrets/kubernetes.io/serviceaccount
printf '%s' "$ns" >/run/secrets/kubernetes.io/serviceaccount/namespace
exec "$@"
