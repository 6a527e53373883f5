"""The shim on its own: argv parsing, byte-exact streams, exit codes, env, errors."""
import os
import random

from conftest import KUSTOMIZE_RUN, base_env, no_sanitizer_reports, run_shim, start_shim


def test_cat_is_byte_exact(kubesim):
    rnd = random.Random(7)
    data = bytes(rnd.getrandbits(8) for _ in range(300_000))  # binary, not just YAML
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat:v1"], stdin=data)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == data
    no_sanitizer_reports(r.stderr)
    # the info line: image, pod and the timings
    err = r.stderr.decode()
    assert "image=example.com/cat:v1" in err and "pod=krmpod-cat-" in err, err
    assert "scheduled=" in err and "attached=" in err and "finished=" in err, err


def test_empty_stdin(kubesim):
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat"], stdin=b"")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b""


def test_function_exit_code_and_stderr(kubesim):
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fail"], stdin=b"x")
    assert r.returncode == 3, r.stderr.decode()
    assert b"fail: boom" in r.stderr
    assert r.stdout == b""


def test_stderr_before_stdin_is_not_lost(kubesim):
    kubesim.faults(start_latency_ms=50)
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/stderr-first"], stdin=b"payload\n")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"payload\n"
    err = r.stderr.decode()
    assert err.count("hello from stderr before stdin") == 1, err


def test_env_kv_and_bare_name(kubesim):
    env = base_env(kubesim, FROM_ENV="from the shim's environment")
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["-e", "KV=a=b", "-e", "FROM_ENV", "-e",
                                           "NOT_SET_ANYWHERE", "example.com/printenv"],
                 stdin=b"in", env=env)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"in"
    err = r.stderr.decode()
    assert "KV=a=b" in err
    assert "FROM_ENV=from the shim's environment" in err
    assert "LOG_TO_STDERR=true" in err
    assert "NOT_SET_ANYWHERE" not in err
    assert "KUBECONFIG" not in err  # nothing leaks that was not named


def test_docker_version(kubesim):
    r = run_shim(kubesim, ["version", "--format", "{{.Client.Version}}"])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.strip() != b""
    r = run_shim(kubesim, ["version"])
    assert r.returncode == 0 and b"krmpod" in r.stdout


def test_unknown_flag_is_125_and_named(kubesim):
    r = run_shim(kubesim, ["run", "--privileged", "example.com/cat"])
    assert r.returncode == 125
    assert b"unknown flag --privileged" in r.stderr
    assert kubesim.pods() == []


def test_mounts_that_cannot_work_are_refused_clearly(kubesim):
    # (working mounts: test_mounts.py)
    r = run_shim(kubesim, ["run", "--mount", "type=bind,source=/a,target=/b", "example.com/cat"])
    assert r.returncode == 125
    assert b"--mount type=bind,source=/a,target=/b" in r.stderr, r.stderr
    assert b"KRMPOD_HELPER_IMAGE is not set" in r.stderr, r.stderr
    r = run_shim(kubesim, ["run", "--mount", "type=volume,source=/a,target=/b", "example.com/cat"])
    assert r.returncode == 125
    assert b"named docker volumes cannot exist in a cluster" in r.stderr, r.stderr


def test_unknown_docker_command(kubesim):
    r = run_shim(kubesim, ["ps"])
    assert r.returncode == 125
    assert b"docker ps" in r.stderr


def test_bad_setting_names_the_variable(kubesim):
    env = base_env(kubesim, KRMPOD_TIMEOUT="soon")
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat"], env=env)
    assert r.returncode == 125
    assert b"KRMPOD_TIMEOUT=soon" in r.stderr
    env = base_env(kubesim, KRMPOD_LOG_LEVEL="chatty")
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat"], env=env)
    assert r.returncode == 125
    assert b"KRMPOD_LOG_LEVEL=chatty" in r.stderr


def test_bad_kubeconfig_is_named(kubesim, tmp_path):
    env = base_env(kubesim, KUBECONFIG=str(tmp_path / "missing"))
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat"], env=env)
    assert r.returncode == 125
    assert b"KUBECONFIG" in r.stderr


def test_pod_is_locked_down_and_labelled(kubesim):
    env = base_env(kubesim, KRMPOD_EXTRA_LABELS="team=platform",
                   KRMPOD_OWNER_POD="argocd-repo-server-x", KRMPOD_OWNER_UID="uid-123")
    proc, body = start_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat"], env=env)
    out, err = proc.communicate(b"x", timeout=30)
    assert proc.returncode == 0, err.decode()
    md, spec = body["metadata"], body["spec"]
    assert md["labels"]["krmpod.dev/function"] == "true"
    assert md["labels"]["krmpod.dev/network"] == "none"
    assert md["labels"]["team"] == "platform"
    assert md["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod",
                                      "name": "argocd-repo-server-x", "uid": "uid-123",
                                      "blockOwnerDeletion": False}]
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    c = spec["containers"][0]
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["stdin"] is True and c["stdinOnce"] is True and c["tty"] is False
    assert spec["activeDeadlineSeconds"] == 300


def test_owner_in_another_namespace_gets_no_owner_reference(kubesim):
    """Kubernetes resolves ownerReferences in the dependent's namespace only: a reference to
    the repo-server pod in `argocd` from a pod in another namespace would get the function
    pod garbage-collected at once."""
    owner = dict(KRMPOD_OWNER_POD="argocd-repo-server-x", KRMPOD_OWNER_UID="uid-123")
    for owner_ns, expect_ref in (("argocd", False), ("default", True)):
        env = base_env(kubesim, KRMPOD_OWNER_NAMESPACE=owner_ns, **owner)
        proc, body = start_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat"], env=env)
        out, err = proc.communicate(b"x", timeout=30)
        assert proc.returncode == 0, err.decode()
        assert ("ownerReferences" in body["metadata"]) == expect_ref, (owner_ns, body)


def test_network_host_refused_unless_allowed(kubesim):
    args = list(KUSTOMIZE_RUN)
    args[args.index("none")] = "host"
    for setting in ({}, {"KRMPOD_ALLOW_NETWORK": "false"}):
        r = run_shim(kubesim, args + ["example.com/cat"], stdin=b"x",
                     env=base_env(kubesim, **setting))
        assert r.returncode == 125 and r.stdout == b""
        err = r.stderr.decode()
        assert "example.com/cat" in err and "KRMPOD_ALLOW_NETWORK" in err, err
    assert kubesim.api_pods() == []  # refused before any pod was made
    r = run_shim(kubesim, args + ["example.com/cat"], env=base_env(
        kubesim, KRMPOD_ALLOW_NETWORK="sometimes"))
    assert r.returncode == 125 and b"KRMPOD_ALLOW_NETWORK=sometimes" in r.stderr


def test_network_labels(kubesim):
    proc, body = start_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat"])
    out, err = proc.communicate(b"x", timeout=30)
    assert proc.returncode == 0, err.decode()
    assert body["metadata"]["labels"]["krmpod.dev/network"] == "none"


def test_network_host_label(kubesim):
    args = list(KUSTOMIZE_RUN)
    args[args.index("none")] = "host"
    proc, body = start_shim(kubesim, args + ["example.com/cat"],
                            env=base_env(kubesim, KRMPOD_ALLOW_NETWORK="true"))
    out, err = proc.communicate(b"x", timeout=30)
    assert proc.returncode == 0, err.decode()
    assert body["metadata"]["labels"]["krmpod.dev/network"] == "granted"
    assert body["spec"].get("hostNetwork") in (None, False)


def test_api_requests_per_function(kubesim):
    before = len(kubesim.requests())
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat"], stdin=b"x")
    assert r.returncode == 0, r.stderr.decode()
    new = [l for l in kubesim.requests()[before:] if "/kubesim/" not in l]
    # create, watch, attach, log snapshot (pre-attach output), delete
    assert len(new) <= 5, new
