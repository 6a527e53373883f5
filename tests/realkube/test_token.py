"""Bound-token rotation during a render: the token file changes while generate runs and the
old token stops working (its bound Secret is deleted, so the API server answers 401 once its
10 s token cache lets go); the render still succeeds because krmpod re-reads the file on a
401 and retries."""
import time
import uuid

from conftest import ARGOCD_NS, fn_container, pod_summary
from images import FN_IMAGE
from kube import kubectl
from sidecar import direct_build

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SLOW_SECONDS = 12  # longer than the API server's token cache (10 s) from the render's start


def slow_app(tmp_path, name, seconds):
    app = tmp_path / name
    app.mkdir()
    (app / "kustomization.yaml").write_text(
        "resources:\n- cm.yaml\ntransformers:\n- slow.yaml\n- label.yaml\n")
    (app / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\n"
                                 "data:\n  k: v\n")
    (app / "slow.yaml").write_text(
        "apiVersion: krmpod.test/v1\nkind: Slow\nmetadata:\n  name: slow\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n        image: %s\n"
        "        envs:\n        - SLOW_SECONDS=%d\n" % (FN_IMAGE % "slow-cat", seconds))
    (app / "label.yaml").write_text(
        "apiVersion: krmpod.test/v1\nkind: AddLabel\nmetadata:\n  name: label\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n        image: %s\n"
        "data:\n  key: rotated\n  value: survived\n" % (FN_IMAGE % "add-label"))
    return app


def token(*bound):
    args = ["-n", ARGOCD_NS, "create", "token", "argocd-repo-server", "--duration", "10m"]
    if bound:
        args += ["--bound-object-kind", "Secret", "--bound-object-name", bound[0]]
    return kubectl(*args).stdout.decode().strip()


def test_token_rotated_and_revoked_mid_render(install, tmp_path):
    api, sidecar = install.api, install.sidecar
    anchor = "krmpod-test-token-" + uuid.uuid4().hex[:8]
    api.call("POST", "/api/v1/namespaces/%s/secrets" % ARGOCD_NS,
             {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": anchor}})
    sa = "/tmp/sa-" + uuid.uuid4().hex[:8]
    try:
        old = token(anchor)
        r = sidecar.sh('set -e; mkdir -p "$1"; cp %s/ca.crt %s/namespace "$1"/' % (SA_DIR, SA_DIR),
                       sa)
        assert r.returncode == 0, r.stderr.decode()
        sidecar.put(old.encode(), sa + "/token")
        assert api.with_token(old).request("GET", "/api")[0] == 200
        app = slow_app(tmp_path, "app", SLOW_SECONDS)
        mark = install.recorder.mark()
        proc = sidecar.start_render(app, env={"KRMPOD_SERVICEACCOUNT_DIR": sa})
        # the slow function runs: rotate the file, then revoke the old token
        deadline = time.monotonic() + 30
        slow = None
        while slow is None and time.monotonic() < deadline and proc.poll() is None:
            for p in install.recorder.pods_since(mark).values():
                if any((o.get("status") or {}).get("phase") == "Running" and
                       fn_container(o)["image"] == FN_IMAGE % "slow-cat"
                       for _, _, o in p["events"]):
                    slow = p
            time.sleep(0.1)
        assert slow, "the slow function never ran: %s" % proc.communicate()[1].decode()
        new = token()
        sidecar.put(new.encode(), sa + "/token")  # written aside, then renamed into place
        api.call("DELETE", "/api/v1/namespaces/%s/secrets/%s" % (ARGOCD_NS, anchor))
        t0 = time.monotonic()
        while api.with_token(old).request("GET", "/api")[0] != 401:
            assert time.monotonic() - t0 < 20, "the old token still works 20 s after " \
                "its Secret was deleted"
            time.sleep(0.2)
        revoked_after = time.monotonic() - t0
        still_running = proc.poll() is None
        out, err = proc.communicate(timeout=120)
        err = err.decode(errors="replace")
        assert still_running, "the render ended before the old token was rejected " \
            "(%.1f s after the Secret went): the test proves nothing\n%s" % (revoked_after, err)
        assert proc.returncode == 0, "the render failed after the rotation:\n" + err
        assert "401 Unauthorized; re-reading the token and retrying" in err, err
        direct = direct_build(slow_app(tmp_path, "direct", 0), tmp_path)
        assert out == direct.stdout, (out, direct.stdout)
        assert api.with_token(new).request("GET", "/api")[0] == 200
        print("old token rejected %.1f s after its Secret was deleted" % revoked_after)
        pods = install.recorder.pods_since(mark)
        assert len(pods) >= 2, [pod_summary(p) for p in pods.values()]
    finally:
        api.request("DELETE", "/api/v1/namespaces/%s/secrets/%s" % (ARGOCD_NS, anchor))
        sidecar.sh('rm -rf "$1"', sa)
