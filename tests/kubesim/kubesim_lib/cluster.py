"""The cluster state: pods and pod templates, resourceVersions and watch events, and the
kubelet that runs each pod's container as a local process with real timing semantics."""
import copy
import datetime
import os
import random
import re
import shutil
import signal
import string
import subprocess
import tempfile
import threading
import time
import uuid

HISTORY = 2000  # watch events kept for resourceVersion replay


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# reference grammar (simplified): lowercase path components, optional :tag and @digest
IMAGE_RE = re.compile(r"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*"
                      r"(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?"
                      r"(?:@sha256:[a-f0-9]{64}|@[A-Za-z0-9:]+)?$")


def image_basename(image):
    last = image.rsplit("/", 1)[-1]
    return last.split("@")[0].split(":")[0]


def status(code, reason, message, details=None):
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": code}
    if details:
        s["details"] = details
    return s


class Faults:
    def __init__(self):
        self.data = {}
        self.lock = threading.Lock()

    def set(self, data):
        with self.lock:
            self.data = copy.deepcopy(data or {})

    def get(self, key, default=None):
        with self.lock:
            return copy.deepcopy(self.data.get(key, default))

    def take(self, key):
        """Decrements a counter fault; True if it fired."""
        with self.lock:
            n = self.data.get(key, 0)
            if n and n > 0:
                self.data[key] = n - 1
                return True
            return False

    def take_http_error(self, method, path):
        with self.lock:
            for e in self.data.get("http_errors", []):
                if e.get("count", 0) <= 0:
                    continue
                if e.get("method") and e["method"] != method:
                    continue
                if e.get("path_contains") and e["path_contains"] not in path:
                    continue
                e["count"] -= 1
                return dict(e)
        return None

    def image_in(self, key, image):
        names = self.get(key, []) or []
        return image in names or image_basename(image) in names

    def snapshot(self):
        with self.lock:
            return copy.deepcopy(self.data)


class Container:
    """The running process of a pod's first container, its log and its attachments."""

    def __init__(self, pod):
        self.pod = pod
        self.proc = None
        self.log = bytearray()
        self.lock = threading.Lock()
        self.listeners = []  # callables(channel, data|None): None = EOF of that channel
        self.stdin_taken = False
        self.out_eof = threading.Event()
        self.err_eof = threading.Event()
        self.exited = threading.Event()
        self.stdin_closed = threading.Event()


class Cluster:
    def __init__(self, images, faults):
        self.images = images
        self.faults = faults
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 1
        self.pods = {}        # (ns, name) -> pod dict
        self.containers = {}  # (ns, name) -> Container
        self.templates = {}   # (ns, name) -> podtemplate dict
        self.events = []      # (rv, type, ns, obj)
        self.oldest_rv = 1
        self.tmp = tempfile.mkdtemp(prefix="kubesim-pods-")

    # --- resource versions and events --------------------------------------------------
    def _bump(self, obj):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return self.rv

    def _emit(self, etype, ns, obj):
        self.events.append((self.rv, etype, ns, copy.deepcopy(obj)))
        if len(self.events) > HISTORY:
            drop = self.events[: len(self.events) - HISTORY]
            self.oldest_rv = drop[-1][0] + 1
            del self.events[: len(self.events) - HISTORY]
        self.cond.notify_all()

    def events_after(self, rv):
        return [e for e in self.events if e[0] > rv]

    # --- pods -----------------------------------------------------------------------------
    def create_pod(self, ns, pod):
        with self.lock:
            md = pod.setdefault("metadata", {})
            if not md.get("name"):
                gen = md.get("generateName")
                if not gen:
                    return None, status(422, "Invalid", "Pod \"\" is invalid: metadata.name: "
                                        "Required value: name or generateName is required")
                md["name"] = gen + "".join(random.choice(string.ascii_lowercase + string.digits)
                                           for _ in range(5))
            key = (ns, md["name"])
            if key in self.pods:
                return None, status(409, "AlreadyExists",
                                    "pods \"%s\" already exists" % md["name"],
                                    {"name": md["name"], "kind": "pods"})
            md["namespace"] = ns
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now_iso()
            spec = pod.setdefault("spec", {})
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            for c in spec.get("containers", []):
                c.setdefault("terminationMessagePolicy", "File")
                c.setdefault("imagePullPolicy", "IfNotPresent")
            pod["status"] = {"phase": "Pending", "qosClass": "Burstable",
                             "conditions": []}
            pod["apiVersion"], pod["kind"] = "v1", "Pod"
            self._bump(pod)
            self.pods[key] = pod
            self._emit("ADDED", ns, pod)
            threading.Thread(target=self._kubelet, args=(ns, md["name"], md["uid"]),
                             daemon=True).start()
            return copy.deepcopy(pod), None

    def get_pod(self, ns, name):
        with self.lock:
            p = self.pods.get((ns, name))
            return copy.deepcopy(p) if p else None

    def list_pods(self, ns, match):
        with self.lock:
            return [copy.deepcopy(p) for (pns, _), p in sorted(self.pods.items())
                    if (ns is None or pns == ns) and match(p)], str(self.rv)

    def _update(self, ns, name, uid, fn):
        """Applies fn(pod) to the live pod (if it is still the same pod) and emits MODIFIED."""
        with self.lock:
            p = self.pods.get((ns, name))
            if p is None or p["metadata"]["uid"] != uid:
                return False
            fn(p)
            self._bump(p)
            self._emit("MODIFIED", ns, p)
            return True

    def delete_pod(self, ns, name):
        with self.lock:
            p = self.pods.pop((ns, name), None)
            c = self.containers.pop((ns, name), None)
            if p is None:
                return None
            p["metadata"]["deletionTimestamp"] = now_iso()
            p["metadata"]["deletionGracePeriodSeconds"] = 0
            self._bump(p)
            self._emit("DELETED", ns, p)
        if c:
            self._kill(c)
        return p

    def _kill(self, c):
        if c.proc and c.proc.poll() is None:
            try:
                os.killpg(c.proc.pid, signal.SIGKILL)
            except OSError:
                pass

    def reset(self):
        with self.lock:
            keys = list(self.pods)
            self.templates.clear()
        for ns, name in keys:
            self.delete_pod(ns, name)

    def shutdown(self):
        self.reset()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- the kubelet ----------------------------------------------------------------------
    def _set_waiting(self, p, cname, reason, message):
        st = p["status"]
        st["containerStatuses"] = [{"name": cname, "ready": False, "restartCount": 0,
                                    "image": p["spec"]["containers"][0]["image"], "imageID": "",
                                    "started": False,
                                    "state": {"waiting": {"reason": reason, "message": message}}}]

    def _kubelet(self, ns, name, uid):
        pod = self.get_pod(ns, name)
        if pod is None:
            return
        spec = pod["spec"]
        c0 = spec["containers"][0]
        cname, image = c0["name"], c0["image"]
        created = time.monotonic()
        time.sleep(self.faults.get("schedule_latency_ms", 0) / 1000.0)
        if self.faults.get("unschedulable"):
            def unsched(p):
                p["status"]["conditions"] = [{
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/1 nodes are available: 1 Insufficient cpu.",
                    "lastTransitionTime": now_iso(), "lastProbeTime": None}]
            self._update(ns, name, uid, unsched)
            return

        def scheduled(p):
            p["spec"]["nodeName"] = "kubesim-node"
            p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                          "lastTransitionTime": now_iso(), "lastProbeTime": None}]
            p["status"]["hostIP"] = "127.0.0.1"
            p["status"]["podIP"] = "10.244.0.%d" % random.randint(2, 250)
            p["status"]["startTime"] = now_iso()
            self._set_waiting(p, cname, "ContainerCreating", "")
        if not self._update(ns, name, uid, scheduled):
            return
        prog = os.path.join(self.images, image_basename(image))
        if not IMAGE_RE.match(image):
            self._update(ns, name, uid, lambda p: self._set_waiting(
                p, cname, "InvalidImageName",
                "Failed to apply default image tag \"%s\": couldn't parse image name \"%s\": "
                "invalid reference format" % (image, image)))
            return
        if self.faults.image_in("pull_fail_images", image) or not os.access(prog, os.X_OK):
            msg = ("Failed to pull image \"%s\": rpc error: code = NotFound desc = failed to "
                   "pull and unpack image \"%s\": not found" % (image, image))
            self._update(ns, name, uid, lambda p: self._set_waiting(p, cname, "ErrImagePull", msg))
            time.sleep(1.0)
            self._update(ns, name, uid, lambda p: self._set_waiting(
                p, cname, "ImagePullBackOff", "Back-off pulling image \"%s\"" % image))
            return
        if self.faults.image_in("config_error_images", image):
            self._update(ns, name, uid, lambda p: self._set_waiting(
                p, cname, "CreateContainerConfigError", "secret \"missing\" not found"))
            return
        time.sleep(self.faults.get("start_latency_ms", 0) / 1000.0)
        self._start(ns, name, uid, spec, c0, created)

    def _start(self, ns, name, uid, spec, c0, created):
        c = Container((ns, name))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOSTNAME": name}
        for e in c0.get("env", []) or []:
            if "value" in e:
                env[e["name"]] = e["value"]
        workdir = os.path.join(self.tmp, "%s_%s" % (ns, name))
        os.makedirs(workdir, exist_ok=True)
        prog = os.path.join(self.images, image_basename(c0["image"]))
        want_stdin = bool(c0.get("stdin"))
        with self.lock:
            if (ns, name) not in self.pods or self.pods[(ns, name)]["metadata"]["uid"] != uid:
                return
            c.proc = subprocess.Popen([prog] + list(c0.get("args") or []),
                                      stdin=subprocess.PIPE if want_stdin else subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env=env, cwd=workdir, start_new_session=True)
            c.stdin_once = bool(c0.get("stdinOnce"))
            self.containers[(ns, name)] = c
        started = now_iso()

        def running(p):
            p["status"]["phase"] = "Running"
            p["status"]["conditions"] = [
                {"type": t, "status": "True", "lastTransitionTime": started,
                 "lastProbeTime": None}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")]
            p["status"]["containerStatuses"] = [{
                "name": c0["name"], "ready": True, "restartCount": 0, "started": True,
                "image": c0["image"], "imageID": "kubesim://" + c0["image"],
                "containerID": "kubesim://%s" % uuid.uuid4().hex,
                "state": {"running": {"startedAt": started}}}]
        self._update(ns, name, uid, running)
        for stream, ch, ev in ((c.proc.stdout, 1, c.out_eof), (c.proc.stderr, 2, c.err_eof)):
            threading.Thread(target=self._pump, args=(c, stream, ch, ev), daemon=True).start()
        deadline = spec.get("activeDeadlineSeconds")
        oom = self.faults.image_in("oom_images", c0["image"])
        threading.Thread(target=self._wait, args=(ns, name, uid, c, c0, started, created,
                                                  deadline, oom), daemon=True).start()

    def _pump(self, c, stream, ch, ev):
        fd = stream.fileno()
        while True:
            data = os.read(fd, 65536)
            with c.lock:
                if data:
                    c.log += data
                for fn in list(c.listeners):
                    fn(ch, data or None)
            if not data:
                break
        ev.set()

    def _wait(self, ns, name, uid, c, c0, started, created, deadline, oom):
        reason = None
        oom_at = None
        while c.proc.poll() is None:
            if oom and oom_at is None and (c.stdin_closed.is_set() or
                                           time.monotonic() - created > 0.2):
                oom_at = time.monotonic()
            if oom_at is not None:
                reason = "OOMKilled"
                os.killpg(c.proc.pid, signal.SIGKILL)
            if deadline is not None and time.monotonic() - created >= deadline:
                reason = "DeadlineExceeded"
                os.killpg(c.proc.pid, signal.SIGKILL)
            time.sleep(0.01)
        rc = c.proc.wait()
        c.out_eof.wait(5)
        c.err_eof.wait(5)
        code = 128 + (-rc) if rc < 0 else rc
        if reason == "OOMKilled":
            code = 137
        finished = now_iso()
        with c.lock:
            log = bytes(c.log)

        def terminated(p):
            cs = p["status"]["containerStatuses"][0]
            term = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                    "startedAt": started, "finishedAt": finished,
                    "containerID": cs.get("containerID", "")}
            if reason == "OOMKilled":
                term["reason"] = "OOMKilled"
            if code != 0 and c0.get("terminationMessagePolicy") == "FallbackToLogsOnError":
                lines = log.decode(errors="replace").splitlines()[-80:]
                term["message"] = "\n".join(lines)[-2048:]
            cs["state"] = {"terminated": term}
            cs["ready"], cs["started"] = False, False
            p["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
            for cond in p["status"]["conditions"]:
                if cond["type"] in ("Ready", "ContainersReady"):
                    cond["status"], cond["reason"] = "False", "PodCompleted"
            if reason == "DeadlineExceeded":
                p["status"]["phase"] = "Failed"
                p["status"]["reason"] = "DeadlineExceeded"
                p["status"]["message"] = ("Pod was active on the node longer than the specified "
                                          "deadline")
        c.exited.set()
        self._update(ns, name, uid, terminated)
        with c.lock:
            for fn in list(c.listeners):
                fn("exit", None)

    def container(self, ns, name):
        with self.lock:
            return self.containers.get((ns, name))
