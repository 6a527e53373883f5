"""Normalising recorded answers (names, uids, times, resourceVersions, IPs become placeholders;
the shapes stay) and comparing a replay with a recording.

What is compared, per step (the case decides which view applies, see cases.py):
  - the HTTP status code and the Content-Type;
  - a Status body: every field, after normalisation (message included);
  - a Pod: the fields krmpod reads (`pod_view`), and the key shape of `metadata` and `status`
    minus the fields listed in IGNORED_POD_FIELDS (ones kubesim deliberately leaves out);
  - other JSON bodies: their key shape, or the values named by the case;
  - a watch: the sequence of (event type, view), consecutive repeats collapsed (the real
    server sometimes sends an update that changes nothing krmpod reads); with the view
    "pod-final" only its last three entries (where the order depends on timing), with
    "pod-short" without the moments a short-lived container may be seen running;
  - an attach: the handshake code and chosen protocol, then the messages as (channel,
    payload), a channel-3 Status compared like a Status body.
"""
import copy
import json
import re

TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
MICROTIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$")
UID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
IP_RE = re.compile(r"^\d+\.\d+\.\d+\.\d+$")
CONTAINER_ID_RE = re.compile(r"^[a-z]+://[0-9a-f]+$")
SA_USER_RE = re.compile(r"system:serviceaccount:[a-z0-9-]+:")
API_ACCESS_RE = re.compile(r"kube-api-access-[a-z0-9]{5}")
RV_QUERY_RE = re.compile(r"resourceVersion=\d+")
TOO_OLD_RE = re.compile(r"too old resource version: \d+ \(\d+\)")

# Pod fields kubesim does not produce, on purpose (krmpod reads none of them). A path is
# dotted keys with [] for list items.
IGNORED_POD_FIELDS = (
    "metadata.managedFields",           # server-side apply bookkeeping
    "metadata.generation",              # kubesim does not count spec generations
    "status.observedGeneration",        # the same, in status (1.33+)
    "status.conditions[].observedGeneration",
    "status.containerStatuses[].allocatedResources",   # in-place resize (1.33+)
    "status.containerStatuses[].resources",
    "status.containerStatuses[].user",  # the container's uid/gids (1.33+)
    "status.initContainerStatuses[].allocatedResources",
    "status.initContainerStatuses[].resources",
    "status.initContainerStatuses[].user",
    "status.containerStatuses[].volumeMounts",  # kubesim lists only the spec's own mounts,
    "status.initContainerStatuses[].volumeMounts",  # no service-account token volume
)


def normalize(obj, names):
    """A deep copy of obj with placeholders. `names` maps literal strings (the namespace,
    generated pod names, the node name) to their placeholder, longest first."""
    subst = sorted(names.items(), key=lambda kv: -len(kv[0]))

    def text(s):
        for old, new in subst:
            s = s.replace(old, new)
        s = SA_USER_RE.sub("system:serviceaccount:<ns>:", s)
        s = API_ACCESS_RE.sub("kube-api-access-<gen>", s)
        s = RV_QUERY_RE.sub("resourceVersion=<rv>", s)
        s = TOO_OLD_RE.sub("too old resource version: <rv> (<rv>)", s)
        if TIME_RE.match(s):
            return "<time>"
        if MICROTIME_RE.match(s):
            return "<microtime>"
        if UID_RE.match(s):
            return "<uid>"
        if IP_RE.match(s):
            return "<ip>"
        if CONTAINER_ID_RE.match(s):
            return "<containerID>"
        return s

    def walk(o, key=None):
        if isinstance(o, dict):
            out = {}
            for k, v in o.items():
                if k == "resourceVersion" and isinstance(v, str) and v:
                    out[k] = "<rv>"
                elif k in ("imageID",) and isinstance(v, str) and v:
                    out[k] = "<imageID>"
                elif k == "fieldsV1":
                    out[k] = "<fieldsV1>"
                elif k == "token" and isinstance(v, str):
                    out[k] = "<token>"
                else:
                    out[text(k) if "<" not in k else k] = walk(v, k)
            return out
        if isinstance(o, list):
            return [walk(v) for v in o]
        if isinstance(o, str):
            return text(o)
        return o
    return walk(copy.deepcopy(obj))


def key_shape(obj, prefix=""):
    """The set of key paths of obj ("a.b", "a.list[].c"), list items merged."""
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = prefix + "." + k if prefix else k
            out.add(p)
            out |= key_shape(v, p)
    elif isinstance(obj, list):
        for v in obj:
            out |= key_shape(v, prefix + "[]")
    return out


def _state(cs):
    st = cs.get("state") or {}
    for kind in ("waiting", "running", "terminated"):
        if kind in st:
            d = st[kind] or {}
            v = {"state": kind}
            for k in ("reason", "message", "exitCode"):
                if k in d:
                    v[k] = d[k]
            return v
    return {"state": None}


def pod_view(pod):
    """What krmpod reads of a Pod (kube_watch.c pod_state_decode, cmd_gc.c, fn_run.c)."""
    if not isinstance(pod, dict):
        return pod
    md = pod.get("metadata") or {}
    st = pod.get("status") or {}
    view = {
        "kind": pod.get("kind"),
        "name": md.get("name"),
        "deleting": "deletionTimestamp" in md,
        "scheduled_on_node": bool((pod.get("spec") or {}).get("nodeName")),
        "phase": st.get("phase"),
        "reason": st.get("reason"),
        "message": st.get("message"),
        "conditions": [{k: c.get(k) for k in ("type", "status", "reason", "message")}
                       for c in st.get("conditions") or []],
    }
    for key in ("initContainerStatuses", "containerStatuses"):
        if key in st:
            view[key] = [dict(_state(cs), name=cs.get("name"), ready=cs.get("ready"),
                              started=cs.get("started")) for cs in st[key] or []]
    return view


# Object metadata kubesim leaves out on every kind (server-side apply, spec generations).
IGNORED_META = ("metadata.managedFields", "metadata.generation")


def _drop(shape, ignored):
    return {p for p in shape
            if not any(p == i or p.startswith(i + ".") or p.startswith(i + "[")
                       for i in ignored)}


def pod_shape(pod):
    shape = key_shape({k: pod.get(k) for k in ("metadata", "status") if k in pod})
    return _drop(shape, IGNORED_POD_FIELDS)


class Mismatch(AssertionError):
    pass


def _diff(what, want, got):
    return "%s differs:\n  recorded: %s\n  kubesim:  %s" % (
        what, json.dumps(want, sort_keys=True), json.dumps(got, sort_keys=True))


def apply_patterns(obj, patterns):
    """Replaces regex matches in every string of obj (per-step loosening, both sides)."""
    if not patterns:
        return obj
    if isinstance(obj, dict):
        return {k: apply_patterns(v, patterns) for k, v in obj.items()}
    if isinstance(obj, list):
        return [apply_patterns(v, patterns) for v in obj]
    if isinstance(obj, str):
        for rx, rep in patterns:
            obj = re.sub(rx, rep, obj)
    return obj


def compare_body(view, want, got, where):
    """Compares two normalised bodies under a view; returns a list of difference texts."""
    errs = []
    if view == "status" or (isinstance(want, dict) and want.get("kind") == "Status"):
        if want != got:
            errs.append(_diff(where + " Status", want, got))
    elif view in ("pod", "pod-short"):
        if pod_view(want) != pod_view(got):
            errs.append(_diff(where + " pod (what krmpod reads)", pod_view(want),
                              pod_view(got)))
        ws, gs = pod_shape(want), pod_shape(got)
        if ws != gs:
            errs.append("%s pod shape differs: only recorded: %s; only kubesim: %s" % (
                where, sorted(ws - gs), sorted(gs - ws)))
    elif view == "keys":
        ws, gs = _drop(key_shape(want), IGNORED_META), _drop(key_shape(got), IGNORED_META)
        if ws != gs:
            errs.append("%s key shape differs: only recorded: %s; only kubesim: %s" % (
                where, sorted(ws - gs), sorted(gs - ws)))
    elif isinstance(view, tuple) and view[0] == "fields":
        for path in view[1]:
            a, b = _get(want, path), _get(got, path)
            if a != b:
                errs.append(_diff("%s %s" % (where, path), a, b))
    elif view == "list":
        for k in ("kind", "apiVersion"):
            if want.get(k) != got.get(k):
                errs.append(_diff(where + " " + k, want.get(k), got.get(k)))
        if key_shape(want.get("metadata")) != key_shape(got.get("metadata")):
            errs.append(_diff(where + " list metadata keys", sorted(key_shape(
                want.get("metadata"))), sorted(key_shape(got.get("metadata")))))
        wn = [i["metadata"]["name"] for i in want.get("items") or []]
        gn = [i["metadata"]["name"] for i in got.get("items") or []]
        if wn != gn:
            errs.append(_diff(where + " item names", wn, gn))
    elif view == "exact":
        if want != got:
            errs.append(_diff(where, want, got))
    return errs


def _get(obj, path):
    for p in path.split("."):
        obj = obj.get(p) if isinstance(obj, dict) else None
    return obj


def collapse(events, view):
    """Watch events as [(type, view)], consecutive repeats dropped. With the view
    "pod-short" (a container that ends within moments), events that show a container
    running are dropped first: whether a kubelet relist happens to see it running is chance,
    on a real node as on kubesim."""
    out = []
    for ev in events:
        if view == "pod-short" and ev["type"] in ("ADDED", "MODIFIED") and any(
                "running" in (cs.get("state") or {})
                for key in ("initContainerStatuses", "containerStatuses")
                for cs in (ev["object"].get("status") or {}).get(key) or []):
            continue
        obj = ev["object"]
        if ev["type"] == "BOOKMARK":  # only a resourceVersion: its keys
            seen = sorted(key_shape(obj))
        elif ev["type"] == "ERROR" or view not in ("pod", "pod-short"):
            seen = obj
        else:
            seen = pod_view(obj)
        v = (ev["type"], seen)
        if not out or out[-1] != v:
            out.append(v)
    return out


def compare_step(step, want, got):
    """Compares one step's recorded answer with kubesim's; returns difference texts."""
    where = "step %s" % step["name"]
    patterns = step.get("patterns")
    want = apply_patterns(want, patterns)
    got = apply_patterns(got, patterns)
    errs = []
    for k in ("code", "content_type", "protocol"):
        if k in want and want.get(k) != got.get(k):
            errs.append(_diff("%s %s" % (where, k), want.get(k), got.get(k)))
    if errs:
        return errs  # the rest would only repeat the difference
    view = step.get("view", "exact")
    if "body" in want:
        if isinstance(want["body"], str) or isinstance(got.get("body"), str):
            if want["body"] != got.get("body"):
                errs.append(_diff(where + " body", want["body"], got.get("body")))
        else:
            errs += compare_body(view, want["body"], got.get("body"), where)
    if "events" in want:
        cv = "pod-short" if view == "pod-short" else "pod"
        w, g = collapse(want["events"], cv), collapse(got.get("events") or [], cv)
        if view == "pod-final":  # only the last states: the terminal one, deleting, gone
            w, g = w[-3:], g[-3:]
        if w != g:
            errs.append(_diff(where + " watch events (collapsed)", w, g))
    if "messages" in want:
        w, g = want["messages"], got.get("messages") or []
        if [m[0] for m in w] != [m[0] for m in g]:
            errs.append(_diff(where + " attach channels", [m[0] for m in w],
                              [m[0] for m in g]))
        else:
            for i, (a, b) in enumerate(zip(w, g)):
                if a != b:
                    errs.append(_diff("%s attach message %d" % (where, i), a, b))
    return errs
