#!/usr/bin/python3
"""make bench, Argo CD section: krmpod under upstream Argo CD on the real cluster, installed
as the real-cluster tier installs it (tests/realkube: argocd.py, conftest.write_overlay).

Measured, medians of n runs, for the tier's three-function app (tests/apptrees.py), in
attach mode (the default) and in exec mode:
  * refresh -> Synced: a hard refresh annotation on the Application until the controller has
    reconciled it again (status.reconciledAt moved, the annotation gone, Synced): the
    repo-server's git work, the tarball to the sidecar, discover, init and generate, and the
    controller's diff;
  * generate alone in the same sidecar: `krmpod generate` on the same app, through
    cmp-hook-run (tests/realkube/cmp-hook-run.c), timed from this machine, less the cost of
    an empty `kubectl exec`;
  * the floor: `kustomize build` here, with every function run directly on this machine
    (tests/fixtures/direct-docker), what a docker-less Argo CD would pay at best.

The cluster is started when it is not running, and then stopped at the end. The tier's
namespaces (argocd, krmpod-functions, the git server's) are made afresh and deleted at the
end."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "realkube"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import apptrees  # noqa: E402
import argocd  # noqa: E402
import conftest  # noqa: E402
import images  # noqa: E402
from kube import kubectl  # noqa: E402
from sidecar import ARGOCD_ENV, Sidecar, direct_build  # noqa: E402

APP = "bench"
DEST = "krmpod-bench-argocd"
PATH_IN_REPO = "apps/bench"


def log(msg):
    sys.stderr.write("argocd-bench: %s\n" % msg)
    sys.stderr.flush()


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def app_get(api):
    return api.get("/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/" + APP)


def refresh_to_synced(api, timeout=120):
    before = (app_get(api).get("status") or {}).get("reconciledAt")
    time.sleep(1.05)  # reconciledAt has whole seconds
    t0 = time.monotonic()
    kubectl("-n", "argocd", "annotate", "--overwrite", "application", APP,
            "argocd.argoproj.io/refresh=hard")
    while time.monotonic() - t0 < timeout:
        a = app_get(api)
        st = a.get("status") or {}
        if (st.get("reconciledAt") != before and (st.get("sync") or {}).get("status") == "Synced"
                and "argocd.argoproj.io/refresh" not in (a["metadata"].get("annotations") or {})):
            return time.monotonic() - t0
        if st.get("conditions"):
            raise RuntimeError("the Application has conditions: %s" % st["conditions"])
        time.sleep(0.05)
    raise RuntimeError("no Synced reconcile within %d s" % timeout)


def generate_alone(sidecar, app, n):
    """(median seconds of generate through cmp-hook-run, median of an empty kubectl exec)."""
    empty, full = [], []
    for _ in range(n):
        t0 = time.monotonic()
        sidecar.exec(["true"])
        empty.append(time.monotonic() - t0)
    for _ in range(n):
        env = dict(ARGOCD_ENV, ARGOCD_APP_NAME=APP)
        repo, path = sidecar.upload_app(app, env)
        t0 = time.monotonic()
        r = subprocess.run(sidecar.run_argv(repo, path, env, 60000, "generate"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        full.append(time.monotonic() - t0)
        if r.returncode != 0:
            raise RuntimeError("generate failed: %s" % r.stderr.decode(errors="replace"))
    for line in r.stderr.decode(errors="replace").splitlines():
        if line.startswith("krmpod["):
            log("  last generate: " + line)
    # what mode each image ran in, said at debug level each time
    env = dict(ARGOCD_ENV, ARGOCD_APP_NAME=APP, KRMPOD_LOG_LEVEL="debug")
    repo, path = sidecar.upload_app(app, env)
    r = subprocess.run(sidecar.run_argv(repo, path, env, 60000, "generate"),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for line in r.stderr.decode(errors="replace").splitlines():
        if "exec mode, manifest" in line or "runs in attach mode" in line:
            log("  " + line)
    return median(full), median(empty)


def set_mode(mode, cluster_env):
    """KRMPOD_MODE on the sidecar (exec mode reads the function images' configs from the
    cluster's registry, whose certificate the cluster CA signed: the sidecar's token mount
    holds that CA)."""
    if mode == "exec":
        kubectl("-n", "argocd", "set", "env", "deployment/argocd-repo-server", "-c", "krmpod",
                "KRMPOD_MODE=exec",
                "KRMPOD_REGISTRY_MIRRORS=example.com=" + cluster_env["REALKUBE_REGISTRY"],
                "KRMPOD_REGISTRY_CA=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt")
    else:
        kubectl("-n", "argocd", "set", "env", "deployment/argocd-repo-server", "-c", "krmpod",
                "KRMPOD_MODE-", "KRMPOD_REGISTRY_MIRRORS-", "KRMPOD_REGISTRY_CA-")
    kubectl("-n", "argocd", "rollout", "status", "deployment/argocd-repo-server",
            "--timeout=180s", timeout=200)
    time.sleep(2)


def run(krmpod, n, modes):
    env, api, started_here = conftest.realkube_up()
    tmp = tempfile.mkdtemp(prefix="argocd-bench-")
    made = []
    try:
        built = images.build_all(env["REALKUBE_CONTAINERD_SOCK"], krmpod)
        conftest.install_all(api, built, made)
        conftest.fresh_namespace(api, argocd.GIT_NAMESPACE)
        kubectl("create", "namespace", argocd.GIT_NAMESPACE)
        kubectl("label", "namespace", argocd.GIT_NAMESPACE, conftest.MARKER + "=true")
        made.append(argocd.GIT_NAMESPACE)
        tree = os.path.join(tmp, "tree")
        apptrees.three_function_app(os.path.join(tree, PATH_IN_REPO))
        commit = argocd.serve_repo(kubectl, tree, built["argocd"]["names"]["argocd"], tmp)
        app_dir = os.path.join(tree, PATH_IN_REPO)

        floor = []
        for _ in range(n):
            t0 = time.monotonic()
            r = direct_build(app_dir, tmp)
            floor.append(time.monotonic() - t0)
            if r.returncode != 0:
                raise RuntimeError("direct build failed: %s" % r.stderr.decode())
        results = {"n": n, "argocd": argocd.version(), "commit": commit,
                   "local_kustomize_direct_s": median(floor), "modes": {}}
        manifest = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                    "metadata": {"name": APP, "namespace": "argocd"},
                    "spec": {"project": "default",
                             "source": {"repoURL": argocd.GIT_URL, "targetRevision": "main",
                                        "path": PATH_IN_REPO, "plugin": {"name": "krmpod-v1"}},
                             "destination": {"server": "https://kubernetes.default.svc",
                                             "namespace": DEST},
                             "syncPolicy": {"automated": {}, "syncOptions":
                                            ["CreateNamespace=true"]}}}
        for mode in modes:
            set_mode(mode, env)
            pod = conftest.current_repo_server_pod(api)
            sidecar = Sidecar("argocd", pod)
            got = sidecar.exec(["sh", "-c", "env | grep ^KRMPOD_ | sort"]).stdout.decode()
            log("%s: the sidecar's settings: %s" % (mode, " ".join(got.split())))
            kubectl("apply", "-f", "-", stdin=json.dumps(manifest).encode())
            deadline = time.monotonic() + 180
            while (app_get(api).get("status") or {}).get("sync", {}).get("status") != "Synced":
                if time.monotonic() > deadline:
                    raise RuntimeError("the Application did not sync: %s" % app_get(api))
                time.sleep(0.5)
            refresh_to_synced(api)  # one warm-up
            times = [refresh_to_synced(api) for _ in range(n)]
            gen, empty = generate_alone(sidecar, app_dir, n)
            results["modes"][mode] = {"refresh_to_synced_s": median(times),
                                      "refresh_to_synced_all_s": times,
                                      "generate_alone_s": gen, "empty_exec_s": empty}
            log("%s: refresh->Synced %.2f s (all %s); generate alone %.2f s (an empty "
                "kubectl exec %.2f s)" % (mode, median(times),
                                          " ".join("%.2f" % t for t in times), gen, empty))
        return results
    finally:
        kubectl("-n", "argocd", "delete", "application", APP, "--ignore-not-found",
                "--wait=false", check=False)
        for ns in made + [DEST]:
            kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        conftest.realkube_down(started_here)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--krmpod", default=os.path.join(ROOT, "build", "krmpod"))
    ap.add_argument("-n", type=int, default=7)
    ap.add_argument("--json")
    ap.add_argument("--modes", default="attach,exec")
    a = ap.parse_args()
    res = run(os.path.abspath(a.krmpod), a.n, a.modes.split(","))
    out = json.dumps(res, indent=1, sort_keys=True)
    print(out)
    if a.json:
        with open(a.json, "w") as f:
            f.write(out + "\n")


if __name__ == "__main__":
    main()
