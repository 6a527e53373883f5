#!/usr/bin/python3
"""make bench, real-cluster section: krmpod on the real single-node Kubernetes of
scripts/realkube, where a container's start and exit reach the pod status only at the
kubelet's relist (about once a second), side by side with the kubectl sequence.

Measured, medians of n runs, in one run:
  * one function (`cat` on a 50-item ResourceList) through the shim: the phases krmpod logs
    (scheduled, started, attached, exit seen) and the wall time; the kubectl sequence of
    bench/kubectl-runner.sh with each step timed;
  * `krmpod generate` of an app with 3 functions, prestart on and off;
  * the physical floor: kustomize alone on the same app without its functions, plus one pod
    start (create -> status Running, as a client sees it; and -> the kubelet's Started event).

The cluster is started when it is not running, and then stopped at the end; a running one is
left running. Functions run in a fresh namespace with Pod Security `restricted`, deleted at
the end. Images are built from realkube's busybox root filesystem (nothing is pulled)."""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
REALKUBE = os.path.join(ROOT, "scripts", "realkube")
CAT_IMAGE = "krmpod-bench/cat:1"
HELPER_IMAGE = "krmpod-bench/krmpod:1"
sys.path.insert(0, os.path.join(ROOT, "tests"))
import registrylib  # noqa: E402
INPUT = (b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
         + b"".join(b"- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm%d\n" % i
                    for i in range(50)))
KUSTOMIZE_RUN = ["run", "--rm", "-i", "-a", "STDIN", "-a", "STDOUT", "-a", "STDERR",
                 "--network", "none", "--user", "nobody", "--security-opt=no-new-privileges",
                 "-e", "LOG_TO_STDERR=true", "-e", "STRUCTURED_RESULTS=true"]
PHASES = re.compile(r"scheduled=(-?\d+)ms started=(-?\d+)ms attached=(-?\d+)ms "
                    r"finished=(-?\d+)ms exit=(-?\d+) requests=(\d+)")


def sh(argv, **kw):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, **kw).stdout.decode()


class Cluster:
    def __init__(self):
        st = subprocess.run([REALKUBE, "status"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        self.started_here = st.returncode != 0
        self.kubeconfig = sh([REALKUBE, "start"], stderr=subprocess.DEVNULL).strip()
        self.env = dict(os.environ, KUBECONFIG=self.kubeconfig)
        self.ns = "krmpod-bench-%d" % (time.time() * 1000 % 10**9)
        self.kubectl("create", "namespace", self.ns)
        self.kubectl("label", "namespace", self.ns,
                     "pod-security.kubernetes.io/enforce=restricted")
        for _ in range(100):  # the controller-manager adds the ServiceAccount
            if subprocess.run(["kubectl", "-n", self.ns, "get", "serviceaccount", "default"],
                              env=self.env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.05)

    def kubectl(self, *args, stdin=None):
        return subprocess.run(["kubectl"] + list(args), env=self.env, input=stdin, check=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout.decode()

    def image(self, tmp, krmpod):
        rootfs = os.path.join(tmp, "rootfs")
        subprocess.run([REALKUBE, "busybox-rootfs", rootfs], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sh([REALKUBE, "image", CAT_IMAGE, rootfs, "--entrypoint", '["/bin/cat"]',
            "--user", "65534"], stderr=subprocess.DEVNULL)
        # krmpod's own image for exec mode's init container (KRMPOD_HELPER_IMAGE)
        os.makedirs(os.path.join(rootfs, "usr", "local", "bin"), exist_ok=True)
        shutil.copy(krmpod, os.path.join(rootfs, "usr", "local", "bin", "krmpod"))
        sh([REALKUBE, "image", HELPER_IMAGE, rootfs, "--user", "65534"],
           stderr=subprocess.DEVNULL)

    def exec_env(self, tmp):
        """Exec mode's settings: the image config of CAT_IMAGE (docker.io/krmpod-bench/cat)
        from a real registry on the node's address, as a mirror of docker.io."""
        node = sh([REALKUBE, "env"]).split("REALKUBE_NODE_IP=")[1].split()[0].strip("'\"")
        pki = registrylib.Pki(os.path.join(tmp, "pki"), ips=(node,))
        self.registry = registrylib.Registry(pki, addr=node)
        self.registry.push_image("krmpod-bench/cat", "1",
                                 {"Entrypoint": ["/bin/cat"], "User": "65534"})
        return {"KRMPOD_MODE": "exec", "KRMPOD_HELPER_IMAGE": HELPER_IMAGE,
                "KRMPOD_REGISTRY_CA": pki.ca,
                "KRMPOD_REGISTRY_MIRRORS": "docker.io=" + self.registry.host,
                "KRMPOD_CACHE_DIR": os.path.join(tmp, "cache")}

    def close(self):
        if getattr(self, "registry", None):
            self.registry.stop()
        subprocess.run(["kubectl", "delete", "namespace", self.ns, "--wait=false"],
                       env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.started_here:
            subprocess.run([REALKUBE, "stop"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)


def timed(argv, env, stdin=b"", cwd=None):
    t0 = time.monotonic()
    p = subprocess.run(argv, input=stdin, env=env, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    return time.monotonic() - t0, p


def bench_shim(cl, krmpod, bindir, n, extra=None, warm=False):
    env = dict(cl.env, KRMPOD_NAMESPACE=cl.ns, KRMPOD_LOG_LEVEL="info",
               PATH=os.environ["PATH"], **(extra or {}))
    rows = []
    if warm:  # a pod in the pool first
        timed([os.path.join(bindir, "docker")] + KUSTOMIZE_RUN + [CAT_IMAGE], env, INPUT)
    for _ in range(n):
        wall, p = timed([os.path.join(bindir, "docker")] + KUSTOMIZE_RUN + [CAT_IMAGE], env,
                        INPUT)
        if p.returncode != 0 or p.stdout != INPUT:
            raise SystemExit("bench: krmpod failed: %s" % p.stderr.decode())
        m = PHASES.search(p.stderr.decode())
        rows.append([wall * 1000] + [int(x) for x in m.groups()])
    med = [statistics.median(r[i] for r in rows) for i in range(len(rows[0]))]
    return {"wall_ms": med[0], "scheduled_ms": med[1], "started_ms": med[2],
            "attached_ms": med[3], "exit_seen_ms": med[4], "requests": med[6]}


def bench_kubectl(cl, n):
    """bench/kubectl-runner.sh's steps, each timed."""
    steps = {"create": [], "wait_running": [], "attach": [], "wait_terminated": [],
             "get_exit_code": [], "delete": [], "wall": []}
    for i in range(n):
        name = "bench-kubectl-%d-%d" % (os.getpid(), i)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"restartPolicy": "Never", "automountServiceAccountToken": False,
                        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534,
                                            "seccompProfile": {"type": "RuntimeDefault"}},
                        "containers": [{"name": "fn", "image": CAT_IMAGE, "stdin": True,
                                        "stdinOnce": True, "tty": False,
                                        "securityContext": {
                                            "allowPrivilegeEscalation": False,
                                            "capabilities": {"drop": ["ALL"]}}}]}}
        k = ["kubectl", "-n", cl.ns]
        seq = [
            ("create", k + ["create", "-f", "-"], json.dumps(pod).encode()),
            ("wait_running", k + ["wait", "--for=jsonpath={.status.phase}=Running",
                                  "pod/" + name, "--timeout=120s"], b""),
            ("attach", k + ["attach", "-i", "-q", "-c", "fn", name], INPUT),
            ("wait_terminated", k + ["wait", "--for=jsonpath={.status.containerStatuses[0]"
                                     ".state.terminated.reason}", "pod/" + name,
                                     "--timeout=60s"], b""),
            ("get_exit_code", k + ["get", "pod", name, "-o", "jsonpath={.status."
                                   "containerStatuses[0].state.terminated.exitCode}"], b""),
            ("delete", k + ["delete", "pod", name, "--grace-period=0", "--wait=false"], b""),
        ]
        total = 0.0
        for step, argv, stdin in seq:
            dt, p = timed(argv, cl.env, stdin)
            if p.returncode != 0 or (step == "attach" and p.stdout != INPUT) or \
                    (step == "get_exit_code" and p.stdout != b"0"):
                raise SystemExit("bench: kubectl %s failed: %s" % (step, p.stderr.decode()))
            steps[step].append(dt * 1000)
            total += dt
        steps["wall"].append(total * 1000)
    return {k: statistics.median(v) for k, v in steps.items()}


def write_app(d, functions):
    os.makedirs(d)
    with open(os.path.join(d, "kustomization.yaml"), "w") as f:
        f.write("resources:\n- cm.yaml\n")
        if functions:
            f.write("transformers:\n" + "".join("- fn%d.yaml\n" % i for i in range(functions)))
    with open(os.path.join(d, "cm.yaml"), "w") as f:
        f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\ndata:\n  k: v\n")
    for i in range(functions):
        with open(os.path.join(d, "fn%d.yaml" % i), "w") as f:
            f.write("apiVersion: krmpod.bench/v1\nkind: Identity\nmetadata:\n  name: fn%d\n"
                    "  annotations:\n    config.kubernetes.io/function: |\n      container:\n"
                    "        image: %s\n" % (i, CAT_IMAGE))


def bench_generate(cl, krmpod, tmp, n, xs, pool):
    app, plain = os.path.join(tmp, "app3"), os.path.join(tmp, "app0")
    write_app(app, 3)
    write_app(plain, 0)
    base = dict(cl.env, KRMPOD_NAMESPACE=cl.ns, KRMPOD_KUSTOMIZE="kubectl kustomize",
                KRMPOD_LOG_LEVEL="info", TMPDIR=tmp, PATH=os.environ["PATH"])
    out = {}
    for label, extra in (("prestart on", {"KRMPOD_PRESTART": "true"}),
                         ("prestart off", {"KRMPOD_PRESTART": "false"}),
                         ("exec mode, prestart on", xs),
                         ("warm pool", pool)):
        walls = []
        if label == "warm pool":
            timed([krmpod, "generate"], dict(base, **extra), cwd=app)
        for _ in range(n):
            wall, p = timed([krmpod, "generate"], dict(base, **extra), cwd=app)
            if p.returncode != 0 or b"name: base" not in p.stdout:
                raise SystemExit("bench: generate failed: %s" % p.stderr.decode())
            walls.append(wall * 1000)
        out["generate, 3 functions, " + label] = statistics.median(walls)
    walls = []
    for _ in range(n):
        wall, p = timed(["kubectl", "kustomize", "--enable-alpha-plugins", plain], cl.env)
        if p.returncode != 0:
            raise SystemExit("bench: kustomize failed: %s" % p.stderr.decode())
        walls.append(wall * 1000)
    out["kustomize alone (no functions)"] = statistics.median(walls)
    # kustomize's own time with the same 3 functions, each run locally: its `docker` is a
    # script that execs cat (the functions' entrypoint), so only kustomize's work remains
    local = os.path.join(tmp, "local-bin")
    os.makedirs(local, exist_ok=True)
    with open(os.path.join(local, "docker"), "w") as f:
        f.write("#!/bin/sh\nexec cat\n")
    os.chmod(os.path.join(local, "docker"), 0o755)
    env = dict(cl.env, PATH=local + ":" + os.environ["PATH"])
    walls = []
    for _ in range(n):
        wall, p = timed(["kubectl", "kustomize", "--enable-alpha-plugins", app], env)
        if p.returncode != 0 or b"name: base" not in p.stdout:
            raise SystemExit("bench: kustomize failed: %s" % p.stderr.decode())
        walls.append(wall * 1000)
    out["kustomize, 3 functions run locally (docker = cat)"] = statistics.median(walls)
    return out


def bench_pod_start(cl, n):
    """create -> status Running (what a client sees through the pod) and -> the kubelet's
    Started event, from one pod watch and one event watch per pod; and -> the Started event
    of the same pod with one emptyDir volume mounted (every pod that runs krmpod in the
    function's container has one: the kubelet waits for a pod's volumes in a 300 ms poll,
    and skips the wait for a pod with none)."""
    running, started, with_volume = [], [], []
    for i in range(2 * n):
        volume = i >= n
        name = "bench-start-%d-%d" % (os.getpid(), i)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"restartPolicy": "Never", "automountServiceAccountToken": False,
                        "terminationGracePeriodSeconds": 0,
                        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534,
                                            "seccompProfile": {"type": "RuntimeDefault"}},
                        "containers": [{"name": "fn", "image": CAT_IMAGE, "stdin": True,
                                        "stdinOnce": True,
                                        "securityContext": {
                                            "allowPrivilegeEscalation": False,
                                            "capabilities": {"drop": ["ALL"]}}}]}}
        if volume:
            pod["spec"]["volumes"] = [{"name": "work", "emptyDir": {}}]
            pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "work",
                                                             "mountPath": "/work"}]
        pw = subprocess.Popen(["kubectl", "-n", cl.ns, "get", "pods", "--watch",
                               "--field-selector", "metadata.name=" + name,
                               "-o", "jsonpath={.status.phase}{\"\\n\"}"], env=cl.env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ew = subprocess.Popen(["kubectl", "-n", cl.ns, "get", "events", "--watch-only",
                               "--field-selector", "involvedObject.name=%s,reason=Started"
                               % name, "-o", "jsonpath={.reason}{\"\\n\"}"], env=cl.env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # both watches are established (kubectl start-up)
        t0 = time.monotonic()
        cl.kubectl("-n", cl.ns, "create", "-f", "-", stdin=json.dumps(pod).encode())
        t_run = t_ev = None
        while t_ev is None:
            line = ew.stdout.readline()
            if not line:
                raise SystemExit("bench: the event watch ended")
            if line.strip() == b"Started":
                t_ev = time.monotonic()
        while t_run is None:
            line = pw.stdout.readline()
            if not line:
                raise SystemExit("bench: the pod watch ended")
            if line.strip() == b"Running":
                t_run = time.monotonic()
        pw.kill()
        ew.kill()
        pw.wait()
        ew.wait()
        cl.kubectl("-n", cl.ns, "delete", "pod", name, "--grace-period=0", "--wait=false")
        if volume:
            with_volume.append((t_ev - t0) * 1000)
        else:
            running.append((t_run - t0) * 1000)
            started.append((t_ev - t0) * 1000)
    # the `kubectl create` itself is inside every figure (~50-100 ms of kubectl start-up)
    return {"pod start, create -> status Running": statistics.median(running),
            "pod start, create -> Started event": statistics.median(started),
            "pod start with an emptyDir, create -> Started event":
                statistics.median(with_volume)}


def bench_concurrent(cl, krmpod, tmp, pool, count=16):
    """count renders of the 3-function app at once against the warm pool: render times and
    API requests per render (from each function's summary line)."""
    env = dict(cl.env, KRMPOD_NAMESPACE=cl.ns, KRMPOD_KUSTOMIZE="kubectl kustomize",
               KRMPOD_LOG_LEVEL="info", TMPDIR=tmp, PATH=os.environ["PATH"], **pool,
               KRMPOD_WARM_POOL_SIZE=str(count), KRMPOD_WARM_POOL_MAX=str(4 * count))
    apps = []
    for i in range(count):
        d = os.path.join(tmp, "conc%d" % i)
        write_app(d, 3)
        apps.append(d)

    def burst():
        t0 = time.monotonic()
        procs = [subprocess.Popen([krmpod, "generate"], cwd=d, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for d in apps]
        times, reqs = [], 0
        for p in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                raise SystemExit("bench: concurrent generate failed: %s" % err.decode())
            times.append((time.monotonic() - t0) * 1000)
            reqs += sum(int(m.group(6)) for m in PHASES.finditer(err.decode()))
        return times, reqs

    burst()  # the pool fills
    times, reqs = burst()
    return {"%d concurrent renders (warm pool), p50 render ms" % count: statistics.median(times),
            "%d concurrent renders (warm pool), slowest ms" % count: max(times),
            "%d concurrent renders (warm pool), API requests per function" % count:
                reqs / (3.0 * count)}


def empty_pool(cl, krmpod, pool):
    subprocess.run([krmpod, "gc"], env=dict(cl.env, KRMPOD_NAMESPACE=cl.ns,
                                            PATH=os.environ["PATH"], **pool,
                                            KRMPOD_WARM_POOL_TTL="1ms"),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run(krmpod, n, as_json=None):
    tmp = tempfile.mkdtemp(prefix="krmpod-bench-rk-")
    cl = Cluster()
    try:
        cl.image(tmp, krmpod)
        xs = cl.exec_env(tmp)
        pool = dict(xs, KRMPOD_WARM_POOL="true", KRMPOD_WARM_POOL_IMAGES="krmpod-bench/*")
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir)
        os.symlink(krmpod, os.path.join(bindir, "docker"))
        res = {"shim": bench_shim(cl, krmpod, bindir, n), "kubectl": bench_kubectl(cl, n),
               "shim exec": bench_shim(cl, krmpod, bindir, n, xs),
               "shim warm": bench_shim(cl, krmpod, bindir, n, pool, warm=True)}
        empty_pool(cl, krmpod, pool)
        res.update(bench_generate(cl, krmpod, tmp, n, xs, pool))
        empty_pool(cl, krmpod, pool)
        res.update(bench_concurrent(cl, krmpod, tmp, pool))
        empty_pool(cl, krmpod, pool)
        res.update(bench_pod_start(cl, n))
    finally:
        cl.close()
        shutil.rmtree(tmp, ignore_errors=True)
    s, k = res["shim"], res["kubectl"]
    print("real cluster (realkube, Kubernetes 1.34, one node), medians of %d:" % n)
    print("  krmpod, one function: wall %.0f ms; scheduled %d, started %d, attached %d, "
          "exit seen %d ms after the create; %d API requests" % (
              s["wall_ms"], s["scheduled_ms"], s["started_ms"], s["attached_ms"],
              s["exit_seen_ms"], s["requests"]))
    print("  kubectl sequence, one function: wall %.0f ms; create %.0f, wait Running %.0f, "
          "attach %.0f, wait terminated %.0f, get %.0f, delete %.0f ms" % (
              k["wall"], k["create"], k["wait_running"], k["attach"], k["wait_terminated"],
              k["get_exit_code"], k["delete"]))
    print("  kubectl/krmpod wall ratio: %.1fx" % (k["wall"] / s["wall_ms"]))
    for mode in ("shim exec", "shim warm"):
        m = res[mode]
        print("  krmpod %s, one function: wall %.0f ms (%.2fx attach); exec at %d, exit seen "
              "%d ms after the start; %d API requests (attach: %d)" % (
                  mode.split()[1], m["wall_ms"], m["wall_ms"] / s["wall_ms"], m["attached_ms"],
                  m["exit_seen_ms"], m["requests"], s["requests"]))
    for key in ("generate, 3 functions, prestart on", "generate, 3 functions, prestart off",
                "generate, 3 functions, exec mode, prestart on",
                "generate, 3 functions, warm pool",
                "kustomize alone (no functions)",
                "kustomize, 3 functions run locally (docker = cat)",
                "pod start, create -> status Running",
                "pod start, create -> Started event",
                "pod start with an emptyDir, create -> Started event") + tuple(
                    k for k in res if k.startswith("16 concurrent")):
        print("  %s: %.1f" % (key, res[key]))
    # the floor: kustomize alone plus one pod start, the start taken as the Started event
    # (when a function could begin; the status says Running only at the kubelet's next
    # relist, 0-1 s later, which makes that figure swing from run to run)
    start = res["pod start, create -> Started event"]
    floor = res["kustomize alone (no functions)"] + start
    res["floor_ms"] = floor
    print("  floor (kustomize alone + one pod start to its Started event): %.0f ms; generate "
          "with prestart is %.2fx the floor, exec mode %.2fx" % (
              floor, res["generate, 3 functions, prestart on"] / floor,
              res["generate, 3 functions, exec mode, prestart on"] / floor))
    local = res["kustomize, 3 functions run locally (docker = cat)"]
    vstart = res["pod start with an emptyDir, create -> Started event"]
    print("  a pod with a volume (as every pod that runs krmpod has) starts %.0f ms later; "
          "kustomize alone + that start: %.0f ms, exec mode %.2fx it" % (
              vstart - start, res["kustomize alone (no functions)"] + vstart,
              res["generate, 3 functions, exec mode, prestart on"] /
              (res["kustomize alone (no functions)"] + vstart)))
    print("  kustomize running the functions locally + the start of a pod with a volume: "
          "%.0f ms; exec mode %.2fx it" % (
              local + vstart, res["generate, 3 functions, exec mode, prestart on"] /
              (local + vstart)))
    res["floor_local_ms"] = local + start
    print("  floor with kustomize running the functions locally: %.0f ms; exec mode %.2fx" % (
        local + start, res["generate, 3 functions, exec mode, prestart on"] / (local + start)))
    print("  warm pool: generate with 3 warm functions is kustomize alone + %.0f ms, kustomize "
          "running them locally + %.0f ms (%.0f ms a call); a shim on its own (no generate) "
          "takes %.0f ms" % (
              res["generate, 3 functions, warm pool"] - res["kustomize alone (no functions)"],
              res["generate, 3 functions, warm pool"] - local,
              (res["generate, 3 functions, warm pool"] - local) / 3,
              res["shim warm"]["wall_ms"]))
    if as_json:
        with open(as_json, "w") as f:
            json.dump(res, f, indent=1)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--krmpod", default=os.path.join(ROOT, "build", "krmpod"))
    ap.add_argument("-n", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    run(os.path.abspath(a.krmpod), a.n, a.json)


if __name__ == "__main__":
    sys.exit(main())
