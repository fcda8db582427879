#!/usr/bin/env bash
# make bench: runs the benchmarks against a fresh local control plane and
# writes docs/benchmarks.md. Every comparison is measured in the same run,
# on the same API server, one implementation after the other, alternating.
# BENCH_PARTS=informer|election|appwrapper|watchlist|kueue|all (default all)
# runs one part; the section of a part not run is kept from the existing
# docs/benchmarks.md. kueue is not in all: it needs a KUEUE=true control
# plane (Kueue, kube-scheduler, kwok nodes), which it starts itself unless
# STEADFAST_CLUSTER_ENV names one.
# BENCH_KUEUE_SIZE (default 1000): AppWrappers of the kueue part, run once
# with the driver playing Kueue, then through Kueue (tools/bench_kueue.py);
# KWOK_NODES defaults to enough nodes of 110 pods for them.
# BENCH_WATCHLIST_OBJECTS (default 5000), BENCH_WATCHLIST_BYTES (default
# 4096: filler per object) and BENCH_WATCHLIST_ROUNDS (default 5): the
# informer-start part (quorum LIST, watch-cache LIST and WatchList, peak RSS
# and kube-apiserver/etcd CPU per sync).
# BENCH_APPWRAPPER_SIZES (default 1000,5000; 20000 is opt-in): AppWrappers
# per size of the appwrapper part, each run with a leader and a follower.
# BENCH_APPWRAPPER_ADMISSION (default true): install manifests/admission,
# so AppWrappers are created with the finalizer and spec.suspend=true as in
# production; false: the controller's first reconcile sets them.
# BENCH_APPWRAPPER_SYNCS (default: not passed): the controller's
# --concurrent-appwrapper-syncs.
# BENCH_APPWRAPPER_CEILING_LEVELS (default 16,64,256,500; "" skips it),
# BENCH_APPWRAPPER_CEILING_OBJECTS (default 500) and
# BENCH_APPWRAPPER_CEILING_WATCH (default 3,2,2: watches of AppWrappers,
# Jobs and pods the loader keeps open, as the runs' two replicas and
# driver do; "" none): the raw ceiling part, no controller running
# (build/bench/awload), after each size (BENCH_APPWRAPPER_CEILING_AFTER=each,
# the default: each size against a ceiling measured right after it) or once
# after the largest (last).
# BENCH_APPWRAPPER_QPS (default 50): the controller's client-side rate limits
# for the appwrapper part, comma-separated, each Q (burst 2*Q) or Q/B, e.g.
# 50,200,500/1000; every size runs once per limit, a size's runs one after
# the other. --kube-api-qps/--kube-api-burst are passed only for a limit
# other than the binary's default 50/100.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-build}
PARTS=${BENCH_PARTS:-all}
case $PARTS in
informer | election | appwrapper | watchlist | kueue | all) ;;
*) echo "bench: BENCH_PARTS must be informer, election, appwrapper, watchlist, kueue or all" >&2; exit 2 ;;
esac
KUEUE_SIZE=${BENCH_KUEUE_SIZE:-1000}
if [ "$PARTS" = kueue ]; then
	export KUEUE=true KWOK_NODES=${KWOK_NODES:-$(( KUEUE_SIZE / 100 + 2 ))}
fi
# etcd's default quota rather than the tests' 512 MiB: the 20,000 AppWrapper
# run writes more history than that between kube-apiserver's compactions
# (every 5 min) on a fast machine ("mvcc: database space exceeded")
export ETCD_QUOTA_MIB=${ETCD_QUOTA_MIB:-2048}
# kube-controller-manager sized for 20,000 Jobs rather than the tests'
# defaults (5 Job syncs, 20 garbage-collector syncs, 100 qps): with those,
# at 20,000, Jobs were still without their pod past the 1 min admission
# grace (the controller listed pods live 3,491 times to confirm) and the
# delete phase waits on its removal of the pods
export KCM_QPS=${KCM_QPS:-400} KCM_JOB_SYNCS=${KCM_JOB_SYNCS:-32} KCM_GC_SYNCS=${KCM_GC_SYNCS:-32}
if [ -z "${STEADFAST_CLUSTER_ENV:-}" ]; then
	exec "$here/tools/with-cluster.sh" "$0" "$@"
fi
# shellcheck disable=SC1090
set -a; . "$STEADFAST_CLUSTER_ENV"; set +a
if [ "$PARTS" = kueue ] && [ "${STEADFAST_KUEUE:-}" != true ]; then
	echo "bench: BENCH_PARTS=kueue needs a KUEUE=true control plane; $STEADFAST_CLUSTER_ENV is not one" >&2
	exit 2
fi
OBJECTS=${BENCH_OBJECTS:-10000}
ROUNDS=${BENCH_ROUNDS:-2}
TRIALS=${BENCH_TRIALS:-20}
out=$(mktemp -d /tmp/steadfast-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT

bench_informer() {
echo "bench: building the client-go informer program"
(cd "$here/bench/informer-go" && CGO_ENABLED=0 go build -trimpath -o "$here/$O/bench/informer-go" .)
ns=bench
echo "bench: creating $OBJECTS objects of ~1 KiB"
"$here/$O/bench/loader" setup $ns "$OBJECTS"

run_one() { # impl round
	local impl=$1 round=$2 log="$out/$1-$2.out"
	local cmd
	case $impl in
	steadfast) cmd=("$here/$O/bench/informer-bench" --strip-managed-fields true) ;;
	client-go) cmd=("$here/$O/bench/informer-go") ;;
	client-go+strip) cmd=("$here/$O/bench/informer-go" --strip-managed-fields true) ;;
	esac
	"${cmd[@]}" --kubeconfig "$KUBECONFIG" --group bench.steadfast.dev --version v1 \
		--resource widgets --namespace $ns --expect "$OBJECTS" --updates "$OBJECTS" >"$log" 2>"$out/$impl-$round.err" &
	local pid=$!
	local t=0
	until grep -q '^SYNCED' "$log" 2>/dev/null; do
		kill -0 $pid 2>/dev/null || { cat "$out/$impl-$round.err" >&2; echo "bench: $impl exited before syncing" >&2; return 1; }
		t=$((t + 1)); [ $t -lt 3000 ] || { kill $pid; echo "bench: $impl did not sync" >&2; return 1; }
		sleep 0.1
	done
	"$here/$O/bench/loader" update $ns "$OBJECTS" "$impl-$round"
	wait $pid || { cat "$out/$impl-$round.err" >&2; return 1; }
	tail -1 "$log" | tee -a "$out/results.jsonl"
}

for r in $(seq 1 "$ROUNDS"); do
	run_one steadfast "$r"
	run_one client-go "$r"
	run_one client-go+strip "$r"
done

python3 - "$out/results.jsonl" "$out/informer.md" "$OBJECTS" "$ROUNDS" <<'PY'
import json, sys, statistics, datetime, os, subprocess
res = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
objects, rounds = int(sys.argv[3]), sys.argv[4]
S, G, GS = "steadfast+strip", "client-go", "client-go+strip"
def agg(impl, key):
    return statistics.median([r[key] for r in res if r["impl"] == impl])
def fmt(v, unit):
    return f"{v:.2f} {unit}" if unit else f"{v:.0f}"
rows = []
for key, label, unit in [
    ("sync_s", "time to synced (initial paged LIST)", "s"),
    ("burst_s", "time to observe the update burst", "s"),
    ("peak_rss_kib_synced", "peak RSS after sync", "MiB"),
    ("peak_rss_kib", "peak RSS after the burst", "MiB"),
]:
    v = [agg(i, key) for i in (S, G, GS)]
    if unit == "MiB":
        v = [x / 1024 for x in v]
    rows.append((label, v, unit))
rate = [objects / agg(i, "burst_s") if agg(i, "burst_s") else 0 for i in (S, G, GS)]
rows.append(("update events/s observed", rate, ""))
st = [r for r in res if r["impl"] == S][-1]
cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
doc = f"""# Benchmarks

Written by `make bench` (tools/bench.sh); do not edit by hand. All sides of
each comparison ran in the same run against the same local API server
(kube-apiserver v1.37.2, etcd v3.7.3), one after the other, {rounds} rounds
each; figures are medians. Machine: {os.cpu_count()} cores, {cpu}.
Date: {datetime.date.today()}.

## Informer: initial sync of {objects} objects, then {objects} updates

A custom resource with ~1.3 KiB objects (as served, managedFields
included) in one namespace. Each program starts an informer, reports the
time until its store is synced, then counts update events while the loader
merge-patches every object once.

- Steadfast: `build/bench/informer-bench` (sf_informer; objects kept as
  minified JSON; `metadata.managedFields` dropped before caching, as the
  controller does: nothing in it reads them).
- client-go: `bench/informer-go`, a dynamic shared informer (v0.37.2), the
  way a Go controller watches a CRD, as is.
- client-go+strip: the same with a transform dropping managedFields (what
  controller-runtime's TransformStripManagedFields does), for a like-for-like
  comparison of what is cached.

Same client-side QPS/burst (20/30) everywhere.

| measure | Steadfast | client-go | client-go+strip | Steadfast / client-go | Steadfast / client-go+strip |
|---|---|---|---|---|---|
"""
for label, v, unit in rows:
    r1 = v[0] / v[1] if v[1] else float("nan")
    r2 = v[0] / v[2] if v[2] else float("nan")
    doc += f"| {label} | {fmt(v[0], unit)} | {fmt(v[1], unit)} | {fmt(v[2], unit)} | {r1:.2f} | {r2:.2f} |\n"
doc += f"""
Steadfast's store held {st['store_object_bytes']/1048576:.1f} MiB of object JSON plus
{st['store_overhead_bytes']/1048576:.1f} MiB of keys, maps and indexes for {st['objects']} objects.
The burst rate is bounded by the loader and the API server (every program
sees the same stream), so it shows that none falls behind; it is not a race.

Targets (foundation issue): peak RSS at most 1/4 of client-go's; sync time no
worse than client-go's.

Raw results (one JSON line per run):

```
"""
doc += "".join(json.dumps(r) + "\n" for r in res)
doc += "```\n"
open(sys.argv[2], "w").write(doc)
print(doc)
PY
}

bench_election() {
	echo "bench: leader-election failover, $TRIALS trials per implementation and scenario"
	python3 "$here/tools/bench_election.py" run --kubeconfig "$KUBECONFIG" \
		--candidate "$here/$O/test/election-candidate" --clientgo "$here/$O/test/election-clientgo" \
		--trials "$TRIALS" --logdir "$out" --out "$out/election.jsonl"
	python3 "$here/tools/bench_election.py" report "$out/election.jsonl" "$out/election.md"
}

# The results (one JSON line per size and limit) are kept in
# $O/bench/appwrapper.jsonl (a run takes ~25 min at one limit):
# `tools/bench_appwrapper.py report` redoes the section.
bench_appwrapper() {
	local sizes=${BENCH_APPWRAPPER_SIZES:-1000,5000}
	local qps=${BENCH_APPWRAPPER_QPS:-50}
	local res="$here/$O/bench/appwrapper.jsonl"
	echo "bench: AppWrapper controller, $sizes AppWrappers at client qps $qps, admission to Running"
	mkdir -p "$here/$O/bench"
	: >"$res"
	python3 "$here/tools/bench_appwrapper.py" run --kubeconfig "$KUBECONFIG" \
		--audit-log "$STEADFAST_AUDIT_LOG" --steadfast "$here/$O/steadfast" \
		--sizes "$sizes" --qps "$qps" --logdir "$out" --out "$res" \
		--admission "${BENCH_APPWRAPPER_ADMISSION:-true}" --syncs "${BENCH_APPWRAPPER_SYNCS:-0}" \
		--awload "$here/$O/bench/awload" \
		--ceiling-levels "${BENCH_APPWRAPPER_CEILING_LEVELS-16,64,256,500}" \
		--ceiling-objects "${BENCH_APPWRAPPER_CEILING_OBJECTS:-500}" \
		--ceiling-watch "${BENCH_APPWRAPPER_CEILING_WATCH-3,2,2}" \
		--ceiling-after "${BENCH_APPWRAPPER_CEILING_AFTER:-each}"
	python3 "$here/tools/bench_appwrapper.py" report "$res" "$out/appwrapper.md"
}

# The kueue part: the same size played and through Kueue, one after the
# other; results kept in $O/bench/kueue.jsonl (`tools/bench_kueue.py
# report` redoes the section).
bench_kueue() {
	local res="$here/$O/bench/kueue.jsonl"
	echo "bench: $KUEUE_SIZE AppWrappers admitted by the driver, then by Kueue $STEADFAST_KUEUE_VERSION, pods on $KWOK_NODES kwok nodes"
	mkdir -p "$here/$O/bench"
	: >"$res"
	python3 "$here/tools/bench_kueue.py" run --kubeconfig "$KUBECONFIG" \
		--audit-log "$STEADFAST_AUDIT_LOG" --steadfast "$here/$O/steadfast" \
		--size "$KUEUE_SIZE" --logdir "$out" --out "$res"
	python3 "$here/tools/bench_kueue.py" report "$res" "$out/kueue.md"
}

# Informer start: one sync of the same objects per mode, alternating,
# BENCH_WATCHLIST_ROUNDS rounds; the API server's and etcd's CPU
# (utime+stime from /proc/<pid>/stat) is read before and after each sync.
bench_watchlist() {
	local objects=${BENCH_WATCHLIST_OBJECTS:-5000} bytes=${BENCH_WATCHLIST_BYTES:-4096}
	local rounds=${BENCH_WATCHLIST_ROUNDS:-5} ns=bench-wl
	local pids="$STEADFAST_CLUSTER_DIR/pids" res="$out/watchlist.jsonl"
	echo "bench: informer start, $objects objects with $bytes bytes of filler, $rounds rounds"
	"$here/$O/bench/loader" setup $ns "$objects" "$bytes"
	cpu() { awk '{print $14 + $15}' "/proc/$(cat "$pids/$1.pid")/stat"; }
	: >"$res"
	for r in $(seq 1 "$rounds"); do
		for mode in quorum list watch-list; do
			local a0 e0 line
			a0=$(cpu kube-apiserver) e0=$(cpu etcd)
			line=$("$here/$O/bench/informer-bench" --kubeconfig "$KUBECONFIG" \
				--group bench.steadfast.dev --version v1 --resource widgets --namespace $ns \
				--strip-managed-fields true --list-mode $mode --expect "$objects" \
				--updates 0 2>"$out/wl-$mode-$r.err" | tail -1) \
				|| { cat "$out/wl-$mode-$r.err" >&2; return 1; }
			echo "$line" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); d.update(round=int(sys.argv[1]), apiserver_cpu_ticks=int(sys.argv[2]), etcd_cpu_ticks=int(sys.argv[3]), clk_tck=int(sys.argv[4])); print(json.dumps(d))' \
				"$r" $(( $(cpu kube-apiserver) - a0 )) $(( $(cpu etcd) - e0 )) "$(getconf CLK_TCK)" \
				| tee -a "$res"
		done
	done
	python3 - "$res" "$out/watchlist.md" "$objects" "$bytes" "$rounds" <<'PY'
import json, sys, statistics, datetime, os, subprocess
res = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
objects, nbytes, rounds = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
modes = ["quorum", "list", "watch-list"]
def med(mode, f):
    return statistics.median([f(r) for r in res if r["list_mode"] == mode])
rows = [
    ("time to synced", "s", lambda r: r["sync_s"]),
    ("peak RSS at synced", "MiB", lambda r: r["peak_rss_kib_synced"] / 1024),
    ("kube-apiserver CPU during the sync", "s", lambda r: r["apiserver_cpu_ticks"] / r["clk_tck"]),
    ("etcd CPU during the sync", "s", lambda r: r["etcd_cpu_ticks"] / r["clk_tck"]),
    ("LIST pages", "", lambda r: r["list_pages"]),
]
cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
st = res[-1]
doc = f"""## Informer start: LIST vs WatchList

Written by `make bench BENCH_PARTS=watchlist` (tools/bench.sh). Date:
{datetime.date.today()}. Machine: {os.cpu_count()} cores, {cpu}; a local API
server (started by the run, or the running one STEADFAST_CLUSTER_ENV
names: kube-apiserver v1.37.2 with its watch cache and WatchList on by
default, etcd v3.7.3).

One informer (`build/bench/informer-bench`, managedFields dropped) syncs
{objects} custom objects of ~{(st['store_object_bytes'] / max(st['objects'], 1)) / 1024:.1f} KiB each
(as cached; {nbytes} bytes of filler) and exits; {rounds} rounds, the three
modes one after the other in each, figures are medians:

- quorum: a paged LIST (limit 500) without resourceVersion, what every
  list was before and what a freshness wait (the leader's barrier) still
  asks for;
- list: LIST with resourceVersion=0 (the watch cache answers, whole), the
  first list of every informer when WatchList is refused;
- watch-list: a WatchList stream (sendInitialEvents, consistent: no
  resourceVersion), the default.

The API server's and etcd's CPU is utime+stime from /proc/<pid>/stat
before and after each sync (the lease renewals of kube-apiserver itself
are in it too). Peak RSS is the informer process's VmHWM at synced.

| measure | quorum | list | watch-list | watch-list / quorum | watch-list / list |
|---|---|---|---|---|---|
"""
for label, unit, f in rows:
    v = [med(m, f) for m in modes]
    r1 = v[2] / v[0] if v[0] else float("nan")
    r2 = v[2] / v[1] if v[1] else float("nan")
    fmt = (lambda x: f"{x:.2f} {unit}") if unit else (lambda x: f"{x:.0f}")
    doc += f"| {label} | {fmt(v[0])} | {fmt(v[1])} | {fmt(v[2])} | {r1:.2f} | {r2:.2f} |\n"
api = [med(m, rows[2][2]) for m in modes]
etc = [med(m, rows[3][2]) for m in modes]
rss = [med(m, rows[1][2]) for m in modes]
doc += f"""
Reading it: the informer's peak RSS is the same in every mode
({min(rss):.1f}-{max(rss):.1f} MiB, nearly all of it the store): LIST pages and
watch streams are both decoded as they arrive, never held whole, so
WatchList's memory gain on the client side, which client-go has, is not
there to take. etcd's CPU ({etc[0]:.2f} s quorum, {etc[1]:.2f} s watch-cache LIST, {etc[2]:.2f} s
WatchList) stays small because kube-apiserver v1.37 answers even a
quorum LIST from its watch cache once the cache has caught up with etcd's
current revision (ConsistentListFromCache), and continue pages from its
snapshots where it holds them. The API server's CPU for a WatchList is
{api[2] / api[1]:.1f}x a watch-cache LIST's and {api[2] / api[0]:.1f}x a quorum LIST's here: each initial
event is encoded and written on its own (and sent uncompressed, see
docs/architecture.md), where a LIST encodes one object per page. What
WatchList saves the API server is memory: it never builds a whole list
response (here {st['store_object_bytes'] / 1048576:.0f} MiB of JSON) at once, which is what makes many
informers starting together dangerous for a large cluster; the API
server's peak memory is not measured here (its VmHWM spans its whole life
and the Go heap it grows is kept for the next run). The syncs vary from
run to run on this shared 2-core machine (see the raw lines).

Raw results (one JSON line per sync):

```
"""
doc += "".join(json.dumps(r) + "\n" for r in res)
doc += "```\n"
open(sys.argv[2], "w").write(doc)
print(doc)
PY
}

case $PARTS in informer | all) bench_informer ;; esac
case $PARTS in election | all) bench_election ;; esac
case $PARTS in appwrapper | all) bench_appwrapper ;; esac
case $PARTS in watchlist | all) bench_watchlist ;; esac
case $PARTS in kueue) bench_kueue ;; esac

# docs/benchmarks.md: the informer part (everything before the first other
# section), then the election section, then the AppWrapper section, then
# the informer-start (LIST vs WatchList) section, then the Kueue section;
# a part not run now is kept as is. The failover section comes from an
# integration test (its command is in it) and is always kept.
python3 - "$here/docs/benchmarks.md" "$out/informer.md" "$out/election.md" "$out/appwrapper.md" "$out/watchlist.md" "$out/kueue.md" <<'PY'
import os, sys
doc, inf, ele, aw, wl, kq = sys.argv[1:7]
markers = ["## Leader election: failover", "## AppWrapper controller: admission to Running",
           "## Informer start: LIST vs WatchList",
           "## AppWrapper controller through Kueue: admission to Running",
           "## Failover: from acquiring the Lease to reconciling"]
old = open(doc).read() if os.path.exists(doc) else ""
# split the old document at each section title that it holds
cuts = sorted((old.find(m), m) for m in markers if m in old)
head = old[:cuts[0][0]] if cuts else old
olds = {}
for i, (pos, m) in enumerate(cuts):
    end = cuts[i + 1][0] if i + 1 < len(cuts) else len(old)
    olds[m] = old[pos:end]
head = open(inf).read() if os.path.exists(inf) else head
text = head.rstrip("\n") + "\n"
for m, new in zip(markers, (ele, aw, wl, kq, "")):
    sec = open(new).read() if os.path.exists(new) else olds.get(m, "")
    if sec:
        text += "\n" + sec.rstrip("\n") + "\n"
open(doc, "w").write(text)
PY
echo "bench: wrote docs/benchmarks.md"
