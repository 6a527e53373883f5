"""The install manifests (manifests/) and the Helm values (docs/helm-values.yaml), checked
without a cluster: everything is rendered by real kustomize (`kubectl kustomize`) and the
security-relevant parts are compared with exact expectations.

Run: /usr/bin/python3 -m pytest -q tests/manifests   (needs kubectl, python3-yaml, pytest)
"""
import os
import re
import shutil
import subprocess

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MANIFESTS = os.path.join(ROOT, "manifests")
HELM_VALUES = os.path.join(ROOT, "docs", "helm-values.yaml")
INSTALL_DOC = os.path.join(ROOT, "docs", "install.md")
KUBECTL = os.environ.get("KUBECTL", "kubectl")

FUNCTIONS_NS = "krmpod-functions"
ARGOCD_NS = "argocd"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
IMAGE = "ghcr.io/krmpod/krmpod"
# the release manifests/ pins (scripts/release-prepare writes it; make release checks it)
RELEASE_TAG = "v0.1.0"

EXPECTED_OBJECTS = {
    ("Namespace", None, FUNCTIONS_NS),
    ("Role", FUNCTIONS_NS, "krmpod"),
    ("RoleBinding", FUNCTIONS_NS, "krmpod"),
    ("NetworkPolicy", FUNCTIONS_NS, "krmpod-deny-all"),
    ("NetworkPolicy", FUNCTIONS_NS, "krmpod-network-granted"),
    ("ResourceQuota", FUNCTIONS_NS, "krmpod"),
    ("LimitRange", FUNCTIONS_NS, "krmpod"),
    ("Deployment", ARGOCD_NS, "argocd-repo-server"),
    ("ConfigMap", ARGOCD_NS, "krmpod-catalogs"),
    ("ConfigMap", ARGOCD_NS, "krmpod-signature-policy"),
    ("ConfigMap", FUNCTIONS_NS, "krmpod-admission"),
    ("ValidatingAdmissionPolicy", None, "krmpod-function-pods"),
    ("ValidatingAdmissionPolicyBinding", None, "krmpod-function-pods"),
    ("ValidatingAdmissionPolicy", None, "krmpod-function-pods-newer-fields"),
    ("ValidatingAdmissionPolicyBinding", None, "krmpod-function-pods-newer-fields"),
    ("ValidatingAdmissionPolicy", None, "krmpod-function-streams"),
    ("ValidatingAdmissionPolicyBinding", None, "krmpod-function-streams"),
}

# Exactly what krmpod needs (design brief 3.3, README): nothing more.
EXPECTED_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "list", "watch", "delete", "patch"]},
    {"apiGroups": [""], "resources": ["pods/attach"], "verbs": ["get", "create"]},
    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["watch"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["podtemplates"], "verbs": ["get"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["list"]},
]

EXPECTED_PSS_LABELS = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
    "pod-security.kubernetes.io/audit": "restricted",
    "pod-security.kubernetes.io/audit-version": "latest",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/warn-version": "latest",
}

EXPECTED_SECURITY_CONTEXT = {
    "runAsNonRoot": True,
    "runAsUser": 999,
    "runAsGroup": 999,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def _field(name, path):
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


EXPECTED_ENV = [
    _field("KRMPOD_OWNER_POD", "metadata.name"),
    _field("KRMPOD_OWNER_UID", "metadata.uid"),
    _field("KRMPOD_OWNER_NAMESPACE", "metadata.namespace"),
    {"name": "KRMPOD_NAMESPACE", "value": FUNCTIONS_NS},
    {"name": "KRMPOD_GENERATE_TIMEOUT", "value": "45s"},
    {"name": "KRMPOD_ALLOW_NETWORK", "value": "false"},
    # the function pods' mounts helper: the sidecar's own image (kept equal under a pin)
    {"name": "KRMPOD_HELPER_IMAGE", "value": IMAGE + ":" + RELEASE_TAG},
    # functions start once their pod's NetworkPolicies are in effect (docs/network.md)
    {"name": "KRMPOD_NETWORK_GATE", "value": "10s"},
    # function catalogs (docs/catalogs.md): the admin's, from the ConfigMap below
    {"name": "KRMPOD_DEFAULT_CATALOGS", "value": "/etc/krmpod/catalogs/catalog.yaml"},
    {"name": "KRMPOD_IMAGE_POLICY", "value": "any"},
    # the signature policy (docs/signatures.md), from the ConfigMap below: requires nothing
    {"name": "KRMPOD_SIGNATURE_POLICY", "value": "/etc/krmpod/signatures/policy.yaml"},
]

EXPECTED_MOUNTS = [
    {"name": "var-files", "mountPath": "/var/run/argocd"},
    {"name": "plugins", "mountPath": "/home/argocd/cmp-server/plugins"},
    {"name": "krmpod-tmp", "mountPath": "/tmp"},
    {"name": "krmpod-token", "mountPath": SA_DIR, "readOnly": True},
    {"name": "krmpod-catalogs", "mountPath": "/etc/krmpod/catalogs", "readOnly": True},
    {"name": "krmpod-signature-policy", "mountPath": "/etc/krmpod/signatures", "readOnly": True},
]

EXPECTED_TOKEN_SOURCES = [
    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
]

# krmpod's own defaults for a function container (README, "Settings").
FUNCTION_DEFAULTS = {"requests": {"cpu": "100m", "memory": "64Mi"},
                     "limits": {"cpu": "1", "memory": "512Mi"}}



def exec_agent_resources():
    """Exec mode's installer container's resources, from the C source that writes them."""
    src = open(os.path.join(ROOT, "src", "pod", "pod_container.c")).read()
    d = dict(re.findall(r'#define AGENT_(\w+)\s+"([^"]+)"', src))
    assert set(d) == {"CPU_REQUEST", "CPU_LIMIT", "MEMORY_REQUEST", "MEMORY_LIMIT"}, d
    return {"requests": {"cpu": d["CPU_REQUEST"], "memory": d["MEMORY_REQUEST"]},
            "limits": {"cpu": d["CPU_LIMIT"], "memory": d["MEMORY_LIMIT"]}}


# A trimmed copy of Argo CD's argocd-repo-server Deployment (manifests/base/repo-server in
# argoproj/argo-cd): the parts the sidecar patch meets. No namespace, as in install.yaml.
UPSTREAM_REPO_SERVER = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: argocd-repo-server
  labels:
    app.kubernetes.io/name: argocd-repo-server
    app.kubernetes.io/part-of: argocd
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: argocd-repo-server
  template:
    metadata:
      labels:
        app.kubernetes.io/name: argocd-repo-server
    spec:
      serviceAccountName: argocd-repo-server
      automountServiceAccountToken: false
      containers:
      - name: argocd-repo-server
        image: quay.io/argoproj/argocd:latest
        args: [/usr/local/bin/argocd-repo-server]
        volumeMounts:
        - {name: ssh-known-hosts, mountPath: /app/config/ssh}
        - {name: tmp, mountPath: /tmp}
        - {name: plugins, mountPath: /home/argocd/cmp-server/plugins}
      initContainers:
      - name: copyutil
        image: quay.io/argoproj/argocd:latest
        command: [sh, -c]
        args: ["/bin/cp --update=none /usr/local/bin/argocd /var/run/argocd/argocd && /bin/ln -s /var/run/argocd/argocd /var/run/argocd/argocd-cmp-server"]
        volumeMounts:
        - {name: var-files, mountPath: /var/run/argocd}
      volumes:
      - {name: ssh-known-hosts, configMap: {name: argocd-ssh-known-hosts-cm}}
      - {name: tmp, emptyDir: {}}
      - {name: var-files, emptyDir: {}}
      - {name: plugins, emptyDir: {}}
"""


# ---------------------------------------------------------------------------- helpers

def kubectl(*args):
    if shutil.which(KUBECTL) is None:
        pytest.fail("%s not found: these tests render with `kubectl kustomize`" % KUBECTL)
    r = subprocess.run([KUBECTL] + list(args), capture_output=True, text=True)
    assert r.returncode == 0, "kubectl %s failed:\n%s" % (" ".join(args), r.stderr)
    return r.stdout


def kustomize(path):
    return [d for d in yaml.safe_load_all(kubectl("kustomize", path)) if d]


def key(obj):
    m = obj["metadata"]
    return (obj["kind"], m.get("namespace"), m["name"])


def one(docs, kind, name):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, "expected one %s/%s, found %d" % (kind, name, len(found))
    return found[0]


def pod_spec(docs):
    return one(docs, "Deployment", "argocd-repo-server")["spec"]["template"]["spec"]


def sidecar(docs):
    containers = [c for c in pod_spec(docs)["containers"] if c["name"] == "krmpod"]
    assert len(containers) == 1, "expected one container named krmpod"
    return containers[0]


def selects(selector, labels):
    """Whether a LabelSelector (matchLabels only, as ours are) selects these labels."""
    assert set(selector) <= {"matchLabels"}, "selector uses more than matchLabels: %r" % selector
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


_UNITS = {"m": 1e-3, "": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
          "k": 1e3, "M": 1e6, "G": 1e9}


def quantity(q):
    m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", str(q))
    assert m and m.group(2) in _UNITS, "unparsable quantity %r" % q
    return float(m.group(1)) * _UNITS[m.group(2)]


@pytest.fixture(scope="module")
def rendered():
    return kustomize(MANIFESTS)


@pytest.fixture(scope="module")
def helm_values():
    with open(HELM_VALUES) as f:
        values = yaml.safe_load(f)
    assert isinstance(values, dict), "docs/helm-values.yaml is not a YAML mapping"
    return values


def write_overlay(tmp_path, kustomization, files=None):
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return str(tmp_path)


def rel(path, start):
    # kustomize refuses absolute paths to other kustomizations
    return os.path.relpath(path, str(start))


# ---------------------------------------------------------------------------- objects and RBAC

def test_renders_exactly_the_expected_objects(rendered):
    assert {key(d) for d in rendered} == EXPECTED_OBJECTS
    assert len(rendered) == len(EXPECTED_OBJECTS), "an object is rendered twice"


def test_no_cluster_wide_rights(rendered):
    cluster_wide = [key(d) for d in rendered if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    assert cluster_wide == []


def test_role_rules_are_exactly_the_expected_ones(rendered):
    role = one(rendered, "Role", "krmpod")
    assert role["metadata"]["namespace"] == FUNCTIONS_NS
    assert role["rules"] == EXPECTED_RULES


def test_role_is_bound_to_the_repo_server_service_account_only(rendered):
    binding = one(rendered, "RoleBinding", "krmpod")
    assert binding["metadata"]["namespace"] == FUNCTIONS_NS
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": "krmpod"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "argocd-repo-server",
                                    "namespace": ARGOCD_NS}]


def test_functions_namespace_enforces_restricted_pod_security(rendered):
    labels = one(rendered, "Namespace", FUNCTIONS_NS)["metadata"].get("labels", {})
    pss = {k: v for k, v in labels.items() if k.startswith("pod-security.kubernetes.io/")}
    assert pss == EXPECTED_PSS_LABELS


# ---------------------------------------------------------------------------- the sidecar

def test_sidecar_image_and_command(rendered):
    c = sidecar(rendered)
    assert c["image"].startswith(IMAGE + ":") or c["image"].startswith(IMAGE + "@sha256:")
    assert c["command"] == ["/var/run/argocd/argocd-cmp-server"]


def test_sidecar_security_context(rendered):
    assert sidecar(rendered)["securityContext"] == EXPECTED_SECURITY_CONTEXT


def test_sidecar_mounts(rendered):
    assert sidecar(rendered)["volumeMounts"] == EXPECTED_MOUNTS


def test_sidecar_env_comes_from_the_downward_api_and_settings(rendered):
    assert sidecar(rendered)["env"] == EXPECTED_ENV
    assert "envFrom" not in sidecar(rendered)


def test_sidecar_has_cpu_and_memory_requests_and_limits(rendered):
    res = sidecar(rendered)["resources"]
    for kind in ("requests", "limits"):
        assert set(res.get(kind, {})) == {"cpu", "memory"}, "sidecar resources.%s" % kind
    for r in ("cpu", "memory"):
        assert quantity(res["requests"][r]) <= quantity(res["limits"][r])


def test_token_volume_is_a_projected_bound_token(rendered):
    vols = {v["name"]: v for v in pod_spec(rendered)["volumes"]}
    assert vols["krmpod-token"] == {"name": "krmpod-token",
                                    "projected": {"sources": EXPECTED_TOKEN_SOURCES}}
    assert vols["krmpod-tmp"] == {"name": "krmpod-tmp", "emptyDir": {"sizeLimit": "2Gi"}}


def test_pod_keeps_automount_service_account_token_false(rendered):
    assert pod_spec(rendered)["automountServiceAccountToken"] is False


def test_partial_deployment_names_only_krmpod_fields(rendered):
    # Server-side apply makes field manager `krmpod` the owner of every field named here:
    # anything beyond the sidecar would be taken over from Argo CD (or conflict with it).
    d = one(rendered, "Deployment", "argocd-repo-server")
    assert set(d) == {"apiVersion", "kind", "metadata", "spec"}
    assert d["metadata"] == {"name": "argocd-repo-server", "namespace": ARGOCD_NS}
    assert set(d["spec"]) == {"template"}
    assert d["spec"]["template"]["metadata"] == {
        "annotations": {"kubectl.kubernetes.io/default-container": "argocd-repo-server"}}
    spec = d["spec"]["template"]["spec"]
    assert set(spec) == {"automountServiceAccountToken", "containers", "volumes"}
    assert [c["name"] for c in spec["containers"]] == ["krmpod"]
    assert [v["name"] for v in spec["volumes"]] == ["krmpod-tmp", "krmpod-token",
                                                     "krmpod-catalogs", "krmpod-signature-policy"]


DIGEST = "sha256:" + "0123456789abcdef" * 4


def helper_image(docs):
    [value] = [e["value"] for e in sidecar(docs)["env"] if e["name"] == "KRMPOD_HELPER_IMAGE"]
    # the admission policy admits that very image as the helper (functions/admission.yaml,
    # when the render holds it: the repo-server Component alone does not)
    for params in [d for d in docs if d["kind"] == "ConfigMap"
                   and d["metadata"]["name"] == "krmpod-admission"]:
        assert params["data"]["helperImage"] == value
    return value


def test_image_pin_by_digest_in_an_overlay_takes_effect(tmp_path):
    path = write_overlay(tmp_path, {"resources": [rel(MANIFESTS, tmp_path)],
                                    "images": [{"name": IMAGE, "digest": DIGEST}]})
    docs = kustomize(path)
    assert sidecar(docs)["image"] == IMAGE + "@" + DIGEST
    # the mounts helper is the same image: the pin reaches KRMPOD_HELPER_IMAGE too
    assert helper_image(docs) == IMAGE + "@" + DIGEST


def test_image_pin_by_tag_in_an_overlay_reaches_the_helper_image(tmp_path):
    path = write_overlay(tmp_path, {"resources": [rel(MANIFESTS, tmp_path)],
                                    "images": [{"name": IMAGE, "newTag": "v1.2.3"}]})
    docs = kustomize(path)
    assert sidecar(docs)["image"] == IMAGE + ":v1.2.3"
    assert helper_image(docs) == IMAGE + ":v1.2.3"
    # nothing else is taken for an image
    assert [e for e in sidecar(docs)["env"] if e["name"] != "KRMPOD_HELPER_IMAGE"] == \
        [e for e in EXPECTED_ENV if e["name"] != "KRMPOD_HELPER_IMAGE"]


def test_image_pin_by_digest_in_manifests_kustomization_takes_effect(tmp_path):
    # docs/install.md: "replace newTag: latest in manifests/kustomization.yaml with digest"
    copy = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, str(copy))
    k = yaml.safe_load((copy / "kustomization.yaml").read_text())
    [entry] = k["images"]
    assert entry.pop("newTag") == RELEASE_TAG
    entry["digest"] = DIGEST
    (copy / "kustomization.yaml").write_text(yaml.safe_dump(k))
    docs = kustomize(str(copy))
    assert sidecar(docs)["image"] == IMAGE + "@" + DIGEST
    assert helper_image(docs) == IMAGE + "@" + DIGEST


# ---------------------------------------------------------------------------- merged into Argo CD

@pytest.fixture
def merged(tmp_path):
    """The Component applied to an upstream-like repo-server, in a kustomization that sets
    `namespace: argocd` the way Argo CD's kustomize install does."""
    path = write_overlay(tmp_path, {
        "namespace": ARGOCD_NS,
        "resources": ["upstream.yaml"],
        "components": [rel(os.path.join(MANIFESTS, "repo-server"), tmp_path)],
    }, {"upstream.yaml": UPSTREAM_REPO_SERVER})
    docs = kustomize(path)
    assert sorted(key(d) for d in docs) == [("ConfigMap", ARGOCD_NS, "krmpod-catalogs"),
                                            ("ConfigMap", ARGOCD_NS, "krmpod-signature-policy"),
                                            ("Deployment", ARGOCD_NS, "argocd-repo-server")]
    return docs


def test_component_adds_the_sidecar_and_keeps_argocd(merged):
    upstream = yaml.safe_load(UPSTREAM_REPO_SERVER)["spec"]["template"]["spec"]
    spec = pod_spec(merged)
    assert sorted(c["name"] for c in spec["containers"]) == ["argocd-repo-server", "krmpod"]
    main = [c for c in spec["containers"] if c["name"] == "argocd-repo-server"][0]
    assert main == upstream["containers"][0]
    assert spec["initContainers"] == upstream["initContainers"]
    assert sidecar(merged)["securityContext"] == EXPECTED_SECURITY_CONTEXT
    assert spec["automountServiceAccountToken"] is False
    names = [v["name"] for v in spec["volumes"]]
    assert sorted(names) == sorted([v["name"] for v in upstream["volumes"]] +
                                   ["krmpod-tmp", "krmpod-token", "krmpod-catalogs",
                                    "krmpod-signature-policy"])


def test_component_image_pin_reaches_the_helper_image(tmp_path):
    path = write_overlay(tmp_path, {
        "namespace": ARGOCD_NS,
        "resources": ["upstream.yaml"],
        "components": [rel(os.path.join(MANIFESTS, "repo-server"), tmp_path)],
        "images": [{"name": IMAGE, "digest": DIGEST}],
    }, {"upstream.yaml": UPSTREAM_REPO_SERVER})
    docs = kustomize(path)
    assert sidecar(docs)["image"] == IMAGE + "@" + DIGEST
    assert helper_image(docs) == IMAGE + "@" + DIGEST


def test_token_is_mounted_in_the_sidecar_only(merged):
    spec = pod_spec(merged)
    holders = []
    for c in spec["containers"] + spec.get("initContainers", []):
        for m in c.get("volumeMounts", []):
            if m["name"] == "krmpod-token" or m["mountPath"].startswith(SA_DIR):
                holders.append((c["name"], m["name"], m["mountPath"], m.get("readOnly")))
    assert holders == [("krmpod", "krmpod-token", SA_DIR, True)]


def test_every_mount_names_a_volume_of_the_pod(merged):
    spec = pod_spec(merged)
    volumes = {v["name"] for v in spec["volumes"]}
    missing = [(c["name"], m["name"]) for c in spec["containers"] + spec["initContainers"]
               for m in c.get("volumeMounts", []) if m["name"] not in volumes]
    assert missing == []


def test_uninstall_configuration_names_no_fields():
    docs = kustomize(os.path.join(MANIFESTS, "uninstall"))
    assert docs == [{"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": "argocd-repo-server", "namespace": ARGOCD_NS}}]


# A repo-server as `kubectl get --show-managed-fields` shows it, by how it was installed.
def _managed(*entries):
    obj = yaml.safe_load(UPSTREAM_REPO_SERVER)
    obj["metadata"]["namespace"] = ARGOCD_NS
    obj["metadata"]["managedFields"] = [
        {"apiVersion": "apps/v1", "fieldsType": "FieldsV1", "manager": m, "operation": op,
         "fieldsV1": fields} for m, op, fields in entries]
    return obj


_LAST_APPLIED = {"f:metadata": {"f:annotations": {
    ".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}}}
_SPEC = {"f:spec": {"f:template": {}}}
_STATUS = ("kube-controller-manager", "Update", {"f:status": {}})


@pytest.mark.parametrize("entries,expected", [
    # Argo CD 2.x docs: `kubectl apply -f install.yaml` (client-side)
    ([("kubectl-client-side-apply", "Update", dict(_SPEC, **_LAST_APPLIED)), _STATUS],
     ["kubectl-client-side-apply"]),
    # Argo CD managing itself with client-side sync
    ([("argocd-controller", "Update", dict(_SPEC, **_LAST_APPLIED)), _STATUS],
     ["argocd-controller"]),
    # Argo CD 3.x docs: `kubectl apply --server-side`, or after migrating to it
    ([("kubectl", "Apply", _SPEC), ("kubectl-last-applied", "Apply", _LAST_APPLIED), _STATUS], []),
    # Helm
    ([("helm", "Update", _SPEC), _STATUS], []),
])
def test_preflight_template_finds_client_side_apply_owners(tmp_path, entries, expected):
    f = tmp_path / "deploy.yaml"
    f.write_text(yaml.safe_dump(_managed(*entries)))
    # `kubectl label --local` prints the object without a cluster, as `kubectl get` would
    out = kubectl("label", "--local", "-f", str(f), "krmpod-preflight=1", "--show-managed-fields",
                  "-o", "go-template-file=" + os.path.join(MANIFESTS, "check-client-side-apply.gotmpl"))
    assert out.split() == expected


# ---------------------------------------------------------------------------- network and limits

def test_deny_all_policy_closes_every_pod_in_both_directions(rendered):
    p = one(rendered, "NetworkPolicy", "krmpod-deny-all")
    assert p["metadata"]["namespace"] == FUNCTIONS_NS
    assert p["spec"]["podSelector"] == {}
    assert sorted(p["spec"]["policyTypes"]) == ["Egress", "Ingress"]
    assert "ingress" not in p["spec"] and "egress" not in p["spec"], "deny-all must allow nothing"
    for network in ("none", "granted"):
        fn = {"app.kubernetes.io/managed-by": "krmpod", "krmpod.dev/function": "true",
              "krmpod.dev/network": network}
        assert selects(p["spec"]["podSelector"], fn)


def test_granted_policy_opens_egress_only_for_granted_functions(rendered):
    p = one(rendered, "NetworkPolicy", "krmpod-network-granted")
    spec = p["spec"]
    assert p["metadata"]["namespace"] == FUNCTIONS_NS
    assert spec["podSelector"] == {"matchLabels": {"krmpod.dev/function": "true",
                                                   "krmpod.dev/network": "granted"}}
    assert spec["policyTypes"] == ["Egress"]
    assert "ingress" not in spec
    base = {"app.kubernetes.io/managed-by": "krmpod", "krmpod.dev/function": "true"}
    assert selects(spec["podSelector"], dict(base, **{"krmpod.dev/network": "granted"}))
    assert not selects(spec["podSelector"], dict(base, **{"krmpod.dev/network": "none"}))

    # DNS: port 53 to the cluster's DNS pods only, never to port 53 anywhere (a rule with
    # ports and no `to` would open port 53 on every address, in the cluster and beyond)
    assert all("to" in r for r in spec["egress"]), "a rule without `to` opens every address"
    dns = [r for r in spec["egress"] if r.get("ports")]
    assert [sorted((x["protocol"], x["port"]) for x in r["ports"]) for r in dns] == \
        [[("TCP", 53), ("UDP", 53)]]
    assert dns[0]["to"] == [{
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}], dns[0]
    public = [r for r in spec["egress"] if not r.get("ports")]
    assert len(public) == 1 and all(set(t) == {"ipBlock"} for t in public[0]["to"]), public
    blocks = [t["ipBlock"] for t in public[0]["to"]]
    v4 = [b for b in blocks if b["cidr"] == "0.0.0.0/0"]
    assert len(v4) == 1 and "169.254.0.0/16" in v4[0]["except"], "metadata endpoint must stay closed"
    assert {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"} <= set(v4[0]["except"]), v4


def test_quota_and_limit_range_bound_function_pods(rendered):
    hard = one(rendered, "ResourceQuota", "krmpod")["spec"]["hard"]
    assert set(hard) >= {"pods", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
    pods = int(hard["pods"])
    assert 0 < pods
    # the pod count is not a lie: that many functions with krmpod's defaults fit the quota,
    # in exec mode too, where the installer container runs beside the function's (its
    # resources as src/pod/pod_container.c defines them)
    agent = exec_agent_resources()
    for kind in ("requests", "limits"):
        for r in ("cpu", "memory"):
            per_pod = quantity(FUNCTION_DEFAULTS[kind][r]) + quantity(agent[kind][r])
            assert pods * per_pod <= quantity(hard["%s.%s" % (kind, r)]), \
                "%d default functions in exec mode exceed %s.%s" % (pods, kind, r)

    [limits] = one(rendered, "LimitRange", "krmpod")["spec"]["limits"]
    assert limits["type"] == "Container"
    for r in ("cpu", "memory"):
        assert quantity(limits["defaultRequest"][r]) <= quantity(limits["default"][r]) \
            <= quantity(limits["max"][r])
        assert quantity(FUNCTION_DEFAULTS["limits"][r]) <= quantity(limits["max"][r]), \
            "krmpod's default %s limit is above the LimitRange max" % r


# ---------------------------------------------------------------------------- Helm values

def test_helm_values_sidecar_is_the_manifests_sidecar(rendered, helm_values):
    rs = helm_values["repoServer"]
    assert [c["name"] for c in rs["extraContainers"]] == ["krmpod"]
    assert rs["extraContainers"][0]["securityContext"] == EXPECTED_SECURITY_CONTEXT
    assert rs["extraContainers"] == [sidecar(rendered)]
    assert rs["volumes"] == pod_spec(rendered)["volumes"]
    assert rs["serviceAccount"]["automountServiceAccountToken"] is False


def test_helm_values_objects_are_the_manifests_objects(rendered, helm_values):
    extra = helm_values["extraObjects"]
    assert one(extra, "Role", "krmpod")["rules"] == one(rendered, "Role", "krmpod")["rules"]
    expected = [d for d in rendered if d["kind"] != "Deployment"]
    assert sorted(map(key, extra)) == sorted(map(key, expected))
    for obj in expected:
        assert one(extra, obj["kind"], obj["metadata"]["name"]) == obj, "%s/%s differs" % key(obj)[::2]


# ---------------------------------------------------------------------------- docs

def test_documented_install_commands_use_server_side_apply_as_krmpod():
    with open(INSTALL_DOC) as f:
        text = f.read()
    code = "\n".join(re.findall(r"```[a-z]*\n(.*?)```", text, re.S))
    applies = [l for l in code.splitlines()
               if "kubectl apply" in l and re.search(r"-k\s+\S*manifests", l)]
    assert applies, "docs/install.md shows no `kubectl apply ... -k manifests...` command"
    bad = [l for l in applies if "--server-side" not in l or "--field-manager=krmpod" not in l]
    assert bad == []


# ---------------------------------------------------------------------------- catalogs

def test_shipped_catalog_is_valid_and_named_by_the_sidecar(rendered, tmp_path):
    """The admin's catalog the manifests ship (docs/catalogs.md) passes krmpod's own
    validation, and the sidecar's KRMPOD_DEFAULT_CATALOGS names the file its ConfigMap
    mount holds."""
    cm = one(rendered, "ConfigMap", "krmpod-catalogs")
    mount = [m for m in sidecar(rendered)["volumeMounts"] if m["name"] == "krmpod-catalogs"][0]
    env = {e["name"]: e.get("value") for e in sidecar(rendered)["env"]}
    assert env["KRMPOD_DEFAULT_CATALOGS"] == mount["mountPath"] + "/catalog.yaml"
    volume = [v for v in pod_spec(rendered)["volumes"] if v["name"] == "krmpod-catalogs"][0]
    assert volume["configMap"]["name"] == cm["metadata"]["name"]
    path = tmp_path / "catalog.yaml"
    path.write_text(cm["data"]["catalog.yaml"])
    krmpod = os.path.join(ROOT, "build", "krmpod")
    r = subprocess.run([krmpod, "catalog", "validate", str(path)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr.decode()
    assert b"catalog krmpod-admin-catalog (Catalog), sha256:" in r.stdout, r.stdout


def test_shipped_signature_policy_is_valid_and_named_by_the_sidecar(rendered, tmp_path):
    """The signature policy the manifests ship (docs/signatures.md) is read by krmpod as
    requiring nothing, and KRMPOD_SIGNATURE_POLICY names the file its ConfigMap mount holds;
    the volume is optional, and a missing file fails a render, naming it."""
    cm = one(rendered, "ConfigMap", "krmpod-signature-policy")
    mount = [m for m in sidecar(rendered)["volumeMounts"]
             if m["name"] == "krmpod-signature-policy"][0]
    env = {e["name"]: e.get("value") for e in sidecar(rendered)["env"]}
    assert env["KRMPOD_SIGNATURE_POLICY"] == mount["mountPath"] + "/policy.yaml"
    volume = [v for v in pod_spec(rendered)["volumes"] if v["name"] == "krmpod-signature-policy"][0]
    assert volume["configMap"] == {"name": cm["metadata"]["name"], "optional": True}
    path = tmp_path / "policy.yaml"
    path.write_text(cm["data"]["policy.yaml"])
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text("resources: []\n")
    krmpod = os.path.join(ROOT, "build", "krmpod")
    base = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    r = subprocess.run([krmpod, "catalog", "view", str(app)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=dict(base, KRMPOD_SIGNATURE_POLICY=str(path)))
    assert r.returncode == 0, r.stderr.decode()
    assert ("signature policy: %s\n" % path).encode() in r.stdout, r.stdout
    assert b"requirements[" not in r.stdout and b"CANNOT" not in r.stdout, r.stdout
    missing = str(tmp_path / "gone" / "policy.yaml")
    r = subprocess.run([krmpod, "catalog", "view", str(app)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=dict(base, KRMPOD_SIGNATURE_POLICY=missing))
    assert ("signature policy: %s: CANNOT BE READ" % missing).encode() in r.stdout, r.stdout
