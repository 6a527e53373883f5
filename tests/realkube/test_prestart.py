"""Prestart on the real cluster, with the shipped configuration (the owner pod in `argocd`,
functions in `krmpod-functions`): every pod started ahead is claimed, exactly one pod runs
per function, and the garbage collector deletes none (a cross-namespace ownerReference
would make it do so, with an OwnerRefInvalidNamespace event). Off, the shims create one pod
each. In attach mode, named: under the default (auto) a fixture whose config an earlier
test's render left in the sidecar's cache runs in exec mode, whose pod holds instead of
ending (test_exec.py covers prestart there)."""
from apps import copy_fixture_app
from conftest import FN_NS, assert_ok, exit_codes, pod_summary, render
from sidecar import direct_build


def gc_events(install, names):
    """Events the garbage collector left on these pods (OwnerRefInvalidNamespace, ...)."""
    return ["%s %s: %s" % (e["involvedObject"].get("name"), e.get("reason"), e.get("message"))
            for e in install.api.events(FN_NS)
            if e["involvedObject"].get("name") in names
            and (e.get("reason") == "OwnerRefInvalidNamespace"
                 or "garbage" in ((e.get("source") or {}).get("component") or "")
                 + (e.get("reportingComponent") or ""))]


def one_pod_per_function(install, pods, n):
    """What is wrong with the pods of a render of n functions ([] when nothing)."""
    problems = []
    if len(pods) != n:
        problems.append("%d pods were created for %d functions" % (len(pods), n))
    for p in pods.values():
        owners = p["created"]["metadata"].get("ownerReferences") or []
        # the owner (the repo-server pod) is in argocd: Kubernetes allows no owner in another
        # namespace, so krmpod must set none
        if owners:
            problems.append("pod %s has ownerReferences %s" % (p["name"], owners))
        if set(exit_codes(p)) != {0}:
            problems.append("pod %s did not run a function to the end (deleted unused?)"
                            % p["name"])
    events = gc_events(install, {p["name"] for p in pods.values()})
    if events:
        problems.append("garbage-collector events: %s" % events)
    return problems


def test_prestart_claims_every_pod_it_starts(install, tmp_path):
    app = copy_fixture_app(tmp_path)
    r, pods = render(install, app, FROM_SHIM="x", KRMPOD_MODE="attach")
    assert_ok(r)
    err = r.stderr.decode()
    assert r.stdout == direct_build(app, tmp_path, FROM_SHIM="x").stdout
    problems = one_pod_per_function(install, pods, 2)
    if not ("2 pods started ahead" in err and "2 claimed, 0 unclaimed deleted" in err):
        problems.insert(0, "generate did not claim both pods it started ahead")
    assert not problems, "prestart:\n  %s\npods:\n  %s\nstderr:\n%s" % (
        "\n  ".join(problems), "\n  ".join(pod_summary(p) for p in pods.values()), err)


def test_prestart_off_one_pod_per_function(install, tmp_path):
    app = copy_fixture_app(tmp_path)
    r, pods = render(install, app, FROM_SHIM="x", KRMPOD_PRESTART="false", KRMPOD_MODE="attach")
    assert_ok(r)
    err = r.stderr.decode()
    assert "started ahead" not in err, err
    assert r.stdout == direct_build(app, tmp_path, FROM_SHIM="x").stdout
    problems = one_pod_per_function(install, pods, 2)
    assert not problems, "\n".join(problems + [pod_summary(p) for p in pods.values()])
