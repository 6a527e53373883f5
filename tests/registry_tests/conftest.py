"""The registry client (src/registry/, driven by build/asan/registry-fetch) against real
registries: Debian's docker-registry (distribution 2.8) with TLS, anonymous, with htpasswd
and with token authentication (tests/registrylib.py). One CA and one registry of each kind
per session; a test that stops its registry starts its own."""
import base64
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import registrylib  # noqa: E402

FETCH = os.environ.get("REGISTRY_FETCH", os.path.join(ROOT, "build", "asan", "registry-fetch"))
USERS = {"fnuser": "s3cret-pass"}


@pytest.fixture(scope="session")
def pki(tmp_path_factory):
    return registrylib.Pki(str(tmp_path_factory.mktemp("pki")))


def _registry(pki, **kw):
    try:
        return registrylib.Registry(pki, **kw)
    except registrylib.RegistryError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="session")
def registry(pki):
    reg = _registry(pki)
    yield reg
    reg.stop()


@pytest.fixture(scope="session")
def htpasswd_registry(pki):
    reg = _registry(pki, auth="htpasswd", users=USERS)
    yield reg
    reg.stop()


@pytest.fixture(scope="session")
def token_registry(pki):
    reg = _registry(pki, auth="token", users=USERS)
    yield reg
    reg.stop()


@pytest.fixture
def own_registry(pki):
    """A registry for this test alone (it may stop it)."""
    reg = _registry(pki)
    yield reg
    reg.stop()


def dockerconfig(path, key, user, password, form="auth"):
    """Writes a dockerconfigjson with one entry; returns path."""
    if form == "auth":
        entry = {"auth": base64.b64encode(("%s:%s" % (user, password)).encode()).decode()}
    else:
        entry = {"username": user, "password": password}
    with open(path, "w") as f:
        json.dump({"auths": {key: entry}}, f)
    return str(path)


class Result:
    def __init__(self, proc):
        self.rc, self.out = proc.returncode, proc.stdout
        self.err = proc.stderr.decode(errors="replace")

    def __repr__(self):
        return "rc=%d stdout=%r stderr=%s" % (self.rc, self.out[:200], self.err)


@pytest.fixture(scope="session")
def fetch():
    """fetch(*args, ca=None, auth=None, cache=None, max_bytes=None) runs registry-fetch."""
    if not os.access(FETCH, os.X_OK):
        pytest.fail("%s is missing: run `make build/asan/registry-fetch`" % FETCH)

    def run(*args, ca=None, auth=None, cache=None, max_bytes=None, timeout_ms=None):
        opts = []
        for flag, value in (("--ca", ca), ("--auth", auth), ("--cache", cache),
                            ("--max", max_bytes), ("--timeout", timeout_ms)):
            if value is not None:
                opts += [flag, str(value)]
        proc = subprocess.run([FETCH] + opts + list(args), capture_output=True, timeout=60)
        return Result(proc)

    return run
