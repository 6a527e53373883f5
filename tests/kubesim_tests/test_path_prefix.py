"""kubesim --path-prefix (an API server behind a proxy at https://host/k8s/) against the real
kubectl: discovery, REST and the attach stream all work under the prefix, as they do
against a real API server behind such a proxy; a path outside it is the proxy's 404."""
import os
import subprocess

import pytest

from conftest import KUBECTL, started


@pytest.fixture(scope="module")
def prefixed():
    yield from started("kubesim-prefix-", path_prefix="/k8s")


def kubectl(sim, *args, input=None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": sim.home,
           "KUBECONFIG": sim.kubeconfig, "KUBECACHEDIR": os.path.join(sim.home, "cache")}
    return subprocess.run([KUBECTL] + list(args), input=input, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)


def test_kubectl_under_the_prefix(prefixed):
    r = kubectl(prefixed, "version", "-o", "json")
    assert r.returncode == 0, r.stderr.decode()
    data = bytes(range(256)) * 400
    r = kubectl(prefixed, "run", "copy", "-i", "--rm", "-q", "--restart=Never", "--image=cat",
                input=data)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == data
    r = kubectl(prefixed, "get", "pods", "-o", "name")
    assert r.returncode == 0 and r.stdout == b"", r.stderr.decode()
    lines = prefixed.requests()
    assert any("/attach?" in line for line in lines), lines


def test_outside_the_prefix_is_404(prefixed):
    code, text = prefixed.api("GET", "/kubesim/faults")  # the control API: at the root
    assert code == 200
    prefixed.path_prefix = ""
    try:
        code, text = prefixed.api("GET", "/api/v1/namespaces/default/pods")
    finally:
        prefixed.path_prefix = "/k8s"
    assert code == 404 and "kubesim serves the API under /k8s/" in text, (code, text)
