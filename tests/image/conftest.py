"""Image-test harness (`make image-local`): the built sidecar image, its file layout read from a
`docker export` of a created container, and a kubesim the image's krmpod talks to over the host
network with in-cluster credentials."""
import json
import os
import shutil
import signal
import ssl
import subprocess
import tarfile
import tempfile
import http.client
from urllib.parse import urlparse

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))
KUBESIM = os.path.join(ROOT, "tests", "kubesim", "kubesim")
IMAGES = os.path.join(ROOT, "tests", "fixtures", "images")
IMAGE = os.environ.get("KRMPOD_IMAGE", "krmpod:local")
BASE_IMAGE = os.environ.get("KRMPOD_KUSTOMIZE_BASE_IMAGE", "krmpod-local/kustomize-standin:1")
KUSTOMIZE_PATH = os.environ.get("KRMPOD_KUSTOMIZE_PATH", "/app/kustomize")
PLUGIN_PATH = "/home/argocd/cmp-server/config/plugin.yaml"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def docker(*args, check=True, timeout=120, **kw):
    r = subprocess.run(["docker"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError("docker %s: exit %d: %s" % (" ".join(args), r.returncode,
                                                          r.stderr.decode(errors="replace")))
    return r


def inspect(image):
    return json.loads(docker("image", "inspect", image).stdout)[0]


@pytest.fixture(scope="session")
def image():
    return inspect(IMAGE)


@pytest.fixture(scope="session")
def base_image():
    return inspect(BASE_IMAGE)


class Layout:
    """The image's file system as `docker export` gives it: tar members by absolute path, with
    symlink resolution inside the image (never on the host)."""

    def __init__(self, members, contents):
        self.members, self.contents = members, contents

    def get(self, path):
        return self.members.get("/" + path.strip("/"))

    def resolve(self, path, _depth=0):
        """Returns (final path, TarInfo) after following symlinks in every component."""
        if _depth > 40:
            raise AssertionError("symlink loop at %s" % path)
        parts = [p for p in path.split("/") if p]
        cur = ""
        for i, p in enumerate(parts):
            nxt = cur + "/" + p
            ti = self.members.get(nxt)
            if ti is None:
                raise KeyError(path)
            if ti.issym():
                base = "/" if ti.linkname.startswith("/") else (cur or "/")
                rest = "/".join(parts[i + 1:])
                target = os.path.normpath(os.path.join(base, ti.linkname, rest))
                return self.resolve(target, _depth + 1)
            if ti.islnk():
                nxt = "/" + ti.linkname.strip("/")
                ti = self.members[nxt]
            cur = nxt
        return cur or "/", self.members.get(cur or "/")

    def others_can(self, path, bit):
        """True if a user who is neither the owner nor in the group (uid 999 in the sidecar, gid
        0 only by accident) has `bit` (4 read, 1 exec/search) on path and can reach it."""
        final, ti = self.resolve(path)
        parts = [p for p in final.split("/") if p]
        for i in range(len(parts)):
            d = self.members.get("/" + "/".join(parts[:i]))
            if d is not None and d.isdir() and not d.mode & 0o001:
                return False
        return bool(ti.mode & bit)


@pytest.fixture(scope="session")
def layout():
    """Creates (never starts) a container of the image and reads `docker export`."""
    cid = docker("create", IMAGE).stdout.decode().strip()
    members, contents = {}, {}
    try:
        proc = subprocess.Popen(["docker", "export", cid], stdout=subprocess.PIPE)
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for ti in tar:
                rel = ti.name[2:] if ti.name.startswith("./") else ti.name
                rel = rel.strip("/")
                name = "/" + rel if rel not in ("", ".") else "/"
                members[name] = ti
                if ti.isfile() and name in (PLUGIN_PATH,):
                    contents[name] = tar.extractfile(ti).read()
        assert proc.wait() == 0, "docker export failed"
    finally:
        docker("rm", "-f", cid, check=False)
    return Layout(members, contents)


class Kubesim:
    """tests/kubesim/kubesim on 127.0.0.1 (its certificate carries the IP SAN 127.0.0.1)."""

    def __init__(self, state):
        self.state = state
        self.proc = subprocess.Popen(
            [KUBESIM, "--port", "0", "--images", IMAGES, "--state", state],
            stdout=subprocess.PIPE, stderr=open(os.path.join(state, "kubesim.stderr"), "w"),
            text=True)
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("https://"):
            raise RuntimeError("kubesim did not print its URL: %r" % self.url)
        u = urlparse(self.url)
        self.host, self.port = u.hostname, u.port
        self.token = open(os.path.join(state, "token")).read().strip()
        self.ctx = ssl.create_default_context(cafile=os.path.join(state, "ca.crt"))

    def control(self, method, path):
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=10)
        conn.request(method, path, headers={"Authorization": "Bearer " + self.token})
        resp = conn.getresponse()
        text = resp.read().decode()
        conn.close()
        if resp.status >= 300:
            raise RuntimeError("kubesim %s %s: %d %s" % (method, path, resp.status, text))
        return json.loads(text) if text else None

    def pods(self):
        return self.control("GET", "/kubesim/pods")["pods"]

    def reset(self):
        self.control("POST", "/kubesim/reset")

    def requests(self):
        with open(os.path.join(self.state, "requests.log")) as f:
            return f.read().splitlines()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="session")
def kubesim_session():
    state = tempfile.mkdtemp(prefix="krmpod-image-")
    sim = Kubesim(state)
    yield sim
    sim.stop()
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture
def kubesim(kubesim_session):
    """A fresh kubesim; after the test, asserts that no pod is left behind."""
    kubesim_session.reset()
    yield kubesim_session
    left = kubesim_session.pods()
    kubesim_session.reset()
    assert left == [], "pods left behind after the test: %r" % (left,)


def world_readable_copy(src, dst):
    """Copies a tree with 0755 dirs / 0644 files, so uid 999 in the container can read it."""
    shutil.copytree(src, dst)
    os.chmod(dst, 0o755)
    for d, dirs, files in os.walk(dst):
        for n in dirs:
            os.chmod(os.path.join(d, n), 0o755)
        for n in files:
            os.chmod(os.path.join(d, n), 0o644)
    return dst


@pytest.fixture
def service_account(kubesim, tmp_path):
    """In-cluster credentials as the kubelet mounts them: token, ca.crt, namespace."""
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text(kubesim.token + "\n")
    shutil.copy(os.path.join(kubesim.state, "ca.crt"), str(sa / "ca.crt"))
    (sa / "namespace").write_text("default")
    os.chmod(str(tmp_path), 0o755)
    os.chmod(str(sa), 0o755)
    for n in ("token", "ca.crt", "namespace"):
        os.chmod(str(sa / n), 0o644)
    return str(sa)
