#!/usr/bin/python3
"""`make release VERSION=vX.Y.Z` (release/release.mk) and scripts/release-prepare.

    release.py prepare VERSION [--date YYYY-MM-DD]
        pins manifests/ to VERSION (the images: entry's newTag and every
        ghcr.io/krmpod/krmpod:TAG reference) and turns CHANGELOG.md's [Unreleased] section
        into VERSION's; you review, commit and tag.

    release.py preflight VERSION [--dist DIR]
        what `make release` refuses to start without: VERSION is vMAJOR.MINOR.PATCH(-pre),
        the git tree is clean (git status --porcelain shows nothing but the release
        directory), manifests/ pins VERSION, CHANGELOG.md has VERSION's section.

    release.py build VERSION --dist DIR [--arches amd64,arm64] [--repo R] [--source URL]
        the preflight, then builds everything from `git archive HEAD` (build/release/tree; the
        working tree is not read), into build/release/dist.new, checks it with
        check_release.py and only then replaces DIR with it:

          image/             the OCI image layout (release/oci_image.py)
          install.yaml       manifests/ rendered with the image pinned by the index digest
          sbom.spdx.json     release/sbom.py
          RELEASE-NOTES.md   CHANGELOG.md's section for VERSION, the digests, how to verify
          SHA256SUMS         every file above

SOURCE_DATE_EPOCH (default: the commit's committer time) is every time stamp the release
holds. docs/release.md explains the rest.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_release  # noqa: E402
import oci_image  # noqa: E402
import relutil  # noqa: E402
from relutil import ROOT, fail  # noqa: E402

REPO = "ghcr.io/krmpod/krmpod"
SOURCE = "https://github.com/krmpod/krmpod"
IMAGE_KUSTOMIZE = "/usr/local/bin/kustomize"
KUSTOMIZE_PKG = "sigs.k8s.io/kustomize/kustomize/v5"
BUILD = os.path.join(ROOT, "build", "release")
# the make target that builds krmpod for each architecture (amd64: the Makefile's;
# arm64: release/arm64.mk's)
KRMPOD_TARGET = {"amd64": "build/krmpod", "arm64": "build/arm64/krmpod"}
HOST_ARCH = check_release.HOST_ARCH


def log(msg):
    print("release: %s" % msg, file=sys.stderr, flush=True)


def git(*args, cwd=ROOT):
    r = subprocess.run(["git"] + list(args), cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode != 0:
        fail("git %s: %s" % (" ".join(args), r.stderr.decode(errors="replace").strip()))
    return r.stdout.decode()


# ---- manifests/ and CHANGELOG.md ---------------------------------------------------------

def manifest_pins(root=ROOT):
    """[(file, line number, what, tag)]: the images: entry's newTag (what 'newTag') and every
    REPO:TAG reference (what 'ref') in manifests/."""
    out = []
    kpath = os.path.join(root, "manifests", "kustomization.yaml")
    with open(kpath) as f:
        lines = f.read().splitlines()
    entry = None
    for n, line in enumerate(lines, 1):
        m = re.match(r"^(\s*)- name:\s*(\S+)\s*$", line)
        if m:
            entry = (len(m.group(1)), m.group(2))
            continue
        if entry and re.match(r"^\s*-\s", line) and len(line) - len(line.lstrip()) <= entry[0]:
            entry = None
        if entry and entry[1] == REPO:
            t = re.match(r"^\s*(newTag|digest):\s*[\"']?([^\"'\s]+)[\"']?\s*$", line)
            if t:
                out.append(("manifests/kustomization.yaml", n, t.group(1), t.group(2)))
    for path in sorted(glob.glob(os.path.join(root, "manifests", "**", "*.yaml"), recursive=True)):
        rel = os.path.relpath(path, root)
        with open(path) as f:
            for n, line in enumerate(f, 1):
                for tag in re.findall(re.escape(REPO) + r":([A-Za-z0-9_][A-Za-z0-9_.-]*)", line):
                    out.append((rel, n, "ref", tag))
    return out


def check_manifests(version, root=ROOT):
    pins = manifest_pins(root)
    fix = "run scripts/release-prepare %s, review and commit, then make release" % version
    if not [p for p in pins if p[2] == "newTag"]:
        fail("manifests/kustomization.yaml has no images: entry for %s with a newTag: %s"
             % (REPO, fix))
    wrong = ["%s:%d: %s %s" % (f, n, what, tag) for f, n, what, tag in pins
             if tag != version]
    if wrong:
        fail("manifests/ does not pin %s (%s): %s" % (version, "; ".join(wrong), fix))


def changelog_section(version, root=ROOT):
    """CHANGELOG.md's section for version: (heading, body). Headings are Keep a Changelog's
    '## [0.1.0] - 2026-11-28' (a leading v is accepted)."""
    path = os.path.join(root, "CHANGELOG.md")
    fix = "add it with scripts/release-prepare %s (from the [Unreleased] section) and commit" \
        % version
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        fail("CHANGELOG.md is missing: %s" % fix)
    bare = version[1:]
    head = re.compile(r"^## \[v?%s\](\s+-\s+\d{4}-\d{2}-\d{2})?\s*$" % re.escape(bare))
    for i, line in enumerate(lines):
        if head.match(line):
            if not head.match(line).group(1):
                fail("CHANGELOG.md: %r has no date (## [%s] - YYYY-MM-DD)" % (line, bare))
            body = []
            for l2 in lines[i + 1:]:
                if l2.startswith("## ") or re.match(r"^\[[^\]]+\]:\s", l2):
                    break
                body.append(l2)
            text = "\n".join(body).strip()
            if not text:
                fail("CHANGELOG.md: the section for %s is empty: say what the release changes"
                     % version)
            return line, text
    fail("CHANGELOG.md has no section for %s (a heading '## [%s] - YYYY-MM-DD'): %s"
         % (version, bare, fix))


def dirty_entries(dist):
    """git status --porcelain, without the release directory itself."""
    out = git("status", "--porcelain", "--untracked-files=all")
    rel = os.path.relpath(os.path.abspath(dist), ROOT) if dist else None
    keep = []
    for line in out.splitlines():
        path = line[3:].strip('"')
        if " -> " in path:
            path = path.split(" -> ", 1)[1]
        if rel and not rel.startswith("..") and (path == rel or path.startswith(rel + "/")):
            continue
        keep.append(line)
    return keep


def preflight(version, dist=None):
    relutil.check_version(version)
    dirty = dirty_entries(dist)
    if dirty:
        shown = "\n  ".join(dirty[:15]) + ("\n  ..." if len(dirty) > 15 else "")
        fail("the git tree is dirty (git status --porcelain):\n  %s\na release is made from a "
             "commit: commit or stash these (or move them out of the tree) and run again"
             % shown)
    check_manifests(version)
    changelog_section(version)


def prepare(version, date):
    relutil.check_version(version)
    bare = version[1:]
    path = os.path.join(ROOT, "CHANGELOG.md")
    if not os.path.exists(path):
        fail("CHANGELOG.md is missing: create it with an '## [Unreleased]' section "
             "(https://keepachangelog.com)")
    with open(path) as f:
        text = f.read()
    lines = text.splitlines()
    if any(re.match(r"^## \[v?%s\]" % re.escape(bare), l) for l in lines):
        log("CHANGELOG.md already has a section for %s: left as it is" % version)
    else:
        try:
            u = lines.index("## [Unreleased]")
        except ValueError:
            fail("CHANGELOG.md has no '## [Unreleased]' line: write the release's changes "
                 "under it first")
        body = []
        for l2 in lines[u + 1:]:
            if l2.startswith("## ") or re.match(r"^\[[^\]]+\]:\s", l2):
                break
            body.append(l2)
        if not "\n".join(body).strip():
            fail("CHANGELOG.md: [Unreleased] is empty: write what %s changes under it first"
                 % version)
        previous = None
        for l2 in lines[u + 1:]:
            m = re.match(r"^## \[v?(\d+\.\d+\.\d+[^\]]*)\]", l2)
            if m:
                previous = "v" + m.group(1)
                break
        lines[u:u + 1] = ["## [Unreleased]", "", "## [%s] - %s" % (bare, date)]
        links = [i for i, l2 in enumerate(lines) if l2.startswith("[Unreleased]: ")]
        new_links = ["[Unreleased]: %s/compare/%s...HEAD" % (SOURCE, version),
                     "[%s]: %s" % (bare, "%s/compare/%s...%s" % (SOURCE, previous, version)
                                   if previous else "%s/releases/tag/%s" % (SOURCE, version))]
        if links:
            lines[links[0]:links[0] + 1] = new_links
        else:
            if lines and lines[-1].strip():
                lines.append("")
            lines += new_links
        relutil.write_file(path, ("\n".join(lines) + "\n").encode())
        log("CHANGELOG.md: [Unreleased] is now [%s] - %s" % (bare, date))
    # manifests/
    changed = []
    kpath = os.path.join(ROOT, "manifests", "kustomization.yaml")
    pins = manifest_pins()
    if not [p for p in pins if p[2] == "newTag"]:
        fail("manifests/kustomization.yaml has no images: entry for %s with a newTag line to "
             "set" % REPO)
    for rel, n, what, tag in pins:
        if what == "digest":
            fail("%s:%d pins %s by digest: manifests/ pins the release by tag (newTag); "
                 "install.yaml pins the digest" % (rel, n, REPO))
    by_file = {}
    for rel, n, what, tag in pins:
        by_file.setdefault(rel, []).append((n, what))
    for rel, hits in sorted(by_file.items()):
        p = os.path.join(ROOT, rel)
        with open(p) as f:
            flines = f.read().split("\n")
        for n, what in hits:
            old = flines[n - 1]
            if what == "newTag":
                new = re.sub(r"(newTag:\s*)[\"']?[^\"'\s]+[\"']?", r"\g<1>" + version, old)
            else:
                new = re.sub(re.escape(REPO) + r":[A-Za-z0-9_][A-Za-z0-9_.-]*",
                             REPO + ":" + version, old)
            if new != old:
                flines[n - 1] = new
                changed.append("%s:%d" % (rel, n))
        relutil.write_file(p, "\n".join(flines).encode())
    assert os.path.exists(kpath)
    check_manifests(version)
    log("manifests/ pins %s (%s)" % (version, ", ".join(changed) or "already"))
    changelog_section(version)
    log("next: review `git diff`, commit, `make release VERSION=%s`, then tag the commit %s"
        % (version, version))


# ---- build -------------------------------------------------------------------------------

class Steps:
    def __init__(self):
        self.t0 = time.time()
        self.times = []

    def step(self, name):
        now = time.time()
        if self.times:
            self.times[-1] = (self.times[-1][0], now - self.times[-1][1])
        self.times.append((name, now))
        log("%s ..." % name)

    def done(self):
        now = time.time()
        if self.times:
            self.times[-1] = (self.times[-1][0], now - self.times[-1][1])
        return now - self.t0


def real_tool(name):
    own = os.path.join(BUILD, "bin")
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if os.path.abspath(d) == own:
            continue
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    fail("%s is not on PATH (scripts/install-build-deps.sh installs the build tools)" % name)


def export_tree(tree):
    """build/release/tree := the commit's files (git archive HEAD); its build/ (the C
    dependencies built for releases) is kept."""
    os.makedirs(tree, exist_ok=True)
    for name in os.listdir(tree):
        if name == "build":
            continue
        p = os.path.join(tree, name)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)
    archive = subprocess.Popen(["git", "archive", "--format=tar", "HEAD"], cwd=ROOT,
                               stdout=subprocess.PIPE)
    relutil.run(["tar", "-x", "-C", tree], "unpacking git archive HEAD", stdin=archive.stdout)
    archive.stdout.close()
    if archive.wait() != 0:
        fail("git archive HEAD failed")


def compiler_wrappers(tree):
    """build/release/bin: musl-gcc (and the aarch64 cross gcc, where installed) that add
    -ffile-prefix-map=TREE/=./ (the C dependencies' sources are compiled by absolute path,
    and mbedTLS keeps __FILE__ in its debug strings: without the map the binary would hold
    this checkout's path)."""
    d = os.path.join(BUILD, "bin")
    os.makedirs(d, exist_ok=True)
    text = ""
    for name in ("musl-gcc", "aarch64-linux-gnu-gcc"):
        try:
            real = real_tool(name)
        except relutil.Failure:
            if name == "musl-gcc":
                raise
            continue  # no cross compiler here: an arm64 build says so itself
        w = "#!/bin/sh\nexec %s -ffile-prefix-map=%s/=./ \"$@\"\n" % (real, tree)
        relutil.write_file(os.path.join(d, name), w.encode(), mode=0o755)
        text += w
    return d, text


def libc_version(arch):
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "musl-dev:%s" % arch],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0 or not r.stdout.strip():
        fail("musl-dev:%s is not installed: the SBOM names the musl krmpod for %s links "
             "(a cross build's musl is pinned in scripts/deps.sh as MUSL_%s)"
             % (arch, arch, arch.upper()))
    return r.stdout.decode().strip()


def build(a):
    steps = Steps()
    version, dist = a.version, os.path.abspath(a.dist)
    arches = [x for x in a.arches.split(",") if x]
    for arch in arches:
        if arch not in KRMPOD_TARGET:
            fail("RELEASE_ARCHES: unknown architecture %r (known: %s)"
                 % (arch, ", ".join(KRMPOD_TARGET)))
    if HOST_ARCH not in arches:
        fail("the release's kustomize for this machine (%s) renders install.yaml: include it "
             "in RELEASE_ARCHES" % HOST_ARCH)
    steps.step("preflight")
    preflight(version, dist)
    commit = git("rev-parse", "HEAD").strip()
    epoch = os.environ.get("SOURCE_DATE_EPOCH") or git("log", "-1", "--format=%ct").strip()
    if not epoch.isdigit():
        fail("SOURCE_DATE_EPOCH=%r is not a number of seconds" % epoch)
    epoch = int(epoch)
    log("%s: commit %s, SOURCE_DATE_EPOCH %d (%s), %s"
        % (version, commit, epoch, relutil.rfc3339(epoch), ", ".join(arches)))

    tree = os.path.join(BUILD, "tree")
    steps.step("git archive HEAD -> build/release/tree")
    export_tree(tree)
    bindir, wrapper = compiler_wrappers(tree)
    # the C dependencies are built once per toolchain: a changed wrapper or compiler
    # rebuilds them (scripts/deps.sh's own stamp covers its pins and recipe)
    cc_id = wrapper + subprocess.run(["gcc", "--version"], stdout=subprocess.PIPE).stdout.decode()
    stamp = os.path.join(tree, "build", ".release-cc")
    if not os.path.exists(stamp) or open(stamp).read() != cc_id:
        shutil.rmtree(os.path.join(tree, "build", "deps"), ignore_errors=True)
    os.makedirs(os.path.join(tree, "build", "src"), exist_ok=True)
    # what scripts/deps.sh downloads (the orig tarballs, musl-dev for arm64), from this
    # checkout's build/src when there: deps.sh checks each against its pin
    for src in glob.glob(os.path.join(ROOT, "build", "src", "*.orig.tar.*")) + \
            glob.glob(os.path.join(ROOT, "build", "src", "*.deb")):
        dst = os.path.join(tree, "build", "src", os.path.basename(src))
        if not os.path.exists(dst):
            shutil.copyfile(src, dst)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
               GIT_CEILING_DIRECTORIES=BUILD, SOURCE_DATE_EPOCH=str(epoch), LC_ALL="C",
               TZ="UTC", MAKEFLAGS="", MAKELEVEL="")
    env.pop("MFLAGS", None)
    jobs = str(os.cpu_count() or 1)
    bins = {}
    for arch in arches:
        target = KRMPOD_TARGET[arch]
        steps.step("krmpod for %s (make %s, in build/release/tree)" % (arch, target))
        relutil.run(["make", "-C", tree, "-j" + jobs, target, "VERSION=" + version,
                     "KRMPOD_COMMIT=" + commit], "make %s for %s (log above)" % (target, arch),
                    env=env, stdout=None, stderr=None)
        with open(stamp, "w") as f:
            f.write(cc_id)
        bins[arch] = os.path.join(tree, target)

    steps.step("the CA bundle (release/cacerts.py)")
    ca_dir = os.path.join(BUILD, "ca")
    relutil.run([sys.executable, os.path.join(tree, "release", "cacerts.py"), "--out", ca_dir,
                 "--apt-dir", os.path.join(BUILD, "apt")], "release/cacerts.py", stdout=None,
                stderr=None)
    ca_deb = glob.glob(os.path.join(ca_dir, "*.deb"))

    toolchain = relutil.kustomize_toolchain(tree)
    sde_date = relutil.rfc3339(epoch)
    kz = {}
    for arch in arches:
        steps.step("kustomize for %s (%s, tests/tools/kustomize)" % (arch, toolchain))
        out = os.path.join(BUILD, "kustomize", arch, "kustomize")
        genv = dict(env, CGO_ENABLED="0", GOOS="linux", GOARCH=arch, GOAMD64="v1",
                    GOARM64="v8.0", GOFLAGS="-mod=readonly", GOTOOLCHAIN=toolchain,
                    GOEXPERIMENT="")
        relutil.run(["go", "build", "-trimpath", "-buildvcs=false", "-ldflags",
                     "-s -w -buildid= -X sigs.k8s.io/kustomize/api/provenance.buildDate="
                     + sde_date, "-o", out, KUSTOMIZE_PKG],
                    "go build of kustomize for %s (pins: tests/tools/kustomize/go.mod)" % arch,
                    env=genv, cwd=os.path.join(tree, "tests", "tools", "kustomize"))
        kz[arch] = out

    steps.step("image roots (scripts/image-layout.sh --root)")
    roots = {}
    for arch in arches:
        root = os.path.join(BUILD, "root", arch)
        shutil.rmtree(root, ignore_errors=True)
        relutil.run([os.path.join(tree, "scripts", "image-layout.sh"), "--root", kz[arch],
                     root, bins[arch]], "scripts/image-layout.sh --root for %s" % arch,
                    env=dict(env, KRMPOD_CA_BUNDLE=os.path.join(ca_dir, "ca-certificates.crt")))
        roots[arch] = root

    staging = os.path.join(BUILD, "dist.new")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    steps.step("the OCI image layout (release/oci_image.py)")
    desc = oci_image.write_layout(os.path.join(staging, "image"), roots, version, commit, epoch,
                                  a.source, IMAGE_KUSTOMIZE)
    digest = desc["digest"]
    log("image index %s" % digest)

    steps.step("install.yaml (manifests/ with the image at %s)" % digest[:19])
    overlay = os.path.join(BUILD, "install")
    shutil.rmtree(overlay, ignore_errors=True)
    os.makedirs(overlay)
    with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
        f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                "resources:\n  - ../tree/manifests\nimages:\n  - name: %s\n    digest: %s\n"
                % (REPO, digest))
    r = relutil.run([kz[HOST_ARCH], "build", overlay], "kustomize build of manifests/",
                    stderr=subprocess.PIPE)
    header = ("# krmpod %s: manifests/ of commit %s with the image pinned by its index digest.\n"
              "# Install (docs/install.md; both flags matter):\n"
              "#   kubectl apply --server-side --field-manager=krmpod -f install.yaml\n"
              "# Never `kubectl delete -f` this file: it names argocd-repo-server "
              "(uninstall: docs/install.md).\n" % (version, commit))
    relutil.write_file(os.path.join(staging, "install.yaml"), header.encode() + r.stdout)

    steps.step("the SBOM (release/sbom.py)")
    cross = relutil.musl_pins(os.path.join(tree, "scripts", "deps.sh"))
    libc = ["%s=%s" % (arch, libc_version(arch)) for arch in arches if arch not in cross]
    relutil.run([sys.executable, os.path.join(tree, "release", "sbom.py"),
                 "--layout", os.path.join(staging, "image"), "--version", version,
                 "--commit", commit, "--created", str(epoch), "--source", a.source,
                 "--repo", REPO, "--deps-sh", os.path.join(tree, "scripts", "deps.sh"),
                 "--ca-json", os.path.join(ca_dir, "ca.json"), "--go-toolchain", toolchain,
                 "--out", os.path.join(staging, "sbom.spdx.json")]
                + ["--libc=" + x for x in libc], "release/sbom.py", stdout=None, stderr=None)

    steps.step("RELEASE-NOTES.md and SHA256SUMS")
    heading, body = changelog_section(version, tree)
    relutil.write_file(os.path.join(staging, "RELEASE-NOTES.md"),
                       notes(version, commit, epoch, body, staging, a.source).encode())
    write_sums(staging)

    steps.step("checking the release (release/check_release.py)")
    ca = argparse.Namespace(dist=staging, arches=arches, version=version, repo=REPO,
                            deps_sh=os.path.join(tree, "scripts", "deps.sh"),
                            release_mk=os.path.join(tree, "release", "release.mk"),
                            go_toolchain=toolchain, ca_deb=ca_deb[0] if ca_deb else None,
                            no_run=False)
    problems = check_release.Checker(ca).run()
    if problems:
        fail("the release does not pass its own check (left in %s):\n  %s"
             % (staging, "\n  ".join(problems)))
    if os.path.exists(dist):
        shutil.rmtree(dist)
    shutil.move(staging, dist)
    total = steps.done()
    for name, secs in steps.times:
        log("  %6.1f s  %s" % (secs, name))
    sizes = {arch: img["manifest"]["layers"][0]["size"]
             for arch, img in oci_image.read_layout(os.path.join(dist, "image"))["images"].items()}
    log("%s written in %.0f s: index %s; layers %s" % (
        os.path.relpath(dist), total, digest,
        ", ".join("%s %.1f MB" % (k, v / 1e6) for k, v in sorted(sizes.items()))))


def notes(version, commit, epoch, body, staging, source):
    lay = oci_image.read_layout(os.path.join(staging, "image"))
    digest = lay["index_desc"]["digest"]
    rows = []
    for arch, img in sorted(lay["images"].items()):
        rows.append("| linux/%s | `%s` | %.1f MB |" % (arch, img["manifest_desc"]["digest"],
                                                      img["manifest"]["layers"][0]["size"] / 1e6))
    return "\n".join([
        "# krmpod %s" % version,
        "",
        body,
        "",
        "## Install",
        "",
        "`install.yaml` is `manifests/` of this release with the image pinned by digest:",
        "",
        "    kubectl apply --server-side --field-manager=krmpod -f install.yaml",
        "",
        "or from the tag (the image by tag `%s`): `kubectl apply --server-side "
        "--field-manager=krmpod -k '%s//manifests?ref=%s'` (docs/install.md)."
        % (version, source, version),
        "",
        "## Image",
        "",
        "`%s@%s` (an OCI image index; built from commit %s, created %s)."
        % (REPO, digest, commit, relutil.rfc3339(epoch)),
        "",
        "| platform | image manifest | compressed layer |",
        "|---|---|---|",
    ] + rows + [
        "",
        "## Verify",
        "",
        "- `sha256sum -c SHA256SUMS` over the release's files.",
        "- `sbom.spdx.json` (SPDX 2.3) lists every file of each image with its SHA-256, and the "
        "pinned versions of krmpod's C libraries, musl, kustomize's Go modules and the CA "
        "bundle's Debian package.",
        "- Reproduce: `git checkout %s && make release VERSION=%s` on Debian bookworm amd64 "
        "gives the same index digest (docs/release.md, \"Reproducing a release\")."
        % (version, version),
        "",
    ])


def write_sums(dist):
    lines = []
    for d, _, names in os.walk(dist):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), dist)
            if rel != "SHA256SUMS":
                lines.append("%s  %s" % (relutil.sha256_file(os.path.join(d, n)), rel))
    lines.sort(key=lambda l: l[66:].encode())
    relutil.write_file(os.path.join(dist, "SHA256SUMS"), ("\n".join(lines) + "\n").encode())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("version", nargs="?", default="")
    p.add_argument("--date", default=time.strftime("%Y-%m-%d", time.gmtime()))
    p = sub.add_parser("preflight")
    p.add_argument("version", nargs="?", default="")
    p.add_argument("--dist")
    p = sub.add_parser("build")
    p.add_argument("version", nargs="?", default="")
    p.add_argument("--dist", required=True)
    p.add_argument("--arches", default="amd64,arm64")
    p.add_argument("--source", default=SOURCE)
    a = ap.parse_args()
    if a.cmd == "prepare":
        prepare(a.version, a.date)
    elif a.cmd == "preflight":
        preflight(a.version, a.dist)
    else:
        build(a)


if __name__ == "__main__":
    sys.exit(relutil.main_guard("release", main))
