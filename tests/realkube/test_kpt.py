"""kpt through krmpod on the real cluster: `kpt fn render`, `kpt fn eval --image` (with
--network, --mount, -e and --as-current-user) and `kpt fn doc --image`, each byte for byte
against the same case run with tests/fixtures/direct-docker (the fixture run directly). kpt
runs on this machine, as a user debugging with kind would, with the admin's credentials; the
pods run in krmpod-functions under Pod Security `restricted`, from the tier's images
(tests/realkube/images.py; full references: kpt would put gcr.io/kpt-fn/ before a short
name, and nothing can be pulled here). The kubesim version of these cases, with the argv kpt
emits, is tests/integration/test_kpt.py."""
import os
import shutil
import tempfile
import urllib.parse

import pytest

from conftest import FN_NS, KRMPOD_BIN, ROOT, real_mirrors
from images import FN_IMAGE

from kptlib import (GROUP_ID, KPT, RESOURCES, USER_ID, assert_same, chown_tree, docker_dir,
                    hermetic_env, kpt, tree)

DIRECT_DOCKER = os.path.join(ROOT, "tests", "fixtures", "direct-docker")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "images")

pytestmark = pytest.mark.skipif(not os.path.exists(KPT), reason="kpt is not installed")

KPTFILE = """apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
    - image: %s
      configMap:
        app: demo
    - image: %s
""" % (FN_IMAGE % "set-labels", FN_IMAGE % "add-label")


def pods_env(install, root, **extra):
    kubeconfig = os.path.join(root, "kubeconfig")
    shutil.copy(install.cluster.env["KUBECONFIG"], kubeconfig)
    env = hermetic_env(root, docker_dir(root, KRMPOD_BIN))
    # the proxies lead nowhere; the cluster is exempt, as 127.0.0.1 is for kubesim
    host = urllib.parse.urlsplit(install.cluster.env["REALKUBE_API_SERVER"]).hostname
    env.update({"KUBECONFIG": kubeconfig, "KRMPOD_NAMESPACE": FN_NS,
                "NO_PROXY": env["NO_PROXY"] + "," + host})
    env.update({k: str(v) for k, v in extra.items()})
    return env


def direct_env(root, **extra):
    env = hermetic_env(root, docker_dir(root, DIRECT_DOCKER))
    env.update({"KRMPOD_TEST_IMAGES": FIXTURES, "KRMPOD_TEST_TMP": env["TMPDIR"]})
    env.update({k: str(v) for k, v in extra.items()})
    return env


@pytest.fixture
def shared_root():
    """A directory kpt can use when it runs as USER_ID."""
    d = tempfile.mkdtemp(prefix="krmpod-rk-kpt-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def created(install, mark):
    install.recorder.settle()
    return [p["created"] for p in install.recorder.pods_since(mark).values()]


def test_render_pipeline_of_two_functions(install, shared_root):
    runs, trees = {}, {}
    mark = install.recorder.mark()
    for name in ("pods", "direct"):
        root = os.path.join(shared_root, name)
        os.makedirs(os.path.join(root, "pkg"))
        with open(os.path.join(root, "pkg", "Kptfile"), "w") as f:
            f.write(KPTFILE)
        with open(os.path.join(root, "pkg", "resources.yaml"), "w") as f:
            f.write(RESOURCES)
        env = pods_env(install, root) if name == "pods" else direct_env(root)
        runs[name] = kpt(["fn", "render", "pkg"], root, env)
        trees[name] = tree(os.path.join(root, "pkg"))
    assert runs["pods"].returncode == 0, runs["pods"].stderr.decode()
    assert_same("fn render", runs["pods"], runs["direct"])
    assert trees["pods"] == trees["direct"], (trees["pods"], trees["direct"])
    rendered = trees["pods"]["resources.yaml"].decode()
    assert rendered.count("app: demo") == 4, rendered
    assert len(created(install, mark)) == 2


def test_eval_network_mount_env_as_current_user(install, shared_root):
    runs, trees = {}, {}
    mark = install.recorder.mark()
    for name in ("pods", "direct"):
        root = os.path.join(shared_root, name)
        os.makedirs(os.path.join(root, "pkg"))
        os.makedirs(os.path.join(root, "schemas", "v1"))
        with open(os.path.join(root, "pkg", "resources.yaml"), "w") as f:
            f.write(RESOURCES)
        with open(os.path.join(root, "schemas", "v1", "deployment.json"), "w") as f:
            f.write('{"kind": "Deployment"}\n')
        extra = {"FOO": "from kpt's environment"}
        if name == "pods":
            env = pods_env(install, root, KRMPOD_ALLOW_NETWORK="true",
                           KRMPOD_HELPER_IMAGE=install.pinned_image, **extra)
        else:
            env = direct_env(root, **extra)
        chown_tree(root)
        runs[name] = kpt(["fn", "eval", "pkg", "--image", FN_IMAGE % "read-mount",
                          "--network", "--mount",
                          "type=bind,src=%s/schemas,dst=/schemas" % root,
                          "--as-current-user", "-e", "FOO", "-e", "K=V", "--",
                          "name=seen", "dirs=/schemas", "env=FOO,K,KUBECONFIG"],
                         root, env, as_user=True)
        trees[name] = tree(os.path.join(root, "pkg"))
    assert runs["pods"].returncode == 0, runs["pods"].stderr.decode()
    assert_same("fn eval", runs["pods"], runs["direct"])
    assert trees["pods"] == trees["direct"], (trees["pods"], trees["direct"])
    seen = b"".join(trees["pods"].values()).decode()
    for want in ("ENV_FOO: from kpt's environment", "ENV_K: V", "ENV_KUBECONFIG: <unset>",
                 "schemas.v1.deployment.json: '{\"kind\": \"Deployment\"}\n"):
        assert want in seen, (want, seen)
    (pod,) = created(install, mark)
    assert pod["metadata"]["labels"]["krmpod.dev/network"] == "granted", pod
    sc = pod["spec"]["securityContext"]
    assert (sc["runAsUser"], sc["runAsGroup"]) == (USER_ID, GROUP_ID), sc
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["mounts"]


@pytest.mark.parametrize("fixture,want_rc,want_out", [
    ("with-help", 0, b"with-help: a test function"),
    ("fail", 1, b""),
])
def test_doc(install, tmp_path, fixture, want_rc, want_out):
    """kpt fn doc: `docker run --rm IMAGE --help`, without -i: the pod has no stdin. The
    function prints its help and exits at once, before any attach could prove its output:
    its entrypoint, recorded in the admin's catalog, gives exec mode (issue 29)."""
    import images
    runs = {}
    for name in ("pods", "direct"):
        root = str(tmp_path / name)
        os.makedirs(root)
        catalog = os.path.join(root, "catalog.yaml")
        with open(catalog, "w") as f:
            f.write(images.fixture_catalog([fixture]))
        env = pods_env(install, root, KRMPOD_HELPER_IMAGE=install.pinned_image,
                       KRMPOD_DEFAULT_CATALOGS=catalog) if name == "pods" else direct_env(root)
        runs[name] = kpt(["fn", "doc", "--image", FN_IMAGE % fixture], root, env)
    assert runs["pods"].returncode == want_rc, runs["pods"].stderr.decode()
    assert_same("fn doc " + fixture, runs["pods"], runs["direct"])
    assert want_out in runs["pods"].stdout, runs["pods"].stdout


# ---- real functions (tests/realkube/realfns.py) ------------------------------------------

REAL_KPTFILE = """apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
    - image: %s
      configMap:
        image: nginx:1.27.3
        replicas: "3"
        env: prod
        greeting: hello, world
    - image: %s
      configMap:
        namespace: shop
    - image: %s
      configPath: starlark.yaml
"""


def real_env(install, root, mode, through_pods):
    """The env of kpt for the real functions: on this machine with krmpod as docker (in exec
    mode the image configs come from the cluster's registry under their real names, trusting
    the cluster's CA), or the direct run's."""
    import realfns
    if not through_pods:
        return direct_env(root, **realfns.direct_env(install.images["real"]))
    if mode != "exec":
        return pods_env(install, root)
    cenv = install.cluster.env
    env = pods_env(install, root, KRMPOD_MODE="exec", KRMPOD_HELPER_IMAGE=install.pinned_image,
                   KRMPOD_REGISTRY_CA=cenv["REALKUBE_CA_CERT"],
                   KRMPOD_REGISTRY_MIRRORS=real_mirrors(cenv))
    env["NO_PROXY"] += "," + cenv["REALKUBE_REGISTRY"].rsplit(":", 1)[0]
    return env


@pytest.mark.parametrize("mode", ["attach", "exec"])
def test_render_real_catalog_functions(install, shared_root, mode):
    """apply-setters (the `# kpt-set:` comments kpt keeps), set-namespace and a starlark
    script, from the catalog's modules, byte for byte the direct run, in both modes."""
    import realfns
    from test_realfns import DEPLOY, starlark_config
    runs, trees = {}, {}
    for name in ("pods", "direct"):
        root = os.path.join(shared_root, name)
        os.makedirs(os.path.join(root, "pkg"))
        files = {"Kptfile": REAL_KPTFILE % tuple(realfns.image_name(n) for n in (
                     "apply-setters", "set-namespace", "starlark")),
                 "resources.yaml": DEPLOY,
                 # kpt reads the config; the annotation is kustomize's and does no harm
                 "starlark.yaml": starlark_config()}
        for f, text in files.items():
            with open(os.path.join(root, "pkg", f), "w") as fh:
                fh.write(text)
        runs[name] = kpt(["fn", "render", "pkg"], root,
                         real_env(install, root, mode, name == "pods"))
        trees[name] = tree(os.path.join(root, "pkg"))
    assert runs["pods"].returncode == 0, runs["pods"].stderr.decode()
    assert_same("fn render (real functions, %s mode)" % mode, runs["pods"], runs["direct"])
    assert trees["pods"] == trees["direct"], (trees["pods"], trees["direct"])
    out = trees["pods"]["resources.yaml"].decode()
    # each function did its part: setters (kpt keeps the comments), namespace, starlark x2
    assert "image: nginx:1.27.3 # kpt-set: ${image}" in out, out
    assert "replicas: 6" in out and "greeting: hello, world" in out, out
    assert out.count("namespace: shop") == 3 and "example.com/owner: platform" in out, out
    if mode == "exec":
        assert b"runs in attach mode" not in runs["pods"].stderr and \
            b"own entrypoint" not in runs["pods"].stderr, runs["pods"].stderr.decode()


@pytest.mark.parametrize("mode", ["attach", "exec"])
def test_eval_real_function_over_5000_resources(install, shared_root, mode):
    """`kpt fn eval --image set-namespace` over 5,000 resources (about 1 MB each way)."""
    import realfns
    n = 5000
    docs = "".join("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05d\n"
                   "data:\n  index: \"%d\"\n  payload: %s\n" % (i, i, "x" * 60)
                   for i in range(n))
    runs, trees = {}, {}
    for name in ("pods", "direct"):
        root = os.path.join(shared_root, name)
        os.makedirs(os.path.join(root, "pkg"))
        with open(os.path.join(root, "pkg", "many.yaml"), "w") as f:
            f.write(docs)
        runs[name] = kpt(["fn", "eval", "pkg", "--image", realfns.image_name("set-namespace"),
                          "--", "namespace=bulk"], root,
                         real_env(install, root, mode, name == "pods"))
        trees[name] = tree(os.path.join(root, "pkg"))
    assert runs["pods"].returncode == 0, runs["pods"].stderr.decode()
    assert_same("fn eval over %d resources (%s mode)" % (n, mode), runs["pods"], runs["direct"])
    assert trees["pods"] == trees["direct"]
    out = trees["pods"]["many.yaml"].decode()
    assert out.count("namespace: bulk") == n, out[-400:]
