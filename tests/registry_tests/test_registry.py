"""The registry client against a real registry: pulls byte-exact, credentials (none,
right, wrong; Basic and token), image configs behind an index, references that name
nothing, the content cache without a registry, and HTTPS fetches with their limits."""
import base64
import hashlib
import json
import os
import re

import pytest
from conftest import USERS, dockerconfig
import registrylib

CATALOG = "application/vnd.krmpod.catalog.v1+yaml"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
USER, PASSWORD = next(iter(USERS.items()))
# Every byte value, and more than one read's worth.
BINARY = bytes(range(256)) * 300 + b"\x00end\n"


def digest_line(result):
    m = re.search(r"^digest: (sha256:[0-9a-f]{64})$", result.err, re.M)
    return m.group(1) if m else None


# --- Anonymous pulls ------------------------------------------------------------------


def test_anonymous_layer_pull_is_byte_exact(registry, fetch, pki):
    manifest, layer = registry.push_artifact("fns/catalog", "v1", CATALOG, BINARY)
    assert layer == "sha256:" + hashlib.sha256(BINARY).hexdigest()
    for ref in ("%s/fns/catalog:v1" % registry.host, "oci://%s/fns/catalog@%s"
                % (registry.host, manifest)):
        r = fetch("layer", ref, CATALOG, ca=pki.ca)
        assert r.rc == 0, r
        assert r.out == BINARY
        assert digest_line(r) == layer


def test_tls_is_verified(registry, fetch):
    registry.push_artifact("fns/catalog", "tls", CATALOG, b"catalog: []\n")
    r = fetch("layer", "%s/fns/catalog:tls" % registry.host, CATALOG)
    assert r.rc == 1, r
    assert "NET: " in r.err and "KRMPOD_REGISTRY_CA" in r.err, r


def test_wrong_media_type_and_size_cap(registry, fetch, pki):
    registry.push_artifact("fns/catalog", "caps", CATALOG, BINARY)
    ref = "%s/fns/catalog:caps" % registry.host
    r = fetch("layer", ref, "application/x-other", ca=pki.ca)
    assert r.rc == 1, r
    assert ("CONFIG: pull %s: manifest sha256:" % ref) in r.err, r
    assert "has no layer of media type application/x-other (its layers: %s)" % CATALOG in r.err
    r = fetch("layer", ref, CATALOG, ca=pki.ca, max_bytes=1000)
    assert r.rc == 1, r
    assert "is %d bytes, over the limit of 1000 bytes" % len(BINARY) in r.err, r


def test_references_that_name_nothing(registry, fetch, pki):
    registry.push_artifact("fns/catalog", "v1", CATALOG, b"x")
    missing = "sha256:" + "0" * 64
    ref = "%s/fns/catalog@%s" % (registry.host, missing)
    r = fetch("layer", ref, CATALOG, ca=pki.ca)
    assert r.rc == 1, r
    assert r.out == b""
    assert "CONFIG: pull %s: GET https://%s/v2/fns/catalog/manifests/%s: 404 Not Found: " \
           "MANIFEST_UNKNOWN" % (ref, registry.host, missing) in r.err, r
    r = fetch("layer", "%s/fns/catalog:no-such-tag" % registry.host, CATALOG, ca=pki.ca)
    assert r.rc == 1 and "404 Not Found" in r.err and ":no-such-tag" in r.err, r
    r = fetch("layer", "%s/fns/no-such-repo:v1" % registry.host, CATALOG, ca=pki.ca)
    assert r.rc == 1 and "CONFIG: " in r.err and "404 Not Found" in r.err, r
    r = fetch("layer", "%s/fns/Catalog:v1" % registry.host, CATALOG, ca=pki.ca)
    assert r.rc == 1 and "CONFIG: bad OCI reference" in r.err, r


# --- Credentials ----------------------------------------------------------------------


@pytest.fixture(params=["htpasswd", "token"])
def private(request):
    """A registry that wants credentials, by Basic or by the token flow."""
    reg = request.getfixturevalue(request.param + "_registry")
    reg.push_artifact("fns/private", "v1", CATALOG, BINARY)
    return reg


def test_without_credentials_names_the_setting(private, fetch, pki):
    r = fetch("layer", "%s/fns/private:v1" % private.host, CATALOG, ca=pki.ca)
    assert r.rc == 1, r
    assert ("CONFIG: pull %s/fns/private:v1: the registry %s requires credentials: set "
            "KRMPOD_REGISTRY_AUTH to a dockerconfigjson that has them"
            % (private.host, private.host)) in r.err, r


@pytest.mark.parametrize("key,form", [("https://{host}", "auth"), ("{host}", "auth"),
                                      ("{host}", "username"), ("{host}/fns/", "auth"),
                                      ("https://{host}/v2/fns/private", "auth")])
def test_with_a_dockerconfigjson(private, fetch, pki, tmp_path, key, form):
    auth = dockerconfig(tmp_path / "auth.json", key.format(host=private.host), USER,
                        PASSWORD, form)
    r = fetch("layer", "%s/fns/private:v1" % private.host, CATALOG, ca=pki.ca, auth=auth)
    assert r.rc == 0, r
    assert r.out == BINARY
    if private.token_server:
        path, authorization = private.token_server.requests[-1]
        assert authorization == "Basic " + base64.b64encode(
            ("%s:%s" % (USER, PASSWORD)).encode()).decode()
        assert "service=%s" % registrylib.TOKEN_SERVICE in path
        assert "scope=repository%3Afns%2Fprivate%3Apull" in path


def test_wrong_credentials_are_refused(private, fetch, pki, tmp_path):
    auth = dockerconfig(tmp_path / "auth.json", private.host, USER, "wrong-pw-7c1e")
    r = fetch("layer", "%s/fns/private:v1" % private.host, CATALOG, ca=pki.ca, auth=auth)
    assert r.rc == 1, r
    assert ("CONFIG: pull %s/fns/private:v1: the registry %s refused the credentials for "
            "fns/private in %s (KRMPOD_REGISTRY_AUTH, auths.\"%s\")"
            % (private.host, private.host, auth, private.host)) in r.err, r
    assert "wrong-pw-7c1e" not in r.err, r  # the password is never said


@pytest.mark.parametrize("key", ["other.example.com", "{host}/other/", "{ip}:1"])
def test_credentials_for_another_registry(private, fetch, pki, tmp_path, key):
    """A key for another host, another repository path or another port is not used: the
    credentials are never sent (kubelet's matching, registry_auth.h)."""
    auth = dockerconfig(tmp_path / "auth.json",
                        key.format(host=private.host, ip=private.host.rsplit(":", 1)[0]),
                        USER, PASSWORD)
    r = fetch("layer", "%s/fns/private:v1" % private.host, CATALOG, ca=pki.ca, auth=auth)
    assert r.rc == 1, r
    assert "the registry auth file %s (KRMPOD_REGISTRY_AUTH) has none for it: no key of its " \
           "auths matches %s/fns/private" % (auth, private.host) in r.err, r


def test_anonymous_tokens(pki, fetch):
    with registrylib.Registry(pki, auth="token", users=USERS, anonymous=True) as reg:
        reg.push_artifact("fns/public", "v1", CATALOG, b"public: true\n")
        r = fetch("layer", "%s/fns/public:v1" % reg.host, CATALOG, ca=pki.ca)
        assert r.rc == 0, r
        assert r.out == b"public: true\n"
        assert reg.token_server.requests[-1][1] is None  # no credentials were sent


# --- Image configs --------------------------------------------------------------------

CONFIG = {"Entrypoint": ["/usr/local/bin/set-labels"], "Cmd": ["--mode", "krm"],
          "Env": ["PATH=/usr/local/bin:/usr/bin", "FN=set-labels"], "WorkingDir": "/work",
          "User": "65532:65532"}


@pytest.mark.parametrize("index", [False, True])
def test_image_config(registry, fetch, pki, index):
    tag = "index" if index else "plain"
    top, amd64, _ = registry.push_image("fns/set-labels", tag, CONFIG, index=index)
    for ref in ("%s/fns/set-labels:%s" % (registry.host, tag),
                "%s/fns/set-labels@%s" % (registry.host, top)):
        r = fetch("config", ref, ca=pki.ca)
        assert r.rc == 0, r
        got = json.loads(r.out)
        assert got == {"manifestDigest": amd64, "entrypoint": CONFIG["Entrypoint"],
                       "cmd": CONFIG["Cmd"], "env": CONFIG["Env"],
                       "workingDir": CONFIG["WorkingDir"], "user": CONFIG["User"]}


def test_image_config_of_an_artifact(registry, fetch, pki):
    registry.push_artifact("fns/catalog", "art", CATALOG, b"x", config_media_type=OCI_EMPTY)
    r = fetch("config", "%s/fns/catalog:art" % registry.host, ca=pki.ca)
    assert r.rc == 1, r
    assert "CONFIG: image config of %s/fns/catalog:art: not a container image: the config of " \
           "manifest sha256:" % registry.host in r.err, r
    assert 'has the media type "%s"' % OCI_EMPTY in r.err, r


# --- The content cache ----------------------------------------------------------------


def test_cache_serves_a_pinned_reference_without_the_registry(own_registry, fetch, pki,
                                                              tmp_path):
    reg = own_registry
    manifest, layer = reg.push_artifact("fns/catalog", "v1", CATALOG, BINARY)
    cache = str(tmp_path / "cache")
    pinned = "%s/fns/catalog@%s" % (reg.host, manifest)
    r = fetch("layer", pinned, CATALOG, ca=pki.ca, cache=cache)
    assert r.rc == 0 and r.out == BINARY, r
    cached = os.path.join(cache, "sha256", layer[len("sha256:"):])
    with open(cached, "rb") as f:
        assert f.read() == BINARY
    top, _, _ = reg.push_image("fns/set-labels", "v1", CONFIG, index=True)
    pinned_image = "%s/fns/set-labels@%s" % (reg.host, top)
    config = fetch("config", pinned_image, ca=pki.ca, cache=cache)
    assert config.rc == 0, config
    reg.stop()
    r = fetch("config", pinned_image, ca=pki.ca, cache=cache)
    assert r.rc == 0 and r.out == config.out, r
    r = fetch("layer", pinned, CATALOG, ca=pki.ca, cache=cache)
    assert r.rc == 0, r
    assert r.out == BINARY and digest_line(r) == layer
    # A tag needs the registry (tags move): the cache alone does not answer it.
    r = fetch("layer", "%s/fns/catalog:v1" % reg.host, CATALOG, ca=pki.ca, cache=cache)
    assert r.rc == 1 and "NET: " in r.err, r
    # A corrupted cache file is not used: it is deleted and fetched again (and here the
    # registry is gone).
    with open(cached, "r+b") as f:
        f.write(b"corrupted")
    r = fetch("layer", pinned, CATALOG, ca=pki.ca, cache=cache)
    assert r.rc == 1 and "NET: " in r.err, r
    assert "does not hash to its name" in r.err
    assert not os.path.exists(cached)


# --- HTTPS ----------------------------------------------------------------------------


def test_https_fetch(pki, fetch):
    body = BINARY * 3
    files = {"/catalogs/main.yaml": body}
    with registrylib.HttpsFileServer(pki, files) as srv:
        srv.redirects["/moved"] = srv.url + "/catalogs/main.yaml"
        srv.redirects["/insecure"] = "http://127.0.0.1:%d/catalogs/main.yaml" % srv.port
        r = fetch("https", srv.url + "/catalogs/main.yaml", ca=pki.ca)
        assert r.rc == 0, r
        assert r.out == body
        r = fetch("https", srv.url + "/moved", ca=pki.ca)
        assert r.rc == 0 and r.out == body, r
        r = fetch("https", srv.url + "/insecure", ca=pki.ca)
        assert r.rc == 1 and "https:// URLs only" in r.err, r
        r = fetch("https", srv.url + "/catalogs/main.yaml", ca=pki.ca, max_bytes=len(body) - 1)
        assert r.rc == 1, r
        assert "NET: GET %s/catalogs/main.yaml: the response exceeds the limit of %d bytes" % (
            srv.url, len(body) - 1) in r.err, r
        r = fetch("https", srv.url + "/nothing", ca=pki.ca)
        assert r.rc == 1 and "NET: GET %s/nothing: 404 Not Found" % srv.url in r.err, r
        r = fetch("https", srv.url + "/catalogs/main.yaml")  # without the CA
        assert r.rc == 1 and "KRMPOD_REGISTRY_CA" in r.err, r
        r = fetch("https", "http://127.0.0.1:%d/catalogs/main.yaml" % srv.port, ca=pki.ca)
        assert r.rc == 1 and "CONFIG: " in r.err and "only https:// URLs" in r.err, r
        assert all(a is None for _, a in srv.requests)  # anonymous


# --- Credentials only to the host they belong to (issue 29) ---------------------------


def _basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


@pytest.fixture
def redirecting(registry, pki):
    """(front, storage_users) -> a RedirectingRegistry over the anonymous registry."""
    made = []

    def make(storage_users=None, storage_basic=False):
        registry.push_artifact("fns/redirected", "v1", CATALOG, BINARY)
        reg = registrylib.RedirectingRegistry(pki, registry, USERS, storage_users,
                                              storage_basic)
        made.append(reg)
        return reg

    yield make
    for reg in made:
        reg.stop()


def test_a_blob_store_never_gets_the_registry_credentials(redirecting, fetch, pki, tmp_path):
    """The registry redirects the blob GET to a storage host that challenges with a realm of
    its own: the registry's Basic credentials go neither to the storage host nor to its
    realm; its anonymous token is sent to the storage host only, and the pull is exact."""
    reg = redirecting()
    auth = dockerconfig(tmp_path / "auth.json", reg.host, USER, PASSWORD)
    r = fetch("layer", "%s/fns/redirected:v1" % reg.host, CATALOG, ca=pki.ca, auth=auth)
    assert r.rc == 0, r
    assert r.out == BINARY
    assert any(a == _basic(USER, PASSWORD) for _, a in reg.front_requests), reg.front_requests
    assert reg.storage_requests, "the blob was not fetched from the storage host"
    for path, a in reg.storage_requests:
        assert a is None or a.startswith("Bearer storage-"), (path, a)
    assert any(p.startswith("/token") and a is None for p, a in reg.storage_requests)
    for _, a in reg.front_requests:  # the storage host's token stays with it
        assert a is None or a.startswith("Basic "), a


def test_a_blob_store_that_wants_credentials_of_its_own(redirecting, fetch, pki, tmp_path):
    """A storage realm that refuses anonymous tokens: without an auths entry for the storage
    host the pull fails naming that host and the fix, and the registry's password never
    reaches it; with its own entry, that entry and only that one is sent to its realm."""
    storage_users = {"store-user": "store-pass-19"}
    reg = redirecting(storage_users)
    auth = dockerconfig(tmp_path / "auth.json", reg.host, USER, PASSWORD)
    r = fetch("layer", "%s/fns/redirected:v1" % reg.host, CATALOG, ca=pki.ca, auth=auth)
    assert r.rc == 1, r
    assert reg.storage_host in r.err and "where the registry %s redirected" % reg.host in r.err, r
    assert PASSWORD not in r.err
    for path, a in reg.storage_requests:
        assert a != _basic(USER, PASSWORD), path

    both = tmp_path / "both.json"
    with open(both, "w") as f:
        json.dump({"auths": {
            reg.host: {"auth": base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()},
            reg.storage_host: {"username": "store-user", "password": "store-pass-19"}}}, f)
    del reg.storage_requests[:]
    r = fetch("layer", "%s/fns/redirected:v1" % reg.host, CATALOG, ca=pki.ca, auth=str(both))
    assert r.rc == 0, r
    assert r.out == BINARY
    tokens = [a for p, a in reg.storage_requests if p.startswith("/token")]
    assert tokens == [_basic("store-user", "store-pass-19")], reg.storage_requests


def test_a_blob_store_that_asks_for_basic_credentials(redirecting, fetch, pki, tmp_path):
    """A storage host whose own challenge is Basic: without an auths entry for it the pull
    fails naming it and the fix, and it never sees the registry's credentials; with its own
    entry, it gets that one."""
    reg = redirecting({"store-user": "store-pass-23"}, storage_basic=True)
    auth = dockerconfig(tmp_path / "auth.json", reg.host, USER, PASSWORD)
    r = fetch("layer", "%s/fns/redirected:v1" % reg.host, CATALOG, ca=pki.ca, auth=auth)
    assert r.rc == 1, r
    assert ("%s, where the registry %s redirected the request, asks for Basic authentication, "
            "and KRMPOD_REGISTRY_AUTH has no credentials for %s" % (
                reg.storage_host, reg.host, reg.storage_host)) in r.err, r
    assert "add an auths entry for %s" % reg.storage_host in r.err, r
    assert all(a != _basic(USER, PASSWORD) for _, a in reg.storage_requests), \
        reg.storage_requests
    both = tmp_path / "both.json"
    with open(both, "w") as f:
        json.dump({"auths": {
            reg.host: {"username": USER, "password": PASSWORD},
            reg.storage_host: {"username": "store-user", "password": "store-pass-23"}}}, f)
    del reg.storage_requests[:]
    r = fetch("layer", "%s/fns/redirected:v1" % reg.host, CATALOG, ca=pki.ca, auth=str(both))
    assert r.rc == 0 and r.out == BINARY, r
    assert [a for _, a in reg.storage_requests][-1] == _basic("store-user", "store-pass-23")
    assert all(a != _basic(USER, PASSWORD) for _, a in reg.storage_requests)
