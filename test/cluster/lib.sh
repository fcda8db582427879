# Shared functions for the local test control plane scripts (up.sh, down.sh,
# compact.sh, restart-apiserver.sh). Sourced, not executed.
#
# State directory layout (all absolute paths):
#   .steadfast-cluster   marker: only directories carrying it are ever wiped
#   pids/<name>.pid      pid of each running component
#   cmd/<name>.args      the component's command line, one argument per line
#   logs/<name>.log      stdout+stderr of each component
#   pki/                 CA, serving/client certificates, service-account keys
#   etcd/                etcd data directory
#   env                  KEY=value lines for tests (see README.md)

CLUSTER_MARKER=.steadfast-cluster
CLUSTER_COMPONENTS="etcd kube-apiserver kube-controller-manager"

# What KUEUE=true adds, in start order.
KUEUE_COMPONENTS="kube-scheduler kwok kueue"
# Every component any cluster may have, in stop order.
ALL_COMPONENTS="kueue kwok kube-scheduler kube-controller-manager kube-apiserver etcd etcd-leases"

# The components of state dir $1: CLUSTER_COMPONENTS, plus etcd-leases when
# the cluster was started with LEASE_ETCD=true and KUEUE_COMPONENTS with
# KUEUE=true.
cluster_components() {
  local c=$CLUSTER_COMPONENTS k
  [ -f "$1/cmd/etcd-leases.args" ] && c="etcd-leases $c"
  for k in $KUEUE_COMPONENTS; do
    [ -f "$1/cmd/$k.args" ] && c="$c $k"
  done
  # ---- kubelet (KUBELET=true) ----
  [ -f "$1/cmd/kubelet.args" ] && c="$c relay-host relay-node containerd kubelet"
  # ---- end kubelet ----
  echo "$c"
}

# The binary a component runs (etcd-leases is a second etcd; kueue starts
# as kueue-exec.sh, which execs the kueue binary in place).
component_binary() {
  case $1 in
    etcd-leases) echo etcd ;;
    # ---- kubelet (KUBELET=true) ----
    relay-host|relay-node) echo socat ;;
    # ---- end kubelet ----
    *) echo "$1" ;;
  esac
}

cluster_repo_root() {
  (cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
}

# Absolute form of STATE_DIR ($1, default <repo>/.cluster); the directory
# need not exist.
cluster_state_dir() {
  realpath -m -- "${1:-$(cluster_repo_root)/.cluster}"
}

log() { printf '[cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Milliseconds since the epoch.
now_ms() { date +%s%3N; }

# True if $1 is a live (non-zombie) process.
pid_alive() {
  local pid=$1 state
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  state=$(sed -e 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# True if pid $2 is component $1 started for state dir $3: argv[0] must be
# the component binary and the command line must mention the state dir (every
# component is given paths inside it). Guards against pid reuse.
pid_is_component() {
  local name=$1 pid=$2 dir=$3 argv0 cmdline
  pid_alive "$pid" || return 1
  argv0=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n1) || return 1
  [ "$(basename -- "$argv0")" = "$(component_binary "$name")" ] || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  case $cmdline in *"$dir/"*) return 0 ;; esac
  return 1
}

# Pid recorded for component $1 in state dir $2 (empty if none).
recorded_pid() {
  local f=$2/pids/$1.pid
  [ -f "$f" ] && tr -dc '0-9' <"$f" || true
}

# True if component $1 of state dir $2 is running.
component_running() {
  local pid
  pid=$(recorded_pid "$1" "$2")
  [ -n "$pid" ] && pid_is_component "$1" "$pid" "$2"
}

# Stops component $1 of state dir $2: SIGTERM, up to 10 s grace, then SIGKILL.
# Only signals the recorded pid, and only if it still is that component.
stop_component() {
  local name=$1 dir=$2 pid i
  pid=$(recorded_pid "$name" "$dir")
  if [ -z "$pid" ]; then
    rm -f "$dir/pids/$name.pid"
    return 0
  fi
  if ! pid_is_component "$name" "$pid" "$dir"; then
    if pid_alive "$pid"; then
      log "$name: pid $pid is not ours any more (pid reused); leaving it alone"
    fi
    rm -f "$dir/pids/$name.pid"
    return 0
  fi
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    pid_alive "$pid" || break
    sleep 0.1
  done
  if pid_alive "$pid"; then
    log "$name (pid $pid) still running after 10 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
      pid_alive "$pid" || break
      sleep 0.1
    done
    pid_alive "$pid" && { log "$name (pid $pid) survived SIGKILL"; return 1; }
  fi
  rm -f "$dir/pids/$name.pid"
  return 0
}

# Starts component $1 of state dir $2 from cmd/$1.args, detached in its own
# session (a Ctrl-C aimed at the caller does not reach it), appending to
# logs/$1.log, and records its pid.
start_component() {
  local name=$1 dir=$2 args=() pid
  mapfile -t args <"$dir/cmd/$name.args"
  mkdir -p "$dir/logs" "$dir/pids"
  printf '\n===== %s starting %s =====\n' "$(date '+%F %T')" "$name" >>"$dir/logs/$name.log"
  # The subshell is not a process-group leader, so setsid execs in place and
  # $! is the component's own pid. Descriptors other than 0-2 are closed
  # first: the component must not hold the state-dir lock, nor a pipe of
  # whoever ran this script (which would then never see end-of-file).
  (
    cd "$dir"
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null
    done
    exec setsid "${args[@]}" >>"$dir/logs/$name.log" 2>&1 </dev/null
  ) &
  pid=$!
  echo "$pid" >"$dir/pids/$name.pid"
}

# Writes the command line of component $1 (remaining args) to cmd/$1.args.
save_args() {
  local name=$1 dir=$2
  shift 2
  mkdir -p "$dir/cmd"
  printf '%s\n' "$@" >"$dir/cmd/$name.args"
}

# Prints the last 30 lines of component $1's log.
show_log_tail() {
  local f=$2/logs/$1.log
  [ -f "$f" ] || return 0
  echo "----- last 30 lines of $f -----" >&2
  tail -n 30 "$f" >&2
  echo "----- end of $f -----" >&2
}

# Value of KEY $2 in the env file of state dir $1.
env_value() {
  local f=$1/env
  [ -f "$f" ] || return 1
  (set +u; . "$f"; eval "printf '%s\n' \"\${$2}\"")
}

# curl against the API server of state dir $1 with the admin client cert.
# Remaining args go to curl.
admin_curl() {
  local dir=$1
  shift
  curl -sS --max-time 10 --cacert "$dir/pki/ca.crt" \
    --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" "$@"
}

# Waits up to $3 seconds for the API server of state dir $1 (address $2) to
# answer /readyz with "ok". Fails early if the process dies.
wait_apiserver_ready() {
  local dir=$1 url=$2 timeout=$3 start body
  start=$(now_ms)
  while :; do
    body=$(admin_curl "$dir" --max-time 3 "$url/readyz" 2>/dev/null || true)
    [ "$body" = ok ] && return 0
    component_running kube-apiserver "$dir" || { log "kube-apiserver exited"; return 1; }
    if [ $(( $(now_ms) - start )) -ge $(( timeout * 1000 )) ]; then
      log "kube-apiserver not ready after ${timeout}s; /readyz?verbose says:"
      admin_curl "$dir" --max-time 3 "$url/readyz?verbose" 2>&1 | grep -v '\[+\]' >&2 || true
      return 1
    fi
    sleep 0.2
  done
}
