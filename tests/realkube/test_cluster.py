"""The real cluster has what users' clusters have (scripts/realkube): cluster DNS (CoreDNS),
Services (kube-proxy) and enforced NetworkPolicies (kube-router's firewall), each proven from
inside pods, never on a controller's word.

A namespace of its own: a server pod (busybox httpd on 8080 and on 8081) behind a NodePort
Service `web` (80 -> 8080), and a client pod with netprobe (tests/realkube/netprobe.c: one
TCP connect, "connected", "refused", "timeout" or "unreachable"). The NetworkPolicy test
takes every path before the policy (so that a failure after it is the policy's doing), then
under a deny-all egress policy, then with one allow rule."""
import os
import subprocess
import tempfile
import time
import urllib.request
import uuid

import pytest

import images
from kube import kubectl

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_IMAGE = "registry.local/krmpod-test/netprobe:1"
PAGE = "hello from the server pod"


def netprobe_binary():
    """tests/realkube/netprobe.c, built static; its path."""
    out = os.path.join(images.WORK, "netprobe")
    os.makedirs(images.WORK, exist_ok=True)
    subprocess.run(["gcc", "-O2", "-static", "-Wall", "-Wextra", "-Werror", "-o", out,
                    os.path.join(HERE, "netprobe.c")], check=True)
    return out


def build_probe_image():
    out = netprobe_binary()
    with tempfile.TemporaryDirectory() as d:
        rootfs = os.path.join(d, "rootfs")
        subprocess.run([images.REALKUBE, "busybox-rootfs", rootfs], check=True)
        subprocess.run(["install", "-m", "755", out, os.path.join(rootfs, "bin", "netprobe")],
                       check=True)
        os.makedirs(os.path.join(rootfs, "www"))
        with open(os.path.join(rootfs, "www", "index.html"), "w") as f:
            f.write(PAGE + "\n")
        subprocess.run([images.REALKUBE, "image", PROBE_IMAGE, rootfs], check=True,
                       stdout=subprocess.DEVNULL)


def pod(name, labels, command):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels},
            "spec": {"terminationGracePeriodSeconds": 0,
                     "automountServiceAccountToken": False,
                     "containers": [{"name": "main", "image": PROBE_IMAGE,
                                     "imagePullPolicy": "Never",
                                     "command": ["sh", "-c", command]}]}}


class Lab:
    def __init__(self, cluster, ns):
        self.cluster, self.api, self.ns = cluster, cluster.api, ns
        self.env = cluster.env

    def create(self, obj, kind_path):
        return self.api.call("POST", "/%s/namespaces/%s/%s" % (
            "api/v1" if kind_path in ("pods", "services") else
            "apis/networking.k8s.io/v1", self.ns, kind_path), obj)

    def wait_ready(self, name, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            p = self.api.get("/api/v1/namespaces/%s/pods/%s" % (self.ns, name))
            st = p.get("status") or {}
            if st.get("phase") == "Running" and st.get("podIP"):
                return p
            assert time.monotonic() < deadline, "pod %s not running in %d s: %s" % (
                name, timeout, st)
            time.sleep(0.3)

    def wait_endpoint(self, service, ip, timeout=60):
        """Until the Service's EndpointSlice lists ip as ready: until then kube-proxy
        rejects the Service's traffic (no route to host)."""
        path = ("/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices?labelSelector="
                "kubernetes.io/service-name%%3D%s" % (self.ns, service))
        deadline = time.monotonic() + timeout
        while True:
            ready = [a for s in self.api.get(path)["items"] for e in s.get("endpoints") or []
                     if (e.get("conditions") or {}).get("ready") for a in e["addresses"]]
            if ip in ready:
                return
            assert time.monotonic() < deadline, "Service %s has no ready endpoint %s" % (
                service, ip)
            time.sleep(0.2)

    def wait_routed(self, ip, port, timeout=30):
        """Until the client pod reaches ip:port: kube-proxy programs a Service's new endpoint
        some time after the EndpointSlice says it is ready, and rejects the traffic until
        then (no route to host)."""
        deadline = time.monotonic() + timeout
        while self.probe(ip, port) != "connected":
            assert time.monotonic() < deadline, "%s:%d not reached from the client in %d s" % (
                ip, port, timeout)
            time.sleep(0.3)

    def sh(self, pod_name, command, timeout=30):
        """(exit code, stdout+stderr) of `sh -c command` in the pod's container."""
        r = kubectl("-n", self.ns, "exec", pod_name, "--", "sh", "-c", command,
                    check=False, timeout=timeout)
        return r.returncode, (r.stdout + r.stderr).decode(errors="replace")

    def probe(self, ip, port, from_pod="client"):
        """netprobe's word for one TCP connect from a pod."""
        code, out = self.sh(from_pod, "netprobe %s %d 1500" % (ip, port))
        word = out.split()[0] if out.split() else ""
        assert word in ("connected", "refused", "timeout", "unreachable"), (
            "netprobe %s:%d from %s: exit %d: %s" % (ip, port, from_pod, code, out))
        return word

    def resolves(self, name, from_pod="client"):
        """The addresses busybox's nslookup finds for name through the pod's resolv.conf,
        or None. It walks the search path for a name without a dot, and exits 1 when any
        name of that walk failed, so the answer is read from its output: the "Address: IP"
        lines after a "Name:" line."""
        _, out = self.sh(from_pod, "nslookup -timeout=2 %s" % name)
        if "Name:" not in out:
            return None
        answer = out.split("Name:", 1)[1].split("\n\n", 1)[0]
        return [line.split()[-1] for line in answer.splitlines()
                if line.strip().startswith("Address")]


def open_lab(cluster, prefix, second_port, service_type="ClusterIP"):
    """A namespace of its own (deleted by close_lab): a server pod (busybox httpd on 8080 and
    on second_port) behind the Service `web` (80 -> 8080), a client pod, every path routed."""
    build_probe_image()
    ns = prefix + uuid.uuid4().hex[:6]
    kubectl("create", "namespace", ns)
    lab = Lab(cluster, ns)
    try:
        deadline = time.monotonic() + 30
        while lab.api.request("GET", "/api/v1/namespaces/%s/serviceaccounts/default" % ns)[0] != 200:
            assert time.monotonic() < deadline, "no default ServiceAccount in %s" % ns
            time.sleep(0.2)
        lab.create(pod("server", {"app": "server"}, "httpd -p %d -h /www && exec httpd -f "
                       "-p 8080 -h /www" % second_port), "pods")
        lab.create(pod("client", {"app": "client"}, "exec sleep 3600"), "pods")
        svc = lab.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                          "spec": {"type": service_type, "selector": {"app": "server"},
                                   "ports": [{"port": 80, "targetPort": 8080}]}}, "services")
        lab.cluster_ip = svc["spec"]["clusterIP"]
        lab.node_port = svc["spec"]["ports"][0].get("nodePort")
        lab.server_ip = lab.wait_ready("server")["status"]["podIP"]
        lab.client_ip = lab.wait_ready("client")["status"]["podIP"]
        lab.wait_endpoint("web", lab.server_ip)
        lab.wait_routed(lab.cluster_ip, 80)
        return lab
    except BaseException:
        close_lab(lab)
        raise


def close_lab(lab):
    kubectl("delete", "namespace", lab.ns, "--wait=false", check=False)


@pytest.fixture(scope="module")
def lab(cluster):
    lab = open_lab(cluster, "realkube-net-", 8081, service_type="NodePort")
    yield lab
    close_lab(lab)


def until(what, fn, timeout=30):
    """Polls fn until it is true; the policy controller applies rules asynchronously."""
    deadline = time.monotonic() + timeout
    while not fn():
        assert time.monotonic() < deadline, "not within %d s: %s" % (timeout, what)
        time.sleep(0.5)


def test_pods_resolve_services_and_get_answers(lab):
    domain = lab.env["REALKUBE_CLUSTER_DOMAIN"]
    assert lab.resolves("web.%s.svc.%s" % (lab.ns, domain)) == [lab.cluster_ip]
    assert lab.resolves("kubernetes.default.svc.%s" % domain) == ["10.96.0.1"]
    # a name that does not exist is not resolved (no wildcard answer)
    assert lab.resolves("nothere.%s.svc.%s" % (lab.ns, domain)) is None
    # the short name through the pod's search path (ndots:5), then an answer from the
    # Service at the address it resolved to (netprobe --get: an HTTP GET by address)
    short = lab.resolves("web")
    assert short == [lab.cluster_ip]
    code, out = lab.sh("client", "netprobe --get %s 80 5000" % short[0])
    assert code == 0 and out == "connected\n" + PAGE + "\n", out
    # the Service's answer is the server pod's
    code, out = lab.sh("client", "netprobe --get %s 8080 5000" % lab.server_ip)
    assert code == 0 and out == "connected\n" + PAGE + "\n", out


def test_the_kubernetes_service_reaches_the_api_server_from_a_pod(lab):
    assert lab.probe("10.96.0.1", 443) == "connected"
    # a ClusterIP nothing serves on a port it does not have: no connection
    assert lab.probe(lab.cluster_ip, 81) != "connected"


def test_node_port_answers_from_the_host(lab):
    url = "http://%s:%d/" % (lab.env["REALKUBE_NODE_IP"], lab.node_port)
    with urllib.request.urlopen(url, timeout=5) as r:
        assert r.read().decode().strip() == PAGE


def apply_policy(lab, name, egress):
    lab.create({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": name},
                "spec": {"podSelector": {"matchLabels": {"app": "client"}},
                         "policyTypes": ["Egress"], "egress": egress}}, "networkpolicies")


def delete_policy(lab, name):
    lab.api.call("DELETE", "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies/%s" % (
        lab.ns, name))


def test_network_policies_are_enforced_from_inside_pods(lab):
    node_ip = lab.env["REALKUBE_NODE_IP"]
    domain = lab.env["REALKUBE_CLUSTER_DOMAIN"]
    web = "web.%s.svc.%s" % (lab.ns, domain)
    paths = {  # what the client reaches without a policy
        "server pod :8080": (lab.server_ip, 8080),
        "server pod :8081": (lab.server_ip, 8081),
        "Service web": (lab.cluster_ip, 80),
        "API server by its Service": ("10.96.0.1", 443),
        "API server by the node address": (node_ip, 6443),
    }
    for what, (ip, port) in paths.items():
        assert lab.probe(ip, port) == "connected", "before any policy: %s" % what
    assert lab.resolves(web) == [lab.cluster_ip]

    # deny all egress from the client
    apply_policy(lab, "deny-all-egress", [])
    try:
        until("the deny-all policy stops client -> server:8080",
              lambda: lab.probe(lab.server_ip, 8080) != "connected")
        for what, (ip, port) in paths.items():
            assert lab.probe(ip, port) != "connected", "deny-all egress let through: %s" % what
        assert lab.resolves(web) is None, "deny-all egress let DNS through"
        # the policy is the client's only: the server pod, not selected, still reaches the API
        assert lab.probe("10.96.0.1", 443, from_pod="server") == "connected"

        # allow exactly the server pods on TCP 8080, nothing else
        apply_policy(lab, "allow-server-8080", [{
            "to": [{"podSelector": {"matchLabels": {"app": "server"}}}],
            "ports": [{"protocol": "TCP", "port": 8080}]}])
        try:
            until("the allow rule lets client -> server:8080 through",
                  lambda: lab.probe(lab.server_ip, 8080) == "connected")
            # the Service's port 80 is the pod's 8080: allowed after the DNAT
            assert lab.probe(lab.cluster_ip, 80) == "connected"
            for what in ("server pod :8081", "API server by its Service",
                         "API server by the node address"):
                ip, port = paths[what]
                assert lab.probe(ip, port) != "connected", "the allow rule let through: %s" % what
            assert lab.resolves(web) is None, "the allow rule let DNS through"
        finally:
            delete_policy(lab, "allow-server-8080")
    finally:
        delete_policy(lab, "deny-all-egress")
    # without policies, everything is reachable again
    until("client -> API server after the policies were deleted",
          lambda: lab.probe("10.96.0.1", 443) == "connected")
    # DNS goes to the CoreDNS pod (FORWARD), the API server to the node (INPUT): kube-router
    # may open one before the other
    until("DNS from the client after the policies were deleted",
          lambda: lab.resolves(web) == [lab.cluster_ip])
