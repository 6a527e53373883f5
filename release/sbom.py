#!/usr/bin/python3
"""The release's SBOM: SPDX 2.3 JSON, made from the pins the build already has and from the
image itself, never from a scan of this machine.

    release/sbom.py --layout DIR --version V --commit C --created EPOCH --source URL \\
        --repo ghcr.io/krmpod/krmpod --deps-sh scripts/deps.sh --ca-json ca.json \\
        --libc amd64=VERSION [--libc arm64=VERSION] --go-toolchain go1.27.3 --out FILE

What it describes (relationships in brackets):

  the image index (ghcr.io/krmpod/krmpod at V, checksum = the index digest)   [DESCRIBES]
    one image per architecture (checksum = its manifest digest)                [CONTAINS]
      every regular file of that image's layer, with SHA-1 and SHA-256          [CONTAINS]
  krmpod V (the commit), which /usr/local/bin/krmpod is built from             [GENERATED_FROM]
    and statically links: the four C libraries at scripts/deps.sh's PINS (version, orig
    tarball and its SHA-256) and musl, the libc, at its Debian version          [STATIC_LINK]
  kustomize, which /usr/local/bin/kustomize is built from, and every Go module in it, read
    with `go version -m` from that very file (path, version, go.sum h1 hash, replacements),
    and the Go standard library of its toolchain                               [STATIC_LINK]
  the CA bundle's Debian package (version, .deb SHA-256)                       [GENERATED_FROM]

Deterministic: created = SOURCE_DATE_EPOCH; documentNamespace is derived from the version
and the index digest (no random UUID); every list in a fixed order.
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oci_image  # noqa: E402
import relutil  # noqa: E402
from relutil import fail  # noqa: E402

KRMPOD_PATH = "usr/local/bin/krmpod"
KUSTOMIZE_PATH = "usr/local/bin/kustomize"
CA_PATH = "etc/ssl/certs/ca-certificates.crt"
DEBIAN = "http://deb.debian.org/debian"
# Declared licenses we know; everything else NOASSERTION (nothing here was analysed).
LICENSES = {"curl": "curl", "mbedtls": "Apache-2.0 OR GPL-2.0-or-later",
            "libwebsockets": "MIT", "libyaml": "MIT", "musl": "MIT",
            "kustomize": "Apache-2.0", "stdlib": "BSD-3-Clause",
            "ca-certificates": "MPL-2.0 AND GPL-2.0-or-later"}
NOASSERTION = "NOASSERTION"


def spdx_id(*parts):
    s = "-".join(parts)
    return "SPDXRef-" + re.sub(r"[^A-Za-z0-9.-]+", "-", s).strip("-")


def go_modules(binary, toolchain):
    """`go version -m BINARY`: {"go": version, "main": module, "deps": [module]} where a
    module is {path, version, h1, replaces: (path, version) or None}."""
    env = dict(os.environ, GOTOOLCHAIN=toolchain, GOFLAGS="")
    r = relutil.run(["go", "version", "-m", binary], "go version -m (reading kustomize's "
                    "modules; needs go on PATH)", env=env, stderr=subprocess.PIPE)
    lines = r.stdout.decode().splitlines()
    m = re.match(r"^.*: (go\S+)$", lines[0]) if lines else None
    if not m:
        fail("go version -m %s: no Go version in %r" % (binary, lines[:1]))
    out = {"go": m.group(1), "main": None, "deps": []}
    for line in lines[1:]:
        f = line.strip().split("\t")
        if f[0] == "mod":
            out["main"] = {"path": f[1], "version": f[2], "h1": f[3] if len(f) > 3 else "",
                           "replaces": None}
        elif f[0] == "dep":
            out["deps"].append({"path": f[1], "version": f[2], "h1": f[3] if len(f) > 3 else "",
                                "replaces": None})
        elif f[0] == "=>":
            dep = out["deps"][-1]
            dep["replaces"] = (dep["path"], dep["version"])
            dep.update(path=f[1], version=f[2], h1=f[3] if len(f) > 3 else "")
    if not out["main"]:
        fail("go version -m %s: no main module line" % binary)
    return out


def purl_golang(path, version):
    return "pkg:golang/%s@%s" % (path, version)


class Doc:
    def __init__(self):
        self.packages, self.files, self.rels, self.ids = [], [], [], set()

    def add(self, kind, obj):
        if obj["SPDXID"] in self.ids:
            return obj["SPDXID"]
        self.ids.add(obj["SPDXID"])
        (self.packages if kind == "package" else self.files).append(obj)
        return obj["SPDXID"]

    def rel(self, a, kind, b):
        r = {"spdxElementId": a, "relationshipType": kind, "relatedSpdxElement": b}
        if r not in self.rels:
            self.rels.append(r)


def package(spdxid, name, version, download, purpose, license_declared=NOASSERTION,
            checksums=None, purl=None, comment=None, source_info=None, file_name=None,
            supplier=None, annotations=None):
    p = {"SPDXID": spdxid, "name": name, "versionInfo": version, "downloadLocation": download,
         "filesAnalyzed": False, "licenseConcluded": NOASSERTION,
         "licenseDeclared": license_declared, "copyrightText": NOASSERTION,
         "primaryPackagePurpose": purpose}
    if checksums:
        p["checksums"] = [{"algorithm": a, "checksumValue": v} for a, v in checksums]
    if purl:
        p["externalRefs"] = [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                              "referenceLocator": purl}]
    if comment:
        p["comment"] = comment
    if source_info:
        p["sourceInfo"] = source_info
    if file_name:
        p["packageFileName"] = file_name
    if supplier:
        p["supplier"] = supplier
    if annotations:
        p["annotations"] = annotations
    return p


def build(a):
    created = relutil.rfc3339(a.created)
    lay = oci_image.read_layout(a.layout)
    index_digest = lay["index_desc"]["digest"]
    doc = Doc()
    repo_name = a.repo.rsplit("/", 1)[-1]
    repo_url = a.repo

    def annotation(comment):
        return [{"annotationDate": created, "annotationType": "OTHER",
                 "annotator": "Tool: krmpod-release", "comment": comment}]

    index_id = doc.add("package", package(
        "SPDXRef-Image-Index", a.repo, a.version, NOASSERTION, "CONTAINER",
        license_declared="Apache-2.0", checksums=[("SHA256", index_digest[7:])],
        purl="pkg:oci/%s@sha256%%3A%s?repository_url=%s&tag=%s"
             % (repo_name, index_digest[7:], repo_url, a.version),
        comment="The multi-architecture OCI image index of krmpod %s (platforms: %s)."
                % (a.version, ", ".join("linux/" + x for x in sorted(lay["images"])))))
    doc.rel("SPDXRef-DOCUMENT", "DESCRIBES", index_id)

    krmpod_id = doc.add("package", package(
        "SPDXRef-Package-krmpod", "krmpod", a.version,
        "git+%s@%s" % (a.source, a.commit), "APPLICATION", license_declared="Apache-2.0",
        purl="pkg:github/%s@%s" % ("/".join(a.source.rstrip("/").split("/")[-2:]), a.version),
        source_info="built from commit %s of %s" % (a.commit, a.source),
        supplier="Organization: krmpod"))

    c_libs = []
    for pin in relutil.deps_pins(a.deps_sh):
        url = "%s/%s/%s" % (DEBIAN, relutil.debian_pool_dir(pin["name"]), pin["tarball"])
        c_libs.append(doc.add("package", package(
            spdx_id("Package", pin["name"], pin["version"]), pin["name"], pin["version"], url,
            "LIBRARY", license_declared=LICENSES.get(pin["name"], NOASSERTION),
            checksums=[("SHA256", pin["sha256"])], file_name=pin["tarball"],
            purl="pkg:generic/%s@%s?download_url=%s&checksum=sha256:%s"
                 % (pin["name"], pin["version"], url, pin["sha256"]),
            source_info="the upstream source as Debian trixie's orig tarball (pinned by its "
                        "SHA-256 in scripts/deps.sh), built without Debian's patches")))

    with open(a.ca_json) as f:
        ca = json.load(f)
    ca_id = doc.add("package", package(
        spdx_id("Package", ca["package"], ca["version"]), ca["package"], ca["version"],
        ca["url"], "LIBRARY", license_declared=LICENSES["ca-certificates"],
        checksums=[("SHA256", ca["sha256"])], file_name=ca["filename"],
        purl="pkg:deb/debian/%s@%s?arch=all" % (ca["package"], ca["version"]),
        source_info="Debian's package (pinned by CA_PIN in release/release.mk); the bundle "
                    "is what its update-ca-certificates --default writes"))

    libc = {}
    for spec in a.libc:
        arch, sep, ver = spec.partition("=")
        if not sep or not ver:
            fail("--libc %r: want ARCH=DEBIAN_VERSION of musl" % spec)
        libc[arch] = ver

    with tempfile.TemporaryDirectory() as tmp:
        for arch in sorted(lay["images"]):
            img = lay["images"][arch]
            mdig = img["manifest_desc"]["digest"]
            layer = oci_image.layer_entries(img["layer"])
            image_pkg = package(
                spdx_id("Image", arch), "%s (linux/%s)" % (a.repo, arch), a.version, NOASSERTION,
                "CONTAINER", license_declared="Apache-2.0", checksums=[("SHA256", mdig[7:])],
                purl="pkg:oci/%s@sha256%%3A%s?arch=%s&repository_url=%s"
                     % (repo_name, mdig[7:], arch, repo_url))
            # its files are listed: files analysed, with SPDX's verification code (the SHA-1
            # of the files' sorted SHA-1s)
            image_pkg["filesAnalyzed"] = True
            image_pkg["packageVerificationCode"] = {"packageVerificationCodeValue": hashlib.sha1(
                "".join(sorted(hashlib_hex("sha1", d) for ti, d in layer if ti.isfile()))
                .encode()).hexdigest()}
            image_id = doc.add("package", image_pkg)
            doc.rel(index_id, "CONTAINS", image_id)
            pin = relutil.musl_pins(a.deps_sh).get(arch)
            if pin:  # a cross build's musl: the .deb scripts/deps.sh pins
                url = "%s/%s/%s" % (DEBIAN, relutil.debian_pool_dir("musl"), pin["deb"])
                musl_id = doc.add("package", package(
                    spdx_id("Package", "musl", pin["version"], arch), "musl", pin["version"],
                    url, "LIBRARY", license_declared=LICENSES["musl"],
                    checksums=[("SHA256", pin["sha256"])], file_name=pin["deb"],
                    purl="pkg:deb/debian/%s@%s?arch=%s" % (pin["name"], pin["version"], arch),
                    comment="the C library krmpod is statically linked with (Debian's %s for "
                            "%s, pinned in scripts/deps.sh)" % (pin["name"], arch)))
            elif arch in libc:  # the build machine's musl-dev
                musl_id = doc.add("package", package(
                    spdx_id("Package", "musl", libc[arch], arch), "musl", libc[arch],
                    NOASSERTION, "LIBRARY", license_declared=LICENSES["musl"],
                    purl="pkg:deb/debian/musl-dev@%s?arch=%s" % (libc[arch], arch),
                    comment="the C library krmpod is statically linked with (Debian's musl-dev "
                            "for %s, the build machine's)" % arch))
            else:
                fail("no --libc for %s and no MUSL_%s pin in %s: musl's version for that "
                     "architecture" % (arch, arch.upper(), a.deps_sh))
            files = {}
            for ti, data in layer:
                if not ti.isfile():
                    continue
                files[ti.name] = data
                fid = doc.add("file", {
                    "SPDXID": spdx_id("File", arch, ti.name), "fileName": "./" + ti.name,
                    "checksums": [
                        {"algorithm": "SHA1", "checksumValue": hashlib_hex("sha1", data)},
                        {"algorithm": "SHA256", "checksumValue": hashlib_hex("sha256", data)}],
                    "licenseConcluded": NOASSERTION, "copyrightText": NOASSERTION})
                doc.rel(image_id, "CONTAINS", fid)
                if ti.name == KRMPOD_PATH:
                    doc.rel(fid, "GENERATED_FROM", krmpod_id)
                    for lib in c_libs + [musl_id]:
                        doc.rel(fid, "STATIC_LINK", lib)
                elif ti.name == CA_PATH:
                    doc.rel(fid, "GENERATED_FROM", ca_id)
                elif ti.name != KUSTOMIZE_PATH:
                    # plugin.yaml (the repository's), /etc/passwd and /etc/group
                    # (scripts/image-layout.sh)
                    doc.rel(fid, "GENERATED_FROM", krmpod_id)
            for need in (KRMPOD_PATH, KUSTOMIZE_PATH, CA_PATH):
                if need not in files:
                    fail("the %s image has no /%s" % (arch, need))
            binary = os.path.join(tmp, "kustomize-" + arch)
            with open(binary, "wb") as f:
                f.write(files[KUSTOMIZE_PATH])
            mods = go_modules(binary, a.go_toolchain)
            kid = spdx_id("File", arch, KUSTOMIZE_PATH)
            main = mods["main"]
            kpkg = doc.add("package", package(
                spdx_id("Package", "kustomize", main["version"]), "kustomize", main["version"],
                "https://proxy.golang.org/%s/@v/%s.zip" % (escape_module(main["path"]), main["version"]),
                "APPLICATION", license_declared=LICENSES["kustomize"],
                purl=purl_golang(main["path"], main["version"]),
                source_info="Go module %s, built from tests/tools/kustomize's pins with %s"
                            % (main["path"], mods["go"]),
                annotations=annotation("go.sum %s %s %s" % (main["path"], main["version"],
                                                            main["h1"]))))
            doc.rel(kid, "GENERATED_FROM", kpkg)
            std = doc.add("package", package(
                spdx_id("Package", "go-stdlib", mods["go"]), "stdlib", mods["go"],
                "https://go.dev/dl/", "LIBRARY", license_declared=LICENSES["stdlib"],
                purl="pkg:golang/stdlib@%s" % mods["go"], comment="the Go standard library"))
            doc.rel(kid, "STATIC_LINK", std)
            for dep in mods["deps"]:
                comment = None
                if dep["replaces"]:
                    comment = "replaces %s %s (a go.mod replace directive)" % dep["replaces"]
                did = doc.add("package", package(
                    spdx_id("Package", "go", dep["path"], dep["version"]), dep["path"],
                    dep["version"], "https://proxy.golang.org/%s/@v/%s.zip"
                    % (escape_module(dep["path"]), dep["version"]), "LIBRARY",
                    purl=purl_golang(dep["path"], dep["version"]), comment=comment,
                    annotations=annotation("go.sum %s %s %s" % (dep["path"], dep["version"],
                                                                dep["h1"]))))
                doc.rel(kid, "STATIC_LINK", did)

    return {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": "krmpod-%s" % a.version,
        "documentNamespace": "%s/releases/%s/sbom/%s" % (a.source.rstrip("/"), a.version,
                                                          index_digest[7:]),
        "creationInfo": {"created": created,
                         "creators": ["Organization: krmpod", "Tool: krmpod-release-sbom"]},
        "packages": doc.packages,
        "files": doc.files,
        "relationships": doc.rels,
    }


def escape_module(path):
    """The module proxy's case escaping: an upper-case letter becomes ! and its lower case."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), path)


def hashlib_hex(algo, data):
    return hashlib.new(algo, data).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layout", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--created", required=True, type=int)
    ap.add_argument("--source", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--deps-sh", required=True)
    ap.add_argument("--ca-json", required=True)
    ap.add_argument("--libc", action="append", default=[], metavar="ARCH=VERSION")
    ap.add_argument("--go-toolchain", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    relutil.write_file(a.out, relutil.pretty_json(build(a)))


if __name__ == "__main__":
    sys.exit(relutil.main_guard("sbom", main))
