"""The HTTPS API server: REST for pods and pod templates (NetworkPolicies and Secrets stored
only), watch, logs, attach/exec over WebSocket, discovery and OpenAPI v3 for kubectl, RBAC
for the test tokens, access reviews, the /kubesim control API, and fault injection."""
import copy
import datetime
import email.utils
import http.server
import json
import os
import uuid
import re
import socket
import socketserver
import ssl
import threading
import time
from urllib.parse import parse_qs, urlparse

import yaml

from . import openapi, patch, proto, schema
from .cluster import CLOCK, status
from .ws import Closed, WebSocket, accept_key

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
V5_SINCE = (1, 30)  # the first Kubernetes that speaks v5.channel.k8s.io
# How long before a watch's timeoutSeconds the API server sends a BOOKMARK (its watch cache
# aims at 2 s before the deadline; when asked with allowWatchBookmarks=true).
BOOKMARK_BEFORE_END_S = 2.0
TABLE_CTYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"

# Users: the client certificate is the admin (system:masters); tokens map to these roles.
USERS = {
    "admin": "system:serviceaccount:default:admin",
    "readonly": "system:serviceaccount:default:readonly",
    "none": "system:serviceaccount:default:norights",
    "krmpod": "system:serviceaccount:default:krmpod",
}
READ = {"get", "list", "watch"}


def shipped_role():
    """The rules of the Role the manifests ship (manifests/functions/rbac.yaml), read from
    the file: the rights the repo-server's token has on a real install."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "manifests", "functions",
                        "rbac.yaml")
    with open(path) as f:
        role = next(d for d in yaml.safe_load_all(f) if d and d.get("kind") == "Role")
    out = {}
    for rule in role["rules"]:
        for res in rule["resources"]:
            name, _, sub = res.partition("/")
            out.setdefault((name, sub), set()).update(rule["verbs"])
    return out


RULES = {  # role -> {(resource, subresource): verbs}; None = everything
    "admin": None,
    "readonly": {("pods", ""): READ, ("pods", "log"): {"get"}, ("podtemplates", ""): READ,
                 ("namespaces", ""): READ, ("networkpolicies", ""): {"get", "list"}},
    "none": {},
    "krmpod": shipped_role(),
}


def allowed(role, verb, resource, sub=""):
    rules = RULES.get(role, {})
    return rules is None or verb in rules.get((resource, sub or ""), set())


SUCCESS = json.dumps({"metadata": {}, "status": "Success"}).encode()


class OutputStream:
    """The output side of an attach or exec stream, with two faults: after `cut` bytes of
    output (None: never) it ends cleanly, channel-3 Success and close, while the process goes
    on; after `drop_at` bytes (None: never), or at the end before that, the TCP connection
    drops, with no Status and no close frame. Thread-safe; `ended` once the stream is
    closed."""

    def __init__(self, ws, cut, drop_at=None):
        self.ws, self.cut, self.drop_at, self.sent, self.ended = ws, cut, drop_at, 0, False
        self.lock = threading.Lock()

    def send(self, ch, data):
        with self.lock:
            if self.ended:
                return
            for limit, drop in ((self.drop_at, True), (self.cut, False)):
                if limit is not None and self.sent + len(data) >= limit:
                    data = data[:max(0, limit - self.sent)]
                    if data:
                        self.ws.send_binary(bytes([ch]) + data)
                    self.sent += len(data)
                    self._end(None if drop else b"\x03" + SUCCESS)
                    return
            self.sent += len(data)
            self.ws.send_binary(bytes([ch]) + data)

    def end(self, status_json=SUCCESS):
        """The channel-3 status and close (the drop, under drop_at), unless the stream ended
        already."""
        with self.lock:
            if not self.ended:
                self._end(None if self.drop_at is not None else b"\x03" + status_json)

    def _end(self, msg):
        self.ended = True
        if msg is None:
            self.ws.drop()
            return
        try:
            self.ws.send_binary(msg)
        finally:
            self.ws.close()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, cluster, faults, tokens, ctx, reqlog, version=(1, 34),
                 path_prefix=""):
        self.cluster, self.faults, self.tokens = cluster, faults, tokens
        # The API under a path ("/k8s"), as behind a proxy at https://host/k8s/; the
        # control API (/kubesim/) stays at the root.
        self.path_prefix = path_prefix
        self.ctx, self.reqlog = ctx, reqlog
        self.version = version  # (major, minor) that /version answers and streams follow
        self.protocols = tuple(p for p in PROTOCOLS
                               if p != "v5.channel.k8s.io" or version >= V5_SINCE)
        self.loglock = threading.Lock()
        super().__init__(addr, Handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        # Responses go out in several small writes (headers, body, chunks): without
        # TCP_NODELAY, Nagle's algorithm and the client's delayed ACK add ~40 ms to each.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def log_line(self, method, path, code):
        with self.loglock:
            self.reqlog.write("%s %s %s %s\n" % (
                datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3], method, path, code))
            self.reqlog.flush()

    def handle_error(self, request, client_address):
        pass  # client disconnects are normal here


def version_info(v):
    """GET /version for Kubernetes v = (major, minor)."""
    major, minor = v
    info = {"major": str(major), "minor": str(minor),
            "gitVersion": "v%d.%d.0-kubesim" % (major, minor), "gitCommit": "kubesim",
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"}
    if v >= (1, 33):  # compatibility versions (KEP 4330) are in /version since 1.33
        info.update({"emulationMajor": str(major), "emulationMinor": str(minor),
                     "minCompatibilityMajor": str(major),
                     "minCompatibilityMinor": str(minor - 1)})
    return info


def label_matcher(selector):
    """labelSelector: a=b, a!=b, a in (x,y), a notin (x), a, !a."""
    if not selector:
        return lambda labels: True
    reqs = []
    for part in re.findall(r"[^,(]+(?:\([^)]*\))?", selector):
        part = part.strip()
        m = re.match(r"^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$", part)
        if m:
            vals = {v.strip() for v in m.group(3).split(",")}
            reqs.append((m.group(1), m.group(2), vals))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            reqs.append((k.strip(), "!=", v.strip()))
        elif "==" in part or "=" in part:
            k, v = re.split("==?", part, maxsplit=1)
            reqs.append((k.strip(), "=", v.strip()))
        elif part.startswith("!"):
            reqs.append((part[1:], "!", None))
        else:
            reqs.append((part, "exists", None))

    def match(labels):
        for k, op, v in reqs:
            have = labels.get(k)
            if op == "=" and have != v or op == "!=" and have == v:
                return False
            if op == "in" and have not in v or op == "notin" and have in v:
                return False
            if op == "exists" and k not in labels or op == "!" and k in labels:
                return False
        return True
    return match


def field_matcher(selector):
    if not selector:
        return lambda obj: True
    reqs = []
    for part in selector.split(","):
        neg = "!=" in part
        k, v = re.split("!=|==|=", part, maxsplit=1)
        reqs.append((k.strip(), v.strip(), neg))

    def get(obj, path):
        for p in path.split("."):
            obj = obj.get(p, {}) if isinstance(obj, dict) else {}
        return obj if isinstance(obj, str) else ""

    return lambda obj: all((get(obj, k) == v) != neg for k, v, neg in reqs)


def pod_status_text(p):
    """The STATUS column, as the API server's pod printer computes it."""
    st = p.get("status", {})
    spec = p.get("spec", {})
    reason = st.get("reason") or st.get("phase") or "Pending"
    inits = spec.get("initContainers") or []
    initializing = False
    for i, cs in enumerate(st.get("initContainerStatuses") or []):
        s = cs.get("state", {})
        t, w = s.get("terminated"), s.get("waiting")
        if t is not None and t.get("exitCode") == 0:
            continue
        if t is not None:
            if t.get("reason"):
                reason = "Init:" + t["reason"]
            elif t.get("signal"):
                reason = "Init:Signal:%d" % t["signal"]
            else:
                reason = "Init:ExitCode:%d" % t.get("exitCode", 0)
        elif w is not None and w.get("reason") and w["reason"] != "PodInitializing":
            reason = "Init:" + w["reason"]
        else:
            reason = "Init:%d/%d" % (i, len(inits))
        initializing = True
        break
    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True"
                      for c in st.get("conditions") or [])
    if not initializing or initialized:
        has_running = False
        for cs in reversed(st.get("containerStatuses") or []):
            s = cs.get("state", {})
            t, w = s.get("terminated"), s.get("waiting")
            if w is not None and w.get("reason"):
                reason = w["reason"]
            elif t is not None and t.get("reason"):
                reason = t["reason"]
            elif t is not None:
                reason = ("Signal:%d" % t["signal"]) if t.get("signal") else \
                    "ExitCode:%d" % t.get("exitCode", 0)
            elif cs.get("ready") and "running" in s:
                has_running = True
        if reason == "Completed" and has_running:
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in st.get("conditions") or [])
            reason = "Running" if ready else "NotReady"
    if p["metadata"].get("deletionTimestamp") and st.get("phase") not in ("Succeeded",
                                                                            "Failed"):
        reason = "Terminating"
    return reason


def age(obj):
    ts = obj["metadata"].get("creationTimestamp")
    try:
        t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc)
        s = int((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds())
    except (TypeError, ValueError):
        return "<unknown>"
    if s < 120:
        return "%ds" % s
    return "%dm%ds" % (s // 60, s % 60) if s < 600 else "%dm" % (s // 60)


def _table(cols, rows, rv):
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv},
            "columnDefinitions": [{"name": n, "type": t, "format": f, "description": d,
                                   "priority": pr} for n, t, f, pr, d in cols],
            "rows": rows}


def _row(obj, cells):
    md = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {"cells": cells, "object": {"kind": "PartialObjectMetadata",
                                       "apiVersion": "meta.k8s.io/v1", "metadata": md}}


POD_COLUMNS = [
    ("Name", "string", "name", 0, "Name must be unique within a namespace."),
    ("Ready", "string", "", 0, "The aggregate readiness state of this pod for accepting "
                               "traffic."),
    ("Status", "string", "", 0, "The aggregate status of the containers in this pod."),
    ("Restarts", "string", "", 0, "The number of times the containers in this pod have been "
                                  "restarted and when the last container in this pod has "
                                  "restarted."),
    ("Age", "string", "", 0, "CreationTimestamp is a timestamp representing the server time "
                             "when this object was created."),
    ("IP", "string", "", 1, "IP address allocated to the pod. Routable at least within the "
                            "cluster. Empty if not yet allocated."),
    ("Node", "string", "", 1, "NodeName is a request to schedule this pod onto a specific "
                              "node."),
    ("Nominated Node", "string", "", 1, "nominatedNodeName is set when this pod preempts other "
                                        "pods on the node."),
    ("Readiness Gates", "string", "", 1, "If specified, all readiness gates will be evaluated "
                                         "for pod readiness."),
]
TEMPLATE_COLUMNS = [
    ("Name", "string", "name", 0, "Name must be unique within a namespace."),
    ("Containers", "string", "", 0, "Names of each container in the template."),
    ("Images", "string", "", 0, "Images referenced by each container in the template."),
    ("Pod Labels", "string", "", 0, "The labels for the pod template."),
]


def pod_table(pods, rv):
    rows = []
    for p in pods:
        st = p.get("status", {})
        css = st.get("containerStatuses", []) or []
        ready = sum(1 for c in css if c.get("ready") and "running" in c.get("state", {}))
        restarts = sum(c.get("restartCount", 0) for c in css)
        rows.append(_row(p, [p["metadata"]["name"],
                             "%d/%d" % (ready, len(p["spec"].get("containers") or [])),
                             pod_status_text(p), restarts, age(p),
                             st.get("podIP") or "<none>", p["spec"].get("nodeName") or "<none>",
                             st.get("nominatedNodeName") or "<none>", "<none>"]))
    return _table(POD_COLUMNS, rows, rv)


def template_table(items, rv):
    rows = []
    for t in items:
        tmpl = t.get("template") or {}
        cs = (tmpl.get("spec") or {}).get("containers") or []
        labels = (tmpl.get("metadata") or {}).get("labels") or {}
        rows.append(_row(t, [t["metadata"]["name"], ",".join(c.get("name", "") for c in cs),
                             ",".join(c.get("image", "") for c in cs),
                             ",".join("%s=%s" % (k, labels[k]) for k in sorted(labels))
                             or "<none>"]))
    return _table(TEMPLATE_COLUMNS, rows, rv)


EVENT_COLUMNS = [
    ("Last Seen", "string", "", 0, "Time of the event's last occurrence."),
    ("Type", "string", "", 0, "The event's type (Normal, Warning)."),
    ("Reason", "string", "", 0, "Why the event happened."),
    ("Object", "string", "", 0, "The object the event is about."),
    ("Message", "string", "", 0, "A human-readable description."),
]


def event_table(items, rv):
    rows = []
    for e in items:
        io = e.get("involvedObject") or {}
        rows.append(_row(e, [age(e), e.get("type", ""), e.get("reason", ""),
                             "%s/%s" % (io.get("kind", "").lower(), io.get("name", "")),
                             e.get("message", "")]))
    return _table(EVENT_COLUMNS, rows, rv)


# Objects kubesim stores and serves without behaviour (Handler.stored): resource ->
# (Kind, apiVersion, group, top-level fields, spec fields (None: not checked)).
STORED = {
    "networkpolicies": ("NetworkPolicy", "networking.k8s.io/v1", "networking.k8s.io",
                        ("apiVersion", "kind", "metadata", "spec"),
                        ("podSelector", "policyTypes", "ingress", "egress")),
    "secrets": ("Secret", "v1", "", ("apiVersion", "kind", "metadata", "type", "data",
                                     "stringData", "immutable"), None),
}


def secret_invalid(obj):
    """Defaults a Secret as the API server does (type Opaque, stringData into data) and checks
    what it checks of a kubernetes.io/dockerconfigjson: the reason it is invalid, or None."""
    import base64
    obj.setdefault("type", "Opaque")
    data = obj.setdefault("data", {})
    for k, v in (obj.pop("stringData", None) or {}).items():
        data[k] = base64.b64encode(v.encode()).decode()
    if obj["type"] != "kubernetes.io/dockerconfigjson":
        return None
    if ".dockerconfigjson" not in data:
        return "data[.dockerconfigjson]: Required value"
    try:
        json.loads(base64.b64decode(data[".dockerconfigjson"]))
    except ValueError as e:
        return "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": %s" % e
    return None


KINDS = {  # resource -> (Kind, list kind, table fn)
    "pods": ("Pod", "PodList", pod_table),
    "podtemplates": ("PodTemplate", "PodTemplateList", template_table),
    "events": ("Event", "EventList", event_table),
}

API_RESOURCES = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": [
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
         "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "watch"],
         "shortNames": ["po"], "categories": ["all"]},
        {"name": "pods/attach", "singularName": "", "namespaced": True, "kind": "PodAttachOptions",
         "verbs": ["create", "get"]},
        {"name": "pods/exec", "singularName": "", "namespaced": True, "kind": "PodExecOptions",
         "verbs": ["create", "get"]},
        {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod",
         "verbs": ["get"]},
        {"name": "podtemplates", "singularName": "podtemplate", "namespaced": True,
         "kind": "PodTemplate", "verbs": ["create", "delete", "deletecollection", "get", "list",
                                          "patch", "update", "watch"]},
        {"name": "namespaces", "singularName": "namespace", "namespaced": False,
         "kind": "Namespace", "verbs": ["get", "list"], "shortNames": ["ns"]},
        {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event",
         "verbs": ["list", "watch"], "shortNames": ["ev"]},
        {"name": "secrets", "singularName": "secret", "namespaced": True, "kind": "Secret",
         "verbs": ["create", "delete", "get", "list"]},
    ]}
GROUPS = {
    "networking.k8s.io": [{"name": "networkpolicies", "singularName": "networkpolicy",
                           "namespaced": True, "kind": "NetworkPolicy",
                           "verbs": ["create", "delete", "get", "list"],
                           "shortNames": ["netpol"]}],
    "authorization.k8s.io": [{"name": "selfsubjectaccessreviews", "singularName":
                              "selfsubjectaccessreview", "namespaced": False,
                              "kind": "SelfSubjectAccessReview", "verbs": ["create"]}],
    "authentication.k8s.io": [{"name": "selfsubjectreviews", "singularName": "selfsubjectreview",
                               "namespaced": False, "kind": "SelfSubjectReview",
                               "verbs": ["create"]}],
}


class Handler(http.server.BaseHTTPRequestHandler):
    def date_time_string(self, timestamp=None):
        """The Date header, by the API server's clock (cluster.CLOCK)."""
        return email.utils.formatdate((timestamp or time.time()) + CLOCK["offset"],
                                      usegmt=True)

    protocol_version = "HTTP/1.1"
    server_version = "kubesim"

    def log_message(self, fmt, *args):
        pass

    # --- responses ---------------------------------------------------------------------
    def send_json(self, code, obj, headers=None, ctype="application/json"):
        after = getattr(self, "error_after", None)
        if after and 200 <= code < 300:  # applied, but the answer is lost: an error instead
            self.error_after = None
            c = after["status"]
            reason = {500: "InternalError", 503: "ServiceUnavailable",
                      504: "Timeout"}.get(c, "InternalError")
            code, obj = c, status(c, reason, "injected fault: %d %s after the request was "
                                  "applied" % (c, reason))
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.logged = code
        self.log_before_body()
        self.wfile.write(body)

    def send_status(self, code, reason, message, details=None, headers=None):
        self.send_json(code, status(code, reason, message, details), headers)

    def send_err(self, st):
        self.send_json(st["code"], st)

    def not_found(self, resource, name):
        return self.send_status(404, "NotFound", "%s \"%s\" not found" % (resource, name),
                                {"name": name, "kind": resource})

    def send_text(self, code, text, headers=None):
        body = text.encode() if isinstance(text, str) else text
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.logged = code
        self.log_before_body()
        self.wfile.write(body)

    def start_chunked(self, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.logged = 200
        self.log_stream_start()

    def log_before_body(self):
        """A whole response is logged before its body goes out: a client that read it and
        exited finds its request in the log (logged after, a test reading the log at once
        could miss it under load)."""
        if not self.path.startswith("/kubesim/") and not self.logged_early:
            self.server.log_line(self.command, self.path, self.logged)
            self.logged_early = True

    def log_stream_start(self):
        """A stream (watch, log follow, attach/exec) is logged when it starts, so that the
        request log counts it in the run that made it, not whenever the client hangs up."""
        if not self.path.startswith("/kubesim/"):
            self.server.log_line(self.command, self.path, self.logged)
            self.logged_early = True

    def chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def parse_body(self, body, what):
        """Decodes a JSON or YAML request body into a dict; sends the error and returns None
        on failure."""
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype == "application/vnd.kubernetes.protobuf":
            try:
                obj = proto.decode(body)
            except (ValueError, IndexError, UnicodeDecodeError) as e:
                self.send_status(415, "UnsupportedMediaType", "%s" % e)
                return None
        elif ctype in ("application/yaml", "application/x-yaml", "text/yaml"):
            try:
                obj = yaml.safe_load(body.decode())
            except (yaml.YAMLError, UnicodeDecodeError) as e:
                self.send_status(400, "BadRequest", "error converting YAML to JSON: %s" % e)
                return None
        elif ctype == "application/json" or ctype.endswith("+json") or (not ctype and body):
            try:
                obj = json.loads(body)
            except ValueError as e:
                self.send_status(400, "BadRequest", "%s in version \"v1\" cannot be handled as "
                                 "a %s: %s" % (what, what, e))
                return None
        else:
            self.send_status(415, "UnsupportedMediaType", "the body of the request was in an "
                             "unknown format - accepted media types include: application/json,"
                             " application/yaml")
            return None
        if not isinstance(obj, dict):
            self.send_status(400, "BadRequest", "%s in version \"v1\" cannot be handled as a "
                             "%s: the body is not an object" % (what, what))
            return None
        return obj

    # --- auth ----------------------------------------------------------------------------
    def identity(self):
        """(role, username) or None; like kube-apiserver's union authenticator, a valid
        client certificate wins over a bearer token."""
        try:
            cert = self.connection.getpeercert()
        except (ValueError, OSError):
            cert = None
        if cert:
            return "admin", "kubesim-admin"
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            role = self.server.tokens.get(auth[7:].strip())
            if role:
                return role, USERS.get(role, role)
        return None

    def forbid(self, user, verb, resource, sub, ns, name, group=""):
        what = resource + ("/" + sub if sub else "")
        qualified = resource + ("." + group if group else "")
        subject = "%s \"%s\"" % (qualified, name) if name else qualified
        where = "in the namespace \"%s\"" % ns if ns else "at the cluster scope"
        details = {"group": group} if group else {}
        details["kind"] = resource
        if name:
            details["name"] = name
        return self.send_status(403, "Forbidden", "%s is forbidden: User \"%s\" cannot %s "
                                "resource \"%s\" in API group \"%s\" %s" % (
                                    subject, user, verb, what, group, where), details)

    # --- dispatch ------------------------------------------------------------------------
    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def strip_prefix(self):
        """Takes the server's path prefix off self.path; False (after a 404 like a proxy's)
        for an API request that is not under it."""
        prefix = self.server.path_prefix
        if not prefix or self.path.startswith("/kubesim/"):
            return True
        if self.path == prefix or self.path.startswith((prefix + "/", prefix + "?")):
            self.path = self.path[len(prefix):] or "/"
            return True
        self.close_connection = True  # its body, if any, is not read
        self.send_text(404, "404 page not found: kubesim serves the API under %s/\n" % prefix)
        return False

    def dispatch(self, method):
        self.logged = None
        self.logged_early = False
        if not self.strip_prefix():
            return
        u = urlparse(self.path)
        self.q = {k: v for k, v in parse_qs(u.query, keep_blank_values=True).items()}
        path = u.path.rstrip("/") or "/"
        control = path.startswith("/kubesim/")
        body = self.read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        try:
            self.route(method, path, body, control)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, Closed, OSError):
            self.close_connection = True
        finally:
            if not control and not self.logged_early:
                self.server.log_line(method, self.path, self.logged or "-")

    def qget(self, key, default=None):
        v = self.q.get(key)
        return v[0] if v else default

    def qbool(self, key):
        return self.qget(key) in ("true", "1")

    def route(self, method, path, body, control):
        ident = self.identity()
        faults = self.server.faults
        if ident and not control and faults.take("unauthorized_count"):
            ident = None
        if ident is None:
            return self.send_status(401, "Unauthorized", "Unauthorized")
        if control:
            return self.control(method, path, body)
        delay = faults.take_http_delay(method, path)
        if delay:
            time.sleep(delay)
        err = faults.take_http_error(method, path, self.q)
        self.error_after = err if err and err.get("after") else None
        if err and not err.get("after"):
            code = err["status"]
            hdrs = {"Retry-After": str(err["retry_after"])} if "retry_after" in err else {}
            if err.get("plain_text"):
                return self.send_text(code, "Too many requests, please try again later.\n", hdrs)
            reason = {429: "TooManyRequests", 500: "InternalError",
                      503: "ServiceUnavailable", 504: "Timeout"}.get(code, "InternalError")
            return self.send_status(code, reason, "injected fault: %d %s" % (code, reason),
                                    headers=hdrs)
        self.role, self.user = ident
        m = re.match(r"^/(?:apis/networking\.k8s\.io|api)/v1/namespaces/([^/]+)/"
                     r"(networkpolicies|secrets)(?:/([^/]+))?$", path)
        if m and (m.group(2) == "secrets") == path.startswith("/api/"):
            return self.stored(method, m.group(2), m.group(1), m.group(3), body)
        if self.nonresource(method, path, body):
            return
        m = re.match(r"^/api/v1/(?:namespaces/([^/]+)/)?events$", path)
        if m:
            return self.kevents(method, m.group(1))
        m = re.match(r"^/api/v1/(?:namespaces/([^/]+)/)?(pods|podtemplates)"
                     r"(?:/([^/]+)(?:/(attach|exec|log))?)?$", path)
        if m:
            ns, resource, name, sub = m.groups()
            if ns is None and (name or method != "GET"):
                return self.send_status(404, "NotFound", "the server could not find the "
                                        "requested resource")
            if resource == "podtemplates" and sub:
                return self.send_status(404, "NotFound", "the server could not find the "
                                        "requested resource")
            verb = self.verb(method, name, sub)
            if not allowed(self.role, verb, resource, sub):
                return self.forbid(self.user, verb, resource, sub, ns, name)
            if sub == "log":
                return self.pod_log(ns, name)
            if sub in ("attach", "exec"):
                return self.stream(ns, name, sub)
            if name:
                return self.item(resource, ns, name, method, body)
            return self.collection(resource, ns, method, body)
        m = re.match(r"^/api/v1/namespaces(?:/([^/]+))?$", path)
        if m and method == "GET":
            if not allowed(self.role, "get" if m.group(1) else "list", "namespaces"):
                return self.forbid(self.user, "get" if m.group(1) else "list", "namespaces", "",
                                   None, m.group(1))
            def nsobj(n):
                return {"kind": "Namespace", "apiVersion": "v1",
                        "metadata": {"name": n, "labels": {"kubernetes.io/metadata.name": n}},
                        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
            if m.group(1):
                return self.send_json(200, nsobj(m.group(1)))
            with self.server.cluster.lock:
                names = sorted({"default"} | {k[0] for k in self.server.cluster.pods} |
                               {k[0] for k in self.server.cluster.templates})
            return self.send_json(200, {"kind": "NamespaceList", "apiVersion": "v1",
                                        "metadata": {}, "items": [nsobj(n) for n in names]})
        return self.send_status(404, "NotFound", "the server could not find the requested "
                                "resource")

    def verb(self, method, name, sub):
        if sub:
            return "create" if method == "POST" else "get"
        if method == "GET":
            if self.qbool("watch"):
                return "watch"
            return "get" if name else "list"
        return {"POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if name else "deletecollection"}.get(method, method.lower())

    def kevents(self, method, ns):
        """core/v1 Events, read-only: the kubelet's `Started` event of each container (list
        and watch, fieldSelector on involvedObject.* and reason, as a real server allows)."""
        if method != "GET":
            return self.send_status(405, "MethodNotAllowed", "the server does not allow this "
                                    "method on the requested resource")
        verb = "watch" if self.qbool("watch") else "list"
        if not allowed(self.role, verb, "events"):
            return self.forbid(self.user, verb, "events", "", ns, None)
        if self.qbool("watch"):
            return self.watch("events", ns, self.matcher())
        items, rv = self.server.cluster.list_kevents(ns, self.matcher())
        return self.send_list("events", items, rv)

    def stored(self, method, resource, ns, name, body):
        """Objects kubesim only stores (STORED): NetworkPolicies (kubesim has no network) and
        Secrets (no pod uses them), so that `krmpod doctor` and kubectl can read what an
        admin created: create, get, list, delete."""
        kind, api_version, group, fields, spec_fields = STORED[resource]
        qualified = resource + ("." + group if group else "")
        verb = self.verb(method, name, "")
        if not allowed(self.role, verb, resource):
            return self.forbid(self.user, verb, resource, "", ns, name, group)
        store = getattr(self.server.cluster, resource)
        details = dict({"group": group} if group else {}, kind=resource)
        if method == "GET" and name is None:
            items = [copy.deepcopy(o) for (n, _), o in sorted(store.items()) if n == ns]
            return self.send_json(200, {"kind": kind + "List", "apiVersion": api_version,
                                        "metadata": {"resourceVersion": "1"}, "items": items})
        if method == "GET":
            obj = store.get((ns, name))
            if obj is None:
                return self.send_status(404, "NotFound", "%s \"%s\" not found"
                                        % (qualified, name), dict(details, name=name))
            return self.send_json(200, obj)
        if method == "POST" and name is None:
            obj = self.parse_body(body, kind)
            if obj is None:
                return
            bad = sorted(k for k in obj if k not in fields) + \
                sorted("spec." + k for k in (obj.get("spec") or {})
                       if spec_fields is not None and k not in spec_fields)
            if bad and (self.qget("fieldValidation") or "Strict") == "Strict":
                return self.send_status(400, "BadRequest", "%s in version \"v1\" cannot be "
                                        "handled as a %s: strict decoding error: %s"
                                        % (kind, kind, ", ".join('unknown field "%s"' % b
                                                                 for b in bad)))
            md = obj.setdefault("metadata", {})
            key = (ns, md.get("name"))
            if not md.get("name"):
                return self.send_status(422, "Invalid", "%s%s \"\" is invalid: metadata.name: "
                                        "Required value" % (kind, "." + group if group else ""))
            invalid = secret_invalid(obj) if resource == "secrets" else None
            if invalid:
                return self.send_status(422, "Invalid", "Secret \"%s\" is invalid: %s"
                                        % (md["name"], invalid))
            if key in store:
                return self.send_status(409, "AlreadyExists", "%s \"%s\" already exists"
                                        % (qualified, md["name"]))
            md["namespace"] = ns
            md.setdefault("uid", str(uuid.uuid4()))
            obj["kind"], obj["apiVersion"] = kind, api_version
            store[key] = obj
            return self.send_json(201, obj)
        if method == "DELETE" and name is not None:
            obj = store.pop((ns, name), None)
            if obj is None:
                return self.send_status(404, "NotFound", "%s \"%s\" not found"
                                        % (qualified, name))
            return self.send_json(200, obj)
        return self.send_status(405, "MethodNotAllowed", "the server does not allow this "
                                "method on the requested resource")

    def nonresource(self, method, path, body):
        """Discovery, version, health, OpenAPI, access reviews: handled here (True) or not."""
        if path == "/version":
            self.send_json(200, version_info(self.server.version))
        elif path in ("/healthz", "/livez", "/readyz"):
            self.send_text(200, "ok")
        elif path == "/api":
            self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                 "serverAddressByClientCIDRs": [
                                     {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
        elif path == "/apis":
            self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": g + "/v1", "version": "v1"}],
                 "preferredVersion": {"groupVersion": g + "/v1", "version": "v1"}}
                for g in sorted(GROUPS)]})
        elif path == "/api/v1":
            self.send_json(200, API_RESOURCES)
        elif path.startswith("/apis/") and path[6:].split("/")[0] in GROUPS:
            parts = path.split("/")
            g = parts[2]
            if len(parts) == 3:
                self.send_json(200, {"kind": "APIGroup", "apiVersion": "v1", "name": g,
                                     "versions": [{"groupVersion": g + "/v1", "version": "v1"}],
                                     "preferredVersion": {"groupVersion": g + "/v1",
                                                          "version": "v1"}})
            elif len(parts) == 4 and parts[3] == "v1":
                self.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                     "groupVersion": g + "/v1", "resources": GROUPS[g]})
            elif len(parts) == 5 and parts[3] == "v1" and method == "POST":
                self.review(g, parts[4], body)
            else:
                return False
        elif path == "/openapi/v3":
            self.send_json(200, openapi.root())
        elif path.startswith("/openapi/v3/"):
            doc = openapi.document(path[len("/openapi/v3/"):])
            if doc is None:
                return False
            self.send_json(200, doc, headers={"Cache-Control": "public, immutable",
                                              "Etag": '"%s"' % openapi.etag(doc)})
        else:
            return False
        return True

    def review(self, group, resource, body):
        obj = self.parse_body(body, "SelfSubjectAccessReview")
        if obj is None:
            return
        if group == "authentication.k8s.io" and resource == "selfsubjectreviews":
            groups = ["system:masters", "system:authenticated"] if self.user == "kubesim-admin" \
                else ["system:serviceaccounts", "system:serviceaccounts:default",
                      "system:authenticated"]
            obj["status"] = {"userInfo": {"username": self.user, "groups": groups}}
            obj.setdefault("metadata", {})["creationTimestamp"] = None
            return self.send_json(201, obj)
        if group != "authorization.k8s.io" or resource != "selfsubjectaccessreviews":
            return self.send_status(404, "NotFound", "the server could not find the requested "
                                    "resource")
        spec = obj.get("spec") or {}
        ra = spec.get("resourceAttributes")
        if ra is not None:
            ok = ra.get("group", "") == "" and allowed(self.role, ra.get("verb", ""),
                                                        ra.get("resource", ""),
                                                        ra.get("subresource", ""))
            if self.role == "admin":
                ok = True
        else:
            ok = True  # non-resource URLs: discovery is open to every authenticated user
        obj["status"] = {"allowed": ok}
        if ok:
            obj["status"]["reason"] = "kubesim RBAC: role %s" % self.role
        obj.setdefault("metadata", {})["creationTimestamp"] = None
        return self.send_json(201, obj)

    # --- control API ----------------------------------------------------------------------
    def control(self, method, path, body):
        s = self.server
        if path == "/kubesim/faults" and method == "GET":
            return self.send_json(200, s.faults.snapshot())
        if path == "/kubesim/faults" and method == "PUT":
            s.faults.set(json.loads(body or b"{}"))
            return self.send_json(200, s.faults.snapshot())
        if path == "/kubesim/clock" and method == "POST":
            CLOCK["offset"] = int(json.loads(body or b"{}")["offset"])
            return self.send_json(200, {"offset": CLOCK["offset"]})
        if path == "/kubesim/reset" and method == "POST":
            s.faults.set({})
            CLOCK["offset"] = 0
            s.cluster.reset()
            return self.send_json(200, {})
        if path == "/kubesim/pods" and method == "GET":
            pods, _ = s.cluster.list_pods(None, lambda p: True)
            return self.send_json(200, {"pods": [
                {"namespace": p["metadata"]["namespace"], "name": p["metadata"]["name"],
                 "phase": p["status"].get("phase")} for p in pods]})
        if path == "/kubesim/age" and method == "POST":
            b = json.loads(body or b"{}")
            if not s.cluster.age_pod(b["namespace"], b["name"], int(b["seconds"])):
                return self.send_status(404, "NotFound", "no pod %s/%s" % (
                    b["namespace"], b["name"]))
            return self.send_json(200, {})
        return self.send_status(404, "NotFound", "no such control endpoint")

    # --- collections and items -------------------------------------------------------------
    def wants_table(self):
        return "as=Table" in self.headers.get("Accept", "")

    def matcher(self):
        lm = label_matcher(self.qget("labelSelector"))
        fm = field_matcher(self.qget("fieldSelector"))
        return lambda o: lm(o["metadata"].get("labels") or {}) and fm(o)

    def lister(self, resource):
        cl = self.server.cluster
        return cl.list_pods if resource == "pods" else cl.list_templates

    def send_list(self, resource, items, rv):
        kind, list_kind, table = KINDS[resource]
        if self.wants_table():
            return self.send_json(200, table(items, rv), ctype=TABLE_CTYPE)
        return self.send_json(200, {"kind": list_kind, "apiVersion": "v1",
                                    "metadata": {"resourceVersion": rv}, "items": items})

    def collection(self, resource, ns, method, body):
        cl = self.server.cluster
        kind = KINDS[resource][0]
        if method == "POST":
            obj = self.parse_body(body, kind)
            if obj is None:
                return
            if obj.get("kind", kind) != kind or obj.get("apiVersion", "v1") != "v1":
                return self.send_status(400, "BadRequest", "the API version in the data (%s) "
                                        "does not match the expected API version (v1)"
                                        % obj.get("apiVersion") if obj.get("apiVersion", "v1")
                                        != "v1" else "%s in version \"v1\" cannot be handled as "
                                        "a %s: kind %s does not match" % (kind, kind,
                                                                         obj.get("kind")))
            validation = (self.qget("fieldValidation") or "").lower()
            if validation in ("strict", "warn"):
                bad = (schema.unknown_fields if resource == "pods" else
                       schema.unknown_fields_template)(obj)
                if bad and validation == "strict":
                    return self.send_status(400, "BadRequest",
                                            "%s in version \"v1\" cannot be handled as a %s: "
                                            "strict decoding error: %s" % (kind, kind, ", ".join(
                                                "unknown field \"%s\"" % b for b in bad)))
                warn = {"Warning": ", ".join('299 - "unknown field \\"%s\\""' % b
                                             for b in bad)} if bad else None
            else:
                warn = None
            dry = self.qget("dryRun") == "All"
            if resource == "pods" and self.server.faults.take("quota_exceeded_count"):
                # admission runs after the name was generated
                md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
                name = cl.generate_name(md) or ""
                return self.send_status(
                    403, "Forbidden", "pods \"%s\" is forbidden: exceeded quota: krmpod, "
                    "requested: pods=1, used: pods=16, limited: pods=16" % name,
                    {"kind": "pods", "name": name})
            create = cl.create_pod if resource == "pods" else cl.create_template
            created, err = create(ns, obj, dry_run=dry)
            if err:
                return self.send_err(err)
            return self.send_json(201, created, headers=warn)
        if method == "DELETE":
            grace = self.grace(body)
            if grace is False:
                return
            match = self.matcher()
            items, rv = self.lister(resource)(ns, match)
            out = []
            for o in items:
                name = o["metadata"]["name"]
                d = cl.delete_pod(ns, name, grace) if resource == "pods" else \
                    cl.delete_template(ns, name)
                if d:
                    out.append(d)
            return self.send_json(200, {"kind": KINDS[resource][1], "apiVersion": "v1",
                                        "metadata": {"resourceVersion": rv}, "items": out})
        if method != "GET":
            return self.send_status(405, "MethodNotAllowed", "the server does not allow this "
                                    "method on the requested resource")
        if self.qbool("watch"):
            return self.watch(resource, ns, self.matcher())
        items, rv = self.lister(resource)(ns, self.matcher())
        return self.send_list(resource, items, rv)

    def grace(self, body):
        """gracePeriodSeconds from the DeleteOptions body or the query (None = default);
        False after sending an error."""
        g = self.qget("gracePeriodSeconds")
        opts = {}
        if body:
            opts = self.parse_body(body, "DeleteOptions")
            if opts is None:
                return False
        if opts.get("gracePeriodSeconds") is not None:
            g = opts["gracePeriodSeconds"]
        self.preconditions = opts.get("preconditions") or {}
        if g is None:
            return None
        try:
            return max(0, int(g))
        except (TypeError, ValueError):
            self.send_status(400, "BadRequest", "invalid gracePeriodSeconds: %r" % (g,))
            return False

    def item(self, resource, ns, name, method, body):
        cl = self.server.cluster
        get = cl.get_pod if resource == "pods" else cl.get_template
        if method == "GET":
            o = get(ns, name)
            if o is None:
                return self.not_found(resource, name)
            if self.wants_table():
                table = KINDS[resource][2]
                return self.send_json(200, table([o], o["metadata"]["resourceVersion"]),
                                      ctype=TABLE_CTYPE)
            return self.send_json(200, o)
        if method == "DELETE":
            grace = self.grace(body)
            if grace is False:
                return
            o = get(ns, name)
            if o is None:
                return self.not_found(resource, name)
            uid = self.preconditions.get("uid")
            if uid and uid != o["metadata"]["uid"]:
                return self.send_status(409, "Conflict", "Operation cannot be fulfilled on %s "
                                        "\"%s\": Precondition failed: UID in precondition: %s, "
                                        "UID in object meta: %s" % (resource, name, uid,
                                                                    o["metadata"]["uid"]),
                                        {"name": name, "kind": resource})
            rv = self.preconditions.get("resourceVersion")
            if rv and rv != o["metadata"]["resourceVersion"]:
                return self.send_status(409, "Conflict", "Operation cannot be fulfilled on %s "
                                        "\"%s\": the ResourceVersion in the precondition (%s) "
                                        "does not match the ResourceVersion in record (%s). The "
                                        "object might have been modified" % (
                                            resource, name, rv,
                                            o["metadata"]["resourceVersion"]),
                                        {"name": name, "kind": resource})
            d = cl.delete_pod(ns, name, grace) if resource == "pods" else \
                cl.delete_template(ns, name)
            if d is None:
                return self.not_found(resource, name)
            return self.send_json(200, d)
        if method == "PATCH":
            return self.patch(resource, ns, name, body)
        if method == "PUT" and resource == "podtemplates":
            obj = self.parse_body(body, "PodTemplate")
            if obj is None:
                return
            if (self.qget("fieldValidation") or "").lower() == "strict":
                bad = schema.unknown_fields_template(obj)
                if bad:
                    return self.send_status(400, "BadRequest", "PodTemplate in version \"v1\" "
                                            "cannot be handled as a PodTemplate: strict decoding "
                                            "error: " + ", ".join('unknown field "%s"' % b
                                                                  for b in bad))
            t, err = cl.replace_template(ns, name, obj)
            if err:
                return self.send_err(err)
            return self.send_json(200, t)
        return self.send_status(405, "MethodNotAllowed", "the server does not allow this method "
                                "on the requested resource")

    def patch(self, resource, ns, name, body):
        cl = self.server.cluster
        kind = KINDS[resource][0]
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype not in patch.MERGE + (patch.JSON_PATCH,):
            return self.send_status(415, "UnsupportedMediaType", "the body of the request was "
                                    "in an unknown format - accepted media types include: "
                                    "application/json-patch+json, application/merge-patch+json,"
                                    " application/strategic-merge-patch+json (kubesim has no "
                                    "server-side apply)")
        o = (cl.get_pod if resource == "pods" else cl.get_template)(ns, name)
        if o is None:
            return self.not_found(resource, name)
        try:
            doc = json.loads(body or b"null")
            new = patch.json_patch(o, doc) if ctype == patch.JSON_PATCH else patch.merge(o, doc)
        except ValueError as e:
            return self.send_status(400, "BadRequest", "error decoding patch: %s" % e)
        except (patch.PatchError, KeyError, IndexError, TypeError) as e:
            return self.send_status(422, "Invalid", "the server rejected our request due to an "
                                    "error in our request: %s" % e)
        if not isinstance(new, dict):
            return self.send_status(422, "Invalid", "the patch does not leave an object")
        if (self.qget("fieldValidation") or "").lower() == "strict":
            bad = (schema.unknown_fields if resource == "pods" else
                   schema.unknown_fields_template)(new)
            if bad:
                return self.send_status(400, "BadRequest", "%s in version \"v1\" cannot be "
                                        "handled as a %s: strict decoding error: %s" % (
                                            kind, kind, ", ".join('unknown field "%s"' % b
                                                                  for b in bad)))
        if self.qget("dryRun") == "All":
            return self.send_json(200, new)
        if resource == "pods":
            out, err = cl.update_pod(ns, name, new)
        else:
            out, err = cl.replace_template(ns, name, new)
        if err:
            return self.send_err(err)
        return self.send_json(200, out)

    def watch(self, resource, ns, match):
        cl, faults = self.server.cluster, self.server.faults
        kind = KINDS[resource][0]
        table_fn = KINDS[resource][2]
        rv_s = self.qget("resourceVersion")
        rv = int(rv_s) if rv_s and rv_s.isdigit() else 0
        if rv and faults.take("watch_410"):
            return self.send_status(410, "Expired", "too old resource version: %d (%d)" %
                                    (rv, cl.oldest_rv - 1))
        timeout = float(self.qget("timeoutSeconds") or 1800)
        table = self.wants_table()
        bookmark_at = None
        if (self.qbool("allowWatchBookmarks") and timeout > BOOKMARK_BEFORE_END_S and
                not table):
            bookmark_at = time.monotonic() + timeout - BOOKMARK_BEFORE_END_S
        self.start_chunked("application/json")

        def send(etype, obj):
            if table and etype != "ERROR":
                obj = table_fn([obj], obj["metadata"]["resourceVersion"])
            self.chunk(json.dumps({"type": etype, "object": obj}).encode() + b"\n")

        drop = faults.take("drop_watch")
        if faults.take("watch_410_event"):
            send("ERROR", status(410, "Expired", "too old resource version: %d (%d)"
                                 % (rv, cl.oldest_rv - 1)))
            return self.end_chunks()
        store = {"pods": cl.pods, "podtemplates": cl.templates, "events": cl.kevents}[resource]
        with cl.lock:
            if rv and rv < cl.oldest_rv - 1:
                expired = True
            else:
                expired = False
                if rv == 0:
                    initial = [("ADDED", copy.deepcopy(o)) for (ons, _), o in
                               sorted(store.items()) if (ns is None or ons == ns) and match(o)]
                    pos = cl.rv
                else:
                    initial = []
                    pos = rv
        if expired:
            send("ERROR", status(410, "Expired", "too old resource version: %d (%d)"
                                 % (rv, cl.oldest_rv - 1)))
            return self.end_chunks()
        for etype, obj in initial:
            send(etype, obj)
        if drop:
            time.sleep(0.05)
            self.connection.shutdown(2)
            self.close_connection = True
            return
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            wake = end if bookmark_at is None else min(end, bookmark_at)
            with cl.lock:
                evs = [e for e in cl.events if e[0] > pos]
                if not evs:
                    cl.cond.wait(min(0.5, max(0.0, wake - time.monotonic())))
                    evs = [e for e in cl.events if e[0] > pos]
                last = max(pos, cl.rv)
            for erv, etype, ens, ekind, obj in evs:
                pos = erv
                if ekind == kind and (ns is None or ens == ns) and match(obj):
                    send(etype, obj)
            if bookmark_at is not None and time.monotonic() >= bookmark_at:
                bookmark_at = None
                # the shape the API server sends: an empty object of the kind with only
                # the resourceVersion the client may resume from
                bm = {"kind": kind, "apiVersion": "v1",
                      "metadata": {"resourceVersion": str(last)}}
                if kind == "Pod":
                    bm.update({"spec": {"containers": None}, "status": {}})
                elif kind == "PodTemplate":
                    bm["template"] = {"metadata": {"creationTimestamp": None},
                                      "spec": {"containers": None}}
                self.chunk(json.dumps({"type": "BOOKMARK", "object": bm}).encode() + b"\n")
        self.end_chunks()

    # --- containers -------------------------------------------------------------------------
    def pick_container(self, p, name):
        """The container named by ?container= (or the only one); sends 400 and returns None
        when there is none such."""
        spec = p["spec"]
        mains = [c["name"] for c in spec.get("containers") or []]
        inits = [c["name"] for c in spec.get("initContainers") or []]
        cname = self.qget("container")
        if not cname:
            if len(mains) == 1:
                return mains[0]
            msg = "a container name must be specified for pod %s, choose one of: [%s]" % (
                name, " ".join(mains))
            if inits:
                msg += " or one of the init containers: [%s]" % " ".join(inits)
            self.send_status(400, "BadRequest", msg)
            return None
        if cname not in mains and cname not in inits:
            self.send_status(400, "BadRequest", "container %s is not valid for pod %s" %
                             (cname, name))
            return None
        return cname

    @staticmethod
    def shown_state(p, cname):
        """(state, reason) of a container as the pod status shows it: "waiting", "running",
        "terminated" (None before the kubelet reported anything)."""
        for key in ("initContainerStatuses", "containerStatuses"):
            for cs in p["status"].get(key) or []:
                if cs["name"] == cname:
                    st = cs.get("state") or {}
                    kind = next(iter(st), None)
                    return kind, (st.get(kind) or {}).get("reason")
        return None, None

    def waiting_msg(self, p, cname, name):
        """The kubelet's refusal to read the log of a container that has not started."""
        reason = self.shown_state(p, cname)[1] or "ContainerCreating"
        if reason == "ErrImagePull":
            reason = "image can't be pulled"
        elif reason == "ImagePullBackOff":
            reason = "trying and failing to pull image"
        return "container \"%s\" in pod \"%s\" is waiting to start: %s" % (cname, name, reason)

    def pod_log(self, ns, name):
        cl = self.server.cluster
        p = cl.get_pod(ns, name)
        if p is None:
            return self.not_found("pods", name)
        cname = self.pick_container(p, name)
        if cname is None:
            return
        if self.qbool("previous"):
            return self.send_status(400, "BadRequest", "previous terminated container \"%s\" in "
                                    "pod \"%s\" not found" % (cname, name))
        if not p["spec"].get("nodeName"):
            # no node to ask: the API server answers 204 No Content
            self.send_response(204)
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            self.logged = 204
            return
        c = cl.container(ns, name, cname)
        if c is None or self.shown_state(p, cname)[0] in ("waiting", None):
            return self.send_status(400, "BadRequest", self.waiting_msg(p, cname, name))
        limit = int(self.qget("limitBytes") or 0)
        tail = self.qget("tailLines")
        with c.lock:
            data = bytes(c.log)
        if tail is not None:
            data = b"".join(data.splitlines(True)[-int(tail):]) if int(tail) else b""
        if not self.qbool("follow"):
            # a runtime that has not written the container's last bytes to its log yet
            lag = self.server.faults.get("log_lag_bytes") or 0
            if lag and self.server.faults.take("log_lag_count"):
                data = data[:max(0, len(data) - int(lag))]
            if limit:
                data = data[:limit]
            return self.send_text(200, data)
        self.start_chunked("text/plain")
        sent = len(data)
        self.chunk(data)
        while not c.exited.is_set():
            time.sleep(0.05)
            with c.lock:
                more = bytes(c.log[sent:])
            sent += len(more)
            self.chunk(more)
        with c.lock:
            self.chunk(bytes(c.log[sent:]))
        self.end_chunks()

    # --- attach and exec ---------------------------------------------------------------------
    def stream(self, ns, name, sub):
        """attach/exec, as the API server and the kubelet answer: the pod, the container
        name and the node are checked before the upgrade (400/404 Status); a protocol the
        server does not speak is 403 with an empty body (what a server older than 1.30 says
        to v5.channel.k8s.io); after the upgrade an empty message on the lowest writable
        channel says the stream is ready, and a container the kubelet does not know as
        running (waiting, or seen exited) ends the stream with a 500 Status on channel 3."""
        cl, faults = self.server.cluster, self.server.faults
        p = cl.get_pod(ns, name)
        if p is None:
            return self.not_found("pods", name)
        cname = self.pick_container(p, name)
        if cname is None:
            return
        if not p["spec"].get("nodeName"):
            return self.send_status(400, "BadRequest", "pod %s does not have a host assigned"
                                    % name)
        if self.headers.get("Upgrade", "").lower() != "websocket":
            return self.send_status(400, "BadRequest", "Upgrade request required: kubesim "
                                    "streams over WebSocket (%s) only, not SPDY"
                                    % ", ".join(self.server.protocols))
        offered = [x.strip() for x in self.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        proto = next((x for x in self.server.protocols if x in offered), None)
        if proto is None:
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.logged = 403
            return
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept_key(self.headers["Sec-WebSocket-Key"]))
        self.send_header("Sec-WebSocket-Protocol", proto)
        self.end_headers()
        self.wfile.flush()
        self.logged = 101
        self.log_stream_start()
        self.close_connection = True
        ws = WebSocket(self.rfile, self.wfile, self.connection)
        ready = 1 if self.qbool("stdout") else 2 if self.qbool("stderr") else 3
        ws.send_binary(bytes([ready]))
        c = cl.container(ns, name, cname)
        # The kubelet looks the container up in the runtime (CRI), not in the pod status:
        # a container the runtime runs can be attached to a relist before the status says
        # so (measured on a real 1.34 node), and one that has exited cannot.
        # (fault: an attach that comes too late for a container that is still running, as
        # for one that ended: its output then comes from the pod log)
        if c is None or c.proc is None or c.exited.is_set() or (
                sub == "attach" and self.server.faults.take("attach_no_container")):
            why = "unable to upgrade connection: container %s not found in pod %s_%s" % (
                cname, name, ns)
            ws.send_binary(b"\x03" + json.dumps({
                "metadata": {}, "status": "Failure", "message": "Internal error occurred: "
                + why, "reason": "InternalError", "details": {"causes": [{"message": why}]},
                "code": 500}).encode())
            return ws.close()
        if sub == "attach":
            self.attach(ws, c, proto, faults)
        else:
            self.exec_(ws, c, proto, faults)

    def attach(self, ws, c, proto, faults):
        want_in = self.qbool("stdin")
        want_out = self.qbool("stdout")
        want_err = self.qbool("stderr")
        drop = faults.take("drop_attach")
        # A drop mid-stream: the TCP connection goes after this many bytes of output (or
        # when the container ends before that), with no Status and no close frame.
        drop_at = faults.get("drop_attach_bytes") if drop else None
        # A clean close too early: the Success status after this many bytes of output, as
        # seen on a real 1.34 cluster (the output is cut, nothing says so).
        cut = faults.get("attach_truncate_bytes") if faults.take("attach_truncate_count") \
            else None
        # A normal Close (1000) at once, with no Status, stdin unread, while the container
        # goes on (its stdin is closed, as the runtime does when its attach goes).
        close_early = faults.take("attach_close_early")
        out = OutputStream(ws, cut, drop_at)

        def listener(ch, data):
            try:
                if ch == "exit":
                    out.end()
                elif data is not None and ((ch == 1 and want_out) or (ch == 2 and want_err)):
                    out.send(ch, data)
            except (Closed, OSError):
                pass
        with c.lock:
            if c.exited.is_set():
                out.end()
                return
            c.listeners.append(listener)
            owns_stdin = (want_in and c.proc.stdin is not None and not c.stdin_taken and
                          not c.stdin_closed.is_set())
            if owns_stdin and c.stdin_once:
                c.stdin_taken = True
        if close_early or (drop and drop_at is None):
            if close_early:  # stdin unread for a while: the client meets the close first
                ws.close(1000)
                time.sleep(0.5)
                ws.drain()
            else:
                time.sleep(0.05)
                ws.drop()
            with c.lock:
                c.listeners.remove(listener)
            if owns_stdin and c.stdin_once:
                self._close_stdin(c)
            return
        try:
            while True:
                op, msg = ws.recv_message()
                if not msg:
                    continue
                ch, payload = msg[0], msg[1:]
                if ch == 0 and owns_stdin and c.proc.stdin:
                    try:
                        c.proc.stdin.write(payload)
                        c.proc.stdin.flush()
                    except (BrokenPipeError, ValueError, OSError):
                        pass
                elif ch == 255 and payload[:1] == b"\x00" and proto.startswith("v5"):
                    # the client's stdin ended: with stdinOnce the runtime closes the
                    # container's stdin; without, it stays open for a later attach
                    if owns_stdin and c.stdin_once:
                        self._close_stdin(c)
                    owns_stdin = False
        except (Closed, OSError, ValueError):
            pass
        finally:
            if owns_stdin and c.stdin_once:
                self._close_stdin(c)
            with c.lock:
                if listener in c.listeners:
                    c.listeners.remove(listener)

    @staticmethod
    def _close_stdin(c):
        with c.stdin_lock:
            if c.proc.stdin and not c.proc.stdin.closed:
                try:
                    c.proc.stdin.close()
                except OSError:
                    pass
        c.stdin_closed.set()

    def exec_(self, ws, c, proto, faults):
        cl = self.server.cluster
        argv = self.q.get("command") or []
        if not argv:
            ws.send_binary(b"\x03" + json.dumps(status(400, "BadRequest",
                                                       "you must specify a command")).encode())
            return ws.close()
        argv = [cl.resolve_command(argv[0], c.mounts)] + argv[1:]
        want_in = self.qbool("stdin")
        rt = c.rt
        # The stream faults apply to execs as to attaches: a dropped connection, or a clean
        # close (Success) after this many bytes of output while the process goes on.
        drop = faults.take("drop_attach")
        drop_at = faults.get("drop_attach_bytes") if drop else None
        cut = faults.get("attach_truncate_bytes") if faults.take("attach_truncate_count") \
            else None
        if faults.take("attach_close_early"):  # before the process starts: nothing ran
            ws.close(1000)
            time.sleep(0.5)
            return ws.drain()
        try:
            with cl.lock:
                if rt.stopped.is_set() and rt.deleting:
                    raise OSError("the pod is being deleted")
                proc = cl.spawn(c, cl.exec_argv(c, argv), want_in)
                rt.execs.add(proc)
        except OSError as e:
            ws.send_binary(b"\x03" + json.dumps({
                "metadata": {}, "status": "Failure",
                "message": "failed to exec in container: failed to start exec: OCI runtime "
                           "exec failed: exec failed: unable to start container process: "
                           "exec: \"%s\": %s: unknown" % (argv[0], e.strerror or e),
                "reason": "InternalError", "code": 500}).encode())
            return ws.close()
        if drop and drop_at is None:
            time.sleep(0.05)
            ws.drop()
            return
        out = OutputStream(ws, cut, drop_at)

        def pump(stream, ch):
            while True:
                try:
                    data = stream.read1(65536)
                except (OSError, ValueError):
                    data = b""
                if not data:
                    break
                try:
                    out.send(ch, data)
                except (Closed, OSError):
                    pass
        pumps = [threading.Thread(target=pump, args=(s, ch), daemon=True)
                 for s, ch in ((proc.stdout, 1), (proc.stderr, 2))]
        for t in pumps:
            t.start()
        stdin_closed = threading.Event()

        def reader():
            try:
                while True:
                    op, msg = ws.recv_message()
                    if msg and msg[0] == 0 and proc.stdin:
                        proc.stdin.write(msg[1:])
                        proc.stdin.flush()
                    elif msg and msg[0] == 255 and proc.stdin:
                        proc.stdin.close()
                        stdin_closed.set()
            except (Closed, OSError, ValueError):
                pass
            finally:
                if proc.stdin and not proc.stdin.closed:
                    try:
                        proc.stdin.close()
                    except OSError:
                        pass
                stdin_closed.set()
        threading.Thread(target=reader, daemon=True).start()
        if cl.faults.image_in("oom_images", c.spec["image"]):
            # the OOM fault, for an exec: the session's processes are SIGKILLed once its
            # stdin closed (a session without stdin: 0.2 s after it started; with the
            # oom_early fault: 0.2 s after it started, whatever its stdin); the container
            # goes on. Waiting for the close, not for a time, makes the kill come after the
            # function read its input however loaded the machine is (a 0.2 s limit once let
            # the kill land before krmpod's stdin did).
            early = not want_in or cl.faults.get("oom_early")

            def oom():
                stdin_closed.wait(0.2 if early else 30)
                cl.kill_group(proc, 9)
            threading.Thread(target=oom, daemon=True).start()
        rc = proc.wait()
        rt.execs.discard(proc)
        for t in pumps:
            t.join(5)
        if rc < 0:
            rc = 128 - rc
        if cl.faults.image_in("oom_images", c.spec["image"]):
            rc = 137  # one that ended on its own still hit its limit (as for containers)
        if rc == 0:
            st = {"metadata": {}, "status": "Success"}
        else:
            st = {"metadata": {}, "status": "Failure",
                  "message": "command terminated with non-zero exit code: exit status %d" % rc,
                  "reason": "NonZeroExitCode",
                  "details": {"causes": [{"reason": "ExitCode", "message": str(rc)}]}}
        try:
            out.end(json.dumps(st).encode())
        except (Closed, OSError):
            pass
