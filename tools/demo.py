#!/usr/bin/env python3
"""The Steadfast demo, after tools/demo.sh has started a KUEUE=true control
plane (test/cluster/up.sh: kube-scheduler, kwok nodes, Kueue).

Nothing here plays Kueue or the kubelet: Kueue admits AppWrappers against a
ClusterQueue's quota, kube-scheduler binds their pods to kwok's fake nodes,
kwok runs them (test/cluster/kwok-pod-stages.yaml). The demo starts three
controller replicas (identities like pods of a Deployment), queues more
AppWrappers than the quota holds so that Kueue admits them in waves, makes
one fail (kwok's failure annotation), submits a high-priority one that
preempts a running one (WorkloadPriorityClass), kills the leader mid-run,
and prints per AppWrapper its phase, its Workload's state and the node each
of its pods ran on. One line per step. Uses only the standard library;
talks to the API server with the admin client certificate from the
cluster's env file.
"""
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(HERE, os.environ.get("O", "build"), "steadfast")
ENV = os.environ
NS = "demo"
SYSTEM = "steadfast-system"  # the controller's namespace: its Lease lives here
LEASE = "f134c674.codeflare.dev"
QUOTA = 3  # cpus in the ClusterQueue; every AppWrapper asks for 1
START = time.monotonic()
ANN = "workload.codeflare.dev.appwrapper/"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
AW = "/apis/workload.codeflare.dev/v1beta2/namespaces/" + NS + "/appwrappers"


def step(msg):
    print(f"==> [{time.monotonic() - START:5.1f}s] {msg}", flush=True)


CTX = ssl.create_default_context(cafile=ENV["STEADFAST_CA"])
CTX.load_cert_chain(ENV["STEADFAST_ADMIN_CERT"], ENV["STEADFAST_ADMIN_KEY"])


def api(method, path, body=None, ctype="application/json"):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(ENV["STEADFAST_APISERVER"] + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, context=CTX, timeout=10) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def create(path, body):
    st, out = api("POST", path, body)
    if st != 201:
        sys.exit(f"demo: create {path} {body['metadata']['name']}: HTTP {st}: "
                 f"{out.get('message', out)}")
    return out


def run(*args, check=True):
    r = subprocess.run([BIN, *args, "--kubeconfig", ENV["KUBECONFIG"]], text=True,
                       capture_output=True)
    out = (r.stdout + r.stderr).rstrip()
    if check and r.returncode != 0:
        sys.exit(f"demo: {' '.join(args)} failed:\n{out}")
    return r.returncode, out


def wait(what, pred, timeout=60, every=0.2):
    """Polls pred until it returns something true, up to timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(every)
    sys.exit(f"demo: timed out after {timeout} s waiting for {what}")


def items(path):
    st, body = api("GET", path)
    return body.get("items", []) if st == 200 else []


def cond(obj, typ):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == typ:
            return c
    return {}


def is_true(obj, typ):
    return cond(obj, typ).get("status") == "True"


class Recorder(threading.Thread):
    """Samples the demo namespace's AppWrappers, Workloads and pods every
    0.2 s and keeps what the final table reports: each AppWrapper's phase,
    its Workload (by owner reference), when that Workload was first seen
    Admitted, whether it was ever Evicted and why, and every node one of its
    pods was bound to."""

    def __init__(self):
        super().__init__(daemon=True)
        self.lock = threading.Lock()
        self.phase, self.wl, self.admitted_at, self.evicted, self.nodes = {}, {}, {}, {}, {}
        self.seen = {}  # name -> every phase it was seen in, in order
        self.pods = {}  # name -> the pods (uids) it ever had
        self.stop = threading.Event()

    def sample(self):
        now = time.monotonic() - START
        aws = items(AW)
        wls = items(f"{KUEUE}/namespaces/{NS}/workloads")
        pods = items(f"/api/v1/namespaces/{NS}/pods")
        with self.lock:
            for a in aws:
                name, ph = a["metadata"]["name"], (a.get("status") or {}).get("phase", "")
                self.phase[name] = ph
                seen = self.seen.setdefault(name, [])
                if ph and (not seen or seen[-1] != ph):
                    seen.append(ph)
            for w in wls:
                owner = next((r["name"] for r in w["metadata"].get("ownerReferences", [])
                              if r.get("kind") == "AppWrapper"), None)
                if not owner:
                    continue
                self.wl[owner] = w
                if is_true(w, "Admitted"):
                    self.admitted_at.setdefault(owner, now)
                if is_true(w, "Evicted"):
                    self.evicted.setdefault(owner, cond(w, "Evicted").get("reason", "?"))
            for p in pods:
                aw = p["metadata"].get("labels", {}).get("workload.codeflare.dev/appwrapper")
                node = p["spec"].get("nodeName")
                if aw:
                    self.pods.setdefault(aw, set()).add(p["metadata"]["uid"])
                if aw and node:
                    self.nodes.setdefault(aw, [])
                    if node not in self.nodes[aw]:
                        self.nodes[aw].append(node)

    def run(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(0.2)

    def get(self, what):
        with self.lock:
            return dict(getattr(self, what))


def wl_state(w):
    """The Workload's state in one word, as Kueue's conditions say it."""
    if not w:
        return "-"
    for t in ("Finished", "Evicted", "Admitted", "QuotaReserved"):
        if is_true(w, t):
            return t
    return "Pending"


def appwrapper(name, run_for, priority, pod_ann=None, aw_ann=None):
    """An AppWrapper of one Job of one pod asking for 1 cpu, queued in the
    LocalQueue; kwok completes the pod run_for after it starts. No
    spec.suspend: Kueue's webhook sets it."""
    ann = {"steadfast.test/kwok-run-for": run_for, **(pod_ann or {})}
    return {
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": name, "annotations": aw_ann or {},
                     "labels": {"kueue.x-k8s.io/queue-name": "demo-queue",
                                "kueue.x-k8s.io/priority-class": priority}},
        "spec": {"components": [{"template": {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"backoffLimit": 0, "template": {
                "metadata": {"annotations": ann},
                "spec": {"restartPolicy": "Never", "containers": [{
                    "name": "main", "image": "busybox",
                    "command": ["sh", "-c", "sleep 3600"],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}}]},
    }


def kueue_setup():
    for name, value in (("demo-low", 10), ("demo-high", 1000)):
        create(f"{KUEUE}/workloadpriorityclasses",
               {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": {"name": name}, "value": value})
    create(f"{KUEUE}/resourceflavors",
           {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": "demo-flavor"}, "spec": {}})
    create(f"{KUEUE}/clusterqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "demo-cq"},
        "spec": {"namespaceSelector": {},
                 "preemption": {"withinClusterQueue": "LowerPriority"},
                 "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{
                     "name": "demo-flavor", "resources": [
                         {"name": "cpu", "nominalQuota": QUOTA},
                         {"name": "memory", "nominalQuota": "64Gi"}]}]}]}})
    create(f"{KUEUE}/namespaces/{NS}/localqueues",
           {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "demo-queue"}, "spec": {"clusterQueue": "demo-cq"}})

    def active():
        st, cq = api("GET", f"{KUEUE}/clusterqueues/demo-cq")
        return st == 200 and is_true(cq, "Active")

    wait("ClusterQueue demo-cq Active", active, 30)


def lease_holder():
    st, body = api("GET", f"/apis/coordination.k8s.io/v1/namespaces/{SYSTEM}/leases/{LEASE}")
    return body.get("spec", {}).get("holderIdentity", "") if st == 200 else ""


def token_kubeconfig(logs):
    """A kubeconfig with a token of the controller's ServiceAccount."""
    st, tok = api("POST", f"/api/v1/namespaces/{SYSTEM}/serviceaccounts/steadfast-controller/"
                          "token", {"apiVersion": "authentication.k8s.io/v1",
                                    "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
    if st != 201:
        sys.exit(f"demo: TokenRequest failed: {st} {tok}")
    path = os.path.join(logs, "controller.kubeconfig")
    with open(path, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {{server: "{ENV['STEADFAST_APISERVER']}", certificate-authority: "{ENV['STEADFAST_CA']}"}}
users:
- name: steadfast-controller
  user: {{token: "{tok['status']['token']}"}}
contexts:
- name: controller
  context: {{cluster: local, user: steadfast-controller, namespace: {SYSTEM}}}
current-context: controller
""")
    return path


def main():
    logs = ENV.get("DEMO_LOGS") or os.path.join(ENV["STEADFAST_CLUSTER_DIR"], "controller-logs")
    os.makedirs(logs, exist_ok=True)
    manifests = ["manager/namespace.yaml", "rbac/service_account.yaml",
                 "rbac/cluster_role.yaml", "rbac/cluster_role_binding.yaml",
                 "rbac/leader_election_role.yaml", "rbac/leader_election_role_binding.yaml"]
    for f in manifests:
        run("apply", "-f", os.path.join(HERE, "manifests", f))
    create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": NS}})
    kubeconfig = token_kubeconfig(logs)
    step(f"`steadfast apply`: namespace {SYSTEM}, ServiceAccount and least-privilege RBAC "
         "(manifests/); the replicas run with that ServiceAccount's token")

    kueue_setup()
    step(f"Kueue: ClusterQueue demo-cq with quota for {QUOTA} cpus (preemption of lower "
         "priority), LocalQueue demo/demo-queue, WorkloadPriorityClasses demo-low (10) and "
         "demo-high (1000)")

    # Steadfast as deployed next to Kueue: AppWrappers without a queue are
    # left alone (Kueue's manageJobsWithoutQueueName is false too)
    config = os.path.join(logs, "config.yaml")
    with open(config, "w") as f:
        f.write("appwrapper:\n  enableKueueIntegrations: true\n  kueueJobReconciller:\n"
                "    manageJobsWithoutQueueName: false\n")
    procs = {}
    for suffix in ("7c9f6-h2x4k", "7c9f6-m8q2z", "7c9f6-tr5wp"):
        pod = f"steadfast-controller-{suffix}"
        env = dict(ENV, POD_NAME=pod, POD_NAMESPACE=SYSTEM)
        f = open(os.path.join(logs, pod + ".log"), "w")
        procs[pod] = subprocess.Popen(
            [BIN, "--kubeconfig", kubeconfig, "--namespace", NS, "--identity", pod,
             "--config", config,
             "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
             "--leader-elect-retry-period=500ms", "--metrics-bind-address=127.0.0.1:0",
             "--health-probe-bind-address=127.0.0.1:0"],
            env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    rec = Recorder()
    try:
        leader = wait("a leader", lease_holder, 30)
        step(f"three replicas started (logs in {logs}); {leader} holds the Lease "
             f"{SYSTEM}/{LEASE}, the other two are warm standbys")
        rec.start()

        # the failing one first, so that it is in the first wave
        create(AW, appwrapper("crash", "1s", "demo-low",
                              {"steadfast.test/kwok-fail-exit-code": "3",
                               "steadfast.test/kwok-fail-message": "config /etc/app.yaml: "
                                                                   "no such file"},
                              {ANN + "retryLimit": "1",
                               ANN + "failureGracePeriodDuration": "0s",
                               ANN + "retryPausePeriodDuration": "1s"}))
        wait("crash admitted", lambda: "crash" in rec.get("admitted_at"), 30)
        train = [f"train-{i}" for i in range(1, 6)]
        for n in train:
            create(AW, appwrapper(n, "6s", "demo-low"))
        submitted = ["crash"] + train

        def first_wave():
            adm = rec.get("admitted_at")
            return len(adm) >= QUOTA and all(rec.get("wl").get(n) for n in submitted)

        wait("the first wave", first_wave, 30)
        adm = rec.get("admitted_at")
        step(f"{len(submitted)} AppWrappers of 1 cpu submitted (Kueue's webhook suspends them): "
             f"Kueue admitted {', '.join(sorted(adm, key=adm.get))}; "
             f"{len(submitted) - len(adm)} wait in the queue")

        wait("their pods on kwok nodes", lambda: all(rec.get("nodes").get(n) for n in adm), 30)
        nodes = rec.get("nodes")
        step("Steadfast created their Jobs; kube-scheduler bound the pods, kwok runs them: " +
             ", ".join(f"{n} on {nodes[n][0]}" for n in sorted(adm)))

        wait("crash Failed", lambda: rec.get("phase").get("crash") == "Failed", 40)
        wait("crash's Workload Finished",
             lambda: wl_state(rec.get("wl").get("crash")) == "Finished", 30)
        step(f"crash's pods exited 3 on their node (kwok) {len(rec.get('pods')['crash'])} times: "
             f"phases {' -> '.join(rec.get('seen')['crash'])} (retryLimit 1); its Workload is "
             "Finished and its quota went to the next in the queue")

        def held():
            return [n for n, w in rec.get("wl").items()
                    if is_true(w, "QuotaReserved") and not is_true(w, "Finished")]

        holders = wait("the quota in use again", lambda: len(held()) >= QUOTA and held(), 30)
        create(AW, appwrapper("urgent", "3s", "demo-high"))
        victim = wait("a preemption", lambda: next(iter(rec.get("evicted")), None), 30)
        # Suspended once before its admission, and again now
        wait(f"{victim} Suspended", lambda: rec.get("seen")[victim].count("Suspended") >= 2, 30)
        step(f"urgent submitted at priority demo-high while {', '.join(sorted(holders))} hold the "
             f"quota: Kueue evicted {victim} "
             f"({rec.get('evicted')[victim]}), Steadfast took it down: "
             f"{' -> '.join(rec.get('seen')[victim])}")

        wait("urgent Running", lambda: rec.get("phase").get("urgent") == "Running", 30)
        t0 = time.monotonic()
        os.killpg(procs[leader].pid, signal.SIGKILL)
        procs[leader].wait()
        new = wait("a new leader", lambda: (lambda h: h if h and h != leader else None)(
            lease_holder()), 30, 0.05)
        step(f"killed the leader {leader} (SIGKILL, no release) while urgent runs: "
             f"{new} took over after {time.monotonic() - t0:.1f} s (4 s lease)")

        done = ("Succeeded", "Failed")
        wait("every AppWrapper done", lambda: all(
            rec.get("phase").get(n) in done for n in submitted + ["urgent"]), 90)
        wait("every Workload finished", lambda: all(
            wl_state(rec.get("wl").get(n)) == "Finished" for n in submitted + ["urgent"]), 30)
        rec.stop.set()
        rec.join()
        rec.sample()
        step(f"everything done under {new}: the final table (`steadfast get appwrappers -n "
             f"{NS}` shows the conditions)")
        phase, wls, adm, ev, nodes = (rec.get(k) for k in ("phase", "wl", "admitted_at",
                                                             "evicted", "nodes"))
        rows = [("APPWRAPPER", "PHASE", "WORKLOAD", "ADMITTED", "NODES")]
        for n in sorted(submitted + ["urgent"], key=lambda n: adm.get(n, 1e9)):
            state = wl_state(wls.get(n)) + (f" (Evicted: {ev[n]}, re-admitted)" if n in ev else "")
            rows.append((n, phase.get(n, "?"), state,
                         f"+{adm[n]:.1f}s" if n in adm else "-", ",".join(nodes.get(n, [])) or "-"))
        width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("    " + "  ".join(c.ljust(w) for c, w in zip(r, width)).rstrip(), flush=True)
    finally:
        rec.stop.set()
        for p in procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    step(f"replicas stopped; demo done in {time.monotonic() - START:.0f} s")


if __name__ == "__main__":
    main()
