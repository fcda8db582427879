# The one real node of `KUBELET=true test/cluster/up.sh`: containerd, runc
# and a kubelet (node name `localhost`) that run the pods of the test
# control plane for real. Sourced by up.sh and down.sh after lib.sh, not
# executed.
#
# Everything lives under the state directory, never in the machine's
# defaults: containerd's config, root, state, socket and runc's state, the
# kubelet's root directory, pod logs and volume plugins, the CNI config and
# address allocations, and a cgroup root of its own in each cgroup v1
# hierarchy (so two nodes on one machine never see each other's pods).
# Two exceptions containerd 1.6 cannot move: its shims' sockets in
# /run/containerd/s (gone with the shims) and libcni's result cache in
# /var/lib/cni/results (node_stop removes this node's entries).
#
# Networking: containerd and the kubelet run in a network namespace made
# for this node (STATE_DIR/node/netns). Pods get their own network
# namespaces on a bridge inside it (10.0.0.0/24, gateway 10.0.0.1), so
# three replicas of a Deployment all bind 8080 and 8081 without clashing,
# and nothing is ever added to the machine's own interfaces. The API server
# stays on the machine's 127.0.0.1; two socat relays join it to the node
# through a Unix socket (STATE_DIR/node/api.sock): in the node's namespace
# they listen on port 443 of every address, so the kubelet reaches
# https://127.0.0.1:443 and a pod reaches the `kubernetes` Service address
# 10.0.0.1:443 (its in-cluster configuration) - both names are in the API
# server's certificate. The API server cannot reach the kubelet (no
# `kubectl logs` or `exec`); container logs are files under
# STATE_DIR/node/kubelet/pod-logs.
#
# Images: no registry is reachable, so pods need imagePullPolicy Never and
# images imported with node_import_image (test/cluster/node-image.sh). The
# pod sandbox image is pause.c here, built static into an image FROM
# scratch (cached next to the control-plane binaries).

NODE_NAME=localhost
NODE_COMPONENTS="relay-host relay-node containerd kubelet"
# What a Deployment and its pods need beyond up.sh's controllers: the
# deployment and replicaset controllers, the root-CA publisher (every pod
# mounts the kube-root-ca.crt ConfigMap) and the disruption controller
# (PodDisruptionBudget status, which evictions are checked against).
NODE_KCM_CONTROLLERS=deployment-controller,replicaset-controller,root-ca-certificate-publisher-controller,disruption-controller
NODE_POD_CIDR=10.0.0.0/24
NODE_GATEWAY=10.0.0.1

node_dir() { echo "$1/node"; }
node_sock() { echo "$1/node/containerd/containerd.sock"; }

# ctr against the node of state dir $1, in the CRI's namespace k8s.io.
node_ctr() {
  local dir=$1
  shift
  ctr --address "$(node_sock "$dir")" --namespace k8s.io "$@"
}

# The cgroup hierarchies mounted here (one directory each; v1, and the
# unified one where the machine mounts it too, as the kubelet uses both).
node_cgroup_mounts() {
  awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/self/mounts
}

# The node's cgroup root (a name under each hierarchy), from its state dir.
node_cgroup_root() {
  echo "steadfast-node-$(printf '%s' "$1" | sha256sum | cut -c1-12)"
}

# The pause image's reference; node_pause_tar builds it.
node_pause_ref() {
  echo "localhost/steadfast-pause:$(sha256sum "$here/node/pause.c" | cut -c1-12)"
}

# Builds (once per version of pause.c) the pause image with podman and
# saves it as an archive in the cache; prints the archive's path.
node_pause_tar() {
  local cache ref tar ctx
  cache=$(dirname "$bin")/node-images
  ref=$(node_pause_ref)
  tar=$cache/steadfast-pause-${ref##*:}.tar
  if [ ! -s "$tar" ]; then
    mkdir -p "$cache"
    ctx=$(mktemp -d)
    cc -std=c11 -O2 -static -o "$ctx/pause" "$here/node/pause.c" \
      || { rm -rf "$ctx"; die "compiling node/pause.c (static) failed"; }
    printf 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n' >"$ctx/Containerfile"
    podman build --quiet --pull=never --isolation=chroot -t "$ref" -f "$ctx/Containerfile" "$ctx" >/dev/null \
      || { rm -rf "$ctx"; die "podman build of the pause image failed"; }
    rm -rf "$ctx"
    podman save --quiet -o "$tar.tmp" "$ref" || die "podman save $ref failed"
    mv "$tar.tmp" "$tar"
  fi
  echo "$tar"
}

# node_import_image DIR REF: copies podman's image REF into the node's
# containerd (podman save, ctr import).
node_import_image() {
  local dir=$1 ref=$2 tar
  tar=$(mktemp "$(node_dir "$dir")/image.XXXXXX")
  podman save --quiet -o "$tar" "$ref" || { rm -f "$tar"; log "podman save $ref failed"; return 1; }
  node_ctr "$dir" images import "$tar" >/dev/null || { rm -f "$tar"; log "ctr import of $ref failed"; return 1; }
  rm -f "$tar"
}

# Waits up to $2 s until the node object of state dir $1 reports Ready.
node_wait_ready() {
  local dir=$1 deadline=$(( $(now_ms) + $2 * 1000 ))
  while :; do
    admin_curl "$dir" "$api_url/api/v1/nodes/$NODE_NAME" 2>/dev/null | python3 -c '
import json, sys
try:
    conds = json.load(sys.stdin)["status"]["conditions"]
except Exception:
    sys.exit(1)
sys.exit(0 if any(c["type"] == "Ready" and c["status"] == "True" for c in conds) else 1)' && return 0
    component_running kubelet "$dir" || { log "kubelet exited"; return 1; }
    component_running containerd "$dir" || { log "containerd exited"; return 1; }
    [ "$(now_ms)" -lt "$deadline" ] || { log "node $NODE_NAME not Ready after $2s"; return 1; }
    sleep 0.2
  done
}

# Starts the node of state dir $1 against the API server at $api_url (up.sh
# has made the PKI, $pki, and sourced issue()). Components started are
# added to $started.
node_start() {
  local dir=$1 n api_port cg pause_tar
  n=$(node_dir "$dir")
  api_port=${api_url##*:}
  mkdir -p "$n/containerd" "$n/kubelet/root" "$n/kubelet/pod-logs" "$n/kubelet/volume-plugins" \
    "$n/cni/net.d" "$n/cni/networks"
  for b in containerd ctr runc socat nsenter unshare ip podman cc; do
    command -v "$b" >/dev/null || die "KUBELET=true needs $b (make deps installs it)"
  done
  [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/loopback ] && [ -x /usr/lib/cni/host-local ] \
    || die "KUBELET=true needs the CNI plugins in /usr/lib/cni (make deps installs containernetworking-plugins)"

  # the node's network namespace, kept by a bind mount on a file
  touch "$n/netns"
  unshare --net="$n/netns" true || die "unshare --net=$n/netns failed"
  nsenter --net="$n/netns" ip link set lo up || die "bringing up lo in the node's namespace failed"
  # The pods' bridge, made now rather than by the CNI plugin at the first
  # pod: its address is the node's IP (the kubelet needs one that is not
  # loopback, and the namespace has no default route to find one from).
  nsenter --net="$n/netns" sh -c "ip link add sf0 type bridge && ip addr add $NODE_GATEWAY/24 dev sf0 && ip link set sf0 up" \
    || die "creating the bridge sf0 in the node's namespace failed"

  # the relays to the API server
  save_args relay-host "$dir" socat "UNIX-LISTEN:$n/api.sock,fork,mode=600" "TCP:127.0.0.1:$api_port"
  start_component relay-host "$dir"
  started="relay-host $started"
  save_args relay-node "$dir" nsenter --net="$n/netns" \
    socat "TCP-LISTEN:443,fork,reuseaddr" "UNIX-CONNECT:$n/api.sock"
  start_component relay-node "$dir"
  started="relay-node $started"

  # the kubelet's client certificate (RBAC: system:node below) and kubeconfig
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/kubelet.key" 2>/dev/null \
    || die "openssl: kubelet key failed"
  chmod 600 "$pki/kubelet.key"
  issue kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "$client_ext"
  cat >"$n/kubelet.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: steadfast
    cluster:
      server: https://127.0.0.1:443
      certificate-authority: $pki/ca.crt
users:
  - name: kubelet
    user:
      client-certificate: $pki/kubelet.crt
      client-key: $pki/kubelet.key
contexts:
  - name: kubelet
    context:
      cluster: steadfast
      user: kubelet
current-context: kubelet
EOF
  # The API server runs RBAC only (no Node authorizer): the bootstrap
  # system:node ClusterRole is what a kubelet needs.
  create /apis/rbac.authorization.k8s.io/v1/clusterrolebindings '{
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
    "metadata": {"name": "steadfast:node"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node"},
    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}]
  }' || die "creating ClusterRoleBinding steadfast:node failed"

  # CNI: a bridge in the node's namespace, addresses kept in the state dir
  cat >"$n/cni/net.d/10-steadfast.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "steadfast",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "sf0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$n/cni/networks",
        "ranges": [[{"subnet": "$NODE_POD_CIDR", "rangeStart": "10.0.0.10", "gateway": "$NODE_GATEWAY"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "loopback"}
  ]
}
EOF

  # containerd. restrict_oom_score_adj: root here may not lower
  # oom_score_adj, which runc would otherwise do for every sandbox.
  cat >"$n/containerd/config.toml" <<EOF
version = 2
root = "$n/containerd/root"
state = "$n/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$(node_sock "$dir")"
[ttrpc]
  address = "$n/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$(node_pause_ref)"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_tls_streaming = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$n/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$n/containerd/runc"
        SystemdCgroup = false
EOF
  pause_tar=$(node_pause_tar)
  current=containerd
  save_args containerd "$dir" nsenter --net="$n/netns" containerd --config "$n/containerd/config.toml"
  start_component containerd "$dir"
  started="containerd $started"
  local deadline=$(( $(now_ms) + 20000 ))
  until node_ctr "$dir" version >/dev/null 2>&1; do
    component_running containerd "$dir" || die "containerd exited"
    [ "$(now_ms)" -lt "$deadline" ] || die "containerd not answering after 20s"
    sleep 0.1
  done
  node_ctr "$dir" images import "$pause_tar" >/dev/null || die "importing the pause image failed"
  log "containerd up (pid $(recorded_pid containerd "$dir")), pause image $(node_pause_ref) imported ($(elapsed))"

  # the node's cgroup root in every hierarchy (cpuset needs its cpus and
  # mems copied from the parent before anything can join it)
  cg=$(node_cgroup_root "$dir")
  for h in $(node_cgroup_mounts); do
    mkdir -p "$h/$cg"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" >"$h/$cg/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h/$cg/cpuset.mems"
    fi
  done

  # the kubelet. cgroup v1 is refused unless failCgroupV1 is false; systemd
  # is not PID 1, so cgroupfs. Its server is on the node's own 127.0.0.1 with
  # anonymous access (test only: the API server has no kubelet client
  # certificate and cannot reach it anyway). imageGCHighThresholdPercent 100:
  # imported images cannot be pulled again, so never collect them.
  cat >"$n/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$cg
containerRuntimeEndpoint: unix://$(node_sock "$dir")
address: 127.0.0.1
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podLogsDir: $n/kubelet/pod-logs
volumePluginDir: $n/kubelet/volume-plugins
failSwapOn: false
rotateCertificates: false
serializeImagePulls: false
nodeStatusUpdateFrequency: 2s
syncFrequency: 10s
EOF
  current=kubelet
  save_args kubelet "$dir" nsenter --net="$n/netns" "$bin/kubelet" \
    --config="$n/kubelet/config.yaml" \
    --kubeconfig="$n/kubelet.kubeconfig" \
    --root-dir="$n/kubelet/root" \
    --hostname-override="$NODE_NAME" \
    --node-ip="$NODE_GATEWAY" \
    --v=1
  start_component kubelet "$dir"
  started="kubelet $started"
  log "kubelet starting (pid $(recorded_pid kubelet "$dir"))"
  node_wait_ready "$dir" 60 || die "node $NODE_NAME did not become Ready"
  log "node $NODE_NAME Ready ($(elapsed))"
}

# Stops the node of state dir $1 and removes what it made outside its
# files: every container (killed), the shims, its cgroups and every mount
# under the state dir (pod volumes, rootfs, network namespaces). Safe to
# run when no node was started.
node_stop() {
  local dir=$1 n sock cg p ids cids="" rc=0
  n=$(node_dir "$dir")
  [ -d "$n" ] || return 0
  sock=$(node_sock "$dir")
  stop_component kubelet "$dir" || rc=1
  if component_running containerd "$dir"; then
    # libcni caches each pod network's result in /var/lib/cni/results
    # (containerd 1.6 cannot move it) until the sandbox is torn down, which
    # killing it skips: remember the node's container ids to drop theirs
    cids=$(node_ctr "$dir" containers list -q 2>/dev/null || true)
    # SIGKILL every task, then delete it (its shim exits with it)
    ids=$(node_ctr "$dir" tasks list -q 2>/dev/null || true)
    for id in $ids; do node_ctr "$dir" tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    for id in $ids; do node_ctr "$dir" tasks delete -f "$id" >/dev/null 2>&1 || true; done
  fi
  stop_component containerd "$dir" || rc=1
  for id in ${cids:-}; do rm -f /var/lib/cni/results/*-"$id"-*; done
  # shims left behind (containerd gone before their tasks): only those
  # serving this node's socket
  for p in /proc/[0-9]*; do
    [ "$(basename -- "$( { tr '\0' '\n' <"$p/cmdline"; } 2>/dev/null | head -n1)")" = containerd-shim-runc-v2 ] || continue
    { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF -- "-address $sock" || continue
    kill -KILL "${p#/proc/}" 2>/dev/null || true
  done
  # any process still in the node's cgroups, then the cgroups themselves
  cg=$(node_cgroup_root "$dir")
  for h in $(node_cgroup_mounts); do
    [ -d "$h/$cg" ] || continue
    find "$h/$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
  done
  for h in $(node_cgroup_mounts); do
    [ -d "$h/$cg" ] || continue
    for _ in $(seq 1 50); do
      find "$h/$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ -d "$h/$cg" ] || break
      sleep 0.1
    done
    [ -d "$h/$cg" ] && { log "could not remove cgroup $h/$cg"; rc=1; }
  done
  # the relays fork a child per connection: stop each one's process group
  # (start_component made it a session leader, so its pid is the group's)
  for c in relay-node relay-host; do
    component_running "$c" "$dir" && kill -KILL -- "-$(recorded_pid "$c" "$dir")" 2>/dev/null || true
    stop_component "$c" "$dir" || rc=1
  done
  # mounts under the state dir, deepest first (the netns file last)
  awk -v d="$dir/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done
  return $rc
}
