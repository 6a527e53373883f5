"""A private registry on the real cluster (scripts/realkube: Debian's docker-registry with
htpasswd and TLS on its own port; containerd trusts its certificate and holds no credentials
for it, so a pod pulls from it only with an imagePullSecret).

A real function, kpt's set-namespace (tests/realkube/realfns.py), copied there under the
registry's own address, renders in exec mode with the sidecar's settings as the manifests
give them plus KRMPOD_REGISTRY_AUTH (a dockerconfigjson file in the sidecar, for the image
config krmpod reads) and KRMPOD_IMAGE_PULL_SECRETS (a kubernetes.io/dockerconfigjson Secret
in krmpod-functions, for the kubelet's pull): byte for byte the direct run. Without
credentials, and with wrong ones, the render fails naming the registry, the setting and the
pull's reason. The password appears in no line krmpod logs (debug level) and in no pod."""
import base64
import hashlib
import http.client
import json
import re
import ssl
import subprocess
import time
import uuid

import pytest

import realfns
from conftest import FN_NS, assert_ok, pod_summary, render
from sidecar import direct_build

FN = "set-namespace"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
SECRET, WRONG_SECRET = "private-registry-creds", "private-registry-wrong"
AUTH_FILE, WRONG_AUTH_FILE = "/tmp/krmpod-private-auth.json", "/tmp/krmpod-private-wrong.json"
WRONG_PASSWORD = "wrong-password-5fd1c0"


class Registry:
    """The distribution API of one registry over TLS (the cluster's CA), with Basic
    credentials when given."""

    def __init__(self, host, ca, user=None, password=None):
        self.host, self.ctx = host, ssl.create_default_context(cafile=ca)
        self.auth = None if user is None else "Basic " + base64.b64encode(
            ("%s:%s" % (user, password)).encode()).decode()

    def request(self, method, path, body=None, headers=None, want=(200,)):
        conn = http.client.HTTPSConnection(self.host, context=self.ctx, timeout=60)
        h = dict(headers or {})
        if self.auth:
            h["Authorization"] = self.auth
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data, location = r.read(), r.getheader("Location")
        conn.close()
        if r.status not in want:
            raise AssertionError("%s https://%s%s: %d %s" % (method, self.host, path, r.status,
                                                            data[:300]))
        return r.status, data, location


def copy_image(src, src_repo, dst, dst_repo, tag):
    """Copies the image src_repo:tag (its manifest, config and layers) to dst as
    dst_repo:tag; returns the manifest digest."""
    _, manifest, _ = src.request("GET", "/v2/%s/manifests/%s" % (src_repo, tag),
                                 headers={"Accept": OCI_MANIFEST})
    m = json.loads(manifest)
    for d in [m["config"]["digest"]] + [l["digest"] for l in m["layers"]]:
        if dst.request("HEAD", "/v2/%s/blobs/%s" % (dst_repo, d), want=(200, 404))[0] == 200:
            continue
        _, blob, _ = src.request("GET", "/v2/%s/blobs/%s" % (src_repo, d))
        _, _, loc = dst.request("POST", "/v2/%s/blobs/uploads/" % dst_repo, want=(202,))
        loc = loc.split(dst.host, 1)[-1] if loc.startswith("https://") else loc
        dst.request("PUT", loc + ("&" if "?" in loc else "?") + "digest=" + d, body=blob,
                    headers={"Content-Type": "application/octet-stream"}, want=(201,))
    dst.request("PUT", "/v2/%s/manifests/%s" % (dst_repo, tag), body=manifest,
                headers={"Content-Type": OCI_MANIFEST}, want=(201,))
    return "sha256:" + hashlib.sha256(manifest).hexdigest()


def dockerconfig(registry, user, password):
    return json.dumps({"auths": {registry: {"auth": base64.b64encode(
        ("%s:%s" % (user, password)).encode()).decode()}}}).encode()


class Private:
    """The private registry's image and credentials, as the fixture set them up."""

    def __init__(self, env, real):
        self.host = env.get("REALKUBE_PRIVATE_REGISTRY")
        if not self.host:
            pytest.fail("`realkube env` names no REALKUBE_PRIVATE_REGISTRY: the cluster runs "
                        "an older scripts/realkube (realkube stop; realkube start)")
        self.user = env["REALKUBE_PRIVATE_REGISTRY_USER"]
        with open(env["REALKUBE_PRIVATE_REGISTRY_PASSWORD_FILE"]) as f:
            self.password = f.read().strip()
        self.ca, self.sock = env["REALKUBE_CA_CERT"], env["REALKUBE_CONTAINERD_SOCK"]
        self.fn = real[FN]
        self.tag = self.fn["image"].rsplit(":", 1)[1]
        self.repo = "fns/" + FN
        self.image = "%s/%s:%s" % (self.host, self.repo, self.tag)
        # every form of the password a log or a spec could hold
        self.secrets = [self.password, base64.b64encode(
            ("%s:%s" % (self.user, self.password)).encode()).decode()]

    def forget_image(self):
        """Removes the image from the node under its private name (tag and digest), so that
        the next pod must pull it, with or without credentials."""
        for ref in (self.image, "%s/%s@%s" % (self.host, self.repo, self.fn["digest"])):
            subprocess.run(["ctr", "-a", self.sock, "-n", "k8s.io", "images", "rm", ref],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def private(install, cluster):
    env = cluster.env
    p = Private(env, install.images["real"])
    t0 = time.monotonic()
    src = Registry(env["REALKUBE_REGISTRY"], p.ca)
    anonymous = Registry(p.host, p.ca)
    status, _, _ = anonymous.request("GET", "/v2/", want=(200, 401))
    assert status == 401, "the private registry %s answers without credentials" % p.host
    name = p.fn["image"].split("/", 1)[1]  # the cluster's registry keeps it without the host
    digest = copy_image(src, name.rsplit(":", 1)[0], Registry(p.host, p.ca, p.user, p.password),
                        p.repo, p.tag)
    assert digest == p.fn["digest"], (digest, p.fn["digest"])
    for secret, password in ((SECRET, p.password), (WRONG_SECRET, WRONG_PASSWORD)):
        install.api.request("DELETE", "/api/v1/namespaces/%s/secrets/%s" % (FN_NS, secret))
        st, obj = install.api.request("POST", "/api/v1/namespaces/%s/secrets" % FN_NS, {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(
                dockerconfig(p.host, p.user, password)).decode()}})
        assert st == 201, obj
    install.sidecar.put(dockerconfig(p.host, p.user, p.password), AUTH_FILE)
    install.sidecar.put(dockerconfig(p.host, p.user, WRONG_PASSWORD), WRONG_AUTH_FILE)
    print("private registry %s: %s copied in %.1f s" % (p.host, p.image, time.monotonic() - t0))
    yield p
    install.sidecar.sh('rm -rf "$1" "$2" /tmp/krmpod-private-cache-*', AUTH_FILE,
                       WRONG_AUTH_FILE)
    for secret in (SECRET, WRONG_SECRET):
        install.api.request("DELETE", "/api/v1/namespaces/%s/secrets/%s" % (FN_NS, secret))


def app(tmp_path, image):
    d = tmp_path / "app"
    d.mkdir()
    (d / "kustomization.yaml").write_text("resources: [cm.yaml]\ntransformers: [fn.yaml]\n")
    (d / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
                               "data:\n  color: blue\n")
    (d / "fn.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: set-ns\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n        image: %s\n"
        "data:\n  namespace: private-ns\n" % image)
    return d


def cold(env):
    """env with a cache of its own (KRMPOD_CACHE_DIR): krmpod reads the image config from
    the registry, not from what another render of the sidecar cached (a tag's digest is
    remembered for 5 minutes, entrypoint.h)."""
    return dict(env, KRMPOD_CACHE_DIR="/tmp/krmpod-private-cache-" + uuid.uuid4().hex[:8])


def assert_no_secret(p, r, pods):
    text = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    specs = json.dumps([[o for _, _, o in rec["events"]] + [rec["created"]]
                        for rec in pods.values()])
    for s in p.secrets:
        assert s not in text, "the password (or user:password in base64) is in krmpod's output"
        assert s not in specs, "the password (or user:password in base64) is in a pod"


def test_a_private_function_renders_in_exec_mode(install, real_exec_mode, private, tmp_path):
    private.forget_image()
    a = app(tmp_path, private.image)
    env = cold(dict(real_exec_mode, KRMPOD_REGISTRY_AUTH=AUTH_FILE,
                    KRMPOD_IMAGE_PULL_SECRETS=SECRET, KRMPOD_LOG_LEVEL="debug"))
    r, pods = render(install, a, **env)
    assert_ok(r)
    direct = direct_build(a, tmp_path, KRMPOD_TEST_FN_BINARIES="%s/%s=%s" % (
        private.host, private.repo, private.fn["binary"]))
    assert direct.returncode == 0, direct.stderr.decode()
    assert r.stdout == direct.stdout, (r.stdout.decode(), direct.stdout.decode())
    assert b"namespace: private-ns" in r.stdout
    err = r.stderr.decode()
    # the image config came from the private registry with the file's credentials...
    assert "runs in attach mode" not in err and "own entrypoint" not in err, err
    assert '%s/%s: credentials of auths."%s" in %s' % (private.host, private.repo,
                                                       private.host, AUTH_FILE) in err, err
    assert re.search(r"%s\b.* exec mode\b.*manifest %s" % (re.escape(private.image),
                                                          private.fn["digest"]), err), err
    # ...and the pod ran it through pods/exec, pulled with the Secret
    assert len(pods) == 1, [pod_summary(p) for p in pods.values()]
    spec = next(iter(pods.values()))["created"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["krmpod", "fn"], spec
    fn = spec["containers"][1]
    assert fn["image"] == private.image and fn["command"] == ["/krmpod/bin/krmpod", "hold"], fn
    assert spec["imagePullSecrets"] == [{"name": SECRET}], spec
    assert_no_secret(private, r, pods)


def test_without_credentials_the_registry_and_the_setting_are_named(install, real_exec_mode,
                                                                    private, tmp_path):
    private.forget_image()
    r, pods = render(install, app(tmp_path, private.image),
                     **cold(dict(real_exec_mode, KRMPOD_LOG_LEVEL="debug")))
    assert r.returncode != 0, r.stdout.decode()
    err = r.stderr.decode()
    # krmpod cannot read the image config: its own entrypoint, naming the registry and setting
    assert "%s runs in exec mode (KRMPOD_MODE=exec) on its image's own entrypoint: its image " \
           "config cannot be read (" % private.image in err, err
    assert "the registry %s requires credentials: set KRMPOD_REGISTRY_AUTH to a " \
           "dockerconfigjson that has them" % private.host in err, err
    # and the kubelet cannot pull it: the pod's reason is the render's error
    assert "ErrImagePull" in err or "ImagePullBackOff" in err, err
    assert private.image in err, err
    for rec in pods.values():
        assert "imagePullSecrets" not in rec["created"]["spec"], pod_summary(rec)


def test_wrong_credentials_are_refused(install, real_exec_mode, private, tmp_path):
    private.forget_image()
    env = cold(dict(real_exec_mode, KRMPOD_REGISTRY_AUTH=WRONG_AUTH_FILE,
                    KRMPOD_IMAGE_PULL_SECRETS=WRONG_SECRET, KRMPOD_LOG_LEVEL="debug"))
    r, pods = render(install, app(tmp_path, private.image), **env)
    assert r.returncode != 0, r.stdout.decode()
    err = r.stderr.decode()
    assert "the registry %s refused the credentials for %s in %s (KRMPOD_REGISTRY_AUTH, " \
           'auths."%s")' % (private.host, private.repo, WRONG_AUTH_FILE, private.host) in err, err
    assert "ErrImagePull" in err or "ImagePullBackOff" in err, err
    for rec in pods.values():
        assert rec["created"]["spec"]["imagePullSecrets"] == [{"name": WRONG_SECRET}]
    assert WRONG_PASSWORD not in err
    assert_no_secret(private, r, pods)


def test_doctor_names_the_pull_secret(install, private):
    """krmpod's Role does not grant secrets get: doctor says it cannot check the Secret, and
    which rule would let it, with the real API server's 403."""
    r = install.sidecar.exec(["sh", "-c", 'KRMPOD_IMAGE_PULL_SECRETS="$1" krmpod doctor',
                              "sh", SECRET])
    out = r.stdout.decode()
    assert "[WARN] image pull Secret %s (KRMPOD_IMAGE_PULL_SECRETS) in namespace %s: cannot " \
           "check: reading it needs secrets get" % (SECRET, FN_NS) in out, \
        out + r.stderr.decode()
    for s in private.secrets:
        assert s not in out
