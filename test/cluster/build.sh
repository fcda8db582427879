#!/usr/bin/env bash
# Builds the control-plane binaries Steadfast's tests run against (etcd,
# kube-apiserver, kube-controller-manager) from the Go modules pinned in
# test/cluster/build/go.mod, and caches them outside the checkout so only the
# first build on a machine pays. Prints the cache directory on stdout.
#
# With --kueue it also builds what `KUEUE=true up.sh` runs: kube-scheduler
# (same pinned Kubernetes, so it mostly reuses compiled packages), Kueue
# (test/cluster/kueue/go.mod) and kwok (test/cluster/kwok/go.mod). Those two
# have build modules of their own because their k8s.io/* versions differ
# from the control plane's, and cache directories of their own.
#
#   test/cluster/build.sh              build the control plane if missing, print its directory
#   test/cluster/build.sh --kueue      also kube-scheduler, Kueue and kwok
#   test/cluster/build.sh --print [WHAT]
#       print a directory only; WHAT: cluster (default), kueue, kwok, or
#       kueue-module / kwok-module (the module's source in the Go module
#       cache, downloaded if absent: Kueue's CRDs and webhook configurations,
#       kwok's node stages are read from there)
#
# With --upstream it builds only the upstream AppWrapper controller (the Go
# project-codeflare/appwrapper, its cmd/main.go) at each version that has a
# build module test/cluster/upstream-<version>/go.mod (v1.2.1, v1.2.2), into
# ~/.cache/steadfast/appwrapper-<version>/manager, for the upgrade and
# rollback test (make upgrade). `--print upstream-<version>` prints that
# directory, `--print upstream-<version>-module` the module's source.
#
# ---- kubelet (KUBELET=true up.sh) ----
# With KUBELET=true in the environment it also builds the kubelet from the
# same pinned k8s.io/kubernetes (it shares most packages with the others, so
# it is quick once they are built), for the one real node of
# `KUBELET=true up.sh`.
# ---- end kubelet ----
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# modver SUBDIR MODULE: the version go.mod in SUBDIR requires.
modver() {
  awk -v m="$2" '$1==m {print $2; exit} $1=="require" && $2==m {print $3; exit}' "$here/$1/go.mod"
}
K8S_VERSION=$(modver build k8s.io/kubernetes)
ETCD_VERSION=$(modver build go.etcd.io/etcd/server/v3)
KUEUE_VERSION=$(modver kueue sigs.k8s.io/kueue)
KWOK_VERSION=$(modver kwok sigs.k8s.io/kwok)
# The upstream controller's versions: one build module each.
UPSTREAM_VERSIONS=$(cd "$here" && for d in upstream-v*/; do [ -f "$d/go.mod" ] && basename "$d" | sed 's/^upstream-//'; done | sort -V | tr '\n' ' ')
for v in K8S_VERSION ETCD_VERSION KUEUE_VERSION KWOK_VERSION; do
  [ -n "${!v}" ] || { echo "build.sh: no $v in test/cluster/*/go.mod" >&2; exit 1; }
done
cache=${STEADFAST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/steadfast}
dir="$cache/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"
kueue_dir="$cache/kueue-$KUEUE_VERSION"
kwok_dir="$cache/kwok-$KWOK_VERSION"

# module_dir SUBDIR MODULE: the module's source directory in the module cache.
module_dir() {
  local d
  d=$(cd "$here/$1" && GOFLAGS=-mod=mod go mod download -json "$2" | awk -F'"' '$2=="Dir"{print $4; exit}')
  [ -n "$d" ] && [ -d "$d" ] || { echo "build.sh: could not find module $2 (go mod download in $here/$1)" >&2; return 1; }
  echo "$d"
}

if [ "${1:-}" = "--print" ]; then
  case ${2:-cluster} in
    cluster) echo "$dir" ;;
    kueue) echo "$kueue_dir" ;;
    kwok) echo "$kwok_dir" ;;
    kueue-module) module_dir kueue sigs.k8s.io/kueue ;;
    kwok-module) module_dir kwok sigs.k8s.io/kwok ;;
    upstream-versions) echo "$UPSTREAM_VERSIONS" ;;
    upstream-v*-module)
      v=${2#upstream-}; v=${v%-module}
      [ -f "$here/upstream-$v/go.mod" ] || { echo "build.sh: no upstream build module for $v (have: $UPSTREAM_VERSIONS)" >&2; exit 64; }
      module_dir "upstream-$v" github.com/project-codeflare/appwrapper ;;
    upstream-v*)
      v=${2#upstream-}
      [ -f "$here/upstream-$v/go.mod" ] || { echo "build.sh: no upstream build module for $v (have: $UPSTREAM_VERSIONS)" >&2; exit 64; }
      echo "$cache/appwrapper-$v" ;;
    *) echo "build.sh: --print takes cluster, kueue, kwok, kueue-module, kwok-module, upstream-versions, upstream-VERSION or upstream-VERSION-module" >&2; exit 64 ;;
  esac
  exit 0
fi
with_kueue=false
with_upstream=false
case ${1:-} in
  "") ;;
  --kueue) with_kueue=true ;;
  --upstream) with_upstream=true ;;
  *) echo "usage: build.sh [--kueue | --upstream | --print [WHAT]]" >&2; exit 64 ;;
esac

# Every binary as TARGET-PATH:BUILD-MODULE:PACKAGE.
targets=""
if [ "$with_upstream" = true ]; then
  # Only the upstream controllers: the control plane is up.sh's business.
  for v in $UPSTREAM_VERSIONS; do
    targets="$targets $cache/appwrapper-$v/manager:upstream-$v:github.com/project-codeflare/appwrapper/cmd"
  done
fi
[ "$with_upstream" = true ] || for b in etcd kube-apiserver kube-controller-manager; do
  case $b in
    etcd) targets="$targets $dir/etcd:build:go.etcd.io/etcd/server/v3" ;;
    *) targets="$targets $dir/$b:build:k8s.io/kubernetes/cmd/$b" ;;
  esac
done
if [ "$with_kueue" = true ]; then
  targets="$targets $dir/kube-scheduler:build:k8s.io/kubernetes/cmd/kube-scheduler"
  targets="$targets $kueue_dir/kueue:kueue:sigs.k8s.io/kueue/cmd/kueue"
  targets="$targets $kwok_dir/kwok:kwok:sigs.k8s.io/kwok/cmd/kwok"
fi
# ---- kubelet (KUBELET=true up.sh) ----
[ "${KUBELET:-}" = true ] && targets="$targets $dir/kubelet:build:k8s.io/kubernetes/cmd/kubelet"
# ---- end kubelet ----
missing=""
for t in $targets; do [ -x "${t%%:*}" ] || missing="$missing $t"; done
# What is printed at the end: the control plane's directory, or with
# --upstream each upstream controller's.
printed=$dir
[ "$with_upstream" = true ] && printed=$(for v in $UPSTREAM_VERSIONS; do echo "$cache/appwrapper-$v"; done)
if [ -z "$missing" ]; then echo "$printed"; exit 0; fi

command -v go >/dev/null || { echo "build.sh: go not found (run make deps)" >&2; exit 1; }
mkdir -p "$dir"
# One lock for every build (the control plane's, as before): they share the
# Go build cache and two cores.
exec 9>"$dir/.lock"
flock 9
export CGO_ENABLED=0 GOFLAGS=-mod=mod
start=$(date +%s)
say() { echo "[cluster-build $(( $(date +%s) - start ))s] $*" >&2; }
if [ "$with_upstream" = true ]; then
  say "building the upstream controller$(for t in $missing; do printf ' %s' "$(basename "$(dirname "${t%%:*}")")"; done) into $cache"
else
  say "building$(for t in $missing; do printf ' %s' "$(basename "${t%%:*}")"; done) into $cache; a cold build of all of them takes 35-50 min on 2 cores, Kueue alone 5-12"
fi
downloaded=""
for t in $missing; do
  out=${t%%:*}
  rest=${t#*:}
  mod=${rest%%:*}
  pkg=${rest#*:}
  b=$(basename "$out")
  [ "$b" = manager ] && b="appwrapper-${mod#upstream-}"
  [ -x "$out" ] && continue
  case " $downloaded " in
    *" $mod "*) ;;
    *) say "downloading modules of test/cluster/$mod"
       (cd "$here/$mod" && go mod download) >&2
       downloaded="$downloaded $mod" ;;
  esac
  case $b in
    etcd) ver="" ;;
    appwrapper-*)
      # Upstream's Makefile sets these; without them it logs "UNKNOWN".
      ver="-X main.BuildVersion=${mod#upstream-} -X main.BuildDate=module" ;;
    kueue)
      # Without these Kueue logs gitVersion v0.0.0-main.
      v=sigs.k8s.io/kueue/pkg/version
      ver="-X $v.GitVersion=$KUEUE_VERSION -X $v.GitCommit=$KUEUE_VERSION" ;;
    kwok)
      ver="-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" ;;
    *)
      # Without these the server reports v0.0.0 on /version.
      v=k8s.io/component-base/version
      ver="-X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X $v.gitTreeState=clean" ;;
  esac
  mkdir -p "$(dirname "$out")"
  say "compiling $b ($pkg, module test/cluster/$mod)"
  # -v lists each package as it is compiled: that is the progress shown.
  (cd "$here/$mod" && go build -trimpath -ldflags="-s -w $ver" -o "$out.tmp" -v "$pkg") 2>&1 \
    | awk -v b="$b" '{n++; if (n % 100 == 0) printf "[cluster-build] %s: %d packages compiled\n", b, n > "/dev/stderr"}'
  [ "${PIPESTATUS[0]}" = 0 ] || { say "FAILED building $b"; exit 1; }
  mv "$out.tmp" "$out"
  say "built $b"
done
say "done"
echo "$printed"
