"""A release, taken as a user takes it (issue 28), on the real cluster with upstream Argo CD:

  1. dist/ (`make release VERSION=...`; KRMPOD_DIST names another) is published by
     scripts/release-publish into the cluster's registry as ghcr.io/krmpod/krmpod:VERSION
     (containerd mirrors ghcr.io there): crane pushes the OCI index byte for byte, cosign v3
     signs its digest with a key made here and attests the SBOM;
  2. upstream Argo CD's install.yaml, then dist/install.yaml, applied as README says
     (`kubectl apply --server-side --field-manager=krmpod -f install.yaml`): nothing from the
     working tree; the repo-server's sidecar runs the release's image by its index digest;
  3. an Application whose kustomization runs a containerized function syncs through it;
  4. the sidecar image's signature and SBOM verify with the real cosign, and with krmpod's own
     verifier (a SignaturePolicy naming the release key): the image then runs pinned to the
     verified digest; under another key nothing runs."""
import base64
import json
import os
import subprocess
import time

import pytest
import yaml

import argocd
import images
from kube import kubectl
from realkube_tier import ARGOCD_NS, FN_NS, MARKER, ROOT, fresh_namespace, log

DIST = os.environ.get("KRMPOD_DIST", os.path.join(ROOT, "dist"))
REPO = "ghcr.io/krmpod/krmpod"
PASSWORD = "release-test"
APP = "release-app"
DEST = "krmpod-release-app"
PLUGIN = "krmpod-v1"
FN = images.FN_IMAGE % "add-label"


def run(args, env=None, check=True, timeout=300):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("%s: exit %d\n%s" % (" ".join(args), r.returncode,
                                                  r.stderr.decode(errors="replace")[-4000:]))
    return r


def peer(name):
    script = os.path.join(ROOT, "scripts", "build-peers.sh")
    run([script, name])
    return os.path.join(run([script, "--dir", name]).stdout.decode().strip(), name)


class Release:
    def __init__(self, cluster, tmp):
        self.env = cluster.env
        self.tmp = tmp
        self.ca = cluster.env["REALKUBE_CA_CERT"]
        self.registry = cluster.env["REALKUBE_REGISTRY"]
        with open(os.path.join(DIST, "image", "index.json")) as f:
            entry = json.load(f)["manifests"][0]
        self.digest = entry["digest"]
        self.version = entry["annotations"]["org.opencontainers.image.version"]
        self.cosign = peer("cosign")
        self.keys = {name: self.key_pair(name) for name in ("release", "other")}
        # where containerd finds ghcr.io/krmpod/krmpod: the cluster registry's krmpod/krmpod
        self.pushed_repo = "%s/%s" % (self.registry, REPO.split("/", 1)[1])

    def key_pair(self, name):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        subprocess.run([self.cosign, "generate-key-pair"], cwd=d, check=True,
                       env=dict(os.environ, COSIGN_PASSWORD=PASSWORD),
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return {"key": os.path.join(d, "cosign.key"), "pub": os.path.join(d, "cosign.pub")}

    def cosign_env(self):
        return dict(os.environ, COSIGN_PASSWORD=PASSWORD, SSL_CERT_FILE=self.ca, HOME=self.tmp)

    def publish(self):
        t0 = time.monotonic()
        r = run([os.path.join(ROOT, "scripts", "release-publish"), "--repo", self.pushed_repo,
                 "--key", self.keys["release"]["key"], "--ca", self.ca, "--dist", DIST],
                env=self.cosign_env(), timeout=900)
        log("release-publish %s in %.1f s" % (self.version, time.monotonic() - t0))
        return r.stdout.decode().strip()


@pytest.fixture(scope="module")
def release(cluster, built_images, tmp_path_factory):
    if not os.path.isfile(os.path.join(DIST, "image", "index.json")):
        pytest.fail("%s holds no release: run `make release VERSION=vX.Y.Z` first (make "
                    "realkube-test does)" % DIST)
    rel = Release(cluster, str(tmp_path_factory.mktemp("release")))
    rel.ref = rel.publish()
    rel.built = built_images
    rel.api = cluster.api
    return rel


@pytest.fixture(scope="module")
def installed(release):
    """Argo CD, then dist/install.yaml, into fresh namespaces; the repo-server pod."""
    api = release.api
    created = []
    try:
        for ns in (ARGOCD_NS, FN_NS, argocd.GIT_NAMESPACE):
            fresh_namespace(api, ns)
        kubectl("create", "namespace", ARGOCD_NS)
        created.append(ARGOCD_NS)
        kubectl("label", "namespace", ARGOCD_NS, MARKER + "=true")
        argocd.install(kubectl)
        # README's install command, with the release's own file
        kubectl("apply", "--server-side", "--field-manager=krmpod", "-f",
                os.path.join(DIST, "install.yaml"), timeout=300)
        created.append(FN_NS)
        kubectl("label", "namespace", FN_NS, MARKER + "=true")
        kubectl("-n", ARGOCD_NS, "rollout", "status", "deployment/argocd-repo-server",
                "--timeout=300s", timeout=320)
        argocd.wait_ready(kubectl)
        yield release
    finally:
        kubectl("-n", ARGOCD_NS, "delete", "application", APP, "--ignore-not-found",
                "--wait=false", check=False)
        for ns in created + [DEST, argocd.GIT_NAMESPACE]:
            kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found",
                    check=False)


def repo_server_pod():
    pods = json.loads(kubectl("-n", ARGOCD_NS, "get", "pods", "-l",
                              "app.kubernetes.io/name=argocd-repo-server", "-o",
                              "json").stdout)["items"]
    pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    return pods[0]


def test_install_yaml_pins_the_published_index(installed):
    pinned = "%s@%s" % (REPO, installed.digest)
    assert installed.ref == "%s@%s" % (installed.pushed_repo, installed.digest), installed.ref
    docs = [d for d in yaml.safe_load_all(open(os.path.join(DIST, "install.yaml"))) if d]
    text = open(os.path.join(DIST, "install.yaml")).read()
    assert ":latest" not in text
    pod = repo_server_pod()
    sidecar = next(c for c in pod["spec"]["containers"] if c["name"] == "krmpod")
    assert sidecar["image"] == pinned, sidecar["image"]
    helper = [e.get("value") for e in sidecar.get("env") or []
              if e["name"] == "KRMPOD_HELPER_IMAGE"]
    assert helper == [pinned], helper
    status = next(s for s in pod["status"]["containerStatuses"] if s["name"] == "krmpod")
    assert status.get("ready") and status["imageID"].endswith(installed.digest), status
    assert any(d.get("kind") == "ValidatingAdmissionPolicy" for d in docs)


def test_an_application_with_a_function_syncs(installed, tmp_path):
    tree = tmp_path / "tree"
    app = tree / "apps" / "labelled"
    app.mkdir(parents=True)
    (app / "kustomization.yaml").write_text("resources:\n- cm.yaml\ntransformers:\n- fn.yaml\n")
    (app / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
                                 "data:\n  color: blue\n")
    (app / "fn.yaml").write_text(
        "apiVersion: krmpod.test/v1\nkind: Fn\nmetadata:\n  name: mark\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n        image: %s\n" % FN)
    kubectl("create", "namespace", argocd.GIT_NAMESPACE)
    kubectl("label", "namespace", argocd.GIT_NAMESPACE, MARKER + "=true")
    commit = argocd.serve_repo(kubectl, str(tree), installed.built["argocd"]["names"]["argocd"],
                               str(tmp_path))
    manifest = {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": APP, "namespace": ARGOCD_NS},
        "spec": {"project": "default",
                 "source": {"repoURL": argocd.GIT_URL, "targetRevision": "main",
                            "path": "apps/labelled", "plugin": {"name": PLUGIN}},
                 "destination": {"server": "https://kubernetes.default.svc", "namespace": DEST},
                 "syncPolicy": {"automated": {"prune": True},
                                "syncOptions": ["CreateNamespace=true"]}}}
    kubectl("apply", "--server-side", "--field-manager=krmpod-tests", "-f", "-",
            stdin=json.dumps(manifest).encode())
    deadline = time.monotonic() + 240
    st = {}
    while time.monotonic() < deadline:
        st = json.loads(kubectl("-n", ARGOCD_NS, "get", "application", APP, "-o",
                                "json").stdout).get("status") or {}
        if ((st.get("sync") or {}).get("status") == "Synced"
                and (st.get("sync") or {}).get("revision") == commit
                and (st.get("health") or {}).get("status") == "Healthy"):
            break
        time.sleep(1)
    else:
        raise AssertionError("Application %s did not sync: %s" % (APP, json.dumps(st)[:3000]))
    assert st.get("sourceType") == "Plugin", st.get("sourceType")
    cm = json.loads(kubectl("-n", DEST, "get", "configmap", "settings", "-o", "json").stdout)
    # the add-label fixture's mark (tests/fixtures/images/add-label), put there by the
    # function's pod, which the release's sidecar made
    assert (cm["metadata"].get("labels") or {}).get("krmpod.test/touched") == "true", \
        cm["metadata"]
    assert cm["data"] == {"color": "blue"}, cm["data"]


def cosign(rel, *args, check=True):
    return run([rel.cosign] + list(args), env=rel.cosign_env(), check=check)


def test_cosign_verifies_the_signature_and_the_sbom(installed):
    ref = installed.ref
    out = cosign(installed, "verify", "--key", installed.keys["release"]["pub"],
                 "--insecure-ignore-tlog=true", ref).stdout
    claims = json.loads(out)
    assert claims and all(c["critical"]["image"]["docker-manifest-digest"] == installed.digest
                          for c in claims), out[:2000]
    r = cosign(installed, "verify", "--key", installed.keys["other"]["pub"],
               "--insecure-ignore-tlog=true", ref, check=False)
    assert r.returncode != 0, "a signature verified under a key that did not sign"
    out = cosign(installed, "verify-attestation", "--type", "spdxjson", "--key",
                 installed.keys["release"]["pub"], "--insecure-ignore-tlog=true", ref).stdout
    att = json.loads(out.decode().splitlines()[0])
    statement = json.loads(base64.b64decode(att["payload"]))
    assert statement["subject"][0]["digest"]["sha256"] == installed.digest.split(":", 1)[1]
    with open(os.path.join(DIST, "sbom.spdx.json")) as f:
        assert statement["predicate"] == json.load(f)


def krmpod_run(rel, key, tmp_path):
    """`krmpod run ghcr.io/krmpod/krmpod:VERSION version` as an admin would, under a signature
    policy requiring ghcr.io/krmpod/* to be signed by `key`."""
    with open(rel.keys[key]["pub"]) as f:
        pem = f.read()
    policy = tmp_path / ("policy-%s.yaml" % key)
    policy.write_text(
        "apiVersion: krmpod.dev/v1alpha1\nkind: SignaturePolicy\nkeys:\n  - name: release\n"
        "    publicKey: |\n" + "".join("      %s\n" % l for l in pem.strip().splitlines()) +
        "requirements:\n  - images: [\"ghcr.io/krmpod/*\"]\n    keys: [release]\n")
    env = dict(os.environ, KUBECONFIG=rel.env["KUBECONFIG"], KRMPOD_NAMESPACE=FN_NS,
               KRMPOD_MODE="attach", KRMPOD_SIGNATURE_POLICY=str(policy),
               KRMPOD_REGISTRY_MIRRORS="ghcr.io=" + rel.registry,
               KRMPOD_REGISTRY_CA=rel.ca, KRMPOD_CACHE_DIR=str(tmp_path / ("cache-" + key)))
    return subprocess.run([os.path.join(ROOT, "build", "krmpod"), "run",
                           "%s:%s" % (REPO, rel.version), "version"],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=180)


def test_krmpod_verifies_the_sidecar_image(installed, tmp_path):
    r = krmpod_run(installed, "release", tmp_path)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 0, err
    # the image ran, pinned to the verified digest: its own `krmpod version`
    assert r.stdout.decode().startswith("krmpod %s" % installed.version), r.stdout
    r = krmpod_run(installed, "other", tmp_path)
    err = r.stderr.decode(errors="replace")
    assert r.returncode != 0 and r.stdout == b"", (r.returncode, r.stdout, err)
    assert REPO in err and installed.digest in err, err
