#!/usr/bin/python3
"""Concurrent load (issue 11, part 3): N `krmpod generate` at once (64 by default) of a
3-function app against kubesim, prestart on (KRMPOD_PRESTART's default), as Argo CD runs
generate (each in its own session, in-cluster credentials, a private TMPDIR).

    tests/load/load.py [--renders 64] [--krmpod build/krmpod] [--report FILE]

`make load` runs it (not part of `make test`); `make load LOAD_REALKUBE=8` runs the same
check against the real cluster instead (tests/realkube/test_load.py).

Checked, each failure named (exit status 1):
  * every render exits 0 with stdout byte-identical to the direct run of the app
    (tests/fixtures/direct-docker);
  * every render's prestart line says all 3 pods were claimed and none deleted unclaimed
    (`krmpod[prestart]: 3 pods started ahead in X ms, 3 claimed, 0 unclaimed deleted`), and
    the shims created no pod of their own: kubesim's request log holds exactly as many pod
    creations as functions ran (each shim's `image=... exit=0` line);
  * no pod is left at the end.
Measured: render time p50/p99 (from the start of generate to its exit), API requests per
render (kubesim's request log, by kind), the peak of the summed RSS of all krmpod processes
(generate, its prestart janitor, the shims: every process whose executable is the binary
under test, sampled from /proc every 50 ms), pods created vs functions run. A table on
stdout, and build/load/report.json.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "soak"))
sys.path.insert(0, os.path.join(HERE, ".."))
import soaklib  # noqa: E402
from apptrees import three_function_app  # noqa: E402
from soaklib import ROOT  # noqa: E402

PRESTART = re.compile(r"krmpod\[prestart\]: (\d+) pods started ahead in (\d+) ms, (\d+) claimed, "
                      r"(\d+) unclaimed deleted")
FUNCTION_LINE = re.compile(r"krmpod\[docker\] pod=\S+: image=(\S+) .* exit=(-?\d+) requests=(\d+)")
FUNCTIONS = 3


class RssSampler(threading.Thread):
    """Sums VmRSS over every process whose executable is `binary`, every 50 ms; keeps the
    peak (and how many processes made it)."""

    def __init__(self, binary):
        super().__init__(daemon=True)
        self.binary = os.path.realpath(binary)
        self.peak_kb, self.peak_procs, self.max_procs = 0, 0, 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            total, n = 0, 0
            for d in os.listdir("/proc"):
                if not d.isdigit():
                    continue
                try:
                    if os.readlink("/proc/%s/exe" % d) != self.binary:
                        continue
                except OSError:
                    continue
                total += soaklib.rss_kb(int(d))
                n += 1
            if total > self.peak_kb:
                self.peak_kb, self.peak_procs = total, n
            self.max_procs = max(self.max_procs, n)
            self.stop.wait(0.05)


def request_kind(line):
    """The kind of one request.log line (`time METHOD path?query status`)."""
    _, method, path, _ = line.split(" ", 3)
    if "/attach" in path:
        return "attach (WebSocket)"
    if "/log" in path:
        return "GET log"
    if "/events" in path:
        return "watch events" if "watch=" in path else "list events"
    if "watch=" in path:
        return "watch pod"
    if method == "POST" and path.split("?")[0].endswith("/pods"):
        return "POST pod"
    return "%s pod" % method if "/pods" in path else "%s other" % method


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--renders", type=int, default=64)
    ap.add_argument("--krmpod", default=os.path.join(ROOT, "build", "krmpod"))
    ap.add_argument("--report", default=os.path.join(ROOT, "build", "load", "report.json"))
    ap.add_argument("--generate-timeout", default="300s",
                    help="KRMPOD_GENERATE_TIMEOUT (default 300s: 64 renders with 192 "
                         "functions on a 2-core machine load it far more than a repo-server)")
    ap.add_argument("--relist-ms", type=int, default=20,
                    help="kubesim's kubelet relist period (default 20, as tests/integration; "
                         "1000 is a real kubelet's)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    krmpod = os.path.abspath(args.krmpod)
    work = tempfile.mkdtemp(prefix="krmpod-load-")
    sim = soaklib.start_kubesim(os.path.join(work, "kubesim"), krmpod,
                                relist_period_ms=args.relist_ms)
    problems = []
    try:
        sa = soaklib.service_account_dir(sim, os.path.join(work, "sa"))
        app = three_function_app(os.path.join(work, "app"))
        direct = soaklib.direct_render(app, os.path.join(work, "direct"))
        if direct.returncode != 0:
            raise RuntimeError("the direct run failed: %s" % direct.stderr.decode())
        want = direct.stdout
        reqlog = os.path.join(sim.state, "requests.log")
        before = os.path.getsize(reqlog)
        sampler = RssSampler(krmpod)
        sampler.start()
        print("load: %d concurrent renders of a %d-function app, %s, prestart on"
              % (args.renders, FUNCTIONS, args.krmpod), flush=True)
        renders = []
        t_all = time.monotonic()
        for i in range(args.renders):
            d = os.path.join(work, "r%02d" % i)
            os.makedirs(d + "/tmp")
            env = soaklib.cmp_env(sim, sa, d + "/tmp", krmpod,
                                  KRMPOD_GENERATE_TIMEOUT=args.generate_timeout)
            out, err = open(d + "/stdout", "wb"), open(d + "/stderr", "wb")
            t0 = time.monotonic()
            proc = subprocess.Popen([krmpod, "generate"], cwd=app, env=env,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)
            renders.append({"i": i, "dir": d, "proc": proc, "t0": t0, "files": (out, err)})
        pending = list(renders)
        while pending:
            for r in list(pending):
                if r["proc"].poll() is not None:
                    r["took"] = time.monotonic() - r["t0"]
                    pending.remove(r)
            time.sleep(0.01)
        wall = time.monotonic() - t_all
        sampler.stop.set()
        sampler.join()
        # --- what each render did
        functions_run, shim_requests, prestart = 0, 0, []
        started_ahead = {"started": 0, "claimed": 0, "unclaimed_deleted": 0}
        for r in renders:
            for f in r["files"]:
                f.close()
            with open(r["dir"] + "/stdout", "rb") as f:
                out = f.read()
            with open(r["dir"] + "/stderr") as f:
                err = f.read()
            tag = "render %d" % r["i"]
            if r["proc"].returncode != 0:
                problems.append("%s: exit %d: %s" % (tag, r["proc"].returncode,
                                                     err.strip().splitlines()[-1:]))
            elif out != want:
                problems.append("%s: exit 0 but %d bytes differ from the direct run's %d"
                                % (tag, len(out), len(want)))
            fns = FUNCTION_LINE.findall(err)
            functions_run += len(fns)
            shim_requests += sum(int(n) for _, _, n in fns)
            m = PRESTART.search(err)
            if not m:
                problems.append("%s: no prestart line on stderr" % tag)
                continue
            started, ms, claimed, deleted = (int(x) for x in m.groups())
            prestart.append(ms)
            started_ahead["started"] += started
            started_ahead["claimed"] += claimed
            started_ahead["unclaimed_deleted"] += deleted
            if (started, claimed, deleted) != (FUNCTIONS, FUNCTIONS, 0):
                problems.append("%s: %s" % (tag, m.group(0)))
        with open(reqlog) as f:
            f.seek(before)
            lines = [l for l in f.read().splitlines() if l.strip()]
        kinds = {}
        for l in lines:
            k = request_kind(l)
            kinds[k] = kinds.get(k, 0) + 1
        pods_created = sum(1 for l in lines
                           if request_kind(l) == "POST pod" and l.endswith(" 201"))
        if pods_created != functions_run:
            problems.append("%d pods created for %d functions run" % (pods_created,
                                                                      functions_run))
        if functions_run != FUNCTIONS * args.renders:
            problems.append("%d functions ran, not %d" % (functions_run,
                                                           FUNCTIONS * args.renders))
        t_left = time.monotonic()
        while sim.pods() and time.monotonic() - t_left < 5:
            time.sleep(0.1)
        left = sim.pods()
        if left:
            problems.append("pods left at the end: %s" % left)
        times = [r["took"] for r in renders]
        rep = {
            "renders": args.renders,
            "functions_per_render": FUNCTIONS,
            "krmpod": args.krmpod,
            "kubesim_relist_ms": args.relist_ms,
            "wall_s": round(wall, 2),
            "render_s": {"p50": round(soaklib.percentile(times, 50), 2),
                         "p99": round(soaklib.percentile(times, 99), 2),
                         "min": round(min(times), 2), "max": round(max(times), 2)},
            "api_requests": len(lines),
            "api_requests_per_render": round(len(lines) / args.renders, 1),
            "api_requests_by_kind": dict(sorted(kinds.items())),
            "shim_reported_requests_per_function": round(shim_requests / max(1, functions_run),
                                                         1),
            "peak_rss_all_krmpod_kib": sampler.peak_kb,
            "processes_at_peak": sampler.peak_procs,
            "max_krmpod_processes": sampler.max_procs,
            "pods_created": pods_created,
            "functions_run": functions_run,
            # generate's prestart line: "N pods started ahead in X ms" (X: the janitor's
            # whole life, from generate's start to its last delete)
            "prestart_pods": started_ahead,
            "prestart_janitor_ms": {"p50": soaklib.percentile(prestart, 50),
                                    "p99": soaklib.percentile(prestart, 99)},
            "byte_exact_renders": sum(1 for r in renders if r["proc"].returncode == 0) -
            sum(1 for p in problems if "differ" in p),
            "pods_left": len(left),
            "problems": problems,
        }
        os.makedirs(os.path.dirname(os.path.abspath(args.report)), exist_ok=True)
        with open(args.report, "w") as f:
            json.dump(rep, f, indent=1, sort_keys=True)
        print_table(rep)
        print("load: report in %s" % args.report)
        for p in problems:
            print("load: FAIL: %s" % p)
        print("load: %s" % ("FAILED" if problems else "ok"))
        return 1 if problems else 0
    finally:
        sim.stop()
        if args.keep:
            print("load: kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def print_table(rep):
    rows = [
        ("renders", "%d concurrent, %d functions each" % (rep["renders"],
                                                          rep["functions_per_render"])),
        ("wall", "%.1f s for all" % rep["wall_s"]),
        ("render time", "p50 %.2f s, p99 %.2f s (min %.2f, max %.2f)" % (
            rep["render_s"]["p50"], rep["render_s"]["p99"], rep["render_s"]["min"],
            rep["render_s"]["max"])),
        ("byte-exact", "%d of %d" % (rep["byte_exact_renders"], rep["renders"])),
        ("API requests", "%d, %.1f per render (%.1f per function as the shims count them)"
         % (rep["api_requests"], rep["api_requests_per_render"],
            rep["shim_reported_requests_per_function"])),
        ("  by kind", ", ".join("%s %d" % kv for kv in rep["api_requests_by_kind"].items())),
        ("peak RSS", "%.1f MiB summed over %d krmpod processes (at most %d at once)" % (
            rep["peak_rss_all_krmpod_kib"] / 1024.0, rep["processes_at_peak"],
            rep["max_krmpod_processes"])),
        ("pods", "%d created, %d functions run, %d left" % (
            rep["pods_created"], rep["functions_run"], rep["pods_left"])),
        ("prestart", "%d pods started ahead, %d claimed, %d unclaimed deleted" % (
            rep["prestart_pods"]["started"], rep["prestart_pods"]["claimed"],
            rep["prestart_pods"]["unclaimed_deleted"])),
    ]
    print()
    for k, v in rows:
        print("  %-14s %s" % (k, v))
    print()


if __name__ == "__main__":
    sys.exit(main())
