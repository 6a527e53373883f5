"""Known fields of the objects kubesim accepts, for fieldValidation=Strict (a subset of the
real schema: what function pods and pod templates use)."""

META = {"name", "generateName", "namespace", "labels", "annotations", "ownerReferences", "uid",
        "resourceVersion", "creationTimestamp", "finalizers", "managedFields", "deletionTimestamp",
        "deletionGracePeriodSeconds", "generation", "selfLink"}
OWNER = {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}
POD = {"apiVersion", "kind", "metadata", "spec", "status"}
TEMPLATE = {"apiVersion", "kind", "metadata", "template"}
TEMPLATE_SPEC = {"metadata", "spec"}
SPEC = {"containers", "initContainers", "ephemeralContainers", "restartPolicy",
        "activeDeadlineSeconds", "terminationGracePeriodSeconds", "automountServiceAccountToken",
        "enableServiceLinks", "securityContext", "volumes", "nodeSelector", "nodeName", "affinity",
        "tolerations", "priorityClassName", "priority", "imagePullSecrets", "runtimeClassName",
        "serviceAccountName", "serviceAccount", "hostNetwork", "hostPID", "hostIPC", "dnsPolicy",
        "schedulerName", "preemptionPolicy", "hostname", "subdomain", "topologySpreadConstraints",
        "shareProcessNamespace", "overhead", "readinessGates", "os", "hostUsers",
        "schedulingGates", "resourceClaims", "setHostnameAsFQDN", "dnsConfig", "hostAliases",
        "resources"}
CONTAINER = {"name", "image", "command", "args", "workingDir", "ports", "env", "envFrom",
             "resources", "volumeMounts", "volumeDevices", "livenessProbe", "readinessProbe",
             "startupProbe", "lifecycle", "terminationMessagePath", "terminationMessagePolicy",
             "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty", "restartPolicy",
             "resizePolicy"}
PSC = {"runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup", "fsGroupChangePolicy",
       "supplementalGroups", "supplementalGroupsPolicy", "seccompProfile", "seLinuxOptions",
       "sysctls", "windowsOptions", "appArmorProfile", "seLinuxChangePolicy"}
CSC = {"runAsUser", "runAsGroup", "runAsNonRoot", "allowPrivilegeEscalation", "privileged",
       "capabilities", "readOnlyRootFilesystem", "seccompProfile", "seLinuxOptions",
       "procMount", "windowsOptions", "appArmorProfile"}
RES = {"requests", "limits", "claims"}
ENV = {"name", "value", "valueFrom"}
VOLUME = {"name", "emptyDir", "hostPath", "configMap", "secret", "projected", "downwardAPI",
          "persistentVolumeClaim", "ephemeral", "csi", "nfs", "iscsi", "image", "gitRepo",
          "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile",
          "azureDisk", "vsphereVolume", "quobyte", "photonPersistentDisk", "portworxVolume",
          "scaleIO", "storageos", "awsElasticBlockStore", "gcePersistentDisk"}
EMPTYDIR = {"medium", "sizeLimit"}
MOUNT = {"name", "mountPath", "readOnly", "subPath", "subPathExpr", "mountPropagation",
         "recursiveReadOnly"}


def _check(out, obj, allowed, path):
    if not isinstance(obj, dict):
        return
    for k in obj:
        if k not in allowed:
            out.append("%s%s" % (path, k))


def _meta(out, md, path):
    _check(out, md, META, path)
    if isinstance(md, dict):
        for i, o in enumerate(md.get("ownerReferences", []) or []):
            _check(out, o, OWNER, "%sownerReferences[%d]." % (path, i))


def _spec(out, spec, path):
    if not isinstance(spec, dict):
        return
    _check(out, spec, SPEC, path)
    _check(out, spec.get("securityContext", {}), PSC, path + "securityContext.")
    for i, v in enumerate(spec.get("volumes", []) or []):
        p = "%svolumes[%d]." % (path, i)
        _check(out, v, VOLUME, p)
        if isinstance(v, dict):
            _check(out, v.get("emptyDir") or {}, EMPTYDIR, p + "emptyDir.")
    for kind in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(kind, []) or []):
            p = "%s%s[%d]." % (path, kind, i)
            _check(out, c, CONTAINER, p)
            if not isinstance(c, dict):
                continue
            _check(out, c.get("securityContext", {}), CSC, p + "securityContext.")
            _check(out, c.get("resources", {}), RES, p + "resources.")
            for j, e in enumerate(c.get("env", []) or []):
                _check(out, e, ENV, p + "env[%d]." % j)
            for j, m in enumerate(c.get("volumeMounts", []) or []):
                _check(out, m, MOUNT, p + "volumeMounts[%d]." % j)


def unknown_fields(pod):
    """Returns the paths of unknown fields of a Pod, like the API server's strict decoding."""
    out = []
    _check(out, pod, POD, "")
    _meta(out, pod.get("metadata", {}), "metadata.")
    _spec(out, pod.get("spec", {}) or {}, "spec.")
    return out


def unknown_fields_template(t):
    """The same for a PodTemplate."""
    out = []
    _check(out, t, TEMPLATE, "")
    _meta(out, t.get("metadata", {}), "metadata.")
    tmpl = t.get("template") or {}
    _check(out, tmpl, TEMPLATE_SPEC, "template.")
    if isinstance(tmpl, dict):
        _meta(out, tmpl.get("metadata", {}), "template.metadata.")
        _spec(out, tmpl.get("spec", {}) or {}, "template.spec.")
    return out
