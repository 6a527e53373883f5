"""The two clusters the conformance cases run against, behind one interface: an admin
client, clients for the `readonly` and `none` roles (and a bad token), a fresh namespace, and
the set-ups that differ between a real cluster and kubesim (a full ResourceQuota, an OOM)."""
import os
import secrets
import time

import cases
from kclient import Client

# kubesim's read-only role (tests/kubesim/kubesim_lib/server.py RULES), as an RBAC Role.
READONLY_RULES = [
    {"apiGroups": [""], "resources": ["pods", "podtemplates"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
     "verbs": ["get", "list"]},
]
TEMPLATE = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "krmpod"},
            "template": {"metadata": {"labels": {"team": "a"}},
                         "spec": {"containers": [{"name": "fn", "image": "placeholder"}]}}}
NETPOL = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
          "metadata": {"name": "krmpod-deny-all"},
          "spec": {"podSelector": {"matchLabels": {"krmpod.dev/function": "true"}},
                   "policyTypes": ["Ingress", "Egress"]}}


def _ok(a, what):
    if a.code >= 300:
        raise RuntimeError("%s: %d %s" % (what, a.code, a.body[:500]))
    return a.json


class Target:
    kind = None
    node = None

    def __init__(self, admin):
        self.admin = admin
        self.ns = "conformance-" + secrets.token_hex(3)
        self.tokens = {}

    def client(self, role):
        if role == "admin":
            return self.admin
        if role == "bad":
            return self.admin.with_token("not-a-valid-token")
        return self.admin.with_token(self.tokens[role])

    def names(self):
        """Literal strings the normaliser replaces."""
        return {self.ns: "<ns>", self.node: "<node>"}

    def _objects(self):
        _ok(self.admin.request("POST", "/api/v1/namespaces/%s/podtemplates" % self.ns,
                               TEMPLATE), "create the PodTemplate")
        _ok(self.admin.request("POST", "/apis/networking.k8s.io/v1/namespaces/%s/"
                               "networkpolicies" % self.ns, NETPOL), "create the NetworkPolicy")


class RealTarget(Target):
    """A real cluster (realkube): admin by client certificate; the roles are ServiceAccounts
    of the test namespace named like kubesim's users: `readonly` with a Role like kubesim's
    read-only one, and `norights` with none at all."""
    kind = "realkube"

    def __init__(self, server, ca, cert, key, node):
        super().__init__(Client(server, ca, cert, key))
        self.node = node

    def setup(self):
        a = self.admin
        _ok(a.request("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}}),
            "create namespace")
        for _ in range(100):  # the controller-manager adds the default ServiceAccount
            if a.request("GET", "/api/v1/namespaces/%s/serviceaccounts/default"
                         % self.ns).code == 200:
                break
            time.sleep(0.1)
        base = "/api/v1/namespaces/%s/" % self.ns
        rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/" % self.ns
        _ok(a.request("POST", rbac + "roles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "readonly"}, "rules": READONLY_RULES}), "create Role")
        for role, sa in (("readonly", "readonly"), ("none", "norights")):
            _ok(a.request("POST", base + "serviceaccounts", {
                "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}}),
                "create ServiceAccount " + sa)
            tr = _ok(a.request("POST", base + "serviceaccounts/%s/token" % sa, {
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600}}), "token for " + sa)
            self.tokens[role] = tr["status"]["token"]
        _ok(a.request("POST", rbac + "rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "readonly"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                        "name": "readonly"},
            "subjects": [{"kind": "ServiceAccount", "name": "readonly",
                          "namespace": self.ns}]}), "create RoleBinding")
        self._objects()

    def quota(self, full):
        path = "/api/v1/namespaces/%s/resourcequotas" % self.ns
        if not full:
            self.admin.request("DELETE", path + "/krmpod")
            return
        _ok(self.admin.request("POST", path, {
            "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "krmpod"},
            "spec": {"hard": {"pods": "0"}}}), "create ResourceQuota")
        for _ in range(100):  # admission needs the controller's status first
            q = self.admin.request("GET", path + "/krmpod").json
            if (q.get("status") or {}).get("hard"):
                return
            time.sleep(0.1)
        raise RuntimeError("the ResourceQuota never got a status")

    def oom(self, on):
        pass  # the real kernel does it

    def cleanup(self):
        self.admin.request("DELETE", "/api/v1/namespaces/" + self.ns,
                           {"kind": "DeleteOptions", "apiVersion": "v1",
                            "propagationPolicy": "Background"})


class KubesimTarget(Target):
    """kubesim (tests/kubesim): admin, readonly and none are its three tokens; every
    namespace exists; the quota and the OOM are faults."""
    kind = "kubesim"
    node = "kubesim-node"

    def __init__(self, sim):
        super().__init__(Client(sim.url, os.path.join(sim.state, "ca.crt"), token=sim.token))
        self.sim = sim
        self.tokens = {"readonly": sim.read("token-readonly"), "none": sim.read("token-none")}

    def setup(self):
        self._objects()

    def quota(self, full):
        self.sim.faults(**({"quota_exceeded_count": 1} if full else {}))

    def oom(self, on):
        self.sim.faults(**({"oom_images": [cases.OOM_IMAGE]} if on else {}))

    def cleanup(self):
        pass
