"""Issue 29, item 5, on the real cluster: the sweep deletes only what no live render owns.

Two sidecars share the functions namespace: the installed one (A) renders, and another
(B: a second `krmpod gc` process in the same container, with its own owner name and a clock
moved ahead by KRMPOD_CLOCK_OFFSET) sweeps meanwhile. Every age the sweep judges comes from
the API server's clock, so B's clock changes nothing; A's shim renews its lease on its pod
(krmpod.dev/renewed, stamped by the API server in managedFields), and once that shim is
SIGKILLed the lease runs out and B deletes the still running pod, long before its deadline."""
import time

from apps import fn_app
from conftest import FN_NS, assert_ok

LEASE = {"KRMPOD_LEASE_RENEW": "2s", "KRMPOD_GC_INTERVAL": "0", "KRMPOD_PRESTART": "false"}


def slow_pods(install):
    return [p for p in install.api.pods(FN_NS)
            if p["metadata"]["name"].startswith("krmpod-slow-cat-")]


def renewed(pod):
    value = (pod["metadata"].get("annotations") or {}).get("krmpod.dev/renewed", "0/0")
    return int(value.split("/")[0])


def wait_renewed(install, proc, times, timeout=90):
    """The render's one slow-cat pod once it runs and its shim renewed its lease `times`
    times."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        pods = slow_pods(install)
        if pods and renewed(pods[0]) >= times and pods[0]["status"].get("phase") == "Running":
            return pods[0]
        assert proc.poll() is None, proc.communicate()[1].decode()
        time.sleep(0.5)
    raise AssertionError("no renewal seen: %s" % [p["metadata"] for p in slow_pods(install)])


def gc_b(install, offset):
    """Sidecar B: `krmpod gc` as another replica whose clock runs `offset` ahead."""
    r = install.sidecar.sh("KRMPOD_OWNER_POD=argocd-repo-server-b KRMPOD_OWNER_UID=b "
                           "KRMPOD_CLOCK_OFFSET=%s /usr/local/bin/krmpod gc" % offset)
    assert r.returncode == 0, r.stderr.decode()
    return (r.stdout + r.stderr).decode()


def test_a_sidecar_with_a_clock_ahead_leaves_a_live_render_alone(install, tmp_path):
    app = fn_app(tmp_path, "slow-cat", envs=["SLOW_SECONDS=20"])
    proc = install.sidecar.start_render(app, env=LEASE)
    try:
        pod = wait_renewed(install, proc, 2)
        name = pod["metadata"]["name"]
        # tied to its owner, the installed repo-server pod
        assert pod["metadata"]["annotations"]["krmpod.dev/owner"] == "%s/%s" % (
            install.sidecar.namespace, install.sidecar.pod), pod["metadata"]
        # the API server stamps the renewals (no subresource) apart from the kubelet's
        # status writes (subresource status): the sweep reads only the former
        mf = pod["metadata"]["managedFields"]
        assert any(e.get("subresource") == "status" for e in mf), mf
        assert any(not e.get("subresource") for e in mf), mf
        for offset in ("105s", "600s"):  # near, and past, the pod's deadline on B's clock
            out = gc_b(install, offset)
            assert name not in out, out
            assert [p["metadata"]["name"] for p in slow_pods(install)] == [name]
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        assert b"name: base" in out, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_a_dead_shim_s_running_pod_goes_when_its_lease_runs_out(install, tmp_path):
    app = fn_app(tmp_path, "slow-cat", envs=["SLOW_SECONDS=120"])
    proc = install.sidecar.start_render(app, env=LEASE)
    try:
        name = wait_renewed(install, proc, 1)["metadata"]["name"]
        # SIGKILL to every krmpod process of the render: nothing can clean up or renew
        install.sidecar.sh("for p in /proc/[0-9]*; do case $(cat $p/comm 2>/dev/null) in "
                           "krmpod|docker) kill -9 ${p#/proc/};; esac; done; true")
        proc.communicate(timeout=60)
        [pod] = slow_pods(install)
        assert pod["status"]["phase"] == "Running", pod["status"]
        deadline = time.time() + 30
        out = ""
        while time.time() < deadline and "deleted %s/%s" % (FN_NS, name) not in out:
            out = gc_b(install, "105s")
            time.sleep(1)
        assert "deleted %s/%s (Running, its shim's lease last renewed " % (FN_NS, name) in out, \
            out
        assert "by the API server's clock: the shim is gone)" in out, out
        # it went at three periods (6 s), not at its deadline
        deadline = time.time() + 30
        while time.time() < deadline and slow_pods(install):
            time.sleep(0.5)
        assert slow_pods(install) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
