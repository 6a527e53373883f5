"""Catalogs fetched over the network, end to end through `krmpod generate` on kubesim: an
admin catalog from an HTTPS server and from real OCI registries (Debian's docker-registry:
anonymous, htpasswd basic auth and bearer tokens, all over TLS with a private CA), pins,
the cache, and a kustomization naming a remote catalog. tests/registrylib.py serves them;
test_catalogs.py covers catalogs as files. docs/catalogs.md."""
import base64
import json

import pytest
import yaml

import registrylib
from test_catalogs import LABEL, NAMESPACE, app_tree, catalog
from test_generate import cmp_env, generate

MEDIA = "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"
USERS = {"fnuser": "s3cret-pass"}
CATALOG = yaml.safe_dump(catalog("remote", [LABEL, NAMESPACE]), sort_keys=False).encode()
RESOLVED = "example.com/fns/add-label@sha256:" + LABEL[4]["sha256"]


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return registrylib.Pki(str(tmp_path_factory.mktemp("pki")))


def _registry(pki, **kw):
    try:
        return registrylib.Registry(pki, **kw)
    except registrylib.RegistryError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def registries(pki):
    """One registry of each kind, each holding the catalog as krm/catalog:v1."""
    regs = {}
    try:
        for kind, kw in (("anonymous", {}), ("htpasswd", {"auth": "htpasswd", "users": USERS}),
                         ("token", {"auth": "token", "users": USERS})):
            regs[kind] = _registry(pki, **kw)
            regs[kind].push_artifact("krm/catalog", "v1", MEDIA, CATALOG)
        yield regs
    finally:
        for reg in regs.values():
            reg.stop()


def sha(data):
    return registrylib.sha256_digest(data)


def dockerconfig(tmp_path, host, user, password):
    path = tmp_path / "config.json"
    auth = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
    path.write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    return str(path)


def resolved(r, source):
    """The render succeeded and AddLabel came from the remote catalog `source`."""
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 0, err
    assert ("-> %s, from catalog remote (%s)" % (RESOLVED, source)) in err, err
    assert b"team: platform" in r.stdout, r.stdout


def failed(r, *needles):
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 1, err
    assert r.stdout == b"", "a failed render must print nothing: %r" % r.stdout[:200]
    for n in needles:
        assert n in err, "%r not in %s" % (n, err)
    return err


# ------------------------------------------------------------------------------------ HTTPS

def test_https_admin_catalog(kubesim, tmp_path, pki):
    with registrylib.HttpsFileServer(pki, {"/krm/catalog.yaml": CATALOG}) as srv:
        url = srv.url + "/krm/catalog.yaml"
        app = app_tree(tmp_path, catalogs=())
        resolved(generate(app, cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=url,
                                       KRMPOD_REGISTRY_CA=pki.ca,
                                       KRMPOD_IMAGE_POLICY="catalog")), url)
        # the private CA is not in the system bundle: without KRMPOD_REGISTRY_CA, a TLS error
        # naming the catalog and the setting
        failed(generate(app, cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=url)),
               url, "KRMPOD_REGISTRY_CA")


def test_https_pin_mismatch_names_both_digests(kubesim, tmp_path, pki):
    with registrylib.HttpsFileServer(pki, {"/c.yaml": CATALOG}) as srv:
        wrong = "sha256:" + "1" * 64
        ref = srv.url + "/c.yaml#" + wrong
        app = app_tree(tmp_path, catalogs=())
        failed(generate(app, cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=ref,
                                     KRMPOD_REGISTRY_CA=pki.ca)),
               srv.url + "/c.yaml", wrong, sha(CATALOG))


def test_https_missing_catalog_names_the_status(kubesim, tmp_path, pki):
    with registrylib.HttpsFileServer(pki, {}) as srv:
        url = srv.url + "/nothing.yaml"
        app = app_tree(tmp_path, catalogs=())
        failed(generate(app, cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=url,
                                     KRMPOD_REGISTRY_CA=pki.ca)), url, "404")


def test_pinned_catalog_is_served_from_the_cache(kubesim, tmp_path, pki):
    cache = tmp_path / "cache"
    app = app_tree(tmp_path, catalogs=())
    with registrylib.HttpsFileServer(pki, {"/c.yaml": CATALOG}) as srv:
        url = srv.url + "/c.yaml"
        pinned = url + "#" + sha(CATALOG)
        env = cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=pinned,
                      KRMPOD_REGISTRY_CA=pki.ca, KRMPOD_CACHE_DIR=str(cache))
        resolved(generate(app, env), pinned)
        assert len(srv.requests) == 1
        resolved(generate(app, env), pinned)
        assert len(srv.requests) == 1, "a pinned catalog in the cache was fetched again"
    # the server is gone: the pinned catalog still renders from the cache...
    resolved(generate(app, env), pinned)
    # ...an unpinned one cannot be known to be current, so it is fetched, and that fails
    failed(generate(app, dict(env, KRMPOD_DEFAULT_CATALOGS=url)), url)
    # a cache entry whose content no longer matches its digest is deleted, not used: with
    # the server gone, the render fails
    [entry] = [p for p in cache.rglob("*") if p.is_file() and p.read_bytes() == CATALOG]
    entry.write_bytes(CATALOG.replace(b"remote", b"evil!!"))
    err = failed(generate(app, env), url, "does not hash to its name")
    assert not entry.exists()
    assert "evil" not in err


# -------------------------------------------------------------------------------------- OCI

def test_oci_anonymous(kubesim, tmp_path, registries, pki):
    reg = registries["anonymous"]
    ref = "oci://%s/krm/catalog:v1" % reg.host
    app = app_tree(tmp_path, catalogs=())
    resolved(generate(app, cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=ref,
                                   KRMPOD_REGISTRY_CA=pki.ca,
                                   KRMPOD_IMAGE_POLICY="catalog")), ref)


@pytest.mark.parametrize("kind", ["htpasswd", "token"])
def test_oci_with_credentials(kubesim, tmp_path, registries, pki, kind):
    reg = registries[kind]
    ref = "oci://%s/krm/catalog:v1" % reg.host
    app = app_tree(tmp_path, catalogs=())
    env = cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=ref, KRMPOD_REGISTRY_CA=pki.ca)
    # no credentials: refused, naming the registry, the status and the setting
    failed(generate(app, env), ref, "the registry %s requires credentials" % reg.host,
           "KRMPOD_REGISTRY_AUTH")
    # wrong password: refused the same way, the password not printed
    bad = dockerconfig(tmp_path, reg.host, "fnuser", "wrong-password")
    err = failed(generate(app, dict(env, KRMPOD_REGISTRY_AUTH=bad)), reg.host)
    assert "wrong-password" not in err
    good = dockerconfig(tmp_path, reg.host, "fnuser", USERS["fnuser"])
    r = generate(app, dict(env, KRMPOD_REGISTRY_AUTH=good))
    resolved(r, ref)
    assert USERS["fnuser"].encode() not in r.stderr


def test_oci_by_digest_and_pin(kubesim, tmp_path, registries, pki):
    reg = registries["anonymous"]
    manifest, layer = reg.push_artifact("krm/pinned", "v1", MEDIA, CATALOG)
    assert layer == sha(CATALOG)
    app = app_tree(tmp_path, catalogs=())
    env = cmp_env(kubesim, tmp_path, KRMPOD_REGISTRY_CA=pki.ca)
    by_digest = "oci://%s/krm/pinned@%s" % (reg.host, manifest)
    resolved(generate(app, dict(env, KRMPOD_DEFAULT_CATALOGS=by_digest)), by_digest)
    # the tag moves to other content: a pin on the catalog's digest catches it
    pinned = "oci://%s/krm/pinned:v1#%s" % (reg.host, sha(CATALOG))
    resolved(generate(app, dict(env, KRMPOD_DEFAULT_CATALOGS=pinned)), pinned)
    moved = CATALOG.replace(b"v1.0.0", b"v1.0.1")
    reg.push_artifact("krm/pinned", "v1", MEDIA, moved)
    failed(generate(app, dict(env, KRMPOD_DEFAULT_CATALOGS=pinned,
                              KRMPOD_CACHE_DIR=str(tmp_path / "fresh-cache"))),
           sha(CATALOG), sha(moved))


def test_oci_artifact_without_a_catalog_layer(kubesim, tmp_path, registries, pki):
    reg = registries["anonymous"]
    reg.push_artifact("krm/notacatalog", "v1", "application/vnd.example.other", CATALOG)
    ref = "oci://%s/krm/notacatalog:v1" % reg.host
    app = app_tree(tmp_path, catalogs=())
    failed(generate(app, cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=ref,
                                 KRMPOD_REGISTRY_CA=pki.ca)), ref, MEDIA)


def test_missing_tag_names_the_reference(kubesim, tmp_path, registries, pki):
    reg = registries["anonymous"]
    ref = "oci://%s/krm/catalog:no-such-tag" % reg.host
    app = app_tree(tmp_path, catalogs=())
    failed(generate(app, cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=ref,
                                 KRMPOD_REGISTRY_CA=pki.ca)), ref, "404")


# --------------------------------------------------- a kustomization naming a remote catalog

def test_kustomization_may_name_the_remote_catalog_the_admin_trusts(kubesim, tmp_path,
                                                                    registries, pki):
    reg = registries["anonymous"]
    ref = "oci://%s/krm/catalog:v1" % reg.host
    app = app_tree(tmp_path, catalogs=(ref,))
    env = cmp_env(kubesim, tmp_path, KRMPOD_REGISTRY_CA=pki.ca,
                  KRMPOD_TRUSTED_CATALOGS=ref + "#" + sha(CATALOG),
                  KRMPOD_IMAGE_POLICY="catalog")
    resolved(generate(app, env), ref + "#" + sha(CATALOG))
    # another reference, even to the same content, is not the admin's
    other = "oci://%s/krm/pinned:v1" % reg.host
    reg.push_artifact("krm/pinned", "v1", MEDIA, CATALOG)
    app2 = app_tree(tmp_path, catalogs=(other,), name="app2")
    failed(generate(app2, env), other, "is not trusted", "KRMPOD_TRUSTED_CATALOGS")
