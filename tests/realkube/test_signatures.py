"""Signature verification against the real cosign (docs/signatures.md): images in the
cluster's TLS registry (Debian's docker-registry, distribution 2.8: no referrers API) and in
go-containerregistry's registry with the OCI 1.1 referrers API (tests/tools/ocireg), signed
offline by cosign v3 (a sigstore bundle, the default) and cosign v2 (the legacy
`sha256-<hex>.sig` tag), both built from their Go modules (scripts/build-peers.sh).

Every render runs in the real sidecar through `generate`, with KRMPOD_SIGNATURE_POLICY
naming a policy file that lists the test's public key for example.com/signed/*. A signed
function runs, and its pod runs the verified digest; every other case is refused before
kustomize's function runs, with no pod, and the error names the image, the digest, the
policy's requirement, the key and the reason.

The functions are copies of the real set-namespace image (tests/realkube/realfns.py), one
repository per case, so that no case sees another's signatures. containerd pulls
example.com/* from the cluster's registry (scripts/realkube); krmpod reads them there too
(KRMPOD_REGISTRY_MIRRORS), or, for the referrers case, from ocireg, which holds the same
image by the same digest."""
import json
import os
import secrets
import ssl
import subprocess
import time

import pytest

import images
import realfns
import registrylib
from conftest import assert_ok, log, real_exec_env, render

SIGNED = "example.com/signed"
SOURCE = realfns.image_name("set-namespace")  # ghcr.io/kptdev/...:v0.4.5
OCIREG_PORT = 5446
POLICY = "/tmp/krmpod-signature-policy.yaml"
ACCEPT = ", ".join([registrylib.OCI_MANIFEST, registrylib.OCI_INDEX,
                    "application/vnd.docker.distribution.manifest.v2+json"])
PASSWORD = "krmpod-test"


class Remote(registrylib.Registry):
    """A registry that runs already (the cluster's, ocireg), spoken to anonymously with
    registrylib's requests."""

    def __init__(self, hostport, cafile):  # pylint: disable=super-init-not-called
        self.addr, port = hostport.rsplit(":", 1)
        self.port = int(port)
        self.hostport = hostport
        self.auth = None
        self.ctx = ssl.create_default_context(cafile=cafile)

    def manifest(self, repo, ref):
        """(media type, bytes, digest) of a manifest."""
        headers, body = self._ok(200, "GET", "/v2/%s/manifests/%s" % (repo, ref),
                                 headers={"Accept": ACCEPT})
        return headers["content-type"], body, registrylib.sha256_digest(body)

    def blob(self, repo, digest):
        return self._ok(200, "GET", "/v2/%s/blobs/%s" % (repo, digest))[1]

    def tags(self, repo):
        status, _, body = self.request("GET", "/v2/%s/tags/list" % repo)
        return json.loads(body).get("tags") or [] if status == 200 else []

    def copy_from(self, src, src_repo, ref, repo, tag):
        """Copies image src_repo:ref of registry src here as repo:tag (blobs, then the
        manifest, byte for byte: the same digest). Returns the digest."""
        media_type, body, digest = src.manifest(src_repo, ref)
        m = json.loads(body)
        for d in [m["config"]] + m["layers"]:
            status, _, _ = self.request("HEAD", "/v2/%s/blobs/%s" % (repo, d["digest"]))
            if status != 200:
                self.push_blob(repo, src.blob(src_repo, d["digest"]))
        assert self.push_manifest(repo, tag, media_type, body) == digest
        return digest


def registry_path(name):
    """The cluster registry's repository of an example.com/... or ghcr.io/... name (no tag):
    scripts/realkube's registry_path."""
    return name.split("/", 1)[1].rsplit(":", 1)[0]


class Signing:
    """The keys, the cosigns, the registries and the policy of the module."""

    def __init__(self, cluster, tmp):
        self.tmp = tmp
        self.env = cluster.env
        self.ca = cluster.env["REALKUBE_CA_CERT"]
        self.cluster_reg = Remote(cluster.env["REALKUBE_REGISTRY"], self.ca)
        self.node_ip = cluster.env["REALKUBE_NODE_IP"]
        script = os.path.join(images.ROOT, "scripts", "build-peers.sh")
        images.run([script, "cosign", "cosign-v2", "ocireg"])
        peer = lambda p: images.run([script, "--dir", p]).strip()
        self.cosign3 = os.path.join(peer("cosign"), "cosign")
        self.cosign2 = os.path.join(peer("cosign-v2"), "cosign")
        self.ocireg_bin = os.path.join(peer("ocireg"), "ocireg")
        # cosign v3 signs offline with a signing config that names no transparency log
        self.signing_config = os.path.join(tmp, "signing-config.json")
        self.cosign(self.cosign3, "signing-config", "create", "--out", self.signing_config)
        self.keys = {name: self.key_pair(name) for name in ("platform", "other")}
        self.ocireg = None
        self.case = 0

    def cosign(self, binary, *args):
        env = dict(os.environ, COSIGN_PASSWORD=PASSWORD, SSL_CERT_FILE=self.ca, HOME=self.tmp)
        t0 = time.monotonic()
        r = subprocess.run([binary] + list(args), cwd=self.tmp, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180)
        assert r.returncode == 0, "%s %s failed (%d):\n%s" % (
            os.path.basename(os.path.dirname(binary)), " ".join(args), r.returncode,
            r.stderr.decode(errors="replace"))
        log("%s %s: %.2f s" % (os.path.basename(os.path.dirname(binary)), args[0],
                               time.monotonic() - t0))
        return r

    def key_pair(self, name):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        env = dict(os.environ, COSIGN_PASSWORD=PASSWORD)
        subprocess.run([self.cosign3, "generate-key-pair"], cwd=d, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return {"key": os.path.join(d, "cosign.key"),
                "pub": open(os.path.join(d, "cosign.pub")).read()}

    def start_ocireg(self):
        pki = os.path.dirname(self.ca)
        self.ocireg = subprocess.Popen(
            [self.ocireg_bin, "-addr", "%s:%d" % (self.node_ip, OCIREG_PORT),
             "-cert", os.path.join(pki, "registry.crt"),
             "-key", os.path.join(pki, "registry.key")],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.tmp, "ocireg.log"), "w"))
        reg = Remote("%s:%d" % (self.node_ip, OCIREG_PORT), self.ca)
        for _ in range(100):
            try:
                if reg.request("GET", "/v2/")[0] == 200:
                    return reg
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("ocireg did not answer on %s:%d" % (self.node_ip, OCIREG_PORT))

    def stop(self):
        if self.ocireg:
            self.ocireg.terminate()
            self.ocireg.wait(10)

    def new_image(self, source=SOURCE, tag="v1"):
        """A fresh repository example.com/signed/fn-N holding a copy of source; (name with
        tag, repository path, digest)."""
        self.case += 1
        repo = "signed/fn-%d-%s" % (self.case, secrets.token_hex(3))
        digest = self.cluster_reg.copy_from(self.cluster_reg, registry_path(source),
                                            source.rsplit(":", 1)[1], repo, tag)
        return "%s/%s:%s" % (SIGNED, repo.split("/", 1)[1], tag), repo, digest

    def sign(self, version, repo, digest, key="platform", reg=None):
        """cosign v3 (a bundle) or v2 (the legacy tag) signs repo@digest in reg."""
        reg = reg or self.cluster_reg
        ref = "%s/%s@%s" % (reg.hostport, repo, digest)
        if version == 3:
            self.cosign(self.cosign3, "sign", "-y", "--key", self.keys[key]["key"],
                        "--signing-config", self.signing_config, "--registry-cacert", self.ca,
                        ref)
        else:
            self.cosign(self.cosign2, "sign", "-y", "--key", self.keys[key]["key"],
                        "--tlog-upload=false", "--registry-cacert", self.ca, ref)

    def policy(self, keys=("platform",), extra=""):
        """The signature policy: example.com/signed/* must be signed by one of keys."""
        out = ("apiVersion: krmpod.dev/v1alpha1\nkind: SignaturePolicy\nkeys:\n")
        for name in keys:
            pem = self.keys[name]["pub"] if name in self.keys else name
            out += "  - name: %s\n    publicKey: |\n" % (name if name in self.keys else "odd")
            out += "".join("      %s\n" % l for l in pem.strip().splitlines())
        out += ("requirements:\n  - images: [\"%s/*\"]\n    keys: [%s]\n"
                % (SIGNED, ", ".join(k if k in self.keys else "odd" for k in keys)))
        return out + extra


@pytest.fixture(scope="module")
def signing(cluster, built_images, install, tmp_path_factory):
    s = Signing(cluster, str(tmp_path_factory.mktemp("signing")))
    try:
        yield s
    finally:
        s.stop()


def app_for(tmp_path, image):
    app = tmp_path / ("app-%s" % secrets.token_hex(3))
    app.mkdir()
    (app / "kustomization.yaml").write_text(
        "resources: [cm.yaml]\ntransformers: [ns.yaml]\n")
    (app / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n")
    (app / "ns.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ns\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n        image: %s\n"
        "data:\n  namespace: signed\n" % image)
    return app


def run(signing, install, tmp_path, image, policy=None, mirrors=None, cache=None, **env):
    """One generate of an app whose one function is image, under the policy (default: the
    platform key); (CompletedProcess, recorded pods)."""
    base = real_exec_env(signing.env, install.sidecar)
    del base["KRMPOD_MODE"]  # attach mode: the image's own entrypoint
    install.sidecar.add_file(POLICY, (policy or signing.policy()).encode())
    base.update(KRMPOD_SIGNATURE_POLICY=POLICY, KRMPOD_LOG_LEVEL="info",
                KRMPOD_CACHE_DIR=cache or "/tmp/krmpod-sig-%s" % secrets.token_hex(4))
    if mirrors:
        base["KRMPOD_REGISTRY_MIRRORS"] = mirrors
    base.update(env)
    return render(install, app_for(tmp_path, image), **base)


def pod_images(pods):
    """The function containers' images (not exec mode's krmpod container)."""
    return [c["image"] for rec in pods.values() for c in rec["created"]["spec"]["containers"]
            if c["name"] != "krmpod"]


def assert_refused(r, pods, *words):
    err = r.stderr.decode(errors="replace")
    assert r.returncode != 0, "generate passed, but should have been refused:\n%s" % err
    assert not pods, "a refused function got pods: %s" % list(pods)
    for w in words:
        assert w in err, "the refusal does not say %r:\n%s" % (w, err)
    return err


def test_signed_by_cosign_v3_runs_the_verified_digest(signing, install, tmp_path):
    """A bundle (cosign v3's default) in a registry without the referrers API: found through
    the fallback tag; the pod runs image@digest."""
    image, repo, digest = signing.new_image()
    signing.sign(3, repo, digest)
    assert "sha256-" + digest[7:] in signing.cluster_reg.tags(repo), \
        "cosign v3 wrote no fallback tag: %s" % signing.cluster_reg.tags(repo)
    cache = "/tmp/krmpod-sig-warm-%s" % secrets.token_hex(4)
    r, pods = run(signing, install, tmp_path, image, cache=cache)
    assert_ok(r)
    assert b"namespace: signed" in r.stdout, r.stdout.decode()
    assert pod_images(pods) == ["%s@%s" % (image, digest)], pod_images(pods)
    err = r.stderr.decode()
    assert "signature verified" in err and "the fallback tag" in err and "key platform" in err, err
    # warm: the tag's digest and the verified signature come from the cache; the registry
    # krmpod reads (a closed port now) is never asked
    r, pods = run(signing, install, tmp_path, image, cache=cache,
                  mirrors="example.com=%s:1" % signing.node_ip, KRMPOD_LOG_LEVEL="debug")
    assert_ok(r)
    assert pod_images(pods) == ["%s@%s" % (image, digest)], pod_images(pods)
    assert "key platform (verified before)" in r.stderr.decode(), r.stderr.decode()


def test_signed_by_cosign_v2_legacy_tag(signing, install, tmp_path):
    image, repo, digest = signing.new_image()
    signing.sign(2, repo, digest)
    assert "sha256-%s.sig" % digest[7:] in signing.cluster_reg.tags(repo)
    r, pods = run(signing, install, tmp_path, image)
    assert_ok(r)
    assert pod_images(pods) == ["%s@%s" % (image, digest)], pod_images(pods)
    assert "tag sha256-%s.sig" % digest[7:] in r.stderr.decode(), r.stderr.decode()


def test_bundle_through_the_referrers_api(signing, install, tmp_path):
    """ocireg has the referrers API: cosign v3 writes its bundle as a referrer there (no
    fallback tag), and krmpod finds it through the API. The pod pulls the same digest from
    the cluster's registry."""
    image, repo, digest = signing.new_image()
    oci = signing.start_ocireg() if signing.ocireg is None else \
        Remote("%s:%d" % (signing.node_ip, OCIREG_PORT), signing.ca)
    assert oci.copy_from(signing.cluster_reg, repo, "v1", repo, "v1") == digest
    signing.sign(3, repo, digest, reg=oci)
    assert "sha256-" + digest[7:] not in oci.tags(repo), \
        "cosign wrote a fallback tag to a registry with the referrers API: %s" % oci.tags(repo)
    r, pods = run(signing, install, tmp_path, image,
                  mirrors="example.com=%s:%d" % (signing.node_ip, OCIREG_PORT))
    assert_ok(r)
    assert pod_images(pods) == ["%s@%s" % (image, digest)]
    assert "(the referrers API)" in r.stderr.decode(), r.stderr.decode()


def test_unsigned_is_refused(signing, install, tmp_path):
    image, _, digest = signing.new_image()
    r, pods = run(signing, install, tmp_path, image)
    assert_refused(r, pods, image, digest, POLICY, "requirements[0]", "platform",
                   "no signature found", "cosign sign --key")


def test_signed_with_another_key_is_refused(signing, install, tmp_path):
    image, repo, digest = signing.new_image()
    signing.sign(3, repo, digest, key="other")
    signing.sign(2, repo, digest, key="other")
    r, pods = run(signing, install, tmp_path, image)
    err = assert_refused(r, pods, image, digest, "platform", "not signed by these keys")
    assert "tag sha256-%s.sig" % digest[7:] in err and "bundle sha256:" in err, err
    # the same signatures pass a policy that lists the other key
    r, pods = run(signing, install, tmp_path, image, policy=signing.policy(keys=("other",)))
    assert_ok(r)


def test_a_signature_for_another_digest_is_refused(signing, install, tmp_path):
    """The signatures of one image, put where another image's would be: the legacy payload
    and the bundle's statement both name the first digest."""
    _, repo, signed = signing.new_image()
    signing.sign(2, repo, signed)
    signing.sign(3, repo, signed)
    reg = signing.cluster_reg
    other = reg.copy_from(reg, registry_path(realfns.image_name("starlark")),
                          realfns.catalog_version("starlark"), repo, "v2")
    for tag in ("sha256-%s.sig", "sha256-%s"):
        mt, body, _ = reg.manifest(repo, tag % signed[7:])
        reg.push_manifest(repo, tag % other[7:], mt, body)
    image = "%s/%s:v2" % (SIGNED, repo.split("/", 1)[1])
    r, pods = run(signing, install, tmp_path, image)
    err = assert_refused(r, pods, image, other)
    assert "its payload signs %s, another digest" % signed in err, err
    assert "its manifest's subject is %s, not %s" % (signed, other) in err, err


def test_a_tag_moved_after_signing_is_refused(signing, install, tmp_path):
    image, repo, signed = signing.new_image()
    signing.sign(3, repo, signed)
    cache = "/tmp/krmpod-sig-moved-%s" % secrets.token_hex(4)
    r, pods = run(signing, install, tmp_path, image, cache=cache)
    assert_ok(r)
    reg = signing.cluster_reg
    moved = reg.copy_from(reg, registry_path(realfns.image_name("starlark")),
                          realfns.catalog_version("starlark"), repo, "v1")
    assert moved != signed
    # within the tag's TTL the render that verified it still runs the verified digest
    r, pods = run(signing, install, tmp_path, image, cache=cache)
    assert_ok(r)
    assert pod_images(pods) == ["%s@%s" % (image, signed)], pod_images(pods)
    # a render that resolves the tag anew finds the unsigned image, and refuses it
    r, pods = run(signing, install, tmp_path, image)
    assert_refused(r, pods, image, moved, "no signature found")


def corrupt(b64):
    """The base64 of the same bytes with one bit of the last-but-one byte flipped."""
    import base64
    raw = bytearray(base64.b64decode(b64))
    raw[-2] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def test_a_corrupted_signature_or_payload_is_refused(signing, install, tmp_path):
    reg = signing.cluster_reg
    # the legacy signature altered in its annotation
    image, repo, digest = signing.new_image()
    signing.sign(2, repo, digest)
    tag = "sha256-%s.sig" % digest[7:]
    mt, body, _ = reg.manifest(repo, tag)
    m = json.loads(body)
    ann = m["layers"][0]["annotations"]
    ann["dev.cosignproject.cosign/signature"] = corrupt(ann["dev.cosignproject.cosign/signature"])
    reg.push_manifest(repo, tag, mt, json.dumps(m).encode())
    r, pods = run(signing, install, tmp_path, image)
    assert_refused(r, pods, image, digest, tag, "not signed by these keys")
    # the legacy payload altered (a new blob with the same claims but other bytes)
    image, repo, digest = signing.new_image()
    signing.sign(2, repo, digest)
    tag = "sha256-%s.sig" % digest[7:]
    mt, body, _ = reg.manifest(repo, tag)
    m = json.loads(body)
    payload = json.loads(reg.blob(repo, m["layers"][0]["digest"]))
    payload["optional"] = {"note": "altered"}
    data = json.dumps(payload).encode()
    m["layers"][0].update(digest=reg.push_blob(repo, data), size=len(data))
    reg.push_manifest(repo, tag, mt, json.dumps(m).encode())
    r, pods = run(signing, install, tmp_path, image)
    assert_refused(r, pods, image, digest, tag, "not signed by these keys")
    # the bundle's envelope payload altered: its statement no longer matches its signature
    image, repo, digest = signing.new_image()
    signing.sign(3, repo, digest)
    mt, body, _ = reg.manifest(repo, "sha256-" + digest[7:])
    bundle_manifest_digest = json.loads(body)["manifests"][0]["digest"]
    bmt, bbody, _ = reg.manifest(repo, bundle_manifest_digest)
    bm = json.loads(bbody)
    bundle = json.loads(reg.blob(repo, bm["layers"][0]["digest"]))
    bundle["dsseEnvelope"]["signatures"][0]["sig"] = corrupt(
        bundle["dsseEnvelope"]["signatures"][0]["sig"])
    data = json.dumps(bundle).encode()
    bm["layers"][0].update(digest=reg.push_blob(repo, data), size=len(data))
    new_digest = reg.push_manifest(repo, "altered", bmt, json.dumps(bm).encode())
    index = json.loads(body)
    index["manifests"][0].update(digest=new_digest, size=len(json.dumps(bm).encode()))
    reg.push_manifest(repo, "sha256-" + digest[7:], mt, json.dumps(index).encode())
    r, pods = run(signing, install, tmp_path, image)
    assert_refused(r, pods, image, digest, "bundle " + new_digest, "not signed by these keys")


def test_a_key_that_is_not_ecdsa_p256_is_refused(signing, install, tmp_path):
    image, repo, digest = signing.new_image()
    signing.sign(3, repo, digest)
    for algo, opts, what in (("RSA", ["-pkeyopt", "rsa_keygen_bits:2048"], "an RSA key"),
                             ("EC", ["-pkeyopt", "ec_paramgen_curve:P-384"],
                              "an EC key on another curve than P-256")):
        key = subprocess.run(["openssl", "genpkey", "-algorithm", algo] + opts,
                             stdout=subprocess.PIPE, check=True).stdout
        pub = subprocess.run(["openssl", "pkey", "-pubout"], input=key,
                             stdout=subprocess.PIPE, check=True).stdout.decode()
        r, pods = run(signing, install, tmp_path, image, policy=signing.policy(keys=(pub,)))
        assert_refused(r, pods, "key odd", POLICY, what, "ECDSA P-256")


def test_a_policy_asking_for_a_transparency_log_is_refused(signing, install, tmp_path):
    image, _, _ = signing.new_image()
    r, pods = run(signing, install, tmp_path, image,
                  policy=signing.policy(extra="transparencyLog: {url: https://rekor.sigstore.dev}\n"))
    assert_refused(r, pods, "transparencyLog", "offline")


def catalog_text(name, kinds):
    """A catalog named `name` whose functions (group example.com, version v1) are kinds:
    [(kind, image)]."""
    return ("apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\n"
            "metadata: {name: %s}\nspec:\n  krmFunctions:\n" % name +
            "".join("  - group: example.com\n    names: {kind: %s}\n    versions:\n"
                    "    - name: v1\n      runtime: {container: {image: %s}}\n" % (kind, image)
                    for kind, image in kinds))


def kind_app(tmp_path, kind):
    """An app whose one function is named by kind only: a catalog resolves its image."""
    app = tmp_path / ("kind-%s" % secrets.token_hex(3))
    app.mkdir()
    (app / "kustomization.yaml").write_text("resources: [cm.yaml]\ntransformers: [ns.yaml]\n")
    (app / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n")
    (app / "ns.yaml").write_text("apiVersion: example.com/v1\nkind: %s\nmetadata:\n  name: ns\n"
                                 "data:\n  namespace: signed\n" % kind)
    return app


def test_a_requirement_naming_the_admin_catalog(signing, install, tmp_path):
    """A requirement that names the admin's catalog covers exactly its images: a function
    named by kind runs when its catalog image is signed, is refused when not; `krmpod catalog
    validate` and `krmpod doctor` say which is which before any render."""
    signed, repo, digest = signing.new_image()
    signing.sign(3, repo, digest)
    # another function, another digest: a signature vouches for content, so a copy of the
    # signed image elsewhere would count as signed once its digest is verified
    unsigned, _, udigest = signing.new_image(source=realfns.image_name("starlark"))
    assert udigest != digest
    pin = lambda image, d: image.rsplit(":", 1)[0] + "@" + d
    catalog = "/tmp/krmpod-signed-catalog.yaml"
    install.sidecar.add_file(catalog, catalog_text("signed-fns", [
        ("SignedNamespace", pin(signed, digest)),
        ("UnsignedNamespace", pin(unsigned, udigest))]).encode())
    # the policy covers the catalog only: no image pattern
    policy = signing.policy().replace('  - images: ["%s/*"]\n' % SIGNED,
                                      "  - catalogs: [signed-fns]\n")
    assert "catalogs: [signed-fns]" in policy, policy
    install.sidecar.add_file(POLICY, policy.encode())
    base = real_exec_env(signing.env, install.sidecar)
    env = dict(KRMPOD_SIGNATURE_POLICY=POLICY, KRMPOD_DEFAULT_CATALOGS=catalog,
               KRMPOD_REGISTRY_CA=base["KRMPOD_REGISTRY_CA"],
               KRMPOD_REGISTRY_MIRRORS=base["KRMPOD_REGISTRY_MIRRORS"],
               KRMPOD_CACHE_DIR="/tmp/krmpod-sig-cat-%s" % secrets.token_hex(4))
    script = " ".join("%s=%s" % kv for kv in sorted(env.items()))
    r = install.sidecar.sh(script + " krmpod catalog validate %s" % catalog)
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    lines = out.splitlines()
    i = next(n for n, l in enumerate(lines) if "SignedNamespace" in l)
    assert "signature by platform required: valid, %s" % digest in lines[i + 1], out
    i = next(n for n, l in enumerate(lines) if "UnsignedNamespace" in l)
    assert "signature by platform required: NOT VALID" in lines[i + 1] and \
        "no signature found" in lines[i + 1], out
    r = install.sidecar.sh(script + " krmpod doctor")
    out = r.stdout.decode()
    assert "needs a signature by platform" in out, out
    assert [l for l in out.splitlines() if l.startswith("[ok  ] signature of %s" % pin(signed, digest))], out
    assert [l for l in out.splitlines() if l.startswith("[FAIL] %s" % pin(unsigned, udigest))
            and "will be refused" in l], out
    # renders: the signed kind runs by digest, the unsigned one is refused, no pod
    del env["KRMPOD_CACHE_DIR"]
    base.pop("KRMPOD_MODE")
    r, pods = render(install, kind_app(tmp_path, "SignedNamespace"), **dict(base, **env))
    assert_ok(r)
    assert pod_images(pods) == [pin(signed, digest)], pod_images(pods)
    # the default mode (auto) read the image config, by the verified digest: exec mode
    assert [c["name"] for rec in pods.values()
            for c in rec["created"]["spec"]["containers"]] == ["krmpod", "fn"], pods
    r, pods = render(install, kind_app(tmp_path, "UnsignedNamespace"), **dict(base, **env))
    assert_refused(r, pods, pin(unsigned, udigest), "catalogs signed-fns", "no signature found")

    # A vendor's catalog, read first, that lists the same unsigned image (issue 29): the
    # requirement naming signed-fns still covers it, whichever catalog names the kind.
    vendor = "/tmp/krmpod-vendor-catalog.yaml"
    install.sidecar.add_file(vendor, catalog_text("vendor-fns", [
        ("UnsignedNamespace", pin(unsigned, udigest)),
        ("VendorNamespace", pin(unsigned, udigest))]).encode())
    env["KRMPOD_DEFAULT_CATALOGS"] = "%s,%s" % (vendor, catalog)
    for kind in ("UnsignedNamespace", "VendorNamespace"):
        r, pods = render(install, kind_app(tmp_path, kind), **dict(base, **env))
        assert_refused(r, pods, pin(unsigned, udigest), "catalogs signed-fns",
                       "no signature found")
