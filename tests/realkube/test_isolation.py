"""Level 3, enforced and proven from inside function pods (docs/network.md): the policies
manifests/functions/networkpolicies.yaml ships, as the tier installed them, on the cluster's
NetworkPolicy enforcement (kube-router's firewall) with CoreDNS as a pod (scripts/realkube).

A function that probes (tests/realkube/netprobe.c behind a shell entrypoint: one TCP connect
per target, busybox nslookup per name) runs through krmpod and writes what it reached into
its output. The same targets are first probed from a pod no policy selects, so that a target
the function cannot reach is the policies' doing, not a dead target:
  * without a grant: not the API server (its Service, the node address), not another pod, a
    Service, the registry, nor the cluster's DNS; no name resolves;
  * granted: names resolve through the cluster's DNS (the kube-dns Service, then the CoreDNS
    pod), and nothing private is reached: not port 53 on another pod, not the API server, a
    pod, a Service or the registry;
  * granted, with a policy of the admin's for an internal configuration server: the
    organisation's net-config function (tests/tools/fn-org) fetches from it by its DNS name,
    byte for byte the output of the same binary run directly on this machine with the
    cluster's DNS; without that policy it fails, naming the URL."""
import os
import subprocess
import tempfile
import time

import pytest
import yaml

import images
import realfns
from conftest import FN_NS, assert_ok, pod_summary, render
from kube import kubectl
from sidecar import direct_build
from test_cluster import PAGE, close_lab, netprobe_binary, open_lab

PROBE_FN = "example.com/krmpod-test/probe-fn:v1"
PROBE_SCRIPT = r"""#!/bin/sh
# a KRM function that reports what its pod reaches: for each TARGETS entry (IP:PORT) the word
# netprobe says, for each NAMES entry whether busybox's nslookup resolved it
cat >/dev/null
printf 'apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n'
printf -- '- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: probes\n  data:\n'
for t in $TARGETS; do
	w=$(netprobe "${t%:*}" "${t##*:}" 1500 | cut -d' ' -f1)
	printf '    "%s": "%s"\n' "$t" "$w"
done
for n in $NAMES; do
	if nslookup -timeout=2 "$n" 2>/dev/null | grep -q '^Name:'; then r=resolved; else r=unresolved; fi
	printf '    "dns %s": "%s"\n' "$n" "$r"
done
"""


def build_probe_fn():
    out = netprobe_binary()
    with tempfile.TemporaryDirectory() as d:
        rootfs = os.path.join(d, "rootfs")
        images.busybox_root(rootfs)
        subprocess.run(["install", "-m", "755", out, os.path.join(rootfs, "bin", "netprobe")],
                       check=True)
        path = os.path.join(rootfs, "usr", "local", "bin", "probe-fn")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(PROBE_SCRIPT)
        os.chmod(path, 0o755)
        subprocess.run([images.REALKUBE, "image", PROBE_FN, rootfs, "--entrypoint",
                        '["/usr/local/bin/probe-fn"]'], check=True, stdout=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def net(cluster, install):
    """A namespace of its own with a server pod (httpd on 8080, and on 53: a TCP port 53 that
    is not the cluster's DNS) behind the Service `web`, and a client pod no policy selects."""
    build_probe_fn()
    lab = open_lab(cluster, "realkube-iso-", 53)
    try:
        env = cluster.env
        lab.targets = {
            "API server by its Service": "10.96.0.1:443",
            "API server by the node address": "%s:6443" % env["REALKUBE_NODE_IP"],
            "another pod": "%s:8080" % lab.server_ip,
            "a Service": "%s:80" % lab.cluster_ip,
            "the registry": env["REALKUBE_REGISTRY"],
            "port 53 on another pod": "%s:53" % lab.server_ip,
            "the cluster's DNS (TCP)": "%s:53" % env["REALKUBE_DNS_IP"],
        }
        lab.names = ["kubernetes.default.svc.%s" % env["REALKUBE_CLUSTER_DOMAIN"],
                     "web.%s.svc.%s" % (lab.ns, env["REALKUBE_CLUSTER_DOMAIN"])]
        # every target answers a pod no policy selects: what a function misses is the
        # policies' doing
        for what, t in lab.targets.items():
            ip, port = t.rsplit(":", 1)
            assert lab.probe(ip, int(port)) == "connected", "from the client pod: %s" % what
        for n in lab.names:
            assert lab.resolves(n), "from the client pod: %s" % n
        yield lab
    finally:
        close_lab(lab)


def policies(install):
    items = install.api.get("/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies" % FN_NS)
    return [p["metadata"]["name"] for p in items["items"]]


def probe_app(tmp_path, net, granted, name):
    app = tmp_path / name
    app.mkdir()
    (app / "kustomization.yaml").write_text("generators:\n- probe.yaml\n")
    (app / "probe.yaml").write_text(
        "apiVersion: krmpod.test/v1\nkind: Probe\nmetadata:\n  name: probe\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n        image: %s\n%s"
        "        envs:\n        - TARGETS=%s\n        - NAMES=%s\n"
        % (PROBE_FN, "        network: true\n" if granted else "",
           " ".join(net.targets.values()), " ".join(net.names)))
    return app


# attach mode named: under the shipped settings a fixture whose image config the sidecar
# cannot read runs on its image's own entrypoint (exec mode), gated as attach mode is
ATTACH = {"KRMPOD_MODE": "attach"}


def probe(install, net, tmp_path, granted, mode_env=None, name="probe"):
    """{target description: netprobe's word} and {name: resolved?} from inside the pod."""
    env = dict(mode_env or {})
    if granted:
        env["KRMPOD_ALLOW_NETWORK"] = "true"
    r, pods = render(install, probe_app(tmp_path, net, granted, name), **env)
    assert_ok(r)
    assert len(pods) >= 1
    for p in pods.values():
        label = p["created"]["metadata"]["labels"]["krmpod.dev/network"]
        assert label == ("granted" if granted else "none"), pod_summary(p)
    [cm] = [d for d in yaml.safe_load_all(r.stdout) if d and d["metadata"]["name"] == "probes"]
    data = cm["data"]
    words = {what: data[t] for what, t in net.targets.items()}
    dns = {n: data["dns " + n] == "resolved" for n in net.names}
    # the shipped KRMPOD_NETWORK_GATE held the function back until the pod was isolated:
    # attach mode's init container, exec mode's krmpod call/serve
    for p in pods.values():
        spec = p["created"]["spec"]
        fn = [c for c in spec["containers"] if c["name"] == "fn"][0]
        gated = ([c["command"][:2] for c in spec.get("initContainers", [])] ==
                 [["krmpod", "net-gate"]] or
                 {"name": "KRMPOD_NET_GATE_MS", "value": "10000"} in fn.get("env", []))
        assert gated, pod_summary(p)
    net.last_stderr = r.stderr.decode()
    return words, dns


@pytest.mark.parametrize("mode", ["attach", "exec"])
def test_without_a_grant_a_function_reaches_nothing(install, net, tmp_path, mode,
                                                    real_exec_mode):
    words, dns = probe(install, net, tmp_path, False,
                       real_exec_mode if mode == "exec" else ATTACH)
    reached = {w: v for w, v in words.items() if v == "connected"}
    assert not reached, "a function without a grant reached %s (policies: %s)\n%s" % (
        reached, policies(install), net.last_stderr)
    assert not any(dns.values()), "names resolved without a grant: %s" % dns


def test_a_granted_function_resolves_through_the_cluster_dns_and_reaches_nothing_private(
        install, net, tmp_path):
    words, dns = probe(install, net, tmp_path, True)
    assert all(dns.values()), "a granted function cannot resolve: %s" % dns
    assert words["the cluster's DNS (TCP)"] == "connected", words
    reached = {w: v for w, v in words.items()
               if v == "connected" and w != "the cluster's DNS (TCP)"}
    assert not reached, "a granted function reached private addresses: %s" % reached


def config_server_app(tmp_path, net, name):
    url = "http://web.%s.svc.%s/index.html" % (net.ns, net.env["REALKUBE_CLUSTER_DOMAIN"])
    app = tmp_path / name
    app.mkdir()
    (app / "kustomization.yaml").write_text("generators:\n- net-config.yaml\n")
    (app / "net-config.yaml").write_text(
        "apiVersion: platform.example.com/v1\nkind: NetConfig\nmetadata:\n  name: settings\n"
        "  annotations:\n    config.kubernetes.io/function: |\n      container:\n"
        "        image: %s\n        network: true\nspec:\n  configMapName: remote-settings\n"
        "  url: %s\n  key: index.html\n" % (realfns.image_name("net-config"), url))
    return app, url


ALLOW_CONFIG_SERVER = "allow-config-server"


def doctor_probe(install):
    """`krmpod doctor --probe` in the sidecar, with its settings and in-cluster credentials."""
    r = install.sidecar.exec(["krmpod", "doctor", "--probe"])
    return r.stdout.decode() + r.stderr.decode()


def test_doctor_s_probe_sees_the_enforcement_from_inside_a_pod(install):
    out = doctor_probe(install)
    assert "[ok  ] NetworkPolicy enforcement: a pod without a grant was isolated, seen from " \
        "inside it" in out, out
    assert "[ok  ] network gate: functions start once their pod is isolated, waiting at " \
        "most 10000 ms (KRMPOD_NETWORK_GATE)" in out, out


def test_a_policy_of_the_admin_s_lets_a_granted_function_reach_an_internal_server(
        install, net, tmp_path):
    app, url = config_server_app(tmp_path, net, "config")
    # without a policy of the admin's, the shipped ones keep the server out of reach
    r, _ = render(install, app, KRMPOD_ALLOW_NETWORK="true")
    err = r.stderr.decode()
    assert r.returncode != 0 and r.stdout == b"", err
    assert "net-config: " in err and url.split("/index")[0] in err, err
    # the admin opens the server's pods on 8080 to granted functions (docs/network.md)
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": ALLOW_CONFIG_SERVER, "namespace": FN_NS},
              "spec": {"podSelector": {"matchLabels": {"krmpod.dev/network": "granted"}},
                       "policyTypes": ["Egress"],
                       "egress": [{"to": [{"namespaceSelector": {"matchLabels": {
                           "kubernetes.io/metadata.name": net.ns}},
                           "podSelector": {"matchLabels": {"app": "server"}}}],
                           "ports": [{"protocol": "TCP", "port": 8080}]}]}}
    install.api.call("POST", "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies" % FN_NS,
                     policy)
    try:
        resolv = tmp_path / "resolv.conf"
        resolv.write_text("nameserver %s\nsearch svc.%s %s\noptions ndots:5\n" % (
            net.env["REALKUBE_DNS_IP"], net.env["REALKUBE_CLUSTER_DOMAIN"],
            net.env["REALKUBE_CLUSTER_DOMAIN"]))
        direct = direct_build(app, tmp_path, flags=["--network"],
                              KRMPOD_TEST_RESOLV_CONF=str(resolv),
                              **realfns.direct_env(install.images["real"]))
        assert direct.returncode == 0, direct.stderr.decode()
        assert PAGE in direct.stdout.decode(), direct.stdout.decode()
        # the controller applies the policy asynchronously: a few tries
        deadline = time.monotonic() + 30
        while True:
            r, _ = render(install, app, KRMPOD_ALLOW_NETWORK="true")
            if r.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert_ok(r)
        assert r.stdout == direct.stdout, (r.stdout.decode(), direct.stdout.decode())
        # and the policy opened that server only: the probe still reaches nothing else
        words, dns = probe(install, net, tmp_path, True, name="probe-after-policy")
        assert words["another pod"] == "connected" and words["a Service"] == "connected", words
        for what in ("API server by its Service", "API server by the node address",
                     "the registry", "port 53 on another pod"):
            assert words[what] != "connected", (what, words)
    finally:
        install.api.request("DELETE", "/apis/networking.k8s.io/v1/namespaces/%s/"
                            "networkpolicies/%s" % (FN_NS, ALLOW_CONFIG_SERVER))


@pytest.mark.parametrize("mode", ["attach", "exec"])
def test_the_gate_refuses_to_start_a_function_in_a_pod_no_policy_isolates(
        install, net, tmp_path, mode, real_exec_mode):
    """With the deny-all policy gone, an ungranted pod is selected by no policy: the gate sees
    the API server, the node's kubelet and the cluster DNS still reachable after its time, the function never starts, and the error
    says why and names the setting."""
    policy = "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies/krmpod-deny-all" % FN_NS
    install.api.call("DELETE", policy)
    try:
        env = dict(real_exec_mode if mode == "exec" else ATTACH, KRMPOD_NETWORK_GATE="3s")
        r, pods = render(install, probe_app(tmp_path, net, False, "ungated"), **env)
        err = r.stderr.decode()
        assert r.returncode != 0 and r.stdout == b"", err
        # every target answers, and the message names each, in order
        assert "network gate: this pod still reached the API server (KUBERNETES_SERVICE_HOST, " \
            "KUBERNETES_SERVICE_PORT) at 10.96.0.1:443, the node's kubelet " in err, err
        assert ":10250 and the cluster DNS (the pod's nameserver) at 10.96.0.10:53 " in err, err
        assert "KRMPOD_NETWORK_GATE" in err, err
        # the function never ran: its probe output is nowhere
        assert "probes" not in err, err
        if mode == "attach":  # and doctor's probe pod says so too
            out = doctor_probe(install)
            assert "[FAIL] NetworkPolicy enforcement: a pod without a grant was NOT " \
                "isolated: " in out and "still reached the API server" in out, out
    finally:
        kubectl("apply", "--server-side", "--field-manager=krmpod", "-f",
                os.path.join(images.ROOT, "manifests", "functions", "networkpolicies.yaml"))
