#!/usr/bin/env bash
# Starts a real, local Kubernetes control plane for Steadfast's tests:
# etcd, kube-apiserver (TLS from a CA made here, RBAC, audit log) and
# kube-controller-manager (garbage collector, job, namespace and
# service-account controllers). There is no kubelet and no scheduler: pods
# are stored, never run. Everything listens on 127.0.0.1 on free ports and
# lives in STATE_DIR, which down.sh removes.
#
#   test/cluster/up.sh [STATE_DIR]       default STATE_DIR: <repo>/.cluster
#
# On success STATE_DIR/env holds KEY=value lines for the tests (README.md).
# Running it again while the cluster is up does nothing and exits 0.
# Environment: WATCH_CACHE=false starts kube-apiserver with --watch-cache=false.
# WATCH_LIST=false starts it with --feature-gates=WatchList=false (watches
# with sendInitialEvents are refused: 422 Invalid).
# ETCD_QUOTA_MIB (default 512): etcd's --quota-backend-bytes in MiB.
# KCM_QPS (default 100; burst twice that), KCM_JOB_SYNCS and KCM_GC_SYNCS
# (default: kube-controller-manager's own, 5 and 20): its client limit,
# --concurrent-job-syncs and --concurrent-gc-syncs.
# LEASE_ETCD=true runs a second etcd for coordination.k8s.io/leases
# (--etcd-servers-overrides, as large clusters do): Lease resourceVersions
# then come from another revision counter than everything else's.
# KUEUE=true also starts kube-scheduler, kwok (fake nodes labelled
# type=kwok, pod lifecycles from kwok-pod-stages.yaml; KWOK_NODES of them,
# default 2, are created here) and Kueue (AppWrapper and batch/job
# integrations, its CRDs and webhooks installed, the webhooks served on
# 127.0.0.1), after installing the AppWrapper CRD (README.md).
# ---- kubelet (KUBELET=true) ----
# KUBELET=true also runs one real node, `localhost`: containerd, runc and a
# kubelet in a network namespace of their own, with a pod network inside it
# (node.sh says how), and kube-controller-manager gets the controllers a
# Deployment needs (deployment, replicaset, root-CA publisher, disruption).
# up.sh returns once the node is Ready.
# ---- end kubelet ----
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
# ---- kubelet (KUBELET=true) ----
. "$here/node.sh"
# ---- end kubelet ----

dir=$(cluster_state_dir "${1:-}")
t0=$(now_ms)
kueue=false
case ${KUEUE:-} in
  "" | false) ;;
  true) kueue=true ;;
  *) die "KUEUE must be true or false, not '$KUEUE'" ;;
esac
elapsed() { awk -v ms=$(( $(now_ms) - t0 )) 'BEGIN{printf "%.1fs", ms/1000}'; }

# Sets $running and $stopped to the components up / not up in $dir.
survey() {
  running="" stopped=""
  for c in $(cluster_components "$dir"); do
    if component_running "$c" "$dir"; then running="$running $c"; else stopped="$stopped $c"; fi
  done
}
# Exits 0 if the whole cluster in $dir is up.
exit_if_running() {
  [ -f "$dir/$CLUSTER_MARKER" ] && [ -f "$dir/env" ] || return 0
  survey
  [ -z "$stopped" ] || return 0
  if [ "$kueue" = true ] && [ ! -f "$dir/cmd/kueue.args" ]; then
    die "a cluster without Kueue is running in $dir; run $here/down.sh $dir first"
  fi
  log "cluster already running in $dir ($(env_value "$dir" STEADFAST_APISERVER)); nothing to do"
  log "use: . $dir/env"
  exit 0
}

mkdir -p "$dir"
# Serialise with other up/down/restart runs on the same state dir. A running
# cluster started by an older version of this script may hold the lock
# itself (its processes inherited it), so check for that before waiting.
exec 8<"$dir"
if ! flock -n 8; then
  exit_if_running
  log "waiting for another up/down/restart run on $dir"
  flock 8
fi

exit_if_running
if [ -f "$dir/$CLUSTER_MARKER" ]; then
  survey
  if [ -n "$running" ]; then
    die "cluster in $dir is partly running (up:$running; down:$stopped); run $here/down.sh $dir first, or $here/restart-apiserver.sh $dir start if only kube-apiserver was stopped"
  fi
  log "removing stale state in $dir (no component running)"
  find "$dir" -mindepth 1 -delete
elif [ -n "$(ls -A "$dir")" ]; then
  die "$dir is not empty and is not a cluster state directory; refusing to use it"
fi

if [ "$kueue" = true ]; then
  command -v unshare >/dev/null || die "KUEUE=true needs unshare (util-linux)"
  python3 -c 'import yaml' 2>/dev/null || die "KUEUE=true needs python3-yaml (make deps)"
  "$here/build.sh" --kueue >/dev/null || die "building kube-scheduler, Kueue or kwok failed"
fi
bin=$("$here/build.sh") || die "building the control-plane binaries failed"
for b in $CLUSTER_COMPONENTS; do
  [ -x "$bin/$b" ] || die "missing $bin/$b"
done
# ---- kubelet (KUBELET=true) ----
[ "${KUBELET:-}" != true ] || [ -x "$bin/kubelet" ] || die "missing $bin/kubelet"
# ---- end kubelet ----

touch "$dir/$CLUSTER_MARKER"
# Keeps git from ever listing the state (the default lives inside the repo).
echo "*" >"$dir/.gitignore"
mkdir -p "$dir/pki" "$dir/logs" "$dir/pids" "$dir/cmd"
mkdir -m 700 "$dir/etcd"
pki=$dir/pki

# ---------------------------------------------------------------- failure path
started=""     # components started so far, newest first
current=""     # component being brought up (its log is shown on failure)
finished=0
on_exit() {
  local rc=$?
  [ "$finished" = 1 ] && return 0
  [ "$rc" = 0 ] && rc=1
  trap - EXIT INT TERM
  log "startup FAILED after $(elapsed)"
  [ -n "$current" ] && show_log_tail "$current" "$dir"
  # ---- kubelet (KUBELET=true) ----
  [ "${KUBELET:-}" = true ] && { node_stop "$dir" || true; }
  # ---- end kubelet ----
  for c in $started; do stop_component "$c" "$dir" || true; done
  rm -f "$dir/env"
  log "stopped what was started; logs kept in $dir/logs (down.sh removes them)"
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Prints N distinct free TCP ports on 127.0.0.1, chosen at random below the
# kernel's ephemeral range, so outgoing connections never hold them.
free_ports() {
  python3 - "$1" <<'EOF'
import random, socket, sys
n = int(sys.argv[1])
try:
    lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except Exception:
    lo = 32768
lo = max(lo, 11000)
held, ports = [], []
for _ in range(5000):
    if len(ports) == n:
        break
    p = random.randint(10000, lo - 1)
    if p in ports:
        continue
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        s.close()
        continue
    held.append(s)
    ports.append(p)
if len(ports) != n:
    sys.exit("no free ports found")
print(" ".join(map(str, ports)))
EOF
}

# Log bytes before a start attempt, so a failure can be checked for
# "address already in use" in that attempt only.
log_size() { stat -c %s "$dir/logs/$1.log" 2>/dev/null || echo 0; }
port_clash() { tail -c +$(( $2 + 1 )) "$dir/logs/$1.log" 2>/dev/null | grep -q 'address already in use'; }

# --------------------------------------------------------------------- PKI
# RSA keys are generated in parallel (the slow part), then signed by the CA.
make_pki() {
  local k pids=() p
  local keys="ca apiserver admin lowpriv controller-manager sa"
  if [ "$kueue" = true ]; then keys="$keys scheduler loopback"; fi
  for k in $keys; do
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
      -out "$pki/$k.key" 2>"$pki/$k.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "openssl: key generation failed: $(cat "$pki"/*.err)"; done
  rm -f "$pki"/*.err
  chmod 600 "$pki"/*.key
  openssl req -x509 -new -key "$pki/ca.key" -sha256 -days 3650 -out "$pki/ca.crt" \
    -subj "/CN=steadfast-test-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null \
    || die "openssl: creating the CA failed"
  issue apiserver "/CN=kube-apiserver" \
    "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  issue admin "/O=system:masters/CN=steadfast-admin" "$client_ext"
  issue lowpriv "/CN=steadfast-lowpriv" "$client_ext"
  issue controller-manager "/CN=system:kube-controller-manager" "$client_ext"
  if [ "$kueue" = true ]; then
    issue scheduler "/CN=system:kube-scheduler" "$client_ext"
    # Served on 127.0.0.1 by kube-scheduler and by Kueue (webhooks, metrics).
    issue loopback "/CN=steadfast-loopback" \
      "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1"
  fi
  openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null \
    || die "openssl: service-account public key failed"
  log "PKI written to $pki"
}
client_ext='basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'
# issue NAME SUBJECT EXTENSIONS: certificate for pki/NAME.key signed by the CA.
issue() {
  local name=$1 subj=$2 ext=$3
  printf '%b\n' "$ext" >"$pki/$name.ext"
  openssl req -new -key "$pki/$name.key" -sha256 -subj "$subj" -out "$pki/$name.csr" 2>/dev/null \
    && openssl x509 -req -sha256 -days 3650 -in "$pki/$name.csr" \
      -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
      -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null \
    || die "openssl: certificate $name failed"
  rm -f "$pki/$name.csr" "$pki/$name.ext"
}

# ------------------------------------------------------------------------ etcd
# start_etcd [NAME]: etcd (default) or etcd-leases; sets etcd_url or
# lease_etcd_url.
start_etcd() {
  local name=${1:-etcd} url
  read -r etcd_port peer_port < <(free_ports 2) || true
  [ -n "${peer_port:-}" ] || die "could not find free ports"
  url=http://127.0.0.1:$etcd_port
  if [ "$name" = etcd ]; then etcd_url=$url; else lease_etcd_url=$url; fi
  mkdir -p -m 700 "$dir/$name"
  save_args "$name" "$dir" "$bin/etcd" \
    --name="steadfast-$name" \
    --data-dir="$dir/$name" \
    --listen-client-urls="$url" \
    --advertise-client-urls="$url" \
    --listen-peer-urls="http://127.0.0.1:$peer_port" \
    --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
    --initial-cluster="steadfast-$name=http://127.0.0.1:$peer_port" \
    --initial-cluster-state=new \
    --initial-cluster-token="steadfast-$$" \
    --unsafe-no-fsync=true \
    --quota-backend-bytes=$(( ${ETCD_QUOTA_MIB:-512} * 1024 * 1024 )) \
    --snapshot-count=10000 \
    --log-level=warn
  start_component "$name" "$dir"
}

# wait_etcd [NAME] [URL]
wait_etcd() {
  local name=${1:-etcd} url=${2:-$etcd_url}
  local deadline=$(( $(now_ms) + 20000 )) grace=$(( $(now_ms) + 3000 ))
  while :; do
    curl -s --max-time 2 "$url/health" 2>/dev/null | grep -q '"health":"true"' && return 0
    # (right after start_component the pid may not have exec'd etcd yet)
    component_running "$name" "$dir" || [ "$(now_ms)" -lt "$grace" ] || return 1
    [ "$(now_ms)" -lt "$deadline" ] || { log "etcd not healthy after 20s"; return 1; }
    sleep 0.1
  done
}

current=etcd
for attempt in 1 2 3; do
  before=$(log_size etcd)
  start_etcd
  started="etcd $started"
  log "etcd starting on $etcd_url (pid $(recorded_pid etcd "$dir"))"
  # Generate the PKI while etcd boots.
  [ "$attempt" = 1 ] && make_pki
  if wait_etcd; then break; fi
  if [ "$attempt" -lt 3 ] && port_clash etcd "$before"; then
    log "etcd: port taken meanwhile; retrying with other ports"
    stop_component etcd "$dir" || true
    started=${started#etcd }
    find "$dir/etcd" -mindepth 1 -delete
    continue
  fi
  die "etcd failed to start"
done
log "etcd healthy ($(elapsed))"

lease_etcd_url=""
if [ "${LEASE_ETCD:-}" = true ]; then
  current=etcd-leases
  for attempt in 1 2 3; do
    before=$(log_size etcd-leases)
    start_etcd etcd-leases
    started="etcd-leases $started"
    if wait_etcd etcd-leases "$lease_etcd_url"; then break; fi
    if [ "$attempt" -lt 3 ] && port_clash etcd-leases "$before"; then
      stop_component etcd-leases "$dir" || true
      started=${started#etcd-leases }
      find "$dir/etcd-leases" -mindepth 1 -delete
      continue
    fi
    die "etcd-leases failed to start"
  done
  log "etcd for leases healthy on $lease_etcd_url ($(elapsed))"
fi

# -------------------------------------------------------------- audit policy
cat >"$dir/audit-policy.yaml" <<'EOF'
# Metadata-level audit events for the resources Steadfast's tests look at
# (subresources such as pods/status included); nothing for anything else.
# RequestReceived is omitted: one line per request (watches also log
# ResponseStarted when the watch opens).
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
  - RequestReceived
rules:
  - level: Metadata
    resources:
      - group: coordination.k8s.io
        resources: ["leases", "leases/*"]
      - group: workload.codeflare.dev
        resources: ["appwrappers", "appwrappers/*"]
      - group: batch
        resources: ["jobs", "jobs/*"]
      - group: ""
        resources: ["pods", "pods/*", "configmaps"]
  # Events too (the AppWrapper benchmark counts the controller's event
  # writes per AppWrapper).
  - level: Metadata
    resources:
      - group: ""
        resources: ["events"]
      - group: events.k8s.io
        resources: ["events"]
  - level: None
EOF

# ---------------------------------------------------------- kube-apiserver
# --endpoint-reconciler-type=none: the default reconciler refuses a loopback
#   --advertise-address; nothing here needs the kubernetes Endpoints.
# --shutdown-send-retry-after=true: on SIGTERM, answer 429 + Retry-After
#   until in-flight requests drain, then close within 2 s. Without it the
#   HTTP server waits up to --request-timeout (60 s) for open watches, so a
#   restart would need SIGKILL.
start_apiserver() {
  read -r api_port < <(free_ports 1) || true
  [ -n "${api_port:-}" ] || die "could not find a free port"
  api_url=https://127.0.0.1:$api_port
  local extra=()
  [ "${WATCH_CACHE:-}" = false ] && extra+=(--watch-cache=false)
  [ "${WATCH_LIST:-}" = false ] && extra+=(--feature-gates=WatchList=false)
  [ -n "$lease_etcd_url" ] && extra+=("--etcd-servers-overrides=coordination.k8s.io/leases#$lease_etcd_url")
  save_args kube-apiserver "$dir" "$bin/kube-apiserver" \
    --etcd-servers="$etcd_url" \
    --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 \
    --endpoint-reconciler-type=none \
    --secure-port="$api_port" \
    --tls-cert-file="$pki/apiserver.crt" \
    --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --authorization-mode=RBAC \
    --service-account-key-file="$pki/sa.pub" \
    --service-account-signing-key-file="$pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-cluster-ip-range=10.0.0.0/24 \
    --allow-privileged=true \
    --audit-policy-file="$dir/audit-policy.yaml" \
    --audit-log-path="$dir/audit.log" \
    --audit-log-format=json \
    --audit-log-mode=blocking \
    --profiling=false \
    --shutdown-send-retry-after=true \
    --v=1 \
    "${extra[@]}"
  start_component kube-apiserver "$dir"
}

current=kube-apiserver
for attempt in 1 2 3; do
  before=$(log_size kube-apiserver)
  start_apiserver
  started="kube-apiserver $started"
  log "kube-apiserver starting on $api_url (pid $(recorded_pid kube-apiserver "$dir"))${WATCH_CACHE:+ WATCH_CACHE=$WATCH_CACHE}${WATCH_LIST:+ WATCH_LIST=$WATCH_LIST}"
  if wait_apiserver_ready "$dir" "$api_url" 60; then break; fi
  if [ "$attempt" -lt 3 ] && port_clash kube-apiserver "$before"; then
    log "kube-apiserver: port taken meanwhile; retrying with another port"
    stop_component kube-apiserver "$dir" || true
    started=${started#kube-apiserver }
    continue
  fi
  die "kube-apiserver failed to become ready"
done
log "kube-apiserver ready ($(elapsed))"

# ----------------------------------------------------------------- kubeconfigs
# write_kubeconfig FILE USER CERT KEY
write_kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: steadfast
    cluster:
      server: $api_url
      certificate-authority: $pki/ca.crt
users:
  - name: $2
    user:
      client-certificate: $3
      client-key: $4
contexts:
  - name: $2
    context:
      cluster: steadfast
      user: $2
      namespace: default
current-context: $2
EOF
}
write_kubeconfig "$dir/admin.kubeconfig" steadfast-admin "$pki/admin.crt" "$pki/admin.key"
write_kubeconfig "$dir/lowpriv.kubeconfig" steadfast-lowpriv "$pki/lowpriv.crt" "$pki/lowpriv.key"
write_kubeconfig "$dir/controller-manager.kubeconfig" system:kube-controller-manager \
  "$pki/controller-manager.crt" "$pki/controller-manager.key"

# ------------------------------------------------------------------------ RBAC
# create PATH JSON: POST with the admin cert; an existing object is fine.
create() {
  local out code
  out=$(mktemp)
  code=$(admin_curl "$dir" -o "$out" -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' --data "$2" "$api_url$1") || code=000
  case $code in
    201|200|409) rm -f "$out"; return 0 ;;
  esac
  log "POST $1 returned HTTP $code: $(head -c 600 "$out")"
  rm -f "$out"
  return 1
}
current=""
# steadfast-lowpriv: get/list configmaps in namespace default, nothing else.
create /apis/rbac.authorization.k8s.io/v1/namespaces/default/roles '{
  "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
  "metadata": {"name": "steadfast-lowpriv", "namespace": "default"},
  "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]
}' || die "creating Role steadfast-lowpriv failed"
create /apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings '{
  "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
  "metadata": {"name": "steadfast-lowpriv", "namespace": "default"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "steadfast-lowpriv"},
  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "steadfast-lowpriv"}]
}' || die "creating RoleBinding steadfast-lowpriv failed"
# With --use-service-account-credentials=false every controller acts as
# system:kube-controller-manager, whose bootstrap role cannot create pods or
# update jobs: grant it cluster-admin.
create /apis/rbac.authorization.k8s.io/v1/clusterrolebindings '{
  "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
  "metadata": {"name": "steadfast:kube-controller-manager"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-controller-manager"}]
}' || die "creating ClusterRoleBinding steadfast:kube-controller-manager failed"
log "RBAC for steadfast-lowpriv and the controller manager created"

# ------------------------------------------------- kube-controller-manager
current=kube-controller-manager
kcm_controllers=garbage-collector-controller,job-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller
kcm_extra=()
if [ "$kueue" = true ]; then
  # kube-apiserver taints every new node not-ready; the node lifecycle
  # controller lifts that once the node (kwok) reports Ready, and checks
  # every second, so a test's node is schedulable soon after.
  kcm_controllers="$kcm_controllers,node-lifecycle-controller"
  kcm_extra+=(--node-monitor-period=1s)
fi
# ---- kubelet (KUBELET=true) ----
[ "${KUBELET:-}" = true ] && kcm_controllers=$kcm_controllers,$NODE_KCM_CONTROLLERS
# ---- end kubelet ----
save_args kube-controller-manager "$dir" "$bin/kube-controller-manager" \
  --kubeconfig="$dir/controller-manager.kubeconfig" \
  --controllers="$kcm_controllers" \
  --use-service-account-credentials=false \
  --service-account-private-key-file="$pki/sa.key" \
  --root-ca-file="$pki/ca.crt" \
  --leader-elect=false \
  --secure-port=0 \
  --kube-api-qps="${KCM_QPS:-100}" \
  --kube-api-burst="$(( ${KCM_QPS:-100} * 2 ))" \
  ${KCM_JOB_SYNCS:+--concurrent-job-syncs="$KCM_JOB_SYNCS"} \
  ${KCM_GC_SYNCS:+--concurrent-gc-syncs="$KCM_GC_SYNCS"} \
  --v=1 \
  ${kcm_extra[@]+"${kcm_extra[@]}"}
start_component kube-controller-manager "$dir"
started="kube-controller-manager $started"
log "kube-controller-manager starting (pid $(recorded_pid kube-controller-manager "$dir"))"

deadline=$(( $(now_ms) + 30000 ))
until [ "$(admin_curl "$dir" -o /dev/null -w '%{http_code}' \
          "$api_url/api/v1/namespaces/default/serviceaccounts/default" 2>/dev/null)" = 200 ]; do
  component_running kube-controller-manager "$dir" || die "kube-controller-manager exited"
  [ "$(now_ms)" -lt "$deadline" ] || die "ServiceAccount default/default not created within 30s"
  sleep 0.2
done
log "ServiceAccount default/default exists ($(elapsed))"

kueue_env=()
if [ "$kueue" = true ]; then . "$here/up-kueue.sh"; fi
# ---- kubelet (KUBELET=true) ----
node_env=()
if [ "${KUBELET:-}" = true ]; then
  node_start "$dir"
  node_env=("STEADFAST_NODE=$NODE_NAME" "STEADFAST_NODE_DIR=$(node_dir "$dir")"
            "STEADFAST_CONTAINERD_SOCK=$(node_sock "$dir")")
fi
# ---- end kubelet ----

# ------------------------------------------------------------------- env file
{
  for kv in \
    "KUBECONFIG=$dir/admin.kubeconfig" \
    "STEADFAST_LOWPRIV_KUBECONFIG=$dir/lowpriv.kubeconfig" \
    "STEADFAST_AUDIT_LOG=$dir/audit.log" \
    "STEADFAST_APISERVER=$api_url" \
    "STEADFAST_CA=$pki/ca.crt" \
    "STEADFAST_ADMIN_CERT=$pki/admin.crt" \
    "STEADFAST_ADMIN_KEY=$pki/admin.key" \
    "STEADFAST_LOWPRIV_CERT=$pki/lowpriv.crt" \
    "STEADFAST_LOWPRIV_KEY=$pki/lowpriv.key" \
    "STEADFAST_ETCD=$etcd_url" \
    "STEADFAST_LEASE_ETCD=$lease_etcd_url" \
    "STEADFAST_SA_KEY=$pki/sa.key" \
    "STEADFAST_SA_PUB=$pki/sa.pub" \
    "STEADFAST_SA_ISSUER=https://kubernetes.default.svc" \
    "STEADFAST_CLUSTER_DIR=$dir" \
    ${kueue_env[@]+"${kueue_env[@]}"} \
    ${node_env[@]+"${node_env[@]}"}; do
    printf '%s=%q\n' "${kv%%=*}" "${kv#*=}"
  done
} >"$dir/env.tmp"
mv "$dir/env.tmp" "$dir/env"

finished=1
trap - EXIT INT TERM
log "cluster up in $(elapsed): $api_url (etcd $etcd_url)"
log "use: . $dir/env"
