"""The cluster state: pods and pod templates, resourceVersions and watch events, and the
kubelet that runs each pod's init containers (in order) and then its containers as local
processes, with real timing semantics, emptyDir volumes and graceful deletion.

The kubelet's relist: a real kubelet learns that a container started or exited only at its
next relist (every second), and only then does the pod status change. kubesim does the same:
what its processes do is the runtime's truth (Container.proc, .exited, PodRuntime.waiting),
and what the status shows is a snapshot of it taken at the next tick of a node-wide clock
(`_relist`, the `seen_*` fields). A container whose process has exited still shows running
until then; the pod's terminal phase follows one relist after its containers' terminated
states (the kubelet holds the phase back until the pod is cleaned up). The period is
`relist_period_ms` (the --relist-period-ms flag, 1000 by default, or the fault of that name);
0 makes every change visible at once (still in that order)."""
import copy
import datetime
import errno
import os
import random
import re
import selectors
import shutil
import signal
import string
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from . import validation
from .validation import status  # noqa: F401 (re-exported)

HISTORY = 2000  # watch events kept for resourceVersion replay
# The first resourceVersion: older ones are too old to watch from, as on a real API server
# whose watch cache starts after the cluster's first objects.
RV_START = 1000
NODE = "kubesim-node"
NODE_LABELS = {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux",
               "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
               "beta.kubernetes.io/arch": "amd64"}
NODE_SELECTOR_MISMATCH = ("0/1 nodes are available: 1 node(s) didn't match Pod's node "
                          "affinity/selector. no new claims to deallocate, preemption: 0/1 "
                          "nodes are available: 1 Preemption is not helpful for scheduling.")
SETPRIV = ["setpriv", "--bounding-set=-dac_override,-fowner", "--"]


# The API server's clock, as an offset from this machine's in seconds: a test that moves it
# back plays a client whose clock runs ahead by as much (POST /kubesim/clock). Every time
# kubesim writes (creationTimestamp, managedFields, the kubelet's times) and its Date header
# follow it.
CLOCK = {"offset": 0}


def now_iso():
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
        seconds=CLOCK["offset"])
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# reference grammar (simplified): lowercase path components, optional :tag and @digest
IMAGE_RE = re.compile(r"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*"
                      r"(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?"
                      r"(?:@sha256:[a-f0-9]{64}|@[A-Za-z0-9:]+)?$")


def image_basename(image):
    last = image.rsplit("/", 1)[-1]
    return last.split("@")[0].split(":")[0]


def expand(text, env):
    """Kubernetes $(VAR) expansion: $(NAME) becomes env[NAME] when NAME is defined (else it
    stays as written), $$ is an escaped $."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            end = text.find(")", i + 2)
            if end < 0:
                out.append(text[i:])
                break
            name = text[i + 2:end]
            out.append(env[name] if name in env else text[i:end + 1])
            i = end + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


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

    def take_http_error(self, method, path, query=None):
        return self._take_matching("http_errors", method, path, query or {})

    def take_http_delay(self, method, path):
        """The delay (s) of the next matching entry of http_delays, or 0."""
        d = self._take_matching("http_delays", method, path)
        return d.get("ms", 0) / 1000.0 if d else 0

    def _take_matching(self, key, method, path, query=None):
        with self.lock:
            for e in self.data.get(key, []):
                if e.get("count", 0) <= 0:
                    continue
                if e.get("method") and e["method"] != method:
                    continue
                if e.get("path_contains") and e["path_contains"] not in path:
                    continue
                if any((query or {}).get(k, [None])[0] != v
                       for k, v in (e.get("query") or {}).items()):
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


class Volume:
    def __init__(self, name, source, path):
        self.name, self.path = name, path
        self.type = next(iter(source), "emptyDir")
        self.saved_modes = {}  # path -> mode, while made read-only in place


class Container:
    """One container's process, its log and its attachments."""

    def __init__(self, rt, spec, init):
        self.rt = rt
        self.pod = (rt.ns, rt.name)
        self.name = spec["name"]
        self.spec = spec
        self.init = init
        self.proc = None
        self.log = bytearray()
        self.lock = threading.Lock()
        self.stdin_lock = threading.Lock()
        self.listeners = []  # callables(channel, data|None): None = EOF of that channel
        self.stdin_taken = False
        self.stdin_once = bool(spec.get("stdinOnce"))
        self.out_eof = threading.Event()
        self.err_eof = threading.Event()
        self.exited = threading.Event()   # the process has exited (the runtime knows)
        self.stdin_closed = threading.Event()
        # What the pod status shows (set by the kubelet's relist): running, then terminated.
        self.seen_running = False
        self.seen_exit = threading.Event()
        self.container_id = "kubesim://%s" % uuid.uuid4().hex
        self.mounts = []  # [(mountPath, hostDir, readOnly)]
        # In its own PID namespace (own_pid_namespace): the unshare process is c.proc, the
        # container's PID 1 its child.
        self.pidns = False
        self.started_at = None
        self.started_mono = None  # time.monotonic() at the start (start_status_lag_ms)
        self.finished_at = None
        self.exit_code = None
        self.reason = None
        self.message = None
        self.oom = False
        self.env, self.cwd, self.mounts, self.drop_caps = {}, None, [], False


class PodRuntime:
    """What the kubelet knows about one pod."""

    def __init__(self, ns, name, uid, spec, root):
        self.ns, self.name, self.uid, self.spec, self.dir = ns, name, uid, spec, root
        self.created = time.monotonic()
        self.volumes = {}
        self.containers = {}   # name -> Container, once started
        self.waiting = {}      # name -> (reason, message) for a container that cannot start
        self.execs = set()     # Popen of exec sessions
        self.sandbox_ready = False
        self.initialized = not spec.get("initContainers")
        # What the status shows (the last relist's snapshot), and the relist bookkeeping.
        self.sandbox_seen = False
        self.waiting_seen = {}
        self.relist_pending = False
        self.done_seen = False          # the status shows every container finished
        self.terminal_published = False  # ... and, one relist later, the terminal phase
        self.ip = None
        self.deadline_exceeded = False
        self.deleting = False
        self.stopped = threading.Event()   # the kubelet starts nothing more
        self.kubelet_done = threading.Event()
        self.finalized = False

    def all_procs(self):
        procs = [c.proc for c in self.containers.values() if c.proc is not None]
        return procs + list(self.execs)


def _kill_group(proc, sig):
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass


def _walk(path):
    if not os.path.isdir(path) or os.path.islink(path):
        yield path
        return
    for root, dirs, files in os.walk(path):
        yield root
        for f in files:
            yield os.path.join(root, f)
        for d in dirs:
            p = os.path.join(root, d)
            if os.path.islink(p):
                yield p


def _make_readonly(path, saved=None):
    for p in _walk(path):
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if os.path.islink(p):
            continue
        if saved is not None and p not in saved:
            saved[p] = st.st_mode & 0o7777
        os.chmod(p, st.st_mode & 0o7777 & ~0o222)


def force_rmtree(path):
    for root, dirs, _ in os.walk(path):
        for d in dirs:
            p = os.path.join(root, d)
            if not os.path.islink(p):
                try:
                    os.chmod(p, 0o700)
                except OSError:
                    pass
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass
    shutil.rmtree(path, ignore_errors=True)


def _setpriv_works():
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return False
    try:
        return subprocess.run(SETPRIV + ["true"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Cluster:
    def __init__(self, images, faults, relist_period_ms=1000, pull_backoff_ms=10000):
        self.images = images if isinstance(images, list) else [images]
        self.faults = faults
        self.relist_default_ms = relist_period_ms
        self.pull_backoff_default_ms = pull_backoff_ms
        self.clock0 = time.monotonic()  # the relist clock ticks from here
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = RV_START
        self.pods = {}        # (ns, name) -> pod dict
        self.runtimes = {}    # (ns, name) -> PodRuntime
        self.templates = {}   # (ns, name) -> podtemplate dict
        self.networkpolicies = {}  # (ns, name) -> NetworkPolicy dict (stored only)
        self.secrets = {}     # (ns, name) -> Secret dict (stored only)
        self.kevents = {}     # (ns, name) -> core/v1 Event dict (the kubelet's Started)
        self.events = []      # (rv, type, ns, kind, obj)
        self.oldest_rv = RV_START + 1
        self.tmp = tempfile.mkdtemp(prefix="kubesim-pods-")
        os.chmod(self.tmp, 0o755)
        self.root = os.geteuid() == 0
        self.setpriv = _setpriv_works()

    def find_image(self, name):
        """The fixture executable standing in for an image (or a command name), or None."""
        base = image_basename(name)
        for d in self.images:
            p = os.path.join(d, base)
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
        return None

    # --- the kubelet's relist ----------------------------------------------------------
    def relist_period(self):
        """Seconds between two relists (the fault `relist_period_ms` overrides the flag)."""
        ms = self.faults.get("relist_period_ms")
        return max(0.0, float(self.relist_default_ms if ms is None else ms)) / 1000.0

    def pull_backoff(self):
        """Seconds from ErrImagePull to ImagePullBackOff: the kubelet retries a failed pull
        after its first back-off (10 s), and says ImagePullBackOff from then on."""
        ms = self.faults.get("pull_backoff_ms")
        return max(0.0, float(self.pull_backoff_default_ms if ms is None else ms)) / 1000.0

    def _next_tick(self, period):
        n = int((time.monotonic() - self.clock0) / period) + 1
        return self.clock0 + n * period

    def _request_relist(self, rt):
        """Something changed in the runtime: the status shows it at the next relist (at once
        with a period of 0). Requests before that tick share it."""
        period = self.relist_period()
        if period <= 0:
            self._relist(rt)
            return
        with self.lock:
            if rt.relist_pending:
                return
            rt.relist_pending = True
        tick = self._next_tick(period)

        def later():
            time.sleep(max(0.0, tick - time.monotonic()))
            with self.lock:
                rt.relist_pending = False
            self._relist(rt)
        threading.Thread(target=later, daemon=True).start()

    def _relist(self, rt):
        """Takes the runtime's state into the pod status (one MODIFIED event)."""
        again = False
        with self.lock:
            if not self._alive(rt):
                return
            if rt.done_seen or rt.deadline_exceeded:
                rt.terminal_published = True
            rt.sandbox_seen = rt.sandbox_ready
            rt.waiting_seen = dict(rt.waiting)
            reported = []
            lag = float(self.faults.get("start_status_lag_ms") or 0) / 1000.0
            for c in rt.containers.values():
                if c.exited.is_set():
                    if not c.seen_exit.is_set():
                        reported.append(c)
                elif c.proc is not None and not c.seen_running:
                    # a process that ended and is not yet reaped is not running: the
                    # runtime would say it exited (its own relist follows the reaping)
                    hidden = (c.started_mono or 0) + lag - time.monotonic()
                    if hidden > 0:  # shown by a relist once the lag is over
                        threading.Timer(hidden, self._relist, (rt,)).start()
                    elif c.proc.poll() is None and not self._oom_at_once(c):
                        c.seen_running = True
            for c in reported:
                c.seen_exit.set()
            self._refresh(rt)
            if self._finished(rt) and not rt.done_seen:
                rt.done_seen = True
                again = not rt.terminal_published
        if again:  # the terminal phase comes with the relist after
            self._request_relist(rt)

    def _oom_at_once(self, c):
        """A container the oom fault kills without stdin: a real one reaches its limit in
        milliseconds, before any relist sees it running (kubesim kills it 0.2 s after the
        pod started, which a loaded machine stretches past a relist tick)."""
        return not c.spec.get("stdin") and self.faults.image_in("oom_images", c.spec["image"])

    def _finished(self, rt):
        """Whether the status shows every container of the pod finished (or a failed init
        container, after which nothing more starts)."""
        for cspec in rt.spec.get("initContainers") or []:
            c = rt.containers.get(cspec["name"])
            if c is None or not c.seen_exit.is_set():
                return False
            if c.exit_code != 0:
                return True
        return all(rt.containers.get(cs["name"]) is not None and
                   rt.containers[cs["name"]].seen_exit.is_set()
                   for cs in rt.spec["containers"])

    # --- resource versions and events --------------------------------------------------
    def _bump(self, obj):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        # the time of the write, by the API server's clock, as a real one records it per
        # manager; kubesim keeps one entry, the last write's
        obj["metadata"]["managedFields"] = [{"manager": "kubesim", "operation": "Update",
                                             "apiVersion": "v1", "time": now_iso(),
                                             "fieldsType": "FieldsV1", "fieldsV1": {}}]
        return self.rv

    def _emit(self, etype, ns, obj):
        self.events.append((self.rv, etype, ns, obj.get("kind"), copy.deepcopy(obj)))
        if len(self.events) > HISTORY:
            drop = self.events[: len(self.events) - HISTORY]
            self.oldest_rv = drop[-1][0] + 1
            del self.events[: len(self.events) - HISTORY]
        self.cond.notify_all()

    def _started_event(self, rt, cname, init):
        """The kubelet's `Started` event, recorded the moment the runtime started the
        container (a real kubelet does so right after StartContainer, up to a relist before
        the pod status shows it). Caller holds the lock."""
        pod = self.pods.get((rt.ns, rt.name))
        if pod is None:
            return
        name = "%s.%x" % (rt.name, random.getrandbits(60))
        ts = now_iso()
        ev = {"kind": "Event", "apiVersion": "v1",
              "metadata": {"name": name, "namespace": rt.ns, "creationTimestamp": ts},
              "involvedObject": {"kind": "Pod", "namespace": rt.ns, "name": rt.name,
                                 "uid": rt.uid, "apiVersion": "v1",
                                 "resourceVersion": pod["metadata"].get("resourceVersion", ""),
                                 "fieldPath": "spec.%s{%s}" % (
                                     "initContainers" if init else "containers", cname)},
              "reason": "Started", "message": "Started container %s" % cname,
              "source": {"component": "kubelet", "host": NODE},
              "firstTimestamp": ts, "lastTimestamp": ts, "count": 1, "type": "Normal",
              "eventTime": None, "reportingComponent": "kubelet", "reportingInstance": NODE}
        self._bump(ev)
        self.kevents[(rt.ns, name)] = ev
        self._emit("ADDED", rt.ns, ev)

    def list_kevents(self, ns, match):
        with self.lock:
            return [copy.deepcopy(e) for (ens, _), e in sorted(self.kevents.items())
                    if (ns is None or ens == ns) and match(e)], str(self.rv)

    def generate_name(self, md):
        """Fills metadata.name from generateName (5 random characters), as the API server
        does before admission; returns the name."""
        if not md.get("name") and md.get("generateName"):
            md["name"] = md["generateName"] + "".join(
                random.choice(string.ascii_lowercase + string.digits) for _ in range(5))
        return md.get("name")

    # --- pods -----------------------------------------------------------------------------
    def create_pod(self, ns, pod, dry_run=False):
        with self.lock:
            md = pod.setdefault("metadata", {})
            if not isinstance(md, dict):
                md = pod["metadata"] = {}
            name = self.generate_name(md)
            if md.get("namespace") not in (None, "", ns):
                return None, status(400, "BadRequest", "the namespace of the provided object "
                                    "does not match the namespace sent on the request")
            validation.default_pod_spec(pod.setdefault("spec", {}))
            errs = validation.validate_pod(pod, for_kubelet=True)
            if errs:
                return None, validation.invalid("Pod", name or "", errs)
            key = (ns, name)
            if key in self.pods:
                return None, status(409, "AlreadyExists", "pods \"%s\" already exists" % name,
                                    {"name": name, "kind": "pods"})
            md["namespace"] = ns
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now_iso()
            md.pop("resourceVersion", None)
            pod["status"] = {"phase": "Pending", "qosClass": validation.qos_class(pod["spec"])}
            pod["apiVersion"], pod["kind"] = "v1", "Pod"
            if dry_run:
                return copy.deepcopy(pod), None
            self._bump(pod)
            self.pods[key] = pod
            self._emit("ADDED", ns, pod)
            threading.Thread(target=self._kubelet, args=(ns, name, md["uid"]),
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

    MUTABLE_META = ("labels", "annotations", "ownerReferences", "finalizers",
                    "resourceVersion", "managedFields", "generation")

    def update_pod(self, ns, name, new):
        """A client's update (PATCH result): only what a real API server lets change on a
        pod: metadata labels/annotations/ownerReferences/finalizers, container images (which
        kubesim does not act on) and activeDeadlineSeconds. status is not touched."""
        with self.lock:
            p = self.pods.get((ns, name))
            if p is None:
                return None, status(404, "NotFound", "pods \"%s\" not found" % name,
                                    {"name": name, "kind": "pods"})
            md = new.get("metadata") if isinstance(new.get("metadata"), dict) else {}
            rv = md.get("resourceVersion")
            if rv and rv != p["metadata"]["resourceVersion"]:
                return None, status(409, "Conflict", "Operation cannot be fulfilled on pods "
                                    "\"%s\": the object has been modified; please apply your "
                                    "changes to the latest version and try again" % name,
                                    {"name": name, "kind": "pods"})
            for k in set(md) | set(p["metadata"]):
                if k not in self.MUTABLE_META and md.get(k) != p["metadata"].get(k):
                    return None, validation.invalid("Pod", name, [validation.FieldError(
                        "metadata." + k, "FieldValueInvalid", md.get(k),
                        "field is immutable")])
            spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
            old = copy.deepcopy(p["spec"])
            probe = copy.deepcopy(spec)
            for kind in ("containers", "initContainers"):
                for i, c in enumerate(probe.get(kind) or []):
                    olds = old.get(kind) or []
                    if isinstance(c, dict) and i < len(olds) and c.get("image"):
                        c["image"] = olds[i].get("image")
            ads_old, ads_new = old.pop("activeDeadlineSeconds", None), probe.pop(
                "activeDeadlineSeconds", None)
            if probe != old:
                return None, validation.invalid("Pod", name, [validation.FieldError(
                    "spec", "FieldValueForbidden", detail="pod updates may not change fields "
                    "other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
                    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
                    "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to "
                    "be set to 1 if it was previously negative)")])
            if ads_new != ads_old and (ads_new is None or (ads_old is not None and
                                                           ads_new > ads_old)):
                return None, validation.invalid("Pod", name, [validation.FieldError(
                    "spec.activeDeadlineSeconds", "FieldValueInvalid", ads_new,
                    "must be less than or equal to previous value")])
            for k in ("labels", "annotations", "ownerReferences", "finalizers"):
                if md.get(k) is None:
                    p["metadata"].pop(k, None)
                else:
                    p["metadata"][k] = copy.deepcopy(md[k])
            p["spec"] = copy.deepcopy(spec)
            rt = self.runtimes.get((ns, name))
            if rt is not None and ads_new is not None:
                rt.spec["activeDeadlineSeconds"] = ads_new
            self._bump(p)
            self._emit("MODIFIED", ns, p)
            return copy.deepcopy(p), None

    def _update(self, ns, name, uid, fn):
        """Applies fn(pod) to the live pod (if it is still the same pod) and emits MODIFIED
        when anything changed."""
        with self.lock:
            p = self.pods.get((ns, name))
            if p is None or p["metadata"]["uid"] != uid:
                return False
            before = copy.deepcopy(p)
            fn(p)
            if p != before:
                self._bump(p)
                self._emit("MODIFIED", ns, p)
            return True

    def _refresh(self, rt):
        return self._update(rt.ns, rt.name, rt.uid, lambda p: self._render(p, rt))

    def delete_pod(self, ns, name, grace=None):
        """Deletes a pod: at once when grace is 0 (or the pod never ran or has finished),
        else gracefully: deletionTimestamp is set, the processes get SIGTERM and SIGKILL after
        the grace period, and the pod object goes when they have all exited."""
        with self.lock:
            p = self.pods.get((ns, name))
            if p is None:
                return None
            rt = self.runtimes.get((ns, name))
            if grace is None:
                grace = p["spec"].get("terminationGracePeriodSeconds", 30)
            if (not p["spec"].get("nodeName") or
                    p["status"].get("phase") in ("Succeeded", "Failed")):
                grace = 0
            if grace > 0 and rt is not None:
                if p["metadata"].get("deletionTimestamp"):
                    return copy.deepcopy(p)
                when = (datetime.datetime.now(datetime.timezone.utc) +
                        datetime.timedelta(seconds=grace)).strftime("%Y-%m-%dT%H:%M:%SZ")
                p["metadata"]["deletionTimestamp"] = when
                p["metadata"]["deletionGracePeriodSeconds"] = grace
                self._bump(p)
                self._emit("MODIFIED", ns, p)
                rt.deleting = True
                rt.stopped.set()
                procs = rt.all_procs()
                out = copy.deepcopy(p)
            else:
                out = self._remove(ns, name)
                return out
        for proc in procs:
            _kill_group(proc, signal.SIGTERM)
        threading.Thread(target=self._grace_killer, args=(rt, grace), daemon=True).start()
        self._maybe_finalize(rt)
        return out

    def _remove(self, ns, name):
        """Removes the pod object now and kills what runs (lock held). As in the API server,
        the object is first updated with its deletionTimestamp (MODIFIED), then deleted."""
        p = self.pods[(ns, name)]
        if "deletionTimestamp" not in p["metadata"] or \
                p["metadata"].get("deletionGracePeriodSeconds") != 0:
            p["metadata"].setdefault("deletionTimestamp", now_iso())
            p["metadata"]["deletionGracePeriodSeconds"] = 0
            self._bump(p)
            self._emit("MODIFIED", ns, p)
        del self.pods[(ns, name)]
        rt = self.runtimes.pop((ns, name), None)
        self._bump(p)
        self._emit("DELETED", ns, p)
        if rt is not None:
            rt.deleting = True
            rt.stopped.set()
            rt.finalized = True
            for proc in rt.all_procs():
                _kill_group(proc, signal.SIGKILL)
            threading.Thread(target=self._cleanup, args=(rt,), daemon=True).start()
        return copy.deepcopy(p)

    def _grace_killer(self, rt, grace):
        end = time.monotonic() + grace
        while time.monotonic() < end and not rt.finalized:
            time.sleep(0.05)
        if not rt.finalized:
            for proc in rt.all_procs():
                _kill_group(proc, signal.SIGKILL)

    def _maybe_finalize(self, rt):
        """A gracefully deleted pod goes when nothing of it runs any more."""
        with self.lock:
            if not rt.deleting or rt.finalized:
                return
            if any(c.proc is not None and not c.exited.is_set() for c in rt.containers.values()):
                return
            if not rt.kubelet_done.is_set() and not rt.stopped.is_set():
                return
            key = (rt.ns, rt.name)
            p = self.pods.get(key)
            if p is None or p["metadata"]["uid"] != rt.uid:
                return
            # the kubelet reports the containers' final states before it removes the pod
            for c in rt.containers.values():
                if c.exited.is_set():
                    c.seen_exit.set()
            self._render(p, rt)
            self._remove(*key)

    def _cleanup(self, rt):
        for proc in rt.all_procs():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        force_rmtree(rt.dir)

    def age_pod(self, ns, name, seconds):
        """Moves a pod's timestamps `seconds` into the past, as if it had been created and had
        run that much earlier (its creation, its containers' start and finish, its
        conditions): for tests of what krmpod does with old pods. False when there is none."""
        def back(ts):
            if not ts:
                return ts
            t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")
            return (t - datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self.lock:
            p = self.pods.get((ns, name))
            if p is None:
                return False
            md = p["metadata"]
            md["creationTimestamp"] = back(md.get("creationTimestamp"))
            st = p.get("status") or {}
            for key in ("containerStatuses", "initContainerStatuses"):
                for cs in st.get(key) or []:
                    for state in (cs.get("state") or {}).values():
                        for k in ("startedAt", "finishedAt"):
                            if k in state:
                                state[k] = back(state[k])
            for c in st.get("conditions") or []:
                if "lastTransitionTime" in c:
                    c["lastTransitionTime"] = back(c["lastTransitionTime"])
            self._bump(p)
            for mf in md.get("managedFields") or []:
                mf["time"] = back(mf["time"])
            rt = self.runtimes.get((ns, name))
            for c in (rt.containers.values() if rt else ()):
                c.started_at, c.finished_at = back(c.started_at), back(c.finished_at)
            self._emit("MODIFIED", ns, p)
            return True

    def reset(self):
        with self.lock:
            for key in list(self.pods):
                self._remove(*key)
            for (ns, name), t in list(self.templates.items()):
                self.delete_template(ns, name)
            self.networkpolicies.clear()
            self.secrets.clear()

    def shutdown(self):
        self.reset()
        time.sleep(0.1)
        force_rmtree(self.tmp)

    def runtime(self, ns, name):
        with self.lock:
            return self.runtimes.get((ns, name))

    def container(self, ns, name, cname=None):
        with self.lock:
            rt = self.runtimes.get((ns, name))
            if rt is None:
                return None
            if cname is None:
                cname = rt.spec["containers"][0]["name"]
            return rt.containers.get(cname)

    # --- pod templates ----------------------------------------------------------------------
    def create_template(self, ns, t, dry_run=False):
        with self.lock:
            md = t.setdefault("metadata", {})
            if not isinstance(md, dict):
                md = t["metadata"] = {}
            name = self.generate_name(md)
            if md.get("namespace") not in (None, "", ns):
                return None, status(400, "BadRequest", "the namespace of the provided object "
                                    "does not match the namespace sent on the request")
            tmpl = t.get("template")
            if isinstance(tmpl, dict) and isinstance(tmpl.get("spec"), dict):
                validation.default_pod_spec(tmpl["spec"], for_pod=False)
            errs = validation.validate_template(t)
            if errs:
                return None, validation.invalid("PodTemplate", name or "", errs)
            if (ns, name) in self.templates:
                return None, status(409, "AlreadyExists",
                                    "podtemplates \"%s\" already exists" % name,
                                    {"name": name, "kind": "podtemplates"})
            md["namespace"] = ns
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now_iso()
            md.pop("resourceVersion", None)
            t["kind"], t["apiVersion"] = "PodTemplate", "v1"
            if dry_run:
                return copy.deepcopy(t), None
            self._bump(t)
            self.templates[(ns, name)] = t
            self._emit("ADDED", ns, t)
            return copy.deepcopy(t), None

    def replace_template(self, ns, name, t):
        with self.lock:
            old = self.templates.get((ns, name))
            if old is None:
                return None, status(404, "NotFound", "podtemplates \"%s\" not found" % name,
                                    {"name": name, "kind": "podtemplates"})
            md = t.setdefault("metadata", {})
            if md.get("name") != name:
                return None, status(400, "BadRequest", "the name of the object (%s) does not "
                                    "match the name on the URL (%s)" % (md.get("name"), name))
            rv = md.get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                return None, status(409, "Conflict", "Operation cannot be fulfilled on "
                                    "podtemplates \"%s\": the object has been modified; please "
                                    "apply your changes to the latest version and try again"
                                    % name, {"name": name, "kind": "podtemplates"})
            tmpl = t.get("template")
            if isinstance(tmpl, dict) and isinstance(tmpl.get("spec"), dict):
                validation.default_pod_spec(tmpl["spec"], for_pod=False)
            errs = validation.validate_template(t)
            if errs:
                return None, validation.invalid("PodTemplate", name, errs)
            for k in ("namespace", "uid", "creationTimestamp"):
                md[k] = old["metadata"][k]
            t["kind"], t["apiVersion"] = "PodTemplate", "v1"
            self._bump(t)
            self.templates[(ns, name)] = t
            self._emit("MODIFIED", ns, t)
            return copy.deepcopy(t), None

    def get_template(self, ns, name):
        with self.lock:
            t = self.templates.get((ns, name))
            return copy.deepcopy(t) if t else None

    def list_templates(self, ns, match):
        with self.lock:
            return [copy.deepcopy(t) for (tns, _), t in sorted(self.templates.items())
                    if (ns is None or tns == ns) and match(t)], str(self.rv)

    def delete_template(self, ns, name):
        with self.lock:
            t = self.templates.pop((ns, name), None)
            if t is None:
                return None
            self._bump(t)
            self._emit("DELETED", ns, t)
            return copy.deepcopy(t)

    # --- status ---------------------------------------------------------------------------
    def _container_status(self, rt, cspec, init, pod):
        """A container's status as the last relist saw it."""
        name = cspec["name"]
        c = rt.containers.get(name)
        cs = {"name": name, "image": cspec["image"], "imageID": "", "lastState": {},
              "ready": False, "restartCount": 0, "started": False}
        if c is not None and c.started_at and (c.seen_running or c.seen_exit.is_set()):
            cs["imageID"] = "kubesim://%s" % cspec["image"]
            cs["containerID"] = c.container_id
            if c.seen_exit.is_set():
                term = {"exitCode": c.exit_code, "reason": c.reason, "startedAt": c.started_at,
                        "finishedAt": c.finished_at, "containerID": c.container_id}
                if c.message:
                    term["message"] = c.message
                cs["state"] = {"terminated": term}
                cs["ready"] = init and c.exit_code == 0
            else:
                cs["state"] = {"running": {"startedAt": c.started_at}}
                cs["started"] = True
                cs["ready"] = not init
        else:
            reason, message = rt.waiting_seen.get(name, (None, None))
            if reason is None:
                reason = "PodInitializing" if init or not rt.initialized else \
                    "ContainerCreating"
            w = {"reason": reason}
            if message:
                w["message"] = message
            cs["state"] = {"waiting": w}
        mounts = []
        for m in cspec.get("volumeMounts") or []:
            vm = {"name": m["name"], "mountPath": m["mountPath"]}
            if m.get("readOnly"):
                vm["readOnly"] = True
                vm["recursiveReadOnly"] = "Disabled"
            mounts.append(vm)
        if mounts:
            cs["volumeMounts"] = mounts
        return cs

    def _render(self, p, rt):
        """Recomputes the pod's status from what the last relist saw (the kubelet's status
        manager). Like the kubelet, it holds a terminal phase back until the relist after
        the one that saw the containers finish (rt.terminal_published); until then the
        phase stays what it was, while the conditions already say PodCompleted/PodFailed."""
        spec = p["spec"]
        st = p["status"]
        inits = spec.get("initContainers") or []
        mains = spec["containers"]
        if inits:
            st["initContainerStatuses"] = [self._container_status(rt, c, True, p) for c in inits]
        st["containerStatuses"] = [self._container_status(rt, c, False, p) for c in mains]
        if rt.sandbox_seen and rt.ip:
            st["podIP"], st["podIPs"] = rt.ip, [{"ip": rt.ip}]

        def terminated(c):
            return "terminated" in c["state"]
        init_failed = any(terminated(c) and c["state"]["terminated"]["exitCode"] != 0
                          for c in st.get("initContainerStatuses", []))
        main_cs = st["containerStatuses"]
        if rt.deadline_exceeded or init_failed:
            phase = "Failed"
        elif all(terminated(c) for c in main_cs):
            phase = "Succeeded" if all(c["state"]["terminated"]["exitCode"] == 0
                                       for c in main_cs) else "Failed"
        elif all("waiting" not in c["state"] for c in main_cs):
            phase = "Running"
        else:
            phase = "Pending"
        finished = phase in ("Succeeded", "Failed")
        if rt.deadline_exceeded:
            st["reason"] = "DeadlineExceeded"
            st["message"] = "Pod was active on the node longer than the specified deadline"
        st["phase"] = phase if not finished or rt.terminal_published else \
            st.get("phase") or "Pending"
        terminal = st["phase"] in ("Succeeded", "Failed")

        conds = []

        def cond(ctype, ok, reason=None, message=None, ok_reason=None):
            c = {"type": ctype, "status": "True" if ok else "False", "lastProbeTime": None}
            if not ok and reason:
                c["reason"] = reason
            if ok and ok_reason:
                c["reason"] = ok_reason
            if not ok and message:
                c["message"] = message
            conds.append(c)

        cond("PodReadyToStartContainers", rt.sandbox_seen and not terminal)
        incomplete = [c["name"] for c in st.get("initContainerStatuses", [])
                      if not (terminated(c) and c["state"]["terminated"]["exitCode"] == 0)]
        if init_failed:
            cond("Initialized", False, "PodCompleted")
        else:
            cond("Initialized", not incomplete, "ContainersNotInitialized",
                 "containers with incomplete status: [%s]" % " ".join(incomplete),
                 ok_reason="PodCompleted" if phase == "Succeeded" else None)
        unready = [c["name"] for c in main_cs if not c["ready"]]
        for ctype in ("Ready", "ContainersReady"):
            if finished:
                cond(ctype, False, "PodCompleted" if phase == "Succeeded" else "PodFailed")
            else:
                cond(ctype, not unready, "ContainersNotReady",
                     "containers with unready status: [%s]" % " ".join(unready))
        cond("PodScheduled", True)
        old = {c["type"]: c for c in st.get("conditions") or []}
        now = now_iso()
        for c in conds:
            prev = old.get(c["type"])
            c["lastTransitionTime"] = (prev.get("lastTransitionTime") or now) if (
                prev and prev.get("status") == c["status"]) else now
        st["conditions"] = conds

    # --- the kubelet ----------------------------------------------------------------------
    def _alive(self, rt):
        p = self.pods.get((rt.ns, rt.name))
        return p is not None and p["metadata"]["uid"] == rt.uid

    def _kubelet(self, ns, name, uid):
        pod = self.get_pod(ns, name)
        if pod is None or pod["metadata"]["uid"] != uid:
            return
        spec = pod["spec"]
        time.sleep(self.faults.get("schedule_latency_ms", 0) / 1000.0)
        selector = spec.get("nodeSelector") or {}
        labels = dict(NODE_LABELS, **(self.faults.get("node_labels") or {}))
        fits = all(labels.get(k) == v for k, v in selector.items())
        if self.faults.get("unschedulable") or not fits:
            message = NODE_SELECTOR_MISMATCH if not fits else (
                "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are "
                "available: 1 No preemption victims found for incoming pod.")

            def unsched(p):
                p["status"]["conditions"] = [{
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": message, "lastTransitionTime": now_iso(),
                    "lastProbeTime": None}]
            self._update(ns, name, uid, unsched)
            return
        rt = PodRuntime(ns, name, uid, spec,
                        os.path.join(self.tmp, "%s_%s_%s" % (ns, name, uid[:8])))
        with self.lock:
            if not self._alive(rt):
                return
            self.runtimes[(ns, name)] = rt
        try:
            self._run_pod(rt, pod)
        finally:
            rt.kubelet_done.set()
            self._maybe_finalize(rt)

    def _run_pod(self, rt, pod):
        spec = rt.spec
        os.makedirs(os.path.join(rt.dir, "volumes"))
        os.chmod(rt.dir, 0o755)
        for v in spec.get("volumes") or []:
            path = os.path.join(rt.dir, "volumes", v["name"])
            os.makedirs(path)
            os.chmod(path, 0o777)  # like the kubelet's emptyDir
            src = {k: val for k, val in v.items() if k != "name"}
            rt.volumes[v["name"]] = Volume(v["name"], src, path)
        rt.ip = "10.244.0.%d" % random.randint(2, 250)

        def scheduled(p):  # the scheduler binds the pod: one update
            p["spec"]["nodeName"] = NODE
            p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                          "lastProbeTime": None,
                                          "lastTransitionTime": now_iso()}]
        if not self._update(rt.ns, rt.name, rt.uid, scheduled):
            return

        def first_status(p):  # the kubelet's first status: containers being created
            st = p["status"]
            st["hostIP"], st["hostIPs"] = "127.0.0.1", [{"ip": "127.0.0.1"}]
            st["startTime"] = now_iso()
            self._render(p, rt)
        if not self._update(rt.ns, rt.name, rt.uid, first_status):
            return
        threading.Thread(target=self._monitor, args=(rt,), daemon=True).start()
        if rt.stopped.wait(self.faults.get("start_latency_ms", 0) / 1000.0):
            return
        # The kubelet creates the sandbox and starts the containers in one sync; the next
        # relist shows them running, together with the sandbox.
        rt.sandbox_ready = True
        for cspec in spec.get("initContainers") or []:
            c = self._start_container(rt, cspec, True, [cspec])
            if c is None:
                return
            # the kubelet starts the next container once a relist has seen this one exit
            while not c.seen_exit.wait(0.05):
                if rt.stopped.is_set():
                    return
            if rt.stopped.is_set() or c.exit_code != 0:
                rt.stopped.set()
                return
        rt.initialized = True
        for cspec in spec["containers"]:
            c = self._start_container(rt, cspec, False, spec["containers"])
            # like the kubelet: a postStart hook runs before the next container starts, in
            # the same sync (a failed start does not stop the others from starting)
            if c is not None and c.proc is not None:
                self._post_start(rt, c, cspec)
        self._request_relist(rt)

    def _post_start(self, rt, c, cspec):
        """Runs the container's postStart exec hook to its end, as the kubelet does before it
        starts the next container; a hook that fails gets the container killed (the kubelet's
        FailedPostStartHook)."""
        cmd = (((cspec.get("lifecycle") or {}).get("postStart") or {}).get("exec") or {}) \
            .get("command")
        if not cmd:
            return
        argv = [self.resolve_command(cmd[0], c.mounts)] + list(cmd[1:])
        try:
            proc = self.spawn(c, argv, False)
            _, errb = proc.communicate(timeout=30)
            rc = proc.returncode
        except (OSError, subprocess.TimeoutExpired) as e:
            rc, errb = -1, str(e).encode()
        if rc != 0:
            sys.stderr.write("kubesim: pod %s/%s: container %s: postStart hook failed (%s): "
                             "%s\n" % (rt.ns, rt.name, c.name, rc,
                                        errb.decode("utf-8", "replace")[:500]))
            self.kill_group(c.proc, 9)

    def _set_waiting(self, rt, cname, reason, message):
        rt.waiting[cname] = (reason, message)
        self._request_relist(rt)

    def _pod_env(self, pod, cspec):
        """The container's environment, or (None, error message) for a config error."""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOSTNAME": pod["metadata"]["name"]}
        defined = {}
        for src in cspec.get("envFrom") or []:
            for kind in ("configMapRef", "secretRef"):
                ref = src.get(kind)
                if ref is not None and not ref.get("optional"):
                    return None, "%s \"%s\" not found" % (
                        "configmap" if kind == "configMapRef" else "secret", ref.get("name"))
        for e in cspec.get("env") or []:
            n = e.get("name")
            if "value" in e or "valueFrom" not in e:
                v = expand(str(e.get("value") or ""), defined)
            else:
                vf = e["valueFrom"] or {}
                if "fieldRef" in vf:
                    v = field_value(pod, (vf["fieldRef"] or {}).get("fieldPath", ""))
                elif "resourceFieldRef" in vf:
                    v = resource_value(cspec, vf["resourceFieldRef"] or {})
                else:
                    kind = "configMapKeyRef" if "configMapKeyRef" in vf else "secretKeyRef"
                    ref = vf.get(kind) or {}
                    if ref.get("optional"):
                        continue
                    return None, "%s \"%s\" not found" % (
                        "configmap" if kind == "configMapKeyRef" else "secret", ref.get("name"))
            defined[n] = v
            env[n] = v
        return (env, defined), None

    def _argv(self, cspec, defined, mounts=()):
        """command (if any) replaces the image's entrypoint (the fixture executable)."""
        args = [expand(str(a), defined) for a in cspec.get("args") or []]
        cmd = [expand(str(a), defined) for a in cspec.get("command") or []]
        if not cmd:
            return [self.find_image(cspec["image"])] + args
        return [self.resolve_command(cmd[0], mounts)] + cmd[1:] + args

    @staticmethod
    def kill_group(proc, sig):
        _kill_group(proc, sig)

    def resolve_command(self, name, mounts=()):
        """A bare name: a fixture, else the host's PATH. An absolute path under one of the
        container's volumeMounts ([(mountPath, hostDir, ro)]): the file in the mapped host
        directory (the longest mountPath wins), as a runtime would find it there. Other
        paths are the host's."""
        if "/" not in name:
            p = self.find_image(name)
            if p:
                return p
            return shutil.which(name) or name
        best = None
        for mp, host, _ in mounts or ():
            mp = mp.rstrip("/") or "/"
            if (name == mp or name.startswith(mp + "/")) and (best is None or
                                                              len(mp) > len(best[0])):
                best = (mp, host)
        if best:
            return best[1] + name[len(best[0]):]
        return name

    def _prepare_mounts(self, rt, cspec, concurrent):
        """Maps the container's volumeMounts to host directories. A read-only mount is made
        read-only in place when no container running alongside writes to that volume, else
        it gets a read-only snapshot. Returns [(mountPath, hostPath, readOnly)]."""
        writers = {m["name"] for cs in concurrent for m in cs.get("volumeMounts") or []
                   if not m.get("readOnly")}
        out = []
        mounts = cspec.get("volumeMounts") or []
        for m in mounts:  # writers first: they get their volume back writable
            if not m.get("readOnly"):
                vol = rt.volumes[m["name"]]
                for path, mode in sorted(vol.saved_modes.items()):
                    try:
                        os.chmod(path, mode)
                    except OSError:
                        pass
                vol.saved_modes = {}
        for i, m in enumerate(mounts):
            vol = rt.volumes[m["name"]]
            host = vol.path
            if m.get("subPath"):
                host = os.path.join(vol.path, m["subPath"])
                try:
                    os.makedirs(host, exist_ok=True)
                except OSError:
                    pass
            ro = bool(m.get("readOnly"))
            if ro and m["name"] in writers:
                snap = os.path.join(rt.dir, "views", "%s-%d" % (cspec["name"], i))
                shutil.copytree(host, snap, symlinks=True)
                _make_readonly(snap)
                host = snap
            elif ro:
                _make_readonly(host, vol.saved_modes)
            out.append((m["mountPath"], host, ro))
        return out

    def _cwd(self, rt, cspec, mounts):
        wd = cspec.get("workingDir")
        if wd:
            best = None
            for mp, host, _ in mounts:
                mp_n = mp.rstrip("/") or "/"
                if wd == mp_n or wd.startswith(mp_n.rstrip("/") + "/"):
                    if best is None or len(mp_n) > len(best[0]):
                        best = (mp_n, host)
            if best:
                path = os.path.join(best[1], wd[len(best[0]):].lstrip("/"))
                try:
                    os.makedirs(path, exist_ok=True)
                except OSError:
                    pass
                if os.path.isdir(path):
                    return path
        path = os.path.join(rt.dir, "containers", cspec["name"])
        os.makedirs(path, exist_ok=True)
        os.chmod(path, 0o777)
        return path

    def _start_container(self, rt, cspec, init, concurrent):
        """Pulls (checks) the image, prepares the mounts and starts the process. Returns the
        Container, or None when it cannot start (its waiting reason is published)."""
        cname, image = cspec["name"], cspec["image"]
        if rt.stopped.is_set():
            return None
        if not IMAGE_RE.match(image):
            self._set_waiting(rt, cname, "InvalidImageName",
                              "Failed to apply default image tag \"%s\": couldn't parse image "
                              "name \"%s\": invalid reference format" % (image, image))
            return None
        if self.faults.image_in("pull_fail_images", image) or self.find_image(image) is None:
            pull_error = ("failed to pull and unpack image \"%s\": failed to resolve reference "
                          "\"%s\": %s: not found" % (image, image, image))
            self._set_waiting(rt, cname, "ErrImagePull", pull_error)
            if rt.stopped.wait(self.pull_backoff()):
                return None
            self._set_waiting(rt, cname, "ImagePullBackOff",
                              "Back-off pulling image \"%s\": ErrImagePull: %s"
                              % (image, pull_error))
            return None
        if self.faults.image_in("config_error_images", image):
            self._set_waiting(rt, cname, "CreateContainerConfigError",
                              "secret \"missing\" not found")
            return None
        pod = self.get_pod(rt.ns, rt.name)
        if pod is None:
            return None
        sc = dict(rt.spec.get("securityContext") or {})
        sc.update({k: v for k, v in (cspec.get("securityContext") or {}).items()
                   if k in ("runAsNonRoot", "runAsUser")})
        if sc.get("runAsNonRoot") and sc.get("runAsUser") == 0:
            self._set_waiting(rt, cname, "CreateContainerConfigError",
                              "container's runAsUser breaks non-root policy (pod: \"%s_%s(%s)\","
                              " container: %s)" % (rt.name, rt.ns, rt.uid, cname))
            return None
        got, err = self._pod_env(pod, cspec)
        if err:
            self._set_waiting(rt, cname, "CreateContainerConfigError", err)
            return None
        env, defined = got
        c = Container(rt, cspec, init)
        c.mounts = self._prepare_mounts(rt, cspec, concurrent)
        if c.mounts:
            env["KUBESIM_VOLUME_MAP"] = ",".join(
                "%s=%s%s" % (mp, host, ":ro" if ro else "") for mp, host, ro in c.mounts)
        c.env, c.cwd = env, self._cwd(rt, cspec, c.mounts)
        c.drop_caps = self.root and self.setpriv and any(ro for _, _, ro in c.mounts)
        argv = self._argv(cspec, defined, c.mounts)
        if own_pid_namespace(cspec):
            if not self.root:
                self._set_waiting(rt, cname, "CreateContainerError",
                                  "kubesim runs a container on its image's entrypoint beside "
                                  "krmpod's binary in its own PID namespace: run it as root")
                return None
            c.pidns = True
            argv = PIDNS + argv
        want_stdin = bool(cspec.get("stdin"))
        with self.lock:
            if rt.stopped.is_set() or not self._alive(rt):
                return None
            c.started_at = now_iso()
            c.started_mono = time.monotonic()
            try:
                c.proc = self.spawn(c, argv, want_stdin)
            except OSError as e:
                c.proc = None
                c.exit_code, c.reason = 128, "StartError"
                c.message = ("failed to create containerd task: failed to create shim task: "
                             "OCI runtime create failed: runc create failed: unable to start "
                             "container process: exec: \"%s\": %s: unknown"
                             % ((cspec.get("command") or argv)[0],
                                runc_exec_error((cspec.get("command") or argv)[0], e)))
                c.finished_at = c.started_at
                c.out_eof.set()
                c.err_eof.set()
                c.exited.set()
            rt.containers[cname] = c
            if c.proc is not None:
                self._started_event(rt, cname, init)
        self._request_relist(rt)
        if c.proc is None:
            return c
        threading.Thread(target=self._pump, args=(c,), daemon=True).start()
        threading.Thread(target=self._wait, args=(rt, c), daemon=True).start()
        return c

    def exec_argv(self, c, argv):
        """An exec session's argv in container c: in the container's PID namespace, with
        its /proc, when it has its own (nsenter into its PID 1, the unshare's child)."""
        if not c.pidns or c.proc is None:
            return argv
        if c.proc.poll() is not None:  # the runtime refuses an exec into an ended container
            raise OSError(errno.ESRCH, "container not running")
        # Until the child has exec'd the command, it may not have mounted its /proc yet:
        # an nsenter then would see the host's /proc. A runtime's exec waits for the
        # container's init likewise. The child is known to have exec'd once its command
        # line is no longer the unshare's.
        deadline = time.monotonic() + 2
        own = _read_proc(c.proc.pid, "cmdline")
        while True:
            kids = (_read_proc(c.proc.pid, "task/%d/children" % c.proc.pid) or b"").split()
            cmd = _read_proc(int(kids[0]), "cmdline") if kids else None
            if (cmd and cmd != own) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        if not kids:
            raise OSError(errno.ESRCH, "the container's PID 1 is gone")
        kids = [k.decode() for k in kids]
        return ["nsenter", "--target", kids[0], "--pid", "--mount", "--"] + list(argv)

    def spawn(self, c, argv, want_stdin):
        """Starts a process in container c's view (env, cwd, mounts): its main process or an
        exec session."""
        if c.drop_caps:
            # setpriv itself always starts, so a command that cannot be executed would end
            # as setpriv's exit code 127 and look like a process that ran: check it first,
            # as runc does before it starts anything.
            _check_executable(argv[0], c.env.get("PATH", ""))
            argv = SETPRIV + list(argv)
        return subprocess.Popen(argv, stdin=subprocess.PIPE if want_stdin else
                                subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=c.env, cwd=c.cwd,
                                start_new_session=True)

    def _pump(self, c):
        """Reads the container's stdout and stderr into its log and to its attachments. One
        thread polls both pipes, so that output keeps the order it was written in (two
        threads racing for the interpreter would not)."""
        streams = {c.proc.stdout.fileno(): (c.proc.stdout, 1, c.out_eof),
                   c.proc.stderr.fileno(): (c.proc.stderr, 2, c.err_eof)}
        sel = selectors.DefaultSelector()
        for fd in streams:
            sel.register(fd, selectors.EVENT_READ)
        # The fault runtime_cut: past this many bytes of stdout, the runtime drops the rest
        # from the log and the attachments alike (containerd closing a container's pipes at
        # its exit with the last chunk still in them).
        cut = (self.faults.get("runtime_cut_bytes")
               if self.faults.image_in("runtime_cut_images", c.spec["image"]) else None)
        out_seen = 0
        while streams:
            for key, _ in sel.select():
                fd = key.fd
                stream, ch, ev = streams[fd]
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    data = b""
                kept = data
                if cut is not None and ch == 1 and data:
                    kept = data[:max(0, cut - out_seen)]
                    out_seen += len(data)
                    if not kept:
                        continue
                with c.lock:
                    if kept:
                        c.log += kept
                    for fn in list(c.listeners):
                        fn(ch, kept or None)
                if not data:
                    sel.unregister(fd)
                    del streams[fd]
                    stream.close()
                    ev.set()
        sel.close()

    def _monitor(self, rt):
        """The pod's activeDeadlineSeconds and the OOM fault."""
        while not rt.finalized:
            deadline = rt.spec.get("activeDeadlineSeconds")
            with self.lock:
                if not self._alive(rt):
                    return
                cs = list(rt.containers.values())
            if (cs and all(c.exited.is_set() for c in cs) and rt.kubelet_done.is_set()):
                return
            now = time.monotonic()
            for c in cs:
                if (c.proc is not None and not c.exited.is_set() and not c.oom and
                        self.faults.image_in("oom_images", c.spec["image"]) and
                        (c.stdin_closed.is_set() or now - rt.created > 0.2)):
                    c.oom = True
                    _kill_group(c.proc, signal.SIGKILL)
            if (deadline is not None and not rt.deadline_exceeded and
                    now - rt.created >= deadline):
                # The kubelet kills everything and then reports the pod Failed with its
                # containers terminated, in one update.
                rt.stopped.set()
                for proc in rt.all_procs():
                    _kill_group(proc, signal.SIGKILL)
                for c in cs:
                    c.exited.wait(5)
                rt.deadline_exceeded = True
                self._request_relist(rt)
            time.sleep(0.01)

    def _wait(self, rt, c):
        rc = c.proc.wait()
        c.out_eof.wait(5)
        c.err_eof.wait(5)
        code = 128 + (-rc) if rc < 0 else rc
        # An image under the oom fault that exits on its own before the watcher's 10 ms tick
        # (cat, once its stdin closes) still hit its limit: report it OOMKilled too.
        if not c.oom and self.faults.image_in("oom_images", c.spec["image"]):
            c.oom = True
        if c.oom:
            code = 137
        with c.lock:
            log = bytes(c.log)
        c.exit_code = code
        c.reason = "OOMKilled" if c.oom else "Completed" if code == 0 else "Error"
        if code != 0 and c.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
            lines = log.decode(errors="replace").splitlines(True)[-80:]
            c.message = "".join(lines)[-2048:]
        c.finished_at = now_iso()
        c.exited.set()
        # The streams end with the process; the status shows it at the next relist.
        with c.lock:
            for fn in list(c.listeners):
                fn("exit", None)
        self._request_relist(rt)
        self._maybe_finalize(rt)


def _check_executable(path, search):
    """Raises the OSError an exec of path would, without executing it."""
    found = path if "/" in path else shutil.which(path, path=search)
    if found is None or not os.path.isfile(found):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    if not os.access(found, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)


# A container that runs its image's entrypoint (no command) beside krmpod's binary
# (/krmpod/bin: exec mode on the image's own entrypoint) gets its own PID namespace and /proc,
# as under a real runtime, so that `krmpod call` finds the function as PID 1. kubesim runs
# every other container as a plain process group.
PIDNS = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "--"]


def _read_proc(pid, name):
    """/proc/PID/NAME's bytes, or None when the process is gone."""
    try:
        with open("/proc/%d/%s" % (pid, name), "rb") as f:
            return f.read()
    except OSError:
        return None


def own_pid_namespace(cspec):
    return not cspec.get("command") and any(
        m.get("mountPath") == "/krmpod/bin" for m in cspec.get("volumeMounts") or [])


def runc_exec_error(path, e):
    """runc's words for a command it cannot execute."""
    if e.errno == 2 and "/" not in path:
        return "executable file not found in $PATH"
    if e.errno == 2:
        return "stat %s: no such file or directory" % path
    return (e.strerror or str(e)).lower()


def field_value(pod, path):
    md = pod.get("metadata", {})
    m = re.match(r"^metadata\.(labels|annotations)\['([^']*)'\]$", path)
    if m:
        return (md.get(m.group(1)) or {}).get(m.group(2), "")
    if path in ("metadata.labels", "metadata.annotations"):
        d = md.get(path.split(".")[1]) or {}
        return "\n".join('%s="%s"' % (k, d[k]) for k in sorted(d))
    simple = {"metadata.name": md.get("name"), "metadata.namespace": md.get("namespace"),
              "metadata.uid": md.get("uid"), "spec.nodeName": pod["spec"].get("nodeName"),
              "spec.serviceAccountName": pod["spec"].get("serviceAccountName"),
              "status.hostIP": pod["status"].get("hostIP"),
              "status.podIP": pod["status"].get("podIP"),
              "status.hostIPs": ",".join(i["ip"] for i in pod["status"].get("hostIPs", [])),
              "status.podIPs": ",".join(i["ip"] for i in pod["status"].get("podIPs", []))}
    return simple.get(path) or ""


def resource_value(cspec, ref):
    res = ref.get("resource", "")
    kind, _, what = res.partition(".")
    v = ((cspec.get("resources") or {}).get(kind) or {}).get(what)
    return str(v) if v is not None else "0"
