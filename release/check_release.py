#!/usr/bin/python3
"""Checks a release directory that `make release` wrote (dist/), as a whole; `make release`
runs it before it moves dist/ into place, and tests/release runs it on tampered copies.

    release/check_release.py [--dist dist] [--arches amd64,arm64] [--ca-deb FILE]

  SHA256SUMS   lists every file of the release, each with its SHA-256, nothing else
  image/       a valid OCI image layout (oci-layout, index.json naming one image index,
               every blob present with its digest and size, no blob unreferenced), an image
               for each of --arches; each image's config (user 999, entrypoint, env,
               labels), its single layer deterministic (sorted, uid/gid 0, no names, mtime =
               the release's created time, no pax headers) and holding the root
               scripts/image-layout.sh --root defines
  sbom.spdx.json   SPDX 2.3; describes the index by its digest; every regular file of each
               architecture's layer listed with its SHA-1 and SHA-256, and nothing else; the
               krmpod version and commit what `krmpod version` of the image says (run natively
               or under qemu-user-static, else read from the binary); the C libraries
               scripts/deps.sh's PINS, as `krmpod version` reports them; kustomize's modules
               what `go version -m` reads from the image's kustomize; the CA package CA_PIN
               (release/release.mk), and with --ca-deb the bundle rebuilt from that .deb
  install.yaml the sidecar image, KRMPOD_HELPER_IMAGE and the admission policy's
               helperImage are the image at the index digest; no other reference to the
               image, and no :latest anywhere
  RELEASE-NOTES.md names the version and the index digest

Prints every problem found (naming the file and what differs) and exits 1, or prints one
line saying what was checked.
"""
import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cacerts  # noqa: E402
import oci_image  # noqa: E402
import relutil  # noqa: E402
import sbom as sbom_mod  # noqa: E402
from relutil import Failure  # noqa: E402

REPO = "ghcr.io/krmpod/krmpod"
SHIM_DIR = "/usr/local/libexec/krmpod"
KRMPOD = "/usr/local/bin/krmpod"
# `krmpod version`'s library names -> scripts/deps.sh's package names
LIB_NAMES = {"libcurl": "curl", "libwebsockets": "libwebsockets", "mbedTLS": "mbedtls",
             "libyaml": "libyaml"}
HOST_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine())
# how a binary of another architecture runs here, when qemu-user-static is installed
QEMU = {"arm64": "qemu-aarch64-static", "amd64": "qemu-x86_64-static"}


class Checker:
    def __init__(self, a):
        self.a = a
        self.dist = a.dist
        self.problems = []

    def bad(self, msg):
        self.problems.append(msg)

    # ---- SHA256SUMS ------------------------------------------------------------------
    def sums(self):
        path = os.path.join(self.dist, "SHA256SUMS")
        files = set()
        for d, _, names in os.walk(self.dist):
            for n in names:
                rel = os.path.relpath(os.path.join(d, n), self.dist)
                if rel != "SHA256SUMS":
                    files.add(rel)
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError as e:
            return self.bad("SHA256SUMS: %s" % e)
        listed = {}
        for line in lines:
            m = re.match(r"^([0-9a-f]{64})  (\S.*)$", line)
            if not m:
                self.bad("SHA256SUMS: line %r is not '<sha256>  <file>'" % line)
                continue
            if m.group(2) in listed:
                self.bad("SHA256SUMS lists %s twice" % m.group(2))
            listed[m.group(2)] = m.group(1)
        for rel in sorted(files - set(listed)):
            self.bad("SHA256SUMS does not list %s" % rel)
        for rel in sorted(set(listed) - files):
            self.bad("SHA256SUMS lists %s, which is not in %s" % (rel, self.dist))
        for rel in sorted(files & set(listed)):
            if relutil.sha256_file(os.path.join(self.dist, rel)) != listed[rel]:
                self.bad("SHA256SUMS: %s does not match its SHA-256 (changed after make release)"
                         % rel)

    # ---- the image -------------------------------------------------------------------
    def image(self):
        layout = os.path.join(self.dist, "image")
        lay = oci_image.read_layout(layout)  # a Failure here stops the check
        self.lay = lay
        idesc = lay["index_desc"]
        self.digest = idesc["digest"]
        ann = lay["index"].get("annotations") or {}
        self.version = ann.get("org.opencontainers.image.version", "")
        self.revision = ann.get("org.opencontainers.image.revision", "")
        self.created = ann.get("org.opencontainers.image.created", "")
        if self.a.version and self.version != self.a.version:
            self.bad("image: the index says version %r, expected %r" % (self.version,
                                                                       self.a.version))
        try:
            relutil.check_version(self.version)
        except Failure as e:
            self.bad("image: the index's org.opencontainers.image.version: %s" % e)
        if not re.fullmatch(r"[0-9a-f]{40}", self.revision):
            self.bad("image: org.opencontainers.image.revision %r is not a commit hash"
                     % self.revision)
        if (idesc.get("annotations") or {}) != {
                "org.opencontainers.image.ref.name": self.version,
                "org.opencontainers.image.version": self.version}:
            self.bad("image/index.json: the index's annotations must be ref.name and version "
                     "= %s, are %r" % (self.version, idesc.get("annotations")))
        for k in ("created", "licenses", "source", "title", "revision", "version"):
            if not ann.get("org.opencontainers.image." + k):
                self.bad("image: the index has no org.opencontainers.image.%s annotation" % k)
        if ann.get("org.opencontainers.image.licenses") != "Apache-2.0":
            self.bad("image: licenses annotation %r, want Apache-2.0"
                     % ann.get("org.opencontainers.image.licenses"))
        want = set(self.a.arches)
        have = set(lay["images"])
        if have != want:
            self.bad("image: the index holds %s, expected %s (--arches)"
                     % (sorted(have) or "nothing", sorted(want)))
        # every blob referenced, none more
        referenced = {self.digest[7:]}
        for img in lay["images"].values():
            m = img["manifest"]
            referenced |= {img["manifest_desc"]["digest"][7:], m["config"]["digest"][7:],
                           m["layers"][0]["digest"][7:]}
        on_disk = set(os.listdir(os.path.join(layout, "blobs", "sha256")))
        for extra in sorted(on_disk - referenced):
            self.bad("image: blobs/sha256/%s is referenced by nothing" % extra)
        try:
            epoch = relutil.parse_rfc3339(self.created)
        except ValueError:
            self.bad("image: created annotation %r is not RFC 3339 UTC" % self.created)
            epoch = None
        for arch, img in sorted(lay["images"].items()):
            self.image_config(arch, img, ann)
            self.layer(arch, img, epoch)

    def image_config(self, arch, img, ann):
        cfg = img["config"]
        c = cfg.get("config") or {}
        where = "image %s config" % arch
        if c.get("User") != "999":
            self.bad("%s: User %r, want 999 (Argo CD's sidecar user)" % (where, c.get("User")))
        if c.get("Entrypoint") != [KRMPOD] or c.get("Cmd") != ["version"]:
            self.bad("%s: Entrypoint %r Cmd %r, want [%s] [version]"
                     % (where, c.get("Entrypoint"), c.get("Cmd"), KRMPOD))
        env = dict(e.split("=", 1) for e in c.get("Env") or [])
        if env.get("KRMPOD_SHIM_DIR") != SHIM_DIR:
            self.bad("%s: KRMPOD_SHIM_DIR=%r, want %s" % (where, env.get("KRMPOD_SHIM_DIR"),
                                                          SHIM_DIR))
        if not env.get("KRMPOD_KUSTOMIZE", "").startswith("/"):
            self.bad("%s: KRMPOD_KUSTOMIZE=%r is not an absolute path"
                     % (where, env.get("KRMPOD_KUSTOMIZE")))
        if "PATH" not in env:
            self.bad("%s: no PATH" % where)
        img["env"] = env
        if c.get("Labels") != ann:
            self.bad("%s: its labels differ from the index's annotations" % where)
        if img["manifest"].get("annotations") != ann:
            self.bad("image %s manifest: its annotations differ from the index's" % arch)
        if cfg.get("created") != self.created:
            self.bad("%s: created %r, the index says %r" % (where, cfg.get("created"),
                                                            self.created))

    def layer(self, arch, img, epoch):
        where = "image %s layer" % arch
        entries = oci_image.layer_entries(img["layer"])
        img["entries"] = {"/" + ti.name.rstrip("/"): (ti, data) for ti, data in entries}
        names = [ti.name.rstrip("/") for ti, _ in entries]
        if names != sorted(names, key=lambda n: [p.encode() for p in n.split("/")]):
            self.bad("%s: entries are not sorted by path" % where)
        for ti, _ in entries:
            if ti.uid or ti.gid or ti.uname or ti.gname:
                self.bad("%s: %s is owned by %s/%s (%r/%r), want 0/0 with no names"
                         % (where, ti.name, ti.uid, ti.gid, ti.uname, ti.gname))
            if epoch is not None and ti.mtime != epoch:
                self.bad("%s: %s has mtime %d, want the release's created time %d"
                         % (where, ti.name, ti.mtime, epoch))
            if ti.pax_headers:
                self.bad("%s: %s has pax headers %r" % (where, ti.name, ti.pax_headers))
            if not (ti.isfile() or ti.isdir() or ti.issym()):
                self.bad("%s: %s is not a file, directory or symlink" % (where, ti.name))
        e = img["entries"]

        def need_file(path, mode):
            ti, _ = e.get(path, (None, None))
            if ti is None or not ti.isfile():
                self.bad("%s: no regular file %s" % (where, path))
            elif ti.mode != mode:
                self.bad("%s: %s has mode %o, want %o" % (where, path, ti.mode, mode))
            return e.get(path, (None, None))[1]

        need_file(KRMPOD, 0o755)
        need_file(img["env"].get("KRMPOD_KUSTOMIZE", "/usr/local/bin/kustomize"), 0o755)
        ca = need_file("/etc/ssl/certs/ca-certificates.crt", 0o644)
        need_file("/home/argocd/cmp-server/config/plugin.yaml", 0o644)
        passwd = need_file("/etc/passwd", 0o644) or b""
        group = need_file("/etc/group", 0o644) or b""
        link = e.get(SHIM_DIR + "/docker", (None, None))[0]
        if link is None or not link.issym() or link.linkname != KRMPOD:
            self.bad("%s: %s/docker is not a symlink to %s" % (where, SHIM_DIR, KRMPOD))
        tmp = e.get("/tmp", (None, None))[0]
        if tmp is None or not tmp.isdir() or tmp.mode != 0o1777:
            self.bad("%s: /tmp is not a directory with mode 1777" % where)
        if b"\nargocd:x:999:999:" not in b"\n" + passwd or b":/home/argocd:" not in passwd:
            self.bad("%s: /etc/passwd has no argocd user 999:999 with HOME /home/argocd" % where)
        if b"\nargocd:x:999:" not in b"\n" + group:
            self.bad("%s: /etc/group has no argocd group 999" % where)
        if ca is not None and self.a.ca_deb:
            want, _ = cacerts.bundle_from_deb(self.a.ca_deb)
            if ca != want:
                self.bad("%s: the CA bundle is not the one %s makes" % (where, self.a.ca_deb))

    # ---- the SBOM --------------------------------------------------------------------
    def sbom(self):
        path = os.path.join(self.dist, "sbom.spdx.json")
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            return self.bad("sbom.spdx.json: %s" % e)
        w = "sbom.spdx.json"
        for k, v in (("spdxVersion", "SPDX-2.3"), ("dataLicense", "CC0-1.0"),
                     ("SPDXID", "SPDXRef-DOCUMENT")):
            if doc.get(k) != v:
                self.bad("%s: %s is %r, want %r" % (w, k, doc.get(k), v))
        source = (self.lay["index"].get("annotations") or {}).get(
            "org.opencontainers.image.source", "")
        ns = "%s/releases/%s/sbom/%s" % (source.rstrip("/"), self.version, self.digest[7:])
        if doc.get("documentNamespace") != ns:
            self.bad("%s: documentNamespace %r, want %r (from the version and the index digest)"
                     % (w, doc.get("documentNamespace"), ns))
        if (doc.get("creationInfo") or {}).get("created") != self.created:
            self.bad("%s: created %r, the image says %r"
                     % (w, (doc.get("creationInfo") or {}).get("created"), self.created))
        pkgs = {p.get("SPDXID"): p for p in doc.get("packages") or []}
        files = {f.get("SPDXID"): f for f in doc.get("files") or []}
        ids = [p.get("SPDXID") for p in doc.get("packages") or []] + \
              [f.get("SPDXID") for f in doc.get("files") or []]
        if len(ids) != len(set(ids)):
            self.bad("%s: SPDXIDs are not unique" % w)
        rels = doc.get("relationships") or []
        known = set(ids) | {"SPDXRef-DOCUMENT"}
        for r in rels:
            for k in ("spdxElementId", "relatedSpdxElement"):
                if r.get(k) not in known:
                    self.bad("%s: a relationship names %r, which is not in the document"
                             % (w, r.get(k)))

        def related(a, kind):
            return [r["relatedSpdxElement"] for r in rels
                    if r.get("spdxElementId") == a and r.get("relationshipType") == kind]

        def checksum(obj, algo):
            for c in obj.get("checksums") or []:
                if c.get("algorithm") == algo:
                    return c.get("checksumValue")
            return None

        described = related("SPDXRef-DOCUMENT", "DESCRIBES")
        index = pkgs.get(described[0]) if len(described) == 1 else None
        if index is None or checksum(index, "SHA256") != self.digest[7:]:
            self.bad("%s: does not describe the image index %s (its DESCRIBES package must have "
                     "that SHA256)" % (w, self.digest))
            return
        if index.get("versionInfo") != self.version:
            self.bad("%s: the index package says version %r, the image %r"
                     % (w, index.get("versionInfo"), self.version))

        # krmpod
        krmpod = pkgs.get("SPDXRef-Package-krmpod") or {}
        if krmpod.get("versionInfo") != self.version:
            self.bad("%s: krmpod's version is %r, the release is %r"
                     % (w, krmpod.get("versionInfo"), self.version))
        if not krmpod.get("downloadLocation", "").endswith("@" + self.revision):
            self.bad("%s: krmpod's downloadLocation %r does not name commit %s"
                     % (w, krmpod.get("downloadLocation"), self.revision))
        # the C libraries: exactly scripts/deps.sh's pins
        pins = relutil.deps_pins(self.a.deps_sh)
        lib_pkgs = {}
        for pin in pins:
            hit = [p for p in pkgs.values() if p.get("name") == pin["name"]]
            if len(hit) != 1 or hit[0].get("versionInfo") != pin["version"] or \
                    checksum(hit[0], "SHA256") != pin["sha256"]:
                self.bad("%s: %s is not listed once as version %s with SHA256 %s (%s's PINS)"
                         % (w, pin["name"], pin["version"], pin["sha256"], self.a.deps_sh))
            else:
                lib_pkgs[pin["name"]] = hit[0]
        # the CA package: CA_PIN
        cname, cver, csum = relutil.ca_pin(self.a.release_mk)
        hit = [p for p in pkgs.values() if p.get("name") == cname]
        if len(hit) != 1 or hit[0].get("versionInfo") != cver or checksum(hit[0], "SHA256") != csum:
            self.bad("%s: %s is not listed once as version %s with SHA256 %s (CA_PIN in %s)"
                     % (w, cname, cver, csum, self.a.release_mk))

        images = related(index["SPDXID"], "CONTAINS")
        by_arch = {}
        for iid in images:
            p = pkgs.get(iid) or {}
            m = re.search(r"\(linux/(\w+)\)$", p.get("name", ""))
            if m:
                by_arch[m.group(1)] = p
        if set(by_arch) != set(self.lay["images"]):
            self.bad("%s: the index contains images for %s, the layout has %s"
                     % (w, sorted(by_arch), sorted(self.lay["images"])))
        with tempfile.TemporaryDirectory() as tmp:
            for arch, img in sorted(self.lay["images"].items()):
                p = by_arch.get(arch)
                if p is None:
                    continue
                if checksum(p, "SHA256") != img["manifest_desc"]["digest"][7:]:
                    self.bad("%s: the %s image's SHA256 is not its manifest digest %s"
                             % (w, arch, img["manifest_desc"]["digest"]))
                listed = {}
                for fid in related(p["SPDXID"], "CONTAINS"):
                    f = files.get(fid)
                    if f is None:
                        self.bad("%s: the %s image contains %s, which is not a file"
                                 % (w, arch, fid))
                        continue
                    listed["/" + f.get("fileName", "").lstrip("./")] = f
                layer_files = {path: data for path, (ti, data) in img["entries"].items()
                               if ti.isfile()}
                for path in sorted(set(layer_files) - set(listed)):
                    self.bad("%s: the %s image's %s is not listed" % (w, arch, path))
                for path in sorted(set(listed) - set(layer_files)):
                    self.bad("%s: lists %s in the %s image, which has no such file"
                             % (w, path, arch))
                for path in sorted(set(listed) & set(layer_files)):
                    data, f = layer_files[path], listed[path]
                    for algo in ("SHA256", "SHA1"):
                        if checksum(f, algo) != hashlib.new(algo.lower(), data).hexdigest():
                            self.bad("%s: %s of the %s image's %s is %s, the file's is %s"
                                     % (w, algo, arch, path, checksum(f, algo),
                                        hashlib.new(algo.lower(), data).hexdigest()))
                self.sbom_binaries(arch, img, listed, pkgs, related, lib_pkgs, tmp)

    def sbom_binaries(self, arch, img, listed, pkgs, related, lib_pkgs, tmp):
        w = "sbom.spdx.json"
        kfile = listed.get(KRMPOD)
        krmpod_bin = img["entries"].get(KRMPOD, (None, None))[1]
        if kfile is None or krmpod_bin is None:
            return
        linked = {pkgs[i].get("name") for i in related(kfile["SPDXID"], "STATIC_LINK") if i in pkgs}
        for name in lib_pkgs:
            if name not in linked:
                self.bad("%s: the %s krmpod does not STATIC_LINK %s" % (w, arch, name))
        if "musl" not in linked:
            self.bad("%s: the %s krmpod does not STATIC_LINK musl" % (w, arch))
        pin = relutil.musl_pins(self.a.deps_sh).get(arch)
        if pin:
            musl = [pkgs[i] for i in related(kfile["SPDXID"], "STATIC_LINK")
                    if i in pkgs and pkgs[i].get("name") == "musl"]
            if len(musl) != 1 or musl[0].get("versionInfo") != pin["version"] or \
                    not any(c.get("checksumValue") == pin["sha256"]
                            for c in musl[0].get("checksums") or []):
                self.bad("%s: the %s krmpod's musl is not %s %s with SHA256 %s (MUSL_%s in %s)"
                         % (w, arch, pin["name"], pin["version"], pin["sha256"], arch.upper(),
                            self.a.deps_sh))
        # what the binary says about itself
        bin_path = os.path.join(tmp, "krmpod-" + arch)
        with open(bin_path, "wb") as f:
            f.write(krmpod_bin)
        os.chmod(bin_path, 0o755)
        runner = [] if arch == HOST_ARCH else [QEMU.get(arch, "")]
        if not self.a.no_run and all(shutil.which(x) for x in runner):
            r = subprocess.run(runner + [bin_path, "version"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"}, timeout=60)
            out = r.stdout.decode(errors="replace").splitlines()
            if r.returncode != 0 or len(out) != 3:
                self.bad("the %s image's `krmpod version` exited %d with %r"
                         % (arch, r.returncode, out))
                return
            if out[0] != "krmpod " + self.version:
                self.bad("the %s image's `krmpod version` says %r, the release is %s"
                         % (arch, out[0], self.version))
            if out[1] != "commit " + self.revision:
                self.bad("the %s image's `krmpod version` says %r, the release's commit is %s"
                         % (arch, out[1], self.revision))
            libs = dict(part.strip().split(" ", 1) for part in out[2].split(","))
            for shown, ver in sorted(libs.items()):
                name = LIB_NAMES.get(shown)
                pkg = lib_pkgs.get(name)
                if pkg is None:
                    self.bad("the %s image's krmpod reports %s %s, which the SBOM does not list"
                             % (arch, shown, ver))
                elif ver != pkg["versionInfo"] and not ver.startswith(pkg["versionInfo"] + "-"):
                    self.bad("the %s image's krmpod reports %s %s, the SBOM says %s %s"
                             % (arch, shown, ver, name, pkg["versionInfo"]))
        else:
            for s in [self.version, self.revision] + [p["versionInfo"] for p in lib_pkgs.values()]:
                if s.encode() + b"\0" not in krmpod_bin and s.encode() + b"-" not in krmpod_bin:
                    self.bad("the %s image's krmpod does not hold the string %r" % (arch, s))
        # kustomize's modules, as the binary records them
        kpath = img["env"].get("KRMPOD_KUSTOMIZE", "")
        kz = img["entries"].get(kpath, (None, None))[1]
        kfile = listed.get(kpath)
        if kz is None or kfile is None:
            return
        kbin = os.path.join(tmp, "kustomize-" + arch)
        with open(kbin, "wb") as f:
            f.write(kz)
        try:
            mods = sbom_mod.go_modules(kbin, self.a.go_toolchain)
        except Failure as e:
            return self.bad(str(e))
        want = {(d["path"], d["version"], d["h1"]) for d in mods["deps"]}
        want.add(("stdlib", mods["go"], ""))
        have = set()
        for i in related(kfile["SPDXID"], "STATIC_LINK"):
            p = pkgs.get(i) or {}
            h1 = ""
            for ann in p.get("annotations") or []:
                m = re.match(r"^go\.sum (\S+) (\S+) (h1:\S+)$", ann.get("comment", ""))
                if m and m.group(1) == p.get("name"):
                    h1 = m.group(3)
            have.add((p.get("name"), p.get("versionInfo"), h1))
        for m in sorted(want - have):
            self.bad("%s: the %s kustomize links %s %s %s, which the SBOM does not list"
                     % (w, arch, m[0], m[1], m[2]))
        for m in sorted(have - want):
            self.bad("%s: lists %s %s %s for the %s kustomize, which does not link it"
                     % (w, m[0], m[1], m[2], arch))
        gen = [pkgs.get(i) or {} for i in related(kfile["SPDXID"], "GENERATED_FROM")]
        if [(p.get("name"), p.get("versionInfo")) for p in gen] != \
                [("kustomize", mods["main"]["version"])]:
            self.bad("%s: the %s kustomize is not GENERATED_FROM kustomize %s"
                     % (w, arch, mods["main"]["version"]))

    # ---- install.yaml ----------------------------------------------------------------
    def install(self):
        path = os.path.join(self.dist, "install.yaml")
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            return self.bad("install.yaml: %s" % e)
        pinned = "%s@%s" % (self.a.repo, self.digest)
        for n, line in enumerate(text.splitlines(), 1):
            if re.search(r":latest\b", line):
                self.bad("install.yaml:%d: ':latest' (%s)" % (n, line.strip()))
            for ref in re.findall(re.escape(self.a.repo) + r"[^\s\"',]*", line):
                if ref != pinned:
                    self.bad("install.yaml:%d: %s is not the release's index %s"
                             % (n, ref, pinned))
        lines = [l.strip() for l in text.splitlines()]
        if "image: " + pinned not in lines:
            self.bad("install.yaml: no container has image: %s (the sidecar)" % pinned)
        helper = [i for i, l in enumerate(lines) if l == "- name: KRMPOD_HELPER_IMAGE"]
        if not helper or any(i + 1 >= len(lines) or lines[i + 1] != "value: " + pinned
                             for i in helper):
            self.bad("install.yaml: KRMPOD_HELPER_IMAGE is not %s" % pinned)
        if "helperImage: " + pinned not in lines:
            self.bad("install.yaml: the krmpod-admission helperImage is not %s" % pinned)

    def notes(self):
        path = os.path.join(self.dist, "RELEASE-NOTES.md")
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            return self.bad("RELEASE-NOTES.md: %s" % e)
        for s in (self.version, self.digest):
            if s not in text:
                self.bad("RELEASE-NOTES.md does not name %s" % s)

    def run(self):
        self.sums()
        try:
            self.image()
        except Failure as e:
            self.bad(str(e))
            return self.problems
        self.sbom()
        self.install()
        self.notes()
        return self.problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dist", default=os.path.join(relutil.ROOT, "dist"))
    ap.add_argument("--arches", default="amd64,arm64")
    ap.add_argument("--version", help="the version the release must be (default: any)")
    ap.add_argument("--repo", default=REPO)
    ap.add_argument("--deps-sh", default=os.path.join(relutil.ROOT, "scripts", "deps.sh"))
    ap.add_argument("--release-mk", default=os.path.join(relutil.ROOT, "release", "release.mk"))
    ap.add_argument("--go-toolchain", help="for go version -m (default: build-peers.sh's "
                    "toolchain for kustomize)")
    ap.add_argument("--ca-deb", help="the pinned ca-certificates .deb: rebuild the bundle")
    ap.add_argument("--no-run", action="store_true", help="never run the image's krmpod")
    a = ap.parse_args()
    a.arches = [x for x in a.arches.split(",") if x]
    a.go_toolchain = a.go_toolchain or relutil.kustomize_toolchain()
    problems = Checker(a).run()
    if problems:
        for p in problems:
            print("check_release: %s" % p, file=sys.stderr)
        print("check_release: %s: %d problem(s)" % (a.dist, len(problems)), file=sys.stderr)
        return 1
    print("check_release: %s: OK (%s)" % (a.dist, ", ".join(a.arches)))
    return 0


if __name__ == "__main__":
    sys.exit(relutil.main_guard("check_release", main))
