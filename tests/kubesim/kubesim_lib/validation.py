"""API-server defaulting and validation of pods and pod templates (the parts kubesim's users
meet), with the real Status shapes: 422 Invalid with details.causes[]."""
import re



def status(code, reason, message, details=None):
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": code}
    if details:
        s["details"] = details
    return s

LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
VOLUME_TYPES = ("emptyDir", "hostPath", "configMap", "secret", "projected", "downwardAPI",
                "persistentVolumeClaim", "ephemeral", "csi", "nfs", "iscsi", "image",
                "gitRepo", "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
                "fc", "azureFile", "azureDisk", "vsphereVolume", "quobyte", "photonPersistentDisk",
                "portworxVolume", "scaleIO", "storageos", "awsElasticBlockStore",
                "gcePersistentDisk")
UNSUPPORTED_VOLUMES = {
    "configMap": "kubesim has no ConfigMaps, so it cannot populate configMap volumes; use an "
                 "emptyDir (filled by an init container) instead",
    "secret": "kubesim has no Secrets, so it cannot populate secret volumes; use an emptyDir "
              "(filled by an init container) instead",
}


def _q(v):
    return '"%s"' % v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else \
        str(v)


class FieldError:
    def __init__(self, field, etype, value=None, detail=""):
        self.field, self.etype, self.value, self.detail = field, etype, value, detail

    def body(self):
        if self.etype == "FieldValueRequired":
            s = "Required value"
            return s + (": " + self.detail if self.detail else "")
        if self.etype == "FieldValueInvalid":
            return "Invalid value: %s: %s" % (_q(self.value), self.detail)
        if self.etype == "FieldValueDuplicate":
            return "Duplicate value: %s" % _q(self.value)
        if self.etype == "FieldValueNotFound":
            return "Not found: %s" % _q(self.value)
        if self.etype == "FieldValueNotSupported":
            return "Unsupported value: %s: supported values: %s" % (_q(self.value), self.detail)
        return "Forbidden: %s" % self.detail

    def __str__(self):
        return "%s: %s" % (self.field, self.body())


def invalid(kind, name, errs):
    msgs = [str(e) for e in errs]
    text = msgs[0] if len(msgs) == 1 else "[%s]" % ", ".join(msgs)
    return status(422, "Invalid", "%s \"%s\" is invalid: %s" % (kind, name, text),
                  {"name": name, "kind": kind,
                   "causes": [{"reason": e.etype, "message": e.body(), "field": e.field}
                              for e in errs]})


def default_pull_policy(image):
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    if ":" not in last or last.split(":", 1)[1] == "latest":
        return "Always"
    return "IfNotPresent"


def default_pod_spec(spec, for_pod=True):
    """The defaults the API server (and admission) fill in; a PodTemplate's spec
    (for_pod=False) gets only the API defaults, not the service account, service links
    and priority that pod defaulting and admission add."""
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    if for_pod:
        spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    for kind in ("initContainers", "containers"):
        for c in spec.get(kind) or []:
            if not isinstance(c, dict):
                continue
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            if isinstance(c.get("image"), str) and c["image"]:
                c.setdefault("imagePullPolicy", default_pull_policy(c["image"]))
            c.setdefault("resources", {})
    for v in spec.get("volumes") or []:
        if isinstance(v, dict) and "emptyDir" in v and v["emptyDir"] is None:
            v["emptyDir"] = {}


def _validate_name(errs, md, path="metadata"):
    name = md.get("name") if isinstance(md, dict) else None
    if not name:
        errs.append(FieldError(path + ".name", "FieldValueRequired", detail="name or "
                               "generateName is required"))
    elif not isinstance(name, str) or len(name) > 253 or not SUBDOMAIN_RE.match(name):
        errs.append(FieldError(path + ".name", "FieldValueInvalid", name, SUBDOMAIN_MSG))


def validate_pod_spec(spec, path, for_pod):
    errs = []
    if not isinstance(spec, dict):
        return [FieldError(path, "FieldValueRequired")]
    vols = {}
    for i, v in enumerate(spec.get("volumes") or []):
        vp = "%s.volumes[%d]" % (path, i)
        if not isinstance(v, dict):
            errs.append(FieldError(vp, "FieldValueInvalid", str(v), "must be an object"))
            continue
        n = v.get("name")
        if not n:
            errs.append(FieldError(vp + ".name", "FieldValueRequired"))
        elif not isinstance(n, str) or len(n) > 63 or not LABEL_RE.match(n):
            errs.append(FieldError(vp + ".name", "FieldValueInvalid", n, LABEL_MSG))
        elif n in vols:
            errs.append(FieldError(vp + ".name", "FieldValueDuplicate", n))
        types = [t for t in v if t != "name"]
        if not types:
            errs.append(FieldError(vp, "FieldValueRequired", detail="must specify a volume "
                                   "type"))
        elif len(types) > 1:
            errs.append(FieldError(vp + "." + types[1], "FieldValueForbidden",
                                   detail="may not specify more than 1 volume type"))
        elif for_pod and types[0] in UNSUPPORTED_VOLUMES:
            errs.append(FieldError(vp + "." + types[0], "FieldValueForbidden",
                                   detail=UNSUPPORTED_VOLUMES[types[0]]))
        if isinstance(n, str) and n:
            vols.setdefault(n, v)
    containers = spec.get("containers")
    if not containers:
        errs.append(FieldError(path + ".containers", "FieldValueRequired"))
    names = set()
    for kind in ("initContainers", "containers"):
        items = spec.get(kind) or []
        if not isinstance(items, list):
            errs.append(FieldError("%s.%s" % (path, kind), "FieldValueInvalid", str(items),
                                   "must be a list"))
            continue
        for i, c in enumerate(items):
            cp = "%s.%s[%d]" % (path, kind, i)
            if not isinstance(c, dict):
                errs.append(FieldError(cp, "FieldValueInvalid", str(c), "must be an object"))
                continue
            n = c.get("name")
            if not n:
                errs.append(FieldError(cp + ".name", "FieldValueRequired"))
            elif not isinstance(n, str) or len(n) > 63 or not LABEL_RE.match(n):
                errs.append(FieldError(cp + ".name", "FieldValueInvalid", n, LABEL_MSG))
            elif n in names:
                errs.append(FieldError(cp + ".name", "FieldValueDuplicate", n))
            names.add(n)
            if for_pod and not c.get("image"):
                errs.append(FieldError(cp + ".image", "FieldValueRequired"))
            paths = set()
            for j, m in enumerate(c.get("volumeMounts") or []):
                mp = "%s.volumeMounts[%d]" % (cp, j)
                if not isinstance(m, dict):
                    continue
                if not m.get("name"):
                    errs.append(FieldError(mp + ".name", "FieldValueRequired"))
                elif m["name"] not in vols:
                    errs.append(FieldError(mp + ".name", "FieldValueNotFound", m["name"]))
                if not m.get("mountPath"):
                    errs.append(FieldError(mp + ".mountPath", "FieldValueRequired"))
                elif m["mountPath"] in paths:
                    errs.append(FieldError(mp + ".mountPath", "FieldValueInvalid",
                                           m["mountPath"], "must be unique"))
                else:
                    paths.add(m["mountPath"])
                sub = m.get("subPath")
                if sub and (sub.startswith("/") or ".." in sub.split("/")):
                    errs.append(FieldError(mp + ".subPath", "FieldValueInvalid", sub,
                                           "must be a relative path without '..'"))
    rp = spec.get("restartPolicy")
    if rp not in ("Always", "OnFailure", "Never"):
        errs.append(FieldError(path + ".restartPolicy", "FieldValueNotSupported", rp,
                               '"Always", "OnFailure", "Never"'))
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or isinstance(ads, bool) or ads <= 0):
        errs.append(FieldError(path + ".activeDeadlineSeconds", "FieldValueInvalid", ads,
                               "must be between 1 and 2147483647, inclusive"))
    return errs


def validate_pod(pod, for_kubelet=True):
    errs = []
    _validate_name(errs, pod.get("metadata"))
    errs += validate_pod_spec(pod.get("spec"), "spec", True)
    return errs


def validate_template(t):
    errs = []
    _validate_name(errs, t.get("metadata"))
    tmpl = t.get("template")
    if not isinstance(tmpl, dict):
        errs.append(FieldError("template.spec.containers", "FieldValueRequired"))
        return errs
    errs += validate_pod_spec(tmpl.get("spec"), "template.spec", False)
    return errs


def _qty(res, kind, what):
    v = ((res or {}).get(kind) or {}).get(what)
    return None if v is None else str(v)


def qos_class(spec):
    cs = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set, guaranteed = False, True
    for c in cs:
        res = c.get("resources") if isinstance(c, dict) else None
        for what in ("cpu", "memory"):
            lim, req = _qty(res, "limits", what), _qty(res, "requests", what)
            if lim or req:
                any_set = True
            if lim is None or (req is not None and req != lim):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
