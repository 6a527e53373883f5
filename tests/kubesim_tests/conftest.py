"""kubesim checked against a real client: one kubesim per session, and a `kubectl` helper
that runs the installed kubectl against it with a private HOME and discovery cache."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kubesim"))
from kubesim_lib import testing  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
IMAGES = ":".join([os.path.join(ROOT, "tests", "fixtures", "images"),
                   os.path.join(os.path.dirname(os.path.abspath(__file__)), "images")])
KUBECTL = shutil.which("kubectl")
RELIST_MS = 20


class Kubesim(testing.Kubesim):
    """The shared harness plus a private kubectl HOME and pod helpers."""

    def __init__(self, state, path_prefix=""):
        # A fast kubelet for these tests (kubesim's defaults model a real one: 1 s relists,
        # 10 s image pull back-off; test_conformance.py checks those).
        super().__init__(state, IMAGES, relist_period_ms=RELIST_MS, pull_backoff_ms=1000,
                         path_prefix=path_prefix)
        self.home = os.path.join(state, "home")
        os.makedirs(self.home)

    def ok(self, method, path, body=None):
        code, obj = self.api(method, path, body)
        assert code < 300, "%s %s: %d %s" % (method, path, code, obj)
        return obj

    def pod(self, name, ns="default"):
        code, obj = self.api("GET", "/api/v1/namespaces/%s/pods/%s" % (ns, name))
        return obj if code == 200 else None

    def create_pod(self, pod, ns="default"):
        return self.ok("POST", "/api/v1/namespaces/%s/pods" % ns, pod)

    def wait_pod(self, name, cond, timeout=15, what="condition"):
        deadline = time.monotonic() + timeout
        p = None
        while time.monotonic() < deadline:
            p = self.pod(name)
            try:
                if p is not None and cond(p):
                    return p
            except (KeyError, ValueError):
                pass  # a status field the condition reads is not there yet (not scheduled)
            time.sleep(0.03)
        raise AssertionError("pod %s: %s not reached; last: %s" % (
            name, what, json.dumps(p and p.get("status"), indent=1)))

    def wait_phase(self, name, *phases, timeout=15):
        return self.wait_pod(name, lambda p: p["status"].get("phase") in phases, timeout,
                             "phase in %s" % (phases,))


def started(prefix, **kw):
    """A kubesim (Kubesim(state, **kw)) for the fixture that yields from this; afterwards its
    state is removed and its log must hold no Python traceback."""
    if KUBECTL is None:
        pytest.fail("kubectl is not installed (these tests check kubesim against it)")
    state = tempfile.mkdtemp(prefix=prefix)
    s = Kubesim(state, **kw)
    yield s
    s.stop()
    with open(os.path.join(state, "kubesim.stderr")) as f:
        log = f.read()
    shutil.rmtree(state, ignore_errors=True)
    assert "Traceback" not in log, "kubesim raised:\n" + log


@pytest.fixture(scope="session")
def sim():
    yield from started("kubesim-kubectl-")


@pytest.fixture
def ks(sim):
    """The session's kubesim, reset (no pods, templates or faults) before the test."""
    sim.reset()
    yield sim


@pytest.fixture
def kubectl(sim):
    """kubectl(*args, input=bytes, kubeconfig=path, timeout=s) -> CompletedProcess (bytes)."""
    def run(*args, input=None, kubeconfig=None, timeout=30, check=False):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": sim.home,
               "KUBECONFIG": kubeconfig or sim.kubeconfig,
               "KUBECACHEDIR": os.path.join(sim.home, "cache")}
        r = subprocess.run([KUBECTL] + list(args), input=input, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        if check:
            assert r.returncode == 0, "kubectl %s: rc %d\n%s" % (
                " ".join(args), r.returncode, r.stderr.decode())
        return r
    return run


@pytest.fixture
def kubectl_bg(sim):
    """Starts kubectl in the background (for -w); killed after the test."""
    procs = []

    def start(*args):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": sim.home,
               "KUBECONFIG": sim.kubeconfig, "KUBECACHEDIR": os.path.join(sim.home, "cache")}
        p = subprocess.Popen([KUBECTL] + list(args), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        procs.append(p)
        return p
    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
