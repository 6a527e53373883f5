"""Helpers shared by the release scripts (release/*.py): errors that name the thing and the
fix, hashing, canonical JSON, time stamps, and the pins the repository already holds
(scripts/deps.sh's PINS, release/release.mk's CA pin). Standard library only."""
import hashlib
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# The release version: vMAJOR.MINOR.PATCH with an optional semver pre-release (-rc.1,
# -beta.2, ...); no build metadata (+...), which an OCI tag cannot hold.
_NUM = r"(?:0|[1-9][0-9]*)"
_PRE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER = re.compile(r"^v(%s)\.(%s)\.(%s)(?:-(%s(?:\.%s)*))?$" % (_NUM, _NUM, _NUM, _PRE_ID, _PRE_ID))


class Failure(Exception):
    """A release step failed; the message names what is wrong and how to fix it."""


def fail(msg):
    raise Failure(msg)


def main_guard(prog, fn):
    """Runs fn(); a Failure becomes 'PROG: error: ...' on stderr and exit status 1."""
    try:
        return fn() or 0
    except Failure as e:
        print("%s: error: %s" % (prog, e), file=sys.stderr)
        return 1


def check_version(version):
    if not version:
        fail("no VERSION: say which release, e.g. make release VERSION=v0.1.0")
    if not SEMVER.match(version):
        fail("VERSION=%r is not a release version: it must be vMAJOR.MINOR.PATCH with an "
             "optional pre-release, like v0.1.0 or v1.2.0-rc.1 (semver, a leading v, no "
             "leading zeros, no +build metadata)" % version)
    return version


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def canonical_json(obj):
    """The bytes of an OCI manifest, config or index: sorted keys, no blanks."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def pretty_json(obj):
    """A human-readable JSON document that is still byte-for-byte deterministic."""
    return (json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()


def rfc3339(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch)))


def parse_rfc3339(s):
    """The epoch of a UTC time stamp as rfc3339() writes it; ValueError otherwise."""
    import calendar
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def write_file(path, data, mode=0o644):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def run(cmd, what, **kw):
    """Runs cmd; a failure names `what`, the command and its output's tail."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.STDOUT)
    try:
        r = subprocess.run(cmd, **kw)
    except FileNotFoundError:
        fail("%s: %s is not installed (not on PATH)" % (what, cmd[0]))
    if r.returncode != 0:
        out = r.stdout.decode(errors="replace") if isinstance(r.stdout, bytes) else (r.stdout or "")
        tail = "\n".join(out.rstrip().splitlines()[-25:])
        fail("%s failed (exit %d): %s\n%s" % (what, r.returncode, " ".join(cmd), tail))
    return r


# ---- pins --------------------------------------------------------------------------------

def deps_pins(deps_sh=os.path.join(ROOT, "scripts", "deps.sh")):
    """scripts/deps.sh's PINS: [{name, version, tarball, sha256}] in its order."""
    with open(deps_sh) as f:
        text = f.read()
    m = re.search(r"^PINS=\(\n(.*?)^\)", text, re.S | re.M)
    if not m:
        fail("%s: no PINS=( ... ) array found (the C dependencies' pins)" % deps_sh)
    pins = []
    for line in m.group(1).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.strip('"').split()
        if len(parts) != 4 or not re.fullmatch(r"[0-9a-f]{64}", parts[3]):
            fail("%s: PINS line %r is not 'package version tarball sha256'" % (deps_sh, line))
        pins.append({"name": parts[0], "version": parts[1], "tarball": parts[2],
                     "sha256": parts[3]})
    if not pins:
        fail("%s: PINS is empty" % deps_sh)
    return pins


def musl_pins(deps_sh=os.path.join(ROOT, "scripts", "deps.sh")):
    """The musl a cross build links, as scripts/deps.sh pins it (MUSL_ARM64="musl-dev
    VERSION DEB SHA256", the arm64 build's): {arch: {name, version, deb, sha256}}."""
    out = {}
    with open(deps_sh) as f:
        for line in f:
            m = re.match(r'^MUSL_([A-Z0-9]+)="(\S+) (\S+) (\S+\.deb) ([0-9a-f]{64})"\s*$', line)
            if m:
                out[m.group(1).lower()] = {"name": m.group(2), "version": m.group(3),
                                           "deb": m.group(4), "sha256": m.group(5)}
    return out


def ca_pin(release_mk=os.path.join(ROOT, "release", "release.mk")):
    """release/release.mk's CA_PIN: (package, version, sha256 of the .deb)."""
    with open(release_mk) as f:
        for line in f:
            m = re.match(r"^CA_PIN\s*:?=\s*(\S+)\s+(\S+)\s+([0-9a-f]{64})\s*$", line)
            if m:
                return m.group(1), m.group(2), m.group(3)
    fail("%s: no 'CA_PIN := PACKAGE VERSION SHA256' line" % release_mk)


def kustomize_toolchain(root=ROOT):
    """The Go toolchain scripts/build-peers.sh builds kustomize with (its one definition)."""
    with open(os.path.join(root, "scripts", "build-peers.sh")) as f:
        text = f.read()
    m = re.search(r"^\s*[^)\n]*\bkustomize\b[^)\n]*\)\s*echo\s+(go1\.[0-9.]+)\s*;;", text, re.M)
    if not m:
        fail("scripts/build-peers.sh: cannot find the Go toolchain it builds kustomize with "
             "(its toolchain() case for kustomize)")
    return m.group(1)


def debian_pool_dir(source_package):
    """Debian's pool directory of a source package: pool/main/c/curl, pool/main/libw/..."""
    prefix = source_package[:4] if source_package.startswith("lib") else source_package[0]
    return "pool/main/%s/%s" % (prefix, source_package)
