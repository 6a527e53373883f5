"""kpt is a supported client: /usr/bin/kpt (1.0.0-beta) drives the shim on kubesim.

Each case runs twice, through krmpod and with tests/fixtures/direct-docker (the fixture run
directly, as docker would), and the two runs must agree byte for byte: the package's files,
kpt's stdout, kpt's stderr (kpt copies each function's stderr into it, so anything the shim
said would show) with only kpt's own timings masked, and the exit code.

The docker argv kpt 1.0.0-beta.56 emits, seen with a logging fake docker:
  docker version --format {{.Client.Version}}        first, once per kpt run (>= 20.10.0)
  fn render / fn eval:
    docker run --rm -i --network none|host --user nobody|UID:GID
      --security-opt=no-new-privileges --pull missing
      [--mount type=bind,source=S,target=T,readonly]... [-e K=V]... [-e NAME]... IMAGE
    (--network host for --network, --user UID:GID for --as-current-user; kpt rewrites
    --mount src=,dst= to source=,target= and adds readonly; -e K=V come first)
  fn doc:
    docker run --rm IMAGE --help                     (no -i)
kpt puts gcr.io/kpt-fn/ in front of a name without a '/'; kubesim runs the executable named
by the last path segment without its tag, so both kinds of reference work.

The runs are hermetic: HOME, kpt's caches and TMPDIR in the test's directory, nothing else
from our environment, and proxies that lead nowhere (the cluster on 127.0.0.1 is exempt),
so nothing kpt might fetch leaves the machine."""
import http.client
import json
import os
import re
import shutil
import socket
import tempfile
import threading
import time

import pytest

from conftest import ATTACH_ALLOW, EXEC_MODE, fn_container, HELPER_IMAGE, IMAGES, KRMPOD_BIN, ROOT, base_env, no_sanitizer_reports

from kptlib import (GROUP_ID, KPT, KPTFILE, RESOURCES, USER_ID, assert_same, chown_tree,
                    docker_dir, hermetic_env, kpt, tree)

DIRECT_DOCKER = os.path.join(ROOT, "tests", "fixtures", "direct-docker")

pytestmark = pytest.mark.skipif(not os.path.exists(KPT), reason="kpt is not installed")


def pods_env(sim, root, **extra):
    """kpt with krmpod as its docker, at krmpod's default log level."""
    # KUBECONFIG, sanitizers (and exec mode's settings; its cache under kpt's own TMPDIR)
    env = {k: v for k, v in base_env(sim).items()
           if k not in ("PATH", "HOME", "KRMPOD_LOG_LEVEL", "KRMPOD_CACHE_DIR")}
    env.update(hermetic_env(root, docker_dir(root, KRMPOD_BIN)))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def direct_env(root, **extra):
    """kpt with the reference docker (tests/fixtures/direct-docker)."""
    env = hermetic_env(root, docker_dir(root, DIRECT_DOCKER))
    env.update({"KRMPOD_TEST_IMAGES": IMAGES, "KRMPOD_TEST_TMP": env["TMPDIR"]})
    env.update({k: str(v) for k, v in extra.items()})
    return env


def pod_creations(sim, since):
    return [l for l in sim.requests()[since:] if " POST /api/v1/namespaces/" in l
            and "/pods?" in l]


class PodWatch:
    """Collects the pods created while it runs (their specs as created), through a watch."""

    def __init__(self, sim):
        self.pods = []
        self.conn = http.client.HTTPSConnection(sim.host, sim.port, context=sim.ctx,
                                                timeout=120)
        self.conn.request("GET", "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=120",
                          headers={"Authorization": "Bearer " + sim.token})
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            # kubesim sends the headers with the first event
            for line in self.conn.getresponse():
                ev = json.loads(line)
                if ev.get("type") == "ADDED":
                    self.pods.append(ev["object"])
        except Exception:  # noqa: BLE001 - closed under it by wait()
            pass

    def wait(self, n, timeout=10):
        deadline = time.time() + timeout
        while len(self.pods) < n and time.time() < deadline:
            time.sleep(0.05)
        try:
            # ends the reader's recv (close() alone would wait for it)
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()
        return self.pods


def test_render_pipeline_of_two_functions(kubesim, tmp_path):
    """kpt fn render: a Kptfile pipeline with a short catalog-style name (configMap
    functionConfig) and a full reference without any functionConfig."""
    runs, trees = {}, {}
    before = len(kubesim.requests())
    for name in ("pods", "direct"):
        root = tmp_path / name
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "Kptfile").write_text(KPTFILE)
        (root / "pkg" / "resources.yaml").write_text(RESOURCES)
        env = pods_env(kubesim, str(root)) if name == "pods" else direct_env(str(root))
        runs[name] = kpt(["fn", "render", "pkg"], root, env)
        trees[name] = tree(root / "pkg")
    assert runs["pods"].returncode == 0, runs["pods"].stderr.decode()
    assert_same("fn render", runs["pods"], runs["direct"])
    assert trees["pods"] == trees["direct"], (trees["pods"], trees["direct"])
    rendered = trees["pods"]["resources.yaml"].decode()
    # both functions ran, in order, as pods: set-labels, then add-label (no config)
    assert rendered.count("app: demo") == 4, rendered  # 2 items + selector + template
    assert rendered.count("krmpod.test/touched: 'true'") == 2, rendered
    err = runs["pods"].stderr.decode()
    # the functions' stderr, in kpt's results (3 items: the Kptfile is one)
    assert '"set-labels: labelled 3 items"' in err and '"add-label: labelled 3 items"' in err
    assert "gcr.io/kpt-fn/set-labels:v0.1" in err, err
    assert len(pod_creations(kubesim, before)) == 2, kubesim.requests()[before:]
    no_sanitizer_reports(runs["pods"].stderr)


@pytest.fixture
def shared_root():
    """A directory kpt can use when it runs as USER_ID (pytest's tmp_path is root's only)."""
    d = tempfile.mkdtemp(prefix="krmpod-kpt-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_eval_network_mount_env_as_current_user(kubesim, shared_root):
    """kpt fn eval --image with --network, --mount, -e NAME, -e K=V and --as-current-user,
    kpt running as a non-root user."""
    runs, trees = {}, {}
    before = len(kubesim.requests())
    watch = PodWatch(kubesim)
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
            shutil.copy(kubesim.kubeconfig, os.path.join(root, "kubeconfig"))
            env = pods_env(kubesim, root, KUBECONFIG=os.path.join(root, "kubeconfig"),
                           KRMPOD_ALLOW_NETWORK="true", KRMPOD_HELPER_IMAGE=HELPER_IMAGE,
                           **extra)
        else:
            env = direct_env(root, **extra)
        chown_tree(root)
        runs[name] = kpt(["fn", "eval", "pkg", "--image", "example.com/fns/read-mount:v1",
                          "--network", "--mount",
                          "type=bind,src=%s/schemas,dst=/schemas" % root,
                          "--as-current-user", "-e", "FOO", "-e", "K=V", "--",
                          "name=seen", "dirs=/schemas", "env=FOO,K,HOME,KUBECONFIG"],
                         root, env, as_user=True)
        trees[name] = tree(os.path.join(root, "pkg"))
    assert runs["pods"].returncode == 0, runs["pods"].stderr.decode()
    if EXEC_MODE:  # each call has a HOME of its own (docs/internals/exec-mode.md)
        for k, v in trees["pods"].items():
            m = re.search(rb"ENV_HOME: (\S+)", v)
            if m:
                assert b"/call-" in m.group(1), v
                trees["pods"][k] = v.replace(m.group(0), b"ENV_HOME: <unset>")
    assert_same("fn eval", runs["pods"], runs["direct"])
    assert trees["pods"] == trees["direct"], (trees["pods"], trees["direct"])
    seen = b"".join(trees["pods"].values()).decode()
    for want in ("ENV_FOO: from kpt's environment", "ENV_K: V", "ENV_HOME: <unset>",
                 "ENV_KUBECONFIG: <unset>", "/schemas/v1/deployment.json f 444 23",
                 "schemas.v1.deployment.json: '{\"kind\": \"Deployment\"}\n"):
        assert want in seen, (want, seen)
    assert len(pod_creations(kubesim, before)) == 1, kubesim.requests()[before:]
    pods = watch.wait(1)
    assert len(pods) == 1, pods
    spec = pods[0]["spec"]
    assert pods[0]["metadata"]["labels"]["krmpod.dev/network"] == "granted", pods[0]
    assert (spec["securityContext"]["runAsUser"],
            spec["securityContext"]["runAsGroup"]) == (USER_ID, GROUP_ID), spec
    assert [c["name"] for c in spec["initContainers"]] == ["mounts"], spec
    # kpt passes -i: the container takes stdin (exec mode: the call's exec does)
    assert fn_container(spec)["stdin"] is not EXEC_MODE, spec
    no_sanitizer_reports(runs["pods"].stderr)


def test_eval_as_current_user_root_is_refused_clearly(kubesim, tmp_path):
    """kpt running as root passes --user 0:0: function pods never run as root."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "resources.yaml").write_text(RESOURCES)
    before = len(kubesim.requests())
    r = kpt(["fn", "eval", "pkg", "--image", "example.com/fns/add-label:v1",
             "--as-current-user"], tmp_path, pods_env(kubesim, str(tmp_path)))
    err = r.stderr.decode()
    assert r.returncode != 0, err
    assert "--user 0:0: function pods never run as root" in err, err
    assert "--as-current-user" in err and "Exit code: 125" in err, err
    assert pod_creations(kubesim, before) == []
    assert (tmp_path / "pkg" / "resources.yaml").read_text() == RESOURCES


@pytest.mark.parametrize("image,want_rc,want_out", [
    # its usage on stdout (a short name: kpt makes it gcr.io/kpt-fn/with-help:v1)
    ("with-help:v1", 0, b"with-help: a test function"),
    # reads its stdin: empty without -i, so it ends at once
    ("example.com/fns/cat:v1", 0, b"\n"),
    # fails after reading stdin: kpt shows its stderr
    ("example.com/fns/fail:v1", 1, b""),
])
def test_doc(kubesim, tmp_path, image, want_rc, want_out):
    """kpt fn doc runs `docker run --rm IMAGE --help`, without -i."""
    runs = {}
    for name in ("pods", "direct"):
        root = tmp_path / name
        root.mkdir()
        # `--help` ends at once: its output may be in the pod log only
        env = pods_env(kubesim, str(root), **ATTACH_ALLOW) if name == "pods" \
            else direct_env(str(root))
        t0 = time.time()
        runs[name] = kpt(["fn", "doc", "--image", image], root, env)
        assert time.time() - t0 < 60, (name, "kpt fn doc took too long")
    assert runs["pods"].returncode == want_rc, runs["pods"].stderr.decode()
    assert_same("fn doc " + image, runs["pods"], runs["direct"])
    assert want_out in runs["pods"].stdout, runs["pods"].stdout
    if want_rc:
        assert b"fail: boom" in runs["pods"].stderr, runs["pods"].stderr
    no_sanitizer_reports(runs["pods"].stderr)
