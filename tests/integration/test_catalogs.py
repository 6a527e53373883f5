"""Function catalogs (KEP-2906) and the image policy, end to end on kubesim: real kustomize
(`kubectl kustomize`) renders through `krmpod generate` as Argo CD runs it, with catalogs
in the repository and from the admin (files here; HTTPS and OCI in test_catalogs_remote.py),
and the shim enforcing the policy again on its own. docs/catalogs.md."""
import hashlib
import json
import os
import subprocess

import pytest
import yaml

from conftest import ATTACH_ALLOW, KUSTOMIZE_RUN, base_env, no_sanitizer_reports, run_shim
from test_generate import cmp_env, generate

HEX = "a428de" + "0" * 58
OTHER = "b" * 64

RL_EMPTY = b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"


def catalog(name, fns):
    """A Catalog document: fns is a list of (group, kind, version, image, extra container
    fields)."""
    return {"apiVersion": "config.kubernetes.io/v1alpha1", "kind": "Catalog",
            "metadata": {"name": name},
            "spec": {"krmFunctions": [
                {"group": g, "names": {"kind": k}, "publisher": "krmpod.test",
                 "description": "%s %s" % (g, k),
                 "versions": [{"name": v, "idempotent": True,
                               "runtime": {"container": dict({"image": img}, **extra)}}]}
                for g, k, v, img, extra in fns]}}


LABEL = ("krmpod.test", "AddLabel", "v1", "example.com/fns/add-label:v1.0.0", {"sha256": HEX})
NAMESPACE = ("krmpod.test", "SetNamespace", "v1", "example.com/fns/set-namespace:v2",
             {})


def write(path, obj):
    path.write_text(obj if isinstance(obj, str) else yaml.safe_dump(obj, sort_keys=False))
    return path


def digest(path):
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def label_config(annotation=None, extra_annotations=None):
    meta = {"name": "label"}
    ann = dict(extra_annotations or {})
    if annotation:
        ann["config.kubernetes.io/function"] = annotation
    if ann:
        meta["annotations"] = ann
    return {"apiVersion": "krmpod.test/v1", "kind": "AddLabel", "metadata": meta,
            "data": {"key": "team", "value": "platform"}}


def app_tree(tmp_path, catalogs=("catalog.yaml",), name="app", config=None,
             catalog_doc=None):
    """An app: a Deployment, a transformer named by kind only, a copy of the catalog."""
    app = tmp_path / name
    app.mkdir()
    k = {"resources": ["deployment.yaml"], "transformers": ["label.yaml"]}
    if catalogs:
        k = {"resources": ["deployment.yaml"], "catalogs": list(catalogs),
             "transformers": ["label.yaml"]}
    write(app / "kustomization.yaml", k)
    write(app / "deployment.yaml", {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "metadata": {"name": "web"},
                                    "spec": {"replicas": 1}})
    write(app / "label.yaml", config or label_config())
    write(app / "catalog.yaml", catalog_doc or catalog("demo", [LABEL, NAMESPACE]))
    return app


def admin_catalog(tmp_path, doc=None, name="catalog.yaml"):
    d = tmp_path / "admin"
    d.mkdir(exist_ok=True)
    return write(d / name, doc or catalog("demo", [LABEL, NAMESPACE]))


def pods_created(kubesim, before):
    return [l for l in kubesim.requests()[before:] if " POST " in l and "/pods?" in l]


def test_repo_catalog_trusted_by_digest_renders_by_digest(kubesim, tmp_path):
    app = app_tree(tmp_path)
    admin = admin_catalog(tmp_path)
    assert digest(admin) == digest(app / "catalog.yaml")
    r = generate(app, cmp_env(kubesim, tmp_path, KRMPOD_TRUSTED_CATALOGS=str(admin)))
    err = r.stderr.decode()
    assert r.returncode == 0, err
    out = list(yaml.safe_load_all(r.stdout))
    assert out[0]["metadata"]["labels"] == {"team": "platform"}
    assert ("catalog: AddLabel krmpod.test/v1 (kustomization.yaml: transformers: "
            "label.yaml) -> example.com/fns/add-label@sha256:%s, from catalog demo (%s)" %
            (HEX, app / "catalog.yaml")) in err, err
    # the pod ran the image by digest
    assert "image=example.com/fns/add-label@sha256:" + HEX in err, err
    # the user's tree was not written
    assert "catalogs" in (app / "kustomization.yaml").read_text()
    assert "config.kubernetes.io/function" not in (app / "label.yaml").read_text()
    assert not [p for p in os.listdir(tmp_path) if p.startswith("krmpod-catalogs")]
    no_sanitizer_reports(r.stderr)


def test_render_is_byte_exact_against_explicit_annotations(kubesim, tmp_path):
    app = app_tree(tmp_path)
    admin = admin_catalog(tmp_path)
    env = cmp_env(kubesim, tmp_path, KRMPOD_TRUSTED_CATALOGS=str(admin))
    by_kind = generate(app, env)
    assert by_kind.returncode == 0, by_kind.stderr.decode()
    explicit = tmp_path / "explicit"
    explicit.mkdir()
    write(explicit / "kustomization.yaml", {"resources": ["deployment.yaml"],
                                            "transformers": ["label.yaml"]})
    write(explicit / "deployment.yaml", (app / "deployment.yaml").read_text())
    write(explicit / "label.yaml", label_config(
        "container:\n  image: example.com/fns/add-label@sha256:%s\n" % HEX))
    written = generate(explicit, env)
    assert written.returncode == 0, written.stderr.decode()
    assert by_kind.stdout == written.stdout


def test_untrusted_catalog_is_refused_before_any_pod(kubesim, tmp_path):
    app = app_tree(tmp_path)
    other = admin_catalog(tmp_path, catalog("other", [NAMESPACE]))
    before = len(kubesim.requests())
    r = generate(app, cmp_env(kubesim, tmp_path, KRMPOD_TRUSTED_CATALOGS=str(other)))
    err = r.stderr.decode()
    assert r.returncode == 1 and r.stdout == b"", err
    assert "catalog catalog.yaml, listed in kustomization.yaml, is not trusted" in err, err
    assert "KRMPOD_TRUSTED_CATALOGS" in err and digest(app / "catalog.yaml") in err, err
    assert pods_created(kubesim, before) == []
    # no trust at all: the same
    r = generate(app, cmp_env(kubesim, tmp_path))
    assert r.returncode == 1 and b"is not trusted" in r.stderr, r.stderr


def test_pins(kubesim, tmp_path):
    app = app_tree(tmp_path, catalogs=())
    admin = admin_catalog(tmp_path)
    good = generate(app, cmp_env(kubesim, tmp_path,
                                 KRMPOD_DEFAULT_CATALOGS="%s#%s" % (admin, digest(admin))))
    assert good.returncode == 0, good.stderr.decode()
    r = generate(app, cmp_env(kubesim, tmp_path,
                              KRMPOD_DEFAULT_CATALOGS="%s#sha256:%s" % (admin, OTHER)))
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "its content has digest %s, but the reference pins sha256:%s" % (
        digest(admin), OTHER) in err, err


def test_defaults_resolve_kind_only_configs_without_catalogs(kubesim, tmp_path):
    app = app_tree(tmp_path, catalogs=())
    admin = admin_catalog(tmp_path)
    r = generate(app, cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=str(admin)))
    assert r.returncode == 0, r.stderr.decode()
    assert b"team: platform" in r.stdout
    # no catalog anywhere: kustomize's own answer, as without krmpod
    r = generate(app, cmp_env(kubesim, tmp_path))
    assert r.returncode == 1 and b"krmpod" not in r.stdout


def test_no_match_is_an_error_naming_what_was_searched(kubesim, tmp_path):
    app = app_tree(tmp_path, config={"apiVersion": "krmpod.test/v9", "kind": "AddLabel",
                                     "metadata": {"name": "x"}})
    admin = admin_catalog(tmp_path)
    r = generate(app, cmp_env(kubesim, tmp_path, KRMPOD_TRUSTED_CATALOGS=str(admin)))
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "no catalog has a function for krmpod.test/v9 AddLabel (searched, in order: demo" \
        in err, err


def test_first_match_across_catalogs_and_layers(kubesim, tmp_path):
    """A base layer and an overlay, each with its own catalog: each layer's configs are
    resolved by its own catalogs first; within a layer the first catalog listed wins."""
    first = catalog("first", [("krmpod.test", "AddLabel", "v1",
                               "example.com/fns/add-label:v7", {})])
    second = catalog("second", [("krmpod.test", "AddLabel", "v1",
                                 "example.com/fns/printenv:v7", {})])
    base = tmp_path / "base"
    base.mkdir()
    write(base / "first.yaml", first)
    write(base / "second.yaml", second)
    write(base / "kustomization.yaml", {"resources": ["cm.yaml"],
                                        "catalogs": ["first.yaml", "second.yaml"],
                                        "transformers": ["label.yaml"]})
    write(base / "cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "base"}})
    write(base / "label.yaml", label_config())
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    write(overlay / "second.yaml", second)
    write(overlay / "kustomization.yaml", {"resources": ["../base"],
                                           "catalogs": ["second.yaml"],
                                           "transformers": ["label.yaml"]})
    write(overlay / "label.yaml", label_config())
    admins = "%s,%s" % (admin_catalog(tmp_path, first), write(tmp_path / "admin" / "s.yaml",
                                                              second))
    r = generate(overlay, cmp_env(kubesim, tmp_path, KRMPOD_TRUSTED_CATALOGS=admins,
                                  **ATTACH_ALLOW))  # printenv writes before it reads
    err = r.stderr.decode()
    assert r.returncode == 0, err
    # where: relative to the kustomization generate runs in
    assert "(../base/kustomization.yaml: transformers: label.yaml) -> " \
        "example.com/fns/add-label:v7 (no digest in the catalog), from catalog first" in err, err
    assert "(kustomization.yaml: transformers: label.yaml) -> example.com/fns/printenv:v7 " \
        "(no digest in the catalog), from catalog second" in err, err


def test_own_runtime_bypasses_the_catalog_but_not_the_policy(kubesim, tmp_path):
    app = app_tree(tmp_path, config=label_config(
        "container:\n  image: example.com/fns/add-label:v1\n"))
    admin = admin_catalog(tmp_path)
    env = cmp_env(kubesim, tmp_path, KRMPOD_TRUSTED_CATALOGS=str(admin))
    r = generate(app, env)
    assert r.returncode == 0, r.stderr.decode()
    assert b"image=example.com/fns/add-label:v1 " in r.stderr
    before = len(kubesim.requests())
    r = generate(app, dict(env, KRMPOD_IMAGE_POLICY="catalog"))
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert ("label.yaml names image example.com/fns/add-label:v1, which the image policy "
            "(KRMPOD_IMAGE_POLICY=catalog) refuses: it is not an image of the admin's "
            "catalogs") in err, err
    assert pods_created(kubesim, before) == []


def shim_env(kubesim, tmp_path, **extra):
    return base_env(kubesim, TMPDIR=str(tmp_path), **extra)


@pytest.mark.parametrize("mode,extra,allowed,refused", [
    ("catalog", {}, "example.com/fns/add-label@sha256:" + HEX, "example.com/fns/cat:v1"),
    ("allowlist", {"KRMPOD_IMAGE_ALLOWLIST": "example.com/fns/c*"}, "example.com/fns/cat:v1",
     "example.com/fns/add-label:v1"),
])
def test_policy_modes_at_generate_and_at_the_shim(kubesim, tmp_path, mode, extra, allowed,
                                                 refused):
    admin = admin_catalog(tmp_path)
    settings = dict(extra, KRMPOD_IMAGE_POLICY=mode, KRMPOD_DEFAULT_CATALOGS=str(admin))
    # at the shim, on its own (kpt, krmpod run): the same policy, resolved there
    ok = run_shim(kubesim, KUSTOMIZE_RUN + [allowed], stdin=RL_EMPTY,
                  env=shim_env(kubesim, tmp_path, **settings))
    assert ok.returncode == 0, ok.stderr.decode()
    before = len(kubesim.requests())
    no = run_shim(kubesim, KUSTOMIZE_RUN + [refused], stdin=b"",
                  env=shim_env(kubesim, tmp_path, **settings))
    assert no.returncode == 125, no.stderr.decode()
    assert ("names image %s, which the image policy (KRMPOD_IMAGE_POLICY=%s) refuses" %
            (refused, mode)) in no.stderr.decode()
    assert pods_created(kubesim, before) == []
    # at generate
    app = app_tree(tmp_path, catalogs=(), config=label_config(
        "container:\n  image: %s\n" % refused))
    r = generate(app, cmp_env(kubesim, tmp_path, **settings))
    assert r.returncode == 1 and b"which the image policy" in r.stderr, r.stderr
    assert b"app/label.yaml" in r.stderr or b"label.yaml names image" in r.stderr, r.stderr
    no_sanitizer_reports(no.stderr)


def test_the_shim_checks_the_policy_generate_resolved(kubesim, tmp_path):
    """Under generate the shim reads the policy file generate wrote (KRMPOD_POLICY_FILE),
    and names the function config in its refusal."""
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"mode": "allowlist", "requireDigest": False,
                                  "allowlist": ["example.com/fns/ok*"], "images": [],
                                  "named": [{"image": "example.com/fns/cat:v1",
                                             "where": "app/kustomization.yaml: transformers: "
                                                      "fn.yaml"}]}))
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"",
                 env=shim_env(kubesim, tmp_path, KRMPOD_POLICY_FILE=str(policy)))
    assert r.returncode == 125, r.stderr.decode()
    assert ("app/kustomization.yaml: transformers: fn.yaml names image example.com/fns/cat:v1, "
            "which the image policy (KRMPOD_IMAGE_POLICY=allowlist) refuses") \
        in r.stderr.decode()


def test_require_digest(kubesim, tmp_path):
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"",
                 env=shim_env(kubesim, tmp_path, KRMPOD_REQUIRE_DIGEST="true"))
    assert r.returncode == 125
    assert b"(KRMPOD_REQUIRE_DIGEST=true) refuses: it is not referenced by digest" in r.stderr
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/cat@sha256:" + HEX],
                 stdin=b"x: 1\n", env=shim_env(kubesim, tmp_path, KRMPOD_REQUIRE_DIGEST="true"))
    assert r.returncode == 0, r.stderr.decode()


def test_network_and_mounts_need_the_entry_to_require_them(kubesim, tmp_path):
    net = ("krmpod.test", "AddLabel", "v1", "example.com/fns/add-label:v3",
           {"requireNetwork": True})
    admin = admin_catalog(tmp_path, catalog("net", [net]))
    settings = {"KRMPOD_IMAGE_POLICY": "catalog", "KRMPOD_DEFAULT_CATALOGS": str(admin)}
    with_net = [a if a != "none" else "host" for a in KUSTOMIZE_RUN]
    ok = run_shim(kubesim, with_net + ["example.com/fns/add-label:v3"], stdin=RL_EMPTY,
                  env=shim_env(kubesim, tmp_path, KRMPOD_ALLOW_NETWORK="true", **settings))
    assert ok.returncode == 0, ok.stderr.decode()
    no_net_entry = admin_catalog(tmp_path, catalog("plain", [LABEL]), name="plain.yaml")
    r = run_shim(kubesim, with_net + ["example.com/fns/add-label@sha256:" + HEX], stdin=RL_EMPTY,
                 env=shim_env(kubesim, tmp_path, KRMPOD_ALLOW_NETWORK="true",
                              KRMPOD_IMAGE_POLICY="catalog",
                              KRMPOD_DEFAULT_CATALOGS=str(no_net_entry)))
    assert r.returncode == 125
    assert b"it asks for network, which its catalog entry" in r.stderr, r.stderr
    # a catalog-resolved function gets network: true only when its entry requires it
    app = app_tree(tmp_path, catalogs=(), name="netapp")
    r = generate(app, cmp_env(kubesim, tmp_path, KRMPOD_ALLOW_NETWORK="true",
                              KRMPOD_LOG_LEVEL="debug",
                              KRMPOD_DEFAULT_CATALOGS=str(admin)))
    assert r.returncode == 0, r.stderr.decode()
    assert b'"krmpod.dev/network":"granted"' in r.stderr
    # mounts asked for by a config whose entry does not require them: refused
    app = app_tree(tmp_path, catalogs=(), name="mountapp", config=label_config(
        extra_annotations={"krmpod.dev/mounts": "[{type: bind, src: ./d, dst: /d}]"}))
    r = generate(app, cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=str(admin)))
    assert r.returncode == 1
    assert b"krmpod.dev/mounts annotation asks for storage mounts, but its catalog entry" \
        in r.stderr, r.stderr


def test_mounts_where_the_entry_requires_them(kubesim, tmp_path):
    mnt = ("krmpod.test", "ReadMount", "v1", "example.com/fns/read-mount:v1",
           {"requireStorageMount": True})
    admin = admin_catalog(tmp_path, catalog("mnt", [mnt]))
    app = tmp_path / "mapp"
    (app / "data").mkdir(parents=True)
    (app / "data" / "a.txt").write_text("alpha\n")
    write(app / "kustomization.yaml", {"generators": ["gen.yaml"]})
    write(app / "gen.yaml", {"apiVersion": "krmpod.test/v1", "kind": "ReadMount",
                             "metadata": {"name": "m", "annotations": {
                                 "krmpod.dev/mounts": "[{type: bind, src: ./data, dst: /data}]"}},
                             "data": {"name": "m", "dirs": "/data"}})
    from conftest import HELPER_IMAGE
    r = generate(app, cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=str(admin),
                              KRMPOD_HELPER_IMAGE=HELPER_IMAGE,
                              KRMPOD_IMAGE_POLICY="catalog"))
    assert r.returncode == 0, r.stderr.decode()
    assert b"alpha" in r.stdout, r.stdout


@pytest.mark.parametrize("change,why", [
    (lambda d: d["spec"]["krmFunctions"][0]["versions"][0]["runtime"]["container"].pop("sha256"),
     "spec.krmFunctions[0].versions[0].runtime.container.sha256: is required: the image's tag "
     "v1.0.0 is a semantic version"),
    (lambda d: d["spec"]["krmFunctions"][0]["versions"][0]["runtime"].update(
        {"exec": {"platforms": []}}),
     "spec.krmFunctions[0].versions[0].runtime.exec: exec runtimes are not supported: krmpod "
     "runs functions only as pods"),
])
def test_invalid_catalogs_fail_the_render_naming_the_field(kubesim, tmp_path, change, why):
    doc = catalog("bad", [LABEL])
    change(doc)
    admin = admin_catalog(tmp_path, doc)
    app = app_tree(tmp_path, catalogs=())
    r = generate(app, cmp_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=str(admin)))
    assert r.returncode == 1, r.stderr.decode()
    assert ("catalog %s: %s" % (admin, why)) in r.stderr.decode(), r.stderr.decode()
    v = subprocess.run([os.environ["KRMPOD_BIN"], "catalog", "validate", str(admin)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert v.returncode == 1 and why.encode() in v.stderr, v.stderr


def test_catalog_view(kubesim, tmp_path):
    app = app_tree(tmp_path)
    admin = admin_catalog(tmp_path)
    env = dict(os.environ, KRMPOD_TRUSTED_CATALOGS=str(admin), TMPDIR=str(tmp_path),
               KRMPOD_IMAGE_POLICY="catalog")
    krmpod = os.environ["KRMPOD_BIN"]
    r = subprocess.run([krmpod, "catalog", "view", str(app)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env)
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    assert "image policy: catalog" in out
    assert "catalog.yaml, in kustomization.yaml: trusted (%s)" % admin in out, out
    assert ("krmpod.test/v1 AddLabel -> example.com/fns/add-label@sha256:%s, publisher "
            "krmpod.test" % HEX) in out, out
    assert "label.yaml: krmpod.test/v1 AddLabel -> example.com/fns/add-label@sha256:" in out
    j = subprocess.run([krmpod, "catalog", "view", str(app), "-o", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    model = json.loads(j.stdout)
    assert model["catalogs"][0]["trusted"] is True
    assert model["resolved"][0]["image"].endswith(HEX)
    y = subprocess.run([krmpod, "catalog", "view", str(app), "-o", "yaml"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert yaml.safe_load(y.stdout) == model
    # the picture is the render's: generate with the same settings runs exactly that image
    before = len(kubesim.requests())
    r = generate(app, cmp_env(kubesim, tmp_path, KRMPOD_TRUSTED_CATALOGS=str(admin),
                              KRMPOD_IMAGE_POLICY="catalog"))
    assert r.returncode == 0, r.stderr.decode()
    assert len(pods_created(kubesim, before)) == 1
    assert ("image=%s " % model["resolved"][0]["image"]).encode() in r.stderr, r.stderr
    # untrusted: shown as such, with the reason, not an error
    env.pop("KRMPOD_TRUSTED_CATALOGS")
    env.pop("KRMPOD_IMAGE_POLICY")  # "catalog" with no admin catalog is itself refused
    r = subprocess.run([krmpod, "catalog", "view", str(app)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env)
    assert r.returncode == 0
    assert "NOT USABLE" in r.stdout.decode() and "is not trusted" in r.stdout.decode()


def test_discover_claims_kind_only_functions(kubesim, tmp_path):
    app = app_tree(tmp_path)
    r = generate(app, cmp_env(kubesim, tmp_path), cmd="discover")
    assert r.returncode == 0, r.stderr.decode()
    assert b"kustomization.yaml: catalog catalog.yaml" in r.stdout
    assert b"label.yaml: function krmpod.test/v1 AddLabel, from a catalog" in r.stdout


def test_a_catalog_file_outside_the_kustomization_is_refused(kubesim, tmp_path):
    """A kustomization's `catalogs:` names files inside its own directory only (kustomize's
    rule for what a kustomization reads): an absolute path (a file of the sidecar's, such as
    /proc/self/environ, whose digest the old code printed in the error), a `../` path and a
    symlink that leads out are refused, naming the entry, before anything is read."""
    admin = admin_catalog(tmp_path)
    env = cmp_env(kubesim, tmp_path, KRMPOD_TRUSTED_CATALOGS=str(admin))
    outside = write(tmp_path / "outside.yaml", catalog("demo", [LABEL, NAMESPACE]))
    cases = [("/proc/self/environ", "is an absolute path"),
             (str(outside), "is an absolute path"),
             ("../outside.yaml", "is outside the kustomization's directory"),
             ("link.yaml", "is outside the kustomization's directory")]
    for i, (entry, why) in enumerate(cases):
        app = app_tree(tmp_path, catalogs=(entry,), name="app%d" % i)
        os.symlink(str(outside), str(app / "link.yaml"))
        before = len(kubesim.requests())
        r = generate(app, env)
        err = r.stderr.decode()
        assert r.returncode != 0 and r.stdout == b"", (entry, err)
        assert "catalogs: %s %s" % (entry, why) in err, (entry, err)
        assert "sha256:" not in err, (entry, err)  # nothing of it was read
        assert pods_created(kubesim, before) == []
    # inside the directory, through a symlink that stays inside: fine
    app = app_tree(tmp_path, catalogs=("sub/inner.yaml",), name="inside")
    (app / "sub").mkdir()
    os.symlink("../catalog.yaml", str(app / "sub" / "inner.yaml"))
    r = generate(app, env)
    assert r.returncode == 0, r.stderr.decode()


def test_a_function_config_outside_the_kustomization_is_never_written_outside_the_copy(
        kubesim, tmp_path):
    """`transformers: [../x.yaml]` with a kind-only config that a catalog resolves: the
    rewrite of that file would land outside the private copy (the old code wrote it into
    the shared TMPDIR). It is an error naming the file, and TMPDIR holds nothing new."""
    repo = tmp_path / "repo"
    repo.mkdir()
    app = app_tree(repo)
    write(repo / "x.yaml", label_config())
    (app / "label.yaml").unlink()
    write(app / "kustomization.yaml", {"resources": ["deployment.yaml"],
                                       "catalogs": ["catalog.yaml"],
                                       "transformers": ["../x.yaml"]})
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    admin = admin_catalog(tmp_path)
    env = cmp_env(kubesim, tmp_path, KRMPOD_TRUSTED_CATALOGS=str(admin), TMPDIR=str(tmpdir))
    r = generate(app, env)
    err = r.stderr.decode()
    assert r.returncode != 0 and r.stdout == b"", err
    assert "x.yaml is outside the kustomization directories of the render" in err, err
    assert sorted(p.name for p in tmpdir.iterdir()) == [], list(tmpdir.iterdir())
