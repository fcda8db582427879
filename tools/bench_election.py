#!/usr/bin/env python3
"""Leader-election failover benchmark (part of make bench; see tools/bench.sh).

  bench_election.py run --kubeconfig PATH --candidate BIN --clientgo BIN
                        [--trials N] [--concurrency N] [--namespace NS] --out FILE
  bench_election.py report RESULTS.jsonl SECTION.md

run: for each implementation (Steadfast's test/election candidate, the
client-go candidate with ReleaseOnCancel) and each scenario (sigterm,
sigkill), N trials, each on a fresh Lease, several trials at once on
different Leases. Per trial: start candidate A, wait for its LEADING line,
start candidate B, wait until B reports A as the leader, then:

  sigterm: wait a random 0.5-2.5 s, note T (CLOCK_MONOTONIC) and send
           SIGTERM to A; failover = B's LEADING time - T.
  sigkill: wait for a RENEWED line of A, then a random 0.1-1.5 s (less than
           either implementation's renew interval, so no renew is in flight
           when the kill lands), note T and send SIGKILL to A;
           failover = B's LEADING time - A's last renew (its send time);
           also kill -> new leader = B's LEADING time - T.

Both candidates stamp every line with CLOCK_MONOTONIC in ms (the Go one
reads it with clock_gettime(CLOCK_MONOTONIC) too), the clock of
time.clock_gettime(CLOCK_MONOTONIC) here, so times are compared directly.
Prints progress on stderr and one JSON line per trial to --out.

report: turns the JSON lines into the docs/benchmarks.md section.
"""
import concurrent.futures
import datetime
import json
import os
import random
import selectors
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

LEASE_MS, RENEW_MS, RETRY_MS = 15000, 10000, 2000
SECTION_TITLE = "## Leader election: failover"
IMPLS = ("steadfast", "client-go")
SCENARIOS = ("sigterm", "sigkill")


def mono_ms():
    return time.clock_gettime(time.CLOCK_MONOTONIC) * 1000.0


_live = set()
_live_lock = threading.Lock()
log = benchlib.logger("bench-election")


class Cand:
    """One candidate process; its stdout lines parsed as (ms, kind, fields)."""

    def __init__(self, cmd, errpath):
        self.err = open(errpath, "wb")
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.err,
                                  stdin=subprocess.DEVNULL)
        os.set_blocking(self.p.stdout.fileno(), False)
        self.buf = b""
        self.lines = []
        self.eof = False
        with _live_lock:
            _live.add(self.p)

    def feed(self):
        """Reads what is available; returns the new parsed lines."""
        try:
            data = os.read(self.p.stdout.fileno(), 65536)
        except BlockingIOError:
            return []
        if not data:
            self.eof = True
            return []
        self.buf += data
        new = []
        while b"\n" in self.buf:
            raw, self.buf = self.buf.split(b"\n", 1)
            parts = raw.decode(errors="replace").split()
            if len(parts) < 2:
                continue
            try:
                t = float(parts[0])
            except ValueError:
                continue
            fields = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
            ln = (t, parts[1], fields)
            self.lines.append(ln)
            new.append(ln)
        return new

    def stop(self):
        benchlib.terminate(self.p, 10)
        self.p.stdout.close()
        self.err.close()
        with _live_lock:
            _live.discard(self.p)


def wait_for(cands, pred, timeout_s):
    """Reads the candidates' lines until pred(cand, line) is true for a new
    line; returns (cand, line), or None on timeout (pred None: just drain
    for timeout_s)."""
    sel = selectors.DefaultSelector()
    for c in cands:
        if not c.eof:
            sel.register(c.p.stdout.fileno(), selectors.EVENT_READ, c)
    end = time.monotonic() + timeout_s
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            if not sel.get_map():
                time.sleep(min(left, 0.05))
                continue
            for key, _ in sel.select(left):
                c = key.data
                for ln in c.feed():
                    if pred and pred(c, ln):
                        return c, ln
                if c.eof:
                    sel.unregister(key.fileobj)
    finally:
        sel.close()


def trial(args, impl, scen, i, runid, tmp):
    lease = f"bench-{'sf' if impl == 'steadfast' else 'go'}-{scen[3:]}-{i}-{runid}"
    binary = args.candidate if impl == "steadfast" else args.clientgo
    base = [binary, "--kubeconfig", args.kubeconfig, "--namespace", args.namespace,
            "--name", lease, "--lease-duration", str(LEASE_MS), "--renew-deadline",
            str(RENEW_MS), "--retry-period", str(RETRY_MS), "--print-renews",
            "--die-with-parent"]
    res = {"impl": impl, "scenario": scen, "trial": i, "lease": lease}
    a = b = None
    try:
        a = Cand(base + ["--identity", "a"], os.path.join(tmp, f"{lease}-a.err"))
        if not wait_for([a], lambda c, ln: ln[1] == "LEADING", 60):
            raise RuntimeError("A did not lead")
        b = Cand(base + ["--identity", "b"], os.path.join(tmp, f"{lease}-b.err"))
        if not wait_for([a, b], lambda c, ln: c is b and ln[1] == "NEW_LEADER"
                        and ln[2].get("leader") == "a", 60):
            raise RuntimeError("B did not see A lead")
        if scen == "sigterm":
            wait_for([a, b], None, random.uniform(0.5, 2.5))
        else:
            if not wait_for([a, b], lambda c, ln: c is a and ln[1] == "RENEWED", 30):
                raise RuntimeError("A did not renew")
            wait_for([a, b], None, random.uniform(0.1, 1.5))
        if any(ln[1] == "LEADING" for ln in b.lines):
            raise RuntimeError("B led before the signal")
        t = mono_ms()
        a.p.send_signal(signal.SIGTERM if scen == "sigterm" else signal.SIGKILL)
        got = wait_for([a, b], lambda c, ln: c is b and ln[1] == "LEADING", 90)
        if not got:
            raise RuntimeError("B did not take over")
        led = got[1][0]
        if scen == "sigkill":
            a.p.wait(timeout=10)
            wait_for([a], None, 0.2)  # drain what A wrote before it died
            renews = [float(ln[2]["at"]) for ln in a.lines
                      if ln[1] == "RENEWED" and "at" in ln[2]]
            last = max(renews)
            res["failover_ms"] = round(led - last, 3)
            res["kill_to_leader_ms"] = round(led - t, 3)
            res["renew_to_kill_ms"] = round(t - last, 3)
        else:
            res["failover_ms"] = round(led - t, 3)
            rel = [ln[0] for ln in a.lines if ln[1] == "RELEASED"]
            if rel:
                res["signal_to_released_ms"] = round(rel[0] - t, 3)
    except Exception as e:  # a failed trial is reported, not fatal
        res["error"] = str(e)
    finally:
        for c in (b, a):
            if c:
                c.stop()
    return res


def cmd_run(args):
    runid = benchlib.run_id()
    tmp = args.logdir or os.path.dirname(os.path.abspath(args.out))
    # interleaved: kill trials (long) first, so the short ones fill the gaps
    jobs = []
    for i in range(1, args.trials + 1):
        for scen in ("sigkill", "sigterm"):
            for impl in IMPLS:
                jobs.append((impl, scen, i))
    jobs.sort(key=lambda j: j[1] != "sigkill")
    t0 = time.monotonic()
    fails = 0
    with open(args.out, "a") as out, concurrent.futures.ThreadPoolExecutor(
            max_workers=args.concurrency) as ex:
        futs = [ex.submit(trial, args, impl, scen, i, runid, tmp) for impl, scen, i in jobs]
        for n, f in enumerate(concurrent.futures.as_completed(futs), 1):
            r = f.result()
            out.write(json.dumps(r) + "\n")
            out.flush()
            if "error" in r:
                fails += 1
                log(f"[{n}/{len(jobs)}] {r['impl']} {r['scenario']} #{r['trial']}: "
                    f"FAILED: {r['error']}")
            else:
                extra = (f" (kill -> leader {r['kill_to_leader_ms']:.0f} ms)"
                         if "kill_to_leader_ms" in r else "")
                log(f"[{n}/{len(jobs)}] {r['impl']} {r['scenario']} #{r['trial']}: "
                    f"{r['failover_ms']:.0f} ms{extra}")
    log(f"{len(jobs)} trials in {time.monotonic() - t0:.0f} s, {fails} failed")
    return 1 if fails > len(jobs) // 10 else 0


def cmd_report(args):
    res = benchlib.load_results(args.results)
    res.sort(key=lambda r: (IMPLS.index(r["impl"]), r["scenario"], r["trial"]))
    ok = [r for r in res if "error" not in r]

    def vals(impl, scen, key):
        return [r[key] for r in ok if r["impl"] == impl and r["scenario"] == scen and key in r]

    rows = [("sigterm", "failover_ms", "SIGTERM: signal -> new leader"),
            ("sigkill", "failover_ms", "SIGKILL: last renew -> new leader"),
            ("sigkill", "kill_to_leader_ms", "SIGKILL: kill -> new leader")]
    n_trials = max((r["trial"] for r in res), default=0)
    doc = f"""{SECTION_TITLE}

Written by `make bench` (tools/bench_election.py). Date: {datetime.date.today()}.
Machine: {benchlib.machine()}; a local API server started by the
run ({benchlib.SERVER_VERSIONS}).

Two candidates of one implementation campaign for a fresh Lease (a unique
name per trial, namespace `default`); A starts first and leads, B starts
and follows; then the leader is stopped and the time until B prints that
it leads is measured. Both implementations run with client-go's default
durations: lease duration {LEASE_MS // 1000} s, renew deadline {RENEW_MS // 1000} s, retry period {RETRY_MS // 1000} s.

- Steadfast: `test/election/candidate.c` (sf_elect; releases the Lease on
  SIGTERM).
- client-go: `test/election/clientgo` (leaderelection.RunOrDie with a
  LeaseLock and ReleaseOnCancel, v0.37.2).

Scenarios, {n_trials} trials per implementation and scenario, all in one run,
up to {args.concurrency} trials at once on different Leases, both
implementations interleaved:

- SIGTERM (graceful handover): 0.5-2.5 s after B follows, SIGTERM to A at
  time T; A releases the Lease; failover = B's `LEADING` line - T.
- SIGKILL (crash): after one of A's renews, a random 0.1-1.5 s later (less
  than either renew interval, 5 s for Steadfast and 2 s for client-go, so
  no renew is in flight) SIGKILL to A; failover = B's `LEADING` line - A's
  last successful renew (when it was sent, printed by `--print-renews`;
  the client-go candidate prints it by wrapping its lock's Create/Update).
  Kill -> new leader (B's `LEADING` - the kill) is shown too; it depends
  on where in the renew cycle the kill lands.

Every time is CLOCK_MONOTONIC in ms: both candidates stamp their lines with
it (the Go one calls clock_gettime(CLOCK_MONOTONIC)), and the driver reads
it when it sends the signal. Percentiles are nearest-rank.

| scenario | impl | n | p50 ms | p99 ms | max ms | p50 Steadfast / client-go | p99 Steadfast / client-go |
|---|---|---|---|---|---|---|---|
"""
    stats = {}
    for scen, key, label in rows:
        for impl in IMPLS:
            v = vals(impl, scen, key)
            stats[(scen, key, impl)] = ((len(v), benchlib.pct(v, 50), benchlib.pct(v, 99), max(v))
                                        if v else None)
        for impl in IMPLS:
            s = stats[(scen, key, impl)]
            if impl == "steadfast":
                sf, go = s, stats[(scen, key, "client-go")]
                r50 = f"{sf[1] / go[1]:.2f}" if sf and go and go[1] else "-"
                r99 = f"{sf[2] / go[2]:.2f}" if sf and go and go[2] else "-"
            else:
                r50 = r99 = ""
            if s:
                doc += (f"| {label} | {impl} | {s[0]} | {s[1]:.0f} | {s[2]:.0f} | {s[3]:.0f} "
                        f"| {r50} | {r99} |\n")
            else:
                doc += f"| {label} | {impl} | 0 | - | - | - | {r50} | {r99} |\n"
    failed = [r for r in res if "error" in r]
    if failed:
        doc += f"\n{len(failed)} trial(s) failed and are not counted: " + "; ".join(
            f"{r['impl']} {r['scenario']} #{r['trial']}: {r['error']}" for r in failed) + ".\n"

    def verdict(s, limit, words=("holds", "MISSED")):
        if not s:
            return "not measured"
        return f"p99 {s[2]:.0f} ms: {words[0] if s[2] <= limit else words[1]}"

    cg = ("within", "over")

    g_lim, c_lim = 500, LEASE_MS + 500
    doc += f"""
Targets (election issue), for Steadfast:

- graceful handover p99 <= {g_lim} ms: {verdict(stats[('sigterm', 'failover_ms', 'steadfast')], g_lim)}
  (client-go: {verdict(stats[('sigterm', 'failover_ms', 'client-go')], g_lim, cg)}; its waiting
  candidate only retries every retry period with jitter, 2-4.4 s).
- crash failover p99 <= lease duration + 500 ms = {c_lim} ms after the last renew:
  {verdict(stats[('sigkill', 'failover_ms', 'steadfast')], c_lim)}
  (client-go: {verdict(stats[('sigkill', 'failover_ms', 'client-go')], c_lim, cg)}).
"""
    doc += benchlib.raw_results(res, "trial")
    benchlib.write_section(args.section, doc)
    return 0


def main():
    ap, r, p = benchlib.arg_parser()
    r.add_argument("--kubeconfig", required=True)
    r.add_argument("--candidate", required=True)
    r.add_argument("--clientgo", required=True)
    r.add_argument("--namespace", default="default")
    r.add_argument("--trials", type=int, default=20)
    r.add_argument("--concurrency", type=int, default=4)
    r.add_argument("--logdir")
    r.add_argument("--out", required=True)
    p.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()
    if args.cmd == "report":
        return cmd_report(args)
    try:
        return cmd_run(args)
    finally:
        with _live_lock:
            for p in list(_live):
                if p.poll() is None:
                    p.kill()


if __name__ == "__main__":
    sys.exit(main())
