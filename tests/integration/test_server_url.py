"""Where the API server is and how krmpod trusts it: one server URL and one set of TLS
settings, the same for REST (libcurl) and for streams (libwebsockets).

- An API server behind a proxy at https://host/k8s/ (kubesim --path-prefix /k8s): every
  request, REST and attach alike, goes under the prefix, so a function runs end to end, its
  output byte-exact. Without the prefix the same server answers 404 and krmpod says so.
- insecure-skip-tls-verify as kubectl honours it: the server's certificate is not verified
  (for REST and attach alike), with a warning; together with a certificate authority it is
  refused, as kubectl refuses it. Without either, the system CA bundle does not trust
  kubesim's CA, and krmpod fails instead of connecting.
"""
import json
import os
import random

import pytest

from conftest import STREAM, KUSTOMIZE_RUN, Kubesim, base_env, no_sanitizer_reports, run_shim
from kubesim_lib import testing


@pytest.fixture(scope="module")
def prefixed_session():
    yield from testing.session("krmpod-prefix-", lambda state: Kubesim(state, path_prefix="/k8s"))


@pytest.fixture
def prefixed(prefixed_session):
    """kubesim serving the API under /k8s; no pod may be left behind."""
    yield from testing.no_pods_left(prefixed_session)


def kubeconfig_variant(sim, tmp_path, name, cluster_edit):
    """A copy of sim's kubeconfig with its cluster entry changed by cluster_edit(dict)."""
    with open(sim.kubeconfig) as f:
        kc = json.load(f)
    cluster_edit(kc["clusters"][0]["cluster"])
    path = tmp_path / name
    path.write_text(json.dumps(kc))
    return str(path)


def test_function_runs_under_a_path_prefix(prefixed):
    with open(prefixed.kubeconfig) as f:
        server = json.load(f)["clusters"][0]["cluster"]["server"]
    assert server.endswith("/k8s/"), server
    data = bytes(random.Random(3).getrandbits(8) for _ in range(200_000))
    before = len(prefixed.requests())
    r = run_shim(prefixed, KUSTOMIZE_RUN + ["example.com/cat:v1"], stdin=data)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == data
    no_sanitizer_reports(r.stderr)
    lines = prefixed.requests()[before:]
    # the pod was created, watched, attached to and deleted, all through the prefix
    for what in (" POST /api/v1/namespaces/default/pods?", "/pods?watch=1",
                 "/%s?container=fn" % STREAM, " DELETE /api/v1/namespaces/default/pods/"):
        assert any(what in line for line in lines), (what, lines)
    assert not any(" 404" in line for line in lines), lines


def test_without_the_prefix_the_proxy_answers_404(prefixed, tmp_path):
    kc = kubeconfig_variant(prefixed, tmp_path, "no-prefix",
                            lambda c: c.update(server=c["server"].replace("/k8s/", "")))
    r = run_shim(prefixed, KUSTOMIZE_RUN + ["example.com/cat:v1"], stdin=b"x",
                 env=base_env(prefixed, KUBECONFIG=kc))
    assert r.returncode == 125, r.stderr.decode()
    err = r.stderr.decode()
    assert "POST /api/v1/namespaces/default/pods?fieldValidation=Strict: 404" in err, err
    no_sanitizer_reports(r.stderr)


def test_insecure_skip_tls_verify_is_honoured_with_a_warning(kubesim, tmp_path):
    def insecure(c):
        del c["certificate-authority-data"]
        c["insecure-skip-tls-verify"] = True
    kc = kubeconfig_variant(kubesim, tmp_path, "insecure", insecure)
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat:v1"], stdin=b"hello\n",
                 env=base_env(kubesim, KUBECONFIG=kc))
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"hello\n"  # REST and the attach both connected unverified
    err = r.stderr.decode()
    assert "sets insecure-skip-tls-verify: the API server's certificate is not verified" in err
    no_sanitizer_reports(r.stderr)


def test_insecure_with_a_certificate_authority_is_refused(kubesim, tmp_path):
    kc = kubeconfig_variant(kubesim, tmp_path, "both",
                            lambda c: c.update({"insecure-skip-tls-verify": True}))
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat:v1"], stdin=b"x",
                 env=base_env(kubesim, KUBECONFIG=kc))
    assert r.returncode == 125, r.stderr.decode()
    err = r.stderr.decode()
    assert ('cluster "kubesim" sets insecure-skip-tls-verify and a certificate-authority: '
            "specifying a root certificates file with the insecure flag is not allowed") in err
    assert "POST" not in err  # refused before any request
    no_sanitizer_reports(r.stderr)


def test_without_a_ca_the_system_bundle_does_not_trust_kubesim(kubesim, tmp_path):
    kc = kubeconfig_variant(kubesim, tmp_path, "no-ca",
                            lambda c: c.pop("certificate-authority-data"))
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat:v1"], stdin=b"x",
                 env=base_env(kubesim, KUBECONFIG=kc))
    assert r.returncode == 125, r.stderr.decode()
    err = r.stderr.decode()
    assert "certificate" in err.lower(), err
    assert r.stdout == b""
    no_sanitizer_reports(r.stderr)
