"""The three modes and the warm pool on the real cluster (docs/internals/exec-mode.md,
docs/internals/warm-pool.md), rendered in the installed sidecar through the shipped Role:
attach, exec and warm exec give the same bytes for every function fixture; a warm call
reuses a pod that runs already, inside a render through the render's call session; two renders at once never share a pod; a render killed
with SIGKILL leaves a lease that the janitor retires once it ran out; nothing of a call
reaches the next. Every test empties the pool with `krmpod gc` in the sidecar (the tier
checks that no pod is left)."""
import re
import subprocess
import time

import pytest

from apps import copy_fixture_app, fn_app
from conftest import FN_NS, assert_ok, pod_summary, render

# one of krmpod's own log lines ("krmpod[ROLE] ...: message"), its newline included
KRMPOD_LINE = re.compile(r"krmpod\[[a-z-]+\][^\n]*\n")

POOL = {"KRMPOD_WARM_POOL": "true", "KRMPOD_WARM_POOL_IMAGES": "example.com/fns/*"}


def pool_pods(install):
    return [p for p in install.api.pods(FN_NS)
            if "krmpod.dev/pool" in (p["metadata"].get("labels") or {})]


def gc(install, exec_mode, **extra):
    env = dict(exec_mode, **POOL)
    env.update(extra)
    script = " ".join("%s='%s'" % kv for kv in sorted(env.items())) + \
        " /usr/local/bin/krmpod gc"
    r = install.sidecar.sh(script)
    assert r.returncode == 0, r.stderr.decode()
    return (r.stdout + r.stderr).decode()


@pytest.fixture
def pool(install, exec_mode):
    env = dict(exec_mode, **POOL)
    yield env
    out = gc(install, exec_mode, KRMPOD_WARM_POOL_TTL="1ms")
    assert pool_pods(install) == [], out


# every fixture that transforms a ResourceList without mounts, network or failing
PARITY = ["add-label", "cat", "exit-code", "gen-configmap", "set-labels", "set-namespace",
          "slow-cat", "with-help"]


def test_three_modes_give_the_same_bytes(install, exec_mode, pool, tmp_path):
    outputs = {}
    for fixture in PARITY:
        app = fn_app(tmp_path, fixture, name="app-" + fixture,
                     data={"key": "team", "value": "x", "name": "gen", "namespace": "ns1"})
        cold = None
        for mode, env in (("attach", {"KRMPOD_MODE": "attach"}), ("exec", exec_mode),
                          ("cold pool", pool),
                          ("warm pool", pool)):
            if "pool" in mode:  # what the pool did, for a failure's message
                env = dict(env, KRMPOD_LOG_LEVEL="debug")
            r, pods = render(install, app, **env)
            assert_ok(r)
            outputs.setdefault(fixture, {})[mode] = r.stdout
            err = r.stderr.decode()
            if mode == "cold pool":
                cold = (err, [pod_summary(p) for p in pods.values()],
                        [pod_summary({"name": p["metadata"]["name"], "created": p})
                         for p in pool_pods(install)])
            if mode == "warm pool":  # the pod the cold call left, taken again
                assert not pods or all("created" not in p for p in pods.values()), (
                    "the warm render made a pod: %s\n--- its stderr:\n%s\n--- the cold "
                    "render's pods: %s\n--- the pool after it: %s\n--- its stderr:\n%s" % (
                        [pod_summary(p) for p in pods.values()], err, cold[1], cold[2],
                        cold[0]))
                # through the render's session with it: the shim made no request
                assert re.findall(r"image=\S+ .* requests=(\d+)", err) == ["0"], err
            if mode != "attach":
                assert "krmpod-call-end" not in err, err
        modes = outputs[fixture]
        assert len(set(modes.values())) == 1, (fixture, {k: v[:200] for k, v in modes.items()})


def test_a_warm_call_costs_four_requests_and_no_pod_start(install, pool, tmp_path):
    app = fn_app(tmp_path, "cat")
    r, _ = render(install, app, **pool)
    assert_ok(r)
    [p] = pool_pods(install)
    assert p["metadata"]["labels"]["krmpod.dev/pool-state"] == "idle"
    r, pods = render(install, app, KRMPOD_PRESTART="false", KRMPOD_LOG_LEVEL="debug", **pool)
    assert_ok(r)
    err = r.stderr.decode()
    m = re.search(r"pod=(\S+): image=\S+ .*attached=(\d+)ms finished=(\d+)ms exit=0 "
                  r"requests=(\d+)", err)
    assert m and m.group(1) == p["metadata"]["name"], err
    assert int(m.group(4)) == 4, err
    assert pods == {}, "a warm call made a pod: %s" % [pod_summary(x) for x in pods.values()]


def test_two_renders_at_once_never_share_a_pod(install, pool, tmp_path):
    app = fn_app(tmp_path, "slow-cat")
    r, _ = render(install, app, **pool)
    assert_ok(r)
    procs = [install.sidecar.start_render(fn_app(tmp_path, "slow-cat", name="c%d" % i),
                                          env=pool) for i in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    names = []
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err.decode()
        names += re.findall(r"pod=(\S+): image=", err.decode())
    assert len(names) == 2 and len(set(names)) == 2, names


def test_a_killed_render_s_lease_runs_out_and_the_pod_is_retired(install, exec_mode, pool,
                                                                  tmp_path):
    env = dict(pool, KRMPOD_TIMEOUT="10s", KRMPOD_PRESTART="false")
    proc = install.sidecar.start_render(fn_app(tmp_path, "sleep"), env=env)
    deadline = time.time() + 60
    while time.time() < deadline and not [p for p in pool_pods(install) if
                                          p["metadata"]["labels"]["krmpod.dev/pool-state"]
                                          == "busy"]:
        time.sleep(0.2)
    # SIGKILL to every krmpod process of the render in the sidecar: nothing can clean up
    install.sidecar.sh("for p in /proc/[0-9]*; do case $(cat $p/comm 2>/dev/null) in "
                       "krmpod|docker) kill -9 ${p#/proc/};; esac; done; true")
    proc.communicate(timeout=60)
    [p] = pool_pods(install)
    until = int(p["metadata"]["annotations"]["krmpod.dev/lease-until"])
    out = gc(install, exec_mode)
    assert len(pool_pods(install)) == 1, out  # the lease holds
    time.sleep(max(0, until / 1000 - time.time()) + 1)
    out = gc(install, exec_mode)
    assert "its lease ran out (the holder died)" in out, out
    deadline = time.time() + 30
    while time.time() < deadline and pool_pods(install):
        time.sleep(0.2)
    assert pool_pods(install) == []


def test_nothing_of_a_call_reaches_the_next(install, pool, tmp_path):
    app = fn_app(tmp_path, "home-probe")
    for i in range(3):
        r, _ = render(install, app, **pool)
        assert_ok(r)
        err = r.stderr.decode()
        assert "home-probe: HOME=[]" in err and "home-probe: TMPDIR=[]" in err, err
        around = re.search(r"home-probe: around=\[(.*)\]", err).group(1).split()
        assert len(around) == 1 and around[0].startswith("call-"), err
    assert len(pool_pods(install)) == 1


def test_what_one_call_leaves_the_next_never_sees(install, pool, tmp_path):
    """On the real cluster, in exec mode with the pool: a function leaves a file in /dev/shm
    and a process that outlives its call (setsid). The same Application's next render gets
    the same pod and finds neither (krmpod call kills what is left, scanning until nothing
    runs, and wipes /dev/shm and IPC objects); another Application's render never gets that
    pod at all (the Application is part of the pool key). Nor can the function read the
    environment of krmpod's agents in its pod, which run as its user."""
    app = fn_app(tmp_path, "leave-behind", name="leave")
    renders = []
    for tenant in ("team-a", "team-a", "team-b"):
        r, pods = render(install, app, ARGOCD_APP_NAME=tenant, KRMPOD_LOG_LEVEL="debug",
                         **pool)
        assert_ok(r)
        renders.append((r.stderr.decode(), pods))
    first, second, other = renders
    pod_a = re.findall(r"pod=(\S+): image=", first[0])
    assert pod_a and re.findall(r"pod=(\S+): image=", second[0]) == pod_a, second[0]
    # the function's stderr and krmpod's own log lines share one pipe, and a line of one
    # can land inside a line of the other: the function's lines are read without krmpod's
    fn_err = [KRMPOD_LINE.sub("", err) for err, _ in renders]
    assert "leave-behind: shm=[]" in fn_err[1] and "leave-behind: sleepers=[0]" in fn_err[1], \
        second[0]
    # the agents run as the function's user, but it can read none of them (not dumpable)
    for err in fn_err:
        m = re.search(r"leave-behind: agents=\[(\d+)\] readable=\[(\d+)\]", err)
        assert m and int(m.group(1)) >= 2 and m.group(2) == "0", err
    pod_b = re.findall(r"pod=(\S+): image=", other[0])
    assert pod_b and pod_b != pod_a, other[0]
    assert any("created" in p for p in other[1].values()), other[0]
