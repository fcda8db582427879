#!/usr/bin/env python3
"""AppWrapper controller benchmark (part of make bench; see tools/bench.sh).

  bench_appwrapper.py run --kubeconfig PATH --audit-log PATH --steadfast BIN
                          [--sizes 1000,5000] [--qps 50,200/400]
                          [--concurrency N] [--logdir DIR] --out FILE
                          [--admission true|false] [--syncs N] [--awload BIN]
                          [--ceiling-levels 16,64,256,500] [--ceiling-objects 500]
                          [--ceiling-watch 3,2,2] [--ceiling-after each|last]
  bench_appwrapper.py report RESULTS.jsonl SECTION.md

run: installs the AppWrapper CRD (manifests/crd) if it is missing and,
unless --admission false, the admission policies (manifests/admission,
kubectl apply -k; their ConfigMap in steadfast-system), then for each size
N, and for each client limit of --qps in turn (the runs of one size one
after the other), in a fresh namespace:

  1. starts the steadfast controller (leader election on, its own Lease in
     that namespace, watching only that namespace; --kube-api-qps and
     --kube-api-burst only for a limit other than the binary's default
     50/100; --concurrent-appwrapper-syncs only with --syncs) and waits for
     its "reconciling" log line, then a follower (the same binary and
     flags, the same Lease) and waits for its "leader observed"; the /proc
     numbers of both a moment later are the idle figures;
  2. creates N AppWrappers, each wrapping one batch/v1 Job (one pod, 10m
     CPU, restartPolicy Never; warmupGracePeriodDuration annotation 2h, as
     pods never start without a kubelet), with spec.suspend=false; the
     admission policies (or, without them, the controller) set
     suspend=true and the finalizer, the controller moves them to phase
     Suspended; waits until all are Suspended;
  3. plays Kueue: admits every AppWrapper (merge PATCH
     {"spec":{"suspend":false}}, --concurrency requests in flight) and waits
     until every status.phase is Running;
  4. deletes every AppWrapper and waits until all are gone;
  5. stops the follower, then the leader (SIGTERM) and reads the API
     server's audit log for
     the run: the controller's requests (user agent "steadfast/...") per
     verb and resource, and for each AppWrapper the time from its admit
     PATCH to the create of its Job (both ResponseComplete stageTimestamps,
     microseconds, same clock).

After each size (--ceiling-after each, the default; "last": once, after the
largest), the ceiling part (no controller running): build/bench/awload
--user plays whole lifecycles (the user's create, admit and delete and the
controller's writes, as that size's run measured them) at each in-flight level
of --ceiling-levels, --ceiling-objects lifecycles per level, with the
watches of --ceiling-watch open; the report divides each run's rate of
those requests by the best sustained rate (the efficiency), and counts
every client's writes (kube-controller-manager's too) in both from the
audit log.

Before each part etcd is compacted to its current revision and defragmented
(--etcd, default $STEADFAST_ETCD), so every part starts from a lean store.

Phases are followed with one watch on the namespace's AppWrappers (no
polling). The controller's VmHWM, VmRSS and utime+stime are sampled from
/proc every 250 ms and at each phase boundary (the follower's too), its
/metrics at each boundary (reconcile histograms, steadfast_cache_bytes when
served). Prints progress on stderr
and one JSON line per run (size and limit) to --out.

--qps: the controller's client-side rate limits, comma-separated, each "Q"
(burst 2*Q) or "Q/B"; default "50", the binary's default 50/100. Each
result line records "qps" and "burst"; a line without them (older runs)
was at 50/100.

The API server is reached with the kubeconfig's client certificate (the
kubeconfig written by test/cluster/up.sh: file paths or *-data fields),
http.client over TLS, one keep-alive connection per thread; stdlib only.

report: turns the JSON lines into the docs/benchmarks.md section: one
column per run; with a single limit, one per size.
"""
import base64
import collections
import concurrent.futures
import datetime
import http.client
import json
import math
import os
import resource
import ssl
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

SECTION_TITLE = "## AppWrapper controller: admission to Running"
GROUP, VERSION = "workload.codeflare.dev", "v1beta2"
CRD_NAME = "appwrappers.workload.codeflare.dev"
DRIVER_UA = "bench-appwrapper/1 (kueue stand-in)"
CTL_QPS, CTL_BURST = 50, 100  # the binary's default, src/manager/manager.c
CTL_WORKERS = 16  # reconciles in flight at most, src/appwrapper/controller.c
WARMUP_ANNOTATION = "workload.codeflare.dev.appwrapper/warmupGracePeriodDuration"
WARMUP_GRACE = "2h"
FINALIZER = "workload.codeflare.dev/finalizer"
CLK_TCK = os.sysconf("SC_CLK_TCK")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CRD_FILE = os.path.join(ROOT, "manifests", "crd", "appwrappers.workload.codeflare.dev.yaml")

log = benchlib.logger("bench-appwrapper")


# ------------------------------------------------------- client rate limits


def default_burst(q):
    return max(1, round(2 * q))


def parse_limits(spec):
    """--qps / BENCH_APPWRAPPER_QPS: "Q" (burst 2*Q) or "Q/B", comma-separated
    -> [(qps, burst)] in the given order, duplicates dropped. A whole qps is
    an int (recorded as 50, not 50.0)."""
    out = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        qs, slash, bs = item.partition("/")
        try:
            q = float(qs)
            if not (math.isfinite(q) and q > 0):
                raise ValueError
            q = int(q) if q.is_integer() else q
            b = int(bs) if slash else default_burst(q)
            if not 1 <= b <= 100000:
                raise ValueError
        except ValueError:
            raise ValueError(f"client limit {item!r}: want Q or Q/B, Q > 0 requests/s, "
                             f"B 1..100000 (the binary's limits for --kube-api-burst)")
        if (q, b) not in out:
            out.append((q, b))
    if not out:
        raise ValueError(f"no client limit in {spec!r}")
    return out


def limit_of(r):
    """A result's client limit; results without one were at the default."""
    return r.get("qps", CTL_QPS), r.get("burst", CTL_BURST)


def limit_label(lim):
    """"200 qps", or "200 qps / burst 1000" when the burst is not 2*qps."""
    q, b = lim
    return f"{q} qps" if b == default_burst(q) else f"{q} qps / burst {b}"


def limit_spec(lim):
    """The limit as --qps takes it: "200" or "200/1000"."""
    q, b = lim
    return f"{q}" if b == default_burst(q) else f"{q}/{b}"


def limit_args(lim):
    """The controller's flags for a limit: none at the binary's default."""
    q, b = lim
    if (q, b) == (CTL_QPS, CTL_BURST):
        return []
    return ["--kube-api-qps", str(q), "--kube-api-burst", str(b)]


def limit_tag(lim):
    """For namespace and log file names: "" at the default, else
    "-q200-b400" (a DNS label: no dots)."""
    q, b = lim
    if (q, b) == (CTL_QPS, CTL_BURST):
        return ""
    return f"-q{str(q).replace('.', 'p')}-b{b}"


def mono():
    return time.monotonic()


# ---------------------------------------------------------------- kubeconfig


def _scalar(s):
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s


def parse_yaml_subset(text):
    """Block mappings and sequences of plain or quoted scalars: enough for a
    kubeconfig as kubectl and test/cluster/up.sh write them."""
    lines = []
    for raw in text.splitlines():
        s = raw.rstrip()
        if not s.strip() or s.lstrip().startswith("#"):
            continue
        lines.append((len(s) - len(s.lstrip(" ")), s.strip()))
    pos = 0

    def block(indent):
        nonlocal pos
        if pos >= len(lines):
            return None
        if lines[pos][1].startswith("- ") or lines[pos][1] == "-":
            out = []
            while pos < len(lines) and lines[pos][0] == indent and \
                    (lines[pos][1].startswith("- ") or lines[pos][1] == "-"):
                ind, s = lines[pos]
                rest = s[1:].lstrip()
                if not rest:
                    pos += 1
                    out.append(block(lines[pos][0]) if pos < len(lines) else None)
                    continue
                # "- key: v" opens a mapping indented past the dash
                lines[pos] = (ind + (len(s) - len(rest)), rest)
                out.append(block(lines[pos][0]))
            return out
        out = {}
        while pos < len(lines) and lines[pos][0] == indent and not lines[pos][1].startswith("- "):
            s = lines[pos][1]
            key, _, val = s.partition(":")
            key = _scalar(key)
            pos += 1
            if val.strip():
                v = val.strip()
                out[key] = [] if v == "[]" else {} if v == "{}" else _scalar(v)
            elif pos < len(lines) and (lines[pos][0] > indent or
                                        (lines[pos][0] == indent and lines[pos][1].startswith("- "))):
                out[key] = block(lines[pos][0])
            else:
                out[key] = None
        return out

    return block(lines[0][0]) if lines else {}


class Kube:
    """A minimal API client: client-certificate (or token) auth from a
    kubeconfig, one keep-alive HTTPS connection per thread."""

    def __init__(self, kubeconfig, ua=DRIVER_UA):
        cfg = parse_yaml_subset(open(kubeconfig).read())
        cur = cfg.get("current-context")
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == cur)
        cl = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        us = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
        self._tmp = tempfile.mkdtemp(prefix="bench-aw-kc.")
        base = os.path.dirname(os.path.abspath(kubeconfig))

        def path_of(d, key):
            if d.get(key + "-data"):
                p = os.path.join(self._tmp, key)
                with open(p, "wb") as f:
                    f.write(base64.b64decode(d[key + "-data"]))
                os.chmod(p, 0o600)
                return p
            v = d.get(key)
            return os.path.join(base, v) if v and not os.path.isabs(v) else v

        u = urllib.parse.urlparse(cl["server"])
        self.host, self.port = u.hostname, u.port or 443
        self.ctx = ssl.create_default_context(cafile=path_of(cl, "certificate-authority"))
        if str(cl.get("insecure-skip-tls-verify", "")).lower() == "true":
            self.ctx.check_hostname = False
            self.ctx.verify_mode = ssl.CERT_NONE
        cert, key = path_of(us, "client-certificate"), path_of(us, "client-key")
        if cert:
            self.ctx.load_cert_chain(cert, key)
        self.headers = {"User-Agent": ua, "Accept": "application/json"}
        if us.get("token"):
            self.headers["Authorization"] = "Bearer " + us["token"]
        self.local = threading.local()

    def _conn(self, fresh=False, timeout=120):
        c = getattr(self.local, "conn", None)
        if c is None or fresh:
            if c is not None:
                c.close()
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                            timeout=timeout)
            self.local.conn = c
        return c

    def request(self, method, path, body=None, ctype="application/json"):
        """Returns (status, parsed JSON or None). Retries a dropped
        keep-alive connection and 429s."""
        hdr = dict(self.headers)
        if body is not None:
            hdr["Content-Type"] = ctype
            if not isinstance(body, (bytes, str)):
                body = json.dumps(body)
        for attempt in range(8):
            c = self._conn(fresh=attempt > 0)
            try:
                c.request(method, path, body=body, headers=hdr)
                r = c.getresponse()
                data = r.read()
            except (http.client.HTTPException, OSError):
                if attempt == 7:
                    raise
                time.sleep(0.05 * (attempt + 1))
                continue
            if r.status == 429:
                time.sleep(float(r.getheader("Retry-After") or 1))
                continue
            try:
                obj = json.loads(data) if data else None
            except ValueError:
                obj = None
            return r.status, obj
        raise RuntimeError(f"{method} {path}: too many retries")

    def must(self, method, path, body=None, ctype="application/json", ok=(200, 201)):
        st, obj = self.request(method, path, body, ctype)
        if st not in ok:
            msg = obj.get("message") if isinstance(obj, dict) else obj
            raise RuntimeError(f"{method} {path}: HTTP {st}: {msg}")
        return obj

    def stream(self, path, timeout=3700):
        """A watch: a fresh connection; returns (conn, response)."""
        c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)
        c.request("GET", path, headers=self.headers)
        return c, c.getresponse()


def aw_path(ns, name=None):
    p = f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/appwrappers"
    return p + "/" + name if name else p


# --------------------------------------------------------------------- watch


class AWWatch(threading.Thread):
    """Follows one namespace's AppWrappers with a list, then a watch from its
    resourceVersion (re-listed on 410, resumed on a closed stream). For each
    name: the wall and monotonic time it was first seen in each phase, and
    when it was deleted."""

    def __init__(self, kube, ns):
        super().__init__(daemon=True)
        self.kube, self.ns = kube, ns
        self.cv = threading.Condition()
        self.phase = {}        # name -> current phase ("" none yet)
        self.suspend = {}      # name -> spec.suspend
        self.first = collections.defaultdict(dict)  # name -> phase -> (wall, mono)
        self.gone = {}         # name -> (wall, mono)
        self.counts = collections.Counter()
        self.events = 0
        self.stopping = False
        self.err = None
        self.ready = threading.Event()
        self.conn = None

    def _apply(self, typ, obj):
        md = obj.get("metadata", {})
        name = md.get("name")
        if not name:
            return
        now = (time.time(), mono())
        if typ == "DELETED":
            old = self.phase.pop(name, None)
            if old is not None:
                self.counts[old] -= 1
            self.suspend.pop(name, None)
            self.gone.setdefault(name, now)
            return
        ph = (obj.get("status") or {}).get("phase") or ""
        old = self.phase.get(name)
        if old is not None:
            self.counts[old] -= 1
        self.phase[name] = ph
        self.counts[ph] += 1
        self.suspend[name] = bool((obj.get("spec") or {}).get("suspend"))
        if ph not in self.first[name]:
            self.first[name][ph] = now

    def _list(self):
        st, lst = self.kube.request("GET", aw_path(self.ns) + "?limit=0")
        if st != 200:
            raise RuntimeError(f"list appwrappers: HTTP {st}")
        with self.cv:
            seen = set()
            for o in lst.get("items", []):
                self._apply("MODIFIED", o)
                seen.add(o["metadata"]["name"])
            for name in [n for n in self.phase if n not in seen]:
                self._apply("DELETED", {"metadata": {"name": name}})
            self.cv.notify_all()
        return lst["metadata"]["resourceVersion"]

    def run(self):
        try:
            rv = self._list()
            while not self.stopping:
                q = urllib.parse.urlencode({"watch": "1", "resourceVersion": rv,
                                            "allowWatchBookmarks": "true",
                                            "timeoutSeconds": "3600"})
                self.conn, r = self.kube.stream(aw_path(self.ns) + "?" + q)
                if r.status != 200:
                    raise RuntimeError(f"watch appwrappers: HTTP {r.status}")
                self.ready.set()
                relist = False
                while True:
                    try:
                        ln = r.readline()
                    except (OSError, http.client.HTTPException):
                        ln = b""
                    if not ln:
                        break
                    ev = json.loads(ln)
                    typ, obj = ev.get("type"), ev.get("object") or {}
                    if typ == "ERROR":
                        if obj.get("code") == 410:
                            relist = True
                        break
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if typ == "BOOKMARK":
                        continue
                    with self.cv:
                        self.events += 1
                        self._apply(typ, obj)
                        self.cv.notify_all()
                self.conn.close()
                if self.stopping:
                    break
                if relist:
                    rv = self._list()
        except Exception as e:  # reported to the waiter
            if not self.stopping:
                self.err = e
                with self.cv:
                    self.cv.notify_all()
        finally:
            self.ready.set()

    def wait(self, pred, timeout, what, bad=()):
        """Waits until pred(self); fails on timeout, a broken watch, or an
        AppWrapper in one of the phases in bad."""
        end = mono() + timeout
        next_log = mono() + 10
        with self.cv:
            while not pred(self):
                if self.err:
                    raise RuntimeError(f"watch failed: {self.err}")
                if any(self.counts[b] > 0 for b in bad):
                    raise RuntimeError(f"while waiting for {what}: AppWrappers in "
                                       f"{[b for b in bad if self.counts[b]]}: "
                                       f"{dict(+self.counts)}")
                now = mono()
                if now >= end:
                    raise RuntimeError(f"timed out waiting for {what}: "
                                       f"{dict(+self.counts)} gone={len(self.gone)}")
                if now >= next_log:
                    log(f"  waiting for {what}: {dict(+self.counts)} gone={len(self.gone)}")
                    next_log = now + 10
                self.cv.wait(min(1.0, end - now))

    def stop(self):
        self.stopping = True
        try:
            if self.conn:
                self.conn.sock and self.conn.sock.shutdown(2)
        except OSError:
            pass


# ---------------------------------------------------------------- controller


def proc_sample(pid):
    """VmRSS, VmHWM (KiB), CPU seconds (utime+stime) of pid, or None."""
    try:
        st = {}
        for ln in open(f"/proc/{pid}/status"):
            k, _, v = ln.partition(":")
            if k in ("VmRSS", "VmHWM"):
                st[k] = int(v.split()[0])
        raw = open(f"/proc/{pid}/stat").read()
        f = raw[raw.rindex(")") + 2:].split()
        cpu = (int(f[11]) + int(f[12])) / CLK_TCK  # fields 14 and 15
        return {"rss_kib": st["VmRSS"], "hwm_kib": st["VmHWM"], "cpu_s": round(cpu, 2),
                "t": mono()}
    except (OSError, KeyError, ValueError, IndexError):
        return None


class Controller:
    def __init__(self, binary, kubeconfig, ns, lease, identity, logpath, extra=()):
        # probes and metrics on free loopback ports: nothing else on the
        # machine can clash, and /metrics is read at each phase boundary;
        # extra: the client limit's flags (limit_args)
        self.cmd = [binary, "--kubeconfig", kubeconfig, "--namespace", ns,
                    "--leader-election-namespace", ns, "--leader-election-id", lease,
                    "--identity", identity, "--zap-log-level", "info",
                    "--metrics-bind-address", "127.0.0.1:0", "--metrics-secure=false",
                    "--health-probe-bind-address", "127.0.0.1:0", *extra]
        self.metrics_port = None
        self.max_depth = 0
        self.logf = open(logpath, "wb")
        self.p = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=self.logf,
                                  stderr=subprocess.PIPE)
        self.reconciling = threading.Event()
        self.observed = threading.Event()  # a follower saw the leader
        self.levels = collections.Counter()
        self.msgs = collections.Counter()
        self.last = None
        self.peak = None
        self._stop = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._sample, daemon=True).start()

    def _read(self):
        for ln in self.p.stderr:
            self.logf.write(ln)
            try:
                j = json.loads(ln)
            except ValueError:
                continue
            self.levels[j.get("level")] += 1
            if j.get("level") in ("warn", "error"):
                self.msgs[j.get("msg")] += 1
            if j.get("msg") == "reconciling":
                self.reconciling.set()
            if j.get("msg") == "leader observed":
                self.observed.set()
            if j.get("msg") == "serving" and j.get("server") == "metrics":
                self.metrics_port = int(j.get("port"))
        self.logf.flush()

    def _sample(self):
        k = 0
        while not self._stop.is_set():
            self.sample()
            if k % 4 == 0:  # the work queue's depth, once a second
                m = self.metrics()
                d = m.get('workqueue_depth{name="appwrapper"}')
                if d is not None:
                    self.max_depth = max(self.max_depth, int(d))
            k += 1
            self._stop.wait(0.25)

    def metrics(self):
        """The controller's /metrics as {name{labels}: value}; {} if unread."""
        if not self.metrics_port:
            return {}
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=5)
            c.request("GET", "/metrics")
            body = c.getresponse().read().decode()
            c.close()
        except (OSError, http.client.HTTPException):
            return {}
        out = {}
        for ln in body.splitlines():
            if ln and not ln.startswith("#"):
                k, _, v = ln.rpartition(" ")
                try:
                    out[k] = float(v)
                except ValueError:
                    pass
        return out

    def sample(self):
        s = proc_sample(self.p.pid)
        if s:
            self.last = s
            if not self.peak or s["rss_kib"] > self.peak["rss_kib"]:
                self.peak = s
        return s

    def stop(self):
        final = self.sample()
        self._stop.set()
        benchlib.terminate(self.p, 30)
        return final


# Histograms of the controller's /metrics that split a reconcile's time
# (absent from binaries that do not serve them: "n/a" in the report): the
# mean over a phase is the difference of _sum over that of _count between
# the phase's boundaries, every label set of the family added up.
SPLIT_METRICS = {
    "queue_wait_ms": 'workqueue_queue_duration_seconds%s{name="appwrapper"}',
    "work_ms": 'workqueue_work_duration_seconds%s{name="appwrapper"}',
    "rate_limit_wait_ms": "rest_client_rate_limiter_duration_seconds%s{",
    "api_latency_ms": "rest_client_request_duration_seconds%s{",
}
PHASES = (("create", "idle", "suspended"), ("admit", "suspended", "running"),
          ("delete", "running", "gone"))


def hist_total(m, pattern, part):
    """_sum or _count of a histogram in metrics m, all label sets added (a
    pattern ending in "{"), or None when m has none."""
    key = pattern % part
    if not key.endswith("{"):
        return m.get(key)
    vals = [v for k, v in m.items() if k.startswith(key)]
    return sum(vals) if vals else None


def time_split(marks):
    """Per phase: the mean of each SPLIT_METRICS histogram (ms), None when
    the controller does not serve it or nothing was observed."""
    out = {}
    for ph, a, b in PHASES:
        ma, mb = marks[a].get("metrics") or {}, marks[b].get("metrics") or {}
        out[ph] = {}
        for name, pat in SPLIT_METRICS.items():
            s0, s1 = hist_total(ma, pat, "_sum"), hist_total(mb, pat, "_sum")
            c0, c1 = hist_total(ma, pat, "_count"), hist_total(mb, pat, "_count")
            v = None
            if None not in (s1, c1) and (c1 - (c0 or 0)) > 0:
                v = round(((s1 - (s0 or 0)) / (c1 - (c0 or 0))) * 1000, 2)
            out[ph][name] = v
    return out


# ------------------------------------------------------------------- objects


def appwrapper(name):
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "AppWrapper",
        "metadata": {
            "name": name,
            # No kubelet here: pods stay Pending, and with the default 5 min
            # warmup grace the first AppWrappers admitted would be reset for
            # insufficient pods ready before the last are Running (5,000
            # take longer than that at the controller's qps).
            "annotations": {WARMUP_ANNOTATION: WARMUP_GRACE},
        },
        "spec": {
            "suspend": False,
            "components": [{
                "template": {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {"name": name},
                    "spec": {
                        "completions": 1,
                        "parallelism": 1,
                        "backoffLimit": 0,
                        "template": {"spec": {
                            "restartPolicy": "Never",
                            "containers": [{
                                "name": "main",
                                "image": "busybox:1.36",
                                "command": ["sh", "-c", "sleep 600"],
                                "resources": {"requests": {"cpu": "10m"}},
                            }],
                        }},
                    },
                },
            }],
        },
    }


def parallel(fn, items, concurrency):
    """Runs fn(item) on a pool; returns the results in order; the first
    exception is raised."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as ex:
        return list(ex.map(fn, items))


def ensure_crd(kube):
    base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    st, _ = kube.request("GET", f"{base}/{CRD_NAME}")
    if st == 404:
        # the API server decodes YAML bodies itself
        st, obj = kube.request("POST", base, open(CRD_FILE, "rb").read(), "application/yaml")
        if st not in (201, 409):
            raise RuntimeError(f"creating the CRD: HTTP {st}: {obj}")
        log("installed the AppWrapper CRD")
    end = mono() + 60
    while mono() < end:
        st, crd = kube.request("GET", f"{base}/{CRD_NAME}")
        conds = ((crd or {}).get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conds):
            return
        time.sleep(0.2)
    raise RuntimeError("the AppWrapper CRD did not become Established")


def make_namespace(kube, ns):
    kube.must("POST", "/api/v1/namespaces",
              {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    # Job pods name the default ServiceAccount: wait for it, or the Job
    # controller's pod creates fail and retry
    end = mono() + 30
    while mono() < end:
        st, _ = kube.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")
        if st == 200:
            return
        time.sleep(0.1)
    raise RuntimeError(f"no default ServiceAccount in {ns}")


# ----------------------------------------------------------------- audit log


def parse_ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def audit_mark(path):
    """Where the audit log is now: its inode and size, and the time."""
    st = os.stat(path)
    return {"ino": st.st_ino, "off": st.st_size, "t": time.time()}


def audit_files(path, mark):
    """The files holding what was logged since mark, each with the offset to
    read from. kube-apiserver rotates its audit log (lumberjack: at 100 MB
    unless --audit-log-maxsize says otherwise; a 5,000 AppWrapper run
    crosses that): the file of the mark is renamed to AUDIT-<time>.log, where
    it is read from the mark's offset, and files started since are read
    whole."""
    d = os.path.dirname(os.path.abspath(path))
    base, ext = os.path.splitext(os.path.basename(path))
    out = []
    for fn in sorted(os.listdir(d)):
        if fn != base + ext and not (fn.startswith(base + "-") and fn.endswith(ext)):
            continue
        p = os.path.join(d, fn)
        st = os.stat(p)
        if st.st_ino == mark["ino"]:
            out.append((p, mark["off"]))
        elif st.st_mtime >= mark["t"] - 1:
            out.append((p, 0))
    return out


def read_audit(path, mark, ns):
    """Audit events (ResponseComplete, or ResponseStarted of a request that
    never completed) of namespace ns logged since mark."""
    byid = {}
    for p, off in audit_files(path, mark):
        byid.update(_read_audit_file(p, off, ns, byid))
    return list(byid.values())


def _read_audit_file(path, offset, ns, byid):
    with open(path, "rb") as f:
        f.seek(offset)
        for ln in f:
            if ns.encode() not in ln:
                continue
            try:
                e = json.loads(ln)
            except ValueError:
                continue
            ref = e.get("objectRef") or {}
            if ref.get("namespace") != ns:
                continue
            prev = byid.get(e["auditID"])
            if prev is None or e.get("stage") == "ResponseComplete":
                byid[e["auditID"]] = e
    return byid


WRITE_VERBS = ("create", "patch", "update", "delete", "deletecollection")
LOADER_UA = "bench-awload/1"
SERVER_PROCS = ("kube-apiserver", "etcd", "kube-controller-manager")


def client_of(e):
    """Who sent an audited request: the controller (both replicas share a
    user agent), the driver (the user's and Kueue's stand-in), the ceiling's
    loader, kube-controller-manager (the Job controller's pods and status,
    the garbage collector), or another client."""
    ua = e.get("userAgent", "")
    if ua.startswith("steadfast/"):
        return "controller"
    if ua == DRIVER_UA:
        return "user"
    if ua == LOADER_UA:
        return "loader"
    if ua.startswith("kube-controller-manager"):
        return "kube-controller-manager"
    return "other"


def writes_in(ev, windows):
    """Write requests of ev received inside any of windows ((from, to) in
    wall seconds), by client."""
    out = collections.Counter()
    for e in ev:
        if e["verb"] not in WRITE_VERBS:
            continue
        t = parse_ts(e["requestReceivedTimestamp"])
        if any(a <= t < b for a, b in windows):
            out[client_of(e)] += 1
    return dict(sorted(out.items()))


def machine_cpu():
    """(busy, all) jiffies of the whole machine, from /proc/stat."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = f[3] + (f[4] if len(f) > 4 else 0)
    return sum(f) - idle, sum(f)


def cpu_snapshot():
    """The machine's busy jiffies and each control-plane process's CPU
    seconds, now."""
    busy, _ = machine_cpu()
    return {"t": mono(), "machine_busy_s": busy / CLK_TCK,
            "procs": {k: server_cpu(k) for k in SERVER_PROCS},
            "self_s": sum(resource.getrusage(resource.RUSAGE_SELF)[:2])}


def cpu_between(a, b):
    """Cores in use between two cpu_snapshot()s: the whole machine, each
    control-plane process, and this driver."""
    dt = b["t"] - a["t"]
    if dt <= 0:
        return {}
    out = {"machine": round((b["machine_busy_s"] - a["machine_busy_s"]) / dt, 2),
           "driver": round((b["self_s"] - a["self_s"]) / dt, 2)}
    for k in SERVER_PROCS:
        if a["procs"].get(k) is not None and b["procs"].get(k) is not None:
            out[k] = round((b["procs"][k] - a["procs"][k]) / dt, 2)
    return out


def res_name(ref):
    r = ref.get("resource", "")
    if ref.get("subresource"):
        r += "/" + ref["subresource"]
    return r


# ----------------------------------------------------------------------- run


# kube-controller-manager's pace as the tests run it (test/cluster/up.sh
# without KCM_QPS, KCM_JOB_SYNCS, KCM_GC_SYNCS); results older than the
# "kcm" field were measured with it
KCM_DEFAULTS = {"qps": 100, "job_syncs": 5, "gc_syncs": 20}


def kcm_settings():
    """kube-controller-manager's flags that bound its pace, as the control
    plane started it (test/cluster/up.sh: KCM_QPS, KCM_JOB_SYNCS,
    KCM_GC_SYNCS; KCM_DEFAULTS where unset)."""
    env = {"qps": "KCM_QPS", "job_syncs": "KCM_JOB_SYNCS", "gc_syncs": "KCM_GC_SYNCS"}
    return {k: int(os.environ.get(v) or KCM_DEFAULTS[k]) for k, v in env.items()}


def kcm_text(res):
    """The settings of the runs' kube-controller-manager, for the report."""
    ks = {json.dumps(r.get("kcm") or KCM_DEFAULTS, sort_keys=True) for r in res}
    if len(ks) != 1:
        return "kube-controller-manager's settings differ between runs (each raw line's `kcm`)"
    k = json.loads(ks.pop())
    text = (f"`--concurrent-job-syncs={k['job_syncs']}`, "
            f"`--concurrent-gc-syncs={k['gc_syncs']}`, client limit {k['qps']} qps / burst "
            f"{2 * k['qps']}")
    if k != KCM_DEFAULTS:
        text += (" (tools/bench.sh; the tests run it with 5, 20 and 100: with those, in the "
                 "run of 2026-12-02 at 20,000, the controller found Jobs still without their "
                 "pod past the 1 min admission grace and made 3,491 live pod LISTs)")
    return text


def run_size(args, kube, n, runid, lim, who):
    """One run: n AppWrappers with the controller at client limit lim
    (qps, burst); who names the run in the progress lines."""
    ns = f"bench-aw-{n}{limit_tag(lim)}-{runid}"
    lease = "steadfast-bench"
    res = {"size": n, "qps": lim[0], "burst": lim[1], "namespace": ns,
           "concurrency": args.concurrency, "admission": args.admission,
           "kcm": kcm_settings()}
    if args.syncs:
        res["syncs"] = args.syncs
    log(f"[{who}] namespace {ns}")
    make_namespace(kube, ns)
    audit_at = audit_mark(args.audit_log)
    w = AWWatch(kube, ns)
    w.start()
    if not w.ready.wait(30) or w.err:
        raise RuntimeError(f"watch did not start: {w.err}")

    t_start = mono()
    wall_start = time.time()
    extra = limit_args(lim) + (["--concurrent-appwrapper-syncs", str(args.syncs)]
                               if args.syncs else [])
    ctl = Controller(args.steadfast, args.kubeconfig, ns, lease, f"bench-{runid}",
                     os.path.join(args.logdir, f"steadfast-{n}{limit_tag(lim)}.log"), extra)
    fol = None
    marks, fmarks = {}, {}

    walls, cpus = {}, {}

    def mark(k):
        walls[k] = time.time()
        cpus[k] = cpu_snapshot()
        marks[k] = ctl.sample()
        marks[k]["metrics"] = ctl.metrics()
        if fol:
            fmarks[k] = fol.sample()
            fmarks[k]["metrics"] = fol.metrics()

    try:
        if not ctl.reconciling.wait(60):
            raise RuntimeError("the controller did not log \"reconciling\" within 60 s")
        res["start_to_reconciling_s"] = round(mono() - t_start, 3)
        # the follower: the same binary and flags, the same Lease, a warm
        # standby (its informers fill the same caches); started once the
        # leader leads, so it cannot win the Lease
        fol = Controller(args.steadfast, args.kubeconfig, ns, lease, f"bench-{runid}-follower",
                         os.path.join(args.logdir,
                                      f"steadfast-{n}{limit_tag(lim)}-follower.log"), extra)
        if not fol.observed.wait(60):
            raise RuntimeError("the follower did not log \"leader observed\" within 60 s")
        time.sleep(2)
        mark("idle")
        idle = marks["idle"]
        res["idle"] = {"rss_kib": idle["rss_kib"], "hwm_kib": idle["hwm_kib"],
                       "cpu_s": idle["cpu_s"]}
        log(f"[{who}] controller reconciling after {res['start_to_reconciling_s']:.2f} s; "
            f"idle RSS {idle['rss_kib'] / 1024:.1f} MiB, CPU {idle['cpu_s']:.2f} s")

        names = [f"aw-{i:05d}" for i in range(n)]
        # scaled for limits below the default: the phases are at its pace
        per_phase_timeout = 120 + n * 0.6 * max(1.0, CTL_QPS / lim[0])

        # ---- create, wait until Suspended
        wall_create = time.time()
        cpus["create_start"] = cpu_snapshot()
        t0 = mono()
        parallel(lambda nm: kube.must("POST", aw_path(ns), appwrapper(nm)), names,
                 args.concurrency)
        res["create_requests_s"] = round(mono() - t0, 3)
        log(f"[{who}] {n} AppWrappers created in {res['create_requests_s']:.1f} s")
        w.wait(lambda s: s.counts["Suspended"] == n and all(s.suspend.values()),
               per_phase_timeout, "all Suspended")
        res["create_to_all_suspended_s"] = round(mono() - t0, 3)
        mark("suspended")
        log(f"[{who}] all Suspended after {res['create_to_all_suspended_s']:.1f} s")

        # ---- admit, wait until Running
        admit = {}

        def do_admit(nm):
            ts = time.time()
            kube.must("PATCH", aw_path(ns, nm), {"spec": {"suspend": False}},
                      "application/merge-patch+json")
            admit[nm] = (ts, time.time())

        wall_admit = time.time()
        cpus["admit_start"] = cpu_snapshot()
        t0 = mono()
        parallel(do_admit, names, args.concurrency)
        res["admit_requests_s"] = round(mono() - t0, 3)
        log(f"[{who}] {n} admit PATCHes answered in {res['admit_requests_s']:.1f} s")
        w.wait(lambda s: s.counts["Running"] == n, per_phase_timeout, "all Running",
               bad=("Resetting", "Failed", "Suspending"))
        t_running = mono()
        res["admit_to_all_running_s"] = round(t_running - t0, 3)
        mark("running")
        log(f"[{who}] all Running {res['admit_to_all_running_s']:.1f} s after the first admit")
        with w.cv:
            run_lat = [(w.first[nm]["Running"][0] - admit[nm][1]) * 1000 for nm in names]
        res["admit_to_running_ms"] = {"p50": round(benchlib.pct(run_lat, 50), 1),
                                      "p99": round(benchlib.pct(run_lat, 99), 1),
                                      "max": round(max(run_lat), 1)}

        # ---- delete, wait until gone
        wall_delete = time.time()
        cpus["delete_start"] = cpu_snapshot()
        t0 = mono()
        parallel(lambda nm: kube.must("DELETE", aw_path(ns, nm), ok=(200, 202)), names,
                 args.concurrency)
        res["delete_requests_s"] = round(mono() - t0, 3)
        w.wait(lambda s: len(s.gone) == n, per_phase_timeout * 2, "all gone")
        res["delete_to_all_gone_s"] = round(mono() - t0, 3)
        mark("gone")
        log(f"[{who}] all gone {res['delete_to_all_gone_s']:.1f} s after the first delete")
    finally:
        # the follower first: stopped after the leader it would take the
        # Lease and start leading
        ffinal = fol.stop() if fol else None
        final = ctl.stop()
        w.stop()
    wall_end = time.time()
    res["controller_exit"] = ctl.p.returncode
    res["follower_exit"] = fol.p.returncode
    if fol.reconciling.is_set():
        raise RuntimeError("the follower led at some point (it logged \"reconciling\")")
    res["follower"] = {
        "final": {"hwm_kib": ffinal["hwm_kib"], "rss_kib": ffinal["rss_kib"],
                  "cpu_s": ffinal["cpu_s"]},
        "hwm_kib_by_phase": {k: fmarks[k]["hwm_kib"] for k in fmarks},
        "rss_kib_by_phase": {k: fmarks[k]["rss_kib"] for k in fmarks},
    }
    res["rss_kib_by_phase"] = {k: marks[k]["rss_kib"] for k in marks}
    res["bytes_per_aw_running"] = round(
        (marks["running"]["hwm_kib"] - marks["idle"]["hwm_kib"]) * 1024 / n)
    res["follower"]["bytes_per_aw_running"] = round(
        (fmarks["running"]["hwm_kib"] - fmarks["idle"]["hwm_kib"]) * 1024 / n)
    cache = {k: v for k, v in marks["running"]["metrics"].items()
             if k.startswith("steadfast_cache_bytes")}
    if cache:
        res["cache_bytes_running"] = cache
    heap = {k: v for k, v in marks["running"]["metrics"].items()
            if k.startswith("steadfast_heap_bytes")}
    if heap:
        res["heap_bytes_running"] = heap
    res["split_by_phase"] = time_split(marks)
    fcache = {k: v for k, v in fmarks["running"]["metrics"].items()
              if k.startswith("steadfast_cache_bytes")}
    if fcache:
        res["follower"]["cache_bytes_running"] = fcache
    res["final"] = {"hwm_kib": final["hwm_kib"], "rss_kib": final["rss_kib"],
                    "cpu_s": final["cpu_s"]}
    res["cpu_s_by_phase"] = {
        "create": round(marks["suspended"]["cpu_s"] - marks["idle"]["cpu_s"], 2),
        "admit": round(marks["running"]["cpu_s"] - marks["suspended"]["cpu_s"], 2),
        "delete": round(marks["gone"]["cpu_s"] - marks["running"]["cpu_s"], 2),
    }
    res["hwm_kib_by_phase"] = {k: marks[k]["hwm_kib"] for k in ("idle", "suspended", "running",
                                                                  "gone")}
    # the controller's own counters, per phase (from /metrics)
    rec = 'controller_runtime_reconcile_total{controller="appwrapper",result="%s"}'
    tsum = 'controller_runtime_reconcile_time_seconds_sum{controller="appwrapper"}'
    tcnt = 'controller_runtime_reconcile_time_seconds_count{controller="appwrapper"}'

    def reconciles(m):
        return sum(m.get(rec % r, 0) for r in ("success", "error", "requeue", "requeue_after"))

    prev = marks["idle"]["metrics"]
    res["reconciles_by_phase"], res["reconcile_ms_mean_by_phase"] = {}, {}
    for ph, mk in (("create", "suspended"), ("admit", "running"), ("delete", "gone")):
        cur = marks[mk]["metrics"]
        if cur and prev:
            res["reconciles_by_phase"][ph] = int(reconciles(cur) - reconciles(prev))
            dc = cur.get(tcnt, 0) - prev.get(tcnt, 0)
            if dc:
                res["reconcile_ms_mean_by_phase"][ph] = round(
                    (cur.get(tsum, 0) - prev.get(tsum, 0)) / dc * 1000, 1)
        prev = cur
    res["workqueue_depth_max"] = ctl.max_depth
    res["log_lines"] = dict(ctl.levels)
    if ctl.msgs:
        res["log_warn_error"] = dict(ctl.msgs.most_common(8))
    res["watch_events"] = w.events

    # ---- audit log
    time.sleep(0.5)
    res["audit_files"] = len(audit_files(args.audit_log, audit_at))
    ev = read_audit(args.audit_log, audit_at, ns)
    mine = [e for e in ev if e.get("userAgent", "").startswith("steadfast/")
            and parse_ts(e["requestReceivedTimestamp"]) >= wall_start - 1]
    bounds = [("create", wall_create, wall_admit), ("admit", wall_admit, wall_delete),
              ("delete", wall_delete, wall_end + 60)]
    reqs = collections.Counter()
    by_phase = collections.defaultdict(collections.Counter)
    non2xx = collections.Counter()
    for e in mine:
        key = f"{e['verb']} {res_name(e['objectRef'])}"
        reqs[key] += 1
        t = parse_ts(e["requestReceivedTimestamp"])
        ph = next((p for p, a, b in bounds if a <= t < b), "startup")
        by_phase[ph][key] += 1
        code = (e.get("responseStatus") or {}).get("code", 0)
        if e.get("stage") == "ResponseComplete" and not 200 <= code < 300:
            non2xx[f"{key} {code}"] += 1
    res["requests"] = dict(sorted(reqs.items()))
    res["requests_by_phase"] = {p: dict(sorted(c.items())) for p, c in by_phase.items()}
    res["requests_non2xx"] = dict(sorted(non2xx.items()))
    durs = {"create": res["create_to_all_suspended_s"], "admit": res["admit_to_all_running_s"],
            "delete": res["delete_to_all_gone_s"]}
    res["requests_per_s_by_phase"] = {
        p: round(sum(c for k, c in by_phase[p].items() if not k.startswith(("watch", "list")))
                 / durs[p], 1) for p in durs}
    # every client's writes while the controller works (the three phases,
    # each from its first request to its end), and the cores in use then
    working = [(wall_create, walls["suspended"]), (wall_admit, walls["running"]),
               (wall_delete, walls["gone"])]
    res["writes_by_phase"] = {p: writes_in(ev, [w]) for p, w in zip(("create", "admit",
                                                                      "delete"), working)}
    res["writes_in_working_time"] = dict(sorted(sum(
        (collections.Counter(c) for c in res["writes_by_phase"].values()),
        collections.Counter()).items()))
    res["cores_by_phase"] = {p: cpu_between(cpus[p + "_start"], cpus[m]) for p, m in
                             (("create", "suspended"), ("admit", "running"),
                              ("delete", "gone"))}

    admitted = {}
    for e in ev:
        ref = e["objectRef"]
        if (e.get("userAgent") == DRIVER_UA and e["verb"] == "patch"
                and ref.get("resource") == "appwrappers" and not ref.get("subresource")
                and e.get("stage") == "ResponseComplete"):
            admitted[ref.get("name")] = parse_ts(e["stageTimestamp"])
    created = {}
    for e in mine:
        ref = e["objectRef"]
        if (e["verb"] == "create" and ref.get("resource") == "jobs"
                and e.get("stage") == "ResponseComplete"
                and (e.get("responseStatus") or {}).get("code") == 201):
            t = parse_ts(e["stageTimestamp"])
            nm = ref.get("name")
            if nm not in created or t < created[nm]:
                created[nm] = t
    lat = [(created[nm] - admitted[nm]) * 1000 for nm in admitted if nm in created]
    res["admit_to_job_create_ms"] = {"n": len(lat), "p50": round(benchlib.pct(lat, 50), 1),
                                     "p99": round(benchlib.pct(lat, 99), 1),
                                     "max": round(max(lat), 1)} if lat else {"n": 0}
    if len(lat) != n:
        log(f"[{who}] WARNING: admit -> Job create matched for {len(lat)} of {n} AppWrappers "
            f"({len(admitted)} admits, {len(created)} creates in the audit log)")
    # the client's view of the same thing (PATCH response read -> audit create)
    clat = [(created[nm] - admit[nm][1]) * 1000 for nm in admit if nm in created]
    if clat:
        res["admit_to_job_create_client_ms"] = {"p50": round(benchlib.pct(clat, 50), 1),
                                                "p99": round(benchlib.pct(clat, 99), 1)}
    if created:
        res["first_admit_to_last_job_create_s"] = round(
            max(created.values()) - min(admitted.values()), 3)

    # clean up: the namespace (AppWrappers, Jobs and pods are already gone);
    # waited for, so the next run starts on a quiet API server
    kube.request("DELETE", f"/api/v1/namespaces/{ns}")
    end = mono() + 120
    while mono() < end and kube.request("GET", f"/api/v1/namespaces/{ns}")[0] != 404:
        time.sleep(0.5)
    return res


ADMISSION_DIR = os.path.join(ROOT, "manifests", "admission")
ADMISSION_NS = "steadfast-system"  # the bindings' paramRef namespace


def install_admission(kube, kubeconfig):
    """manifests/admission as in production (docs/admission.md): the
    policies and their parameters (ConfigMap in the bindings' paramRef
    namespace); waits until a dry-run create comes back with the defaults
    (finalizer, spec.suspend=true): the API server picks policies up
    asynchronously."""
    st, obj = kube.request("POST", "/api/v1/namespaces",
                           {"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": ADMISSION_NS}})
    if st not in (201, 409):
        raise RuntimeError(f"creating namespace {ADMISSION_NS}: HTTP {st}")
    p = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "apply", "-k", ADMISSION_DIR],
                       capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"kubectl apply -k manifests/admission: {p.stderr.strip()}")
    probe = appwrapper("admission-probe")
    end = mono() + 60
    while mono() < end:
        st, o = kube.request("POST", aw_path("default") + "?dryRun=All", probe)
        if st == 201 and FINALIZER in (o["metadata"].get("finalizers") or []) \
                and o["spec"].get("suspend") is True:
            log("admission policies installed (manifests/admission) and in effect")
            return
        time.sleep(0.5)
    raise RuntimeError("the admission policies did not take effect within 60 s")


def ceiling_mix(results, admission):
    """The writes of one lifecycle as the last run measured them (the
    largest size), rounded per AppWrapper: status patches, metadata
    patches; with no run, the fixed mix of docs/benchmarks.md (6 status
    patches; 1 metadata patch with admission, 2 without)."""
    if results:
        r = results[-1]
        req, n = r["requests"], r["size"]
        return {"status": round(req.get("patch appwrappers/status", 0) / n),
                "meta": round(req.get("patch appwrappers", 0) / n),
                "create_job": 1, "delete_job": 1, "user": 3,
                "from": f"measured, {n} AppWrappers"}
    return {"status": 6, "meta": 1 if admission else 2, "create_job": 1, "delete_job": 1,
            "user": 3, "from": "fixed"}


def etcd_compact(url):
    """Compacts etcd to its current revision and defragments it (its HTTP
    gateway), so that every part starts from the same lean store, not
    from the history of the parts before it."""
    if not url:
        return

    def post(path, body):
        req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=300) as f:
                return json.loads(f.read() or b"{}")
        except urllib.error.HTTPError as e:
            return {"error": e.read().decode(errors="replace")}
    rev = post("/v3/kv/range", {"key": "AA==", "count_only": True})["header"]["revision"]
    res = post("/v3/kv/compaction", {"revision": rev, "physical": True})
    if "error" in res and "compacted" not in res["error"]:
        raise RuntimeError(f"etcd compaction to {rev}: {res['error']}")
    res = post("/v3/maintenance/defragment", {})
    if "error" in res:
        raise RuntimeError(f"etcd defragment: {res['error']}")
    log(f"etcd compacted to revision {rev} and defragmented")


def run_ceiling(args, kube, runid, mix, after):
    """The API server's ceiling for the mix, no controller running:
    build/bench/awload (C, the controller's client) at each in-flight
    level, in a fresh namespace."""
    ns = f"bench-aw-ceiling-{after}-{runid}"
    make_namespace(kube, ns)
    t0 = mono()
    cmd = [args.awload, "--user"] + (["--watch", args.ceiling_watch] if args.ceiling_watch
                                     else []) + [
        ns, str(args.ceiling_objects), str(mix["status"]), str(mix["meta"]), args.ceiling_levels]
    log(f"[ceiling] {' '.join(cmd[1:])}: {args.ceiling_objects} AppWrapper lifecycles per "
        f"level, the user's create, admit and delete + {mix['status']} status + "
        f"{mix['meta']} metadata patches + Job create + delete each")
    env = dict(os.environ, KUBECONFIG=args.kubeconfig)
    levels = []
    audit_at = audit_mark(args.audit_log)
    cpu0 = {k: server_cpu(k) for k in ("kube-apiserver", "etcd")}
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    snap = cpu_snapshot()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) as p:
        for ln in p.stdout:
            d = json.loads(ln)
            now = cpu_snapshot()
            d["cores"] = cpu_between(snap, now)  # the level, its short cleanup included
            snap = now
            levels.append(d)
            log(f"[ceiling] {d['inflight']} in flight: {d['rps_sustained']:.0f} requests/s "
                f"sustained ({d['rps']:.0f} over the level), {d['failed']} failed; "
                f"machine {d['cores'].get('machine', 0):.2f} cores busy")
    if p.returncode:
        raise RuntimeError(f"awload exited with {p.returncode}")
    # every client's writes in each level's sustained window (the loader's,
    # and kube-controller-manager's pods, Job status and events for them)
    time.sleep(0.5)
    ev = read_audit(args.audit_log, audit_at, ns)
    for d in levels:
        a, b = d.get("sustained_from_unix", 0), d.get("sustained_to_unix", 0)
        if b > a:
            d["writes_sustained"] = writes_in(ev, [(a, b)])
            d["all_writes_rps_sustained"] = round(sum(d["writes_sustained"].values()) / (b - a), 1)
    res = {"ceiling": True, "namespace": ns, "objects": args.ceiling_objects, "mix": mix,
           "admission": args.admission, "levels": levels, "watch": args.ceiling_watch,
           "requests_per_lifecycle": levels[0]["requests_per_lifecycle"] if levels else 0}
    ok = [d for d in levels if not d["failed"]]
    if ok:
        best = max(ok, key=lambda d: d["rps_sustained"])
        res["best_rps"], res["best_inflight"] = best["rps_sustained"], best["inflight"]
        res["best_lifecycles_s"] = round(best["rps_sustained"] / res["requests_per_lifecycle"], 2)
    aw = [d for d in ok if "all_writes_rps_sustained" in d]
    if aw:
        b = max(aw, key=lambda d: d["all_writes_rps_sustained"])
        res["best_all_writes_rps"], res["best_all_writes_inflight"] = (
            b["all_writes_rps_sustained"], b["inflight"])
    cpu1 = {k: server_cpu(k) for k in ("kube-apiserver", "etcd")}
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    # the loader's own CPU: it is not what bounds the rate if far below 1 core
    res["awload_cpu_s"] = round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 2)
    res["levels_s"] = round(sum(d["elapsed_s"] for d in levels), 1)
    if None not in cpu0.values() and None not in cpu1.values():
        res["server_cpu_s"] = {k: round(cpu1[k] - cpu0[k], 2) for k in cpu0}
    kube.request("DELETE", f"/api/v1/namespaces/{ns}")
    end = mono() + 300
    while mono() < end and kube.request("GET", f"/api/v1/namespaces/{ns}")[0] != 404:
        time.sleep(0.5)
    res["part_s"] = round(mono() - t0, 1)
    return res


def server_cpu(name):
    """utime+stime (s) of a control-plane process, from the pid file
    test/cluster/up.sh writes; None when unknown."""
    d = os.environ.get("STEADFAST_CLUSTER_DIR")
    if not d:
        return None
    try:
        pid = open(os.path.join(d, "pids", name + ".pid")).read().strip()
        raw = open(f"/proc/{pid}/stat").read()
        f = raw[raw.rindex(")") + 2:].split()
        return (int(f[11]) + int(f[12])) / CLK_TCK
    except (OSError, ValueError, IndexError):
        return None


def cmd_run(args):
    runid = benchlib.run_id()
    os.makedirs(args.logdir, exist_ok=True)
    kube = Kube(args.kubeconfig)
    ensure_crd(kube)
    if args.admission:
        install_admission(kube, args.kubeconfig)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    t0 = mono()
    done = []
    with open(args.out, "a") as out:
        # the runs of one size at each limit one after the other: compared
        # on the same machine state
        for n in sizes:
            etcd_compact(args.etcd)
            for lim in args.limits:
                who = f"{n}" if len(args.limits) == 1 else f"{n} @ {limit_label(lim)}"
                ts = mono()
                r = run_size(args, kube, n, runid, lim, who)
                r["part_s"] = round(mono() - ts, 1)
                out.write(json.dumps(r) + "\n")
                out.flush()
                done.append(r)
                log(f"[{who}] done in {r['part_s']:.0f} s")
            # next to each size (its runs' mix, on the server as it is
            # then), or once after the largest
            if args.ceiling_levels and (args.ceiling_after == "each" or n == sizes[-1]):
                etcd_compact(args.etcd)
                c = run_ceiling(args, kube, runid, ceiling_mix(done, args.admission), n)
                c["after_size"] = n
                out.write(json.dumps(c) + "\n")
                out.flush()
                log(f"[ceiling after {n}] done in {c['part_s']:.0f} s")
    log(f"all runs in {mono() - t0:.0f} s")
    return 0


# -------------------------------------------------------------------- report


def lifecycle_s(r):
    """The time the controller is the one working on a run's N
    AppWrappers: create -> all Suspended + first admit -> all Running +
    delete -> all gone."""
    return r["create_to_all_suspended_s"] + r["admit_to_all_running_s"] + r["delete_to_all_gone_s"]


def writes_of(r):
    return sum(c for k, c in r["requests"].items()
               if k.split()[0] in ("create", "patch", "update", "delete"))


def user_writes(r):
    """The user's writes (the driver's create, admit PATCH and delete of
    each AppWrapper) inside the working time, from the audit log."""
    return r.get("writes_in_working_time", {}).get("user", 3 * r["size"])


def all_writes_per_lifecycle(r):
    return sum(r["writes_in_working_time"].values()) / r["size"]


def all_writes_rate(r):
    """Every client's writes/s at the API server over the working time."""
    return sum(r["writes_in_working_time"].values()) / lifecycle_s(r)


def efficiency(r, ceil):
    """(lifecycles/s x requests per lifecycle) / the ceiling, with the
    requests a lifecycle costs the API server: every client's writes in the
    namespace while the controller works (the controller's, the user's
    create, admit and delete, kube-controller-manager's pods, Job status
    and events for the Jobs), over the API server's best sustained rate of
    every client's writes when the loader plays the same lifecycles with no
    controller running. 1.0: the API server takes writes as fast as it can
    while the controller works."""
    return all_writes_rate(r) / ceil["best_all_writes_rps"]


def full_fanout(ceil):
    """The ceiling's best level at which no watch was ended by the server
    (its watchers got every event, as the runs' informers do), or None."""
    lv = [d for d in ceil.get("levels", []) if not d["failed"] and d.get("watch_restarts") == 0
          and "all_writes_rps_sustained" in d]
    return max(lv, key=lambda d: d["all_writes_rps_sustained"]) if lv else None


def efficiency_full_fanout(r, ceil):
    """efficiency() against full_fanout(ceil): the ceiling at the same
    watch fan-out as the runs."""
    return all_writes_rate(r) / full_fanout(ceil)["all_writes_rps_sustained"]


def efficiency_lifecycle_mix(r, ceil):
    """The controller's writes and the user's three per lifecycle over the
    loader's best sustained rate of the same requests (it plays both). At
    the loader's best level kube-controller-manager falls behind (the Jobs
    are gone before it makes their pods), so it has the API server nearly
    to itself, which the controller runs never have."""
    return (writes_of(r) + user_writes(r)) / lifecycle_s(r) / ceil["best_rps"]


def efficiency_controller_alone(r, ceil):
    """The controller's writes alone over the same ceiling: at most
    9 / 12 = 0.75 when the user's requests share the server, as they do."""
    return writes_of(r) / lifecycle_s(r) / ceil["best_rps"]


def workers_of(r):
    return r.get("syncs") or CTL_WORKERS


def _wrap(text):
    return textwrap.fill(text, 74, break_on_hyphens=False, break_long_words=False)


def ceiling_text(ceils, res, ceil_of):
    """The ceiling parts and what bounds each run's efficiency: ceils are
    the run's ceiling parts (one after each size, or one after the
    largest), ceil_of(r) the one run r is measured against."""
    if not ceils:
        return ("\nRaw ceiling: not measured in this run (BENCH_APPWRAPPER_CEILING_LEVELS "
                "empty); no efficiency.\n")
    ceil = ceils[-1]
    each = len(ceils) > 1
    mix = ceil["mix"]
    where = "right after each size" if each else "after the sizes"
    doc = "\n" + _wrap(
        f"Raw ceiling, in the same run on the same API server {where}, with no "
        f"controller running: `build/bench/awload --user` (C, the controller's own client: "
        f"HTTP/2, one connection, no client-side rate limit) plays whole lifecycles, the "
        f"user's requests and the controller's writes ({'as that size measured them' if each else mix['from']}), one request after the "
        f"other per AppWrapper, in the order the controller runs show them: the user's create "
        f"(the admission policies add the finalizer and spec.suspend=true), a status patch "
        f"(Suspended), the user's admit (merge patch spec.suspend=false), two status patches, "
        f"the Job's create (the controller's Job: label, ownerReference with controller and "
        f"blockOwnerDeletion), a status patch (Running), the user's delete, a status patch "
        f"(Terminating), the Job's delete (UID precondition, propagationPolicy Background), "
        f"the remaining status patch, the finalizer's removal: "
        f"{ceil.get('requests_per_lifecycle', 0)} requests, the {mix['status']} status patches "
        f"and the metadata patch carrying the resourceVersion the previous answer gave. "
        f"{ceil['objects']} lifecycles per level, that many at once as requests in flight. "
        f"kube-controller-manager's Job controller creates and the garbage collector removes "
        f"the pods, as in the controller runs. The status patches carry a whole status of the "
        f"controller's shape (four conditions, the component's status with its pod set), as "
        f"the controller's merge patches do. "
        + (f"The loader keeps {ceil['watch']} watches of the namespace's AppWrappers, Jobs and "
           f"pods open (the leader's and the follower's informers and the driver's watch) and "
           f"reads their events. " if ceil.get("watch") else "")
        + "Sustained = requests between the 10th and 90th "
        f"percentile of completions over the time between them; every client's writes are "
        f"counted from the audit log in the same window.") + "\n"
    for c in ceils:
        doc += ceiling_levels_text(c, each)
    doc += "\n" + _wrap(
        "The machine's 2 cores are shared with other work, so a ceiling is this machine's "
        "at that time, which is why it is measured in the same run"
        + (", right after each size" if each else "")
        + "; the controller runs' efficiencies are against it. Where fewer watch events "
        "are read at a higher level (the loader starts a watch the server ended again from "
        "now, so it misses the events in between), the ceiling's watch fan-out there is "
        "lighter than the runs', and the ceiling, if anything, high for them.") + "\n"
    if ceil.get("best_all_writes_rps"):
        doc += efficiency_text(ceils, res, ceil_of)
    return doc


def ceiling_levels_text(ceil, each):
    """One ceiling part: its levels and its best."""
    doc = f"\nAfter {ceil['after_size']}:\n" if each and "after_size" in ceil else ""
    doc += ("\n| requests in flight | requests | time | requests/s (whole) | **requests/s "
            "sustained** | every client's writes/s in that window (kube-controller-manager's) "
            "| mean latency: create / admit / delete (user); status / metadata patch / Job "
            "create / Job delete | cores busy (of 2): machine, kube-apiserver | watch events read "
            "(watches the server ended) | failed |\n|---|---|---|---|---|---|---|---|---|---|\n")
    for d in ceil["levels"]:
        m = d["mean_ms"]
        lat = " / ".join(f"{m.get(k, 0):.0f}" for k in ("create_aw", "admit_aw", "delete_aw"))
        lat += "; " + " / ".join(f"{m.get(k, 0):.0f}" for k in ("patch_status", "patch_meta",
                                                               "create_job", "delete_job"))
        ws = d.get("writes_sustained", {})
        span = d.get("sustained_to_unix", 0) - d.get("sustained_from_unix", 0)
        kcm = ws.get("kube-controller-manager", 0) / span if span > 0 else 0
        cores = d.get("cores", {})
        doc += (f"| {d['inflight']} | {d['requests']} | {d['elapsed_s']:.1f} s | {d['rps']:.1f} | "
                f"**{d['rps_sustained']:.1f}** | {d.get('all_writes_rps_sustained', 0):.1f} "
                f"({kcm:.1f}) | {lat} ms | {cores.get('machine', 0):.2f}, "
                f"{cores.get('kube-apiserver', 0):.2f} | {d.get('watch_events', '-')} "
                f"({d.get('watch_restarts', '-')}) | {d['failed']} |\n")
    cpu = ceil.get("server_cpu_s", {})
    doc += "\n" + _wrap(
        f"Ceiling: {ceil.get('best_rps', 0):.1f} requests/s (best sustained, at "
        f"{ceil.get('best_inflight')} in flight), {ceil.get('best_lifecycles_s', 0):.1f} "
        f"lifecycles/s. The loader itself used "
        f"{ceil.get('awload_cpu_s', 0):.1f} s of CPU over {ceil.get('levels_s', 0):.0f} s of "
        f"levels ({ceil.get('awload_cpu_s', 0) / max(ceil.get('levels_s', 1), 1) * 100:.0f}% of "
        f"one core): it is not what bounds the rate"
        + (f"; kube-apiserver used {cpu['kube-apiserver']:.0f} s and etcd {cpu['etcd']:.0f} s "
           f"of CPU over the part" if cpu else "")
        + f". The part took {ceil.get('part_s', 0):.0f} s with setup and cleanup.") + "\n"
    return doc


def efficiency_text(ceils, res, ceil_of):
    """How the efficiency is computed, and what bounds it per run."""
    each = len(ceils) > 1
    if each:
        against = "the ceiling measured right after that size: " + ", ".join(
            f"{c['best_all_writes_rps']:.0f} writes/s after {c['after_size']} (at "
            f"{c.get('best_all_writes_inflight')} in flight)"
            for c in ceils if c.get("best_all_writes_rps"))
    else:
        against = (f"{ceils[-1]['best_all_writes_rps']:.0f} writes/s, at "
                   f"{ceils[-1].get('best_all_writes_inflight')} in flight")
    doc = "\n" + _wrap(
        "Efficiency, per run (the table above): (N / working time) x requests per "
        "lifecycle / the ceiling, where the working time is create -> all Suspended + "
        "first admit -> all Running + delete -> all gone (the three phases in which the "
        "controller has work queued), the requests per lifecycle are what one lifecycle "
        "costs the API server in writes, every client's in the namespace from the audit "
        "log (the controller's creates, patches, updates and deletes, lease renewals "
        "included; the user's create, admit and delete; kube-controller-manager's pods, "
        "Job status updates and events for the Jobs), and the ceiling is the API "
        "server's best sustained rate of every client's writes while the loader plays "
        f"the same lifecycles ({against}). 1.0 would be the API server "
        "taking writes as fast as it can while the controller works, so that nothing "
        "the controller could do would get lifecycles through faster; the goal is 0.8 "
        "or more at a client limit that does not bind. kube-controller-manager's writes "
        "are counted on both sides because they are the same work for the same Jobs: at "
        "16 and 64 in flight the loader's Jobs live long enough for it to make their "
        "pods, as in the controller runs; at 256 and 500 they are deleted before it does, "
        "so the loader alone gets more of its own requests through (the narrower rows "
        "set the controller's and the user's requests against that rate).") + "\n"
    over = [r for r in res if efficiency(r, ceil_of(r)) > 1.0]
    if over:
        doc += "\n" + _wrap(
            "An efficiency above 1.0 (" + ", ".join(str(r["size"]) for r in over) +
            ") means the API server took writes more slowly during the ceiling part "
            + ("than during the run right before it: " if each else
               "(which runs once after the last size) than during that run: ")
            + "the same machine's runs differ by about a tenth from one to the next."
            + ("" if each else " Each size's efficiency is best read against a "
               "ceiling measured next to it (BENCH_APPWRAPPER_CEILING_AFTER=each, the "
               "default).")) + "\n"
    doc += "\nWhat bounds the efficiency, per run:\n\n"
    for r in res:
        ceil = ceil_of(r)
        lvl = {d["inflight"]: d["rps_sustained"] for d in ceil["levels"]
               if not d["failed"]}
        w = workers_of(r)
        near = min(lvl, key=lambda k: abs(k - w - r["concurrency"])) if lvl else None
        rate = (writes_of(r) + user_writes(r)) / lifecycle_s(r)
        q = limit_of(r)[0]
        cores = r.get("cores_by_phase", {}).get("admit", {})
        allw = all_writes_rate(r)
        sent = (f"- {r['size']} at {q} qps: efficiency {efficiency(r, ceil):.2f} "
                f"({allw:.0f} writes/s of {ceil['best_all_writes_rps']:.0f}; the "
                f"controller's and the user's {rate:.0f} requests/s). ")
        if writes_of(r) / lifecycle_s(r) >= 0.9 * q:
            sent += "The client limit binds: the rate is the qps."
        else:
            sent += (f"The client limit ({q} qps) does not bind. The controller keeps at "
                     f"most {w} reconciles in flight and the driver {r['concurrency']} "
                     f"requests")
            if near is not None:
                sent += (f"; the loader with {near} requests in flight reaches "
                         f"{lvl[near]:.0f}/s ({rate / lvl[near]:.2f} of that)")
            if cores.get("machine") is not None:
                sent += (f". In the admit phase the machine had {cores['machine']:.2f} of "
                         f"its 2 cores busy (kube-apiserver "
                         f"{cores.get('kube-apiserver', 0):.2f}, the driver "
                         f"{cores.get('driver', 0):.2f})")
            sent += "."
        doc += _wrap(sent).replace("\n", "\n  ") + "\n"
    return doc


# Why each request of a lifecycle is there (docs/benchmarks.md): the order
# is the audit log's for one AppWrapper; the phases are the controller's
# log lines (src/appwrapper/phase.c).
JUSTIFY = """Every request of one lifecycle, in order (the audit log of one AppWrapper;
src/appwrapper/phase.c), and why the controller needs it:

1. `patch appwrappers/status`: phase Suspended, QuotaReserved=False
   ("initialised"): the status Kueue and users read; without it an
   AppWrapper shows no phase until admitted.
2. `patch appwrappers/status`: phase Resuming, QuotaReserved=True,
   ResourcesDeployed=True, PodsReady=False ("admitted"): records the
   admission before anything is created, so a new leader resumes it
   instead of treating the Jobs as strays.
3. `patch appwrappers/status`: the component's ResourcesDeployed=Unknown,
   ComponentCreationInitiated: the intent to create, written before the
   create, so a Job created and then not seen in the cache is looked for
   (grace window, live GET) rather than created twice, and a changed
   template is never created over the tracked one.
4. `create jobs`: the wrapped component, controlled by the AppWrapper.
5. `patch appwrappers/status`: phase Running, the component's
   ComponentCreatedSuccessfully: what Kueue and users wait for.
6. `patch appwrappers/status`: phase Terminating, DeletingResources=True
   (DeletionInitiated): starts the forceful-deletion grace clock in the
   status, not in memory, so a new leader keeps the same deadline.
7. `delete jobs`: the component, with its UID as precondition (a Job of the
   same name made since is never deleted) and propagationPolicy
   Background (the garbage collector removes the pods).
8. `patch appwrappers/status`: the component's ResourcesDeployed=False,
   DeletionComplete: the record that nothing is left, written before the
   finalizer goes.
9. `patch appwrappers`: removes the finalizer, which lets the API server
   delete the AppWrapper. (Without the admission policies there is one
   more before 1: the finalizer added, with `spec.suspend=true`.)

The rest is not per AppWrapper: `update leases` (the leader's renewals,
every 2 s: the longer the run, the more), `get leases` (the follower's
polls of the Lease), `get configmaps` (the leader's admission parameters
pass, once a minute: docs/admission.md), and the list and watch of each informer (AppWrappers,
Jobs, pods, Leases) of both replicas, a few per run. Both replicas use the
same client certificate and user agent, so the audit log cannot tell them
apart; the follower never writes (the election fence), so every write
counted is the leader's.
"""


def cmd_report(args):
    allres = benchlib.load_results(args.results)
    # the ceiling parts that measured something: one after each size, or
    # one after the largest (older results: one, without after_size)
    ceils = [r for r in allres if r.get("ceiling") and r.get("best_rps")]
    ceil = ceils[-1] if ceils else None
    after = {c["after_size"]: c for c in ceils if "after_size" in c}
    res = [r for r in allres if not r.get("ceiling")]
    each = len(ceils) > 1 and all(r["size"] in after for r in res)
    if not each:
        ceils = ceils[-1:]

    def ceil_of(r):
        """The ceiling run r is measured against: the one right after its
        size, else the last."""
        return after.get(r["size"], ceil) if each else ceil
    run_limits = list(dict.fromkeys(limit_of(r) for r in res))  # in the order run
    # one column per run: by size, then by limit, so the runs of one size
    # (one after the other in the run) stand side by side
    res.sort(key=lambda r: (r["size"], limit_of(r)))
    sizes = list(dict.fromkeys(r["size"] for r in res))
    limits = sorted(run_limits)
    multi = len(limits) > 1  # else one limit, one column per size, as before
    at_default = limits == [(CTL_QPS, CTL_BURST)]
    q1, b1 = limits[0]  # the limit, when there is one
    mib = lambda k: f"{k / 1024:.1f} MiB"  # noqa: E731

    def name(r):
        """A run as the headings name it: its size, with its limit if several."""
        return f"{r['size']} @ {limit_label(limit_of(r))}" if multi else f"{r['size']}"

    def para(text):
        """A paragraph, wrapped; NBSP (glue) keeps words on one line."""
        return textwrap.fill(text, 74, break_on_hyphens=False,
                             break_long_words=False).replace("\N{NO-BREAK SPACE}", " ")

    def qb(lim, sep=" / "):
        return f"{lim[0]}{sep}{lim[1]}".replace(" ", "\N{NO-BREAK SPACE}")

    def listed(items):
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]

    hdr = "| measure | " + " | ".join(name(r) if multi else f"{name(r)} AppWrappers"
                                     for r in res) + " |\n"
    hdr += "|---|" + "---|" * len(res) + "\n"

    def cell(fn, r):
        try:
            return fn(r)
        except (KeyError, TypeError, ZeroDivisionError):
            return "-"  # not measured in that run

    def row(label, fn):
        return f"| {label} | " + " | ".join(cell(fn, r) for r in res) + " |\n"

    def rps(r, p):
        return f"{r['requests_per_s_by_phase'][p]:.1f}"

    def limited(r, p):
        return sum(c for k, c in r["requests_by_phase"].get(p, {}).items()
                   if not k.startswith(("watch", "list"))) / limit_of(r)[0]

    def per_aw(r, keys):
        return sum(r["requests"].get(k, 0) for k in keys) / r["size"]

    parts = os.environ.get("BENCH_APPWRAPPER_SIZES", ",".join(map(str, sizes)))
    # the text that names the client limit: as before at the default alone
    cmd = """    build/steadfast --kubeconfig $KUBECONFIG --namespace NS \\
      --leader-election-namespace NS --leader-election-id steadfast-bench \\
      --identity bench-ID --zap-log-level info \\
      --metrics-bind-address 127.0.0.1:0 --metrics-secure=false --health-probe-bind-address 127.0.0.1:0"""
    syncs = sorted({r.get("syncs") for r in res if r.get("syncs")})
    if syncs:
        cmd += f" \\\n      --concurrent-appwrapper-syncs {'/'.join(map(str, syncs))}"
    minutes = f"{(sum(r['part_s'] for r in res) + sum(c.get('part_s', 0) for c in ceils)) / 60:.0f}"
    if at_default:
        cmd += "\n"
        limit_text = f"""The controller's API client is limited to qps {CTL_QPS} / burst {CTL_BURST}
(src/manager/manager.c; not changed for the benchmark): every phase below
needs a few writes per AppWrapper, so the phase times are bounded by that
limiter, not by the controller's CPU; the request rates, the time the
limiter alone needs for each phase's requests, and the CPU seconds show it.
"""
        command = f"""Command: `make bench BENCH_PARTS=appwrapper` (sizes {parts}; the part took
{minutes} min in all, including setup and cleanup of each namespace).
"""
    else:
        default_note = " (the binary's default, src/manager/manager.c)"
        if multi:
            cmd += " \\\n      [--kube-api-qps Q --kube-api-burst B]\n\n" + para(
                "Q / B: the run's client limit, as its column's heading names it ("
                + listed([qb(lim) for lim in limits]) + ")"
                + (f"; both flags are left out at {qb((CTL_QPS, CTL_BURST))}, the binary's default"
                   if (CTL_QPS, CTL_BURST) in limits else "") + ".") + "\n"
            limited_to = "qps Q / burst B, per run: " + listed([
                qb(lim) + (default_note if lim == (CTL_QPS, CTL_BURST) else "")
                for lim in limits])
        else:
            cmd += f" \\\n      --kube-api-qps {q1} --kube-api-burst {b1}\n"
            limited_to = (f"qps {qb((q1, b1), ' / burst ')} (the binary's default is "
                          f"{qb((CTL_QPS, CTL_BURST))}, src/manager/manager.c)")
        limit_text = para(
            f"The controller's API client is limited to {limited_to}. That limit is the "
            "controller's own client-side rate limiter (`--kube-api-qps`/`--kube-api-burst` "
            "above); the API server's "
            "own limits (`--max-requests-inflight`, `--max-mutating-requests-inflight`, "
            "API priority and fairness) are left at their defaults"
            + (", the same in every run" if multi else "") + ". Every phase below needs a "
            "few writes per AppWrapper, so the limiter alone makes a phase last about its "
            "requests over the qps (the burst aside); "
            "the request rates, the time the limiter alone needs for each phase's requests"
            + (" at the run's qps" if multi else "") + ", and the CPU seconds show whether "
            "the limiter or something else bounds the phase times.") + "\n"
        make = ("`make bench BENCH_PARTS=appwrapper BENCH_APPWRAPPER_QPS="
                + ",".join(limit_spec(lim) for lim in run_limits) + "`")
        command = para(
            "Command: " + make.replace(" ", "\N{NO-BREAK SPACE}") + f" (sizes {parts}"
            + (", each size at every limit in turn" if multi else "")
            + f"; the part took {minutes} min in all, including setup and cleanup of each "
            "namespace).") + "\n"
    per = "run" if multi else "size"
    if 20000 in sizes:
        r20 = [r for r in res if r["size"] == 20000]
        command += para(
            "20,000 AppWrappers are opt-in (`BENCH_APPWRAPPER_SIZES=1000,5000,20000`, as "
            f"here): that size alone took {max(r['part_s'] for r in r20) / 60:.0f} min, "
            "too long for every run of the part.") + "\n"
    elif 5000 in sizes:
        r5 = [r for r in res if r["size"] == 5000]
        est = max(r["part_s"] for r in r5) * 4 / 60
        command += para(
            "20,000 AppWrappers are opt-in (`BENCH_APPWRAPPER_SIZES=1000,5000,20000`): "
            f"at the 5,000 run's pace ({max(r['part_s'] for r in r5) / 60:.0f} min) one takes "
            f"about {est:.0f} min (the phases grow linearly with N here), too long for every "
            "run of the part.") + "\n"
    workers = "/".join(str(w) for w in sorted({workers_of(r) for r in res}))
    workers_from = ("`--concurrent-appwrapper-syncs`" if any(r.get("syncs") for r in res)
                    else "the binary's default, src/appwrapper/controller.c")
    adm = [r.get("admission", False) for r in res]
    if all(adm):
        admission_text = (
            "the API server's admission policies (manifests/admission, installed by the run "
            "with `kubectl apply -k`, their ConfigMap in `steadfast-system`, docs/admission.md) "
            "set `spec.suspend=true` and add the finalizer at create, as in production; the "
            "controller moves each to Suspended.")
    elif not any(adm):
        admission_text = (
            "no admission policies are installed (`BENCH_APPWRAPPER_ADMISSION=false`): the "
            "controller's first reconcile sets `suspend=true`, adds its finalizer (one metadata "
            "patch more per AppWrapper than in production) and moves each to Suspended.")
    else:
        admission_text = ("admission policies installed in some runs only (see each raw "
                          "line's `admission`).")
    for_each = ("size and client limit, in one run: N AppWrappers,\n" if multi
                else "size, in one run: N AppWrappers, ")
    doc = f"""{SECTION_TITLE}

Written by `make bench` (`BENCH_PARTS=appwrapper`, tools/bench_appwrapper.py).
Date: {datetime.date.today()}. Machine: {benchlib.machine()}; a local API
server started by the run ({benchlib.SERVER_VERSIONS};
kube-controller-manager with the Job controller and the garbage collector,
{kcm_text(res)};
no scheduler, no kubelet: pods stay Pending).

The controller itself, `build/steadfast`, two replicas of the same binary
with the same flags and the same Lease (in the namespace), watching one
fresh namespace per {per}: the leader, and a follower started once the
leader leads (a warm standby: it runs the same informers; stopped first at
the end, so it never leads):

{cmd}
For each {for_each}each wrapping one batch/v1 Job
(one pod, 10m CPU request, restartPolicy Never), created with
`spec.suspend=false` and the annotation
`workload.codeflare.dev.appwrapper/warmupGracePeriodDuration: "{WARMUP_GRACE}"`
(pods never start here; with the default 5 min warmup grace the first
AppWrappers admitted of 5,000 were reset for insufficient pods ready
before the last were Running); {admission_text} Then the driver plays Kueue: it
admits all of them as fast as it can (merge PATCH
`{{"spec":{{"suspend":false}}}}`, {res[0]['concurrency']} requests in flight) and follows the
phases with one watch (no polling) until every AppWrapper is Running.
Then it deletes them all and waits until they are gone (finalizer removed),
so deletion is part of the lifecycle. Admission is at the API server's
pace: the admit PATCHes take the time shown, the controller works through
the queue while they land.

- admit -> Job created: per AppWrapper, from the ResponseComplete
  `stageTimestamp` of its admit PATCH to that of the controller's
  `create jobs` (201) of its Job, both from the API server's audit log
  (microseconds, one clock). Percentiles are nearest-rank.
- admit -> Running: the PATCH response read by the driver to the watch
  event showing phase Running (includes the watch's delivery).
- requests: every audited request with a user agent starting
  `steadfast/` in the namespace, from start to stop (leases included),
  divided by N. Watches and lists are counted once each.
- reconciles, reconcile time, work queue depth: the controller's own
  `/metrics` (served on a free loopback port, read at each phase
  boundary; the depth once a second). A reconcile's time runs from the
  queue pop until its writes are answered, so it includes the wait for the
  client's rate limiter; at most {workers} run at once
  ({workers_from}).
- RSS and CPU: `VmHWM`/`VmRSS` from `/proc/PID/status` and utime+stime
  from `/proc/PID/stat` of the controller, read at each phase boundary
  (and every 250 ms); idle = 2 s after its `reconciling` log line, caches
  synced on an empty namespace.

{limit_text}
{command}
"""
    doc += hdr
    doc += row("controller start -> `reconciling`", lambda r: f"{r['start_to_reconciling_s']:.2f} s")
    doc += row("create N (driver, POSTs answered)", lambda r: f"{r['create_requests_s']:.1f} s")
    doc += row("create -> all Suspended", lambda r: f"{r['create_to_all_suspended_s']:.1f} s")
    doc += row("admit N (driver, PATCHes answered)", lambda r: f"{r['admit_requests_s']:.1f} s")
    doc += row("**first admit -> all Running**", lambda r: f"**{r['admit_to_all_running_s']:.1f} s**")
    doc += row("first admit -> last Job created (audit)",
               lambda r: f"{r.get('first_admit_to_last_job_create_s', 0):.1f} s")
    if any(r["admit_to_job_create_ms"].get("n") != r["size"] for r in res):
        doc += row("  AppWrappers with both audit records (admit, Job create)",
                   lambda r: f"{r['admit_to_job_create_ms']['n']}")
    doc += row("**admit -> Job created, p50 / p99**",
               lambda r: f"**{r['admit_to_job_create_ms']['p50'] / 1000:.2f} s / "
                         f"{r['admit_to_job_create_ms']['p99'] / 1000:.2f} s**")
    doc += row("admit -> Running (watch), p50 / p99",
               lambda r: f"{r['admit_to_running_ms']['p50'] / 1000:.2f} s / "
                         f"{r['admit_to_running_ms']['p99'] / 1000:.2f} s")
    doc += row("delete -> all gone", lambda r: f"{r['delete_to_all_gone_s']:.1f} s")
    doc += row("controller requests/s: create, admit, delete phase",
               lambda r: f"{rps(r, 'create')}, {rps(r, 'admit')}, {rps(r, 'delete')}")
    doc += row("  the same phases at the run's qps alone (requests / qps)" if multi else
               f"  the same phases at {q1} qps alone (requests / {q1})",
               lambda r: ", ".join(f"{limited(r, p):.1f} s" for p in ("create", "admit", "delete")))
    doc += row("reconciles per AppWrapper: create, admit, delete phase",
               lambda r: ", ".join(f"{r.get('reconciles_by_phase', {}).get(p, 0) / r['size']:.1f}"
                                   for p in ("create", "admit", "delete")))
    doc += row("mean reconcile (queue pop to plan carried out): create, admit, delete",
               lambda r: ", ".join(f"{r.get('reconcile_ms_mean_by_phase', {}).get(p, 0):.0f} ms"
                                   for p in ("create", "admit", "delete")))
    doc += row("largest work queue depth seen (1 s samples)",
               lambda r: f"{r.get('workqueue_depth_max', 0)}")
    doc += row("**API requests per AppWrapper lifecycle**",
               lambda r: f"**{sum(r['requests'].values()) / r['size']:.2f}**")
    doc += row("  of which writes (create, patch, update, delete)",
               lambda r: f"{per_aw(r, [k for k in r['requests'] if k.split()[0] in ('create', 'patch', 'update', 'delete')]):.2f}")
    doc += row("**peak RSS (VmHWM) over the run**", lambda r: f"**{mib(r['final']['hwm_kib'])}**")
    doc += row("  VmHWM when all Suspended / Running / gone",
               lambda r: " / ".join(mib(r["hwm_kib_by_phase"][k]) for k in ("suspended", "running", "gone")))
    doc += row("**CPU (utime+stime) over the run**", lambda r: f"**{r['final']['cpu_s']:.2f} s**")
    doc += row("  CPU in create / admit / delete phase",
               lambda r: " / ".join(f"{r['cpu_s_by_phase'][k]:.2f}" for k in ("create", "admit", "delete")) + " s")
    doc += row("  CPU per AppWrapper lifecycle",
               lambda r: f"{r['final']['cpu_s'] / r['size'] * 1000:.2f} ms")
    doc += row("idle after sync: RSS / VmHWM / CPU",
               lambda r: f"{mib(r['idle']['rss_kib'])} / {mib(r['idle']['hwm_kib'])} / {r['idle']['cpu_s']:.2f} s")
    doc += row(f"whole {per} (namespace to cleanup)", lambda r: f"{r['part_s']:.0f} s")
    # efficiency against the ceiling part of the same run
    doc += row("controller working time: create -> all Suspended + first admit -> all "
               "Running + delete -> all gone", lambda r: f"{lifecycle_s(r):.1f} s")
    doc += row("lifecycles/s (N / working time)", lambda r: f"{r['size'] / lifecycle_s(r):.1f}")
    doc += row("controller writes/s over the working time (lifecycles/s x writes per lifecycle)",
               lambda r: f"{writes_of(r) / lifecycle_s(r):.1f}")
    doc += row("the API server's writes per lifecycle in the working time, every client: "
               "controller / user / kube-controller-manager",
               lambda r: f"{all_writes_per_lifecycle(r):.2f}: " + " / ".join(
                   f"{r['writes_in_working_time'].get(k, 0) / r['size']:.2f}"
                   for k in ("controller", "user", "kube-controller-manager")))
    doc += row("the API server's writes/s over the working time (lifecycles/s x those)",
               lambda r: f"{all_writes_rate(r):.1f}")
    if ceil and ceil.get("best_all_writes_rps"):
        # every run against ceil_of(r): with one ceiling per size, its
        # value goes in each cell; with one for all, in the row's label
        def noted(v, note):
            return f"{v} ({note})" if each else v

        def ff_cell(r):
            ff = full_fanout(ceil_of(r))
            return (noted(f"{efficiency_full_fanout(r, ceil_of(r)):.2f}",
                         f"{ff['all_writes_rps_sustained']:.0f} at {ff['inflight']}")
                    if ff else "n/a")
        ff = full_fanout(ceil)
        if each:
            eff_label = ("**efficiency: the API server's writes/s / the ceiling measured right "
                         "after that size (its writes/s, every client, in brackets; below)**")
            ff_label = ("  the same against that ceiling's best level whose watches all kept up "
                        "(writes/s at requests in flight: the runs' watch fan-out)")
            mix_label = ("  the controller's and the user's requests/s / the loader's best there "
                         "(its requests/s; kube-controller-manager falls behind there)")
        else:
            eff_label = (f"**efficiency: the API server's writes/s / ceiling "
                         f"({ceil['best_all_writes_rps']:.0f} writes/s, every client, below)**")
            ff_label = (f"  the same against the best level whose watches all kept up "
                        f"({ff['all_writes_rps_sustained']:.0f} writes/s at {ff['inflight']} in "
                        f"flight: the runs' watch fan-out)"
                        if ff and ff["all_writes_rps_sustained"] < ceil["best_all_writes_rps"]
                        else None)
            mix_label = (f"  the controller's and the user's requests/s / the loader's best "
                         f"({ceil['best_rps']:.0f}/s of the same requests; kube-controller-manager "
                         f"falls behind there)")
        doc += row(eff_label, lambda r: noted(f"**{efficiency(r, ceil_of(r)):.2f}**",
                                             f"{ceil_of(r)['best_all_writes_rps']:.0f}"))
        if ff_label:
            doc += row(ff_label, ff_cell)
        doc += row(mix_label, lambda r: noted(f"{efficiency_lifecycle_mix(r, ceil_of(r)):.2f}",
                                             f"{ceil_of(r)['best_rps']:.0f}"))
        doc += row("  the controller's writes alone / the loader's best (at most 9 / 12 = 0.75: "
                   "the user's 3 requests share the server)",
                   lambda r: f"{efficiency_controller_alone(r, ceil_of(r)):.2f}")
    if ceil and ceil.get("best_all_writes_rps"):
        doc += row("  cores busy on the machine (of 2): create, admit, delete phase",
                   lambda r: ", ".join(f"{r['cores_by_phase'][p]['machine']:.2f}"
                                       for p in ("create", "admit", "delete")))
        doc += row("  of which kube-apiserver / etcd / kube-controller-manager / this driver, "
                   "admit phase",
                   lambda r: " / ".join(f"{r['cores_by_phase']['admit'][k]:.2f}" for k in
                                        ("kube-apiserver", "etcd", "kube-controller-manager",
                                         "driver")))
    else:
        doc += row("**efficiency (writes/s / ceiling)**", lambda r: "n/a (no ceiling part)")

    def split(key):
        def f(r):
            sp = r.get("split_by_phase")
            if not sp:
                return "n/a"
            v = [sp[p].get(key) for p in ("create", "admit", "delete")]
            return "n/a" if all(x is None for x in v) else ", ".join(
                "n/a" if x is None else f"{x:.1f} ms" for x in v)
        return f
    doc += row("mean queue wait per reconcile (workqueue_queue_duration): create, admit, delete",
               split("queue_wait_ms"))
    doc += row("mean work per reconcile (workqueue_work_duration): create, admit, delete",
               split("work_ms"))
    doc += row("mean rate-limiter wait per request (rest_client_rate_limiter_duration): "
               "create, admit, delete", split("rate_limit_wait_ms"))
    doc += row("mean API latency per request (rest_client_request_duration): create, admit, "
               "delete", split("api_latency_ms"))
    # memory: leader and follower
    doc += row("**bytes per AppWrapper, leader: (VmHWM at all Running - idle) / N**",
               lambda r: f"**{r['bytes_per_aw_running'] / 1024:.1f} KiB**")
    prev = {}
    between = {}
    for r in res:  # sorted by size, then limit
        lim = limit_of(r)
        if lim in prev:
            a = prev[lim]
            between[id(r)] = ((r["hwm_kib_by_phase"]["running"] - a["hwm_kib_by_phase"]["running"])
                              * 1024 / (r["size"] - a["size"]), a["size"])
        prev[lim] = r
    doc += row("  between sizes: (VmHWM at all Running - the same at the size before) / "
               "(difference in N)",
               lambda r: f"{between[id(r)][0] / 1024:.1f} KiB (from {between[id(r)][1]})"
               if id(r) in between else "-")
    doc += row("  steadfast_cache_bytes at all Running (sum over resources)",
               lambda r: mib(sum(r["cache_bytes_running"].values()) / 1024)
               if r.get("cache_bytes_running") else "n/a")
    doc += row("**follower: peak RSS (VmHWM) / VmRSS at the end**",
               lambda r: f"**{mib(r['follower']['final']['hwm_kib'])}** / "
                         f"{mib(r['follower']['final']['rss_kib'])}")
    doc += row("  follower VmHWM idle / all Suspended / Running / gone",
               lambda r: " / ".join(mib(r["follower"]["hwm_kib_by_phase"][k])
                                    for k in ("idle", "suspended", "running", "gone")))
    doc += row("  follower bytes per AppWrapper: (VmHWM at all Running - idle) / N",
               lambda r: f"{r['follower']['bytes_per_aw_running'] / 1024:.1f} KiB")
    doc += row("  follower steadfast_cache_bytes at all Running (sum over resources)",
               lambda r: mib(sum(r["follower"]["cache_bytes_running"].values()) / 1024)
               if r["follower"].get("cache_bytes_running") else "n/a")
    doc += row("  follower CPU over the run", lambda r: f"{r['follower']['final']['cpu_s']:.2f} s")

    doc += "\nWhat bounded the admit phase (first admit to all Running), per run:\n\n"
    for r in res:
        dur = r["admit_to_all_running_s"]
        rate = r["requests_per_s_by_phase"]["admit"]
        mean = r.get("reconcile_ms_mean_by_phase", {}).get("admit", 0)
        recs = r.get("reconciles_by_phase", {}).get("admit", 0)
        cpu = r["cpu_s_by_phase"]["admit"]
        q = r.get("qps", CTL_QPS)
        if not (dur and mean):
            continue
        doc += (f"- {name(r)}: {rate:.0f} requests/s against a client limit of {q} qps; "
                f"{recs / dur:.0f} reconciles/s, and {workers_of(r)} in flight / {mean:.0f} ms "
                f"each = {workers_of(r) * 1000 / mean:.0f}/s; controller CPU "
                f"{cpu / dur * 100:.0f}% of one core. ")
        if rate >= 0.9 * q:
            doc += "The client limiter bounds it: each reconcile's time is mostly its wait for a token.\n"
        else:
            doc += (f"Below the limit: the {workers_of(r)} reconciles in flight each wait on "
                    "their API writes (the API server, etcd and the driver share the "
                    "machine's cores), which bounds the rate.\n")
    doc += ceiling_text(ceils, res, ceil_of)
    doc += "\nRequests of the controller per AppWrapper, by verb and resource " \
           "(create / admit / delete: the phase the request fell in; startup: before the first create):\n\n"
    # event writes are listed even when there were none
    keys = sorted({k for r in res for k in r["requests"]} | {"create events", "patch events"},
                  key=lambda k: (k.split()[1], k.split()[0]))
    doc += "| request | " + " | ".join(
        f"{name(r)}: per AW | {name(r)}: create / admit / delete / startup" for r in res) + " |\n"
    doc += "|---|" + "---|---|" * len(res) + "\n"
    for k in keys:
        cells = []
        for r in res:
            c = r["requests"].get(k, 0)
            bp = r["requests_by_phase"]
            split = " / ".join(str(bp.get(p, {}).get(k, 0)) for p in ("create", "admit", "delete", "startup"))
            cells += [f"{c / r['size']:.3f}", split]
        doc += f"| {k} | " + " | ".join(cells) + " |\n"
    doc += "| **total** | " + " | ".join(
        f"**{sum(r['requests'].values()) / r['size']:.2f}** | " + " / ".join(
            str(sum(r["requests_by_phase"].get(p, {}).values())) for p in ("create", "admit", "delete", "startup"))
        for r in res) + " |\n"
    errs = [(name(r), r["requests_non2xx"]) for r in res if r["requests_non2xx"]]
    if errs:
        doc += "\nAnswers other than 2xx: " + "; ".join(
            f"{n}: " + ", ".join(f"{k} x{v}" for k, v in e.items()) for n, e in errs) + ".\n"
    else:
        doc += "\nEvery request of the controller was answered 2xx.\n"
    doc += "\n" + JUSTIFY + """
Comparison: a side-by-side run of the upstream Go controller
(project-codeflare/appwrapper) on the same API server is future work; these
are Steadfast's numbers alone.
"""
    doc += benchlib.raw_results(res + ceils, per + " (the ceiling parts last)")
    benchlib.write_section(args.section, doc)
    return 0


def main():
    ap, r, _ = benchlib.arg_parser()
    r.add_argument("--kubeconfig", required=True)
    r.add_argument("--audit-log", required=True)
    r.add_argument("--steadfast", required=True)
    r.add_argument("--sizes", default="1000,5000")
    r.add_argument("--qps", default=str(CTL_QPS),
                   help='client limits, comma-separated, each "Q" (burst 2*Q) or "Q/B"')
    r.add_argument("--concurrency", type=int, default=32)
    r.add_argument("--admission", type=lambda v: v.lower() in ("1", "true", "yes"),
                   default=True, help="install manifests/admission (true|false)")
    r.add_argument("--syncs", type=int, default=0,
                   help="--concurrent-appwrapper-syncs for the controller (0: not passed)")
    r.add_argument("--awload", default=os.path.join(ROOT, "build", "bench", "awload"))
    r.add_argument("--ceiling-levels", default="16,64,256,500",
                   help='in-flight levels of the ceiling part ("": no ceiling part)')
    r.add_argument("--ceiling-objects", type=int, default=500)
    r.add_argument("--etcd", default=os.environ.get("STEADFAST_ETCD", ""),
                   help="etcd's client URL: compacted and defragmented before each part")
    r.add_argument("--ceiling-after", choices=("each", "last"), default="each",
                   help="the ceiling part after each size, or once after the largest")
    r.add_argument("--ceiling-watch", default="3,2,2",
                   help="watches of AppWrappers, Jobs and pods the loader keeps open, as the "
                        "controller runs' watchers: the leader's and the follower's informers "
                        "and the driver's AppWrapper watch (\"\": none)")
    r.add_argument("--logdir", default=".")
    r.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.cmd == "run":
        try:
            args.limits = parse_limits(args.qps)
        except ValueError as e:
            ap.error(f"--qps: {e}")
    if args.cmd == "report":
        return cmd_report(args)
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
