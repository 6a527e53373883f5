"""The network gate (KRMPOD_NETWORK_GATE, docs/network.md) on kubesim, which has no network
to enforce policies on and gives pods no API server address: the gate cannot check, the
function never starts, and the error says why from inside the pod (attach mode: the net-gate
init container's own message; exec mode: krmpod call's). Whether a real cluster isolates the
pod: tests/realkube/test_isolation.py."""
from conftest import (EXEC_MODE, HELPER_IMAGE, KUSTOMIZE_RUN, base_env, no_sanitizer_reports,
                      run_shim)

RL = (b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
      b"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n")


def test_a_gate_that_cannot_check_keeps_the_function_from_starting(kubesim):
    env = base_env(kubesim, KRMPOD_NETWORK_GATE="2s", KRMPOD_HELPER_IMAGE=HELPER_IMAGE)
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=RL, env=env)
    err = r.stderr.decode()
    no_sanitizer_reports(err)
    assert r.returncode != 0 and r.stdout == b"", err
    assert "network gate: no address for the API server (KUBERNETES_SERVICE_HOST, " \
           "KUBERNETES_SERVICE_PORT) in this container" \
        in err, err
    if not EXEC_MODE:
        assert "its init container net-gate exited with 3" in err, err


def test_the_gate_needs_the_helper_image(kubesim):
    env = base_env(kubesim, KRMPOD_NETWORK_GATE="2s")
    env.pop("KRMPOD_HELPER_IMAGE", None)
    env.pop("KRMPOD_MODE", None)  # exec mode says it needs the helper image first
    before = len(kubesim.requests())
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=RL, env=env)
    err = r.stderr.decode()
    assert r.returncode != 0 and "KRMPOD_NETWORK_GATE=2s needs KRMPOD_HELPER_IMAGE" in err, err
    assert kubesim.requests()[before:] == [], kubesim.requests()[before:]  # no pod, no request


def test_net_gate_names_a_bad_time():
    import subprocess
    from conftest import KRMPOD_BIN
    r = subprocess.run([KRMPOD_BIN, "net-gate", "10s"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    assert r.returncode == 2, r.stderr.decode()
    assert b"net-gate: 10s is not a number of milliseconds" in r.stderr, r.stderr
