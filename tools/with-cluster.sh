#!/usr/bin/env bash
# Runs a command with a real local control plane: the one named by
# $STEADFAST_CLUSTER_ENV if it is set and up, else a fresh one in a temp dir
# that is stopped afterwards whatever happens. A control plane that cannot
# start fails the run: integration tests never skip.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${STEADFAST_CLUSTER_ENV:-}" ] && [ -f "$STEADFAST_CLUSTER_ENV" ]; then
	exec "$@"
fi
dir=$(mktemp -d /tmp/steadfast-cluster.XXXXXX)
cleanup() { "$here/test/cluster/down.sh" "$dir" >/dev/null 2>&1 || true; }
trap cleanup EXIT INT TERM
if ! "$here/test/cluster/up.sh" "$dir"; then
	echo "with-cluster: the control plane did not start; failing (integration tests do not skip)" >&2
	exit 1
fi
export STEADFAST_CLUSTER_ENV="$dir/env"
set +e
"$@"
rc=$?
set -e
exit $rc
