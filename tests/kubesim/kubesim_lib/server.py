"""The HTTPS API server: REST for pods and pod templates, watch, logs, attach/exec over
WebSocket, discovery for kubectl, the /kubesim control API, and fault injection."""
import copy
import datetime
import http.server
import json
import os
import re
import socketserver
import ssl
import subprocess
import threading
import time
from urllib.parse import parse_qs, urlparse

from . import schema
from .cluster import image_basename, status
from .ws import Closed, WebSocket, accept_key

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, cluster, faults, tokens, ctx, reqlog):
        self.cluster, self.faults, self.tokens = cluster, faults, tokens
        self.ctx, self.reqlog = ctx, reqlog
        self.loglock = threading.Lock()
        super().__init__(addr, Handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        return self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def log_line(self, method, path, code):
        with self.loglock:
            self.reqlog.write("%s %s %s %s\n" % (
                datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3], method, path, code))
            self.reqlog.flush()

    def handle_error(self, request, client_address):
        pass  # client disconnects are normal here


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
    st = p.get("status", {})
    if p["metadata"].get("deletionTimestamp"):
        return "Terminating"
    for cs in st.get("containerStatuses", []) or []:
        s = cs.get("state", {})
        if "waiting" in s and s["waiting"].get("reason"):
            return s["waiting"]["reason"]
        if "terminated" in s:
            return s["terminated"].get("reason") or "Completed"
    if st.get("reason"):
        return st["reason"]
    return st.get("phase", "Pending")


def age(p):
    ts = p["metadata"].get("creationTimestamp")
    try:
        t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc)
        s = int((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds())
    except (TypeError, ValueError):
        return "<unknown>"
    return "%ds" % s if s < 120 else "%dm" % (s // 60)


def pod_table(pods, rv):
    cols = [("Name", "string", "name"), ("Ready", "string", ""), ("Status", "string", ""),
            ("Restarts", "string", ""), ("Age", "string", "")]
    rows = []
    for p in pods:
        css = p.get("status", {}).get("containerStatuses", []) or []
        ready = sum(1 for c in css if c.get("ready"))
        md = {k: v for k, v in p["metadata"].items() if k != "managedFields"}
        rows.append({"cells": [p["metadata"]["name"], "%d/%d" % (ready, len(p["spec"]["containers"])),
                               pod_status_text(p), "0", age(p)],
                     "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                "metadata": md}})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv},
            "columnDefinitions": [{"name": n, "type": t, "format": f, "description": n,
                                   "priority": 0} for n, t, f in cols],
            "rows": rows}


API_RESOURCES = {
    "kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
         "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                   "watch"], "shortNames": ["po"], "categories": ["all"]},
        {"name": "pods/attach", "singularName": "", "namespaced": True, "kind": "PodAttachOptions",
         "verbs": ["create", "get"]},
        {"name": "pods/exec", "singularName": "", "namespaced": True, "kind": "PodExecOptions",
         "verbs": ["create", "get"]},
        {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod",
         "verbs": ["get"]},
        {"name": "podtemplates", "singularName": "podtemplate", "namespaced": True,
         "kind": "PodTemplate", "verbs": ["create", "delete", "get", "list", "patch", "update",
                                          "watch"]},
        {"name": "namespaces", "singularName": "namespace", "namespaced": False,
         "kind": "Namespace", "verbs": ["get", "list"], "shortNames": ["ns"]},
    ]}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kubesim"

    def log_message(self, fmt, *args):
        pass

    # --- responses ---------------------------------------------------------------------
    def send_json(self, code, obj, headers=None, ctype="application/json"):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.logged = code

    def send_status(self, code, reason, message, details=None, headers=None):
        self.send_json(code, status(code, reason, message, details), headers)

    def send_text(self, code, text, headers=None):
        body = text.encode() if isinstance(text, str) else text
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.logged = code

    def start_chunked(self, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.logged = 200

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

    # --- auth ----------------------------------------------------------------------------
    def identity(self):
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return self.server.tokens.get(auth[7:].strip())
        try:
            cert = self.connection.getpeercert()
        except (ValueError, OSError):
            cert = None
        return "admin" if cert else None

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

    def dispatch(self, method):
        self.logged = None
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
            if not control:
                self.server.log_line(method, self.path, self.logged or "-")

    def qget(self, key, default=None):
        v = self.q.get(key)
        return v[0] if v else default

    def route(self, method, path, body, control):
        who = self.identity()
        faults = self.server.faults
        if who and not control and faults.take("unauthorized_count"):
            who = None
        if who is None:
            return self.send_status(401, "Unauthorized", "Unauthorized")
        if control:
            return self.control(method, path, body)
        err = faults.take_http_error(method, path)
        if err:
            code = err["status"]
            hdrs = {"Retry-After": str(err["retry_after"])} if "retry_after" in err else {}
            if err.get("plain_text"):
                return self.send_text(code, "Too many requests, please try again later.\n", hdrs)
            reason = {429: "TooManyRequests", 500: "InternalError",
                      503: "ServiceUnavailable", 504: "Timeout"}.get(code, "InternalError")
            return self.send_status(code, reason, "injected fault: %d %s" % (code, reason),
                                    headers=hdrs)
        if who == "readonly" and method not in ("GET",):
            return self.send_status(
                403, "Forbidden", "%s is forbidden: User \"system:serviceaccount:default:"
                "readonly\" cannot %s resource in the namespace" % (path, method.lower()))
        if who == "readonly" and ("/attach" in path or "/exec" in path):
            return self.send_status(403, "Forbidden", "User \"readonly\" cannot create "
                                    "resource \"pods/attach\"")
        if path == "/version":
            return self.send_json(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-kubesim",
                                        "platform": "linux/amd64", "goVersion": "go1.23",
                                        "compiler": "gc", "buildDate": "2026-01-01T00:00:00Z",
                                        "gitCommit": "kubesim", "gitTreeState": "clean"})
        if path == "/api":
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [
                                            {"clientCIDR": "0.0.0.0/0",
                                             "serverAddress": "127.0.0.1"}]})
        if path == "/apis":
            return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []})
        if path == "/api/v1":
            return self.send_json(200, API_RESOURCES)
        m = re.match(r"^/api/v1/namespaces/([^/]+)$", path)
        if m and method == "GET":
            return self.send_json(200, {"kind": "Namespace", "apiVersion": "v1",
                                        "metadata": {"name": m.group(1)},
                                        "status": {"phase": "Active"}})
        if path == "/api/v1/pods" and method == "GET":
            return self.pods_collection(None, method, body)
        m = re.match(r"^/api/v1/namespaces/([^/]+)/pods$", path)
        if m:
            return self.pods_collection(m.group(1), method, body)
        m = re.match(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)(?:/(attach|exec|log))?$", path)
        if m:
            ns, name, sub = m.groups()
            if sub == "log":
                return self.pod_log(ns, name)
            if sub in ("attach", "exec"):
                return self.stream(ns, name, sub)
            return self.pod_item(ns, name, method, body)
        m = re.match(r"^/api/v1/namespaces/([^/]+)/podtemplates(?:/([^/]+))?$", path)
        if m:
            return self.podtemplates(m.group(1), m.group(2), method, body)
        return self.send_status(404, "NotFound", "the server could not find the requested "
                                "resource")

    # --- control API ----------------------------------------------------------------------
    def control(self, method, path, body):
        s = self.server
        if path == "/kubesim/faults" and method == "GET":
            return self.send_json(200, s.faults.snapshot())
        if path == "/kubesim/faults" and method == "PUT":
            s.faults.set(json.loads(body or b"{}"))
            return self.send_json(200, s.faults.snapshot())
        if path == "/kubesim/reset" and method == "POST":
            s.faults.set({})
            s.cluster.reset()
            return self.send_json(200, {})
        if path == "/kubesim/pods" and method == "GET":
            pods, _ = s.cluster.list_pods(None, lambda p: True)
            return self.send_json(200, {"pods": [
                {"namespace": p["metadata"]["namespace"], "name": p["metadata"]["name"],
                 "phase": p["status"].get("phase")} for p in pods]})
        return self.send_status(404, "NotFound", "no such control endpoint")

    # --- pods -----------------------------------------------------------------------------
    def wants_table(self):
        return "as=Table" in self.headers.get("Accept", "")

    def pods_collection(self, ns, method, body):
        cl = self.server.cluster
        if method == "POST":
            ctype = self.headers.get("Content-Type", "")
            if "json" not in ctype:
                return self.send_status(415, "UnsupportedMediaType",
                                        "kubesim accepts only application/json bodies")
            try:
                pod = json.loads(body)
            except ValueError as e:
                return self.send_status(400, "BadRequest", "invalid JSON: %s" % e)
            if self.qget("fieldValidation", "").lower() == "strict":
                bad = schema.unknown_fields(pod)
                if bad:
                    return self.send_status(400, "BadRequest",
                                            "Pod in version \"v1\" cannot be handled as a Pod: "
                                            "strict decoding error: " + ", ".join(
                                                "unknown field \"%s\"" % b for b in bad))
            if self.qget("dryRun") == "All":
                return self.send_json(201, pod)
            created, err = cl.create_pod(ns, pod)
            if err:
                return self.send_json(err["code"], err)
            return self.send_json(201, created)
        if method == "DELETE":
            lm = label_matcher(self.qget("labelSelector"))
            pods, rv = cl.list_pods(ns, lambda p: lm(p["metadata"].get("labels") or {}))
            for p in pods:
                cl.delete_pod(ns, p["metadata"]["name"])
            return self.send_json(200, {"kind": "PodList", "apiVersion": "v1",
                                        "metadata": {"resourceVersion": rv}, "items": pods})
        if method != "GET":
            return self.send_status(405, "MethodNotAllowed", "method not allowed")
        lm = label_matcher(self.qget("labelSelector"))
        fm = field_matcher(self.qget("fieldSelector"))

        def match(p):
            return lm(p["metadata"].get("labels") or {}) and fm(p)
        if self.qget("watch") in ("1", "true"):
            return self.watch(ns, match)
        pods, rv = cl.list_pods(ns, match)
        if self.wants_table():
            return self.send_json(200, pod_table(pods, rv),
                                  ctype="application/json;as=Table;v=v1;g=meta.k8s.io")
        return self.send_json(200, {"kind": "PodList", "apiVersion": "v1",
                                    "metadata": {"resourceVersion": rv}, "items": pods})

    def pod_item(self, ns, name, method, body):
        cl = self.server.cluster
        if method == "GET":
            p = cl.get_pod(ns, name)
            if p is None:
                return self.send_status(404, "NotFound", "pods \"%s\" not found" % name,
                                        {"name": name, "kind": "pods"})
            if self.wants_table():
                return self.send_json(200, pod_table([p], p["metadata"]["resourceVersion"]),
                                      ctype="application/json;as=Table;v=v1;g=meta.k8s.io")
            return self.send_json(200, p)
        if method == "DELETE":
            p = cl.delete_pod(ns, name)
            if p is None:
                return self.send_status(404, "NotFound", "pods \"%s\" not found" % name,
                                        {"name": name, "kind": "pods"})
            return self.send_json(200, p)
        return self.send_status(405, "MethodNotAllowed", "method not allowed")

    def watch(self, ns, match):
        cl, faults = self.server.cluster, self.server.faults
        rv_s = self.qget("resourceVersion")
        rv = int(rv_s) if rv_s and rv_s.isdigit() else 0
        if rv and faults.take("watch_410"):
            return self.send_status(410, "Expired", "too old resource version: %d (%d)" %
                                    (rv, cl.rv))
        timeout = float(self.qget("timeoutSeconds") or 1800)
        table = self.wants_table()
        self.start_chunked("application/json;stream=watch")

        def send(etype, obj):
            if table and etype != "ERROR":
                obj = pod_table([obj], obj["metadata"]["resourceVersion"])
            self.chunk(json.dumps({"type": etype, "object": obj}).encode() + b"\n")

        drop = faults.take("drop_watch")
        if faults.take("watch_410_event"):
            send("ERROR", status(410, "Expired", "too old resource version: %d" % rv))
            return self.end_chunks()
        with cl.lock:
            if rv and rv < cl.oldest_rv - 1:
                expired = True
            else:
                expired = False
                if rv == 0:
                    initial = [("ADDED", copy.deepcopy(p)) for (pns, _), p in
                               sorted(cl.pods.items()) if (ns is None or pns == ns) and match(p)]
                    pos = cl.rv
                else:
                    initial = []
                    pos = rv
        if expired:
            send("ERROR", status(410, "Expired", "too old resource version: %d" % rv))
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
            with cl.lock:
                evs = [e for e in cl.events if e[0] > pos]
                if not evs:
                    cl.cond.wait(min(0.5, max(0.0, end - time.monotonic())))
                    evs = [e for e in cl.events if e[0] > pos]
            for erv, etype, ens, obj in evs:
                pos = erv
                if (ns is None or ens == ns) and match(obj):
                    send(etype, obj)
        self.end_chunks()

    # --- logs -----------------------------------------------------------------------------
    def pod_log(self, ns, name):
        cl = self.server.cluster
        p = cl.get_pod(ns, name)
        if p is None:
            return self.send_status(404, "NotFound", "pods \"%s\" not found" % name,
                                    {"name": name, "kind": "pods"})
        cname = self.qget("container") or p["spec"]["containers"][0]["name"]
        c = cl.container(ns, name)
        if c is None:
            return self.send_status(400, "BadRequest",
                                    "container \"%s\" in pod \"%s\" is waiting to start: "
                                    "ContainerCreating" % (cname, name))
        limit = int(self.qget("limitBytes") or 0)
        tail = self.qget("tailLines")
        with c.lock:
            data = bytes(c.log)
        if tail is not None:
            data = b"".join(data.splitlines(True)[-int(tail):]) if int(tail) else b""
        if self.qget("follow") not in ("true", "1"):
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

    # --- pod templates ----------------------------------------------------------------------
    def podtemplates(self, ns, name, method, body):
        cl = self.server.cluster
        if name is None and method == "POST":
            t = json.loads(body)
            t.setdefault("metadata", {})["namespace"] = ns
            t["kind"], t["apiVersion"] = "PodTemplate", "v1"
            with cl.lock:
                cl.rv += 1
                t["metadata"]["resourceVersion"] = str(cl.rv)
                cl.templates[(ns, t["metadata"]["name"])] = t
            return self.send_json(201, t)
        if name is None and method == "GET":
            with cl.lock:
                items = [copy.deepcopy(t) for (tns, _), t in sorted(cl.templates.items())
                         if tns == ns]
            return self.send_json(200, {"kind": "PodTemplateList", "apiVersion": "v1",
                                        "metadata": {"resourceVersion": str(cl.rv)},
                                        "items": items})
        with cl.lock:
            t = cl.templates.get((ns, name))
            if method == "DELETE" and t:
                del cl.templates[(ns, name)]
        if t is None:
            return self.send_status(404, "NotFound", "podtemplates \"%s\" not found" % name,
                                    {"name": name, "kind": "podtemplates"})
        return self.send_json(200, t)

    # --- attach and exec ---------------------------------------------------------------------
    def stream(self, ns, name, sub):
        cl, faults = self.server.cluster, self.server.faults
        if self.headers.get("Upgrade", "").lower() != "websocket":
            return self.send_status(400, "BadRequest", "Upgrade request required")
        offered = [p.strip() for p in self.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        proto = next((p for p in PROTOCOLS if p in offered), None)
        if proto is None:
            return self.send_status(400, "BadRequest",
                                    "no supported stream protocol offered (want one of %s)"
                                    % ", ".join(PROTOCOLS))
        p = cl.get_pod(ns, name)
        if p is None:
            return self.send_status(404, "NotFound", "pods \"%s\" not found" % name,
                                    {"name": name, "kind": "pods"})
        cname = self.qget("container") or p["spec"]["containers"][0]["name"]
        if cname not in [c["name"] for c in p["spec"]["containers"]]:
            return self.send_status(400, "BadRequest", "container %s is not valid for pod %s" %
                                    (cname, name))
        c = cl.container(ns, name)
        phase = p["status"].get("phase")
        if phase in ("Succeeded", "Failed") or (c and c.exited.is_set()):
            return self.send_status(400, "BadRequest", "cannot %s a container in a completed "
                                    "pod; current phase is %s" % (sub, phase or "Succeeded"))
        if c is None:
            return self.send_status(400, "BadRequest", "pod %s does not have a host assigned"
                                    % name if not p["spec"].get("nodeName") else
                                    "container \"%s\" in pod \"%s\" is waiting to start: "
                                    "ContainerCreating" % (cname, name))
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept_key(self.headers["Sec-WebSocket-Key"]))
        self.send_header("Sec-WebSocket-Protocol", proto)
        self.end_headers()
        self.wfile.flush()
        self.logged = 101
        self.close_connection = True
        ws = WebSocket(self.rfile, self.wfile, self.connection)
        if sub == "attach":
            self.attach(ws, c, proto, faults)
        else:
            self.exec_(ws, p, c, proto)

    def attach(self, ws, c, proto, faults):
        want_in = self.qget("stdin") in ("true", "1")
        want_out = self.qget("stdout") in ("true", "1")
        want_err = self.qget("stderr") in ("true", "1")
        drop = faults.take("drop_attach")
        done = threading.Event()
        eofs = set()

        def listener(ch, data):
            try:
                if ch == "exit":
                    ws.send_binary(b"\x03" + json.dumps({"metadata": {},
                                                         "status": "Success"}).encode())
                    ws.close()
                    done.set()
                elif data is not None and ((ch == 1 and want_out) or (ch == 2 and want_err)):
                    ws.send_binary(bytes([ch]) + data)
            except (Closed, OSError):
                done.set()
        with c.lock:
            if c.exited.is_set():
                ws.send_binary(b"\x03" + json.dumps({"metadata": {}, "status": "Success"}).encode())
                ws.close()
                return
            c.listeners.append(listener)
            owns_stdin = want_in and c.proc.stdin is not None and not c.stdin_taken
            if owns_stdin and getattr(c, "stdin_once", False):
                c.stdin_taken = True
        if drop:
            time.sleep(0.05)
            ws.drop()
            with c.lock:
                c.listeners.remove(listener)
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
                    if owns_stdin:
                        self._close_stdin(c)
        except (Closed, OSError, ValueError):
            pass
        finally:
            if owns_stdin:
                self._close_stdin(c)
            with c.lock:
                if listener in c.listeners:
                    c.listeners.remove(listener)

    def _close_stdin(self, c):
        if c.proc.stdin and not c.proc.stdin.closed:
            try:
                c.proc.stdin.close()
            except OSError:
                pass
        c.stdin_closed.set()

    def exec_(self, ws, p, c, proto):
        argv = self.q.get("command") or []
        if not argv:
            ws.send_binary(b"\x03" + json.dumps(status(400, "BadRequest",
                                                       "you must specify a command")).encode())
            return ws.close()
        images = self.server.cluster.images
        cand = os.path.join(images, image_basename(argv[0]))
        if os.access(cand, os.X_OK) and "/" not in argv[0]:
            argv = [cand] + argv[1:]
        c0 = p["spec"]["containers"][0]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOSTNAME": p["metadata"]["name"]}
        for e in c0.get("env", []) or []:
            if "value" in e:
                env[e["name"]] = e["value"]
        want_in = self.qget("stdin") in ("true", "1")
        try:
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE if want_in else
                                    subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
        except OSError as e:
            ws.send_binary(b"\x03" + json.dumps(status(500, "InternalError", "exec: %s" %
                                                       e)).encode())
            return ws.close()

        def pump(stream, ch):
            while True:
                data = os.read(stream.fileno(), 65536)
                if not data:
                    break
                try:
                    ws.send_binary(bytes([ch]) + data)
                except (Closed, OSError):
                    break
        pumps = [threading.Thread(target=pump, args=(s, ch), daemon=True)
                 for s, ch in ((proc.stdout, 1), (proc.stderr, 2))]
        for t in pumps:
            t.start()

        def reader():
            try:
                while True:
                    op, msg = ws.recv_message()
                    if msg and msg[0] == 0 and proc.stdin:
                        proc.stdin.write(msg[1:])
                        proc.stdin.flush()
                    elif msg and msg[0] == 255 and proc.stdin:
                        proc.stdin.close()
            except (Closed, OSError, ValueError):
                pass
            finally:
                if proc.stdin and not proc.stdin.closed:
                    try:
                        proc.stdin.close()
                    except OSError:
                        pass
        threading.Thread(target=reader, daemon=True).start()
        rc = proc.wait()
        for t in pumps:
            t.join(5)
        if rc == 0:
            st = {"metadata": {}, "status": "Success"}
        else:
            st = {"metadata": {}, "status": "Failure",
                  "message": "command terminated with non-zero exit code: exit status %d" % rc,
                  "reason": "NonZeroExitCode",
                  "details": {"causes": [{"reason": "ExitCode", "message": str(rc)}]}}
        try:
            ws.send_binary(b"\x03" + json.dumps(st).encode())
        except (Closed, OSError):
            pass
        ws.close()
