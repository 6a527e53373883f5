"""Real KRM functions for the real-cluster tier (docs/testing.md, "Real functions"):

  * kpt catalog functions built from their Go modules (tests/tools/fn-catalog,
    tests/tools/fn-apply-setters) at the versions those modules pin, under the catalog's
    real image names (ghcr.io/kptdev/krm-functions-catalog/NAME:TAG);
  * an organisation's own functions on kyaml's fn/framework (tests/tools/fn-org), under
    example.com/platform/NAME:v1.0.0.

Each image is laid out as the catalog's Dockerfile (build/docker/go/Dockerfile) lays it out:
the binary at /usr/local/bin/function, `ENTRYPOINT ["function"]`, no USER (kustomize runs
it as nobody), PATH in the config as the base image's. The base image is alpine:3 there; no
registry is reachable here, so the base is a busybox root filesystem (`realkube
busybox-rootfs`: the same shell tools). `realkube image` imports each into containerd and
pushes it to the cluster's registry, which containerd mirrors ghcr.io and example.com to, so
exec mode reads the real image config under the real name (KRMPOD_REGISTRY_MIRRORS).

The same binaries run directly on this machine for the reference render (direct_env():
tests/fixtures/direct-docker maps an image to its binary through KRMPOD_TEST_FN_BINARIES)."""
import os
import re
import shutil
import tempfile

import images

CATALOG = "ghcr.io/kptdev/krm-functions-catalog"
CATALOG_MODULE = "github.com/kptdev/krm-functions-catalog/functions/go/"
ORG = "example.com/platform"
ORG_TAG = "v1.0.0"
# function -> the build-peers peer that builds it
PEERS = {
    "set-namespace": "fn-catalog",
    "starlark": "fn-catalog",
    "apply-setters": "fn-apply-setters",
    "app-generator": "fn-org",
    "inject-defaults": "fn-org",
    "file-config": "fn-org",
    "net-config": "fn-org",
}
SYS_PATH = images.SYS_PATH


def catalog_version(name):
    """The version of the catalog function `name` its peer's go.mod pins."""
    with open(os.path.join(images.ROOT, "tests", "tools", PEERS[name], "go.mod")) as f:
        m = re.search(r"^\s*(?:require\s+)?%s\s+(v\S+)" % re.escape(CATALOG_MODULE + name),
                      f.read(), re.M)
    if not m:
        raise RuntimeError("tests/tools/%s/go.mod pins no %s" % (PEERS[name], CATALOG_MODULE + name))
    return m.group(1)


def image_name(name):
    if PEERS[name] == "fn-org":
        return "%s/%s:%s" % (ORG, name, ORG_TAG)
    return "%s/%s:%s" % (CATALOG, name, catalog_version(name))


def binaries():
    """{function: path of its binary}, built when their pins changed."""
    script = os.path.join(images.ROOT, "scripts", "build-peers.sh")
    peers = sorted(set(PEERS.values()))
    images.run([script] + peers)
    dirs = {p: images.run([script, "--dir", p]).strip() for p in peers}
    out = {}
    for name, peer in PEERS.items():
        path = os.path.join(dirs[peer], name)
        if not os.access(path, os.X_OK):
            raise RuntimeError("scripts/build-peers.sh %s made no %s" % (peer, path))
        out[name] = path
    return out


# The config the catalog's Dockerfile gives its images (and alpine's PATH).
IMAGE_ENTRYPOINT = ["function"]
IMAGE_ENV = [("PATH", SYS_PATH)]


def image_root(binary, root):
    """Puts binary where the catalog's Dockerfile does, into the root filesystem at root."""
    dst = os.path.join(root, "usr", "local", "bin", "function")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(binary, dst)
    os.chmod(dst, 0o755)


def build_images(imp):
    """Imports every real function's image; {function: {"image", "digest", "binary",
    "size"}} (size: the image's root filesystem in bytes, binary included)."""
    out = {}
    bins = binaries()
    tmp = tempfile.mkdtemp(prefix="realfns-", dir=images.WORK)
    try:
        base = os.path.join(tmp, "base")
        images.busybox_root(base)
        for name, binary in sorted(bins.items()):
            root = os.path.join(tmp, name)
            shutil.copytree(base, root, symlinks=True)
            image_root(binary, root)
            size = sum(os.lstat(os.path.join(d, f)).st_size
                       for d, _, fs in os.walk(root) for f in fs)
            digest = imp.image(image_name(name), root, entrypoint=IMAGE_ENTRYPOINT,
                               env=IMAGE_ENV)
            out[name] = {"image": image_name(name), "digest": digest, "binary": binary,
                         "size": size}
            shutil.rmtree(root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def direct_env(real):
    """The environment tests/fixtures/direct-docker needs to run these images' binaries."""
    return {"KRMPOD_TEST_FN_BINARIES": ",".join(
        "%s=%s" % (v["image"].rsplit(":", 1)[0], v["binary"]) for v in real.values())}
