#!/usr/bin/env bash
# Prints the handover times the upgrade suite recorded (test_upgrade.c:
# "direction version variant ms" per line): every run, then the p50 (the
# lower median) and max of each direction and of all runs.
#   tools/upgrade-handover.sh FILE
set -euo pipefail
f=${1:?usage: upgrade-handover.sh FILE}
[ -s "$f" ] || { echo "upgrade-handover: no handover recorded in $f" >&2; exit 0; }
echo "handover (SIGTERM of the old controller to the new one's first reconcile), from $f:"
sort -k1,1 -k2,2 -k3,3 "$f" | awk -F'\t' '{printf "  %-8s %-7s %-15s %6d ms\n", $1, $2, $3, $4}'
for d in upgrade rollback all; do
  awk -F'\t' -v d="$d" 'd == "all" || $1 == d {print $4}' "$f" | sort -n | awk -v d="$d" '
    { v[n++] = $1 }
    END { if (n) printf "  %-8s n=%d p50 %d ms, max %d ms\n", d, n, v[int((n - 1) / 2)], v[n - 1] }'
done
