#!/usr/bin/env bash
# Puts images into the containerd of the test node that
# `KUBELET=true test/cluster/up.sh STATE_DIR` runs. No image registry is
# reachable, so images go from podman's store to the node by hand
# (podman save, ctr import); pods using them need imagePullPolicy Never.
#
#   test/cluster/node-image.sh STATE_DIR IMAGE...
#       import podman's images (e.g. localhost/steadfast:0.1.0, from make image)
#   test/cluster/node-image.sh STATE_DIR --busybox
#       build an image FROM scratch holding only Debian's static busybox
#       (/bin/busybox, its entrypoint), import it and print its reference
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/node.sh"

[ $# -ge 2 ] || { echo "usage: node-image.sh STATE_DIR IMAGE... | STATE_DIR --busybox" >&2; exit 64; }
dir=$(cluster_state_dir "$1")
shift
[ -S "$(node_sock "$dir")" ] || die "no node in $dir (start it with KUBELET=true up.sh $dir)"

if [ "$1" = --busybox ]; then
  bb=/bin/busybox
  [ -x "$bb" ] && dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q "ok installed" \
    || die "$bb is not Debian's static busybox (make deps installs busybox-static)"
  ref=localhost/steadfast-busybox:$(sha256sum "$bb" | cut -c1-12)
  if ! podman image exists "$ref"; then
    ctx=$(mktemp -d)
    trap 'rm -rf "$ctx"' EXIT
    cp "$bb" "$ctx/busybox"
    printf 'FROM scratch\nCOPY busybox /bin/busybox\nENTRYPOINT ["/bin/busybox"]\n' >"$ctx/Containerfile"
    podman build --quiet --pull=never --isolation=chroot -t "$ref" -f "$ctx/Containerfile" "$ctx" >/dev/null \
      || die "podman build of $ref failed"
  fi
  node_import_image "$dir" "$ref" || exit 1
  echo "$ref"
  exit 0
fi
for ref in "$@"; do
  node_import_image "$dir" "$ref" || exit 1
done
