"""Exec mode on the real cluster (docs/internals/exec-mode.md): the pod holds with krmpod
installed by its init container from the pinned sidecar image, each function runs through
pods/exec with its entrypoint from its image config (a real registry on the node's address,
conftest.exec_mode), its output byte for byte the direct run's, its exit code from the
stream. Pod Security "restricted" admits the pod; the kernel's OOM killer is named; a
registry that cannot be reached means exec mode on the image's own entrypoint, said once."""
import re
import time

from apps import copy_fixture_app, fn_app
from conftest import FN_NS, assert_ok, exit_codes, pod_summary, render
from sidecar import direct_build


def test_pipeline_in_exec_mode_is_byte_exact(install, exec_mode, tmp_path):
    app = copy_fixture_app(tmp_path)
    r, pods = render(install, app, FROM_SHIM="shim value", **exec_mode)
    assert_ok(r)
    direct = direct_build(app, tmp_path, FROM_SHIM="shim value")
    assert direct.returncode == 0, direct.stderr.decode()
    assert r.stdout == direct.stdout, (r.stdout.decode(), direct.stdout.decode())
    err = r.stderr.decode()
    assert "add-label: labelled 3 items" in err, err
    assert "krmpod-call-end" not in err, err  # the trailer is krmpod's, never the user's
    assert len(pods) == 2, [pod_summary(p) for p in pods.values()]
    for p in pods.values():
        spec = p["created"]["spec"]
        # no init container: the installer runs first among the containers, its postStart
        # hook copies krmpod before the kubelet starts the function container; the network
        # gate runs in krmpod call/serve
        assert "initContainers" not in spec, pod_summary(p)
        assert [c["name"] for c in spec["containers"]] == ["krmpod", "fn"], pod_summary(p)
        agent, fn = spec["containers"]
        assert agent["image"] == install.pinned_image
        assert agent["command"] == ["krmpod", "hold"]
        assert agent["lifecycle"]["postStart"]["exec"]["command"] == \
            ["krmpod", "install-self", "/krmpod/bin"]
        # the shipped KRMPOD_NETWORK_GATE=10s: krmpod call/serve gate the first function
        # with its other targets: the node's kubelet and, without a grant, the cluster DNS
        assert fn["env"] == [
            {"name": "KRMPOD_NET_GATE_MS", "value": "10000"},
            {"name": "KRMPOD_NET_GATE_NODE",
             "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.hostIP"}}},
            {"name": "KRMPOD_NET_GATE_DNS", "value": "1"}], pod_summary(p)
        assert fn["command"] == ["/krmpod/bin/krmpod", "hold"]
        # both held until the pod was deleted: neither ended on its own with a failure
        assert set(exit_codes(p)) <= {0, 137}, pod_summary(p)
    # no pod log was read: the output came over the exec alone
    assert "/log?" not in err


def test_functions_of_one_key_share_the_render_s_pod(install, exec_mode, tmp_path):
    """Three functions of one image (each its own config): one pod started ahead serves all
    three through the render's session, byte for byte the direct run's, no API request
    per call; the janitor deletes it at the end."""
    app = fn_app(tmp_path, "add-label", data={"key": "team", "value": "x"}, functions=3)
    for i in (1, 2):  # each function its own label
        f = app / ("fn%d.yaml" % i)
        f.write_text(f.read_text().replace("key: team", "key: team%d" % i))
    r, pods = render(install, app, KRMPOD_LOG_LEVEL="debug", **exec_mode)
    assert_ok(r)
    direct = direct_build(app, tmp_path)
    assert direct.returncode == 0, direct.stderr.decode()
    assert r.stdout == direct.stdout, (r.stdout.decode(), direct.stdout.decode())
    err = r.stderr.decode()
    assert b"team2: x" in r.stdout, r.stdout.decode()
    assert len(pods) == 1, [pod_summary(p) for p in pods.values()]
    assert err.count("session call: ") == 3, err
    assert re.findall(r"image=\S+ .* requests=(\d+)", err) == ["0", "0", "0"], err
    assert "1 pods started ahead" in err and "1 claimed, 0 unclaimed deleted" in err, err
    # (the install fixture fails the test if the pod is left)


def test_exit_codes_come_from_the_stream(install, exec_mode, tmp_path):
    for code in (0, 1, 3):
        app = fn_app(tmp_path, "exit-code", name="app%d" % code, data={"code": code})
        r, pods = render(install, app, **exec_mode)
        err = r.stderr.decode()
        assert "exit-code: code %d" % code in err, err
        assert ("exit=%d " % code) in err, err
        if code == 0:
            assert_ok(r)
        else:
            assert r.returncode == 1 and r.stdout == b"", err
            assert "exit status %d" % code in err, err


def test_oom_kill_is_named(install, exec_mode, tmp_path):
    app = fn_app(tmp_path, "exit-code", data={"eat_mb": 400})
    r, pods = render(install, app, KRMPOD_MEMORY_LIMIT="96Mi", KRMPOD_MEMORY_REQUEST="64Mi",
                     **exec_mode)
    err = r.stderr.decode()
    assert r.returncode == 1 and r.stdout == b"", err
    assert "exit=137" in err, err
    assert "killed by the kernel's out-of-memory killer" in err, err  # the cgroup said so
    assert "KRMPOD_MEMORY_LIMIT=96Mi" in err, err


def test_unreachable_registry_means_the_images_own_entrypoint(install, exec_mode, tmp_path):
    """early-say writes a line on stderr before it reads stdin, naming its args, directory
    and env, then ~100 KB. Its config cannot be read: the pod runs its entrypoint held on
    stdin (after the gate, as an init container), and krmpod's call runs what that process
    runs, through pods/exec: the render is the direct run's byte for byte, the early line
    there once, and no attach."""
    app = fn_app(tmp_path, "early-say", envs=["EARLY_SAY=from the app", "EARLY_KIB=100"])
    # A cache of its own: the sidecar's remembers the tag from the tests before (5 min), and
    # then the unreachable registry is never asked (what users get, but not what is tested).
    env = dict(exec_mode, KRMPOD_REGISTRY_MIRRORS="example.com=10.245.0.1:1",
               KRMPOD_CACHE_DIR="/tmp/krmpod-cache-%d" % time.monotonic_ns())
    r, pods = render(install, app, **env)
    assert_ok(r)
    direct = direct_build(app, tmp_path)
    assert direct.returncode == 0, direct.stderr.decode()
    assert r.stdout == direct.stdout, (len(r.stdout), len(direct.stdout))
    err = r.stderr.decode()
    assert "runs in exec mode (KRMPOD_MODE=exec) on its image's own entrypoint: its image " \
           "config cannot be read" in err, err
    early = [l for l in err.splitlines() if "early-say: args=" in l]
    assert len(early) == 1 and early[0].endswith("say=from the app"), err
    [p] = pods.values()
    # the shipped KRMPOD_NETWORK_GATE: the gate as an init container, then the entrypoint
    spec = p["created"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["krmpod", "fn"], pod_summary(p)
    fn = spec["containers"][1]
    assert "command" not in fn and fn["stdin"] is True and not fn.get("stdinOnce"), \
        pod_summary(p)
    assert [c["command"] for c in spec["initContainers"]] == \
        [["krmpod", "net-gate", "10000"]], pod_summary(p)
    assert p["created"]["metadata"]["namespace"] == FN_NS
