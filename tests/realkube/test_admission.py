"""The shipped admission policies (manifests/functions/admission.yaml) on the real API
server, with the shipped Role's token: every request the Role alone would allow beyond
krmpod's own pods is denied with the policy's message, and krmpod's own pods are admitted
(every other test of the tier renders through them: attach, exec, the pool, mounts, a
granted network, an admin's PodTemplate).

Each case starts from a pod exactly as krmpod makes it (the spec of a pod the sidecar made,
read back from the recorder) and changes one thing."""
import copy
import json
import uuid

import pytest

from apps import fn_app
from conftest import FN_NS, assert_ok, render
from kube import kubectl

RULES = "krmpod-function-pods"
STREAMS = "krmpod-function-streams"


def token():
    return kubectl("-n", "argocd", "create", "token", "argocd-repo-server", "--duration",
                   "10m").stdout.decode().strip()


@pytest.fixture(scope="module")
def as_repo_server(install):
    return install.api.with_token(token())


@pytest.fixture(scope="module")
def krmpod_pod(install, exec_mode, tmp_path_factory):
    """The body of an exec-mode pod as krmpod created it (what the recorder saw), cleaned of
    what the server filled in."""
    app = fn_app(tmp_path_factory.mktemp("adm"), "cat")
    r, pods = render(install, app, KRMPOD_PRESTART="false", **exec_mode)
    assert_ok(r)
    [rec] = pods.values()
    o = copy.deepcopy(rec["created"])
    meta = o["metadata"]
    for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "name",
              "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds"):
        meta.pop(k, None)
    meta["generateName"] = "krmpod-admission-test-"
    meta["labels"]["krmpod.dev/create-id"] = uuid.uuid4().hex[:16]
    o.pop("status", None)
    spec = o["spec"]
    for k in ("nodeName",):
        spec.pop(k, None)
    spec["activeDeadlineSeconds"] = 60
    return o


def create(api, body):
    return api.request("POST", "/api/v1/namespaces/%s/pods?dryRun=All" % FN_NS, body)


def denied(status, obj, policy, words):
    text = json.dumps(obj)
    return status == 422 and policy in text and words in text, (status, text[:600])


def changed(pod, fn):
    p = copy.deepcopy(pod)
    fn(p)
    return p


def fn_of(p):
    return next(c for c in p["spec"]["containers"] if c["name"] == "fn")


CASES = {
    "a pod that is not krmpod's": (lambda p: p["metadata"]["labels"].pop("krmpod.dev/function"),
                                   "only function pods"),
    "another managed-by": (lambda p: p["metadata"]["labels"].update(
        {"app.kubernetes.io/managed-by": "someone"}), "only function pods"),
    "a token mounted": (lambda p: p["spec"].update({"automountServiceAccountToken": True}),
                        "automountServiceAccountToken must be false"),
    "another ServiceAccount": (lambda p: p["spec"].update({"serviceAccountName": "builder"}),
                               "automountServiceAccountToken must be false"),
    "a nodeName": (lambda p: p["spec"].update({"nodeName": "realkube-node"}), "no nodeName"),
    "the host's network": (lambda p: p["spec"].update({"hostNetwork": True}),
                           "no host namespaces"),
    "the host's PIDs": (lambda p: p["spec"].update({"hostPID": True}), "no host namespaces"),
    "a toleration of one's own": (lambda p: p["spec"].setdefault("tolerations", []).append(
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}),
        "a toleration whose key"),
    "a hostPath volume": (lambda p: p["spec"]["volumes"].append(
        {"name": "krmpod-host", "hostPath": {"path": "/"}}), "volumes beyond"),
    "a Secret volume": (lambda p: p["spec"]["volumes"].append(
        {"name": "loot", "secret": {"secretName": "x"}}), "volumes beyond"),
    # issue 29, item 2: a Secret, a ConfigMap or a token through the environment
    "an env var from a Secret": (lambda p: fn_of(p).setdefault("env", []).append(
        {"name": "LOOT", "valueFrom": {"secretKeyRef": {"name": "x", "key": "k"}}}),
        "no Secret, ConfigMap or ServiceAccount through the environment"),
    "an env var from a ConfigMap": (lambda p: fn_of(p).setdefault("env", []).append(
        {"name": "LOOT", "valueFrom": {"configMapKeyRef": {"name": "x", "key": "k"}}}),
        "no Secret, ConfigMap or ServiceAccount through the environment"),
    "an env var from the ServiceAccount's name": (lambda p: fn_of(p).setdefault(
        "env", []).append({"name": "SA", "valueFrom": {"fieldRef": {
            "fieldPath": "spec.serviceAccountName"}}}),
        "no Secret, ConfigMap or ServiceAccount through the environment"),
    "envFrom a Secret": (lambda p: fn_of(p).update(
        {"envFrom": [{"secretRef": {"name": "x"}}]}),
        "no Secret, ConfigMap or ServiceAccount through the environment"),
    "envFrom in krmpod's own container": (lambda p: next(
        c for c in p["spec"]["containers"] if c["name"] == "krmpod").update(
        {"envFrom": [{"configMapRef": {"name": "x"}}]}),
        "no Secret, ConfigMap or ServiceAccount through the environment"),
    "a projected token volume": (lambda p: p["spec"]["volumes"].append(
        {"name": "krmpod-token", "projected": {"sources": [{"serviceAccountToken": {
            "path": "token"}}]}}), "volumes beyond"),
    "a ConfigMap volume": (lambda p: p["spec"]["volumes"].append(
        {"name": "krmpod-cm", "configMap": {"name": "x"}}), "volumes beyond"),
    "hostAliases": (lambda p: p["spec"].update(
        {"hostAliases": [{"ip": "203.0.113.7", "hostnames": ["kubernetes.default.svc"]}]}),
        "names resolve through the cluster's DNS only"),
    "a dnsConfig of one's own": (lambda p: p["spec"].update(
        {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["203.0.113.53"]}}),
        "names resolve through the cluster's DNS only"),
    "the node's DNS": (lambda p: p["spec"].update({"dnsPolicy": "Default"}),
                       "names resolve through the cluster's DNS only"),
    "a container of one's own": (lambda p: p["spec"]["containers"].append(
        dict(fn_of(p), name="extra")), "containers must be"),
    "another helper image": (lambda p: next(
        c for c in p["spec"]["containers"] if c["name"] == "krmpod").update(
        {"image": "registry.local/busybox:1"}), "containers must be"),
}


# Pod Security `restricted` (the namespace's label) refuses these before the policy runs; with
# it loosened (an admin's mistake, or a namespace without it), the policy must still hold:
# the test loosens it for these cases. The ServiceAccount must exist, or the ServiceAccount
# admission plugin refuses first.
UNDER_PSS = {"a hostPath volume", "the host's PIDs", "the host's network",
             "another ServiceAccount"}


@pytest.fixture
def loosened(install):
    kubectl("label", "namespace", FN_NS, "--overwrite",
            "pod-security.kubernetes.io/enforce=privileged")
    kubectl("-n", FN_NS, "create", "serviceaccount", "builder")
    try:
        yield
    finally:
        kubectl("-n", FN_NS, "delete", "serviceaccount", "builder", check=False)
        kubectl("label", "namespace", FN_NS, "--overwrite",
                "pod-security.kubernetes.io/enforce=restricted")


@pytest.mark.parametrize("case", sorted(set(CASES) - UNDER_PSS))
def test_what_the_role_allows_beyond_krmpod_s_pods_is_denied(as_repo_server, krmpod_pod, case):
    change, words = CASES[case]
    status, obj = create(as_repo_server, changed(krmpod_pod, change))
    ok, why = denied(status, obj, RULES, words)
    assert ok, why


def test_with_pod_security_loosened_the_policy_still_denies(as_repo_server, krmpod_pod,
                                                            loosened):
    for case in sorted(UNDER_PSS):
        change, words = CASES[case]
        status, obj = create(as_repo_server, changed(krmpod_pod, change))
        ok, why = denied(status, obj, RULES, words)
        assert ok, (case, why)
    status, obj = create(as_repo_server, krmpod_pod)
    assert status == 201, obj


def test_the_pod_s_own_name_namespace_uid_node_and_its_resources_are_admitted(
        as_repo_server, krmpod_pod):
    """What the allowlist keeps: env from the pod's own identity and its container's
    resources (nothing secret), so that the rules deny the Secret, not the variable."""
    p = copy.deepcopy(krmpod_pod)
    fn_of(p).setdefault("env", []).extend(
        [{"name": "POD_%d" % i, "valueFrom": {"fieldRef": {"fieldPath": f}}}
         for i, f in enumerate(("metadata.name", "metadata.namespace", "metadata.uid",
                                "status.hostIP"))] +
        [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}])
    status, obj = create(as_repo_server, p)
    assert status == 201, (status, json.dumps(obj)[:600])


def test_krmpod_s_own_pod_is_admitted(as_repo_server, krmpod_pod):
    status, obj = create(as_repo_server, krmpod_pod)
    assert status == 201, obj


def test_the_network_label_only_as_the_grant_allows(install, as_repo_server, krmpod_pod):
    granted = changed(krmpod_pod, lambda p: p["metadata"]["labels"].update(
        {"krmpod.dev/network": "granted"}))
    status, obj = create(as_repo_server, granted)
    assert status == 201, obj  # the tier's admin allows the network (conftest overlay)
    patch = json.dumps({"data": {"allowNetwork": "false"}})
    kubectl("-n", FN_NS, "patch", "configmap", "krmpod-admission", "--type=merge", "-p", patch)
    try:
        status, obj = create(as_repo_server, granted)
        ok, why = denied(status, obj, RULES, "krmpod.dev/network must be none")
        assert ok, why
        status, obj = create(as_repo_server, krmpod_pod)  # none: still fine
        assert status == 201, obj
    finally:
        kubectl("-n", FN_NS, "patch", "configmap", "krmpod-admission", "--type=merge", "-p",
                json.dumps({"data": {"allowNetwork": "true"}}))


def test_a_pool_pod_may_change_only_its_lease_marks(install, as_repo_server, krmpod_pod):
    made = install.api.call("POST", "/api/v1/namespaces/%s/pods" % FN_NS, krmpod_pod)
    name = made["metadata"]["name"]
    path = "/api/v1/namespaces/%s/pods/%s" % (FN_NS, name)
    try:
        def patch(ops):
            return as_repo_server.request("PATCH", path, json.dumps(ops).encode(),
                                          content_type="application/json-patch+json")
        # the pool's own: its state label and lease annotations
        status, obj = patch([{"op": "add", "path": "/metadata/labels/krmpod.dev~1pool-state",
                              "value": "idle"},
                             {"op": "add",
                              "path": "/metadata/annotations/krmpod.dev~1idle-since",
                              "value": "1"}])
        assert status == 200, obj
        # a shim's lease renewal (pool_lease.h), as the Role's token writes it
        status, obj = patch([{"op": "add", "path": "/metadata/annotations/krmpod.dev~1renewed",
                              "value": "1"}])
        assert status == 200, obj
        bad = {
            "an image swapped": ([{"op": "replace", "path": "/spec/containers/%d/image" % next(
                i for i, c in enumerate(made["spec"]["containers"]) if c["name"] == "fn"),
                "value": "registry.local/busybox:1"}], "spec cannot change"),
            "the network label": ([{"op": "replace",
                                    "path": "/metadata/labels/krmpod.dev~1network",
                                    "value": "granted"}], "only the warm pool's"),
            "another annotation": ([{"op": "add", "path": "/metadata/annotations/x",
                                     "value": "y"}], "only the warm pool's lease marks"),
        }
        for what, (ops, words) in bad.items():
            status, obj = patch(ops)
            ok, why = denied(status, obj, RULES, words)
            assert ok, (what, why)
    finally:
        install.api.request("DELETE", path, {"gracePeriodSeconds": 0})


def test_exec_and_attach_only_krmpod_s_own(install, as_repo_server, krmpod_pod):
    made = install.api.call("POST", "/api/v1/namespaces/%s/pods" % FN_NS, krmpod_pod)
    name = made["metadata"]["name"]
    base = "/api/v1/namespaces/%s/pods/%s" % (FN_NS, name)
    try:
        # the admission answer comes before the upgrade: a plain POST gets it
        def connect(sub, query):
            return as_repo_server.request("POST", "%s/%s?%s" % (base, sub, query))
        status, obj = connect("exec", "container=fn&command=sh&command=-c&command=id&stdout=1")
        ok, why = denied(status, obj, STREAMS, "exec runs only krmpod's call or serve")
        assert ok, why
        status, obj = connect("exec", "container=krmpod&command=/krmpod/bin/krmpod"
                                      "&command=serve&stdout=1")
        ok, why = denied(status, obj, STREAMS, "exec runs only krmpod's call or serve")
        assert ok, why
        status, obj = connect("attach", "container=krmpod&stdout=1")
        ok, why = denied(status, obj, STREAMS, "attach only to the fn or mounts container")
        assert ok, why
        # krmpod's own command passes admission (it then fails for want of a stream upgrade)
        status, obj = connect("exec", "container=fn&command=/krmpod/bin/krmpod&command=call"
                                      "&command=/krmpod/work&stdin=1&stdout=1")
        assert STREAMS not in json.dumps(obj), (status, obj)
    finally:
        install.api.request("DELETE", base, {"gracePeriodSeconds": 0})


# Issue 29, item 2: the allowlist. Every PodSpec and Container field krmpod never writes
# (tests/integration/test_allowlist.py keeps the policy's list in step with the pod builder),
# set on krmpod's own pod with a valid value, is denied by the policy. A few cannot reach it on
# this server: a field whose feature gate is off is dropped before admission (the pod is then
# admitted without it), and a value the API server's own validation refuses (volumeDevices
# need a PersistentVolumeClaim, restartPolicy belongs to init containers, overhead needs a
# RuntimeClass) is refused first; those say so and must never be admitted with the field.
SPEC_FIELDS = {
    "hostUsers": False, "hostname": "x", "subdomain": "x", "setHostnameAsFQDN": True,
    "shareProcessNamespace": True, "os": {"name": "linux"},
    "readinessGates": [{"conditionType": "example.com/ready"}],
    "resourceClaims": [{"name": "c", "resourceClaimName": "x"}],
    "schedulingGates": [{"name": "example.com/wait"}],
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                   "whenUnsatisfiable": "ScheduleAnyway"}],
    "overhead": {"cpu": "10m"},
    "resources": {"limits": {"cpu": "8"}, "requests": {"cpu": "4"}},  # over the containers
    "hostnameOverride": "x",
}
PROBE = {"exec": {"command": ["true"]}}
CONTAINER_FIELDS = {
    "ports": [{"containerPort": 8080}], "livenessProbe": PROBE, "readinessProbe": PROBE,
    "startupProbe": PROBE, "workingDir": "/tmp",
    "volumeDevices": [{"name": "krmpod-work", "devicePath": "/dev/x"}],
    "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
    "restartPolicy": "Always",
    "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In",
                                                               "values": [42]}}],
    "lifecycle": {"postStart": PROBE},
}
# What the API server itself refuses or drops here (Kubernetes 1.34, default gates).
NOT_REACHING_THE_POLICY = {"overhead", "volumeDevices", "restartPolicy", "restartPolicyRules",
                           "hostnameOverride"}


def verdict(status, obj, where, field):
    """"policy" (denied by krmpod's allowlist), "server" (refused before it), "dropped"
    (admitted without the field), or "ADMITTED" (a hole)."""
    text = json.dumps(obj)
    if status == 422 and RULES in text and "krmpod never writes" in text:
        return "policy"
    if status == 201:
        return "ADMITTED" if field in where(obj) else "dropped"
    return "server"


@pytest.mark.parametrize("field", sorted(SPEC_FIELDS) + sorted(CONTAINER_FIELDS))
def test_every_field_krmpod_never_writes_is_denied(as_repo_server, krmpod_pod, field):
    p = copy.deepcopy(krmpod_pod)
    if field in SPEC_FIELDS:
        p["spec"][field] = SPEC_FIELDS[field]
        where = lambda o: o["spec"]  # noqa: E731
    else:
        fn_of(p)[field] = CONTAINER_FIELDS[field]
        where = fn_of
    status, obj = create(as_repo_server, p)
    got = verdict(status, obj, where, field)
    assert got != "ADMITTED", (field, status, json.dumps(obj)[:600])
    if field not in NOT_REACHING_THE_POLICY:
        assert got == "policy", (field, got, status, json.dumps(obj)[:600])


def test_the_cluster_serves_the_pod_fields_the_allowlist_was_checked_against(install):
    """tests/integration/test_allowlist.py checks the policy against a pinned copy of the
    PodSpec and Container fields; a cluster whose Kubernetes adds a field fails here, naming
    it, until the field is classified (written by krmpod, filled in by the server, or
    denied)."""
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "fixtures", "kubernetes", "pod-fields-v1.34.json")) as f:
        pinned = json.load(f)
    schemas = install.api.get("/openapi/v3/api/v1")["components"]["schemas"]
    for kind in ("PodSpec", "Container"):
        live = sorted(schemas["io.k8s.api.core.v1.%s" % kind]["properties"])
        assert live == pinned[kind], (kind, set(live) ^ set(pinned[kind]))
