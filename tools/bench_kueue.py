#!/usr/bin/env python3
"""AppWrapper controller benchmark through the real Kueue (make bench
BENCH_PARTS=kueue; see tools/bench.sh), next to the played-Kueue run of
tools/bench_appwrapper.py on the same control plane in the same run.

  bench_kueue.py run --kubeconfig PATH --audit-log PATH --steadfast BIN
                     [--size 1000] [--concurrency N] [--logdir DIR] --out FILE
  bench_kueue.py report RESULTS.jsonl SECTION.md

run: on a KUEUE=true control plane (test/cluster/up.sh: Kueue,
kube-scheduler, kwok nodes), one after the other, each in a fresh
namespace with one steadfast controller (the binary's defaults, qps 50 /
burst 100):

  1. played: bench_appwrapper.py's run (the driver admits with a merge
     PATCH of spec.suspend=false), the Jobs' pods annotated to run for an
     hour on the kwok nodes, so that both runs have running pods;
  2. kueue: a ResourceFlavor and a ClusterQueue with quota for every
     AppWrapper at once, a LocalQueue in the namespace; N AppWrappers of the
     same Job, labelled with the LocalQueue and created without
     spec.suspend: Kueue's webhook suspends them, Kueue admits them
     (spec.suspend=false, with podSetInfos), the controller creates the
     Jobs, kube-scheduler binds the pods, kwok runs them. Waits until all
     are Running, deletes them all and waits until they are gone.

Admission in the kueue run is the first watch event showing
spec.suspend=false (admit -> Running, watch), and the ResponseComplete
stageTimestamp of Kueue's own write of the AppWrapper (audit log; admit ->
Job created, to the controller's create of the Job). The controller's
requests per lifecycle come from the audit log (user agent steadfast/...),
as in bench_appwrapper.py. One JSON line per run to --out.

report: the docs/benchmarks.md section, one column per run.
"""
import collections
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_appwrapper as ba  # noqa: E402
import benchlib  # noqa: E402

SECTION_TITLE = "## AppWrapper controller through Kueue: admission to Running"
KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"
RUN_FOR = "1h"  # kwok keeps the pods Running that long (test/cluster/kwok-pod-stages.yaml)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

log = benchlib.logger("bench-kueue")
_played_appwrapper = ba.appwrapper


def with_running_pod(aw):
    """The Job's pod annotated for kwok: Running for RUN_FOR once bound."""
    tpl = aw["spec"]["components"][0]["template"]["spec"]["template"]
    tpl.setdefault("metadata", {}).setdefault("annotations", {})[
        "steadfast.test/kwok-run-for"] = RUN_FOR
    return aw


def played_appwrapper(name):
    return with_running_pod(_played_appwrapper(name))


def queued_appwrapper(name, queue):
    """The played run's AppWrapper, in the LocalQueue and left for Kueue's
    webhook to suspend."""
    aw = played_appwrapper(name)
    del aw["spec"]["suspend"]
    aw["metadata"]["labels"] = {QUEUE_LABEL: queue}
    return aw


class UnsuspendWatch(ba.AWWatch):
    """bench_appwrapper's watch, also noting when each AppWrapper was first
    seen with spec.suspend=false after having been seen suspended."""

    def __init__(self, kube, ns):
        super().__init__(kube, ns)
        self.was_suspended = set()
        self.unsuspended = {}  # name -> (wall, mono)

    def _apply(self, typ, obj):
        super()._apply(typ, obj)
        name = obj.get("metadata", {}).get("name")
        if typ == "DELETED" or not name:
            return
        if (obj.get("spec") or {}).get("suspend"):
            self.was_suspended.add(name)
        elif name in self.was_suspended and name not in self.unsuspended:
            self.unsuspended[name] = (time.time(), ba.mono())


def queues(kube, n, runid):
    """A ResourceFlavor and a ClusterQueue with quota for n AppWrappers (10m
    CPU each) and more, cluster-scoped, named after the run; returns the
    ClusterQueue's name once it is Active."""
    rf, cq = f"bench-rf-{runid}", f"bench-cq-{runid}"
    kube.must("POST", f"{KUEUE_API}/resourceflavors",
              {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
               "metadata": {"name": rf}, "spec": {}})
    kube.must("POST", f"{KUEUE_API}/clusterqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": cq},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": rf, "resources": [
                {"name": "cpu", "nominalQuota": f"{max(1, n // 50)}"},
                {"name": "memory", "nominalQuota": "1Ti"}]}]}]}})
    end = ba.mono() + 60
    while ba.mono() < end:
        _, obj = kube.request("GET", f"{KUEUE_API}/clusterqueues/{cq}")
        conds = ((obj or {}).get("status") or {}).get("conditions") or []
        if any(c["type"] == "Active" and c["status"] == "True" for c in conds):
            return rf, cq
        time.sleep(0.2)
    raise RuntimeError(f"ClusterQueue {cq} not Active in 60 s")


def run_kueue(args, kube, n, runid, cq):
    ns = f"bench-kueue-{n}-{runid}"
    res = {"mode": "kueue", "size": n, "qps": ba.CTL_QPS, "burst": ba.CTL_BURST,
           "namespace": ns, "concurrency": args.concurrency}
    log(f"[kueue {n}] namespace {ns}")
    ba.make_namespace(kube, ns)
    kube.must("POST", f"{KUEUE_API}/namespaces/{ns}/localqueues",
              {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": "lq"}, "spec": {"clusterQueue": cq}})
    audit_at = ba.audit_mark(args.audit_log)
    w = UnsuspendWatch(kube, ns)
    w.start()
    if not w.ready.wait(30) or w.err:
        raise RuntimeError(f"watch did not start: {w.err}")
    t_start = ba.mono()
    wall_start = time.time()
    ctl = ba.Controller(args.steadfast, args.kubeconfig, ns, "steadfast-bench",
                        f"bench-{runid}", os.path.join(args.logdir, f"steadfast-kueue-{n}.log"))
    marks = {}
    try:
        if not ctl.reconciling.wait(60):
            raise RuntimeError("the controller did not log \"reconciling\" within 60 s")
        res["start_to_reconciling_s"] = round(ba.mono() - t_start, 3)
        time.sleep(2)  # the idle figures: caches synced, nothing to do
        marks["idle"] = ctl.sample()
        names = [f"aw-{i:05d}" for i in range(n)]
        timeout = 300 + n * 2  # Kueue admits at its own pace: about 1/s here

        wall_create = time.time()
        t0 = ba.mono()
        ba.parallel(lambda nm: kube.must("POST", ba.aw_path(ns), queued_appwrapper(nm, "lq")),
                    names, args.concurrency)
        res["create_requests_s"] = round(ba.mono() - t0, 3)
        log(f"[kueue {n}] {n} AppWrappers created in {res['create_requests_s']:.1f} s")
        w.wait(lambda s: s.counts["Running"] == n, timeout, "all Running",
               bad=("Resetting", "Failed", "Suspending"))
        res["create_to_all_running_s"] = round(ba.mono() - t0, 3)
        marks["running"] = ctl.sample()
        with w.cv:
            lat = [(w.first[nm]["Running"][0] - w.unsuspended[nm][0]) * 1000
                   for nm in names if nm in w.unsuspended]
            first_admit = min(t for t, _ in w.unsuspended.values())
            res["admitted_seen"] = len(w.unsuspended)
            res["admit_to_all_running_s"] = round(
                max(w.first[nm]["Running"][0] for nm in names) - first_admit, 3)
        res["admit_to_running_ms"] = {"p50": round(benchlib.pct(lat, 50), 1),
                                      "p99": round(benchlib.pct(lat, 99), 1),
                                      "max": round(max(lat), 1)}
        log(f"[kueue {n}] all Running {res['create_to_all_running_s']:.1f} s after the first "
            f"create; admit -> Running p50 {res['admit_to_running_ms']['p50'] / 1000:.2f} s")

        wall_delete = time.time()
        t0 = ba.mono()
        ba.parallel(lambda nm: kube.must("DELETE", ba.aw_path(ns, nm), ok=(200, 202)), names,
                    args.concurrency)
        w.wait(lambda s: len(s.gone) == n, timeout * 2, "all gone")
        res["delete_to_all_gone_s"] = round(ba.mono() - t0, 3)
        marks["gone"] = ctl.sample()
        log(f"[kueue {n}] all gone {res['delete_to_all_gone_s']:.1f} s after the first delete")
    finally:
        final = ctl.stop()
        w.stop()
    wall_end = time.time()
    res["controller_exit"] = ctl.p.returncode
    res["final"] = {"hwm_kib": final["hwm_kib"], "rss_kib": final["rss_kib"],
                    "cpu_s": final["cpu_s"]}
    res["cpu_s_by_phase"] = {
        "create+admit": round(marks["running"]["cpu_s"] - marks["idle"]["cpu_s"], 2),
        "delete": round(marks["gone"]["cpu_s"] - marks["running"]["cpu_s"], 2)}

    time.sleep(0.5)  # the audit log's last lines (blocking mode: written as answered)
    ev = ba.read_audit(args.audit_log, audit_at, ns)
    mine = [e for e in ev if e.get("userAgent", "").startswith("steadfast/")
            and ba.parse_ts(e["requestReceivedTimestamp"]) >= wall_start - 1]
    reqs, by_phase, non2xx = collections.Counter(), collections.defaultdict(
        collections.Counter), collections.Counter()
    bounds = [("create+admit", wall_create, wall_delete), ("delete", wall_delete, wall_end + 60)]
    for e in mine:
        key = f"{e['verb']} {ba.res_name(e['objectRef'])}"
        reqs[key] += 1
        t = ba.parse_ts(e["requestReceivedTimestamp"])
        by_phase[next((p for p, a, b in bounds if a <= t < b), "startup")][key] += 1
        code = (e.get("responseStatus") or {}).get("code", 0)
        if e.get("stage") == "ResponseComplete" and not 200 <= code < 300:
            non2xx[f"{key} {code}"] += 1
    res["requests"] = dict(sorted(reqs.items()))
    res["requests_by_phase"] = {p: dict(sorted(c.items())) for p, c in by_phase.items()}
    res["requests_non2xx"] = dict(sorted(non2xx.items()))
    # Kueue's write of each AppWrapper (not its status): the admission
    kueue_writes = collections.Counter()
    admitted = {}
    for e in ev:
        ref = e["objectRef"]
        ua = e.get("userAgent", "")
        if (ref.get("resource") == "appwrappers" and not ref.get("subresource")
                and e["verb"] in ("update", "patch") and e.get("stage") == "ResponseComplete"
                and ua.startswith("kueue")
                and 200 <= (e.get("responseStatus") or {}).get("code", 0) < 300):
            kueue_writes[e["verb"]] += 1
            t = ba.parse_ts(e["stageTimestamp"])
            if ref.get("name") not in admitted or t < admitted[ref["name"]]:
                admitted[ref["name"]] = t
    res["kueue_appwrapper_writes"] = dict(kueue_writes)
    created = {}
    for e in mine:
        ref = e["objectRef"]
        if (e["verb"] == "create" and ref.get("resource") == "jobs"
                and e.get("stage") == "ResponseComplete"
                and (e.get("responseStatus") or {}).get("code") == 201):
            t = ba.parse_ts(e["stageTimestamp"])
            if ref.get("name") not in created or t < created[ref["name"]]:
                created[ref["name"]] = t
    jl = [(created[nm] - admitted[nm]) * 1000 for nm in admitted if nm in created]
    res["admit_to_job_create_ms"] = {"n": len(jl), "p50": round(benchlib.pct(jl, 50), 1),
                                     "p99": round(benchlib.pct(jl, 99), 1),
                                     "max": round(max(jl), 1)} if jl else {"n": 0}
    kube.request("DELETE", f"/api/v1/namespaces/{ns}")
    end = ba.mono() + 120
    while ba.mono() < end and kube.request("GET", f"/api/v1/namespaces/{ns}")[0] != 404:
        time.sleep(0.5)
    return res


def cmd_run(args):
    runid = benchlib.run_id()
    os.makedirs(args.logdir, exist_ok=True)
    kube = ba.Kube(args.kubeconfig)
    ba.ensure_crd(kube)
    ba.appwrapper = played_appwrapper  # the played run's pods run on kwok too
    n = args.size
    nodes = len([x for x in os.environ.get("STEADFAST_KWOK_NODES", "").split(",") if x])
    with open(args.out, "a") as out:
        ts = ba.mono()
        r = ba.run_size(args, kube, n, runid, (ba.CTL_QPS, ba.CTL_BURST), f"played {n}")
        r["mode"], r["kwok_nodes"] = "played", nodes
        r["part_s"] = round(ba.mono() - ts, 1)
        out.write(json.dumps(r) + "\n")
        out.flush()
        log(f"[played {n}] done in {r['part_s']:.0f} s")
        ts = ba.mono()
        rf, cq = queues(kube, n, runid)
        try:
            r = run_kueue(args, kube, n, runid, cq)
        finally:
            kube.request("DELETE", f"{KUEUE_API}/clusterqueues/{cq}")
            kube.request("DELETE", f"{KUEUE_API}/resourceflavors/{rf}")
        r["part_s"], r["kwok_nodes"] = round(ba.mono() - ts, 1), nodes
        out.write(json.dumps(r) + "\n")
        log(f"[kueue {n}] done in {r['part_s']:.0f} s")
    return 0


def cmd_report(args):
    res = benchlib.load_results(args.results)
    runs = {r["mode"]: r for r in res}
    p, k = runs["played"], runs["kueue"]
    n = k["size"]
    per = lambda r: sum(r["requests"].values()) / r["size"]  # noqa: E731
    writes = lambda r: sum(c for key, c in r["requests"].items() if key.split()[0] in (  # noqa: E731
        "create", "patch", "update", "delete")) / r["size"]

    def ms(d):
        return f"{d['p50'] / 1000:.2f} s / {d['p99'] / 1000:.2f} s"

    rows = [
        ("AppWrappers", f"{p['size']}", f"{k['size']}"),
        ("admission", "driver's merge PATCH of spec.suspend=false, all at once",
         "Kueue v0.17.1, as they are created"),
        ("**admit -> Running (watch), p50 / p99**", f"**{ms(p['admit_to_running_ms'])}**",
         f"**{ms(k['admit_to_running_ms'])}**"),
        ("admit -> Job created (audit), p50 / p99", ms(p["admit_to_job_create_ms"]),
         ms(k["admit_to_job_create_ms"]) if k["admit_to_job_create_ms"].get("n") else "-"),
        ("first admit -> all Running", f"{p['admit_to_all_running_s']:.1f} s",
         f"{k['admit_to_all_running_s']:.1f} s"),
        ("delete -> all gone", f"{p['delete_to_all_gone_s']:.1f} s",
         f"{k['delete_to_all_gone_s']:.1f} s"),
        ("**controller API requests per AppWrapper lifecycle**", f"**{per(p):.2f}**",
         f"**{per(k):.2f}**"),
        ("  of which writes", f"{writes(p):.2f}", f"{writes(k):.2f}"),
        ("controller CPU over the run", f"{p['final']['cpu_s']:.2f} s",
         f"{k['final']['cpu_s']:.2f} s"),
        ("controller peak RSS (VmHWM)", f"{p['final']['hwm_kib'] / 1024:.1f} MiB",
         f"{k['final']['hwm_kib'] / 1024:.1f} MiB"),
        ("whole run (namespace to cleanup)", f"{p['part_s']:.0f} s", f"{k['part_s']:.0f} s"),
    ]
    doc = f"""{SECTION_TITLE}

Written by `make bench BENCH_PARTS=kueue BENCH_KUEUE_SIZE={n}`
(tools/bench_kueue.py). Date: {time.strftime('%Y-%m-%d')}. Machine:
{benchlib.machine()}, shared with other work while it ran: the machine is
noisy, so compare the two columns (one run after the other, same control
plane, same minute) rather than these figures with other sections'.
Control plane: `KUEUE=true test/cluster/up.sh` ({benchlib.SERVER_VERSIONS};
kube-scheduler, Kueue v0.17.1, kwok v0.8.0 with {k.get('kwok_nodes', '?')} nodes of
110 pods).

One `build/steadfast` replica at its defaults (qps 50 / burst 100), in a
fresh namespace per run, as in the AppWrapper section above; every
AppWrapper wraps one batch/v1 Job of one pod (10m CPU), whose pod kwok
keeps Running (annotation `steadfast.test/kwok-run-for: {RUN_FOR}`) once
kube-scheduler has bound it.

- played: tools/bench_appwrapper.py's run: created with
  `spec.suspend=false`, suspended by the controller, then admitted by the
  driver, {p['concurrency']} merge PATCHes in flight; admission is the
  PATCH's answer (watch) or its audit record.
- kueue: a ClusterQueue with quota for all of them at once and a
  LocalQueue; created with the queue label and no `spec.suspend`, Kueue's
  webhook suspends them, Kueue admits them as they arrive. Admission is
  the first watch event with `spec.suspend=false` (admit -> Running), or
  the audit record of Kueue's own write of the AppWrapper (admit -> Job
  created; Kueue's writes: {k.get('kueue_appwrapper_writes')}).
- requests: the controller's (user agent `steadfast/`) in the namespace,
  from the audit log, watches and lists counted once, divided by N.

In the played run the admit PATCHes of all N land within
{p['admit_requests_s']:.0f} s and the controller works through a queue of N, so
admit -> Running is mostly the wait in the controller's queue. Under
Kueue the admissions come at Kueue's pace: its
scheduler takes one head Workload per ClusterQueue per scheduling cycle
(Kueue's pkg/cache/queue/manager.go, `heads()`) and its API client runs
at its default qps 20 / burst 30 (apis/config/v1beta2/defaults.go; the
test control plane sets none), so with one ClusterQueue the AppWrappers
are admitted one after the other, spread over {k['admit_to_all_running_s']:.0f} s
from the first admission to the last Running; each finds the controller's
queue short, which is why its admit -> Running is shorter. The latencies
are therefore not comparable one to one; the requests per lifecycle are.

| measure | played Kueue | Kueue v0.17.1 |
|---|---|---|
"""
    for label, a, b in rows:
        doc += f"| {label} | {a} | {b} |\n"
    keys = sorted(set(p["requests"]) | set(k["requests"]),
                  key=lambda s: (s.split()[1], s.split()[0]))
    doc += "\nRequests of the controller per AppWrapper, by verb and resource:\n\n"
    doc += "| request | played Kueue | Kueue v0.17.1 |\n|---|---|---|\n"
    for key in keys:
        doc += (f"| {key} | {p['requests'].get(key, 0) / p['size']:.3f} | "
                f"{k['requests'].get(key, 0) / k['size']:.3f} |\n")
    errs = {m: r["requests_non2xx"] for m, r in runs.items() if r["requests_non2xx"]}
    doc += ("\nAnswers other than 2xx: " + "; ".join(f"{m}: {e}" for m, e in errs.items())
            + ".\n") if errs else "\nEvery request of the controller was answered 2xx.\n"
    doc += benchlib.raw_results(res, "run")
    benchlib.write_section(args.section, doc)
    return 0


def main():
    ap, r, _ = benchlib.arg_parser()
    r.add_argument("--kubeconfig", required=True)
    r.add_argument("--audit-log", required=True)
    r.add_argument("--steadfast", required=True)
    r.add_argument("--size", type=int, default=1000)
    r.add_argument("--concurrency", type=int, default=32)
    r.add_argument("--logdir", default=".")
    r.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.cmd == "report":
        return cmd_report(args)
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
