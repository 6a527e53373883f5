"""Known fields of the objects kubesim accepts, for fieldValidation=Strict (a subset of the
real schema: what function pods and pod templates use)."""

META = {"name", "generateName", "namespace", "labels", "annotations", "ownerReferences", "uid",
        "resourceVersion", "creationTimestamp", "finalizers", "managedFields", "deletionTimestamp",
        "deletionGracePeriodSeconds", "generation", "selfLink"}
OWNER = {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}
POD = {"apiVersion", "kind", "metadata", "spec", "status"}
SPEC = {"containers", "initContainers", "ephemeralContainers", "restartPolicy",
        "activeDeadlineSeconds", "terminationGracePeriodSeconds", "automountServiceAccountToken",
        "enableServiceLinks", "securityContext", "volumes", "nodeSelector", "nodeName", "affinity",
        "tolerations", "priorityClassName", "priority", "imagePullSecrets", "runtimeClassName",
        "serviceAccountName", "serviceAccount", "hostNetwork", "hostPID", "hostIPC", "dnsPolicy",
        "schedulerName", "preemptionPolicy", "hostname", "subdomain", "topologySpreadConstraints",
        "shareProcessNamespace", "overhead", "readinessGates", "os", "hostUsers",
        "schedulingGates", "resourceClaims", "setHostnameAsFQDN", "dnsConfig", "hostAliases"}
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


def unknown_fields(pod):
    """Returns the paths of unknown fields, like the API server's strict decoding."""
    out = []

    def check(obj, allowed, path):
        if not isinstance(obj, dict):
            return
        for k in obj:
            if k not in allowed:
                out.append("%s%s" % (path, k))

    check(pod, POD, "")
    check(pod.get("metadata", {}), META, "metadata.")
    for i, o in enumerate(pod.get("metadata", {}).get("ownerReferences", []) or []):
        check(o, OWNER, "metadata.ownerReferences[%d]." % i)
    spec = pod.get("spec", {}) or {}
    check(spec, SPEC, "spec.")
    check(spec.get("securityContext", {}), PSC, "spec.securityContext.")
    for kind in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(kind, []) or []):
            p = "spec.%s[%d]." % (kind, i)
            check(c, CONTAINER, p)
            check(c.get("securityContext", {}), CSC, p + "securityContext.")
            check(c.get("resources", {}), RES, p + "resources.")
            for j, e in enumerate(c.get("env", []) or []):
                check(e, ENV, p + "env[%d]." % j)
    return out
