"""The real-cluster tier (`make realkube-test`): krmpod installed as an admin installs it, on
the project's real single-node Kubernetes (scripts/realkube), and driven as Argo CD drives it.

Session, in order:
  1. a lock (one run of this tier at a time on the machine: the namespaces are fixed by
     manifests/), then `realkube start` when the cluster is not running (and `realkube stop`
     at the end only then: a developer's running cluster is left running);
  2. the images (tests/realkube/images.py), imported only when their content changed;
  3. fresh namespaces: `argocd` and `krmpod-functions` from an earlier run of this tier
     (labelled krmpod.dev/realkube-tier) are deleted first; ones this tier did not create
     stop the run instead of being touched;
  4. upstream Argo CD (tests/realkube/argocd.py): the release's own install.yaml, applied as
     Argo CD's docs say, with the components a render does not need scaled to zero;
  5. manifests/ through the overlay docs/install.md ("Pin the image") tells an admin to
     write, pinning the sidecar image by the digest the import gave, applied with
     `kubectl apply --server-side --field-manager=krmpod -k`; the rollout; the new pod;
  6. a watch on krmpod-functions that records every function pod (kube.PodRecorder).
After every test: no pod may be left in krmpod-functions (they are deleted, and the test
fails, naming them). At the end both namespaces are deleted (without waiting)."""
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# the helpers the tiers share (tests/apptrees.py, tests/kptlib.py)
sys.path.insert(0, os.path.dirname(HERE))

import argocd  # noqa: E402
import images  # noqa: E402
from kube import Api, PodRecorder, kubectl  # noqa: E402
from sidecar import Sidecar  # noqa: E402

ROOT = images.ROOT
REALKUBE = images.REALKUBE
KRMPOD_BIN = os.environ.get("KRMPOD_BIN", os.path.join(ROOT, "build", "krmpod"))
ARGOCD_NS = "argocd"
FN_NS = "krmpod-functions"
MARKER = "krmpod.dev/realkube-tier"
SA_USER = "system:serviceaccount:argocd:argocd-repo-server"
SA_GROUPS = ["system:serviceaccounts", "system:serviceaccounts:argocd", "system:authenticated"]
OVERLAY = os.path.join(images.WORK, "my-krmpod")
LOCK = "/tmp/krmpod-realkube-tier.lock"


def log(msg):
    sys.stderr.write("realkube-tier: %s\n" % msg)
    sys.stderr.flush()


class Cluster:
    def __init__(self, env):
        self.env = env
        self.api = Api(env["REALKUBE_API_SERVER"], env["REALKUBE_CA_CERT"],
                       env["REALKUBE_ADMIN_CERT"], env["REALKUBE_ADMIN_KEY"])


@pytest.fixture(scope="session")
def cluster():
    lock = open(LOCK, "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log("another run of this tier holds %s: waiting for it" % LOCK)
        fcntl.flock(lock, fcntl.LOCK_EX)
    status = subprocess.run([REALKUBE, "status"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    started_here = status.returncode == 3  # stopped; 0 running, 1 degraded (someone's)
    t0 = time.monotonic()
    r = subprocess.run([REALKUBE, "start"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise AssertionError("realkube start failed:\n%s" % r.stderr.decode(errors="replace"))
    log("cluster %s in %.1f s (%s)" % ("started" if started_here else "already running",
                                      time.monotonic() - t0, r.stdout.decode().strip()))
    env = dict(l[len("export "):].split("=", 1) for l in
               subprocess.run([REALKUBE, "env"], stdout=subprocess.PIPE, check=True)
               .stdout.decode().splitlines() if l.startswith("export "))
    os.environ["KUBECONFIG"] = env["KUBECONFIG"]
    try:
        yield Cluster(env)
    finally:
        if started_here:
            log("stopping the cluster this run started")
            subprocess.run([REALKUBE, "stop"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        lock.close()


@pytest.fixture(scope="session")
def built_images(cluster):
    t0 = time.monotonic()
    res = images.build_all(cluster.env["REALKUBE_CONTAINERD_SOCK"], KRMPOD_BIN)
    log("images in %.1f s: imported %s; unchanged %d" % (
        time.monotonic() - t0, ", ".join(res["imported"]) or "none", len(res["reused"])))
    return res


def fresh_namespace(api, name):
    """Deletes `name` if an earlier run of this tier made it, and waits until it is gone."""
    status, ns = api.request("GET", "/api/v1/namespaces/" + name)
    if status == 404:
        return
    labels = (ns.get("metadata") or {}).get("labels") or {}
    if labels.get(MARKER) != "true":
        raise AssertionError(
            "namespace %s exists and was not made by this tier (no label %s=true): the tier "
            "installs krmpod there as manifests/ says and will not touch a namespace it did "
            "not create; delete it yourself or run on a cluster without it" % (name, MARKER))
    log("deleting namespace %s left by an earlier run" % name)
    kubectl("delete", "namespace", name, "--wait=false", check=False)
    deadline = time.monotonic() + 120
    while api.request("GET", "/api/v1/namespaces/" + name)[0] != 404:
        if time.monotonic() > deadline:
            raise AssertionError("namespace %s was not deleted within 120 s" % name)
        time.sleep(0.3)


# The admin's catalog (docs/catalogs.md, "The ConfigMap"): AddLabel, the add-label fixture
# image pinned by the digest its import gave.
ADMIN_CATALOG = """apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: realkube-admin
spec:
  krmFunctions:
    - group: krmpod.test
      names:
        kind: AddLabel
      description: adds a label to every resource
      publisher: krmpod.test
      versions:
        - name: v1
          idempotent: true
          runtime:
            container:
              image: %s
              sha256: %s
"""


def write_overlay(built):
    """docs/install.md, "Pin the image": an overlay of one's own with manifests/ as a
    resource and an `images:` pin of the sidecar image by digest; and docs/catalogs.md:
    the admin's catalog as a patch of the krmpod-catalogs ConfigMap."""
    os.makedirs(OVERLAY, exist_ok=True)
    rel = os.path.relpath(os.path.join(ROOT, "manifests"), OVERLAY)
    catalog = ADMIN_CATALOG % (images.FN_IMAGE % "add-label",
                               built["functions"]["add-label"].split(":", 1)[1])
    with open(os.path.join(OVERLAY, "catalog-patch.yaml"), "w") as f:
        f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: krmpod-catalogs\n"
                "  namespace: argocd\ndata:\n  catalog.yaml: |\n")
        f.write("".join("    " + line + "\n" for line in catalog.splitlines()))
    # manifests/functions/admission.yaml's parameters, as an admin whose functions may be
    # granted the network and whose PodTemplate adds a volume and a toleration sets them
    # (test_render's template; test_admission changes them back for its own checks)
    with open(os.path.join(OVERLAY, "admission-patch.yaml"), "w") as f:
        f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: krmpod-admission\n"
                "  namespace: krmpod-functions\ndata:\n  allowNetwork: \"true\"\n"
                "  templateVolumes: scratch\n  templateTolerationKeys: dedicated\n")
    with open(os.path.join(OVERLAY, "kustomization.yaml"), "w") as f:
        f.write("resources:\n  - %s\nimages:\n  - name: %s\n    digest: %s\n"
                "patches:\n  - path: catalog-patch.yaml\n  - path: admission-patch.yaml\n"
                % (rel, images.SIDECAR_REPO, built["sidecar"]))
    return OVERLAY


class Install:
    def __init__(self, cluster, built, sidecar, pod, rendered, recorder, apply_out):
        self.cluster, self.api, self.images = cluster, cluster.api, built
        self.sidecar, self.pod, self.rendered = sidecar, pod, rendered
        self.recorder, self.apply_out = recorder, apply_out
        self.pinned_image = "%s@%s" % (images.SIDECAR_REPO, built["sidecar"])

    def rendered_container(self):
        dep = next(o for o in self.rendered if o["kind"] == "Deployment")
        return next(c for c in dep["spec"]["template"]["spec"]["containers"]
                    if c["name"] == "krmpod")

    def fresh_pod(self):
        return self.api.get("/api/v1/namespaces/%s/pods/%s" % (ARGOCD_NS, self.pod))


def current_repo_server_pod(api):
    pods = [p for p in api.pods(ARGOCD_NS, "app.kubernetes.io/name=argocd-repo-server")
            if not p["metadata"].get("deletionTimestamp")
            and p["status"].get("phase") == "Running"
            and any(c["name"] == "krmpod" for c in p["spec"]["containers"])
            and all(s.get("ready") for s in p["status"].get("containerStatuses") or [])]
    if len(pods) != 1:
        raise AssertionError("expected one ready repo-server pod with the krmpod sidecar, "
                             "found %s" % [p["metadata"]["name"] for p in pods])
    return pods[0]["metadata"]["name"]


def install_all(api, built, created):
    """Argo CD as its docs install it, then krmpod as docs/install.md tells an admin, into
    fresh namespaces (each one made is appended to `created`, for the caller to delete);
    (the overlay rendered, the apply's output, the ready repo-server pod's name)."""
    import yaml
    for ns in (ARGOCD_NS, FN_NS):
        fresh_namespace(api, ns)
    kubectl("create", "namespace", ARGOCD_NS)
    created.append(ARGOCD_NS)
    kubectl("label", "namespace", ARGOCD_NS, MARKER + "=true")
    argocd.install(kubectl)
    overlay = write_overlay(built)
    rendered = [d for d in yaml.safe_load_all(kubectl("kustomize", overlay).stdout) if d]
    out = kubectl("apply", "--server-side", "--field-manager=krmpod", "-k", overlay)
    created.append(FN_NS)
    kubectl("label", "namespace", FN_NS, MARKER + "=true")
    kubectl("-n", ARGOCD_NS, "rollout", "status", "deployment/argocd-repo-server",
            "--timeout=180s", timeout=200)
    argocd.wait_ready(kubectl)
    return rendered, out, current_repo_server_pod(api)


@pytest.fixture(scope="session")
def install(cluster, built_images):
    api = cluster.api
    t0 = time.monotonic()
    created = []
    try:
        rendered, out, pod = install_all(api, built_images, created)
        recorder = PodRecorder(api, FN_NS)
        log("installed in %.1f s: repo-server pod %s" % (time.monotonic() - t0, pod))
        inst = Install(cluster, built_images, Sidecar(ARGOCD_NS, pod), pod, rendered,
                       recorder, out.stdout.decode())
        yield inst
        recorder.stop()
    finally:
        for ns in created:
            kubectl("delete", "namespace", ns, "--wait=false", check=False)


@pytest.fixture
def sidecar(install):
    return install.sidecar


@pytest.fixture(scope="session")
def exec_mode(cluster, built_images, install):
    """KRMPOD_MODE=exec for renders (docs/internals/exec-mode.md): the function images'
    configs are read from a real registry (Debian's docker-registry, TLS with a CA of its
    own) on the node's address, which the sidecar reaches; the fixture images are on the
    node already (imported), so the registry holds only what krmpod reads: manifests and
    configs saying what each image runs, as images.py built it. Returns the render env."""
    import registrylib
    node = cluster.env.get("REALKUBE_NODE_IP", "10.245.0.1")
    state = os.path.join(images.WORK, "exec-registry")
    shutil.rmtree(state, ignore_errors=True)
    pki = registrylib.Pki(state, ips=(node,))
    reg = registrylib.Registry(pki, addr=node)
    try:
        for name in built_images["functions"]:
            reg.push_image("fns/" + name, "v1", images.function_config(name))
        ca = "/tmp/krmpod-exec-registry-ca.crt"
        with open(pki.ca, "rb") as f:
            install.sidecar.add_file(ca, f.read())
        yield {"KRMPOD_MODE": "exec", "KRMPOD_REGISTRY_CA": ca,
               "KRMPOD_REGISTRY_MIRRORS": "example.com=" + reg.host}
    finally:
        reg.stop()


def real_exec_env(cluster_env, sidecar):
    """KRMPOD_MODE=exec for the real functions (tests/realkube/realfns.py): their image
    configs are read under their real names (ghcr.io/..., example.com/...) from the cluster's
    registry (scripts/realkube: the one containerd mirrors those names to), through
    KRMPOD_REGISTRY_MIRRORS, trusting the cluster's CA (put into the sidecar). The render env."""
    ca = "/tmp/krmpod-realkube-ca.crt"
    with open(cluster_env["REALKUBE_CA_CERT"], "rb") as f:
        sidecar.add_file(ca, f.read())
    return {"KRMPOD_MODE": "exec", "KRMPOD_REGISTRY_CA": ca,
            "KRMPOD_REGISTRY_MIRRORS": real_mirrors(cluster_env)}


def real_mirrors(cluster_env):
    """KRMPOD_REGISTRY_MIRRORS for the real functions' registries: the cluster's registry."""
    reg = cluster_env["REALKUBE_REGISTRY"]
    return "ghcr.io=%s,example.com=%s" % (reg, reg)


@pytest.fixture(scope="session")
def real_exec_mode(cluster, install):
    return real_exec_env(cluster.env, install.sidecar)


def realkube_up():
    """For the benches: the cluster started unless it runs; (its env, an admin Api, whether
    it was started here: realkube_down stops it then)."""
    st = subprocess.run([REALKUBE, "status"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
    subprocess.run([REALKUBE, "start"], check=True, stdout=subprocess.PIPE)
    env = dict(l[len("export "):].split("=", 1) for l in images.run(
        [REALKUBE, "env"]).splitlines() if l.startswith("export "))
    os.environ["KUBECONFIG"] = env["KUBECONFIG"]
    api = Api(env["REALKUBE_API_SERVER"], env["REALKUBE_CA_CERT"], env["REALKUBE_ADMIN_CERT"],
              env["REALKUBE_ADMIN_KEY"])
    return env, api, st.returncode == 3


def realkube_down(started_here):
    if started_here:
        subprocess.run([REALKUBE, "stop"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.fixture(autouse=True)
def no_pods_left(request):
    """After each test: no pod in krmpod-functions (they are deleted, and the test fails)."""
    if "install" not in request.fixturenames:
        yield
        return
    inst = request.getfixturevalue("install")
    yield
    left = inst.api.pods(FN_NS)
    if left:
        names = ["%s (%s)" % (p["metadata"]["name"], p["status"].get("phase")) for p in left]
        for p in left:
            inst.api.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % (
                FN_NS, p["metadata"]["name"]), {"gracePeriodSeconds": 0})
        pytest.fail("pods left behind in %s after the test: %s" % (FN_NS, ", ".join(names)))


def render(install, app, **env):
    """(CompletedProcess, {uid: recorded pod}) of one generate in the sidecar."""
    mark = install.recorder.mark()
    r = install.sidecar.render(app, env=env)
    install.recorder.settle()
    return r, install.recorder.pods_since(mark)


RECORDED_CATALOG = "/tmp/.krmpod-tier/recorded-entrypoints.yaml"


def recorded_entrypoints(install, *fixtures):
    """The env of a render whose admin catalogs also record the fixtures' entrypoints
    (images.fixture_catalog): the sidecar cannot read their configs (no registry for
    example.com), so this is what gives them exec mode. The shipped KRMPOD_DEFAULT_CATALOGS
    is read from the running sidecar and kept first."""
    import images
    install.sidecar.add_file(RECORDED_CATALOG, images.fixture_catalog(fixtures).encode())
    r = install.sidecar.sh('printf %s "$KRMPOD_DEFAULT_CATALOGS"')
    assert r.returncode == 0, r.stderr.decode()
    shipped = r.stdout.decode()
    return {"KRMPOD_DEFAULT_CATALOGS": ",".join(c for c in (shipped, RECORDED_CATALOG) if c)}


def containers(pods):
    """The container names of every recorded pod: ["krmpod", "fn"] is exec mode."""
    return [[c["name"] for c in rec["created"]["spec"]["containers"]] for rec in pods.values()]


def assert_ok(r):
    assert r.returncode == 0, "generate failed (exit %d):\n%s" % (
        r.returncode, r.stderr.decode(errors="replace"))


def fn_container(pod):
    """The function's container of a pod object (beside krmpod's in exec mode)."""
    return [c for c in pod["spec"]["containers"] if c["name"] == "fn"][0]


def exit_codes(rec, init=False):
    """The exit codes a recorded pod's (init) containers reported."""
    key = "initContainerStatuses" if init else "containerStatuses"
    return [s["state"]["terminated"]["exitCode"] for _, _, o in rec["events"]
            for s in (o.get("status") or {}).get(key) or [] if "terminated" in s.get("state", {})]


def pod_summary(rec):
    """One line per recorded pod, for failure messages."""
    o = rec.get("last", rec["created"])
    return "%s phase=%s labels=%s owners=%s" % (
        rec["name"], (o.get("status") or {}).get("phase"), o["metadata"].get("labels"),
        o["metadata"].get("ownerReferences"))


def dump(obj):
    return json.dumps(obj, indent=1, sort_keys=True)
