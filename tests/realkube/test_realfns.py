"""Real KRM functions through krmpod on the real cluster (tests/realkube/realfns.py): kpt's
catalog functions and an organisation's own functions on kyaml's fn/framework, in their own
images under their real names. Every app renders the same bytes through krmpod in attach
mode, in exec mode (the entrypoint read from the real image config in the cluster's
registry) and from the warm pool (cold, then warm), as kustomize running the same function
binaries directly on this machine (tests/fixtures/direct-docker: docker's user, mounts and
resolv.conf, no pod), the docker-equivalent reference.

The apps: a pipeline of three (set-namespace, the organisation's defaults, starlark); a
starlark script alone; the organisation's generator expanding an App into a Deployment,
Service, HPA and PDB, then its defaults and set-namespace (three functions over four
outputs); 1,000 resources through two functions; a function that mounts files; a function
that fails with its own message. Setters (apply-setters reads `# kpt-set:` comments, which
kustomize drops before any function sees the resources) and 5,000 resources (kustomize's
own time grows with their square) go through kpt: tests/realkube/test_kpt.py."""
import re

import pytest

import realfns
from conftest import assert_ok, pod_summary, render
from sidecar import direct_build

MODES = ("attach", "exec", "pool")

DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    env: dev # kpt-set: ${env}
spec:
  replicas: 1 # kpt-set: ${replicas}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.25 # kpt-set: ${image}
          args: [--port, "8080"]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
    - port: 80
      targetPort: 8080
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: hello # kpt-set: ${greeting}
  list: "a,b"
"""

STARLARK_SOURCE = """\
def annotate(items):
  for r in items:
    md = r["metadata"]
    if "annotations" not in md:
      md["annotations"] = {}
    md["annotations"]["example.com/owner"] = "platform"
    if r["kind"] == "Deployment":
      r["spec"]["replicas"] = r["spec"]["replicas"] * 2
annotate(ctx.resource_list["items"])
"""

APP = """apiVersion: platform.example.com/v1
kind: App
metadata:
  name: shop
  labels: {tier: frontend}
  annotations:
    config.kubernetes.io/function: |
      container:
        image: %s
spec:
  containers:
    - name: web
      image: registry.example.com/shop/web:2.4.1
      ports:
        - {name: http, port: 8080}
        - {name: metrics, port: 9090}
      configFrom: [shop-config]
      secretsFrom: [shop-secrets]
      env: {LOG_LEVEL: info, FEATURE_X: "on"}
      resources: {cpu: 250m, memory: 256Mi}
    - name: sidecar
      image: registry.example.com/shop/proxy:1.0.0
  autoscaling: {minReplicas: 2, maxReplicas: 8, targetCPUUtilization: %d}
  monitoring: {enabled: true, port: %s, path: /metrics}
"""

DEFAULTS = """apiVersion: platform.example.com/v1
kind: Defaults
metadata:
  name: org-defaults
  annotations:
    config.kubernetes.io/function: |
      container:
        image: %s
spec:
  labels: {team: shop, cost-center: "4200"}
  requests: {cpu: 50m, memory: 64Mi}
  runAsNonRoot: true
"""


def config(fn, kind="ConfigMap", api="v1", data=None, extra="", mounts=()):
    lines = ["apiVersion: %s" % api, "kind: %s" % kind, "metadata:", "  name: %s" % fn,
             "  annotations:", "    config.kubernetes.io/function: |", "      container:",
             "        image: %s" % realfns.image_name(fn)]
    if mounts:
        lines.append("        mounts:")
        for src, dst in mounts:
            lines += ["        - type: bind", "          src: %s" % src, "          dst: %s" % dst]
    if data:
        lines.append("data:")
        lines += ["  %s: %s" % kv for kv in data.items()]
    return "\n".join(lines) + "\n" + extra


def write(app, files):
    app.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        p = app / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return app


def kustomization(resources=(), generators=(), transformers=()):
    out = ""
    for key, names in (("resources", resources), ("generators", generators),
                       ("transformers", transformers)):
        if names:
            out += "%s:\n%s" % (key, "".join("- %s\n" % n for n in names))
    return out


def setters_config():
    return config("apply-setters", data={"image": "nginx:1.27.3", "replicas": '"3"',
                                         "env": "prod", "greeting": "'hello, world'"})


def starlark_config():
    return config("starlark", kind="StarlarkRun", api="fn.kpt.dev/v1alpha1",
                  extra="source: |\n" + "".join("  " + l + "\n"
                                                for l in STARLARK_SOURCE.splitlines()))


def namespace_config(ns="shop"):
    return config("set-namespace", data={"namespace": ns})


def defaults_config():
    return DEFAULTS % realfns.image_name("inject-defaults")


def pipeline_app(tmp_path):
    return write(tmp_path / "pipeline", {
        "kustomization.yaml": kustomization(["deploy.yaml"], transformers=[
            "namespace.yaml", "defaults.yaml", "starlark.yaml"]),
        "deploy.yaml": DEPLOY, "defaults.yaml": defaults_config(),
        "namespace.yaml": namespace_config(), "starlark.yaml": starlark_config()})


def starlark_app(tmp_path):
    return write(tmp_path / "starlark", {
        "kustomization.yaml": kustomization(["deploy.yaml"], transformers=["starlark.yaml"]),
        "deploy.yaml": DEPLOY, "starlark.yaml": starlark_config()})


def generator_app(tmp_path, target_cpu=70, monitoring_port="metrics", name="generator"):
    return write(tmp_path / name, {
        "kustomization.yaml": kustomization(["deploy.yaml"], generators=["app.yaml"],
                                            transformers=["defaults.yaml", "namespace.yaml"]),
        "deploy.yaml": DEPLOY,
        "app.yaml": APP % (realfns.image_name("app-generator"), target_cpu, monitoring_port),
        "defaults.yaml": defaults_config(),
        "namespace.yaml": namespace_config()})


# kustomize's own work grows with the square of the resources: one function over 5,000
# ConfigMaps takes it 142 s on this machine run directly, with no pod (docs/benchmarks.md),
# past Argo CD's 60 s. The tier gives kustomize 1,000; 5,000 go through kpt (test_kpt).
KUSTOMIZE_LARGE = 1000


def large_app(tmp_path, n=KUSTOMIZE_LARGE):
    docs = "".join("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05d\n"
                   "  labels: {shard: \"%d\"}\ndata:\n  index: \"%d\"\n  payload: %s\n"
                   % (i, i % 16, i, "x" * 40) for i in range(n))
    return write(tmp_path / "large", {
        "kustomization.yaml": kustomization(["many.yaml"], transformers=[
            "namespace.yaml", "starlark.yaml"]),
        "many.yaml": docs, "namespace.yaml": namespace_config("bulk"),
        "starlark.yaml": starlark_config()})


FILES = {"files/app.properties": "color=blue\nsize=3\n",
         "files/logging.yaml": "level: info\nformat: json\n"}


def mounts_app(tmp_path):
    files = dict(FILES)
    files.update({
        "kustomization.yaml": kustomization(generators=["file-config.yaml"]),
        "file-config.yaml": config(
            "file-config", kind="FileConfig", api="platform.example.com/v1",
            mounts=[("./files", "/mnt/config")],
            extra="spec:\n  configMapName: app-files\n  files:\n"
                  "  - /mnt/config/app.properties\n  - /mnt/config/logging.yaml\n")})
    return write(tmp_path / "mounts", files)


POOL_IMAGES = "%s/*,%s/*" % (realfns.CATALOG, realfns.ORG)


def mode_env(mode, real_exec_mode):
    if mode == "attach":
        return {"KRMPOD_MODE": "attach"}
    env = dict(real_exec_mode)
    if mode == "pool":
        env.update(KRMPOD_WARM_POOL="true", KRMPOD_WARM_POOL_IMAGES=POOL_IMAGES)
    return env


def empty_pool(install, real_exec_mode):
    """Deletes the idle pool pods the warm renders left (krmpod gc with a 1 ms TTL)."""
    from test_pool import gc, pool_pods
    out = gc(install, real_exec_mode, KRMPOD_WARM_POOL_TTL="1ms",
             KRMPOD_WARM_POOL_IMAGES=POOL_IMAGES)
    assert pool_pods(install) == [], out


def reference(app, tmp_path, real, flags=()):
    """kustomize with the same binaries run directly (tests/fixtures/direct-docker)."""
    return direct_build(app, tmp_path, flags=flags, **realfns.direct_env(real))


def assert_parity(install, real_exec_mode, app, tmp_path, modes=MODES, flags=()):
    try:
        return parity(install, real_exec_mode, app, tmp_path, modes, flags)
    finally:
        if "pool" in modes:
            empty_pool(install, real_exec_mode)


def parity(install, real_exec_mode, app, tmp_path, modes, flags):
    real = install.images["real"]
    ref = reference(app, tmp_path, real, flags)
    assert ref.returncode == 0, "the direct run failed: %s" % ref.stderr.decode()
    for mode in modes:
        runs = 2 if mode == "pool" else 1  # the pool's cold render, then a warm one
        for i in range(runs):
            r, pods = render(install, app, **mode_env(mode, real_exec_mode))
            assert_ok(r)
            assert r.stdout == ref.stdout, "%s mode (run %d) differs from the direct run:\n" \
                "--- krmpod\n%s\n--- direct\n%s" % (mode, i + 1, r.stdout.decode(),
                                                      ref.stdout.decode())
            err = r.stderr.decode()
            # exec mode ran them from their image config, never falling back to attach
            if mode != "attach":
                assert "runs in attach mode" not in err and "own entrypoint" not in err, err
            used = set(re.findall(r"pod=(\S+): image=", err))
            if mode == "pool" and i == 0:
                cold = used
            if mode == "pool" and i == 1:  # warm: the pods the cold render left, again
                assert used and used <= cold, (used, cold, err)
                assert all("created" not in p for p in pods.values()), (
                    "the warm render made pods: %s\n%s" % (
                        [pod_summary(p) for p in pods.values()], err))
                continue
            for p in pods.values():
                spec = p["created"]["spec"]
                names = [c["name"] for c in spec["containers"]]
                assert names == (["fn"] if mode == "attach" else ["krmpod", "fn"]), \
                    pod_summary(p)
                fn = spec["containers"][-1]
                assert fn["image"].split("@")[0] in {v["image"] for v in real.values()}, \
                    pod_summary(p)
    return ref


def test_pipeline_of_three_functions(install, real_exec_mode, tmp_path):
    ref = assert_parity(install, real_exec_mode, pipeline_app(tmp_path), tmp_path)
    out = ref.stdout.decode()
    # what each real function did (so that parity is not parity of no-ops)
    assert out.count("namespace: shop") == 3 and "example.com/owner: platform" in out, out
    assert "replicas: 2" in out and "memory: 64Mi" in out and "team: shop" in out, out


def test_starlark_script(install, real_exec_mode, tmp_path):
    ref = assert_parity(install, real_exec_mode, starlark_app(tmp_path), tmp_path)
    assert "replicas: 2" in ref.stdout.decode(), ref.stdout.decode()


def test_generator_expands_an_app(install, real_exec_mode, tmp_path):
    ref = assert_parity(install, real_exec_mode, generator_app(tmp_path), tmp_path)
    out = ref.stdout.decode()
    for kind in ("Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"):
        assert "kind: %s" % kind in out, out
    assert "averageUtilization: 70" in out and 'prometheus.io/port: "9090"' in out, out
    assert "cost-center: \"4200\"" in out and "runAsNonRoot: true" in out, out


def test_large_input(install, real_exec_mode, tmp_path):
    ref = assert_parity(install, real_exec_mode, large_app(tmp_path), tmp_path,
                        modes=("attach", "exec"))
    out = ref.stdout.decode()
    n = KUSTOMIZE_LARGE
    assert out.count("kind: ConfigMap") == n and out.count("namespace: bulk") == n, out[-500:]


def test_function_with_mounted_files(install, real_exec_mode, tmp_path):
    ref = assert_parity(install, real_exec_mode, mounts_app(tmp_path), tmp_path,
                        modes=("attach", "exec"))
    out = ref.stdout.decode()
    assert "color=blue" in out and "format: json" in out, out


@pytest.mark.parametrize("mode", MODES)
def test_function_fails_with_its_own_message(install, real_exec_mode, tmp_path, mode):
    app = generator_app(tmp_path, monitoring_port="admin", name="failing")
    ref = reference(app, tmp_path, install.images["real"])
    msg = 'monitoring port "admin" is not a container port'
    assert ref.returncode != 0 and msg in ref.stderr.decode(), ref.stderr.decode()
    try:
        r, pods = render(install, app, **mode_env(mode, real_exec_mode))
    finally:
        if mode == "pool":
            empty_pool(install, real_exec_mode)
    err = r.stderr.decode()
    assert r.returncode != 0 and r.stdout == b"", err
    assert msg in err, err  # the function's own words reach Argo CD's error text
    assert "app-generator" in err, err  # and which function said them
