#!/usr/bin/env bash
# Stops and/or starts the test cluster's kube-apiserver alone, with the
# command line up.sh recorded (same flags, same port), leaving etcd and the
# controller manager running. Used by tests of reconnection behaviour.
#
#   test/cluster/restart-apiserver.sh [STATE_DIR] [restart|stop|start]
#
# STATE_DIR defaults to <repo>/.cluster, the action to restart. "start" and
# "restart" wait until /readyz answers ok.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

case ${1:-} in
  restart|stop|start) action=$1; dir_arg=${2:-} ;;
  *) dir_arg=${1:-}; action=${2:-restart} ;;
esac
case $action in
  restart|stop|start) ;;
  *) die "unknown action '$action' (use restart, stop or start)" ;;
esac
dir=$(cluster_state_dir "$dir_arg")
[ -f "$dir/$CLUSTER_MARKER" ] && [ -f "$dir/cmd/kube-apiserver.args" ] && [ -f "$dir/env" ] \
  || die "no cluster in $dir (run up.sh first)"
url=$(env_value "$dir" STEADFAST_APISERVER)

exec 8<"$dir"
# Not forever: processes started by an older up.sh may hold this lock.
flock -w 15 8 || log "state dir still locked after 15 s; going on anyway"

t0=$(now_ms)
if [ "$action" != start ]; then
  if component_running kube-apiserver "$dir"; then
    stop_component kube-apiserver "$dir" || die "could not stop kube-apiserver"
    log "kube-apiserver stopped"
  else
    log "kube-apiserver was not running"
  fi
fi
[ "$action" = stop ] && exit 0

if component_running kube-apiserver "$dir"; then
  log "kube-apiserver already running (pid $(recorded_pid kube-apiserver "$dir"))"
else
  component_running etcd "$dir" || die "etcd is not running; run down.sh and up.sh"
  start_component kube-apiserver "$dir"
  log "kube-apiserver starting on $url (pid $(recorded_pid kube-apiserver "$dir"))"
fi
if ! wait_apiserver_ready "$dir" "$url" 60; then
  show_log_tail kube-apiserver "$dir"
  stop_component kube-apiserver "$dir" || true
  die "kube-apiserver did not become ready"
fi
log "kube-apiserver ready after $(( $(now_ms) - t0 )) ms"
