"""The test suites' handle on a kubesim process (tests/integration, tests/kubesim_tests,
tests/image, bench): start it, reach its control API, reset it between tests, stop it."""
import http.client
import json
import os
import signal
import ssl
import subprocess
from urllib.parse import urlparse

KUBESIM = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kubesim")


class Kubesim:
    """tests/kubesim/kubesim on 127.0.0.1 with its state (kubeconfigs, tokens, CA, request
    log) in `state`. `images` is a `:`-separated list of fixture directories.
    relist_period_ms, pull_backoff_ms, server_version and path_prefix are kubesim's flags
    (None: its defaults, a real kubelet's timing and Kubernetes 1.34, the API at the
    root)."""

    def __init__(self, state, images, relist_period_ms=None, server_version=None,
                 pull_backoff_ms=None, path_prefix=""):
        self.state = state
        self.path_prefix = path_prefix
        self.stderr = open(os.path.join(state, "kubesim.stderr"), "w")
        args = [KUBESIM, "--port", "0", "--images", images, "--state", state]
        if relist_period_ms is not None:
            args += ["--relist-period-ms", str(relist_period_ms)]
        if pull_backoff_ms is not None:
            args += ["--pull-backoff-ms", str(pull_backoff_ms)]
        if server_version is not None:
            args += ["--server-version", server_version]
        if path_prefix:
            args += ["--path-prefix", path_prefix]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.stderr,
                                     text=True)
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("https://"):
            raise RuntimeError("kubesim did not print its URL: %r (see %s/kubesim.stderr)"
                               % (self.url, state))
        u = urlparse(self.url)
        self.host, self.port = u.hostname, u.port
        self.kubeconfig = os.path.join(state, "kubeconfig")
        self.token = self.read("token")
        self.ctx = ssl.create_default_context(cafile=os.path.join(state, "ca.crt"))

    def read(self, name):
        with open(os.path.join(self.state, name)) as f:
            return f.read().strip()

    def api(self, method, path, body=None, token=None):
        """(status, decoded JSON or text) of one request, with the admin token by default."""
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=10)
        headers = {"Authorization": "Bearer " + (token or self.token)}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if not path.startswith("/kubesim/"):
            path = self.path_prefix + path
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        text = resp.read().decode()
        conn.close()
        try:
            return resp.status, json.loads(text) if text else None
        except ValueError:
            return resp.status, text

    def control(self, method, path, body=None):
        """A request that must succeed; returns the decoded answer."""
        code, obj = self.api(method, path, body)
        if code >= 300:
            raise RuntimeError("kubesim %s %s: %d %s" % (method, path, code, obj))
        return obj

    def faults(self, **faults):
        self.control("PUT", "/kubesim/faults", faults)

    def pods(self):
        """Every pod, as [{namespace, name, phase}]."""
        return self.control("GET", "/kubesim/pods")["pods"]

    def api_pods(self, namespace="default"):
        """The pods as the API lists them (full objects)."""
        return self.control("GET", "/api/v1/namespaces/%s/pods" % namespace)["items"]

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
            self.proc.wait()
        self.stderr.close()


def session(prefix, factory):
    """Body of a session fixture: a kubesim in a fresh state directory, stopped and removed
    afterwards. factory(state) makes the Kubesim."""
    import shutil
    import tempfile
    state = tempfile.mkdtemp(prefix=prefix)
    sim = factory(state)
    yield sim
    sim.stop()
    shutil.rmtree(state, ignore_errors=True)


def no_pods_left(sim):
    """Body of a per-test fixture: resets the session's kubesim, runs the test, and asserts
    that it left no pod behind."""
    sim.reset()
    yield sim
    left = sim.pods()
    sim.reset()
    assert left == [], "pods left behind after the test: %r" % (left,)
