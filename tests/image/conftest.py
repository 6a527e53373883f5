"""Image-test harness (`make image-local`): the built sidecar image, its file layout read from a
`docker export` of a created container, and a kubesim the image's krmpod talks to over the host
network with in-cluster credentials."""
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kubesim"))
from kubesim_lib import testing  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))
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


@pytest.fixture(scope="session")
def kubesim_session():
    yield from testing.session("krmpod-image-", lambda state: testing.Kubesim(state, IMAGES))


@pytest.fixture
def kubesim(kubesim_session):
    """A kubesim with no faults; after the test, asserts that no pod is left behind."""
    yield from testing.no_pods_left(kubesim_session)


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
