#!/usr/bin/env bash
# Builds the control-plane binaries Steadfast's tests run against (etcd,
# kube-apiserver, kube-controller-manager) from the Go modules pinned in
# test/cluster/build/go.mod, and caches them outside the checkout so only the
# first build on a machine pays. Prints the cache directory on stdout.
#
#   test/cluster/build.sh            build if missing, print the directory
#   test/cluster/build.sh --print    print the directory only
#
# ---- kubelet (KUBELET=true up.sh) ----
# With KUBELET=true in the environment it also builds the kubelet from the
# same pinned k8s.io/kubernetes (it shares most packages with the others, so
# it is quick once they are built), for the one real node of
# `KUBELET=true up.sh`.
# ---- end kubelet ----
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$here/build/go.mod")
ETCD_VERSION=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2; exit}' "$here/build/go.mod")
cache=${STEADFAST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/steadfast}
dir="$cache/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"

if [ "${1:-}" = "--print" ]; then echo "$dir"; exit 0; fi

bins="etcd kube-apiserver kube-controller-manager"
# ---- kubelet (KUBELET=true up.sh) ----
[ "${KUBELET:-}" = true ] && bins="$bins kubelet"
# ---- end kubelet ----
missing=""
for b in $bins; do [ -x "$dir/$b" ] || missing="$missing $b"; done
if [ -z "$missing" ]; then echo "$dir"; exit 0; fi

command -v go >/dev/null || { echo "build.sh: go not found (run make deps)" >&2; exit 1; }
mkdir -p "$dir"
lock="$dir/.lock"
exec 9>"$lock"
flock 9
cd "$here/build"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
start=$(date +%s)
say() { echo "[cluster-build $(( $(date +%s) - start ))s] $*" >&2; }
say "building$missing (kubernetes $K8S_VERSION, etcd $ETCD_VERSION) into $dir; a cold build takes 10-25 min on 2 cores"
say "downloading modules"
go mod download >&2
for b in $missing; do
  [ -x "$dir/$b" ] && continue
  case $b in
    etcd) pkg=go.etcd.io/etcd/server/v3; ver="" ;;
    *) pkg=k8s.io/kubernetes/cmd/$b
       # Without these the server reports v0.0.0 on /version.
       v=k8s.io/component-base/version
       ver="-X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X $v.gitTreeState=clean" ;;
  esac
  say "compiling $b ($pkg)"
  # -v lists each package as it is compiled: that is the progress shown.
  go build -trimpath -ldflags="-s -w $ver" -o "$dir/$b.tmp" -v "$pkg" 2>&1 \
    | awk -v b="$b" '{n++; if (n % 100 == 0) printf "[cluster-build] %s: %d packages compiled\n", b, n > "/dev/stderr"}'
  [ "${PIPESTATUS[0]}" = 0 ] || { say "FAILED building $b"; exit 1; }
  mv "$dir/$b.tmp" "$dir/$b"
  say "built $b"
done
say "done"
echo "$dir"
