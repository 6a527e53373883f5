"""The install as an admin does it, on the real cluster: the sidecar image has exactly the
Dockerfile's layout, the running `krmpod` container is exactly what the applied manifests
define (image pinned by digest, KRMPOD_HELPER_IMAGE following the pin, the downward API
env, the projected token in this container only, uid 999, read-only root filesystem), and
the CMP server stand-in registered the plugin from the image's plugin.yaml."""
import base64
import hashlib
import json
import os
import re
import subprocess

import argocd
import images
from conftest import ARGOCD_NS, ROOT, KRMPOD_BIN, dump
from kube import kubectl

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def subset(want, have, path="$"):
    """Problems where `have` (the live object, with the server's defaults) lacks or differs
    from something `want` (the rendered manifest) says."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return ["%s: %r is not an object" % (path, have)]
        out = []
        for k, v in want.items():
            if k not in have:
                out.append("%s.%s: missing (want %r)" % (path, k, v))
            else:
                out += subset(v, have[k], "%s.%s" % (path, k))
        return out
    if isinstance(want, list):
        if not isinstance(have, list) or len(have) != len(want):
            return ["%s: %r, want %r" % (path, have, want)]
        out = []
        for i, (w, h) in enumerate(zip(want, have)):
            out += subset(w, h, "%s[%d]" % (path, i))
        return out
    if str(want) != str(have):
        return ["%s: %r, want %r" % (path, have, want)]
    return []


def test_dockerfile_builds_its_layout_with_the_shared_script():
    """Shared by construction: the builder stage runs scripts/image-layout.sh, and the final
    stage copies exactly its output; this tier's image uses the same script."""
    insts = images.dockerfile_instructions(os.path.join(ROOT, "Dockerfile"))
    runs = [rest for word, rest in insts if word == "RUN"]
    assert any(re.search(r"(^|&&\s*)scripts/image-layout\.sh /out build/krmpod\b", r)
               for r in runs), runs
    assert not any("install -m" in r for r in runs), \
        "the Dockerfile lays out files itself again: %s" % runs
    final = insts[max(i for i, (w, _) in enumerate(insts) if w == "FROM"):]
    assert [r for w, r in final if w == "COPY"] == ["--from=builder /out/ /"], final
    assert not [r for w, r in final if w == "RUN"], "the final stage must run no command"


def test_sidecar_image_has_the_layout_the_script_makes(sidecar, tmp_path):
    layout = tmp_path / "layout"
    subprocess.run([os.path.join(ROOT, "scripts", "image-layout.sh"), str(layout), KRMPOD_BIN],
                   check=True)
    want = {}
    for d, dirs, files in os.walk(str(layout)):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = "/" + os.path.relpath(p, str(layout))
            st = os.lstat(p)
            if os.path.islink(p):
                want[rel] = "link %s" % os.readlink(p)
            elif os.path.isdir(p):
                want[rel] = "dir %o" % (st.st_mode & 0o7777)
            else:
                with open(p, "rb") as f:
                    want[rel] = "file %o %s" % (st.st_mode & 0o7777,
                                                hashlib.sha256(f.read()).hexdigest())
    script = ('for p in "$@"; do if [ -L "$p" ]; then echo "$p link $(readlink "$p")"; '
              'elif [ -d "$p" ]; then echo "$p dir $(stat -c %a "$p")"; '
              'else echo "$p file $(stat -c %a "$p") $(sha256sum < "$p" | cut -d" " -f1)"; fi; '
              'done')
    r = sidecar.sh(script, *sorted(want))
    assert r.returncode == 0, r.stderr.decode()
    have = {}
    for line in r.stdout.decode().splitlines():
        p, rest = line.split(" ", 1)
        have[p] = rest
    diffs = ["%s: image has %r, image-layout.sh makes %r" % (p, have.get(p), w)
             for p, w in sorted(want.items()) if have.get(p) != w]
    assert not diffs, "\n".join(diffs)
    # and the kustomize KRMPOD_KUSTOMIZE names runs (the stand-in for the official image)
    r = sidecar.sh('"$KRMPOD_KUSTOMIZE" version')
    assert r.returncode == 0 and b"Kustomize Version" in r.stdout, r


def test_container_config_is_the_dockerfiles(install, sidecar):
    """ENV, USER and WORKDIR as the Dockerfile's final stage (and its base) set them."""
    cfg = install.images["sidecar_config"]
    r = sidecar.sh("id -u; id -g; pwd; env")
    assert r.returncode == 0, r.stderr.decode()
    lines = r.stdout.decode().splitlines()
    uid, gid, cwd, env = lines[0], lines[1], lines[2], dict(
        l.split("=", 1) for l in lines[3:] if "=" in l)
    assert uid == cfg["user"] == "999", (uid, cfg)
    assert gid == "999", gid  # the manifest's runAsGroup
    assert cwd == cfg["workdir"], (cwd, cfg)
    for k, v in cfg["env"]:
        assert env.get(k) == v, (k, env.get(k), v)


def test_krmpod_container_is_exactly_the_manifests(install):
    pod = install.fresh_pod()
    want = install.rendered_container()
    live = next(c for c in pod["spec"]["containers"] if c["name"] == "krmpod")
    problems = subset(want, live)
    assert not problems, "live container differs from the applied manifests:\n%s\nlive: %s" % (
        "\n".join(problems), dump(live))
    # the image pinned by digest, and KRMPOD_HELPER_IMAGE following the pin
    assert live["image"] == install.pinned_image, live["image"]
    env = {e["name"]: e.get("value") for e in live["env"]}
    assert env["KRMPOD_HELPER_IMAGE"] == install.pinned_image, env
    assert live["command"] == ["/var/run/argocd/argocd-cmp-server"], live["command"]
    status = next(s for s in pod["status"]["containerStatuses"] if s["name"] == "krmpod")
    assert status["imageID"].endswith("@" + install.images["sidecar"]), status
    # the token: a projected volume in this container only, nothing automounted
    spec = pod["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert spec["serviceAccountName"] == "argocd-repo-server"
    for c in spec["containers"] + spec.get("initContainers", []):
        mounts = [m["mountPath"] for m in c.get("volumeMounts") or []]
        has = SA_DIR in mounts
        assert has == (c["name"] == "krmpod"), (c["name"], mounts)
    vol = next(v for v in spec["volumes"] if v["name"] == "krmpod-token")
    sources = vol["projected"]["sources"]
    assert any("serviceAccountToken" in s for s in sources), sources
    # what the install merged into the admin's Deployment, and nothing of Argo CD's lost
    names = [c["name"] for c in spec["containers"]]
    assert names == ["argocd-repo-server", "krmpod"], names
    assert [c["name"] for c in spec["initContainers"]] == ["copyutil"]
    assert {"var-files", "plugins", "tmp", "krmpod-tmp", "krmpod-token"} <= {
        v["name"] for v in spec["volumes"]}
    assert pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] == \
        "argocd-repo-server"


def jwt_claims(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_downward_api_token_user_and_read_only_root(install, sidecar):
    pod = install.fresh_pod()
    r = sidecar.sh('env; echo TOKEN=$(cat %s/token); echo NS=$(cat %s/namespace); '
                   'ls %s; touch /probe 2>&1; touch /tmp/probe && echo tmp-writable'
                   % (SA_DIR, SA_DIR, SA_DIR))
    out = r.stdout.decode()
    env = dict(l.split("=", 1) for l in out.splitlines() if "=" in l and not l.startswith(" "))
    assert env["KRMPOD_OWNER_POD"] == pod["metadata"]["name"], env
    assert env["KRMPOD_OWNER_UID"] == pod["metadata"]["uid"], env
    assert env["KRMPOD_OWNER_NAMESPACE"] == ARGOCD_NS, env
    assert env["KRMPOD_NAMESPACE"] == "krmpod-functions", env
    assert env["NS"] == ARGOCD_NS
    claims = jwt_claims(env["TOKEN"])
    assert claims["sub"] == "system:serviceaccount:argocd:argocd-repo-server", claims
    assert claims["kubernetes.io"]["pod"]["name"] == pod["metadata"]["name"], claims
    assert claims["exp"] - claims["iat"] == 3600, claims  # the manifest's expirationSeconds
    assert "Read-only file system" in out, out
    assert "tmp-writable" in out, out
    # no token in Argo CD's own container
    r = kubectl("-n", ARGOCD_NS, "exec", install.pod, "-c", "argocd-repo-server", "--",
                "ls", "/var/run/secrets", check=False)
    assert r.returncode != 0, r.stdout


def test_no_client_side_apply_owns_the_deployment_and_krmpod_owns_its_fields(install):
    """docs/install.md, "Before you install": the check prints nothing after Argo CD's
    server-side install; and the field manager krmpod owns the sidecar."""
    r = kubectl("-n", ARGOCD_NS, "get", "deployment", "argocd-repo-server",
                "--show-managed-fields", "-o",
                "go-template-file=" + os.path.join(ROOT, "manifests",
                                                   "check-client-side-apply.gotmpl"))
    assert r.stdout.strip() == b"", r.stdout
    dep = install.api.get("/apis/apps/v1/namespaces/argocd/deployments/argocd-repo-server")
    owners = {m["manager"]: m for m in dep["metadata"]["managedFields"]}
    assert owners["krmpod"]["operation"] == "Apply", owners.keys()
    fields = json.dumps(owners["krmpod"]["fieldsV1"])
    assert 'k:{\\"name\\":\\"krmpod\\"}' in fields, fields
    assert 'k:{\\"name\\":\\"argocd-repo-server\\"}' not in fields, fields


def test_cmp_server_registered_the_plugin(install):
    """Upstream's argocd-cmp-server, copied in by Argo CD's copyutil, read the image's
    plugin.yaml and listens where the repo-server finds plugins (the `plugins` volume, seen
    from Argo CD's container), under the name plugin.yaml gives (NAME-VERSION)."""
    r = kubectl("-n", ARGOCD_NS, "exec", install.pod, "-c", "argocd-repo-server", "--",
                "test", "-S", "/home/argocd/cmp-server/plugins/krmpod-v1.sock", check=False)
    assert r.returncode == 0, "no krmpod-v1.sock in the plugins volume: %s" % r.stderr
    logs = kubectl("-n", ARGOCD_NS, "logs", install.pod, "-c", "krmpod").stdout.decode()
    want = "argocd-cmp-server %s" % argocd.version()
    assert want in logs and "serving on /home/argocd/cmp-server/plugins/krmpod-v1.sock" in logs, \
        logs
