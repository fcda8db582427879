"""Shared helpers of the make bench drivers (tools/bench_election.py,
tools/bench_appwrapper.py; see tools/bench.sh): progress logging, the
command line, stopping a child process, nearest-rank percentiles, and
writing a docs/benchmarks.md section (machine info, raw results block).
Standard library only; each driver puts its own directory on sys.path to
import it.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading

# the control plane tools/with-cluster.sh starts, as each section names it
SERVER_VERSIONS = "kube-apiserver v1.37.2, etcd v3.7.3"

_print_lock = threading.Lock()


def logger(prefix):
    """A log(msg) that prints "PREFIX: msg" on stderr, one line at a time
    from any thread."""
    def log(msg):
        with _print_lock:
            print(f"{prefix}: {msg}", file=sys.stderr, flush=True)
    return log


def run_id():
    """A short id for the names (Leases, namespaces) of this run."""
    return f"{os.getpid() % 100000}"


def arg_parser():
    """The drivers' command line: `run` (the caller adds its options) and
    `report RESULTS SECTION`. Returns (parser, run parser, report parser)."""
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    report = sub.add_parser("report")
    report.add_argument("results")
    report.add_argument("section")
    return ap, run, report


def terminate(p, timeout):
    """Stops the child process p: SIGTERM, then SIGKILL if it has not exited
    within timeout seconds."""
    if p.poll() is None:
        try:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def pct(v, p):
    """Nearest-rank percentile; None for no values."""
    s = sorted(v)
    if not s:
        return None
    k = max(1, -(-len(s) * p // 100))
    return s[int(k) - 1]


def cpu_model():
    """The first "model name" of /proc/cpuinfo, or ""."""
    try:
        for ln in open("/proc/cpuinfo"):
            if ln.startswith("model name"):
                return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def machine():
    """The machine as a section states it: "N cores, CPU MODEL"."""
    return f"{os.cpu_count()} cores, {cpu_model()}"


def load_results(path):
    """The results file of a run: one JSON object a line."""
    return [json.loads(ln) for ln in open(path) if ln.strip()]


def raw_results(res, per):
    """The end of a section: the results, one JSON line per `per`, in a
    code block."""
    return (f"\nRaw results (one JSON line per {per}):\n\n```\n"
            + "".join(json.dumps(r) + "\n" for r in res) + "```\n")


def write_section(path, doc):
    """Writes the section to path (bench.sh puts it into docs/benchmarks.md)
    and prints it."""
    with open(path, "w") as f:
        f.write(doc)
    print(doc)
