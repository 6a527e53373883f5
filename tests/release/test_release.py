"""`make release` (release/release.mk, docs/release.md), tested from clones of this commit:

  - bad input fails before anything is built, naming what is wrong: no VERSION, a VERSION
    that is not semver, a dirty tree, manifests/ not pinning VERSION, no CHANGELOG section;
    scripts/release-prepare makes a commit that passes those checks;
  - two releases of the same commit, from two clones at different paths, the second with a
    fresh Go build cache and its C dependencies built again, are byte for byte the same;
  - the release passes its own check (release/check_release.py), and the check fails on
    tampered copies: an image file that is not the SBOM's (the layout re-hashed, so it is
    still a valid layout), install.yaml naming another digest or :latest, SBOM versions that
    are not the pins, SHA256SUMS, stray or missing blobs, layer metadata;
  - the CA bundle is what the pinned package's own update-ca-certificates writes.

A dirty working tree is released as a snapshot commit on top of HEAD in the clones (the tests
say so); a clean one as HEAD itself. The C dependencies' source tarballs and the CA .deb are
copied from this checkout's build/ when present (each is checked against its pin anyway).

Environment: RELEASE_ARCHES (as for make; default release.mk's "amd64 arm64"),
KRMPOD_RELEASE_TEST_B_ENV="K=V ..." adds variables to the second release only (to see the
reproducibility test fail: SOURCE_DATE_EPOCH=1).
"""
import copy
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "release"))
import cacerts  # noqa: E402
import oci_image  # noqa: E402
import relutil  # noqa: E402

PY = "/usr/bin/python3"


def sh(cmd, cwd, env=None, timeout=None, check=False):
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=timeout)
    out = r.stdout.decode(errors="replace")
    if check and r.returncode != 0:
        raise AssertionError("%s (in %s): exit %d\n%s" % (" ".join(cmd), cwd, r.returncode,
                                                          out[-6000:]))
    return r.returncode, out


def git(cwd, *args):
    return sh(["git", "-c", "user.name=krmpod release test", "-c",
               "user.email=release-test@krmpod.invalid"] + list(args), cwd, check=True)[1]


def clone(dst, src):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    sh(["git", "clone", "-q", "--no-hardlinks", src, dst], os.path.dirname(dst), check=True)
    # what a release downloads, from this checkout's caches
    os.makedirs(os.path.join(dst, "build", "src"), exist_ok=True)
    for d, pattern in (("src", r"\.orig\.tar\.|\.deb$"), ("release/ca", r"\.deb$|^apt-filename$")):
        here = os.path.join(ROOT, "build", d)
        if os.path.isdir(here):
            for n in os.listdir(here):
                if re.search(pattern, n):
                    os.makedirs(os.path.join(dst, "build", d), exist_ok=True)
                    shutil.copyfile(os.path.join(here, n), os.path.join(dst, "build", d, n))
    return dst


@pytest.fixture(scope="session")
def origin(tmp_path_factory):
    """A repository whose HEAD is the commit to release: this checkout when clean, else a
    snapshot of its working tree committed on top of HEAD."""
    base = str(tmp_path_factory.mktemp("origin"))
    dst = clone(os.path.join(base, "krmpod"), ROOT)
    changed = sh(["git", "status", "--porcelain", "--untracked-files=all"], ROOT,
                 check=True)[1].splitlines()
    changed = [l for l in changed if not l[3:].startswith("dist/")]
    if changed:
        print("release tests: the working tree is dirty; releasing a snapshot of it (%d "
              "changed paths)" % len(changed))
        for line in changed:
            path = line[3:].split(" -> ")[-1].strip('"')
            src, d = os.path.join(ROOT, path), os.path.join(dst, path)
            if os.path.lexists(src):
                os.makedirs(os.path.dirname(d), exist_ok=True)
                shutil.copy2(src, d, follow_symlinks=False)
            elif os.path.lexists(d):
                os.unlink(d)
        git(dst, "add", "-A")
        git(dst, "commit", "-q", "-m", "release test: snapshot of the working tree")
    return dst


@pytest.fixture(scope="session")
def version(origin):
    with open(os.path.join(origin, "manifests", "kustomization.yaml")) as f:
        m = re.search(r"newTag:\s*(\S+)", f.read())
    assert m, "manifests/kustomization.yaml has no newTag"
    return m.group(1)


def make_release(repo, dist, version, extra_env=None, timeout=7200):
    env = dict(os.environ)
    env.update(extra_env or {})
    for k in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "DIST", "VERSION"):
        env.pop(k, None)
    t0 = time.time()
    code, out = sh(["make", "release", "VERSION=" + version, "DIST=" + dist], repo, env=env,
                   timeout=timeout)
    with open(dist.rstrip("/") + ".log", "w") as f:
        f.write(out)
    return code, out, time.time() - t0


@pytest.fixture(scope="session")
def release_a(origin, version, tmp_path_factory):
    base = str(tmp_path_factory.mktemp("a"))
    repo = clone(os.path.join(base, "krmpod"), origin)
    dist = os.path.join(base, "dist")
    code, out, secs = make_release(repo, dist, version)
    assert code == 0, out[-8000:]
    print("release A: %.0f s (%s)" % (secs, repo))
    return {"repo": repo, "dist": dist, "log": out, "seconds": secs}


@pytest.fixture(scope="session")
def release_b(origin, version, release_a, tmp_path_factory):
    # another path, of another length; a fresh Go build cache; its own C dependencies
    base = str(tmp_path_factory.mktemp("bb-second-release"))
    repo = clone(os.path.join(base, "x", "y", "krmpod-again"), origin)
    dist = os.path.join(base, "dist")
    extra = {"GOCACHE": os.path.join(base, "gocache")}
    for kv in os.environ.get("KRMPOD_RELEASE_TEST_B_ENV", "").split():
        k, _, v = kv.partition("=")
        extra[k] = v
    code, out, secs = make_release(repo, dist, version, extra)
    assert code == 0, out[-8000:]
    print("release B: %.0f s (%s)" % (secs, repo))
    return {"repo": repo, "dist": dist, "log": out, "seconds": secs}


def tree_files(d):
    out = {}
    for base, _, names in os.walk(d):
        for n in names:
            p = os.path.join(base, n)
            out[os.path.relpath(p, d)] = p
    return out


def explain(da, db):
    """What differs between two releases, for the failure message: the files, and inside
    the images the configs' fields and the layers' entries (mode, owner, mtime, content)."""
    out = []
    for n in ("install.yaml", "sbom.spdx.json", "RELEASE-NOTES.md", "SHA256SUMS"):
        with open(os.path.join(da, n), "rb") as x, open(os.path.join(db, n), "rb") as y:
            if x.read() != y.read():
                out.append("%s differs" % n)
    la = oci_image.read_layout(os.path.join(da, "image"))
    lb = oci_image.read_layout(os.path.join(db, "image"))
    out.append("index %s / %s" % (la["index_desc"]["digest"], lb["index_desc"]["digest"]))
    for arch in sorted(set(la["images"]) | set(lb["images"])):
        ia, ib = la["images"].get(arch), lb["images"].get(arch)
        if not ia or not ib:
            out.append("%s: only in one release" % arch)
            continue
        ca, cb = ia["config"], ib["config"]
        for k in sorted(set(ca) | set(cb)):
            if k == "config":
                for k2 in sorted(set(ca[k]) | set(cb[k])):
                    if ca[k].get(k2) != cb[k].get(k2):
                        out.append("%s config.%s: %r / %r" % (arch, k2, ca[k].get(k2),
                                                              cb[k].get(k2)))
            elif k != "rootfs" and ca.get(k) != cb.get(k):
                out.append("%s %s: %r / %r" % (arch, k, ca.get(k), cb.get(k)))

        def entries(img):
            return {ti.name: (oct(ti.mode), ti.uid, ti.gid, ti.mtime,
                              hashlib.sha256(d or ti.linkname.encode()).hexdigest()[:12])
                    for ti, d in oci_image.layer_entries(img["layer"])}
        ea, eb = entries(ia), entries(ib)
        for n in sorted(set(ea) | set(eb)):
            if ea.get(n) != eb.get(n):
                out.append("%s layer: %s: %s / %s" % (arch, n, ea.get(n), eb.get(n)))
    return out


def run_check(dist, *extra):
    arches = ",".join(os.environ.get("RELEASE_ARCHES", "amd64 arm64").split())
    return sh([PY, os.path.join(ROOT, "release", "check_release.py"), "--dist", dist,
               "--arches", arches] + list(extra), ROOT)


def tampered(release_a, tmp_path, name="dist"):
    d = str(tmp_path / name)
    shutil.copytree(release_a["dist"], d)
    return d


def resum(dist):
    lines = []
    for rel, p in sorted(tree_files(dist).items()):
        if rel != "SHA256SUMS":
            lines.append("%s  %s" % (relutil.sha256_file(p), rel))
    with open(os.path.join(dist, "SHA256SUMS"), "w") as f:
        f.write("\n".join(lines) + "\n")


def rewrite_layer(dist, arch, edit):
    """Applies edit(list of [TarInfo, bytes]) to arch's layer and re-hashes the layout
    consistently (a valid OCI layout whose content changed): new layer, config, manifest,
    index, index.json; install.yaml follows the new digest; SHA256SUMS too."""
    layout = os.path.join(dist, "image")
    lay = oci_image.read_layout(layout)
    old_index = lay["index_desc"]["digest"]
    entries = [[ti, data] for ti, data in oci_image.layer_entries(lay["images"][arch]["layer"])]
    edit(entries)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for ti, data in entries:
            if data is not None:
                ti.size = len(data)
                tar.addfile(ti, io.BytesIO(data))
            else:
                tar.addfile(ti)
    tar_bytes = buf.getvalue()
    w = oci_image.Layout(layout)
    layer = w.blob(oci_image.gzip_bytes(tar_bytes), oci_image.MT_LAYER)
    index = copy.deepcopy(lay["index"])
    for i, md in enumerate(index["manifests"]):
        if oci_image.arch_of(md["platform"]) != arch:
            continue
        img = lay["images"][arch]
        cfg = copy.deepcopy(img["config"])
        cfg["rootfs"]["diff_ids"] = ["sha256:" + relutil.sha256_bytes(tar_bytes)]
        man = copy.deepcopy(img["manifest"])
        man["config"] = w.json_blob(cfg, oci_image.MT_CONFIG)
        man["layers"] = [layer]
        index["manifests"][i] = w.json_blob(man, oci_image.MT_MANIFEST, platform=md["platform"])
    desc = w.json_blob(index, oci_image.MT_INDEX, annotations=lay["index_desc"]["annotations"])
    with open(os.path.join(layout, "index.json"), "wb") as f:
        f.write(relutil.canonical_json({"schemaVersion": 2, "mediaType": oci_image.MT_INDEX,
                                        "manifests": [desc]}))
    # drop the blobs nothing references now
    new = oci_image.read_layout(layout)
    referenced = {new["index_desc"]["digest"][7:]}
    for img in new["images"].values():
        referenced |= {img["manifest_desc"]["digest"][7:], img["manifest"]["config"]["digest"][7:],
                       img["manifest"]["layers"][0]["digest"][7:]}
    for n in os.listdir(os.path.join(layout, "blobs", "sha256")):
        if n not in referenced:
            os.unlink(os.path.join(layout, "blobs", "sha256", n))
    for n in ("install.yaml", "RELEASE-NOTES.md"):
        p = os.path.join(dist, n)
        with open(p) as f:
            text = f.read()
        with open(p, "w") as f:
            f.write(text.replace(old_index, desc["digest"]))
    resum(dist)
    return desc["digest"]


# ---- bad input: refused before anything is built ----------------------------------------

@pytest.fixture
def scratch(origin, tmp_path):
    return clone(str(tmp_path / "krmpod"), origin)


def quick_release(repo, *args, env_extra=None):
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "VERSION", "DIST"):
        env.pop(k, None)
    env.update(env_extra or {})
    return sh(["make", "release"] + list(args), repo, env=env, timeout=300)


def test_no_version_is_refused(scratch):
    code, out = quick_release(scratch)
    assert code != 0 and "no VERSION" in out and "VERSION=v0.1.0" in out, out


@pytest.mark.parametrize("bad", ["0.1.0", "v0.1", "v1.2.3.4", "v01.2.3", "v1.2.3+build.5",
                                 "v1.2.3-", "v1.2.3-rc..1", "v1.2.3-01", "latest"])
def test_a_version_that_is_not_semver_is_refused(scratch, bad):
    code, out = quick_release(scratch, "VERSION=" + bad)
    assert code != 0 and "VERSION=%r is not a release version" % bad in out, out
    assert not os.path.exists(os.path.join(scratch, "build", "release", "tree")), \
        "it started a build"


@pytest.mark.parametrize("good", ["v0.1.0", "v1.22.333", "v1.0.0-rc.1", "v2.0.0-beta-2.x.7"])
def test_semver_accepts(good):
    assert relutil.check_version(good) == good


def test_a_dirty_tree_is_refused(scratch, version):
    with open(os.path.join(scratch, "stray-notes.txt"), "w") as f:
        f.write("not committed\n")
    code, out = quick_release(scratch, "VERSION=" + version)
    assert code != 0 and "the git tree is dirty" in out and "stray-notes.txt" in out, out
    os.unlink(os.path.join(scratch, "stray-notes.txt"))
    with open(os.path.join(scratch, "plugin.yaml"), "a") as f:
        f.write("# changed\n")
    code, out = quick_release(scratch, "VERSION=" + version)
    assert code != 0 and "the git tree is dirty" in out and " M plugin.yaml" in out, out


def test_manifests_must_pin_the_version(scratch):
    code, out = quick_release(scratch, "VERSION=v9.8.7")
    assert code != 0 and "manifests/ does not pin v9.8.7" in out, out
    assert "scripts/release-prepare v9.8.7" in out, out


def test_the_changelog_must_have_the_version(scratch, version):
    # manifests pinned to v9.8.7 by hand, the changelog not
    for rel in ("manifests/kustomization.yaml", "manifests/repo-server/argocd-repo-server.yaml",
                "manifests/functions/admission.yaml"):
        p = os.path.join(scratch, rel)
        with open(p) as f:
            text = f.read()
        with open(p, "w") as f:
            f.write(text.replace("newTag: " + version, "newTag: v9.8.7")
                    .replace("krmpod/krmpod:" + version, "krmpod/krmpod:v9.8.7"))
    git(scratch, "commit", "-q", "-am", "pin v9.8.7 without a changelog entry")
    code, out = quick_release(scratch, "VERSION=v9.8.7")
    assert code != 0 and "CHANGELOG.md has no section for v9.8.7" in out, out


def test_release_prepare_makes_a_releasable_commit(scratch, version):
    prep = os.path.join(scratch, "scripts", "release-prepare")
    # nothing under [Unreleased]: refused
    code, out = sh([prep, "v9.8.7"], scratch)
    assert code != 0 and "[Unreleased] is empty" in out, out
    cl = os.path.join(scratch, "CHANGELOG.md")
    with open(cl) as f:
        text = f.read()
    with open(cl, "w") as f:
        f.write(text.replace("## [Unreleased]\n", "## [Unreleased]\n\n### Fixed\n\n- a test.\n", 1))
    code, out = sh([prep, "v9.8.7", "--date", "2030-01-02"], scratch)
    assert code == 0, out
    with open(cl) as f:
        text = f.read()
    assert "## [Unreleased]\n\n## [9.8.7] - 2030-01-02\n\n### Fixed\n\n- a test.\n" in text, text
    assert "[9.8.7]: https://github.com/krmpod/krmpod/compare/%s...v9.8.7" % version in text
    diff = git(scratch, "diff", "--stat")
    assert "manifests/kustomization.yaml" in diff and "CHANGELOG.md" in diff, diff
    git(scratch, "commit", "-q", "-am", "prepare v9.8.7")
    code, out = sh([PY, os.path.join(scratch, "release", "release.py"), "preflight", "v9.8.7"],
                   scratch)
    assert code == 0, out
    # and the old version no longer passes
    code, out = sh([PY, os.path.join(scratch, "release", "release.py"), "preflight", version],
                   scratch)
    assert code != 0 and "manifests/ does not pin %s" % version in out, out


def test_krmpod_commit_in_the_makefile(scratch):
    def commit():
        return sh(["make", "-s", "--eval", "print-commit: ; @echo $(KRMPOD_COMMIT)",
                   "print-commit"], scratch, check=True)[1].strip()
    head = git(scratch, "rev-parse", "HEAD").strip()
    assert commit() == head
    with open(os.path.join(scratch, "new-file"), "w") as f:
        f.write("x\n")
    assert commit() == head + "-dirty"


# ---- the release ---------------------------------------------------------------------------

def test_release_is_reproducible(release_a, release_b):
    fa, fb = tree_files(release_a["dist"]), tree_files(release_b["dist"])
    differ = sorted(set(fa) ^ set(fb))
    for rel in sorted(set(fa) & set(fb)):
        with open(fa[rel], "rb") as x, open(fb[rel], "rb") as y:
            if x.read() != y.read():
                differ.append(rel)
    assert not differ, "two releases of one commit differ:\n  %s" % "\n  ".join(
        explain(release_a["dist"], release_b["dist"]))
    with open(os.path.join(release_a["dist"], "image", "index.json")) as f:
        digest = json.load(f)["manifests"][0]["digest"]
    print("reproducible: %s (A %.0f s, B %.0f s)" % (digest, release_a["seconds"],
                                                     release_b["seconds"]))


def test_release_passes_its_own_check(release_a):
    code, out = run_check(release_a["dist"])
    assert code == 0 and "OK" in out, out
    # and make release-check says the same
    code, out = sh(["make", "release-check", "DIST=" + release_a["dist"]], release_a["repo"])
    assert code == 0, out


def test_release_contents(release_a, version):
    dist = release_a["dist"]
    assert sorted(os.listdir(dist)) == ["RELEASE-NOTES.md", "SHA256SUMS", "image",
                                        "install.yaml", "sbom.spdx.json"]
    lay = oci_image.read_layout(os.path.join(dist, "image"))
    arches = os.environ.get("RELEASE_ARCHES", "amd64 arm64").split()
    assert sorted(lay["images"]) == sorted(arches)
    digest = lay["index_desc"]["digest"]
    with open(os.path.join(dist, "install.yaml")) as f:
        install = f.read()
    assert install.count("ghcr.io/krmpod/krmpod@" + digest) == 3, install
    assert ":latest" not in install
    with open(os.path.join(dist, "RELEASE-NOTES.md")) as f:
        notes = f.read()
    assert notes.startswith("# krmpod %s\n" % version) and digest in notes
    # `sha256sum -c` (what scripts/release-publish runs) accepts SHA256SUMS
    code, out = sh(["sha256sum", "--quiet", "-c", "SHA256SUMS"], dist)
    assert code == 0, out
    # the image: what the layer holds, byte for byte where it comes from the commit
    e = {"/" + ti.name.rstrip("/"): (ti, d)
         for ti, d in oci_image.layer_entries(lay["images"]["amd64"]["layer"])}
    with open(os.path.join(release_a["repo"], "plugin.yaml"), "rb") as f:
        assert e["/home/argocd/cmp-server/config/plugin.yaml"][1] == f.read()
    assert e["/usr/local/libexec/krmpod/docker"][0].linkname == "/usr/local/bin/krmpod"
    assert sorted(n for n in e if n.count("/") == 1) == ["/etc", "/home", "/tmp", "/usr"]
    cfg = lay["images"]["amd64"]["config"]["config"]
    assert cfg["User"] == "999" and cfg["Entrypoint"] == ["/usr/local/bin/krmpod"]
    assert "KRMPOD_KUSTOMIZE=/usr/local/bin/kustomize" in cfg["Env"]
    # the release log names the digest and the time
    assert digest in release_a["log"]


def test_release_binaries_say_what_they_are(release_a, version, tmp_path):
    lay = oci_image.read_layout(os.path.join(release_a["dist"], "image"))
    e = {ti.name: d for ti, d in oci_image.layer_entries(lay["images"]["amd64"]["layer"])}
    for name in ("krmpod", "kustomize"):
        p = tmp_path / name
        p.write_bytes(e["usr/local/bin/" + name])
        p.chmod(0o755)
    out = subprocess.run([str(tmp_path / "krmpod"), "version"], stdout=subprocess.PIPE,
                         check=True).stdout.decode().splitlines()
    commit = git(release_a["repo"], "rev-parse", "HEAD").strip()
    assert out[0] == "krmpod " + version and out[1] == "commit " + commit, out
    assert re.match(r"^libcurl 8\.14\.1, libwebsockets 4\.3\.5(-\S+)?, mbedTLS 3\.6\.6, "
                    r"libyaml 0\.2\.5$", out[2]), out
    # the build hash libwebsockets records is not this repository's (git is kept from
    # finding it while the C dependencies build)
    assert "libwebsockets 4.3.5-unknown" in out[2] or "libwebsockets 4.3.5," in out[2], out
    kv = subprocess.run([str(tmp_path / "kustomize"), "version"], stdout=subprocess.PIPE,
                        check=True).stdout.decode().strip()
    assert kv == "v5.8.3", kv
    # no path of the checkout that built it
    for name in ("krmpod", "kustomize"):
        data = (tmp_path / name).read_bytes()
        assert release_a["repo"].encode() not in data, name
        assert b"/build/release/tree" not in data, name


def test_ca_bundle_is_the_packages_own(release_a, tmp_path):
    debs = [n for n in os.listdir(os.path.join(release_a["repo"], "build", "release", "ca"))
            if n.endswith(".deb")]
    assert len(debs) == 1, debs
    deb = os.path.join(release_a["repo"], "build", "release", "ca", debs[0])
    name, ver, sha = relutil.ca_pin(os.path.join(release_a["repo"], "release", "release.mk"))
    assert relutil.sha256_file(deb) == sha
    # the package's own script, run on its own files
    root = tmp_path / "root"
    root.mkdir()
    sh(["sh", "-c", "ar p %s data.tar.xz | tar -xJ -C %s" % (deb, root)], str(tmp_path),
       check=True)
    (root / "etc" / "ssl" / "certs").mkdir(parents=True, exist_ok=True)
    (root / "etc" / "ca-certificates.conf").write_text("")
    sh(["sh", str(root / "usr/sbin/update-ca-certificates"), "--sysroot", str(root), "--default"],
       str(tmp_path), env=dict(os.environ, LC_ALL="C"), check=True)
    want = (root / "etc/ssl/certs/ca-certificates.crt").read_bytes()
    assert cacerts.bundle_from_deb(deb)[0] == want
    lay = oci_image.read_layout(os.path.join(release_a["dist"], "image"))
    for arch, img in lay["images"].items():
        e = {ti.name: d for ti, d in oci_image.layer_entries(img["layer"])}
        assert e["etc/ssl/certs/ca-certificates.crt"] == want, arch


def test_sbom_passes_an_spdx_validator(release_a):
    """SPDX's own tools (spdx-tools on PyPI, `pyspdxtools`) accept the SBOM; not a
    dependency of the project: KRMPOD_SPDX_VALIDATOR names one, or one on PATH is used."""
    tool = os.environ.get("KRMPOD_SPDX_VALIDATOR") or shutil.which("pyspdxtools")
    if not tool:
        pytest.skip("no pyspdxtools (pip install spdx-tools in a venv; KRMPOD_SPDX_VALIDATOR)")
    code, out = sh([tool, "--infile", os.path.join(release_a["dist"], "sbom.spdx.json")], ROOT)
    assert code == 0 and "invalid" not in out, out


# ---- tampered copies fail the check ------------------------------------------------------

def expect_problem(dist, *needles, extra=()):
    code, out = run_check(dist, *extra)
    assert code == 1, "the check passed a tampered release:\n" + out
    for n in needles:
        assert n in out, "no %r in:\n%s" % (n, out)
    return out


def test_check_fails_an_image_file_the_sbom_does_not_list(release_a, tmp_path):
    d = tampered(release_a, tmp_path)

    def edit(entries):
        for e in entries:
            if e[0].name == "home/argocd/cmp-server/config/plugin.yaml":
                e[1] = e[1] + b"# tampered\n"
    rewrite_layer(d, "amd64", edit)
    assert run_check(d)[0] == 1
    out = expect_problem(d, "sbom.spdx.json: does not describe the image index")
    # with the SBOM's index checksum forged too, the file itself is caught
    lay = oci_image.read_layout(os.path.join(d, "image"))
    doc = json.load(open(os.path.join(d, "sbom.spdx.json")))
    for p in doc["packages"]:
        if p["SPDXID"] == "SPDXRef-Image-Index":
            p["checksums"][0]["checksumValue"] = lay["index_desc"]["digest"][7:]
        if p["SPDXID"] == "SPDXRef-Image-amd64":
            p["checksums"][0]["checksumValue"] = lay["images"]["amd64"]["manifest_desc"][
                "digest"][7:]
    doc["documentNamespace"] = re.sub(r"[0-9a-f]{64}$", lay["index_desc"]["digest"][7:],
                                      doc["documentNamespace"])
    with open(os.path.join(d, "sbom.spdx.json"), "w") as f:
        json.dump(doc, f)
    resum(d)
    out = expect_problem(d, "SHA256 of the amd64 image's /home/argocd/cmp-server/config/"
                            "plugin.yaml is")
    assert "problem(s)" in out


def test_check_fails_an_added_file(release_a, tmp_path):
    d = tampered(release_a, tmp_path)

    def edit(entries):
        ti = copy.copy(entries[0][0])
        ti.name, ti.type, ti.mode = "etc/extra", tarfile.REGTYPE, 0o644
        entries.insert(1, [ti, b"extra\n"])
    digest = rewrite_layer(d, "amd64", edit)
    doc = json.load(open(os.path.join(d, "sbom.spdx.json")))
    lay = oci_image.read_layout(os.path.join(d, "image"))
    for p in doc["packages"]:
        if p["SPDXID"] == "SPDXRef-Image-Index":
            p["checksums"][0]["checksumValue"] = digest[7:]
        if p["SPDXID"] == "SPDXRef-Image-amd64":
            p["checksums"][0]["checksumValue"] = lay["images"]["amd64"]["manifest_desc"][
                "digest"][7:]
    json.dump(doc, open(os.path.join(d, "sbom.spdx.json"), "w"))
    resum(d)
    expect_problem(d, "the amd64 image's /etc/extra is not listed")


def test_check_fails_install_yaml_naming_another_digest(release_a, tmp_path):
    d = tampered(release_a, tmp_path)
    p = os.path.join(d, "install.yaml")
    text = open(p).read()
    other = "sha256:" + "ab" * 32
    lines = text.splitlines(True)
    i = next(i for i, l in enumerate(lines) if l.strip().startswith("image: ghcr.io/krmpod/"))
    lines[i] = re.sub(r"sha256:[0-9a-f]{64}", other, lines[i])
    open(p, "w").write("".join(lines))
    resum(d)
    expect_problem(d, "install.yaml:%d: ghcr.io/krmpod/krmpod@%s is not the release's index"
                   % (i + 1, other), "no container has image: ghcr.io/krmpod/krmpod@sha256:")


def test_check_fails_install_yaml_with_latest(release_a, tmp_path):
    d = tampered(release_a, tmp_path)
    p = os.path.join(d, "install.yaml")
    text = open(p).read()
    text = re.sub(r"(helperImage: )\S+", r"\1ghcr.io/krmpod/krmpod:latest", text)
    open(p, "w").write(text)
    resum(d)
    expect_problem(d, "':latest'", "krmpod-admission helperImage is not")


def test_check_fails_sbom_versions_that_are_not_the_pins(release_a, tmp_path):
    d = tampered(release_a, tmp_path)
    p = os.path.join(d, "sbom.spdx.json")
    doc = json.load(open(p))
    for pkg in doc["packages"]:
        if pkg["name"] == "mbedtls":
            pkg["versionInfo"] = "3.6.5"
        if pkg["name"] == "sigs.k8s.io/kustomize/kyaml":
            pkg["versionInfo"] = "v0.21.2"
        if pkg["name"] == "krmpod":
            pkg["versionInfo"] = "v0.0.9"
    json.dump(doc, open(p, "w"))
    resum(d)
    expect_problem(d, "mbedtls is not listed once as version 3.6.6",
                   "krmpod's version is 'v0.0.9'",
                   "kustomize links sigs.k8s.io/kustomize/kyaml v0.21.3",
                   "lists sigs.k8s.io/kustomize/kyaml v0.21.2")


def test_check_fails_a_changed_file_without_new_sums(release_a, tmp_path):
    d = tampered(release_a, tmp_path)
    with open(os.path.join(d, "RELEASE-NOTES.md"), "a") as f:
        f.write("\nan addition\n")
    expect_problem(d, "SHA256SUMS: RELEASE-NOTES.md does not match")
    open(os.path.join(d, "stray"), "w").write("x")
    expect_problem(d, "SHA256SUMS does not list stray")


def test_check_fails_missing_and_stray_blobs(release_a, tmp_path):
    d = tampered(release_a, tmp_path)
    blobs = os.path.join(d, "image", "blobs", "sha256")
    open(os.path.join(blobs, "00" * 32), "w").write("{}")
    resum(d)
    expect_problem(d, "image: blobs/sha256/%s is referenced by nothing" % ("00" * 32))
    d2 = tampered(release_a, tmp_path, "dist2")
    lay = oci_image.read_layout(os.path.join(d2, "image"))
    cfg = lay["images"]["amd64"]["manifest"]["config"]["digest"][7:]
    os.unlink(os.path.join(d2, "image", "blobs", "sha256", cfg))
    resum(d2)
    expect_problem(d2, "blob sha256:%s (application/vnd.oci.image.config.v1+json) is missing"
                   % cfg)


def test_check_fails_layer_metadata(release_a, tmp_path):
    d = tampered(release_a, tmp_path)

    def edit(entries):
        for ti, _ in entries:
            if ti.name == "usr/local/bin/krmpod":
                ti.uid, ti.uname, ti.mtime = 999, "argocd", ti.mtime + 1
    rewrite_layer(d, "amd64", edit)
    expect_problem(d, "usr/local/bin/krmpod is owned by 999/0 ('argocd'/'')",
                   "usr/local/bin/krmpod has mtime")


# ---- what pushes the release: go-containerregistry's crane --------------------------------

@pytest.fixture(scope="session")
def crane():
    """crane from the Go module proxy (scripts/build-peers.sh crane, tests/tools/crane), the
    tool scripts/release-publish pushes with."""
    code, out = sh([os.path.join(ROOT, "scripts", "build-peers.sh"), "crane"], ROOT,
                   timeout=1800)
    assert code == 0, out
    d = sh([os.path.join(ROOT, "scripts", "build-peers.sh"), "--dir", "crane"], ROOT,
           check=True)[1].strip()
    return os.path.join(d, "crane")


@pytest.fixture
def registry(crane, tmp_path):
    """`crane registry serve`: an in-memory registry on a free port of 127.0.0.1 (plain
    HTTP, which crane uses for 127.0.0.1 by itself)."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    log = open(str(tmp_path / "registry.log"), "w")
    proc = subprocess.Popen([crane, "registry", "serve", "--address", "127.0.0.1:%d" % port],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            if sh([crane, "catalog", "127.0.0.1:%d" % port], ROOT)[0] == 0:
                break
            time.sleep(0.1)
        yield "127.0.0.1:%d" % port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def test_crane_pushes_the_index_unchanged(release_a, crane, registry, version, tmp_path):
    layout = os.path.join(release_a["dist"], "image")
    lay = oci_image.read_layout(layout)
    digest = lay["index_desc"]["digest"]
    ref = "%s/krmpod/krmpod:%s" % (registry, version)
    code, out = sh([crane, "push", layout, ref], ROOT)
    assert code == 0, out
    assert out.strip().splitlines()[-1] == "%s/krmpod/krmpod@%s" % (registry, digest), out
    # the registry holds our index, byte for byte
    code, out = sh([crane, "digest", ref], ROOT)
    assert code == 0 and out.strip() == digest, out
    with open(os.path.join(layout, "blobs", "sha256", digest[7:]), "rb") as f:
        index = f.read()
    got = subprocess.run([crane, "manifest", ref], stdout=subprocess.PIPE, check=True).stdout
    assert got == index
    for arch in lay["images"]:
        plat = "linux/%s" % arch + ("/v8" if arch == "arm64" else "")
        code, out = sh([crane, "validate", "--platform", plat, "--remote",
                        "%s/krmpod/krmpod@%s" % (registry, digest)], ROOT)
        assert code == 0 and "PASS" in out and "FAIL" not in out, (arch, out)
        # the flattened file system is the layer's
        exp = subprocess.run([crane, "export", "--platform", plat,
                              "%s/krmpod/krmpod@%s" % (registry, digest), "-"],
                             stdout=subprocess.PIPE, check=True).stdout
        names = sorted(ti.name.rstrip("/") for ti, _ in oci_image.layer_entries(exp))
        want = sorted(ti.name.rstrip("/")
                      for ti, _ in oci_image.layer_entries(lay["images"][arch]["layer"]))
        assert names == want, arch
    # `crane push --index` pushes index.json itself, a wrapper with another digest
    # (docs/release.md says not to use it)
    r = subprocess.run([crane, "push", "--index", layout, "%s/krmpod/wrapped:x" % registry],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pushed = r.stdout.decode().strip()
    assert r.returncode == 0 and pushed.startswith("%s/krmpod/wrapped@sha256:" % registry), \
        r.stderr.decode()
    assert not pushed.endswith(digest), pushed
