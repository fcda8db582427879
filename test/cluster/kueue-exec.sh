#!/usr/bin/env bash
# Runs Kueue (the command after CERT_DIR) where it can find its metrics
# serving certificate. Kueue's main reads tls.crt/tls.key from the fixed
# path /etc/kueue/metrics/certs whenever its internal certificate
# management is off, and exits if they are absent, whatever its metrics
# settings. So that nothing is written to the machine's /etc, this script
# re-executes itself in a private mount namespace, puts an overlay over
# /etc there (upper layer on a tmpfs that lives as long as the namespace)
# and bind-mounts CERT_DIR at that path, then execs the command: it keeps
# this process's pid, so up.sh's pid file names Kueue itself.
#
#   kueue-exec.sh CERT_DIR COMMAND [ARG...]      (needs CAP_SYS_ADMIN: root)
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: kueue-exec.sh CERT_DIR COMMAND [ARG...]" >&2; exit 64; }
certs=$(realpath -- "$1")
shift
if [ "${STEADFAST_KUEUE_MOUNT_NS:-}" != "$$" ]; then
  # unshare execs in place (no --fork): the pid stays the same.
  export STEADFAST_KUEUE_MOUNT_NS=$$
  exec unshare --mount --propagation private -- "$0" "$certs" "$@"
fi
unset STEADFAST_KUEUE_MOUNT_NS
[ -f "$certs/tls.crt" ] && [ -f "$certs/tls.key" ] || { echo "kueue-exec.sh: no tls.crt/tls.key in $certs" >&2; exit 1; }
scratch=$(dirname "$certs")/etc-overlay
mkdir -p "$scratch"
mount -t tmpfs -o size=4m,mode=0700 steadfast-kueue-etc "$scratch"
mkdir "$scratch/upper" "$scratch/work"
mount -t overlay -o "lowerdir=/etc,upperdir=$scratch/upper,workdir=$scratch/work" steadfast-kueue-etc /etc
mkdir -p /etc/kueue/metrics/certs
mount --bind "$certs" /etc/kueue/metrics/certs
exec "$@"
