# The KUEUE=true part of up.sh, sourced by it once kube-apiserver and
# kube-controller-manager are up (it uses up.sh's variables and functions:
# dir, pki, bin, api_url, started, current, free_ports, save_args,
# start_component, create, write_kubeconfig). It starts what stands in for
# the rest of a cluster in the tests that run against real components:
#   kube-scheduler  binds pods to nodes (own identity, system:kube-scheduler)
#   kwok            fake nodes and pod lifecycles (kwok-pod-stages.yaml)
#   Kueue           quota and admission, with its CRDs and webhooks
# and waits until each is ready: the scheduler's /readyz, kwok's /healthz
# and its nodes Ready, Kueue's /readyz and its webhooks answering a dry-run
# create through the API server. Adds its keys to kueue_env.

kueue_bin=$("$here/build.sh" --print kueue)/kueue
kwok_bin=$("$here/build.sh" --print kwok)/kwok
[ -x "$kueue_bin" ] || die "missing $kueue_bin"
[ -x "$kwok_bin" ] || die "missing $kwok_bin"
[ -x "$bin/kube-scheduler" ] || die "missing $bin/kube-scheduler"
kueue_mod=$("$here/build.sh" --print kueue-module) || die "Kueue's module is not in the Go module cache"
kwok_mod=$("$here/build.sh" --print kwok-module) || die "kwok's module is not in the Go module cache"
kueue_version=$(basename "$(dirname "$kueue_bin")")
kueue_version=${kueue_version#kueue-}
kwok_nodes=${KWOK_NODES:-2}
case $kwok_nodes in '' | *[!0-9]*) die "KWOK_NODES must be a number, not '$kwok_nodes'" ;; esac

read -r sched_port kwok_port kueue_webhook_port kueue_health_port kueue_metrics_port \
  < <(free_ports 5) || true
[ -n "${kueue_metrics_port:-}" ] || die "could not find free ports"

# ssa COLLECTION NAME FILE: server-side apply of FILE (YAML or JSON) as
# COLLECTION/NAME with the admin cert, forcing ownership of conflicting fields.
ssa() {
  local out code
  out=$(mktemp)
  code=$(admin_curl "$dir" --max-time 60 -o "$out" -w '%{http_code}' -X PATCH \
    -H 'Content-Type: application/apply-patch+yaml' --data-binary "@$3" \
    "$api_url$1/$2?fieldManager=steadfast-cluster-up&force=true") || code=000
  case $code in
    200|201) rm -f "$out"; return 0 ;;
  esac
  log "apply of $1/$2 returned HTTP $code: $(head -c 600 "$out")"
  rm -f "$out"
  return 1
}

# wait_until WHAT SECONDS COMPONENT CMD...: runs CMD every 0.2 s until it
# succeeds; fails when COMPONENT (if not empty) has exited - after a 3 s
# grace, in which it may still be exec'ing - or after SECONDS.
wait_until() {
  local what=$1 secs=$2 comp=$3 t0w
  shift 3
  t0w=$(now_ms)
  until "$@" >/dev/null 2>&1; do
    if [ -n "$comp" ] && [ $(( $(now_ms) - t0w )) -gt 3000 ] && ! component_running "$comp" "$dir"; then
      log "$comp exited while waiting for $what"
      return 1
    fi
    [ $(( $(now_ms) - t0w )) -lt $(( secs * 1000 )) ] || { log "$what: not within ${secs}s"; return 1; }
    sleep 0.2
  done
}

# ------------------------------------------------------------ kube-scheduler
current=kube-scheduler
write_kubeconfig "$dir/scheduler.kubeconfig" system:kube-scheduler "$pki/scheduler.crt" "$pki/scheduler.key"
mkdir -p "$dir/kube-scheduler"
save_args kube-scheduler "$dir" "$bin/kube-scheduler" \
  --kubeconfig="$dir/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="$sched_port" \
  --tls-cert-file="$pki/loopback.crt" \
  --tls-private-key-file="$pki/loopback.key" \
  --cert-dir="$dir/kube-scheduler" \
  --leader-elect=false \
  --profiling=false \
  --v=1
start_component kube-scheduler "$dir"
started="kube-scheduler $started"
log "kube-scheduler starting on https://127.0.0.1:$sched_port (pid $(recorded_pid kube-scheduler "$dir"))"

# ---------------------------------------------------------------------- kwok
# Its config: kwok's own node stages (from its module: Ready at once, then
# a status heartbeat now and then; the node Leases it renews are what keep
# the node lifecycle controller from marking a node unreachable) and our
# pod stages.
current=kwok
mkdir -p "$dir/kwok"
{
  cat "$kwok_mod/kustomize/stage/node/fast/node-initialize.yaml"
  echo "---"
  cat "$kwok_mod/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml"
  echo "---"
  cat "$here/kwok-pod-stages.yaml"
} >"$dir/kwok/kwok.yaml"
save_args kwok "$dir" "$kwok_bin" \
  --kubeconfig="$dir/admin.kubeconfig" \
  --config="$dir/kwok/kwok.yaml" \
  --manage-nodes-with-label-selector=type=kwok \
  --server-address="127.0.0.1:$kwok_port" \
  --cidr=10.244.0.0/16 \
  --node-ip=127.0.0.1 \
  --node-lease-duration-seconds=40
start_component kwok "$dir"
started="kwok $started"
log "kwok starting on http://127.0.0.1:$kwok_port (pid $(recorded_pid kwok "$dir"))"

# ---------------------------------------------------------------------- CRDs
# Ours, so that Kueue sets up its AppWrapper integration at start, then
# Kueue's (server-side: the Workload CRD is too large for the annotation a
# client-side apply keeps). Without Kueue's conversion webhooks: everything
# here speaks kueue.x-k8s.io/v1beta2, the storage version.
current=""
crd_name() { awk '/^metadata:/{m=1; next} m && /^  name:/{print $2; exit}' "$1"; }
crds=""
for f in "$(cluster_repo_root)/manifests/crd/appwrappers.workload.codeflare.dev.yaml" \
         "$kueue_mod"/config/components/crd/bases/*.yaml; do
  n=$(crd_name "$f")
  [ -n "$n" ] || die "no CRD name in $f"
  ssa /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$n" "$f" || die "installing CRD $n failed"
  crds="$crds $n"
done
crds_established() {
  local n
  for n in $crds; do
    admin_curl "$dir" "$api_url/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$n" \
      | python3 -c 'import json,sys; c=json.load(sys.stdin).get("status",{}).get("conditions",[]); sys.exit(0 if any(x["type"]=="Established" and x["status"]=="True" for x in c) else 1)' \
      || return 1
  done
}
wait_until "CRDs Established" 60 "" crds_established || die "CRDs not Established"
log "CRDs installed: AppWrapper and Kueue $kueue_version's ($(elapsed))"

# --------------------------------------------------------- Kueue's webhooks
create /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kueue-system"}}' \
  || die "creating namespace kueue-system failed"
python3 "$here/kueue-webhooks.py" "$kueue_mod" "127.0.0.1:$kueue_webhook_port" "$pki/ca.crt" \
  >"$dir/kueue-webhooks.jsonl" || die "reading Kueue's webhook configurations failed"
while IFS= read -r doc; do
  kind=$(printf '%s' "$doc" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["kind"].lower() + "s", d["metadata"]["name"])')
  printf '%s' "$doc" >"$dir/kueue-webhook.json"
  ssa "/apis/admissionregistration.k8s.io/v1/${kind% *}" "${kind#* }" "$dir/kueue-webhook.json" \
    || die "registering Kueue's ${kind#* } failed"
done <"$dir/kueue-webhooks.jsonl"
rm -f "$dir/kueue-webhook.json"

# --------------------------------------------------------------------- Kueue
current=kueue
mkdir -p "$dir/kueue/certs"
cp "$pki/loopback.crt" "$dir/kueue/certs/tls.crt"
cp "$pki/loopback.key" "$dir/kueue/certs/tls.key"
cat >"$dir/kueue/config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:$kueue_health_port
metrics:
  bindAddress: 127.0.0.1:$kueue_metrics_port
webhook:
  host: 127.0.0.1
  port: $kueue_webhook_port
  certDir: $dir/kueue/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
featureGates:
  VisibilityOnDemand: false
integrations:
  frameworks:
  - batch/job
  - workload.codeflare.dev/appwrapper
EOF
save_args kueue "$dir" "$here/kueue-exec.sh" "$dir/kueue/certs" "$kueue_bin" \
  --config="$dir/kueue/config.yaml" \
  --kubeconfig="$dir/admin.kubeconfig"
start_component kueue "$dir"
started="kueue $started"
log "Kueue $kueue_version starting, webhooks on https://127.0.0.1:$kueue_webhook_port (pid $(recorded_pid kueue "$dir"))"

# ------------------------------------------------------------------ readiness
current=kube-scheduler
sched_ready() { [ "$(curl -sS --max-time 2 --cacert "$pki/ca.crt" "https://127.0.0.1:$sched_port/readyz")" = ok ]; }
wait_until "kube-scheduler /readyz" 60 kube-scheduler sched_ready || die "kube-scheduler not ready"
log "kube-scheduler ready ($(elapsed))"

current=kwok
kwok_ready() { [ "$(curl -sS --max-time 2 "http://127.0.0.1:$kwok_port/healthz")" = ok ]; }
wait_until "kwok /healthz" 60 kwok kwok_ready || die "kwok not ready"
for i in $(seq 0 $(( kwok_nodes - 1 ))); do
  create /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"kwok-node-'"$i"'",
    "labels":{"type":"kwok","kubernetes.io/hostname":"kwok-node-'"$i"'","kubernetes.io/os":"linux","kubernetes.io/arch":"amd64"},
    "annotations":{"kwok.x-k8s.io/node":"fake"}},
    "status":{"capacity":{"cpu":"8","memory":"32Gi","pods":"110","nvidia.com/gpu":"8"},
              "allocatable":{"cpu":"8","memory":"32Gi","pods":"110","nvidia.com/gpu":"8"}}}' \
    || die "creating node kwok-node-$i failed"
done
nodes_ready() {
  admin_curl "$dir" "$api_url/api/v1/nodes?labelSelector=type%3Dkwok" \
    | python3 -c 'import json,sys
items=json.load(sys.stdin)["items"]
ready=[n for n in items if any(c["type"]=="Ready" and c["status"]=="True" for c in n.get("status",{}).get("conditions",[]))
       and not any(t["key"].startswith("node.kubernetes.io/") for t in n.get("spec",{}).get("taints",[]))]
sys.exit(0 if len(ready)==len(items)>=int(sys.argv[1]) else 1)' "$kwok_nodes"
}
wait_until "$kwok_nodes kwok nodes Ready and untainted" 60 kwok nodes_ready || die "kwok nodes not Ready"
log "kwok ready, $kwok_nodes nodes Ready and schedulable ($(elapsed))"

current=kueue
kueue_ready() { [ "$(curl -sS --max-time 2 "http://127.0.0.1:$kueue_health_port/readyz")" = ok ]; }
wait_until "Kueue /readyz" 120 kueue kueue_ready || die "Kueue not ready"
# Through the API server and both of Kueue's webhooks: a dry-run create.
kueue_webhooks_answer() {
  [ "$(admin_curl "$dir" -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data '{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ResourceFlavor","metadata":{"name":"steadfast-up-probe"}}' \
    "$api_url/apis/kueue.x-k8s.io/v1beta2/resourceflavors?dryRun=All")" = 201 ]
}
wait_until "Kueue's webhooks answering" 60 kueue kueue_webhooks_answer || die "Kueue's webhooks do not answer"
log "Kueue ready, webhooks answering ($(elapsed))"
current=""

kueue_env=(
  "STEADFAST_KUEUE=true"
  "STEADFAST_KUEUE_VERSION=$kueue_version"
  "STEADFAST_KUEUE_WEBHOOK=https://127.0.0.1:$kueue_webhook_port"
  "STEADFAST_KUEUE_HEALTH=http://127.0.0.1:$kueue_health_port"
  "STEADFAST_KUEUE_METRICS=https://127.0.0.1:$kueue_metrics_port"
  "STEADFAST_SCHEDULER=https://127.0.0.1:$sched_port"
  "STEADFAST_KWOK=http://127.0.0.1:$kwok_port"
  "STEADFAST_KWOK_NODE_LABEL=type=kwok"
  "STEADFAST_KWOK_NODES=$(seq -f 'kwok-node-%g' -s , 0 $(( kwok_nodes - 1 )))"
)
