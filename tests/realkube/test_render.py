"""`krmpod generate` in the installed sidecar, run as Argo CD's CMP server runs it, rendering
through the shipped Role in krmpod-functions on the real kubelet: output byte for byte that
of the same kustomization built here with the functions run directly
(tests/fixtures/direct-docker), stderr, failures, a large ResourceList, mounts, network,
a PodTemplate and Pod Security `restricted`."""
import os
import time
import re

from apptrees import make_resource_list
from apps import MOUNT_DATA, copy_fixture_app, fn_app, mount_app, tree
from conftest import (FN_NS, assert_ok, containers, dump, fn_container, pod_summary,
                      recorded_entrypoints, render)
from images import FN_IMAGE
from sidecar import direct_build


def test_pipeline_is_byte_exact_with_the_direct_run(install, tmp_path):
    app = copy_fixture_app(tmp_path)
    r, pods = render(install, app, FROM_SHIM="shim value")
    assert_ok(r)
    direct = direct_build(app, tmp_path, FROM_SHIM="shim value")
    assert direct.returncode == 0, direct.stderr.decode()
    assert r.stdout == direct.stdout, "sidecar:\n%s\ndirect:\n%s" % (
        r.stdout.decode(), direct.stdout.decode())
    err = r.stderr.decode()
    assert "add-label: labelled 3 items" in err, err  # the function's stderr, passed through
    assert err.count("image=example.com/fns/") == 2, err  # one line per function
    images = sorted(fn_container(p["created"])["image"] for p in pods.values())
    assert set(images) == {FN_IMAGE % "add-label", FN_IMAGE % "gen-configmap"}, \
        [pod_summary(p) for p in pods.values()]
    for p in pods.values():
        exits = [s["state"]["terminated"]["exitCode"] for _, _, o in p["events"]
                 for s in (o.get("status") or {}).get("containerStatuses") or []
                 if "terminated" in s.get("state", {})]
        if exits:
            assert set(exits) == {0}, pod_summary(p)


def test_output_written_before_the_attach_is_kept(install, tmp_path):
    """stderr-first writes to stderr at once, before it reads stdin. The sidecar cannot read
    its image config; with its entrypoint recorded in an admin catalog it runs in exec mode,
    where nothing is written before krmpod is there: the line arrives exactly once, every
    time, and the output is the direct run's (issue 29)."""
    app = fn_app(tmp_path, "stderr-first")
    direct = direct_build(app, tmp_path)
    env = recorded_entrypoints(install, "stderr-first")
    for _ in range(5):
        r, pods = render(install, app, **env)
        assert_ok(r)
        err = r.stderr.decode()
        assert err.count("hello from stderr before stdin") == 1, err
        assert r.stdout == direct.stdout, (r.stdout, direct.stdout)
        assert containers(pods) == [["krmpod", "fn"]], containers(pods)


def test_failing_function_fails_the_render_with_its_stderr(install, tmp_path):
    app = fn_app(tmp_path, "fail")
    r, pods = render(install, app)
    err = r.stderr.decode()
    assert r.returncode == 1, (r.returncode, err)
    assert r.stdout == b"", r.stdout
    assert "fail: boom" in err, err
    assert "no manifests were printed" in err, err
    if containers(pods) == [["fn"]]:  # attach mode: the exit code is the container's
        exits = {s["state"]["terminated"]["exitCode"] for p in pods.values()
                 for _, _, o in p["events"]
                 for s in (o.get("status") or {}).get("containerStatuses") or []
                 if "terminated" in s.get("state", {})}
        assert exits == {3}, [pod_summary(p) for p in pods.values()]
    else:  # exec mode (its own entrypoint here): the call's, on the stream
        assert containers(pods) == [["krmpod", "fn"]], containers(pods)
        assert re.search(r"image=example\.com/fns/fail:v1 .* exit=3 ", err), err


def large_run(install, src, env):
    """tests/integration/test_large.py's 50 MB ResourceList through `cat`, by `krmpod run`
    in the sidecar (its in-cluster credentials and namespace) with env: (stdout, stderr, the
    pods created); the output is compared with the input in the container."""
    remote = "/tmp/large-%d.yaml" % os.getpid()
    with open(src, "rb") as f:
        install.sidecar.put(f, remote)
    mark = install.recorder.mark()
    prefix = " ".join("%s=%s" % kv for kv in sorted(env.items()))
    r = install.sidecar.sh(
        '{ %s /usr/local/bin/krmpod run "$2" < "$1"; echo "krmpod exit $?" >&2; } | '
        'cmp - "$1" && echo same; rm -f "$1"' % prefix, remote, FN_IMAGE % "cat", timeout=300)
    install.recorder.settle()
    return r.stdout.decode(), r.stderr.decode(errors="replace"), install.recorder.pods_since(mark)


def test_large_resource_list_streams_through(install, tmp_path):
    """50 MB through a real pod and back, whole. In exec mode (cat's entrypoint recorded in an
    admin catalog) every byte is counted. In attach mode the kubelet rotates the pod log past
    its size limit, so krmpod cannot prove that nothing was written before it attached: the
    run is whole, or fails closed saying so; never short with exit 0."""
    src = str(tmp_path / "rl.yaml")
    make_resource_list(src, 50 * 1024 * 1024)
    out, err, pods = large_run(install, src, recorded_entrypoints(install, "cat"))
    assert "krmpod exit 0" in err, err
    assert out.strip() == "same", "the output differs from the 50 MB input: %s %s" % (out, err)
    assert containers(pods) == [["krmpod", "fn"]], containers(pods)
    out, err, pods = large_run(install, src, {"KRMPOD_MODE": "attach"})
    assert len(pods) == 1 and containers(pods) == [["fn"]], containers(pods)
    if "krmpod exit 0" in err:
        assert out.strip() == "same", "exit 0 with output that differs: %s %s" % (out, err)
    else:
        assert "krmpod exit 125" in err and "does not line up" in err and \
            "cannot be proven complete in attach mode" in err, err


def test_mounts_reach_the_function_byte_for_byte(install, tmp_path):
    """A bind mount of the kustomization's directory arrives through the `mounts` init
    container, which runs `krmpod unpack` from the pinned sidecar image."""
    app = mount_app(tmp_path, [("bind", "./data", "/data", False),
                               ("bind", "./scratch", "/scratch", True)],
                    {"name": "from-mount", "dirs": "/data", "write": "/data,/scratch"})
    tree(app / "data", MOUNT_DATA)
    tree(app / "scratch", {"s.txt": "s\n"})
    r, pods = render(install, app)
    assert_ok(r)
    out = r.stdout.decode()
    direct = direct_build(app, tmp_path)
    assert direct.returncode == 0, direct.stderr.decode()
    # the direct run can write to its read-only mount (nothing enforces it there): compare
    # everything else byte for byte, and the write results on their own
    strip = re.compile(r"^  write\..*\n", re.M)
    assert strip.sub("", out) == strip.sub("", direct.stdout.decode()), \
        "sidecar:\n%s\ndirect:\n%s" % (out, direct.stdout.decode())
    assert "/data/link-to-nested l 555 -> sub/nested.txt" in out, out
    assert "line 000999 of a file" in out
    assert re.search(r"write\.data: 'denied: (Permission denied|Read-only file system)'", out), out
    assert "write.scratch: ok" in out, out
    assert re.search(r"mounts: \d+ entries, \d+ bytes of files", r.stderr.decode()), \
        r.stderr.decode()
    (pod,) = pods.values()
    init = pod["created"]["spec"]["initContainers"]
    # the shipped network gate first, then the mounts, both from the pinned image
    assert [c["name"] for c in init] == ["net-gate", "mounts"], dump(init)
    assert [c["image"] for c in init] == [install.pinned_image] * 2, dump(init)
    assert init[1]["command"][:2] == ["krmpod", "unpack"], init[1]["command"]
    statuses = [s for _, _, o in pod["events"]
                for s in (o.get("status") or {}).get("initContainerStatuses") or []
                if "terminated" in s.get("state", {})]
    assert statuses and statuses[-1]["state"]["terminated"]["exitCode"] == 0, statuses


def network_app(tmp_path, name="app"):
    return fn_app(tmp_path, "add-label", name=name, config_lines=["network: true"],
                  data={"key": "fetched", "value": '"yes"'})


def test_network_refused_unless_allowed_then_granted_with_the_label(install, tmp_path):
    app = network_app(tmp_path)
    r, pods = render(install, app)
    err = r.stderr.decode()
    assert r.returncode == 1 and r.stdout == b"", err
    assert "network" in err, err
    assert pods == {}, [pod_summary(p) for p in pods.values()]
    # the admin allows it for this run (the sidecar's KRMPOD_ALLOW_NETWORK)
    r, pods = render(install, app, KRMPOD_ALLOW_NETWORK="true")
    assert_ok(r)
    direct = direct_build(app, tmp_path, flags=["--network"])
    assert r.stdout == direct.stdout, (r.stdout, direct.stdout)
    assert pods, "no function pod was recorded"
    for p in pods.values():
        labels = p["created"]["metadata"]["labels"]
        assert labels.get("krmpod.dev/network") == "granted", pod_summary(p)
        assert not p["created"]["spec"].get("hostNetwork"), pod_summary(p)
    # and without network: true in the config, the label says none
    r, pods = render(install, fn_app(tmp_path, "add-label", name="plain"),
                     KRMPOD_ALLOW_NETWORK="true")
    assert_ok(r)
    assert {p["created"]["metadata"]["labels"]["krmpod.dev/network"] for p in pods.values()} \
        == {"none"}


def test_pod_template_by_name(install, tmp_path):
    """KRMPOD_POD_TEMPLATE names a PodTemplate the admin created in krmpod-functions: the
    function pods start from it (labels, scheduling, a volume and its mount, resources)."""
    tpl = {
        "apiVersion": "v1", "kind": "PodTemplate",
        "metadata": {"name": "functions", "namespace": FN_NS},
        "template": {
            "metadata": {"labels": {"team": "platform"},
                         "annotations": {"example.com/owner": "platform-team"}},
            "spec": {
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "tolerations": [{"key": "dedicated", "operator": "Equal",
                                 "value": "krm-functions", "effect": "NoSchedule"}],
                "volumes": [{"name": "scratch", "emptyDir": {}}],
                "containers": [{"name": "fn", "image": "ignored",
                                "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                                "resources": {"requests": {"cpu": "50m", "memory": "48Mi"}}}],
            }}}
    install.api.call("POST", "/api/v1/namespaces/%s/podtemplates" % FN_NS, tpl)
    try:
        app = copy_fixture_app(tmp_path)
        r, pods = render(install, app, FROM_SHIM="x", KRMPOD_POD_TEMPLATE="functions")
        assert_ok(r)
        assert r.stdout == direct_build(app, tmp_path, FROM_SHIM="x").stdout
        assert len(pods) >= 2, [pod_summary(p) for p in pods.values()]
        for p in pods.values():
            o = p["created"]
            assert o["metadata"]["labels"].get("team") == "platform", pod_summary(p)
            assert o["metadata"]["annotations"].get("example.com/owner") == "platform-team"
            assert o["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}, dump(o["spec"])
            assert any(t.get("key") == "dedicated" for t in o["spec"]["tolerations"])
            assert "scratch" in [v["name"] for v in o["spec"]["volumes"]]
            fn = fn_container(o)
            assert {"name": "scratch", "mountPath": "/scratch"}.items() <= \
                fn["volumeMounts"][0].items(), fn
            # the template's requests (the LimitRange adds ephemeral-storage at admission)
            assert {"cpu": "50m", "memory": "48Mi"}.items() <= \
                fn["resources"]["requests"].items(), fn["resources"]
            assert fn["image"].startswith("example.com/fns/"), fn["image"]
    finally:
        install.api.request("DELETE", "/api/v1/namespaces/%s/podtemplates/functions" % FN_NS)
    # a name that does not exist: an error that says how to create it, and no pod
    r, pods = render(install, copy_fixture_app(tmp_path, name="again"), FROM_SHIM="x",
                     KRMPOD_POD_TEMPLATE="functions")
    err = r.stderr.decode()
    assert r.returncode == 1 and r.stdout == b"", err
    assert "functions" in err and "PodTemplate" in err, err
    assert pods == {}, [pod_summary(p) for p in pods.values()]


def test_pod_security_restricted_admits_every_function_pod(install, tmp_path):
    """krmpod-functions enforces Pod Security `restricted` (the real admission plugin: a
    pod that is not locked down is refused there), and function pods, the mounts init
    container included, are admitted."""
    ns = install.api.get("/api/v1/namespaces/" + FN_NS)
    labels = ns["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted", labels
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "not-restricted"},
           "spec": {"containers": [{"name": "c", "image": "registry.local/busybox:1"}]}}
    status, body = install.api.request(
        "POST", "/api/v1/namespaces/%s/pods?dryRun=All" % FN_NS, bad)
    assert status == 403 and "violates PodSecurity \"restricted:latest\"" in str(body), \
        (status, body)
    app = mount_app(tmp_path, [("bind", "./data", "/data", False),
                               ("tmpfs", None, "/work", True)],
                    {"name": "ps", "dirs": "/data"})
    tree(app / "data", {"a.txt": "a\n"})
    r, pods = render(install, app)
    assert_ok(r)
    (pod,) = pods.values()
    spec = pod["created"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["net-gate", "mounts"]
    # it ran: the kubelet started both containers (krmpod attaches on that event, so the pod
    # may be gone before any relist showed it running)
    name = pod["created"]["metadata"]["name"]
    want = {"spec.initContainers{net-gate}", "spec.initContainers{mounts}",
            "spec.containers{fn}"}
    deadline = time.monotonic() + 10
    while True:
        evs = install.api.get("/api/v1/namespaces/%s/events?fieldSelector=involvedObject.name"
                              "%%3D%s" % (FN_NS, name))["items"]
        started = {e["involvedObject"].get("fieldPath") for e in evs if e["reason"] == "Started"}
        if want <= started or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert want <= started, evs


def test_function_sees_only_what_its_config_names(install, tmp_path):
    """Environment isolation on the real kubelet: named variables (a value, one from the
    sidecar's environment, one from an Application's plugin env as ARGOCD_ENV_<name>) reach
    the function; nothing of the sidecar's (ARGOCD_*, git credentials, KRMPOD_*, the API
    server's address) does."""
    app = fn_app(tmp_path, "printenv", envs=["GREETING=hi", "APP_COLOR", "SIDE_VAR",
                                             "NOT_SET_ANYWHERE"])
    # printenv writes before it reads stdin: exec mode (its entrypoint recorded) proves it
    r, pods = render(install, app, SIDE_VAR="from the sidecar",
                     **recorded_entrypoints(install, "printenv"))
    assert_ok(r)
    fn_env = {}
    for line in r.stderr.decode().splitlines():
        k, sep, v = line.partition("=")
        if sep and k.replace("_", "").isalnum() and k.isupper():
            fn_env[k] = v
    want = {"GREETING": "hi", "APP_COLOR": "green", "SIDE_VAR": "from the sidecar",
            "LOG_TO_STDERR": "true", "STRUCTURED_RESULTS": "true"}
    for k, v in want.items():
        assert fn_env.get(k) == v, (k, fn_env)
    # The kubelet always adds the `kubernetes` Service's variables (enableServiceLinks:
    # false drops only the other Services'): the API server's address, no credentials.
    (pod,) = pods.values()
    assert pod["created"]["spec"]["enableServiceLinks"] is False
    kubelet_adds = {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT",
                    "KUBERNETES_SERVICE_PORT_HTTPS", "KUBERNETES_PORT", "KUBERNETES_PORT_443_TCP",
                    "KUBERNETES_PORT_443_TCP_ADDR", "KUBERNETES_PORT_443_TCP_PORT",
                    "KUBERNETES_PORT_443_TCP_PROTO"}
    leaked = sorted(k for k in fn_env if k.startswith(("ARGOCD", "GIT_", "KRMPOD", "KUBE"))
                    and k not in kubelet_adds)
    assert leaked == [], "reached the function: %s" % leaked
    assert "NOT_SET_ANYWHERE" not in fn_env
    print("the function's environment: %s" % sorted(fn_env))


def test_init_and_discover_hooks(install, tmp_path):
    """plugin.yaml's other two commands, run the same way."""
    app = copy_fixture_app(tmp_path)
    r = install.sidecar.render(app, hook="init")
    assert r.returncode == 0 and b"init: ok" in r.stderr, r
    r = install.sidecar.render(app, hook="discover")
    assert r.returncode == 0, r
    assert r.stdout.decode().splitlines() == [
        "kustomization.yaml: generators: generate.yaml: container function "
        "example.com/fns/gen-configmap:v1",
        "kustomization.yaml: transformers: label.yaml: container function "
        "example.com/fns/add-label:v1"], r.stdout
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "kustomization.yaml").write_text("resources:\n- cm.yaml\n")
    (plain / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    r = install.sidecar.render(plain, hook="discover")
    assert r.returncode == 0 and r.stdout == b"", r


def test_output_written_before_the_attach_is_never_lost(install, tmp_path):
    """The same app rendered 20 times in attach mode (KRMPOD_MODE=attach: the sidecar cannot
    read the image config, nothing records its entrypoint, and the admin chose attach mode
    over the image's own entrypoint, which refuses this wrapper: the next test). The line
    stderr-first writes before it reads stdin cannot be told apart from stdout in the pod log,
    so a render either has all of its output, proven, or fails naming the function, the
    reason and the settings that give exec mode; never exit 0 with a line missing (issue 29:
    it went missing in 5 of 10 renders, with exit 0)."""
    app = fn_app(tmp_path, "stderr-first")
    direct = direct_build(app, tmp_path)
    lost, refused, whole = [], 0, 0
    for i in range(20):
        r, _ = render(install, app, KRMPOD_MODE="attach")
        err = r.stderr.decode()
        if r.returncode != 0:
            assert r.returncode == 1 and r.stdout == b"", (r.returncode, err)
            assert "function example.com/fns/stderr-first:v1" in err, err
            assert "cannot be proven complete in attach mode" in err, err
            assert "KRMPOD_HELPER_IMAGE" in err and "recorded in an admin catalog" in err and \
                "KRMPOD_ATTACH_UNVERIFIED=allow" in err, err
            assert "no manifests were printed" in err, err
            refused += 1
        elif err.count("hello from stderr before stdin") != 1 or r.stdout != direct.stdout:
            lost.append((i, err[-2000:]))
        else:
            whole += 1
    print("20 renders: %d whole, %d refused" % (whole, refused))
    assert lost == [], "%d of 20 renders lost output: %s" % (len(lost), lost[:2])


def test_a_wrapper_that_writes_and_execs_is_refused_on_its_own_entrypoint(install, tmp_path):
    """Under the shipped settings (auto, the helper image) the same app runs on its image's
    own entrypoint: stderr-first is `echo …; exec cat`, so by the call PID 1 is cat and its
    line is only in the pod log. Running cat alone would drop it: every render fails closed,
    naming the function and what gives krmpod the entrypoint, and prints nothing."""
    app = fn_app(tmp_path, "stderr-first")
    for _ in range(3):
        r, pods = render(install, app)
        err = r.stderr.decode()
        assert r.returncode == 1 and r.stdout == b"", (r.returncode, err)
        assert "function example.com/fns/stderr-first:v1: pod " in err, err
        assert "the function's own process (PID 1, started from its image's entrypoint) " \
               "wrote 31 bytes before krmpod's call" in err, err
        assert "record the image's entrypoint in an admin catalog" in err, err
        assert containers(pods) == [["krmpod", "fn"]], containers(pods)
