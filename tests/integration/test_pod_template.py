"""PodTemplate-based function pods: the template's fields are merged, krmpod's floor and
labels always win, a weakening template is refused, a missing one is a clear error, and
generate reads a named template once per run."""
import json
import os

import pytest
import yaml

from conftest import AGENT_MOUNTS, AGENT_VOLUMES, EXEC_MODE, KUSTOMIZE_RUN, base_env, fn_container, run_shim, start_shim
from test_generate import cmp_env, fn_app, generate

CAT = KUSTOMIZE_RUN + ["example.com/cat:v1"]

TEMPLATE = {
    "apiVersion": "v1",
    "kind": "PodTemplate",
    "metadata": {"name": "functions"},
    "template": {
        "metadata": {"labels": {"team": "platform", "sandbox": "gvisor"},
                     "annotations": {"example.com/owner": "platform-team"}},
        "spec": {
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "krm",
                             "effect": "NoSchedule"}],
            "nodeSelector": {"pool": "functions"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "pool", "operator": "In", "values": ["functions"]}]}]}}},
            "priorityClassName": "krm-functions",
            "imagePullSecrets": [{"name": "registry-creds"}],
            "runtimeClassName": "gvisor",
            "volumes": [{"name": "ca", "emptyDir": {}}],
            "containers": [{
                "name": "fn",
                "image": "ignored.example.com/not-used",
                "resources": {"requests": {"cpu": "250m", "memory": "128Mi"},
                              "limits": {"cpu": "2", "memory": "1Gi"}},
                "volumeMounts": [{"name": "ca", "mountPath": "/etc/extra-ca", "readOnly": True}],
            }],
        },
    },
}


@pytest.fixture
def kubesim(kubesim):
    """The templates select nodes with pool=functions: kubesim's node carries that label (a
    pod whose nodeSelector no node matches stays Unschedulable, as on a real cluster)."""
    kubesim.faults(node_labels={"pool": "functions"})
    return kubesim


def write_template(tmp_path, doc, name="template.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc))
    return str(p)


def test_template_fields_are_merged_and_the_floor_kept(kubesim, tmp_path):
    env = base_env(kubesim, KRMPOD_POD_TEMPLATE=write_template(tmp_path, TEMPLATE),
                   KRMPOD_MEMORY_LIMIT="768Mi")
    proc, body = start_shim(kubesim, CAT, env=env)
    out, err = proc.communicate(b"templated", timeout=30)
    assert proc.returncode == 0, err.decode()
    assert out == b"templated"
    md, spec = body["metadata"], body["spec"]
    tspec = TEMPLATE["template"]["spec"]
    assert md["labels"]["team"] == "platform" and md["labels"]["sandbox"] == "gvisor"
    assert md["labels"]["krmpod.dev/function"] == "true"
    assert md["annotations"]["example.com/owner"] == "platform-team"
    assert md["annotations"]["krmpod.dev/image"] == "example.com/cat:v1"
    for k in ("tolerations", "nodeSelector", "affinity", "priorityClassName",
              "imagePullSecrets", "runtimeClassName"):
        assert spec[k] == tspec[k], k
    assert spec["volumes"] == tspec["volumes"] + AGENT_VOLUMES
    c = fn_container(spec)
    assert c["image"] == "example.com/cat:v1"  # never the template's
    assert c["stdin"] is not EXEC_MODE and c["tty"] is False  # exec mode: the exec has stdin
    assert c["volumeMounts"] == tspec["containers"][0]["volumeMounts"] + AGENT_MOUNTS
    # template resources are defaults; the explicit KRMPOD_MEMORY_LIMIT wins
    assert c["resources"] == {"requests": {"cpu": "250m", "memory": "128Mi"},
                              "limits": {"cpu": "2", "memory": "768Mi"}}
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert spec["restartPolicy"] == "Never"


def test_bare_template_spec_file(kubesim, tmp_path):
    env = base_env(kubesim, KRMPOD_POD_TEMPLATE=write_template(
        tmp_path, {"metadata": {"labels": {"bare": "yes"}}, "spec": {}}))
    proc, body = start_shim(kubesim, CAT, env=env)
    proc.communicate(b"x", timeout=30)
    assert proc.returncode == 0
    assert body["metadata"]["labels"]["bare"] == "yes"


WEAKENING = [
    ({"spec": {"hostNetwork": True}}, "spec.hostNetwork"),
    ({"spec": {"hostPID": True}}, "spec.hostPID"),
    ({"spec": {"automountServiceAccountToken": True}}, "spec.automountServiceAccountToken"),
    ({"spec": {"securityContext": {"runAsNonRoot": False}}}, "spec.securityContext.runAsNonRoot"),
    ({"spec": {"securityContext": {"runAsUser": 0}}}, "spec.securityContext.runAsUser"),
    ({"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}},
     "seccompProfile.type"),
    ({"spec": {"containers": [{"name": "fn", "securityContext": {"privileged": True}}]}},
     "spec.containers[0].securityContext.privileged"),
    ({"spec": {"containers": [{"name": "fn", "securityContext": {
        "allowPrivilegeEscalation": True}}]}}, "allowPrivilegeEscalation"),
    ({"spec": {"containers": [{"name": "fn", "securityContext": {
        "capabilities": {"add": ["NET_ADMIN"]}}}]}}, "capabilities.add"),
    ({"spec": {"volumes": [{"name": "host", "hostPath": {"path": "/"}}]}}, "hostPath"),
    ({"metadata": {"labels": {"krmpod.dev/network": "granted"}}}, "krmpod.dev/network"),
]


def test_weakening_template_is_refused(kubesim, tmp_path):
    for i, (tmpl, field) in enumerate(WEAKENING):
        path = write_template(tmp_path, tmpl, "weak-%d.yaml" % i)
        r = run_shim(kubesim, CAT, stdin=b"x",
                     env=base_env(kubesim, KRMPOD_POD_TEMPLATE=path))
        err = r.stderr.decode()
        assert r.returncode == 125 and r.stdout == b"", (tmpl, err)
        assert field in err and "KRMPOD_POD_TEMPLATE" in err, (field, err)
    assert kubesim.api_pods() == []


def test_missing_template_is_a_clear_error(kubesim, tmp_path):
    r = run_shim(kubesim, CAT, stdin=b"x",
                 env=base_env(kubesim, KRMPOD_POD_TEMPLATE="no-such-template"))
    err = r.stderr.decode()
    assert r.returncode == 125, err
    assert "PodTemplate default/no-such-template does not exist" in err, err
    r = run_shim(kubesim, CAT, stdin=b"x",
                 env=base_env(kubesim, KRMPOD_POD_TEMPLATE=str(tmp_path / "nope.yaml")))
    assert r.returncode == 125 and b"KRMPOD_POD_TEMPLATE file" in r.stderr


def test_named_template_read_once_per_generate(kubesim, tmp_path):
    kubesim.control("POST", "/api/v1/namespaces/default/podtemplates", TEMPLATE)
    try:
        app = fn_app(tmp_path, "example.com/cat:v1")
        (app / "kustomization.yaml").write_text(
            "resources:\n- cm.yaml\ntransformers:\n- fn.yaml\n- fn2.yaml\n")
        (app / "fn2.yaml").write_text((app / "fn.yaml").read_text().replace(
            "name: fn\n", "name: fn2\n"))
        before = len(kubesim.requests())
        r = generate(app, cmp_env(kubesim, tmp_path, KRMPOD_POD_TEMPLATE="functions",
                                  KRMPOD_NAMESPACE="default"))
        assert r.returncode == 0, r.stderr.decode()
        reqs = kubesim.requests()[before:]
        gets = [l for l in reqs if "/podtemplates/functions" in l]
        assert len(gets) == 1, gets
        creates = [l for l in reqs if "POST" in l and "/pods" in l]
        # (exec mode: the two functions of one key share the render's pod)
        assert len(creates) == (1 if EXEC_MODE else 2), creates
    finally:
        kubesim.control("DELETE", "/api/v1/namespaces/default/podtemplates/functions")


def test_template_shape_errors_are_named(kubesim, tmp_path):
    cases = [
        ({"apiVersion": "v1", "kind": "ConfigMap", "data": {}}, "not a PodTemplate"),
        ({"spec": {"volumes": [{"name": "krmpod-mount-0", "emptyDir": {}}]}},
         "reserved for krmpod's own volumes"),
        ({"spec": {"initContainers": [{"name": "x", "image": "busybox"}]}},
         "a template cannot add init containers"),
    ]
    for i, (doc, msg) in enumerate(cases):
        path = write_template(tmp_path, doc, "shape-%d.yaml" % i)
        r = run_shim(kubesim, CAT, stdin=b"x", env=base_env(kubesim, KRMPOD_POD_TEMPLATE=path))
        assert r.returncode == 125, r.stderr
        assert msg.encode() in r.stderr, (msg, r.stderr)
    assert kubesim.api_pods() == []
