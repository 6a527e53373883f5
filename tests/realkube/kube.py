"""The tier's own view of the real cluster: the API with the admin's client certificate (or a
given bearer token), a recorder that watches every function pod come and go, and kubectl."""
import http.client
import json
import os
import ssl
import subprocess
import threading
import time
from urllib.parse import quote, urlparse


def kubectl(*args, stdin=None, timeout=120, check=True, env=None):
    """Runs kubectl with the tier's KUBECONFIG; returns the CompletedProcess (bytes)."""
    r = subprocess.run(["kubectl"] + list(args), input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout, env=env)
    if check and r.returncode != 0:
        raise AssertionError("kubectl %s: exit %d\nstdout: %s\nstderr: %s" % (
            " ".join(args), r.returncode, r.stdout.decode(errors="replace")[-3000:],
            r.stderr.decode(errors="replace")[-3000:]))
    return r


class ApiError(AssertionError):
    def __init__(self, method, path, status, body):
        super().__init__("%s %s: HTTP %d: %s" % (method, path, status, body))
        self.status, self.body = status, body


class Api:
    """Requests to the API server: the admin's client certificate, or `token`."""

    def __init__(self, server, ca, cert=None, key=None, token=None):
        u = urlparse(server)
        self.host, self.port = u.hostname, u.port or 443
        self.ctx = ssl.create_default_context(cafile=ca)
        if cert:
            self.ctx.load_cert_chain(cert, key)
        self.token = token
        self.ca = ca
        self.server = server

    def with_token(self, token):
        return Api(self.server, self.ca, token=token)

    def connect(self, timeout=30):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                           timeout=timeout)

    def request(self, method, path, body=None, content_type="application/json"):
        """(status, decoded JSON or text)."""
        conn = self.connect()
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            text = resp.read().decode(errors="replace")
        finally:
            conn.close()
        try:
            return resp.status, json.loads(text) if text else None
        except ValueError:
            return resp.status, text

    def call(self, method, path, body=None, ok=(200, 201)):
        status, obj = self.request(method, path, body)
        if status not in ok:
            raise ApiError(method, path, status, obj)
        return obj

    def get(self, path):
        return self.call("GET", path)

    def pods(self, ns, selector=None):
        q = "?labelSelector=" + quote(selector) if selector else ""
        return self.get("/api/v1/namespaces/%s/pods%s" % (ns, q))["items"]

    def events(self, ns):
        return self.get("/api/v1/namespaces/%s/events" % ns)["items"]

    def can(self, user, groups, ns, verb, resource, subresource="", group=""):
        """SubjectAccessReview: may `user` do this? (what the authorizer says now)."""
        attrs = {"namespace": ns, "verb": verb, "resource": resource, "group": group}
        if subresource:
            attrs["subresource"] = subresource
        r = self.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups, "resourceAttributes": attrs}})
        return bool(r["status"].get("allowed"))


class PodRecorder:
    """Watches the pods of one namespace from the moment it starts and keeps every event:
    which pods were created (their first state as created), how they changed and when they
    went. `mark()` then `pods_since(mark)` gives what one render did."""

    def __init__(self, api, ns):
        self.api, self.ns = api, ns
        self.events = []  # (monotonic time, type, pod object)
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.error = None
        lst = api.get("/api/v1/namespaces/%s/pods" % ns)
        self.rv = lst["metadata"]["resourceVersion"]
        self.known = {p["metadata"]["uid"] for p in lst["items"]}
        self.conn = None
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stopped.is_set():
            try:
                self.watch_once()
            except Exception as e:  # noqa: BLE001 (recorded; the tests read it)
                if self.stopped.is_set():
                    return
                self.error = "%s: %s" % (type(e).__name__, e)
                time.sleep(0.2)

    def watch_once(self):
        path = ("/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s&allowWatchBookmarks=true"
                "&timeoutSeconds=240" % (self.ns, self.rv))
        conn = self.api.connect(timeout=300)
        self.conn = conn
        conn.request("GET", path, headers={"Accept": "application/json"})
        resp = conn.getresponse()
        if resp.status == 410:
            self.relist()
            return
        if resp.status != 200:
            raise AssertionError("watch: HTTP %d %s" % (resp.status, resp.read()[:300]))
        while not self.stopped.is_set():
            line = resp.readline()
            if not line:
                return
            ev = json.loads(line)
            obj = ev["object"]
            if ev["type"] == "ERROR":
                if obj.get("code") == 410:
                    self.relist()
                    return
                raise AssertionError("watch error: %s" % obj)
            self.rv = obj["metadata"]["resourceVersion"]
            if ev["type"] == "BOOKMARK":
                continue
            with self.lock:
                self.events.append((time.monotonic(), ev["type"], obj))

    def relist(self):
        """After a 410 the watch starts again from a list, and what happened in between is
        only in the list: pods not seen get ADDED, pods seen and changed MODIFIED, pods seen
        and gone DELETED (their last known object), so no record ends half-way."""
        lst = self.api.get("/api/v1/namespaces/%s/pods" % self.ns)
        now = time.monotonic()
        with self.lock:
            last = self.last_objects()
            listed = set()
            for p in lst["items"]:
                uid = p["metadata"]["uid"]
                listed.add(uid)
                if uid not in last:
                    self.events.append((now, "ADDED", p))
                elif last[uid][1]["metadata"]["resourceVersion"] != p["metadata"]["resourceVersion"]:
                    self.events.append((now, "MODIFIED", p))
            for uid, (typ, obj) in last.items():
                if typ != "DELETED" and uid not in listed:
                    self.events.append((now, "DELETED", obj))
        self.rv = lst["metadata"]["resourceVersion"]

    def last_objects(self):
        """{uid: (type, object)} of every pod's last event (the lock held)."""
        return {o["metadata"]["uid"]: (t, o) for _, t, o in self.events}

    def caught_up(self):
        """Whether the events hold the state a list shows now: every pod seen is deleted or
        has its listed resourceVersion, and every listed pod was seen."""
        lst = self.api.get("/api/v1/namespaces/%s/pods" % self.ns)
        listed = {p["metadata"]["uid"]: p["metadata"]["resourceVersion"] for p in lst["items"]}
        with self.lock:
            last = self.last_objects()
        for uid, rv in listed.items():
            if uid not in last:
                if uid in self.known:  # there before the recorder, unchanged since
                    continue
                return False
            if int(last[uid][1]["metadata"]["resourceVersion"]) < int(rv):
                return False
        return all(t == "DELETED" or uid in listed for uid, (t, _) in last.items())

    def seen_uids(self):
        return {o["metadata"]["uid"] for _, _, o in self.events}

    def stop(self):
        self.stopped.set()
        try:
            if self.conn and self.conn.sock:
                self.conn.sock.shutdown(2)
        except OSError:
            pass

    def mark(self):
        with self.lock:
            return len(self.events)

    def settle(self, quiet=0.3, timeout=10):
        """Waits until no event arrived for `quiet` seconds and the events have caught up
        with a list of the pods made now (the watch lags, more under load: a quiet moment
        alone once left a render's pods recorded as still Running)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                last = self.events[-1][0] if self.events else 0
            if time.monotonic() - last >= quiet and self.caught_up():
                return
            time.sleep(0.05)

    def pods_since(self, mark):
        """{uid: {"name", "created": first object, "events": [(t, type, obj)],
        "deleted_at": t or None}} for every pod that appeared after mark."""
        if self.error:
            raise AssertionError("the pod watch failed: %s" % self.error)
        with self.lock:
            evs = list(self.events[mark:])
        out = {}
        for t, typ, obj in evs:
            uid = obj["metadata"]["uid"]
            if uid not in out:
                if typ != "ADDED":
                    continue
                out[uid] = {"name": obj["metadata"]["name"], "created": obj, "events": [],
                            "created_at": t, "deleted_at": None}
            rec = out[uid]
            rec["events"].append((t, typ, obj))
            rec["last"] = obj
            if typ == "DELETED":
                rec["deleted_at"] = t
        return out
