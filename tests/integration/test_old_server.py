"""Old servers fail clearly: krmpod needs Kubernetes 1.30+ (WebSocket v5.channel.k8s.io).
A kubesim started with --server-version 1.20 answers /version with 1.20 and refuses a v5
stream upgrade with 403 and an empty body, as a real 1.20 API server does. `krmpod doctor`
says so up front; a function's refused attach names the version first, then RBAC. /version
is read only on that failure path, never on the way of a function that works."""
import re
import subprocess

import pytest

from conftest import (STREAM, KRMPOD_BIN, KUSTOMIZE_RUN, Kubesim, base_env, no_sanitizer_reports,
                      run_shim)
from kubesim_lib import testing


@pytest.fixture(scope="module")
def old_session():
    yield from testing.session("krmpod-old-", lambda state: Kubesim(state, server_version="1.20"))


@pytest.fixture
def old(old_session):
    """A Kubernetes 1.20 kubesim; no pod may be left behind."""
    yield from testing.no_pods_left(old_session)


def doctor(sim):
    return subprocess.run([KRMPOD_BIN, "doctor"], env=base_env(sim), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)


def version_requests(sim):
    return [line for line in sim.requests() if " GET /version " in line]


def test_doctor_fails_on_1_20_naming_both_versions(old):
    r = doctor(old)
    out = r.stdout.decode()
    assert r.returncode == 1, out + r.stderr.decode()
    assert ("[FAIL] server version: Kubernetes v1.20.0-kubesim is too old: krmpod needs 1.30 "
            "or newer") in out, out
    assert "upgrade the cluster" in out
    no_sanitizer_reports(r.stderr)


def test_doctor_is_green_on_1_34(kubesim):
    r = doctor(kubesim)
    out = r.stdout.decode()
    assert ("[ok  ] server version: Kubernetes v1.34.0-kubesim (krmpod needs 1.30 or newer)"
            in out), out


def test_shim_on_1_20_names_the_version_then_rbac(old):
    before = len(version_requests(old))
    r = run_shim(old, KUSTOMIZE_RUN + ["example.com/cat:v1"], stdin=b"kind: ResourceList\n")
    err = r.stderr.decode()
    assert r.returncode == 125, err
    assert r.stdout == b""
    no_sanitizer_reports(r.stderr)
    line = next((l for l in err.splitlines() if "error:" in l), "")
    assert "403 Forbidden: the API server refused the stream upgrade" in line, err
    assert ("likely cause: the server runs Kubernetes v1.20.0-kubesim, older than 1.30, the "
            "first release with the v5.channel.k8s.io stream protocol") in line, err
    assert "upgrade the cluster to 1.30 or newer" in line, err
    assert ("other possible cause: RBAC: the credentials need pods/%s create and get in "
            "namespace default" % STREAM) in line, err
    assert line.index("v1.20.0-kubesim") < line.index("RBAC"), line
    # the failure path read the version once; the pod was deleted (the fixture checks)
    assert len(version_requests(old)) == before + 1, version_requests(old)
    # the attach was the request refused, with an empty body: 403 in kubesim's log
    assert any(re.search(r" GET /api/v1/namespaces/default/pods/krmpod-cat-\w+/%s\?\S* 403$"
                         % STREAM, l) for l in old.requests()), old.requests()[-5:]


def test_a_working_function_never_reads_the_version(kubesim):
    before = len(version_requests(kubesim))
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat:v1"], stdin=b"x")
    assert r.returncode == 0, r.stderr.decode()
    assert version_requests(kubesim)[before:] == []
