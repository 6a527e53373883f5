"""Issue 29, item 2: the admission policy's allowlist and krmpod's pod builder stay in step.

The policy (manifests/functions/admission.yaml) cannot list a pod's fields in CEL, so it
denies by name every PodSpec and Container field krmpod does not write. This test builds pods
the way krmpod does, in attach and exec mode, with the network gate, a mount, a network grant
and a PodTemplate that uses every key krmpod takes from one (the builder logs each spec at
debug level before it creates the pod), and checks both ways against the fields of the
Kubernetes schema (tests/fixtures/kubernetes/):
  - no field krmpod writes is denied (its own pods would be refused);
  - every field the policy lets through is one krmpod writes or the API server fills in
    (no field is allowed that nobody needs).
Whether the API server really denies each one: tests/realkube/test_admission.py."""
import json
import os
import re
import subprocess

import yaml

from conftest import HELPER_IMAGE, KUSTOMIZE_RUN, ROOT, base_env, exec_settings, shim_link

SCHEMA = json.load(open(os.path.join(ROOT, "tests", "fixtures", "kubernetes",
                                     "pod-fields-v1.34.json")))
ADMISSION = os.path.join(ROOT, "manifests", "functions", "admission.yaml")
# What the API server fills in before admission sees the pod: defaults (dnsPolicy,
# schedulerName, terminationMessagePath), the ServiceAccount admission plugin (serviceAccount
# and serviceAccountName "default", which another rule pins), the Priority plugin (priority,
# preemptionPolicy) and the RuntimeClass plugin (overhead, allowed only beside a
# runtimeClassName).
API_FILLED = {"PodSpec": {"dnsPolicy", "schedulerName", "serviceAccount", "serviceAccountName",
                          "priority", "preemptionPolicy", "overhead"},
              "Container": {"terminationMessagePath"}}
# Fields the policy's other rules deny outright, by their own message.
DENIED_ELSEWHERE = {"PodSpec": {"dnsConfig", "ephemeralContainers", "hostAliases", "nodeName"},
                    "Container": {"envFrom"}}
RL = (b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
      b"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n")
TEMPLATE = {
    "apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "fns"},
    "template": {"metadata": {"labels": {"team": "a"}}, "spec": {
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "fns",
                         "effect": "NoSchedule"}],
        "nodeSelector": {"pool": "fns"},
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [
                {"key": "pool", "operator": "In", "values": ["fns"]}]}}]}},
        "priorityClassName": "fns",
        "imagePullSecrets": [{"name": "pull"}],
        "runtimeClassName": "gvisor",
        "volumes": [{"name": "ca", "emptyDir": {}}],
        "containers": [{"name": "fn", "volumeMounts": [{"name": "ca", "mountPath": "/ca"}]}]}}}


def denied():
    """{"PodSpec": names, "Container": names} the allowlist rules deny: every has(...) in
    the validations whose message says "krmpod never writes"."""
    out = {"PodSpec": set(), "Container": set()}
    for doc in yaml.safe_load_all(open(ADMISSION)):
        if doc.get("kind") != "ValidatingAdmissionPolicy":
            continue
        for v in doc["spec"].get("validations", []):
            if "krmpod never writes" not in v["message"]:
                continue
            out["PodSpec"] |= set(re.findall(r"has\(object\.spec\.(\w+)\)", v["expression"]))
            out["Container"] |= set(re.findall(r"has\(c\.(\w+)\)", v["expression"]))
    out["PodSpec"] -= {"runtimeClassName", "initContainers"}  # conditions, not denials
    out["Container"] -= {"lifecycle"}  # krmpod's own container's only (checked below)
    return out


def specs(stderr):
    return [json.loads(m) for m in re.findall(r"pod spec: (\{.*\})$", stderr, re.M)]


def written(kubesim, tmp_path):
    """{"PodSpec": names, "Container": names} of the pods krmpod builds, and the names of the
    containers that carry lifecycle hooks."""
    template = tmp_path / "template.yaml"
    template.write_text(yaml.safe_dump(TEMPLATE))
    mount = tmp_path / "data.txt"
    mount.write_text("x\n")
    fields, hooked, seen = {"PodSpec": set(), "Container": set()}, set(), 0
    common = dict(KRMPOD_LOG_LEVEL="debug", KRMPOD_NETWORK_GATE="2s",
                  KRMPOD_HELPER_IMAGE=HELPER_IMAGE, KRMPOD_POD_TEMPLATE=str(template),
                  KRMPOD_ALLOW_NETWORK="true", KRMPOD_START_TIMEOUT="2s")  # never schedules here
    for mode in ({"KRMPOD_MODE": "attach"}, exec_settings()):
        for network in ("none", "host"):
            args = [a if a != "none" else network for a in KUSTOMIZE_RUN]
            r = subprocess.run([shim_link("docker")] + args + [
                "--mount", "type=bind,source=%s,target=/data.txt" % mount, "--pull", "always",
                "example.com/fns/cat:v1", "an-arg"], input=RL, cwd=str(tmp_path),
                env=base_env(kubesim, **dict(common, **mode)), stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, timeout=60)
            assert specs(r.stderr.decode()), r.stderr.decode()
            for pod in specs(r.stderr.decode()):
                seen += 1
                spec = pod["spec"]
                fields["PodSpec"] |= set(spec)
                for c in spec.get("containers", []) + spec.get("initContainers", []):
                    fields["Container"] |= set(c)
                    if "lifecycle" in c:
                        hooked.add(c["name"])
    assert seen >= 4, "the builder logged %d pod specs" % seen
    return fields, hooked


def test_the_allowlist_and_the_pod_builder_stay_in_step(kubesim, tmp_path):
    no = denied()
    built, hooked = written(kubesim, tmp_path)
    for kind in ("PodSpec", "Container"):
        schema = set(SCHEMA[kind])
        assert no[kind] <= schema, ("denied fields the schema does not have", no[kind] - schema)
        assert built[kind] <= schema, ("written fields the schema does not have",
                                       built[kind] - schema)
        # krmpod's own pods are never refused
        assert not built[kind] & (no[kind] | DENIED_ELSEWHERE[kind]), (
            kind, "krmpod writes fields the policy denies", built[kind] & no[kind])
        # nothing is allowed that neither krmpod writes nor the API server fills in
        allowed = schema - no[kind] - DENIED_ELSEWHERE[kind]
        assert allowed <= built[kind] | API_FILLED[kind], (
            kind, "allowed, yet nobody writes them", allowed - built[kind] - API_FILLED[kind])
    # lifecycle hooks: krmpod's own container only (its install-self), as the policy says
    assert hooked == {"krmpod"}, hooked
    text = open(ADMISSION).read()
    assert "(c.name == 'krmpod' || !has(c.lifecycle))" in text
    for name in DENIED_ELSEWHERE["PodSpec"]:
        assert "has(object.spec.%s)" % name in text, name
