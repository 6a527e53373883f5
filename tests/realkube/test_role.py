"""The shipped Role is sufficient (every test of this tier renders through it) and minimal:
with each of its verb/resource pairs removed in turn (live, restored afterwards), a named
feature fails with krmpod's clear error, the API server's own refusal naming the verb and
the resource. A pair no feature needs on this cluster is listed in NOT_NEEDED with the
reason it is kept; its test shows the feature working without it."""
import os
import time

import pytest
import yaml

from apps import copy_fixture_app, fn_app
from conftest import FN_NS, ROOT, SA_GROUPS, SA_USER, render
from kube import kubectl

ROLE = "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles/krmpod" % FN_NS


def shipped_pairs():
    with open(os.path.join(ROOT, "manifests", "functions", "rbac.yaml")) as f:
        role = next(d for d in yaml.safe_load_all(f) if d and d["kind"] == "Role")
    return [(g, r, v) for rule in role["rules"] for g in rule["apiGroups"]
            for r in rule["resources"] for v in rule["verbs"]]


def run_render(install, tmp_path, **env):
    r, _ = render(install, fn_app(tmp_path, "cat", name="app-%d" % time.monotonic_ns()), **env)
    return r.returncode == 0, r.stderr.decode(errors="replace")


def run_attach_render(install, tmp_path):
    """A render in attach mode (named: under the shipped settings the sidecar cannot read the
    fixtures' image configs, and they run on their images' own entrypoints, through exec)."""
    return run_render(install, tmp_path, KRMPOD_MODE="attach")


# The render env of exec mode (conftest.exec_mode), set by the test that needs it.
EXEC_ENV = {}


def run_exec_render(install, tmp_path):
    """A render in exec mode: the function runs through pods/exec."""
    r, _ = render(install, fn_app(tmp_path, "cat", name="app-%d" % time.monotonic_ns()),
                  **EXEC_ENV)
    err = r.stderr.decode(errors="replace")
    return r.returncode == 0 and "runs in attach mode" not in err and \
        "own entrypoint" not in err, err


def run_pool_render(install, tmp_path):
    """Two renders with the warm pool: prestart leaves an idle pod in the pool (or the
    first render gives its pod back), which the second render leases (a patch)."""
    env = dict(EXEC_ENV, KRMPOD_WARM_POOL="true", KRMPOD_WARM_POOL_IMAGES="example.com/fns/*",
               KRMPOD_LOG_LEVEL="debug")
    app = fn_app(tmp_path, "cat", name="app-%d" % time.monotonic_ns())
    texts, ok = [], True
    for _ in range(2):
        r, _ = render(install, app, **env)
        ok = ok and r.returncode == 0
        texts.append(r.stderr.decode(errors="replace"))
    # Without the pool the renders still succeed (a pod that cannot be given back is retired
    # with a warning): the feature is the second render leasing the pod the first gave back.
    ok = ok and "offered (leased)" in texts[1]
    # the pool is emptied (the tier's check: no pod left)
    script = " ".join("%s='%s'" % kv for kv in sorted(env.items())) + \
        " KRMPOD_WARM_POOL_TTL=1ms /usr/local/bin/krmpod gc"
    install.sidecar.sh(script)
    return ok, "\n".join(texts)


def run_prestart_claim(install, tmp_path):
    """A render whose function pod was started ahead: the shim claiming it reads it first."""
    r, _ = render(install, copy_fixture_app(tmp_path, name="app-%d" % time.monotonic_ns()),
                  FROM_SHIM="x")
    err = r.stderr.decode(errors="replace")
    return r.returncode == 0 and "2 claimed" in err, err


def run_attach_proof(install, tmp_path):
    """A render in attach mode: krmpod proves the attach delivered everything against the pod
    log, and fails closed when it cannot read it (issue 29). (On an image's own entrypoint the
    log is read too, to check what PID 1 wrote before the call.)"""
    r, _ = render(install, copy_fixture_app(tmp_path, name="app-%d" % time.monotonic_ns()),
                  FROM_SHIM="x", KRMPOD_MODE="attach")
    err = r.stderr.decode(errors="replace")
    return r.returncode == 0 and "image=example.com/fns/add-label" in err, err


def run_early_attach(install, tmp_path):
    """Cold pods (no prestart): krmpod attaches on the kubelet's Started event, before the pod
    status says the container runs; without the event it falls back to the status (and says
    why at debug level)."""
    r, _ = render(install, copy_fixture_app(tmp_path, name="app-%d" % time.monotonic_ns()),
                  FROM_SHIM="x", KRMPOD_PRESTART="false", KRMPOD_LOG_LEVEL="debug",
                  KRMPOD_MODE="attach")
    err = r.stderr.decode(errors="replace")
    return r.returncode == 0 and "attached on the kubelet's Started event" in err, err


def run_pod_template(install, tmp_path):
    install.api.request("POST", "/api/v1/namespaces/%s/podtemplates" % FN_NS, {
        "apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "role-test"},
        "template": {"metadata": {"labels": {"team": "platform"}},
                     "spec": {"containers": [{"name": "fn", "image": "ignored"}]}}})
    try:
        return run_render(install, tmp_path, KRMPOD_POD_TEMPLATE="role-test")
    finally:
        install.api.request("DELETE", "/api/v1/namespaces/%s/podtemplates/role-test" % FN_NS)


def run_in_sidecar(install, *args):
    r = install.sidecar.exec(["/usr/local/bin/krmpod"] + list(args))
    return r.returncode == 0, (r.stdout + r.stderr).decode(errors="replace")


def run_gc(install, tmp_path):
    return run_in_sidecar(install, "gc", "--dry-run")


def run_doctor(install, tmp_path):
    return run_in_sidecar(install, "doctor")


# (apiGroup, resource, verb) -> (the feature that needs it, how to run it)
FEATURES = {
    ("", "pods", "create"): ("a render (the function's pod)", run_render),
    ("", "pods", "get"): ("prestart: a shim reads the pod it claims", run_prestart_claim),
    ("", "pods", "list"): ("krmpod gc", run_gc),
    ("", "pods", "watch"): ("a render (following the pod)", run_render),
    ("", "pods", "delete"): ("a render in attach mode (its shim deletes the pod after)",
                             run_attach_render),
    ("", "pods", "patch"): ("the warm pool (a lease taken and given back)", run_pool_render),
    ("", "pods/attach", "get"): ("a render in attach mode (the attach's WebSocket upgrade)",
                                 run_attach_render),
    ("", "pods/attach", "create"): ("a render in attach mode (the attach, on Kubernetes 1.35+)",
                                    run_attach_render),
    ("", "pods/exec", "get"): ("a render in exec mode (the exec's WebSocket upgrade)",
                               run_exec_render),
    ("", "pods/exec", "create"): ("a render in exec mode (the exec, on Kubernetes 1.35+)",
                                  run_exec_render),
    ("", "pods/log", "get"): ("attach-mode output proven against the pod log (pods/log)",
                              run_attach_proof),
    ("", "events", "watch"): ("the early attach (the kubelet's Started event)",
                              run_early_attach),
    ("", "podtemplates", "get"): ("KRMPOD_POD_TEMPLATE by name", run_pod_template),
    ("networking.k8s.io", "networkpolicies", "list"): ("krmpod doctor's NetworkPolicy check",
                                                       run_doctor),
}

# Pairs no feature needs on this cluster, and why they are kept (reported to the lead).
NOT_NEEDED = {
    ("", "pods/attach", "create"):
        "Kubernetes 1.34 authorizes the attach's WebSocket upgrade as `get` only; from 1.35 "
        "(AuthorizePodWebsocketUpgradeCreatePermission) it also checks `create`",
    ("", "pods/exec", "create"):
        "Kubernetes 1.34 authorizes the exec's WebSocket upgrade as `get` only; from 1.35 "
        "(AuthorizePodWebsocketUpgradeCreatePermission) it also checks `create`",
}


def split(resource):
    res, _, sub = resource.partition("/")
    return res, sub


def wait_authz(install, pair, allowed, timeout=15):
    g, resource, verb = pair
    res, sub = split(resource)
    deadline = time.monotonic() + timeout
    while install.api.can(SA_USER, SA_GROUPS, FN_NS, verb, res, sub, g) != allowed:
        if time.monotonic() > deadline:
            raise AssertionError("the authorizer still says %s for %s after %d s"
                                 % (not allowed, pair, timeout))
        time.sleep(0.1)


def without(rules, pair):
    g, resource, verb = pair
    out = []
    for rule in rules:
        if g in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]:
            rest = dict(rule, verbs=[v for v in rule["verbs"] if v != verb])
            if len(rule["resources"]) > 1 or len(rule["apiGroups"]) > 1:
                raise AssertionError("split rules with several resources first: %s" % rule)
            if rest["verbs"]:
                out.append(rest)
        else:
            out.append(rule)
    return out


def set_rules(install, rules):
    role = install.api.get(ROLE)
    role["rules"] = rules
    install.api.call("PUT", ROLE, role)


baselines = {}


@pytest.mark.parametrize("pair", shipped_pairs(), ids=lambda p: "%s-%s" % (p[1], p[2]))
def test_each_rule_is_needed(install, tmp_path, pair, request):
    if pair[1] == "pods/exec" or pair == ("", "pods", "patch"):
        EXEC_ENV.update(request.getfixturevalue("exec_mode"))
    assert pair in FEATURES, "no feature is known to need %s: name one in FEATURES, or " \
        "remove the rule from manifests/functions/rbac.yaml" % (pair,)
    feature, run = FEATURES[pair]
    if run not in baselines:  # the feature works with the shipped Role
        baselines[run] = run(install, tmp_path)
    ok, text = baselines[run]
    assert ok, "%s fails even with the shipped Role:\n%s" % (feature, text)

    original = install.api.get(ROLE)["rules"]
    set_rules(install, without(original, pair))
    try:
        wait_authz(install, pair, allowed=False)
        ok, text = run(install, tmp_path)
    finally:
        set_rules(install, original)
        wait_authz(install, pair, allowed=True)
        for p in install.api.pods(FN_NS):  # what krmpod could not delete without the rule
            install.api.request("DELETE", "/api/v1/namespaces/%s/pods/%s"
                                % (FN_NS, p["metadata"]["name"]), {"gracePeriodSeconds": 0})
    g, resource, verb = pair
    if pair in NOT_NEEDED:
        print("%s %s: not needed here (%s); %s works without it" % (
            verb, resource, NOT_NEEDED[pair], feature))
        assert ok, "%s fails without %s %s, which NOT_NEEDED says it does not need:\n%s" % (
            feature, verb, resource, text)
        return
    assert not ok, "%s still works without %s %s: the rule is not needed for it\n%s" % (
        feature, verb, resource, text)
    refusal = 'cannot %s resource "%s"' % (verb, resource)
    if resource in ("pods/attach", "pods/exec"):
        # A refused WebSocket upgrade: libwebsockets does not hand over the API server's
        # Status body, so krmpod names the 403 and both causes, RBAC first when the server's
        # version is new enough.
        refusal = "403 Forbidden: the API server refused the stream upgrade; likely cause: " \
            "RBAC: the credentials need " + resource
        assert "/%s?" % resource.split("/")[1] in text, text
    assert refusal in text, "%s failed without %s %s, but without saying so (%r):\n%s" % (
        feature, verb, resource, refusal, text)


def test_role_is_the_shipped_one_again(install):
    """After the changes above, re-applying the install (as an admin would) finds no
    conflict and the live Role is manifests/' again."""
    from conftest import OVERLAY
    kubectl("apply", "--server-side", "--field-manager=krmpod", "-k", OVERLAY)
    live = install.api.get(ROLE)["rules"]
    want = [(g, r, v) for rule in live for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]]
    assert sorted(want) == sorted(shipped_pairs()), live
