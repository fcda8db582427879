#!/usr/bin/env python3
"""The Steadfast demo, after tools/demo.sh has started a control plane.

Installs the AppWrapper CRD, starts three controller replicas (identities
like pods of a Deployment), submits sample AppWrappers (one that fails),
plays Kueue (admission) and kubelet (pod status), kills the leader and shows
the handover, and prints the final phases and conditions. Every step says
in one line what it does. Uses only the standard library; talks to the API
server with the admin client certificate from the cluster's env file.
"""
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(HERE, os.environ.get("O", "build"), "steadfast")
ENV = os.environ
NS = "demo"
SYSTEM = "steadfast-system"  # the controller's namespace: its Lease lives here
LEASE = "f134c674.codeflare.dev"
START = time.monotonic()


def step(msg):
    print(f"\n==> [{time.monotonic() - START:5.1f}s] {msg}", flush=True)


def note(msg):
    print(f"    {msg}", flush=True)


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


def merge_patch(path, body):
    return api("PATCH", path, body, "application/merge-patch+json")


def run(*args, check=True):
    r = subprocess.run([BIN, *args, "--kubeconfig", ENV["KUBECONFIG"]], text=True,
                       capture_output=True)
    out = (r.stdout + r.stderr).rstrip()
    if check and r.returncode != 0:
        sys.exit(f"demo: {' '.join(args)} failed:\n{out}")
    return r.returncode, out


def wait(what, pred, timeout=60, every=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(every)
    sys.exit(f"demo: timed out waiting for {what}")


AW = "/apis/workload.codeflare.dev/v1beta2/namespaces/" + NS + "/appwrappers"


def aws():
    st, body = api("GET", AW)
    return {i["metadata"]["name"]: i for i in body.get("items", [])} if st == 200 else {}


def phase(name):
    return aws().get(name, {}).get("status", {}).get("phase", "")


def pods(aw):
    st, body = api("GET", f"/api/v1/namespaces/{NS}/pods?labelSelector="
                          f"workload.codeflare.dev%2Fappwrapper%3D{aw}")
    return [p for p in body.get("items", []) if not p["metadata"].get("deletionTimestamp")]


def kubelet(pod, phase_, code=0, message=""):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if phase_ == "Running":
        state = {"running": {"startedAt": now}}
    else:
        state = {"terminated": {"exitCode": code, "reason": "Error" if code else "Completed",
                                "message": message, "startedAt": now, "finishedAt": now}}
    cs = [{"name": c["name"], "image": c["image"], "imageID": "", "ready": phase_ == "Running",
           "restartCount": 0, "state": state} for c in pod["spec"]["containers"]]
    merge_patch(f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}/status",
                {"status": {"phase": phase_, "startTime": now, "containerStatuses": cs}})


def lease_holder():
    st, body = api("GET", f"/apis/coordination.k8s.io/v1/namespaces/{SYSTEM}/leases/{LEASE}")
    return body.get("spec", {}).get("holderIdentity", "") if st == 200 else ""


def main():
    logs = os.path.join(ENV["STEADFAST_CLUSTER_DIR"], "controller-logs")
    os.makedirs(logs, exist_ok=True)
    step("installing the AppWrapper CRD with `steadfast apply` (server-side apply)")
    print(run("apply", "-f", os.path.join(HERE, "manifests/crd/"
                                         "appwrappers.workload.codeflare.dev.yaml"))[1])
    api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": NS}})

    step("installing the controller's namespace, ServiceAccount and least-privilege RBAC"
         " (manifests/)")
    for f in ["manager/namespace.yaml", "rbac/service_account.yaml", "rbac/cluster_role.yaml",
              "rbac/cluster_role_binding.yaml", "rbac/leader_election_role.yaml",
              "rbac/leader_election_role_binding.yaml"]:
        print(run("apply", "-f", os.path.join(HERE, "manifests", f))[1])
    st, tok = api("POST", f"/api/v1/namespaces/{SYSTEM}/serviceaccounts/steadfast-controller/"
                          "token", {"apiVersion": "authentication.k8s.io/v1",
                                    "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
    if st != 201:
        sys.exit(f"demo: TokenRequest failed: {st} {tok}")
    sa_kubeconfig = os.path.join(ENV["STEADFAST_CLUSTER_DIR"], "controller.kubeconfig")
    with open(sa_kubeconfig, "w") as f:
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
    note("the replicas run with this ServiceAccount's token, not as admin")

    step("starting three controller replicas, named like pods of the Deployment"
         " (Lease steadfast-system/f134c674.codeflare.dev, 4 s lease)")
    procs = {}
    for suffix in ("7c9f6-h2x4k", "7c9f6-m8q2z", "7c9f6-tr5wp"):
        pod = f"steadfast-controller-{suffix}"
        env = dict(ENV, POD_NAME=pod, POD_NAMESPACE=SYSTEM)
        f = open(os.path.join(logs, pod + ".log"), "w")
        procs[pod] = subprocess.Popen(
            [BIN, "--kubeconfig", sa_kubeconfig, "--namespace", NS, "--identity", pod,
             "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
             "--leader-elect-retry-period=500ms", "--metrics-bind-address=127.0.0.1:0",
             "--health-probe-bind-address=127.0.0.1:0"],
            env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        note(f"{pod} (pid {procs[pod].pid}), logs in {f.name}")
    try:
        leader = wait("a leader", lease_holder, 30)
        step(f"one replica leads, the others are warm standbys: `steadfast lease status`")
        print(run("lease", "status", "-n", SYSTEM, "--name", LEASE)[1])

        step("submitting AppWrappers: a Job that succeeds, a Pod that runs, a Pod that fails")
        samples = """
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata: {name: demo-job, labels: {kueue.x-k8s.io/queue-name: default-queue}}
spec:
  components:
  - template:
      apiVersion: batch/v1
      kind: Job
      metadata: {name: demo-job}
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            restartPolicy: Never
            containers:
            - {name: main, image: busybox, command: [sh, -c, "sleep 5"]}
---
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata: {name: demo-pod, labels: {kueue.x-k8s.io/queue-name: default-queue}}
spec:
  components:
  - template:
      apiVersion: v1
      kind: Pod
      metadata: {name: demo-pod}
      spec:
        restartPolicy: Never
        containers:
        - {name: main, image: busybox, command: [sh, -c, "sleep 3600"]}
---
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata:
  name: demo-failing
  labels: {kueue.x-k8s.io/queue-name: default-queue}
  annotations:
    workload.codeflare.dev.appwrapper/retryLimit: "1"
    workload.codeflare.dev.appwrapper/failureGracePeriodDuration: "0s"
    workload.codeflare.dev.appwrapper/retryPausePeriodDuration: "2s"
spec:
  components:
  - template:
      apiVersion: v1
      kind: Pod
      metadata: {name: demo-failing}
      spec:
        restartPolicy: Never
        containers:
        - {name: main, image: busybox, command: [sh, -c, "exit 3"]}
"""
        path = os.path.join(ENV["STEADFAST_CLUSTER_DIR"], "demo-samples.yaml")
        with open(path, "w") as f:
            f.write(samples)
        print(run("apply", "-f", path, "-n", NS)[1])
        names = ["demo-job", "demo-pod", "demo-failing"]
        wait("Suspended", lambda: all(phase(n) == "Suspended" for n in names))
        note("no webhook: the controller suspended them for Kueue (queue label) - all Suspended")

        step("playing Kueue: admitting all three (spec.suspend=false)")
        for n in names:
            merge_patch(f"{AW}/{n}", {"spec": {"suspend": False}})
        wait("Running", lambda: all(phase(n) in ("Running", "Resetting", "Failed")
                                    for n in names))
        note("components created; the Job controller makes the Job's pods")

        step("playing kubelet: pods start; the failing Pod exits 3 each time it is created")
        seen = set()

        def kubelet_tick():
            for n in names:
                for p in pods(n):
                    uid = p["metadata"]["uid"]
                    if uid in seen or p.get("status", {}).get("phase") not in (None, "Pending"):
                        continue
                    seen.add(uid)
                    if n == "demo-failing":
                        kubelet(p, "Failed", 3, "config /etc/app.yaml: no such file")
                        note(f"pod {p['metadata']['name']} exited 3")
                    else:
                        kubelet(p, "Running")
            return False

        wait("pods", lambda: kubelet_tick() or len(pods("demo-job")) >= 2 and
             len(pods("demo-pod")) >= 1, 30)
        kubelet_tick()
        wait("PodsReady", lambda: kubelet_tick() or all(
            any(c["type"] == "PodsReady" and c["status"] == "True"
                for c in aws()[n]["status"].get("conditions", []))
            for n in ("demo-job", "demo-pod")), 30)
        note("demo-job and demo-pod: PodsReady=True")

        step(f"killing the leader {leader} with SIGKILL (no release: the others wait for the"
             " lease to expire)")
        print(run("lease", "status", "-n", SYSTEM, "--name", LEASE)[1])
        t0 = time.monotonic()
        os.killpg(procs[leader].pid, signal.SIGKILL)
        procs[leader].wait()
        new = wait("a new leader", lambda: (lambda h: h if h and h != leader else None)(
            lease_holder()), 30, 0.05)
        note(f"{new} took over after {time.monotonic() - t0:.1f} s (lease 4 s)")
        print(run("lease", "status", "-n", SYSTEM, "--name", LEASE, check=False)[1])

        step("the Job's pods complete; the new leader carries on")
        for p in pods("demo-job"):
            kubelet(p, "Succeeded")
        wait("demo-job Succeeded", lambda: kubelet_tick() or phase("demo-job") == "Succeeded", 30)
        wait("demo-failing Failed", lambda: kubelet_tick() or phase("demo-failing") == "Failed",
             40)
        note("demo-job Succeeded; demo-failing was reset once (retryLimit 1), then Failed")

        step("final phases and conditions: `steadfast get appwrappers -n demo`")
        print(run("get", "appwrappers", "-n", NS)[1])
        st, evs = api("GET", f"/api/v1/namespaces/{NS}/events?fieldSelector="
                             "involvedObject.name%3Ddemo-failing")
        for e in evs.get("items", []):
            if e.get("type") == "Warning":
                # one Event per reporting replica, as client-go's recorder
                # keeps them: each incarnation failed under another leader
                note(f"Warning event from {e.get('reportingInstance') or '?'} "
                     f"(count {e.get('count', 1)}): {e['reason']}: {e['message']}")
    finally:
        step("stopping the replicas")
        for p in procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
    step(f"done in {time.monotonic() - START:.0f} s")


if __name__ == "__main__":
    main()
