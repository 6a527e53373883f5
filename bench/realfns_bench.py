#!/usr/bin/python3
"""make bench, real functions section: kpt's catalog functions and an organisation's own
(tests/realkube/realfns.py) through krmpod on the real cluster, installed as the real-cluster
tier installs it (tests/realkube/conftest.install_all, upstream Argo CD included).

Medians of n renders (`krmpod generate` in the sidecar through cmp-hook-run, less an empty
`kubectl exec`), for two apps of tests/realkube/test_realfns.py (the three-function pipeline
and the generator app), in each mode: attach (krmpod's default before issue 22, with the
shipped network gate, and without), exec, the default `auto` (cold: a fresh cache each render,
so each reads the image configs; warm: the same cache), `auto` where no registry is
reachable (it falls back to attach: cold, and warm with the fallback remembered), `auto`
under a signature policy covering every function (the real images signed by cosign v3:
cold, each render verifying the three signatures, and warm, from the cache), and the warm
pool (its first render cold, then warm); beside kustomize running the same binaries on
this machine (tests/fixtures/direct-docker), no pod. Then each image's size and
the time `realkube image` takes to import it and push it to the cluster's registry, what a
first pull would cost here (no registry outside is reachable)."""
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
import conftest  # noqa: E402
import images  # noqa: E402
import realfns  # noqa: E402
import test_realfns  # noqa: E402
from kube import kubectl  # noqa: E402
from sidecar import ARGOCD_ENV, Sidecar, direct_build  # noqa: E402


def log(msg):
    sys.stderr.write("realfns-bench: %s\n" % msg)
    sys.stderr.flush()


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def timed_generate(sidecar, app, env):
    full = dict(ARGOCD_ENV, **env)
    repo, path = sidecar.upload_app(app, full)
    t0 = time.monotonic()
    r = subprocess.run(sidecar.run_argv(repo, path, full, 60000, "generate"),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError("generate failed: %s" % r.stderr.decode(errors="replace"))
    timed_generate.stderr = r.stderr.decode(errors="replace")
    return dt, r.stdout


def sign_all(env, sidecar, real, tmp):
    """Signs every real function image in the cluster's registry with cosign v3 (a bundle,
    the fallback tag) and puts a policy requiring that key for them into the sidecar; the
    render env that names it."""
    import test_signatures
    cluster = type("Cluster", (), {"env": env})()
    signing = test_signatures.Signing(cluster, tempfile.mkdtemp(dir=tmp))
    for v in real.values():
        repo = test_signatures.registry_path(v["image"])
        _, _, digest = signing.cluster_reg.manifest(repo, v["image"].rsplit(":", 1)[1])
        signing.sign(3, repo, digest)
    policy = signing.policy().replace(
        '  - images: ["%s/*"]\n' % test_signatures.SIGNED,
        '  - images: ["%s/*", "%s/*"]\n' % (realfns.CATALOG, realfns.ORG))
    sidecar.add_file(test_signatures.POLICY, policy.encode())
    return {"KRMPOD_SIGNATURE_POLICY": test_signatures.POLICY}


def run(krmpod, n):
    env, api, started_here = conftest.realkube_up()
    tmp = tempfile.mkdtemp(prefix="realfns-bench-")
    made = []
    try:
        built = images.build_all(env["REALKUBE_CONTAINERD_SOCK"], krmpod)
        conftest.install_all(api, built, made)
        sidecar = Sidecar("argocd", conftest.current_repo_server_pod(api))
        exec_env = conftest.real_exec_env(env, sidecar)
        signed_env = sign_all(env, sidecar, built["real"], tmp)
        empty = []
        for _ in range(n):
            t0 = time.monotonic()
            sidecar.exec(["true"])
            empty.append(time.monotonic() - t0)
        e = median(empty)
        results = {"n": n, "empty_exec_s": e, "apps": {}, "images": {}}
        real = built["real"]
        for name, make in (("pipeline", test_realfns.pipeline_app),
                           ("generator", test_realfns.generator_app)):
            app = make(__import__("pathlib").Path(tempfile.mkdtemp(dir=tmp)))
            direct = []
            for _ in range(n):
                t0 = time.monotonic()
                r = direct_build(app, tmp, **realfns.direct_env(real))
                direct.append(time.monotonic() - t0)
                assert r.returncode == 0, r.stderr.decode()
            row = {"direct_s": median(direct)}
            # auto: the registry reachable (the cluster's CA and mirrors), or not (none)
            auto = {k: v for k, v in exec_env.items() if k != "KRMPOD_MODE"}
            modes = {"attach": ({"KRMPOD_MODE": "attach"}, None),
                     "attach_no_gate": ({"KRMPOD_MODE": "attach", "KRMPOD_NETWORK_GATE": "0"},
                                        None),
                     "exec": (exec_env, None),
                     "auto_cold": (auto, "fresh"), "auto_warm": (auto, "kept"),
                     "auto_unreachable_cold": ({}, "fresh"),
                     "auto_unreachable_warm": ({}, "kept"),
                     "auto_signed_cold": (dict(auto, **signed_env), "fresh"),
                     "auto_signed_warm": (dict(auto, **signed_env), "kept")}
            for mode, (menv, cache) in modes.items():
                menv = dict(menv, KRMPOD_PRESTART="true")
                if cache == "kept":  # one render first, to warm it
                    menv["KRMPOD_CACHE_DIR"] = "/tmp/krmpod-bench-%s-%s" % (name, mode)
                    timed_generate(sidecar, app, menv)
                times = []
                for i in range(n):
                    if cache == "fresh":
                        menv["KRMPOD_CACHE_DIR"] = "/tmp/krmpod-bench-%s-%s-%d-%d" % (
                            name, mode, i, os.getpid())
                    dt, out = timed_generate(sidecar, app, menv)
                    assert out == r.stdout, "%s: output differs from the direct run" % mode
                    err = timed_generate.stderr
                    if mode.startswith("auto_unreachable") and cache == "fresh":
                        assert "runs in attach mode: its image config cannot be read" in err, err
                    elif mode.startswith("auto_") and "unreachable" not in mode:
                        assert "runs in attach mode" not in err, err
                    if mode == "auto_signed_cold":
                        assert err.count("signature verified") >= 3, err
                    times.append(dt - e)
                row[mode + "_s"] = median(times)
            pool = dict(exec_env, KRMPOD_WARM_POOL="true", ARGOCD_APP_NAME="bench-%s" % name,
                        KRMPOD_WARM_POOL_IMAGES=test_realfns.POOL_IMAGES)
            cold, _ = timed_generate(sidecar, app, pool)
            warm = [timed_generate(sidecar, app, pool)[0] - e for _ in range(n)]
            row["pool_cold_s"], row["pool_warm_s"] = cold - e, median(warm)
            results["apps"][name] = row
            log("%s: %s" % (name, " ".join("%s=%.2f" % kv for kv in sorted(row.items()))))
        # sizes, and what importing each costs (the stand-in for its first pull)
        for fn, v in sorted(real.items()):
            d = tempfile.mkdtemp(dir=tmp)
            root = os.path.join(d, "root")
            images.busybox_root(root)
            realfns.image_root(v["binary"], root)
            t0 = time.monotonic()
            images.run([images.REALKUBE, "image", v["image"], root, "--entrypoint",
                        json.dumps(realfns.IMAGE_ENTRYPOINT)] +
                       ["--env=%s=%s" % kv for kv in realfns.IMAGE_ENV])
            results["images"][fn] = {"image": v["image"], "size_bytes": v["size"],
                                     "binary_bytes": os.path.getsize(v["binary"]),
                                     "import_s": time.monotonic() - t0}
            log("%s: %.1f MB, import+push %.2f s" % (v["image"], v["size"] / 1e6,
                                                      results["images"][fn]["import_s"]))
        return results
    finally:
        for ns in made:
            kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        conftest.realkube_down(started_here)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--krmpod", default=os.path.join(ROOT, "build", "krmpod"))
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--json", help="write the results here too")
    a = ap.parse_args()
    res = run(os.path.abspath(a.krmpod), a.n)
    print(json.dumps(res, indent=1, sort_keys=True))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
