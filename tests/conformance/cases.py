"""The conformance cases: every kind of request krmpod makes, with the answers that matter to
it, run the same way against the real cluster (record.py) and against kubesim
(tests/kubesim_tests/test_conformance.py).

A case is a function case(target, rec). It talks to the cluster through `target` (the same
interface for both: an admin client, clients for the read-only and no-rights roles, a
namespace, and the few set-ups that differ, like a full ResourceQuota) and files every answer
with rec.step(name, request, answer, view=..., patterns=...). The view and patterns say how a
replay is compared with the recording (normalize.compare_step); they live here, with the
request, so that the data files hold only what the server said.
"""
import json
import threading
import time

# What krmpod sends (src/pod_spec.c): the locked-down function pod, with a shell command so
# that the same pod runs on the real cluster (busybox) and on kubesim (the host's sh).
BUSYBOX = "registry.local/busybox:1"
# The OOM case's image: kubesim's OOM fault is per image, so no other case may use it.
OOM_IMAGE = "registry.local/busybox:nonroot"
MISSING_IMAGE = "registry.local/nothere:1"
DELETE_BODY = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
               "propagationPolicy": "Background"}
WATCH_TIMEOUT_S = 60


def fn_pod(name, script, image=BUSYBOX, stdin=True, spec=None, container=None,
           generate=False, labels=None):
    c = {"name": "fn", "image": image, "imagePullPolicy": "IfNotPresent", "stdin": stdin,
         "stdinOnce": stdin, "tty": False, "env": [], "command": ["sh", "-c", script],
         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                       "limits": {"cpu": "1", "memory": "512Mi"}},
         "securityContext": {"allowPrivilegeEscalation": False, "privileged": False,
                             "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
         "terminationMessagePolicy": "FallbackToLogsOnError"}
    c.update(container or {})
    s = {"restartPolicy": "Never", "activeDeadlineSeconds": 300,
         "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False,
         "enableServiceLinks": False, "hostNetwork": False, "hostPID": False,
         "hostIPC": False,
         "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                             "seccompProfile": {"type": "RuntimeDefault"}},
         "containers": [c]}
    s.update(spec or {})
    md = {"generateName": name} if generate else {"name": name}
    md["labels"] = {"app.kubernetes.io/managed-by": "krmpod", "krmpod.dev/function": "true",
                    "krmpod.dev/network": "none"}
    md["labels"].update(labels or {})
    md["annotations"] = {"krmpod.dev/image": image}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": s}


def ctype(headers):
    v = headers.get("content-type")
    return v.replace(" ", "").lower() if v else None


def http_answer(a):
    out = {"code": a.code}
    ct = ctype(a.headers)
    if ct:
        out["content_type"] = ct
    out["body"] = a.json if a.json is not None else a.body
    return out


def attach_answer(head, msgs):
    out = {"code": head.code}
    if head.code == 101:
        out["protocol"] = head.headers.get("sec-websocket-protocol")
        out["messages"] = []
        for op, ch, payload in msgs:
            if op == "timeout":
                out["messages"].append(["timeout", ""])
                continue
            if ch == 3:
                try:
                    payload = json.loads(payload)
                except ValueError:
                    payload = payload.decode(errors="replace")
            elif isinstance(payload, bytes):
                payload = payload.decode(errors="replace")
            out["messages"].append([ch, payload])
    else:
        ct = ctype(head.headers)
        if ct:
            out["content_type"] = ct
        try:
            out["body"] = json.loads(head.body) if head.body else ""
        except ValueError:
            out["body"] = head.body
    return out


class Recorder:
    """Collects a case's steps."""

    def __init__(self, case, target):
        self.case, self.target = case, target
        self.steps, self.measurements, self.names = [], {}, {}
        self.lock = threading.Lock()

    def step(self, name, request, answer, view="exact", patterns=None):
        with self.lock:
            self.steps.append({"name": name, "request": request, "answer": answer,
                               "view": view, "patterns": patterns or []})

    def generated(self, literal, placeholder):
        self.names[literal] = placeholder


class PodWatch:
    """A watch on one pod from a resourceVersion, in a thread, until DELETED or timeout."""

    def __init__(self, target, name, rv, timeout=WATCH_TIMEOUT_S, bookmarks=True):
        self.path = ("/api/v1/namespaces/%s/pods?watch=1&fieldSelector=metadata.name%%3D%s"
                     "&resourceVersion=%s%s&timeoutSeconds=%d" % (
                         target.ns, name, rv, "&allowWatchBookmarks=true" if bookmarks else "",
                         timeout))
        self.target, self.events, self.times = target, [], []
        self.cond = threading.Condition()
        self.answer = None
        self.done = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        def on(ev, t):
            with self.cond:
                self.events.append(ev)
                self.times.append(t)
                self.cond.notify_all()
            return ev.get("type") == "DELETED"
        try:
            self.answer, _ = self.target.admin.watch(self.path, on, timeout=WATCH_TIMEOUT_S + 10)
        finally:
            with self.cond:
                self.done = True
                self.cond.notify_all()

    def wait(self, pred, what, timeout=30):
        """The first event whose object satisfies pred (waiting for it)."""
        end = time.monotonic() + timeout
        with self.cond:
            i = 0
            while True:
                while i < len(self.events):
                    ev = self.events[i]
                    if ev.get("type") != "ERROR" and pred(ev["object"]):
                        return ev["object"]
                    i += 1
                left = end - time.monotonic()
                if left <= 0 or self.done:
                    raise AssertionError("%s: no event with %s; events: %s" % (
                        self.path, what, [(e["type"], (e["object"].get("status") or {}))
                                          for e in self.events]))
                self.cond.wait(left)

    def finish(self, rec, name="watch"):
        self.thread.join(WATCH_TIMEOUT_S + 15)
        if self.times:
            rec.measurements[name + ": seconds from the first event"] = [
                [e["type"], round(at - self.times[0], 2)] for e, at in zip(self.events,
                                                                          self.times)]
        out = {"code": self.answer.code if self.answer else None}
        if self.answer is not None:
            ct = ctype(self.answer.headers)
            if ct:
                out["content_type"] = ct
            if self.answer.code != 200:
                out["body"] = self.answer.json if self.answer.json is not None else \
                    self.answer.body
        out["events"] = self.events
        rec.step(name, {"method": "GET", "path": self.path}, out, view="pod")


# --- predicates on pods ----------------------------------------------------------------------

def cstate(pod, container="fn", key="containerStatuses"):
    for cs in (pod.get("status") or {}).get(key) or []:
        if cs.get("name") == container:
            return next(iter(cs.get("state") or {}), None), cs.get("state")
    return None, None


def running(container="fn", key="containerStatuses"):
    return lambda p: cstate(p, container, key)[0] == "running"


def terminated(container="fn", key="containerStatuses"):
    return lambda p: cstate(p, container, key)[0] == "terminated"


def waiting_with(*reasons):
    return lambda p: cstate(p)[0] == "waiting" and (cstate(p)[1]["waiting"] or {}).get(
        "reason") in reasons


def phase_in(*phases):
    return lambda p: (p.get("status") or {}).get("phase") in phases


def pod_path(t, name, sub=""):
    return "/api/v1/namespaces/%s/pods/%s%s" % (t.ns, name, sub)


def attach_path(t, name, container="fn", stdin=True):
    return pod_path(t, name, "/attach?container=%s&stdin=%s&stdout=true&stderr=true&tty=false"
                    % (container, "true" if stdin else "false"))


def log_path(t, name):
    return pod_path(t, name, "/log?container=fn&limitBytes=16777216")


# --- steps ----------------------------------------------------------------------------------

def create(t, rec, pod, step="create", client=None, view="pod", patterns=None):
    path = "/api/v1/namespaces/%s/pods?fieldValidation=Strict" % t.ns
    a = (client or t.admin).request("POST", path, pod)
    if a.code == 201 and "generateName" in pod["metadata"]:
        rec.generated(a.json["metadata"]["name"], pod["metadata"]["generateName"] + "<gen>")
    rec.step(step, {"method": "POST", "path": path, "body": pod}, http_answer(a), view=view,
             patterns=patterns)
    return a


def attach(t, rec, name, step="attach", stdin=b"", container="fn", client=None,
           protocols=("v5.channel.k8s.io",), patterns=None, read=True):
    path = attach_path(t, name, container, stdin is not None)
    head, msgs = (client or t.admin).attach(path, protocols=protocols, stdin=stdin, read=read)
    rec.step(step, {"method": "GET", "path": path, "protocols": list(protocols),
                    "stdin": stdin.decode() if stdin is not None else None},
             attach_answer(head, msgs), view="status", patterns=patterns)


def get(t, rec, path, step, client=None, view="exact", patterns=None):
    a = (client or t.admin).request("GET", path)
    rec.step(step, {"method": "GET", "path": path}, http_answer(a), view=view,
             patterns=patterns)
    return a


def delete(t, rec, name, step="delete"):
    path = pod_path(t, name)
    a = t.admin.request("DELETE", path, DELETE_BODY)
    rec.step(step, {"method": "DELETE", "path": path, "body": DELETE_BODY}, http_answer(a),
             view="pod")
    return a


def lifecycle(t, rec, pod, body):
    """Creates pod, watches it from the create's resourceVersion, runs body(watch), deletes
    the pod and files the watch's events."""
    a = create(t, rec, pod)
    assert a.code == 201, "%s: create: %s" % (rec.case, a)
    name = a.json["metadata"]["name"]
    w = PodWatch(t, name, a.json["metadata"]["resourceVersion"])
    try:
        body(name, w)
    finally:
        delete(t, rec, name)
        w.finish(rec)
    return name


# --- the cases -------------------------------------------------------------------------------

def case_version(t, rec):
    """GET /version: what `krmpod doctor` and the attach failure path read."""
    get(t, rec, "/version", "version", view="keys")


def case_pod_success(t, rec):
    """A function that reads stdin, writes stdout and stderr, exits 0: create, watch, attach
    (v5, stdin then FF 00), log, delete."""
    def body(name, w):
        w.wait(running(), "container running")
        attach(t, rec, name, stdin=b"hello\n")
        w.wait(terminated(), "container terminated")
        w.wait(phase_in("Succeeded", "Failed"), "terminal phase")
        get(t, rec, log_path(t, name), "log")
    # (the sleep: stdout and stderr are separate pipes; without it their order in the log
    # and on the stream is a race, on a real runtime as on kubesim)
    lifecycle(t, rec, fn_pod("cf-ok", "cat; sleep 0.1; echo done >&2"), body)


def case_pod_failure(t, rec):
    """Exit 3 with FallbackToLogsOnError: reason Error, the log tail as the message."""
    def body(name, w):
        w.wait(running(), "container running")
        attach(t, rec, name, stdin=b"x\n")
        w.wait(phase_in("Succeeded", "Failed"), "terminal phase")
    lifecycle(t, rec, fn_pod("cf-fail", "cat; sleep 0.1; echo bad >&2; exit 3"), body)


def case_pod_deleted_while_running(t, rec):
    """DELETE (grace 0) of a running pod; then it is gone for GET and attach."""
    def body(name, w):
        w.wait(running(), "container running")
    name = lifecycle(t, rec, fn_pod("cf-del", "cat"), body)
    get(t, rec, pod_path(t, name), "get after delete")
    attach(t, rec, name, step="attach after delete")


def case_pod_exited_before_attach(t, rec):
    """A container that ends before anyone attached: the attach upgrade still succeeds and
    the kubelet's error comes on channel 3; the output is in the log only."""
    def body(name, w):
        w.wait(terminated(), "container terminated")
        w.wait(phase_in("Succeeded", "Failed"), "terminal phase")
        attach(t, rec, name, stdin=b"late\n")
        get(t, rec, log_path(t, name), "log")
    lifecycle(t, rec, fn_pod("cf-early", "echo early; sleep 0.1; echo early-err >&2"), body)
    rec.steps[-1]["view"] = "pod-short"


def case_pod_unschedulable(t, rec):
    """A pod no node fits: PodScheduled False/Unschedulable; no log, no attach."""
    def body(name, w):
        w.wait(lambda p: any(c.get("type") == "PodScheduled" and c.get("status") == "False"
                             for c in (p.get("status") or {}).get("conditions") or []),
               "PodScheduled False")
        get(t, rec, log_path(t, name), "log")
        attach(t, rec, name)
    lifecycle(t, rec, fn_pod("cf-unsched", "cat", spec={
        "nodeSelector": {"krmpod.dev/conformance": "nowhere"}}), body)


PULL_PATTERNS = [
    # containerd's reason for a failed pull depends on the registry (here: no DNS name)
    (r'(failed to resolve reference \\?"[^"\\]+\\?"): .*', r"\1: <cause>"),
]


def case_pod_image_pull_failure(t, rec):
    """An image that cannot be pulled: ErrImagePull, then ImagePullBackOff; the log and the
    attach fail."""
    def body(name, w):
        w.wait(waiting_with("ErrImagePull"), "ErrImagePull")
        get(t, rec, log_path(t, name), "log", patterns=PULL_PATTERNS)
        attach(t, rec, name)
        w.wait(waiting_with("ImagePullBackOff"), "ImagePullBackOff", timeout=40)
        get(t, rec, log_path(t, name), "log in back-off", patterns=PULL_PATTERNS)
    lifecycle(t, rec, fn_pod("cf-nopull", "cat", image=MISSING_IMAGE), body)
    for s in rec.steps:
        s["patterns"] = PULL_PATTERNS


def case_pod_deadline(t, rec):
    """activeDeadlineSeconds passes while the function runs: Failed/DeadlineExceeded."""
    def body(name, w):
        w.wait(running(), "container running")
        w.wait(lambda p: (p.get("status") or {}).get("reason") == "DeadlineExceeded",
               "DeadlineExceeded", timeout=30)
        w.wait(terminated(), "container terminated", timeout=30)
    lifecycle(t, rec, fn_pod("cf-deadline", "cat", spec={"activeDeadlineSeconds": 2}), body)
    # When the kubelet acts on the deadline relative to its relists varies from run to run:
    # only the end of the story is compared.
    rec.steps[-1]["view"] = "pod-final"


START_ERROR_PATTERNS = [(r"(exec: \\?\"/no/such/binary\\?\"): [^\"]*", r"\1: <cause>"),
                        (r"^failed to create containerd task: .*\"/no/such/binary\".*",
                         "<start error naming /no/such/binary>")]


def case_pod_start_error(t, rec):
    """A command that does not exist: terminated/StartError, exit code 128."""
    def body(name, w):
        w.wait(phase_in("Failed"), "phase Failed")
    pod = fn_pod("cf-starterr", "", container={"command": ["/no/such/binary"]})
    lifecycle(t, rec, pod, body)
    for s in rec.steps:
        s["patterns"] = START_ERROR_PATTERNS


def case_pod_config_error(t, rec):
    """An environment variable from a ConfigMap that does not exist:
    CreateContainerConfigError."""
    def body(name, w):
        w.wait(waiting_with("CreateContainerConfigError"), "CreateContainerConfigError")
    pod = fn_pod("cf-cfgerr", "cat", container={"env": [{"name": "X", "valueFrom": {
        "configMapKeyRef": {"name": "missing", "key": "x"}}}]})
    lifecycle(t, rec, pod, body)


# containerd reports an OOM kill as OOMKilled, or as Error when it handles the exit before
# the OOM event (seen on the real node under load); exit code 137 either way.
OOM_PATTERNS = [(r"^(OOMKilled|Error)$", "<OOMKilled or Error>")]


def case_pod_oom(t, rec):
    """A container past its memory limit: terminated/OOMKilled, exit code 137."""
    t.oom(True)
    try:
        def body(name, w):
            w.wait(phase_in("Failed", "Succeeded"), "terminal phase", timeout=40)
        # (exec: the memory hog is the container's process itself, as a function is)
        lifecycle(t, rec, fn_pod("cf-oom", "exec tail /dev/zero", image=OOM_IMAGE,
                                 stdin=False, container={
                                     "resources": {"requests": {"cpu": "100m", "memory": "16Mi"},
                                                   "limits": {"cpu": "1", "memory": "16Mi"}}}),
                  body)
    finally:
        t.oom(False)
    for s in rec.steps:
        s["patterns"] = OOM_PATTERNS
    rec.steps[-1]["view"] = "pod-short"


def case_pod_init_container(t, rec):
    """An init container fed over attach (krmpod's mounts helper), then the function."""
    def body(name, w):
        w.wait(running("mounts", "initContainerStatuses"), "init container running")
        attach(t, rec, name, step="attach init", container="mounts", stdin=b"files\n")
        w.wait(running(), "container running", timeout=30)
        attach(t, rec, name, stdin=b"hello\n")
        w.wait(phase_in("Succeeded", "Failed"), "terminal phase")
    pod = fn_pod("cf-init", "cat")
    init = json.loads(json.dumps(pod["spec"]["containers"][0]))
    init.update({"name": "mounts", "command": ["sh", "-c", "cat >/dev/null; echo unpacked >&2"]})
    pod["spec"]["initContainers"] = [init]
    lifecycle(t, rec, pod, body)


def case_errors(t, rec):
    """The error answers: 404, 400 strict decoding, 422 invalid, 409, 403 RBAC, 401, 410
    expired watch, attach refusals (403 RBAC, 404, 400 bad container, 403 for an unknown
    stream protocol), v4 chosen when only v4 is offered."""
    get(t, rec, pod_path(t, "cf-missing"), "get missing", view="status")
    get(t, rec, log_path(t, "cf-missing"), "log missing", view="status")
    a = t.admin.request("DELETE", pod_path(t, "cf-missing"), DELETE_BODY)
    rec.step("delete missing", {"method": "DELETE", "path": pod_path(t, "cf-missing"),
                                "body": DELETE_BODY}, http_answer(a), view="status")
    bad = fn_pod("cf-strict", "cat")
    bad["spec"]["containers"][0]["bogus"] = True
    create(t, rec, bad, step="create unknown field", view="status")
    bad = fn_pod("cf-invalid", "cat")
    bad["spec"]["containers"][0]["name"] = "FN"
    bad["spec"]["restartPolicy"] = "Sometimes"
    create(t, rec, bad, step="create invalid", view="status")
    create(t, rec, fn_pod("cf-forbidden-", "cat", generate=True), step="create forbidden",
           client=t.client("none"), view="status")
    get(t, rec, pod_path(t, "cf-missing"), "unauthorized", client=t.client("bad"),
        view="status")
    a = create(t, rec, fn_pod("cf-dup", "cat"), step="create first")
    assert a.code == 201, a
    w = PodWatch(t, "cf-dup", a.json["metadata"]["resourceVersion"])
    create(t, rec, fn_pod("cf-dup", "cat"), step="create conflict", view="status")
    try:
        w.wait(running(), "container running")
        attach(t, rec, "cf-dup", step="attach forbidden", client=t.client("readonly"))
        attach(t, rec, "cf-missing", step="attach missing")
        attach(t, rec, "cf-dup", step="attach bad container", container="nope")
        attach(t, rec, "cf-dup", step="attach unknown protocol",
               protocols=("v9.channel.k8s.io",))
        attach(t, rec, "cf-dup", step="attach v4 only", protocols=("v4.channel.k8s.io",),
               stdin=None, read=False)
        evs = []

        def on(ev, _):
            evs.append(ev)
        # resourceVersion 1 is older than any the server still has
        path = ("/api/v1/namespaces/%s/pods?watch=1&fieldSelector=metadata.name%%3Dcf-dup"
                "&resourceVersion=1&allowWatchBookmarks=true&timeoutSeconds=10" % t.ns)
        a, ended = t.admin.watch(path, on, timeout=20)
        out = {"code": a.code, "content_type": ctype(a.headers), "events": evs}
        if a.code != 200:
            out["body"] = a.json if a.json is not None else a.body
        rec.step("watch expired", {"method": "GET", "path": path}, out, view="pod")
    finally:
        delete(t, rec, "cf-dup", step="delete dup")
        w.finish(rec, "watch dup")


def case_reads(t, rec):
    """The other reads: `krmpod gc`'s list, PodTemplates, access reviews, NetworkPolicies."""
    a = create(t, rec, fn_pod("cf-listed", "cat", labels={"conformance.krmpod.dev/case":
                                                           "reads"}))
    assert a.code == 201, a
    w = PodWatch(t, "cf-listed", a.json["metadata"]["resourceVersion"])
    try:
        w.wait(running(), "container running")
        # gc's selector, narrowed to this case's pod (the other cases run meanwhile)
        get(t, rec, "/api/v1/namespaces/%s/pods?labelSelector=krmpod.dev%%2Ffunction%%3Dtrue"
            "%%2Cconformance.krmpod.dev%%2Fcase%%3Dreads" % t.ns, "list by label", view="list")
    finally:
        delete(t, rec, "cf-listed")
        w.finish(rec)
    tp = "/api/v1/namespaces/%s/podtemplates/" % t.ns
    get(t, rec, tp + "krmpod", "podtemplate", view="keys")
    get(t, rec, tp + "missing", "podtemplate missing", view="status")
    get(t, rec, tp + "krmpod", "podtemplate forbidden", client=t.client("none"),
        view="status")
    for who, verb, sub in (("admin", "create", "attach"), ("readonly", "get", "log"),
                           ("readonly", "create", "attach"), ("none", "get", "")):
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"namespace": t.ns, "verb": verb,
                                                "resource": "pods", "subresource": sub}}}
        if not sub:
            del body["spec"]["resourceAttributes"]["subresource"]
        path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        a = t.client(who).request("POST", path, body)
        rec.step("access review %s %s %s" % (who, verb, sub or "pods"),
                 {"method": "POST", "path": path, "body": body}, http_answer(a),
                 # status.reason names the RoleBinding, different on kubesim (no RBAC
                 # objects): not compared, krmpod reads only `allowed`
                 view=("fields", ("kind", "apiVersion", "status.allowed", "spec")))
    np = "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies" % t.ns
    get(t, rec, np, "networkpolicies", view="list")
    get(t, rec, np, "networkpolicies forbidden", client=t.client("none"), view="status")


QUOTA_PATTERNS = [(r"cf-quota-[a-z0-9]{5}", "cf-quota-<gen>"), (r"pods=\d+", "pods=<n>")]


def case_quota(t, rec):
    """A pod create refused by a full ResourceQuota (krmpod waits for room)."""
    t.quota(True)
    try:
        create(t, rec, fn_pod("cf-quota-", "cat", generate=True), step="create over quota",
               view="status", patterns=QUOTA_PATTERNS)
    finally:
        t.quota(False)


def case_watch_bookmark(t, rec):
    """An idle watch with allowWatchBookmarks and a short timeoutSeconds: a BOOKMARK comes
    before the clean end."""
    a = create(t, rec, fn_pod("cf-idle", "cat"))
    assert a.code == 201, a
    w = PodWatch(t, "cf-idle", a.json["metadata"]["resourceVersion"])
    try:
        p = w.wait(running(), "container running")
        evs = []
        path = ("/api/v1/namespaces/%s/pods?watch=1&fieldSelector=metadata.name%%3Dcf-idle"
                "&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=4"
                % (t.ns, p["metadata"]["resourceVersion"]))
        t0 = time.monotonic()
        ans, ended = t.admin.watch(path, lambda ev, at: evs.append((ev, at - t0)), timeout=20)
        rec.measurements["idle watch"] = {
            "timeoutSeconds": 4, "ended_after_s": round(time.monotonic() - t0, 2),
            "events_after_s": [[e["type"], round(at, 2)] for e, at in evs]}
        rec.step("idle watch", {"method": "GET", "path": path},
                 {"code": ans.code, "content_type": ctype(ans.headers), "ended": ended,
                  "events": [e for e, _ in evs]}, view="pod")
    finally:
        delete(t, rec, "cf-idle")
        w.finish(rec)


CASES = [case_version, case_pod_success, case_pod_failure, case_pod_deleted_while_running,
         case_pod_exited_before_attach, case_pod_unschedulable, case_pod_image_pull_failure,
         case_pod_deadline, case_pod_start_error, case_pod_config_error, case_pod_init_container,
         case_errors, case_reads, case_watch_bookmark, case_pod_oom]
# Cases that change what every pod create gets (a full quota): run alone, after.
SERIAL_CASES = [case_quota]


def case_name(fn):
    return fn.__name__[len("case_"):]


def run_cases(target, cases=None, parallel=True, alongside=None):
    """Runs the cases (all by default); returns ({name: Recorder}, {name: traceback}).
    Parallel cases run in threads (pod starts overlap, as they would on a busy cluster),
    with `alongside` (a callable, if given) in one more thread; serial ones after."""
    chosen = cases or [case_name(c) for c in CASES + SERIAL_CASES]
    out, errors = {}, {}

    def one(fn):
        rec = Recorder(case_name(fn), target)
        try:
            fn(target, rec)
        except Exception as e:  # noqa: BLE001 (reported per case)
            import traceback
            errors[rec.case] = "".join(traceback.format_exception(e))
        out[rec.case] = rec
    par = [c for c in CASES if case_name(c) in chosen]
    threads = [threading.Thread(target=one, args=(c,)) for c in par] if parallel else []
    if alongside:
        threads.append(threading.Thread(target=alongside))
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if not parallel:
        for c in par:
            one(c)
    for c in SERIAL_CASES:
        if case_name(c) in chosen:
            one(c)
    return out, errors


# --- the exit -> status delay ---------------------------------------------------------------



def measure_exit_delay(t, runs=(0.2, 0.5, 0.8, 1.1, 1.4), parallel=False):
    """For containers that run `runs` seconds, the delay between the process's exit (its own
    /proc/uptime stamp, on this machine's clock) and the watch event showing it terminated,
    and between that and the terminal phase. Returns a list of dicts (seconds)."""
    results = [None] * len(runs)

    def one(i, x):
        name = "cf-delay-%d" % i
        script = "cut -d' ' -f1 /proc/uptime; sleep %s; cut -d' ' -f1 /proc/uptime" % x
        a = t.admin.request("POST", "/api/v1/namespaces/%s/pods" % t.ns,
                            fn_pod(name, script, stdin=False))
        assert a.code == 201, a
        seen = {}

        def on(ev, _):
            now = time.clock_gettime(time.CLOCK_BOOTTIME)
            p = ev["object"]
            if cstate(p)[0] == "running":
                seen.setdefault("running", now)
            if cstate(p)[0] == "terminated":
                seen.setdefault("terminated", now)
            if phase_in("Succeeded", "Failed")(p):
                seen.setdefault("phase", now)
                return True
        t.admin.watch("/api/v1/namespaces/%s/pods?watch=1&fieldSelector=metadata.name%%3D%s"
                      "&resourceVersion=%s&timeoutSeconds=30" % (
                          t.ns, name, a.json["metadata"]["resourceVersion"]), on, timeout=40)
        log = t.admin.request("GET", pod_path(t, name, "/log")).body.split()
        t.admin.request("DELETE", pod_path(t, name), DELETE_BODY)
        start, end = float(log[0]), float(log[1])
        results[i] = {"runs_s": x,
                      "start_to_running_s": round(seen["running"] - start, 3)
                      if "running" in seen else None,
                      "exit_to_terminated_s": round(seen["terminated"] - end, 3),
                      "terminated_to_phase_s": round(seen["phase"] - seen["terminated"], 3)}
    if parallel:
        ths = [threading.Thread(target=one, args=(i, x)) for i, x in enumerate(runs)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
    else:
        for i, x in enumerate(runs):
            one(i, x)
    return results
