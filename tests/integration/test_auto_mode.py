"""KRMPOD_MODE=auto, krmpod's default (docs/internals/exec-mode.md): a function runs in exec
mode when its image config can be read from its registry (and KRMPOD_HELPER_IMAGE is set);
when it cannot, in exec mode on the image's own entrypoint (its process, held on stdin, gives
the command line the call runs); without KRMPOD_HELPER_IMAGE, in attach mode. What was chosen is said once per image at info level; an image whose
config cannot be read is not asked for again for FN_IMAGE_TAG_TTL_MS. The registry is
registrylib.FixtureRegistry serving kubesim's fixtures under example.com (conftest)."""
import json
import os

from conftest import IMAGES, KUSTOMIZE_RUN, base_env, exec_settings, no_sanitizer_reports, run_shim

CHOSE_EXEC = "runs in exec mode (KRMPOD_MODE=auto)"
CHOSE_PID1 = "runs in exec mode (KRMPOD_MODE=auto) on its image's own entrypoint: its image " \
    "config cannot be read"


def auto_env(kubesim, tmp_path, **extra):
    """The suite's exec settings with KRMPOD_MODE unset: the default, auto."""
    env = dict(exec_settings(), KRMPOD_CACHE_DIR=str(tmp_path / "cache"), KRMPOD_MODE=None)
    env.update(extra)
    return base_env(kubesim, **env)


def streams(kubesim, before):
    """The subresources the run used: ["exec"] or ["attach"] (and the log read)."""
    return sorted({s for l in kubesim.requests()[before:] for s in ("exec", "attach")
                   if "/%s?" % s in l})


def registry():
    return exec_settings.__globals__["_EXEC"]["registry"]


def test_default_is_auto_and_takes_exec_mode_when_the_config_is_readable(kubesim, tmp_path):
    env = auto_env(kubesim, tmp_path)
    before = len(kubesim.requests())
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"a: 1\n", env=env)
    err = r.stderr.decode()
    assert r.returncode == 0 and r.stdout == b"a: 1\n", err
    assert streams(kubesim, before) == ["exec"], kubesim.requests()[before:]
    assert err.count(CHOSE_EXEC) == 1, err
    no_sanitizer_reports(r.stderr)
    # said once per image: the next call of the same image says nothing at info level
    before = len(kubesim.requests())
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"b: 2\n", env=env)
    assert r.returncode == 0 and r.stdout == b"b: 2\n", r.stderr.decode()
    assert streams(kubesim, before) == ["exec"]
    assert CHOSE_EXEC not in r.stderr.decode(), r.stderr.decode()


def test_auto_falls_back_to_the_images_own_entrypoint_once_and_asks_the_registry_once(
        kubesim, tmp_path):
    """An image the registry does not have (its config cannot be read): exec mode on its own
    entrypoint, said once; the next call does not ask the registry again."""
    env = auto_env(kubesim, tmp_path)
    reg = registry()
    image = "example.com/elsewhere/cat-missing:v1"  # no fixture named cat-missing: 404
    calls = len(reg.requests)
    before = len(kubesim.requests())
    r = run_shim(kubesim, KUSTOMIZE_RUN + [image], stdin=b"x", env=env)
    err = r.stderr.decode()
    # the pod cannot start (kubesim has no such executable either), but the choice came first
    assert "%s %s" % (image, CHOSE_PID1) in err, err
    assert len(reg.requests) > calls, "the registry was not asked"
    assert "exec" not in streams(kubesim, before)  # the pod never started
    calls = len(reg.requests)
    r = run_shim(kubesim, KUSTOMIZE_RUN + [image], stdin=b"x", env=dict(env, KRMPOD_LOG_LEVEL="debug"))
    err = r.stderr.decode()
    assert len(reg.requests) == calls, reg.requests[calls:]
    assert "could not be read in the last 300 s" in err, err
    assert CHOSE_PID1 not in err, err
    # other registry settings (credentials, mirrors, CA) ask again
    r = run_shim(kubesim, KUSTOMIZE_RUN + [image], stdin=b"x",
                 env=dict(env, KRMPOD_REGISTRY_MIRRORS=env["KRMPOD_REGISTRY_MIRRORS"] + ",x.io=y"))
    assert len(reg.requests) > calls and CHOSE_PID1 in r.stderr.decode(), r.stderr.decode()


def test_auto_without_a_helper_image_runs_attach_mode(kubesim, tmp_path):
    env = auto_env(kubesim, tmp_path)
    del env["KRMPOD_HELPER_IMAGE"]
    calls = len(registry().requests)
    before = len(kubesim.requests())
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"a: 1\n", env=env)
    err = r.stderr.decode()
    assert r.returncode == 0 and r.stdout == b"a: 1\n", err
    assert streams(kubesim, before) == ["attach"], kubesim.requests()[before:]
    assert "KRMPOD_MODE=auto runs functions in exec mode only with KRMPOD_HELPER_IMAGE" in err, err
    assert len(registry().requests) == calls


def test_explicit_modes_and_a_bad_one(kubesim, tmp_path):
    env = auto_env(kubesim, tmp_path, KRMPOD_MODE="attach")
    before = len(kubesim.requests())
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"a: 1\n", env=env)
    assert r.returncode == 0 and streams(kubesim, before) == ["attach"], r.stderr.decode()
    env = auto_env(kubesim, tmp_path, KRMPOD_MODE="fast")
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"", env=env)
    assert r.returncode == 125, r.stderr.decode()
    assert "KRMPOD_MODE=fast: use auto, attach or exec" in r.stderr.decode()
    env = auto_env(kubesim, tmp_path, KRMPOD_MODE="attach", KRMPOD_WARM_POOL="true")
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"", env=env)
    assert r.returncode == 125 and "KRMPOD_WARM_POOL=true needs KRMPOD_MODE=exec or auto" in \
        r.stderr.decode(), r.stderr.decode()


# ---- an entrypoint recorded in the admin's catalog (issue 29): exec mode without the config --

def pods_posted(kubesim, before):
    return [l for l in kubesim.requests()[before:] if " POST " in " %s " % l and "/pods" in l]


def recording_catalog(tmp_path, image, entrypoint, cmd=None):
    """An admin catalog whose one entry lists image with a recorded entrypoint (and cmd)."""
    path = tmp_path / "recorded.yaml"
    extra = ", cmd: %s" % json.dumps(cmd) if cmd is not None else ""
    path.write_text("apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\n"
                    "metadata: {name: recorded}\nspec:\n  krmFunctions:\n"
                    "  - group: example.com\n    names: {kind: Cat}\n    versions:\n"
                    "    - name: v1\n      runtime: {container: {image: %s, entrypoint: %s%s}}\n"
                    % (image, json.dumps(entrypoint), extra))
    return str(path)


def test_a_recorded_entrypoint_gives_exec_mode_when_the_config_cannot_be_read(kubesim, tmp_path):
    """The registry unreachable (a mirror that refuses): without a record the function runs in
    exec mode on its image's own entrypoint; with the admin catalog's record, in exec mode
    with that entrypoint (no process of the image's own), said once with the catalog."""
    image = "example.com/fns/cat:v1"
    unreachable = dict(KRMPOD_REGISTRY_MIRRORS="example.com=127.0.0.1:1")
    env = auto_env(kubesim, tmp_path, **unreachable)
    before = len(kubesim.requests())
    r = run_shim(kubesim, KUSTOMIZE_RUN + [image], stdin=b"a: 1\n", env=env)
    assert r.returncode == 0 and r.stdout == b"a: 1\n", r.stderr.decode()
    assert CHOSE_PID1 in r.stderr.decode(), r.stderr.decode()
    assert streams(kubesim, before) == ["exec"]
    catalog = recording_catalog(tmp_path, image, [os.path.join(IMAGES, "cat")])
    env = auto_env(kubesim, tmp_path, KRMPOD_CACHE_DIR=str(tmp_path / "cache2"),
                   KRMPOD_DEFAULT_CATALOGS=catalog, **unreachable)
    for i in range(2):
        before = len(kubesim.requests())
        r = run_shim(kubesim, KUSTOMIZE_RUN + [image], stdin=b"b: %d\n" % i, env=env)
        err = r.stderr.decode()
        assert r.returncode == 0 and r.stdout == b"b: %d\n" % i, err
        assert streams(kubesim, before) == ["exec"], kubesim.requests()[before:]
        said = "%s runs in exec mode (KRMPOD_MODE=auto) with the entrypoint recorded by " \
               "example.com/v1 Cat in catalog recorded" % image
        assert err.count(said) == (1 if i == 0 else 0), err
        no_sanitizer_reports(r.stderr)


def test_a_record_that_disagrees_with_the_config_is_refused(kubesim, tmp_path):
    """The registry readable: the record must say what the config says, else nothing runs."""
    image = "example.com/fns/cat:v1"
    catalog = recording_catalog(tmp_path, image, ["/bin/elsewhere"], ["--flag"])
    env = auto_env(kubesim, tmp_path, KRMPOD_DEFAULT_CATALOGS=catalog)
    before = len(kubesim.requests())
    r = run_shim(kubesim, KUSTOMIZE_RUN + [image], stdin=b"a: 1\n", env=env)
    err = r.stderr.decode()
    assert r.returncode != 0 and r.stdout == b"", err
    assert ('image %s: example.com/v1 Cat in catalog recorded (%s) records entrypoint '
            '["/bin/elsewhere"] cmd ["--flag"], but its config in the registry' % (image, catalog)) in err, err
    assert 'says entrypoint ["%s"] cmd []: correct the catalog entry' % os.path.join(IMAGES, "cat") in err, err
    assert pods_posted(kubesim, before) == [], "a pod was created"
    # the record that agrees: exec mode, as the config says
    catalog = recording_catalog(tmp_path, image, [os.path.join(IMAGES, "cat")])
    env["KRMPOD_DEFAULT_CATALOGS"] = catalog
    before = len(kubesim.requests())
    r = run_shim(kubesim, KUSTOMIZE_RUN + [image], stdin=b"a: 1\n", env=env)
    assert r.returncode == 0 and r.stdout == b"a: 1\n", r.stderr.decode()
    assert "(as its catalog entry records)" in r.stderr.decode(), r.stderr.decode()
    assert len(pods_posted(kubesim, before)) == 1


def test_generate_hands_the_records_to_its_shims_and_skips_a_missing_catalog(kubesim, tmp_path):
    """Through generate: the record reaches the shim in generate's policy file (the registry
    unreachable, the function runs in exec mode); an admin catalog that is not on this
    machine (a pinned catalog a repository carries, a laptop's copy of the sidecar's
    settings) is skipped for records, not an error."""
    from test_generate import cmp_env, fn_app, generate
    image = "example.com/fns/cat:v1"
    catalog = recording_catalog(tmp_path, image, [os.path.join(IMAGES, "cat")])
    missing = str(tmp_path / "not-here.yaml")
    settings = dict(exec_settings(), KRMPOD_MODE="auto", KRMPOD_CACHE_DIR=str(tmp_path / "c"),
                    KRMPOD_REGISTRY_MIRRORS="example.com=127.0.0.1:1",
                    KRMPOD_DEFAULT_CATALOGS="%s,%s" % (missing, catalog))
    app = fn_app(tmp_path, image)
    before = len(kubesim.requests())
    r = generate(app, cmp_env(kubesim, tmp_path, **settings))
    err = r.stderr.decode()
    assert r.returncode == 0 and b"name: base" in r.stdout, err
    assert streams(kubesim, before) == ["exec"], kubesim.requests()[before:]
    assert "with the entrypoint recorded by example.com/v1 Cat in catalog recorded" in err, err
