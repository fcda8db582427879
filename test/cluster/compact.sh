#!/usr/bin/env bash
# Compacts the test cluster's etcd to its current revision (physically), so
# that watches and lists from older resourceVersions fail with 410 Gone once
# they reach etcd (start the cluster with WATCH_CACHE=false to make every
# watch reach etcd). Uses etcd's HTTP/JSON gateway. Prints the revision.
#
#   test/cluster/compact.sh [STATE_DIR]  default STATE_DIR: <repo>/.cluster
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

dir=$(cluster_state_dir "${1:-}")
etcd=$(env_value "$dir" STEADFAST_ETCD 2>/dev/null) && [ -n "$etcd" ] \
  || die "no cluster in $dir (run up.sh first)"

# Any range answers with the store's current revision in its header.
resp=$(curl -sS --max-time 10 -X POST -H 'Content-Type: application/json' \
  --data '{"key":"AA==","count_only":true}' "$etcd/v3/kv/range") \
  || die "etcd at $etcd unreachable"
rev=$(printf '%s' "$resp" | sed -n 's/.*"revision":"\{0,1\}\([0-9][0-9]*\).*/\1/p')
[ -n "$rev" ] || die "no revision in etcd's answer: $resp"

resp=$(curl -sS --max-time 30 -X POST -H 'Content-Type: application/json' \
  --data "{\"revision\":\"$rev\",\"physical\":true}" "$etcd/v3/kv/compaction") \
  || die "etcd at $etcd unreachable"
case $resp in
  *'"error"'*|*'"code"'*)
    # Compacting to the revision already compacted to is not a failure.
    case $resp in
      *"required revision has been compacted"*) ;;
      *) die "compaction to revision $rev failed: $resp" ;;
    esac ;;
esac
log "etcd compacted to revision $rev"
echo "$rev"
