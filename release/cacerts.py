#!/usr/bin/python3
"""The image's CA bundle, from a pinned Debian package rather than this machine's
/etc/ssl/certs (whose contents depend on what was installed and when).

    release/cacerts.py --out DIR [--apt-dir DIR] [--mirror URL] [--suite trixie]

reads CA_PIN (package, version, SHA-256 of the .deb) from release/release.mk, fetches that
.deb through a private apt configuration under --apt-dir (the machine's own apt sources,
lists and configuration are neither read nor touched: APT_CONFIG names a file of ours that
turns the rest off), checks the SHA-256 and writes into --out:

    <package>_<version>_all.deb   the pinned package (kept: a later run needs no network)
    ca-certificates.crt           every certificate the package ships, concatenated in the
                                  C-locale order of their paths, each ending in a newline:
                                  what the package's own `update-ca-certificates --default`
                                  writes (tests/release checks it against that script)
    ca.json                       what the SBOM says about it: package, version, sha256,
                                  file name and download URL

Debian keeps only current versions in its archive: when a point release replaces the pinned
version, the download fails, naming the version the archive has now; update CA_PIN then.
"""
import argparse
import io
import json
import lzma
import os
import re
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import relutil  # noqa: E402
from relutil import fail  # noqa: E402

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# The SBOM names the package at Debian's own address, whichever mirror served it.
CANONICAL_MIRROR = "http://deb.debian.org/debian"
CERTS_DIR = "usr/share/ca-certificates/"


def apt_env(apt_dir, mirror, suite):
    """A private apt configuration: our sources, lists and cache; no status file, no
    configuration fragments of this machine's (APT_CONFIG is read before them and points
    their directory elsewhere)."""
    for d in ("lists/partial", "cache/archives/partial", "etc/apt.conf.d", "etc/preferences.d"):
        os.makedirs(os.path.join(apt_dir, d), exist_ok=True)
    keyring = KEYRING if os.path.exists(KEYRING) else KEYRING[:-3] + "pgp"
    with open(os.path.join(apt_dir, "sources.list"), "w") as f:
        f.write("deb [arch=amd64 signed-by=%s] %s %s main\n" % (keyring, mirror, suite))
    conf = os.path.join(apt_dir, "apt.conf")
    with open(conf, "w") as f:
        f.write("\n".join([
            'Dir::Etc::Main "/dev/null";',
            'Dir::Etc::Parts "%s/etc/apt.conf.d";' % apt_dir,
            'Dir::Etc::PreferencesParts "%s/etc/preferences.d";' % apt_dir,
            'Dir::Etc::Preferences "/dev/null";',
            'Dir::Etc::SourceList "%s/sources.list";' % apt_dir,
            'Dir::Etc::SourceParts "/dev/null";',
            'Dir::State::Lists "%s/lists";' % apt_dir,
            'Dir::State::status "/dev/null";',
            'Dir::Cache "%s/cache";' % apt_dir,
            'APT::Architecture "amd64";',
            'APT::Architectures { "amd64"; };',
            'APT::Sandbox::User "root";',
            'Acquire::Languages "none";',
            'Acquire::Retries "3";',
            "",
        ]))
    env = dict(os.environ, APT_CONFIG=conf, LC_ALL="C")
    return env


def fetch_deb(out, apt_dir, mirror, suite, package, version, sha256):
    deb = os.path.join(out, "%s_%s_all.deb" % (package, version.replace(":", "%3a")))
    meta_path = os.path.join(out, "apt-filename")
    if os.path.exists(deb) and relutil.sha256_file(deb) == sha256 and os.path.exists(meta_path):
        with open(meta_path) as f:
            return deb, f.read().strip()
    env = apt_env(apt_dir, mirror, suite)
    print("cacerts: updating the private %s list (%s)" % (suite, apt_dir), file=sys.stderr)
    relutil.run(["apt-get", "-qq", "update"], "apt-get update of the private list in %s "
                "(is %s reachable?)" % (apt_dir, mirror), env=env)
    show = subprocess.run(["apt-cache", "show", "%s=%s" % (package, version)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if show.returncode != 0:
        have = subprocess.run(["apt-cache", "policy", package], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT).stdout.decode(errors="replace")
        cand = re.search(r"Candidate:\s*(\S+)", have)
        fail("Debian %s no longer has %s %s (it has %s): update CA_PIN in release/release.mk to "
             "that version and its .deb's SHA-256 (apt-cache show %s)"
             % (suite, package, version, cand.group(1) if cand else "none", package))
    fields = dict(re.findall(r"^([A-Za-z0-9-]+): (.*)$", show.stdout.decode(), re.M))
    if fields.get("SHA256") != sha256:
        fail("Debian %s's %s %s has SHA-256 %s, but CA_PIN in release/release.mk says %s: "
             "check which is right before changing the pin"
             % (suite, package, version, fields.get("SHA256"), sha256))
    tmp = os.path.join(out, "download")
    os.makedirs(tmp, exist_ok=True)
    relutil.run(["apt-get", "-qq", "download", "%s=%s" % (package, version)],
                "downloading %s %s from %s" % (package, version, mirror), env=env, cwd=tmp)
    got = [n for n in os.listdir(tmp) if n.endswith(".deb")]
    if len(got) != 1:
        fail("apt-get download %s=%s left %r in %s" % (package, version, got, tmp))
    have = relutil.sha256_file(os.path.join(tmp, got[0]))
    if have != sha256:
        fail("%s: SHA-256 mismatch: expected %s (CA_PIN in release/release.mk), got %s"
             % (got[0], sha256, have))
    os.replace(os.path.join(tmp, got[0]), deb)
    os.rmdir(tmp)
    relutil.write_file(meta_path, (fields["Filename"] + "\n").encode())
    return deb, fields["Filename"]


def ar_members(data):
    """The members of a Unix ar archive (a .deb): {name: bytes}."""
    if not data.startswith(b"!<arch>\n"):
        fail("not a .deb (ar) archive")
    pos, out = 8, {}
    while pos + 60 <= len(data):
        hdr = data[pos:pos + 60]
        name = hdr[:16].decode().strip().rstrip("/")
        size = int(hdr[48:58].decode().strip())
        out[name] = data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
    return out


def bundle_from_deb(deb):
    """The concatenated certificates of the package, as update-ca-certificates --default
    makes them: every *.crt under /usr/share/ca-certificates, sorted as `sort` in the C
    locale sorts their paths (byte order), each followed by a newline if it lacks one."""
    with open(deb, "rb") as f:
        members = ar_members(f.read())
    names = [n for n in members if n.startswith("data.tar")]
    if names != ["data.tar.xz"]:
        fail("%s: expected a data.tar.xz member, found %r" % (deb, sorted(members)))
    data = lzma.decompress(members["data.tar.xz"])
    certs = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for ti in tar:
            name = ti.name[2:] if ti.name.startswith("./") else ti.name
            if ti.isfile() and name.startswith(CERTS_DIR) and name.endswith(".crt"):
                certs[name[len(CERTS_DIR):]] = tar.extractfile(ti).read()
    if len(certs) < 50:
        fail("%s holds only %d certificates under /%s" % (deb, len(certs), CERTS_DIR))
    out = bytearray()
    for rel in sorted(certs, key=lambda s: s.encode()):
        pem = certs[rel]
        out += pem if pem.endswith(b"\n") else pem + b"\n"
    return bytes(out), len(certs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--apt-dir", default=os.path.join(relutil.ROOT, "build", "release", "apt"))
    ap.add_argument("--mirror", default=os.environ.get("KRMPOD_DEBIAN_MIRROR",
                                                       "http://deb.debian.org/debian"))
    ap.add_argument("--suite", default="trixie")
    a = ap.parse_args()
    package, version, sha256 = relutil.ca_pin()
    out, apt_dir = os.path.abspath(a.out), os.path.abspath(a.apt_dir)
    os.makedirs(out, exist_ok=True)
    deb, filename = fetch_deb(out, apt_dir, a.mirror, a.suite, package, version, sha256)
    bundle, n = bundle_from_deb(deb)
    relutil.write_file(os.path.join(out, "ca-certificates.crt"), bundle)
    meta = {"package": package, "version": version, "sha256": sha256,
            "filename": os.path.basename(filename),
            "url": CANONICAL_MIRROR + "/" + filename, "certificates": n}
    relutil.write_file(os.path.join(out, "ca.json"), relutil.pretty_json(meta))
    print("cacerts: %s %s: %d certificates, %d bytes" % (package, version, n, len(bundle)),
          file=sys.stderr)


if __name__ == "__main__":
    sys.exit(relutil.main_guard("cacerts", main))
