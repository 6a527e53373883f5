#!/usr/bin/python3
"""make bench: krmpod against kubesim with injected pod-start latency, side by side with a
kubectl-based runner (the sequence of kustomize PR 4260), in one run on one machine.

For each latency L and each runner it runs the `cat` fixture N times on a small ResourceList
and reports medians of: wall time, client CPU time (user+sys of the runner and everything it
started), peak RSS, and API requests (from kubesim's request log). "Overhead" is wall time
minus L minus the time the function itself takes when run directly."""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
# kubesim runs KRMPOD_HELPER_IMAGE (exec mode's installer, mounts) as the binary named by
# KRMPOD_BIN (tests/integration/conftest.py): the one under bench, not the test build's
os.environ["KRMPOD_BIN"] = os.path.abspath(
    sys.argv[sys.argv.index("--krmpod") + 1] if "--krmpod" in sys.argv[:-1]
    else os.path.join(ROOT, "build", "krmpod"))
from conftest import IMAGES, KUSTOMIZE_RUN, Kubesim, exec_settings  # noqa: E402

MEASURE = os.path.join(ROOT, "build", "bench", "measure")
INPUT = (b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
         + b"".join(b"- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm%d\n" % i
                    for i in range(50)))


def run_measured(argv, env, label=""):
    """Runs argv with INPUT on stdin under bench/measure (a small parent: ru_maxrss survives
    exec, so a child forked from this Python process would report Python's RSS); returns
    (wall s, cpu s, maxrss KiB). CPU and RSS cover the runner and every process it waited
    for."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as inp, \
            tempfile.NamedTemporaryFile("r") as tf:
        inp.write(INPUT)
        inp.seek(0)
        t0 = time.monotonic()
        p = subprocess.run([MEASURE, tf.name] + argv,
                           stdin=inp, stdout=out, stderr=subprocess.PIPE, env=env)
        wall = time.monotonic() - t0
        out.seek(0)
        data = out.read()
        user, sys_, rss = tf.read().split()[-3:]
    if p.returncode != 0 or data != INPUT:
        raise SystemExit("bench: %s%s failed (%d): %s" % (
            label + ": " if label else "", argv[0], p.returncode, p.stderr.decode()))
    return wall, (int(user) + int(sys_)) / 1e6, int(rss)


def bench_hooks(sim, krmpod, state, n):
    """The plugin hooks on examples/demo-app (two functions), as Argo CD runs them: in-cluster
    credentials, kubectl kustomize as kustomize. Returns medians in ms."""
    sim.faults(start_latency_ms=0)
    sa = os.path.join(state, "sa")
    os.makedirs(sa, exist_ok=True)
    shutil.copy(os.path.join(state, "token"), os.path.join(sa, "token"))
    shutil.copy(os.path.join(state, "ca.crt"), os.path.join(sa, "ca.crt"))
    with open(os.path.join(sa, "namespace"), "w") as f:
        f.write("default")
    env = {"PATH": os.environ["PATH"], "HOME": state, "TMPDIR": state,
           "KUBERNETES_SERVICE_HOST": sim.host, "KUBERNETES_SERVICE_PORT": str(sim.port),
           "KRMPOD_SERVICEACCOUNT_DIR": sa, "KRMPOD_KUSTOMIZE": "kubectl kustomize",
           "KRMPOD_LOG_LEVEL": "warn", "FROM_SHIM": "x"}
    app = os.path.join(ROOT, "examples", "demo-app")
    out = {}
    for hook in ("init", "discover", "generate"):
        walls = []
        for _ in range(n):
            t0 = time.monotonic()
            r = subprocess.run([krmpod, hook], cwd=app, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
            walls.append(time.monotonic() - t0)
            if r.returncode != 0:
                raise SystemExit("bench: krmpod %s failed: %s" % (hook, r.stderr.decode()))
        out["krmpod " + hook + " (demo-app, 2 functions)"] = statistics.median(walls) * 1000
    # prestart: pods started ahead while kustomize starts, side by side, with a start latency
    sim.faults(start_latency_ms=500)
    for prestart in ("false", "true"):
        walls = []
        for _ in range(n):
            t0 = time.monotonic()
            r = subprocess.run([krmpod, "generate"], cwd=app, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True,
                               env=dict(env, KRMPOD_PRESTART=prestart))
            walls.append(time.monotonic() - t0)
            if r.returncode != 0:
                raise SystemExit("bench: generate failed: %s" % r.stderr.decode())
        out["krmpod generate, L=500 ms, KRMPOD_PRESTART=" + prestart] = \
            statistics.median(walls) * 1000
    sim.faults(start_latency_ms=0)
    return out


def empty_pool(sim, krmpod, env):
    subprocess.run([krmpod, "gc"], env=dict(env, KRMPOD_WARM_POOL_TTL="1ms"),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def write_app3(d):
    """A ConfigMap and three transformers running cat."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "kustomization.yaml"), "w") as f:
        f.write("resources:\n- cm.yaml\ntransformers:\n- fn0.yaml\n- fn1.yaml\n- fn2.yaml\n")
    with open(os.path.join(d, "cm.yaml"), "w") as f:
        f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\n")
    for i in range(3):
        with open(os.path.join(d, "fn%d.yaml" % i), "w") as f:
            f.write("apiVersion: krmpod.bench/v1\nkind: Identity\nmetadata:\n  name: fn%d\n"
                    "  annotations:\n    config.kubernetes.io/function: |\n      container:\n"
                    "        image: example.com/fns/cat:v%d\n" % (i, i))


def bench_modes(sim, krmpod, state, n, xs):
    """generate with 3 functions in each mode, at kubesim's realistic 1 s relist and a
    500 ms pod start, against the floor (kustomize alone + one pod start); and 16
    concurrent renders against the warm pool. Medians in ms."""
    sim.faults(start_latency_ms=500)
    app = os.path.join(state, "app3")
    write_app3(app)
    sa = os.path.join(state, "sa")
    base = {"PATH": os.environ["PATH"], "HOME": state, "TMPDIR": state,
            "KUBERNETES_SERVICE_HOST": sim.host, "KUBERNETES_SERVICE_PORT": str(sim.port),
            "KRMPOD_SERVICEACCOUNT_DIR": sa, "KRMPOD_KUSTOMIZE": "kubectl kustomize",
            "KRMPOD_LOG_LEVEL": "warn"}
    pool = dict(xs, KRMPOD_WARM_POOL="true", KRMPOD_WARM_POOL_IMAGES="example.com/*")
    modes = {"attach": {}, "exec": xs, "warm pool": pool}
    out = {}

    def gen(env, cwd=app):
        t0 = time.monotonic()
        r = subprocess.run([krmpod, "generate"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, start_new_session=True)
        if r.returncode != 0:
            raise SystemExit("bench: generate failed: %s" % r.stderr.decode())
        return time.monotonic() - t0

    for mode, extra in modes.items():
        env = dict(base, **extra)
        if mode == "warm pool":
            gen(env)  # fills the pool
        out["generate, 3 functions, L=500 ms, " + mode] = statistics.median(
            gen(env) for _ in range(n)) * 1000
    plain = os.path.join(state, "app0")
    os.makedirs(plain, exist_ok=True)
    with open(os.path.join(plain, "kustomization.yaml"), "w") as f:
        f.write("resources:\n- cm.yaml\n")
    shutil.copy(os.path.join(app, "cm.yaml"), plain)
    walls = []
    for _ in range(n):
        t0 = time.monotonic()
        subprocess.run(["kubectl", "kustomize", plain], check=True, stdout=subprocess.DEVNULL)
        walls.append(time.monotonic() - t0)
    out["kustomize alone (no functions)"] = statistics.median(walls) * 1000
    out["floor: kustomize alone + one pod start (500 ms)"] = \
        out["kustomize alone (no functions)"] + 500
    # 16 renders at once, against the warm pool (its size raised to serve them)
    env = dict(base, **pool, KRMPOD_WARM_POOL_SIZE="16", KRMPOD_WARM_POOL_MAX="64")
    apps = []
    for i in range(16):
        d = os.path.join(state, "conc%d" % i)
        shutil.copytree(app, d)
        apps.append(d)

    def burst():
        t0 = time.monotonic()
        procs = [subprocess.Popen([krmpod, "generate"], cwd=d, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  start_new_session=True) for d in apps]
        done = []
        for p in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                raise SystemExit("bench: concurrent generate failed: %s" % err.decode())
            done.append(time.monotonic() - t0)
        return done

    burst()  # warms 16 pods per function
    before = len(sim.requests())
    times = burst()
    reqs = [l for l in sim.requests()[before:] if "/kubesim/" not in l]
    out["16 concurrent renders (warm pool), p50 of render time"] = \
        statistics.median(times) * 1000
    out["16 concurrent renders (warm pool), slowest"] = max(times) * 1000
    out["16 concurrent renders (warm pool), API requests per render"] = len(reqs) / 16.0
    empty_pool(sim, krmpod, env)
    sim.faults(start_latency_ms=0)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--krmpod", default=os.path.join(ROOT, "build", "krmpod"))
    ap.add_argument("-n", type=int, default=15)
    ap.add_argument("--latencies", default="0,500")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--compare", metavar="KRMPOD",
                    help="another krmpod binary (an earlier build) run as a third runner, "
                         "krmpod-cmp, in the same run: before and after side by side")
    a = ap.parse_args()
    krmpod = os.path.abspath(a.krmpod)
    state = tempfile.mkdtemp(prefix="krmpod-bench-")
    # kubesim's default kubelet timing (1 s relist, as a real kubelet): the delay between a
    # function's exit and its terminated status is part of what a function costs
    sim = Kubesim(state, relist_period_ms=None, pull_backoff_ms=None)
    bindir = os.path.join(state, "bin")
    os.mkdir(bindir)
    os.symlink(krmpod, os.path.join(bindir, "docker"))
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
           "KUBECONFIG": sim.kubeconfig, "KRMPOD_LOG_LEVEL": os.environ.get("BENCH_LOG", "warn")}
    shim = [os.path.join(bindir, "docker")] + KUSTOMIZE_RUN + ["example.com/cat"]
    runners = {
        "krmpod": shim,
        "kubectl": [os.path.join(ROOT, "bench", "kubectl-runner.sh"), "example.com/cat"],
        # exec mode (docs/internals/exec-mode.md), cold and from the warm pool
        "exec": shim,
        "warm": shim,
    }
    xs = exec_settings()
    runner_env = {"exec": dict(env, **xs),
                  "warm": dict(env, **xs, KRMPOD_WARM_POOL="true",
                               KRMPOD_WARM_POOL_IMAGES="example.com/*")}
    if a.compare:
        cmpdir = os.path.join(state, "cmp")
        os.mkdir(cmpdir)
        os.symlink(os.path.abspath(a.compare), os.path.join(cmpdir, "docker"))
        runners["krmpod-cmp"] = ([os.path.join(cmpdir, "docker")] + KUSTOMIZE_RUN +
                                 ["example.com/cat"])
    # the function's own time, run directly
    direct = [run_measured([os.path.join(IMAGES, "cat")], env)[0] for _ in range(a.n)]
    fn_time = statistics.median(direct)
    results = []
    try:
        for lat in [int(x) for x in a.latencies.split(",")]:
            sim.faults(start_latency_ms=lat)
            for name, argv in runners.items():
                rows = []
                renv = runner_env.get(name, env)
                if name == "warm":  # a pod in the pool first
                    run_measured(argv, renv, name)
                for _ in range(a.n):
                    before = len(sim.requests())
                    wall, cpu, rss = run_measured(argv, renv, "%s at L = %d ms" % (name, lat))
                    reqs = [l for l in sim.requests()[before:] if "/kubesim/" not in l]
                    rows.append((wall, cpu, rss, len(reqs)))
                    # let the baseline's background delete land before the next run
                    for _ in range(100):
                        if name == "warm" or not sim.pods():
                            break
                        time.sleep(0.02)
                med = lambda i: statistics.median(r[i] for r in rows)  # noqa: E731
                results.append({
                    "latency_ms": lat, "runner": name, "n": a.n,
                    "wall_ms": med(0) * 1000, "cpu_ms": med(1) * 1000,
                    "peak_rss_kib": med(2), "api_requests": med(3),
                    "overhead_ms": (med(0) - lat / 1000 - fn_time) * 1000,
                })
        empty_pool(sim, krmpod, runner_env["warm"])
        hooks = bench_hooks(sim, krmpod, state, a.n)
        hooks.update(bench_modes(sim, krmpod, state, a.n, xs))
    finally:
        sim.stop()
        shutil.rmtree(state, ignore_errors=True)
    print("machine: %s, %d cores, %s; function run directly: %.1f ms (median)" %
          (platform.platform(), os.cpu_count(), platform.processor() or platform.machine(),
           fn_time * 1000))
    print("%-10s %-10s %10s %10s %10s %12s %9s" % ("L (ms)", "runner", "wall ms", "overhead",
                                                 "CPU ms", "peak RSS KiB", "requests"))
    for r in results:
        print("%-10d %-10s %10.1f %10.1f %10.1f %12d %9d" % (
            r["latency_ms"], r["runner"], r["wall_ms"], r["overhead_ms"], r["cpu_ms"],
            r["peak_rss_kib"], r["api_requests"]))
    for lat in sorted({r["latency_ms"] for r in results}):
        k = next(r for r in results if r["latency_ms"] == lat and r["runner"] == "krmpod")
        b = next(r for r in results if r["latency_ms"] == lat and r["runner"] == "kubectl")
        print("L=%d ms: kubectl/krmpod overhead ratio %.1fx, CPU ratio %.1fx" % (
            lat, b["overhead_ms"] / max(k["overhead_ms"], 0.1), b["cpu_ms"] / max(k["cpu_ms"], 0.1)))
        for mode in ("exec", "warm"):
            m = next(r for r in results if r["latency_ms"] == lat and r["runner"] == mode)
            print("L=%d ms: %s/attach wall %.2fx (%.0f vs %.0f ms), requests %d/%d" % (
                lat, mode, m["wall_ms"] / k["wall_ms"], m["wall_ms"], k["wall_ms"],
                m["api_requests"], k["api_requests"]))
        c = next((r for r in results if r["latency_ms"] == lat and r["runner"] == "krmpod-cmp"),
                 None)
        if c:
            print("L=%d ms: krmpod/krmpod-cmp wall %.3fx, CPU %.2fx, RSS %.2fx, requests %d/%d"
                  % (lat, k["wall_ms"] / c["wall_ms"], k["cpu_ms"] / max(c["cpu_ms"], 0.1),
                     k["peak_rss_kib"] / max(c["peak_rss_kib"], 1), k["api_requests"],
                     c["api_requests"]))
    for name, ms in hooks.items():
        unit = "" if "requests" in name else " ms"
        print("%s: %.1f%s (median of %d)" % (name, ms, unit, a.n))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"function_direct_ms": fn_time * 1000, "results": results,
                       "hooks_ms": hooks}, f, indent=1)


if __name__ == "__main__":
    main()
