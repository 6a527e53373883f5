#!/usr/bin/python3
"""Chaos soak: `krmpod generate` against kubesim, many times, each run with a random case,
fault and kill, and the invariants checked after every run (issue 11, part 2).

    tests/soak/soak.py [--runs N] [--seed S] [--krmpod build/krmpod] [--report FILE]
    tests/soak/soak.py --replay SUB_SEED [--krmpod ...]     one run alone, verbose

`make soak SOAK_RUNS=N` runs it with the static binary; `make soak-short` (part of `make
test`) runs 50 seeded runs with the ASan build.

Every run draws, from its own sub-seed (drawn from the seed printed at the start):
  * a case: a transformer, a generator, a failing function, a large ResourceList (several
    MB through `cat`), or a generator with a bind mount (KRMPOD_HELPER_IMAGE);
  * a fault, injected with kubesim's control API: none, a 429 burst, a 5xx burst, a dropped
    watch, an attach dropped mid-stream (drop_attach + drop_attach_bytes), 410 on the watch
    (HTTP or in-stream), a slow start, an image pull failure, OOM, or a deadline (a short
    KRMPOD_GENERATE_TIMEOUT, or a short KRMPOD_TIMEOUT with a slow start);
  * a kill: none, or SIGTERM or SIGKILL to generate or to the shim (the process of
    generate's session whose argv[0] is docker), or SIGKILL to generate's whole process
    group (the sidecar container killed: nothing of krmpod survives to clean up). The
    moment is a random fraction of the case's time without faults (generate's run, or the
    shim's life), measured once per case (the calibration run).

generate runs in its own session, as Argo CD's CMP server runs it, with in-cluster
credentials, a private TMPDIR and real kustomize (`kubectl kustomize`).

The invariants, each a counted violation with its message (nothing is retried or hidden):
  * exit 0 only with stdout byte-identical to the direct run of the same kustomization
    (tests/fixtures/direct-docker, computed once per case); otherwise a non-zero exit, an
    empty stdout, and an error on stderr that names the function's image. Where generate
    itself was stopped (its KRMPOD_GENERATE_TIMEOUT, or our signal to it) the error may name
    that cause instead; a SIGKILLed generate can say nothing. An attach dropped mid-stream
    (the fault fired) must fail the run.
  * no crash: no sanitizer report, no signal we did not send, no shim killed by one.
  * after a SIGTERM (to generate or the shim) no pod is left 2 s after the signal.
  * after a SIGKILL, no pod is left once `krmpod gc --older-than 1ms` (run once the run's
    processes are gone) removed what krmpod itself could not: after a SIGKILL to the shim,
    generate deletes its pod (the shim's marker names it), after one to generate the
    orphaned shims and the prestart janitor delete theirs; after the group's SIGKILL gc
    removes finished pods at once and running ones (a prestarted pod nobody claimed, or a
    function whose stdin nobody closes) once their activeDeadlineSeconds (KRMPOD_TIMEOUT,
    --fn-timeout here) stopped them. The report counts which.
  * no process of the run left after generate exited (after a SIGKILL to generate: once
    the orphaned shims ended), no zombie child of generate or of the soak, nothing left in
    the run's TMPDIR (a SIGKILLed generate cannot remove its own shim and prestart
    directories: counted apart, as expected), and generate's descriptors flat: the same
    count for the same case in every run, and the same at the first and the last of the
    functions of a 10-function render (checked at the start and the end of the soak).
  * kubesim holds no pod at the end.

Counts go to a table on stdout and to build/soak/report.json; the exit status is 1 when
there was any violation.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soaklib  # noqa: E402
from soaklib import ROOT  # noqa: E402

CASES = ["transformer", "generator", "failing", "large", "mount"]
FAULTS = ["none", "429", "5xx", "drop_watch", "drop_attach", "watch_410", "slow_start",
          "pull_failure", "oom", "deadline"]
# Faults krmpod rides out (retries, a new watch, waiting): without a kill, a case whose direct
# run succeeds should succeed. Not an invariant of the issue; listed in the report.
RECOVERABLE = {"none", "429", "5xx", "drop_watch", "watch_410", "slow_start"}
KILLS = ["none", "sigterm-generate", "sigterm-shim", "sigkill-generate", "sigkill-shim",
         "sigkill-all"]
KILL_WEIGHTS = [4, 1.5, 1.5, 1.5, 1.5, 1]

IMAGE = {
    "transformer": "example.com/fns/add-label:v1",
    "generator": "example.com/fns/gen-configmap:v1",
    "failing": "example.com/fns/fail:v1",
    "large": "example.com/fns/cat:v1",
    "mount": "example.com/fns/read-mount:v1",
}
SIGTERM_CLEAN_S = 2.0     # no pod of the run 2 s after a SIGTERM
RUN_LIMIT_S = 120         # a generate that runs longer has hung


def idle_pool_pod(pod):
    """Whether pod is an idle warm-pool pod (docs/internals/warm-pool.md)."""
    labels = pod["metadata"].get("labels") or {}
    return "krmpod.dev/pool" in labels and labels.get("krmpod.dev/pool-state") == "idle"


# --- the cases -------------------------------------------------------------------------------

def fn_config(kind, name, image, data, extra=""):
    body = "".join("  %s: %s\n" % kv for kv in data.items())
    return ("apiVersion: krmpod.test/v1\nkind: %s\nmetadata:\n  name: %s\n  annotations:\n"
            "    config.kubernetes.io/function: |\n      container:\n        image: %s\n%s"
            "data:\n%s" % (kind, name, image, extra, body))


DEPLOYMENT = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n"
              "  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n"
              "    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n"
              "      - name: web\n        image: nginx:1.27\n")
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\ndata:\n  k: v\n"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_app(case, d, large_bytes):
    """The kustomization of a case in directory d."""
    if case == "transformer":
        write(d + "/kustomization.yaml",
              "resources:\n- deployment.yaml\n- cm.yaml\ntransformers:\n- label.yaml\n")
        write(d + "/deployment.yaml", DEPLOYMENT)
        write(d + "/cm.yaml", CONFIGMAP)
        write(d + "/label.yaml", fn_config("AddLabel", "label", IMAGE[case],
                                           {"key": "team", "value": "platform"}))
    elif case == "generator":
        write(d + "/kustomization.yaml", "resources:\n- cm.yaml\ngenerators:\n- gen.yaml\n")
        write(d + "/cm.yaml", CONFIGMAP)
        write(d + "/gen.yaml", fn_config(
            "GenerateConfigMap", "gen", IMAGE[case],
            {"name": "settings", "color": "blue", "env": "GREETING,LOG_TO_STDERR"},
            "        envs:\n        - GREETING=hello soak\n"))
    elif case == "failing":
        write(d + "/kustomization.yaml", "resources:\n- cm.yaml\ntransformers:\n- fail.yaml\n")
        write(d + "/cm.yaml", CONFIGMAP)
        write(d + "/fail.yaml", fn_config("Fail", "fail", IMAGE[case], {"x": "y"}))
    elif case == "large":
        # few resources with big payloads: kustomize's cost is per resource, krmpod's per byte
        write(d + "/kustomization.yaml", "resources:\n- big.yaml\ntransformers:\n- cat.yaml\n")
        write(d + "/cat.yaml", fn_config("Cat", "cat", IMAGE[case], {"x": "y"}))
        line = "    line %05d of configmap %03d: " + "y" * 60 + "\n"
        per_cm = 1300
        n = max(1, large_bytes // (per_cm * len(line % (0, 0))))
        with open(d + "/big.yaml", "w") as f:
            for c in range(n):
                f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big-%03d\n"
                        "data:\n  payload: |\n" % c)
                f.write("".join(line % (i, c) for i in range(per_cm)))
                f.write("---\n")
    elif case == "mount":
        write(d + "/kustomization.yaml", "resources:\n- cm.yaml\ngenerators:\n- gen.yaml\n")
        write(d + "/cm.yaml", CONFIGMAP)
        write(d + "/templates/a.txt", "alpha\n")
        write(d + "/templates/sub/b.yaml", "beta: [1, 2, 3]\n")
        write(d + "/gen.yaml", fn_config(
            "ReadMount", "gen", IMAGE[case], {"name": "templates", "dirs": "/templates"},
            "        mounts:\n        - type: bind\n          src: ./templates\n"
            "          dst: /templates\n"))
    elif case == "long":  # the descriptor probe: ten functions in a row
        names = ["fn%02d" % i for i in range(10)]
        write(d + "/kustomization.yaml", "resources:\n- cm.yaml\ntransformers:\n" +
              "".join("- %s.yaml\n" % n for n in names))
        write(d + "/cm.yaml", CONFIGMAP)
        for i, n in enumerate(names):
            write(d + "/%s.yaml" % n, fn_config("AddLabel", n, IMAGE["transformer"],
                                                {"key": "step-%02d" % i, "value": "done"}))
    else:
        raise ValueError(case)


# --- what a run does, drawn from its sub-seed ------------------------------------------------

def plan(sub_seed, large_bytes):
    """The run's case, fault and kill: a function of the sub-seed alone."""
    rng = random.Random(sub_seed)
    case = rng.choice(CASES)
    fault = rng.choice(FAULTS)
    kill = rng.choices(KILLS, KILL_WEIGHTS)[0]
    base = IMAGE[case].rsplit("/", 1)[1].split(":")[0]
    faults, env = {}, {}
    method = rng.choice([None, "GET", "POST", "DELETE"])
    if fault == "429":
        e = {"status": 429, "count": rng.randint(1, 4)}
        if rng.random() < 0.5:
            e["retry_after"] = rng.choice([0, 1])
        if rng.random() < 0.3:
            e["plain_text"] = True
        if method:
            e["method"] = method
        faults["http_errors"] = [e]
    elif fault == "5xx":
        e = {"status": rng.choice([500, 502, 503, 504]), "count": rng.randint(1, 3)}
        if method:
            e["method"] = method
        faults["http_errors"] = [e]
    elif fault == "drop_watch":
        faults["drop_watch"] = rng.randint(1, 3)
    elif fault == "drop_attach":
        out = large_bytes if case == "large" else 1500
        faults.update(drop_attach=1, drop_attach_bytes=rng.randint(0, out))
    elif fault == "watch_410":
        faults[rng.choice(["watch_410", "watch_410_event"])] = rng.randint(1, 2)
    elif fault == "slow_start":
        faults["start_latency_ms"] = rng.randint(300, 2500)
    elif fault == "pull_failure":
        faults["pull_fail_images"] = [base]
    elif fault == "oom":
        faults["oom_images"] = [base]
    elif fault == "deadline":
        if rng.random() < 0.5:
            env["KRMPOD_GENERATE_TIMEOUT"] = "%dms" % rng.randint(300, 3000)
        else:
            env["KRMPOD_TIMEOUT"] = rng.choice(["1s", "2s"])
        faults["start_latency_ms"] = rng.randint(0, 2000)
    # when: a fraction of the case's calibrated time (generate's run, or the shim's life)
    return {"case": case, "fault": fault, "kill": kill, "faults": faults, "env": env,
            "kill_frac": round(rng.random(), 4)}


def describe(p):
    k = p["kill"] if p["kill"] == "none" else "%s at %.0f%% (%.3f s)" % (
        p["kill"], 100 * p["kill_frac"], p.get("kill_delay_s", 0))
    return "case=%s fault=%s %s%s kill=%s" % (
        p["case"], p["fault"], json.dumps(p["faults"], sort_keys=True),
        (" env=" + json.dumps(p["env"], sort_keys=True)) if p["env"] else "", k)


# --- the soak --------------------------------------------------------------------------------

class Soak:
    def __init__(self, args):
        self.args = args
        self.krmpod = os.path.abspath(args.krmpod)
        self.mode_env = {}
        self.pool = args.mode == "pool"
        if args.mode in ("exec", "pool"):
            sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
            from conftest import exec_settings
            self.mode_env = exec_settings()
        # generate's deadline bounds how long a SIGKILLed render's pods live (the pods it
        # started ahead) or stay leased (the pool's): 15 s, far above any case's own time
        self.mode_env["KRMPOD_GENERATE_TIMEOUT"] = "15s"
        if self.pool:
            self.mode_env.update(KRMPOD_WARM_POOL="true",
                                 KRMPOD_WARM_POOL_IMAGES="example.com/fns/*")
        self.work = tempfile.mkdtemp(prefix="krmpod-soak-")
        self.sim = soaklib.start_kubesim(os.path.join(self.work, "kubesim"), self.krmpod)
        self.sa = soaklib.service_account_dir(self.sim, os.path.join(self.work, "sa"))
        self.apps, self.expected = {}, {}
        self.violations = []
        self.counts = {k: {} for k in ("case", "fault", "kill", "outcome", "kill_delivered")}
        self.cleanup = {"sigterm_runs": 0, "sigterm_pods_gone_ms": [],
                        "sigkill_runs": 0, "sigkill_pods_left": 0,
                        "removed_by_gc_finished": 0, "removed_by_gc_after_deadline": 0,
                        "removed_by_krmpod_meanwhile": 0,
                        "generate_sigkill_tmp_leftovers": 0, "orphans_waited_for": 0,
                        "sigterm_delete_refused_by_server": 0,
                        "pool_runs_with_idle_pods": 0, "pool_pods_retired_after_failure": 0}
        self.fds = {}          # case -> [generate's fd count while its function ran]
        self.fd_long = []
        self.durations = {}    # case -> [seconds]
        self.fired = {}        # fault -> runs where kubesim says it fired
        self.calibration = {}  # case -> {generate_s, shim_s, outcome}
        self.failures = {}     # "case / fault / kill: reason" -> clean failures
        self.recoverable_failures = []  # runs that failed under a fault krmpod rides out

    def close(self):
        self.sim.stop()
        if self.args.keep:
            print("soak: kept %s" % self.work)
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    def count(self, kind, key):
        self.counts[kind][key] = self.counts[kind].get(key, 0) + 1

    def app(self, case):
        if case not in self.apps:
            d = os.path.join(self.work, "apps", case)
            make_app(case, d, self.args.large_mb * 1024 * 1024)
            self.apps[case] = d
        return self.apps[case]

    def expected_output(self, case):
        """The direct run's stdout, or None when the direct run fails (the failing case)."""
        if case not in self.expected:
            scratch = os.path.join(self.work, "direct", case)
            os.makedirs(scratch, exist_ok=True)
            r = soaklib.direct_render(self.app(case), scratch)
            self.expected[case] = r.stdout if r.returncode == 0 else None
            if case != "failing" and r.returncode != 0:
                raise RuntimeError("the direct run of case %s failed: %s"
                                   % (case, r.stderr.decode(errors="replace")))
        return self.expected[case]

    def calibrate(self, case):
        """How long the case takes without faults (generate's run, the shim's life): a kill
        lands at a random fraction of that. Also a first check of the case."""
        if case not in self.calibration:
            self.calibration[case] = None
            outcome, took, _, m = self.run("calibrate-" + case, None, case=case)
            shim_life = (m["shim_gone"] or m["t_end"]) - m["shim_seen"] if m["shim_seen"] \
                else took
            self.calibration[case] = {"generate_s": round(took, 3),
                                      "shim_s": round(shim_life, 3), "outcome": outcome}
        return self.calibration[case]

    # --- one run ------------------------------------------------------------------------
    def run(self, idx, sub_seed, verbose=False, case=None):
        """One run: sub_seed draws it (plan()); with case (and no sub-seed), the case alone
        without fault or kill (the calibration)."""
        if sub_seed is None:
            p = {"case": case, "fault": "none", "kill": "none", "faults": {}, "env": {},
                 "kill_frac": 0}
        else:
            p = plan(sub_seed, self.args.large_mb * 1024 * 1024)
            cal = self.calibrate(p["case"])
            p["kill_delay_s"] = round(p["kill_frac"] * (
                cal["shim_s"] if p["kill"].endswith("shim") else cal["generate_s"]), 3)
        expected = self.expected_output(p["case"])
        if sub_seed is not None:
            for kind, key in (("case", p["case"]), ("fault", p["fault"]), ("kill", p["kill"])):
                self.count(kind, key)
        problems = []
        left = self.leftover()
        if left:  # a violation of an earlier run, already counted: start clean
            self.sim.reset()
        run_dir = os.path.join(self.work, "runs", str(idx))
        tmp = os.path.join(run_dir, "tmp")
        os.makedirs(tmp)
        env = soaklib.cmp_env(self.sim, self.sa, tmp, self.krmpod,
                              KRMPOD_TIMEOUT=self.args.fn_timeout,
                              KRMPOD_EXTRA_LABELS="krmpod-soak-run=%s" % idx)
        if p["case"] == "mount":
            env["KRMPOD_HELPER_IMAGE"] = soaklib.HELPER_IMAGE
        env.update(self.mode_env)
        env.update(p["env"])
        self.sim.faults(**p["faults"])
        out_path, err_path = run_dir + "/stdout", run_dir + "/stderr"
        with open(out_path, "wb") as fout, open(err_path, "wb") as ferr:
            t0 = time.monotonic()
            gen = subprocess.Popen([self.krmpod, "generate"], cwd=self.app(p["case"]), env=env,
                                   stdin=subprocess.DEVNULL, stdout=fout, stderr=ferr,
                                   start_new_session=True)
            mon = self.monitor(gen, p, t0, problems)
        took = time.monotonic() - t0
        if sub_seed is not None:
            self.durations.setdefault(p["case"], []).append(took)
        with open(out_path, "rb") as f:
            out = f.read()
        with open(err_path, "rb") as f:
            err = f.read().decode(errors="replace")
        faults_after = self.sim.control("GET", "/kubesim/faults")
        self.after(gen, p, mon, problems, tmp, faults_after)
        if self.pool:
            self.pool_checks(err, problems)
        self.check_result(gen.returncode, out, err, expected, p, mon, problems, faults_after)
        if verbose:
            print("run %d: %s\n  exit %s after %.2fs, %d bytes out (expected %s)\n%s"
                  % (idx, describe(p), gen.returncode, took, len(out),
                     "failure" if expected is None else "%d bytes" % len(expected),
                     "".join("  | %s\n" % line for line in err.splitlines())))
        outcome = "violation" if problems else ("success" if gen.returncode == 0
                                                else "clean_failure")
        if sub_seed is not None:
            self.count("outcome", outcome)
            if outcome == "clean_failure":
                key = "%s / %s / %s: %s" % (
                    p["case"], p["fault"], p["kill"] if not mon["delivered"] else
                    "%s (delivered)" % p["kill"], failure_reason(err))
                self.failures[key] = self.failures.get(key, 0) + 1
                if p["fault"] in RECOVERABLE and not mon["delivered"] and expected is not None:
                    self.recoverable_failures.append({"run": idx, "sub_seed": "%#x" % sub_seed,
                                                      "plan": describe(p),
                                                      "reason": failure_reason(err)})
        replay = ("sub-seed %#x; replay alone: tests/soak/soak.py --replay %#x --krmpod %s"
                  % (sub_seed, sub_seed, self.args.krmpod)) if sub_seed is not None else \
            "the calibration run of case %s" % p["case"]
        for msg in problems:
            v = {"run": idx, "sub_seed": None if sub_seed is None else "%#x" % sub_seed,
                 "plan": describe(p), "message": msg, "stderr_tail": err[-1500:]}
            self.violations.append(v)
            print("VIOLATION run %s (seed %s, %s): %s: %s\n  generate's stderr (tail):\n%s"
                  % (idx, self.args.seed, replay, describe(p), msg,
                     "".join("    %s\n" % l for l in err[-1500:].splitlines())), flush=True)
        if not problems and not self.args.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
        return outcome, took, p, mon

    def monitor(self, gen, p, t0, problems):
        """Watches the run until generate exited (and, after a SIGTERM, until its pods are
        gone or 2 s passed): finds the shim, delivers the kill, samples generate's
        descriptors and zombie children, times the pods' deletion after a SIGTERM."""
        m = {"shim_pid": None, "shim_seen": None, "shim_gone": None, "t_end": None,
             "signal": None, "target": None,
             "t_signal": None, "delivered": False, "missed": None, "pods_gone_s": None,
             "fd_with_fn": None, "fd_samples": [], "zombies": {}}
        kill = p["kill"]
        target = None if kill == "none" else kill.split("-")[1]
        sig = signal.SIGTERM if kill.startswith("sigterm") else signal.SIGKILL
        while True:
            now = time.monotonic()
            rc = gen.poll()
            procs = soaklib.all_procs()
            sess = soaklib.session_procs(gen.pid, procs)
            shims = soaklib.shims(sess)
            if shims and m["shim_pid"] is None:
                m["shim_pid"], m["shim_seen"] = shims[0], now
            if m["shim_pid"] and m["shim_gone"] is None and m["shim_pid"] not in shims:
                m["shim_gone"] = now
            if rc is None:
                n = soaklib.fd_count(gen.pid)
                if n is not None:
                    m["fd_samples"].append(n)
                    # the fewest seen while a function runs: a descriptor generate
                    # holds for a moment (its poll loop reads /proc/self/.../children)
                    # is not one it keeps; a leak raises every sample
                    if shims:
                        m["fd_with_fn"] = n if m["fd_with_fn"] is None else \
                            min(m["fd_with_fn"], n)
                for pid, st in procs.items():
                    if st[0] == gen.pid and st[1] == "Z":
                        first = m["zombies"].setdefault(pid, now)
                        if now - first > 1.0 and pid not in m.get("zombie_reported", ()):
                            m.setdefault("zombie_reported", set()).add(pid)
                            name = soaklib.proc_argv0(pid) or "?"
                            problems.append("process %d (%s), a child of generate, stayed a "
                                            "zombie for over 1 s" % (pid, name))
            # the kill
            if target and not m["delivered"] and m["missed"] is None:
                if target in ("generate", "all") and now - t0 >= p["kill_delay_s"]:
                    if rc is None:
                        # the request log's size before the signal: the DELETEs it causes can
                        # be logged before this thread runs again (run 479 of seed 750361071)
                        at = self.reqlog_size()
                        if target == "all":
                            os.killpg(gen.pid, sig)
                        else:
                            os.kill(gen.pid, sig)
                        m.update(delivered=True, t_signal=now, signal=sig, target=target,
                                 reqlog_at=at)
                    else:
                        m["missed"] = "generate had exited"
                elif target == "shim":
                    if m["shim_pid"] is None and rc is not None:
                        m["missed"] = "no shim ever ran"
                    elif m["shim_pid"] is not None and now - m["shim_seen"] >= p["kill_delay_s"]:
                        st = soaklib.proc_stat(m["shim_pid"])
                        if st and st[1] != "Z" and st[3] == gen.pid:
                            at = self.reqlog_size()
                            os.kill(m["shim_pid"], sig)
                            m.update(delivered=True, t_signal=now, signal=sig, target="shim",
                                     reqlog_at=at)
                        else:
                            m["missed"] = "the shim had exited"
            # a SIGTERM's promise: no pod 2 s later
            if m["delivered"] and m["signal"] == signal.SIGTERM and m["pods_gone_s"] is None:
                if not self.leftover():
                    m["pods_gone_s"] = now - m["t_signal"]
            done = rc is not None
            if done and m["delivered"] and m["signal"] == signal.SIGTERM:
                done = m["pods_gone_s"] is not None or now - m["t_signal"] > SIGTERM_CLEAN_S + 0.5
            if done:
                m["t_end"] = now
                if target and not m["delivered"] and m["missed"] is None:
                    m["missed"] = "the run ended first"
                return m
            if now - t0 > RUN_LIMIT_S:
                problems.append("generate did not exit within %d s: killed" % RUN_LIMIT_S)
                os.killpg(gen.pid, signal.SIGKILL)
                gen.wait()
                return m
            time.sleep(0.02)

    def after(self, gen, p, m, problems, tmp, faults_after):
        """The run's processes, pods, temporary files and zombies, once generate exited."""
        if m["delivered"]:
            self.count("kill_delivered", "%s-%s" % (
                "sigterm" if m["signal"] == signal.SIGTERM else "sigkill", m["target"]))
        elif p["kill"] != "none":
            self.count("kill_delivered", "missed (%s)" % m["missed"])
        gen_sigkilled = m["delivered"] and m["signal"] == signal.SIGKILL and \
            m["target"] in ("generate", "all")
        # processes of the run: none once generate exited; after a SIGKILL to generate its
        # kustomize and shims live on (orphans) and end by themselves
        limit = 60 if gen_sigkilled else 2
        t = time.monotonic()
        while True:
            sess = soaklib.session_procs(gen.pid)
            if not sess or time.monotonic() - t > limit:
                break
            time.sleep(0.05)
        if gen_sigkilled and time.monotonic() - t > 0.1:
            self.cleanup["orphans_waited_for"] += 1
        if sess:
            problems.append("processes of the run still alive %d s after generate exited: %s"
                            % (limit, ", ".join("%d %s (%s)" % (pid, a0, st)
                                                for pid, (_, st, a0) in sess.items())))
            for pid in sess:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        # the rest of the faults would hit the soak's own requests and gc's
        self.sim.faults()
        # pods
        if m["delivered"] and m["signal"] == signal.SIGTERM:
            self.cleanup["sigterm_runs"] += 1
            refused = self.refused_deletes(m["reqlog_at"])
            if m["pods_gone_s"] is not None and m["pods_gone_s"] <= SIGTERM_CLEAN_S:
                self.cleanup["sigterm_pods_gone_ms"].append(int(m["pods_gone_s"] * 1000))
            elif refused >= 2:
                # The API server refused the DELETE (429 with Retry-After: 1, or 5xx) more
                # often than fits in the 1.5 s a shim gives its delete after a signal: no
                # client can keep the 2 s then. Counted apart; gc must remove the pod.
                self.cleanup["sigterm_delete_refused_by_server"] += 1
                self.gc_after_sigkill(p, problems)
            else:
                problems.append("SIGTERM to %s: pods still there %.1f s after the signal "
                                "(the server refused %d DELETEs): %s"
                                % (m["target"], SIGTERM_CLEAN_S, refused, self.leftover()))
        if m["delivered"] and m["signal"] == signal.SIGKILL:
            self.cleanup["sigkill_runs"] += 1
            self.gc_after_sigkill(p, problems)
        else:
            t = time.monotonic()
            while self.leftover() and time.monotonic() - t < 2:
                time.sleep(0.05)
            left = self.leftover()
            if left:
                problems.append("pods left after the run: %s" % left)
                self.sim.reset()
        # temporary files
        leftovers = []
        for root, dirs, files in os.walk(tmp):
            leftovers += [os.path.relpath(os.path.join(root, x), tmp) for x in dirs + files]
        # the sidecar's persistent cache (KRMPOD_CACHE_DIR, $TMPDIR/krmpod-cache: the stamp
        # of generate's periodic sweep, KRMPOD_GC_INTERVAL) is meant to stay
        leftovers = [x for x in leftovers if x.split(os.sep)[0] != "krmpod-cache"]
        if leftovers and gen_sigkilled and all(x.startswith("krmpod-") for x in leftovers):
            self.cleanup["generate_sigkill_tmp_leftovers"] += 1
        elif leftovers:
            problems.append("temporary files left in the run's TMPDIR: %s" % sorted(leftovers))
        shutil.rmtree(tmp, ignore_errors=True)
        # zombies of the soak itself
        z = soaklib.zombie_children(os.getpid())
        if z:
            problems.append("zombie children of the soak: %s" % z)
        # descriptors
        if m["fd_with_fn"] is not None:
            self.fds.setdefault(p["case"], []).append(m["fd_with_fn"])
        if faults_after.get("drop_attach") == 0 and "drop_attach" in p["faults"]:
            self.fired["drop_attach"] = self.fired.get("drop_attach", 0) + 1

    def leftover(self):
        """The pods a run must not leave: all of them, but in pool mode the idle pool pods
        (the pool keeps them for the next render; `krmpod gc` with a TTL of 1 ms removes
        them at the end)."""
        if not self.pool:
            return self.sim.pods()
        return [{"namespace": x["metadata"]["namespace"], "name": x["metadata"]["name"],
                 "phase": (x.get("status") or {}).get("phase")}
                for x in self.sim.api_pods() if not idle_pool_pod(x)]

    def pool_checks(self, err, problems):
        """Pool mode: a pod whose call failed (its summary line's exit code is not 0) must
        not be idle in the pool afterwards: a failed call retires its pod."""
        pods = self.sim.api_pods()
        idle = {x["metadata"]["name"] for x in pods if idle_pool_pod(x)}
        if idle:
            self.cleanup["pool_runs_with_idle_pods"] += 1
        for name, code in re.findall(r"pod=(\S+): image=\S+ .* exit=(-?\d+) requests=", err):
            if int(code) == 0:
                continue
            if name in idle:
                problems.append("pool pod %s went back to the pool after a call that exited "
                                "%s" % (name, code))
            else:
                self.cleanup["pool_pods_retired_after_failure"] += 1

    def reqlog_size(self):
        return os.path.getsize(os.path.join(self.sim.state, "requests.log"))

    def refused_deletes(self, offset):
        """DELETEs of pods the API server refused (429, 5xx) since offset in its log."""
        with open(os.path.join(self.sim.state, "requests.log")) as f:
            f.seek(offset)
            lines = f.read().splitlines()
        return sum(1 for l in lines if " DELETE " in l and "/pods/" in l and
                   (l.endswith(" 429") or l.rsplit(" ", 1)[-1].startswith("5")))

    def gc_after_sigkill(self, p, problems):
        """What a SIGKILL left: `krmpod gc` removes finished pods at once; a pod that still
        runs is stopped by its activeDeadlineSeconds first (then gc removes it). A pod the
        render started ahead, and a pool pod's lease, last to generate's deadline (15 s
        here, or the plan's shorter KRMPOD_GENERATE_TIMEOUT) and 5 s more."""
        timeout = p["env"].get("KRMPOD_TIMEOUT") or self.args.fn_timeout
        deadline_s = max(float(timeout.rstrip("s")), 15 + 5)
        limit = deadline_s + 15
        until = time.monotonic() + limit
        reason = {x["name"]: "" for x in self.leftover()}
        removed = {}
        while reason and time.monotonic() < until:
            for x in self.sim.api_pods():
                if x["metadata"]["name"] in reason:
                    reason[x["metadata"]["name"]] = (x.get("status") or {}).get("reason", "")
            r = subprocess.run([self.krmpod, "gc", "--older-than", "1ms"],
                               env={"PATH": os.environ["PATH"],
                                    "KUBECONFIG": self.sim.kubeconfig},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            if r.returncode != 0:
                problems.append("krmpod gc failed (%d): %s" % (r.returncode, r.stderr.decode()))
                break
            for line in r.stdout.decode(errors="replace").splitlines():
                for name in reason:
                    if line.startswith("deleted default/%s " % name):
                        removed[name] = line
            if not self.leftover():
                break
            time.sleep(0.5)
        for name in reason:
            if name not in removed:
                self.cleanup["removed_by_krmpod_meanwhile"] += 1
            elif reason[name] == "DeadlineExceeded" or "activeDeadlineSeconds" in removed[name]:
                self.cleanup["removed_by_gc_after_deadline"] += 1
            else:
                self.cleanup["removed_by_gc_finished"] += 1
        left = self.leftover()
        if left:
            self.cleanup["sigkill_pods_left"] += 1
            problems.append("after the SIGKILL, krmpod gc left pods for %.0f s: %s"
                            % (limit, left))
            self.sim.reset()

    def check_result(self, rc, out, err, expected, p, m, problems, faults_after):
        """The render's own invariants: right bytes or a clean, named failure."""
        image = IMAGE[p["case"]]
        san = soaklib.sanitizer_report(err)
        if san:
            problems.append("sanitizer report: %s" % san)
        sent = m["signal"] if m["delivered"] and m["target"] in ("generate", "all") else None
        if rc < 0 and -rc != sent:
            problems.append("generate died of signal %d, which the soak did not send" % -rc)
        shim_signalled = m["delivered"] and m["target"] == "shim"
        if "couldn't execute function: signal: " in err and not \
                (shim_signalled and m["signal"] == signal.SIGKILL):
            problems.append("a shim died of a signal the soak did not send")
        if rc == 0:
            if expected is None:
                problems.append("exit 0 for a kustomization whose direct run fails "
                                "(%d bytes on stdout)" % len(out))
            elif out != expected:
                at = next((i for i in range(min(len(out), len(expected)))
                           if out[i] != expected[i]), min(len(out), len(expected)))
                problems.append("exit 0 but stdout differs from the direct run: %d bytes "
                                "instead of %d, first difference at byte %d"
                                % (len(out), len(expected), at))
            if "drop_attach" in p["faults"] and faults_after.get("drop_attach") == 0:
                problems.append("the attach was dropped mid-stream (the fault fired) but the "
                                "run exited 0")
            return
        if rc == -signal.SIGKILL or (sent == signal.SIGTERM and rc == -signal.SIGTERM):
            return  # killed: nothing can be said (a SIGTERM before the handlers is the default)
        if out:
            problems.append("exit %d with %d bytes on stdout (generate prints only on success)"
                            % (rc, len(out)))
        names_image = image in err
        cause = ("KRMPOD_GENERATE_TIMEOUT" in err and "ran out" in err) or \
            (sent == signal.SIGTERM and "stopped by signal 15" in err)
        if not names_image and not cause:
            problems.append("exit %d without an error that names the function's image %s"
                            % (rc, image))
        if sent == signal.SIGTERM and rc not in (143, 0) and not names_image:
            problems.append("SIGTERM to generate: exit %d, not 143" % rc)

    # --- the descriptor probe ------------------------------------------------------------
    def fd_probe(self, label):
        """A 10-function render: generate's descriptor count when each function's shim
        appears; the first and the last must be the same."""
        app = self.app("long")
        tmp = os.path.join(self.work, "long-tmp")
        os.makedirs(tmp, exist_ok=True)
        self.sim.faults()
        env = soaklib.cmp_env(self.sim, self.sa, tmp, self.krmpod,
                              KRMPOD_TIMEOUT=self.args.fn_timeout, **self.mode_env)
        gen = subprocess.Popen([self.krmpod, "generate"], cwd=app, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, start_new_session=True)
        seen, samples = set(), []
        while gen.poll() is None:
            sess = soaklib.session_procs(gen.pid)
            new = [pid for pid in soaklib.shims(sess) if pid not in seen]
            if new:
                seen.update(new)
                n = soaklib.fd_count(gen.pid)
                if n is not None:
                    samples.append(n)
            time.sleep(0.01)
        err = gen.stderr.read().decode(errors="replace")
        gen.stderr.close()
        rec = {"when": label, "exit": gen.returncode, "shims": len(seen), "fd_counts": samples}
        self.fd_long.append(rec)
        problem = None
        if gen.returncode != 0:
            problem = "the 10-function render failed (%d): %s" % (gen.returncode, err[-800:])
        elif samples and samples[-1] != samples[0]:
            problem = ("generate's descriptors grew during a 10-function render: %s"
                       % samples)
        if problem:
            self.violations.append({"run": label, "sub_seed": None, "plan": "fd probe",
                                    "message": problem, "stderr_tail": err[-1500:]})
            print("VIOLATION (%s fd probe): %s" % (label, problem), flush=True)
        shutil.rmtree(tmp, ignore_errors=True)
        if self.sim.pods():
            self.sim.reset()

    # --- the report ------------------------------------------------------------------------
    def fd_violations(self):
        for case, counts in sorted(self.fds.items()):
            if len(set(counts)) > 1:
                msg = ("generate's descriptor count while its function ran differs between "
                       "runs of case %s: %s" % (case, sorted(set(counts))))
                self.violations.append({"run": None, "sub_seed": None, "plan": case,
                                        "message": msg, "stderr_tail": ""})
                print("VIOLATION: " + msg, flush=True)

    def report(self, wall, run_times):
        all_times = [t for ts in self.durations.values() for t in ts]
        rep = {
            "seed": self.args.seed,
            "runs": self.args.runs,
            "krmpod": self.args.krmpod,
            "wall_s": round(wall, 1),
            "cases": self.counts["case"],
            "faults": self.counts["fault"],
            "kills": self.counts["kill"],
            "kills_delivered": self.counts["kill_delivered"],
            "successes": self.counts["outcome"].get("success", 0),
            "clean_failures": self.counts["outcome"].get("clean_failure", 0),
            "violation_runs": self.counts["outcome"].get("violation", 0),
            "violations": len(self.violations),
            "violation_list": self.violations,
            "faults_fired": self.fired,
            "cleanup": dict(self.cleanup, sigterm_pods_gone_ms=None,
                            sigterm_pods_gone_ms_max=max(self.cleanup["sigterm_pods_gone_ms"],
                                                         default=None),
                            sigterm_pods_gone_ms_p50=soaklib.percentile(
                                self.cleanup["sigterm_pods_gone_ms"], 50)),
            "generate_fds_while_function_runs": {c: sorted(set(v)) for c, v in
                                                 self.fds.items()},
            "fd_probe_10_functions": self.fd_long,
            "run_seconds": {"p50": round(soaklib.percentile(all_times, 50) or 0, 2),
                            "p99": round(soaklib.percentile(all_times, 99) or 0, 2),
                            "max": round(max(all_times, default=0), 2),
                            "per_case_p50": {c: round(soaklib.percentile(v, 50), 2)
                                             for c, v in sorted(self.durations.items())}},
            "outcome_by_case_fault": run_times,
            "calibration": self.calibration,
            "clean_failure_reasons": dict(sorted(self.failures.items())),
            "failures_under_recoverable_faults": self.recoverable_failures,
        }
        del rep["cleanup"]["sigterm_pods_gone_ms"]
        return rep


def failure_reason(err):
    """The gist of a failed run's stderr: the shim's error, else generate's, with names,
    numbers and times blanked so that like failures count together."""
    lines = err.splitlines()
    pick = next((l for l in lines if l.startswith("krmpod[docker]: error:")), None) or \
        next((l for l in lines if l.startswith("krmpod[generate]: error:")), None) or \
        (lines[-1] if lines else "(nothing on stderr)")
    pick = re.sub(r"krmpod-[a-z0-9-]+-[a-z0-9]{5}\b", "POD", pick)
    pick = re.sub(r"\d+", "N", pick)
    return pick[:220]


def print_table(rep):
    print("\nsoak: seed %s, %d runs, %s, %.0f s wall" % (rep["seed"], rep["runs"], rep["krmpod"],
                                                         rep["wall_s"]))
    for title, key in (("case", "cases"), ("fault", "faults"), ("kill", "kills"),
                       ("kill delivered", "kills_delivered")):
        items = sorted(rep[key].items())
        print("  %-15s %s" % (title, "  ".join("%s=%d" % kv for kv in items)))
    print("  %-15s success=%d  clean-failure=%d  violation-runs=%d  violations=%d"
          % ("outcome", rep["successes"], rep["clean_failures"], rep["violation_runs"],
             rep["violations"]))
    c = rep["cleanup"]
    print("  %-15s SIGTERM runs=%d (pods gone in p50 %s ms, max %s ms)  SIGKILL runs=%d: "
          "gc removed %d finished + %d after activeDeadlineSeconds, %d went by themselves, "
          "%d runs with pods left" % ("cleanup", c["sigterm_runs"], c["sigterm_pods_gone_ms_p50"],
                                      c["sigterm_pods_gone_ms_max"], c["sigkill_runs"],
                                      c["removed_by_gc_finished"],
                                      c["removed_by_gc_after_deadline"],
                                      c["removed_by_krmpod_meanwhile"], c["sigkill_pods_left"]))
    if c["pool_runs_with_idle_pods"] or c["pool_pods_retired_after_failure"]:
        print("  %-15s %d runs left idle pods in the pool for the next; %d pods whose call "
              "failed were not given back" % ("warm pool", c["pool_runs_with_idle_pods"],
                                               c["pool_pods_retired_after_failure"]))
    if c["sigterm_delete_refused_by_server"]:
        print("  %-15s %d SIGTERM runs where the API server refused the DELETE past the "
              "shim's 1.5 s: the pod was left, and gc removed it"
              % ("", c["sigterm_delete_refused_by_server"]))
    print("  %-15s %d runs failed under a fault krmpod rides out (none, 429, 5xx, dropped "
          "watch, 410, slow start) without a kill (not a violation; see the report)"
          % ("recoverable", len(rep["failures_under_recoverable_faults"])))
    print("  %-15s SIGKILLed generate left its own dirs in %d runs (expected); waited for "
          "orphaned shims in %d" % ("tmp", c["generate_sigkill_tmp_leftovers"],
                                    c["orphans_waited_for"]))
    print("  %-15s generate while a function runs: %s; 10-function probe: %s"
          % ("descriptors", rep["generate_fds_while_function_runs"],
             [(x["when"], x["fd_counts"]) for x in rep["fd_probe_10_functions"]]))
    t = rep["run_seconds"]
    print("  %-15s p50 %.2f s  p99 %.2f s  max %.2f s  per case p50 %s"
          % ("run time", t["p50"], t["p99"], t["max"], t["per_case_p50"]))
    print("\n  %-12s %s" % ("case\\fault", " ".join("%-12s" % f for f in FAULTS)))
    m = rep["outcome_by_case_fault"]
    for case in CASES:
        cells = []
        for f in FAULTS:
            o = m.get(case, {}).get(f, {})
            cells.append("%-12s" % ("%d/%d/%d" % (o.get("success", 0), o.get("clean_failure", 0),
                                                  o.get("violation", 0)) if o else "-"))
        print("  %-12s %s" % (case, " ".join(cells)))
    print("  (cells: success/clean failure/violation)")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=lambda s: int(s, 0), default=None)
    ap.add_argument("--replay", type=lambda s: int(s, 0), metavar="SUB_SEED",
                    help="run only the run with this sub-seed (printed with a violation)")
    ap.add_argument("--krmpod", default=os.path.join(ROOT, "build", "krmpod"))
    ap.add_argument("--report", default=os.path.join(ROOT, "build", "soak", "report.json"))
    ap.add_argument("--large-mb", type=int, default=4,
                    help="the large case's ResourceList size in MB (default 4)")
    ap.add_argument("--fn-timeout", default="10s",
                    help="KRMPOD_TIMEOUT, the pods' activeDeadlineSeconds (default 10s)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--mode", choices=("attach", "exec", "pool"), default="attach",
                    help="KRMPOD_MODE for every run (exec: the fixtures' image configs from "
                         "registrylib.FixtureRegistry, as tests/integration does; pool: "
                         "exec mode with the warm pool on for the fixture images)")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "big")
    soak = Soak(args)
    try:
        if args.replay is not None:
            print("soak: replaying sub-seed %#x with %s" % (args.replay, args.krmpod), flush=True)
            outcome, _, _, _ = soak.run(0, args.replay, verbose=True)
            print("soak: %s" % outcome)
            return 1 if soak.violations else 0
        print("soak: seed %d (replay the whole soak with --seed %d), %d runs, %s"
              % (args.seed, args.seed, args.runs, args.krmpod), flush=True)
        t0 = time.monotonic()
        soak.fd_probe("start")
        rng = random.Random(args.seed)
        matrix = {}
        for i in range(args.runs):
            sub = rng.getrandbits(32)
            outcome, took, p, _ = soak.run(i, sub)
            cell = matrix.setdefault(p["case"], {}).setdefault(p["fault"], {})
            cell[outcome] = cell.get(outcome, 0) + 1
            if (i + 1) % 10 == 0 or i + 1 == args.runs:
                print("soak: %d/%d runs, %.0f s, %d violations"
                      % (i + 1, args.runs, time.monotonic() - t0, len(soak.violations)),
                      flush=True)
        soak.fd_probe("end")
        soak.fd_violations()
        if soak.pool:  # the pool's idle pods go as an admin's gc with a short TTL makes them
            subprocess.run([soak.krmpod, "gc"], env={
                "PATH": os.environ["PATH"], "KUBECONFIG": soak.sim.kubeconfig,
                "KRMPOD_WARM_POOL_TTL": "1ms"}, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, timeout=60)
        left = soak.sim.pods()
        if left:
            msg = "kubesim holds pods at the end: %s" % left
            soak.violations.append({"run": None, "sub_seed": None, "plan": "end",
                                    "message": msg, "stderr_tail": ""})
            print("VIOLATION: " + msg)
        rep = soak.report(time.monotonic() - t0, matrix)
        rep["pods_at_end"] = len(left)
        os.makedirs(os.path.dirname(os.path.abspath(args.report)), exist_ok=True)
        with open(args.report, "w") as f:
            json.dump(rep, f, indent=1, sort_keys=True)
        print_table(rep)
        print("soak: report in %s" % args.report)
        if soak.violations:
            print("soak: FAILED: %d violations (seed %d)" % (len(soak.violations), args.seed))
            return 1
        print("soak: ok, 0 violations")
        return 0
    finally:
        soak.close()


if __name__ == "__main__":
    sys.exit(main())
