#!/usr/bin/python3
"""Writes krmpod's release image: an OCI image layout holding one image index with an
image per architecture, each a single layer made from a root directory that
scripts/image-layout.sh --root laid out. Standard library only, and deterministic: the same
roots, metadata and SOURCE_DATE_EPOCH give the same bytes, hence the same digests.

    release/oci_image.py --out DIR --version V --revision COMMIT --created EPOCH \\
        --source URL --kustomize PATH --image amd64=ROOT [--image arm64=ROOT ...]

The layer tar (ustar, no pax headers): entries sorted by path component, parents first; every
entry owned by uid/gid 0 with no user or group name; mtime = --created; the mode the root has
on disk (scripts/image-layout.sh sets it), with no setuid/setgid bits and nothing
world-writable but a sticky directory (/tmp). Regular files, directories and symlinks only.
gzip by zlib level 9 with a header of our own: no file name, mtime 0, OS 255 (unknown).

The layout (https://github.com/opencontainers/image-spec/blob/main/image-layout.md):

    DIR/oci-layout               {"imageLayoutVersion":"1.0.0"}
    DIR/index.json               one descriptor: the image index, with the annotations
                                 org.opencontainers.image.ref.name and .version = V (so
                                 `skopeo copy --all oci:DIR:V ...` finds it, and
                                 `crane push DIR REPO:V` pushes that index unchanged)
    DIR/blobs/sha256/...         the index, the manifests, the configs, the layers

The functions below are also how the checks read a layout (check_release.py, sbom.py).
"""
import argparse
import gzip
import io
import json
import os
import stat
import struct
import sys
import tarfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import relutil  # noqa: E402
from relutil import fail  # noqa: E402

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
PLATFORMS = {"amd64": {"architecture": "amd64", "os": "linux"},
             "arm64": {"architecture": "arm64", "os": "linux", "variant": "v8"}}
TITLE = "krmpod"
DESCRIPTION = "Argo CD CMP sidecar: kustomize KRM functions as Kubernetes Pods"
LICENSES = "Apache-2.0"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# ---- the layer ---------------------------------------------------------------------------

def _walk(root):
    """Relative paths under root, sorted by component (a parent before its children)."""
    out = []

    def rec(rel):
        full = os.path.join(root, rel) if rel else root
        for name in sorted(os.listdir(full), key=lambda s: s.encode()):
            r = rel + "/" + name if rel else name
            out.append(r)
            st = os.lstat(os.path.join(root, r))
            if stat.S_ISDIR(st.st_mode):
                rec(r)
    rec("")
    return out


def layer_tar(root, mtime):
    """The uncompressed layer of the directory tree `root`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for rel in _walk(root):
            path = os.path.join(root, rel)
            st = os.lstat(path)
            mode = stat.S_IMODE(st.st_mode)
            ti = tarfile.TarInfo(rel)
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            ti.mtime = int(mtime)
            ti.mode = mode
            if mode & (stat.S_ISUID | stat.S_ISGID):
                fail("%s: setuid/setgid bits (mode %o): the image has none" % (path, mode))
            if stat.S_ISDIR(st.st_mode):
                if mode & 0o002 and not mode & stat.S_ISVTX:
                    fail("%s: a world-writable directory without the sticky bit" % path)
                ti.type = tarfile.DIRTYPE
                tar.addfile(ti)
            elif stat.S_ISREG(st.st_mode):
                if mode & 0o022:
                    fail("%s: writable by group or others (mode %o)" % (path, mode))
                ti.type = tarfile.REGTYPE
                ti.size = st.st_size
                with open(path, "rb") as f:
                    tar.addfile(ti, f)
            elif stat.S_ISLNK(st.st_mode):
                ti.type = tarfile.SYMTYPE
                ti.linkname = os.readlink(path)
                ti.mode = 0o777
                tar.addfile(ti)
            else:
                fail("%s: not a regular file, directory or symlink" % path)
    return buf.getvalue()


def gzip_bytes(data):
    """gzip (RFC 1952) with a fixed header: no name, mtime 0, XFL 2 (level 9), OS 255."""
    co = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS, 9)
    body = co.compress(data) + co.flush()
    header = b"\x1f\x8b\x08\x00" + struct.pack("<I", 0) + b"\x02\xff"
    trailer = struct.pack("<II", zlib.crc32(data) & 0xffffffff, len(data) & 0xffffffff)
    return header + body + trailer


# ---- the layout --------------------------------------------------------------------------

class Layout:
    """An OCI image layout being written: blobs by digest."""

    def __init__(self, path):
        self.path = path
        os.makedirs(os.path.join(path, "blobs", "sha256"), exist_ok=True)

    def blob(self, data, media_type, **extra):
        digest = relutil.sha256_bytes(data)
        p = os.path.join(self.path, "blobs", "sha256", digest)
        if not os.path.exists(p):
            relutil.write_file(p, data)
        d = {"mediaType": media_type, "digest": "sha256:" + digest, "size": len(data)}
        d.update(extra)
        return d

    def json_blob(self, obj, media_type, **extra):
        return self.blob(relutil.canonical_json(obj), media_type, **extra)


def annotations(version, revision, created, source):
    return {
        "org.opencontainers.image.created": relutil.rfc3339(created),
        "org.opencontainers.image.description": DESCRIPTION,
        "org.opencontainers.image.licenses": LICENSES,
        "org.opencontainers.image.revision": revision,
        "org.opencontainers.image.source": source,
        "org.opencontainers.image.title": TITLE,
        "org.opencontainers.image.version": version,
    }


def image_config(arch, diff_id, version, revision, created, source, kustomize):
    return {
        "created": relutil.rfc3339(created),
        "architecture": PLATFORMS[arch]["architecture"],
        "os": "linux",
        **({"variant": PLATFORMS[arch]["variant"]} if "variant" in PLATFORMS[arch] else {}),
        "config": {
            # Argo CD's sidecar runs as 999 (argocd); its spec sets the command
            # (/var/run/argocd/argocd-cmp-server): the entrypoint is for running krmpod by hand.
            "User": "999",
            "Env": [
                "PATH=" + SYSTEM_PATH,
                "KRMPOD_SHIM_DIR=/usr/local/libexec/krmpod",
                "KRMPOD_KUSTOMIZE=" + kustomize,
            ],
            "Entrypoint": ["/usr/local/bin/krmpod"],
            "Cmd": ["version"],
            "WorkingDir": "/home/argocd",
            "Labels": annotations(version, revision, created, source),
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + diff_id]},
        "history": [{"created": relutil.rfc3339(created),
                     "created_by": "make release: scripts/image-layout.sh --root, "
                                   "release/oci_image.py"}],
    }


def write_layout(out, roots, version, revision, created, source, kustomize):
    """roots: {arch: root dir}. Returns the index descriptor (as index.json holds it)."""
    if os.path.exists(out) and os.listdir(out):
        fail("%s is not empty: the layout is written into a new directory" % out)
    lay = Layout(out)
    ann = annotations(version, revision, created, source)
    manifests = []
    for arch in sorted(roots):
        if arch not in PLATFORMS:
            fail("unknown architecture %r (known: %s)" % (arch, ", ".join(sorted(PLATFORMS))))
        tar = layer_tar(roots[arch], created)
        layer = lay.blob(gzip_bytes(tar), MT_LAYER)
        config = lay.json_blob(image_config(arch, relutil.sha256_bytes(tar), version, revision,
                                            created, source, kustomize), MT_CONFIG)
        manifest = {"schemaVersion": 2, "mediaType": MT_MANIFEST, "config": config,
                    "layers": [layer], "annotations": ann}
        manifests.append(lay.json_blob(manifest, MT_MANIFEST, platform=PLATFORMS[arch]))
    index = {"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": manifests,
             "annotations": ann}
    desc = lay.json_blob(index, MT_INDEX, annotations={
        "org.opencontainers.image.ref.name": version,
        "org.opencontainers.image.version": version})
    relutil.write_file(os.path.join(out, "index.json"), relutil.canonical_json(
        {"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": [desc]}))
    relutil.write_file(os.path.join(out, "oci-layout"),
                       relutil.canonical_json({"imageLayoutVersion": "1.0.0"}))
    return desc


# ---- reading a layout (the checks) -------------------------------------------------------

def read_blob(layout, desc):
    """The bytes of a descriptor's blob, checked against its digest and size."""
    digest = desc.get("digest", "")
    if not digest.startswith("sha256:") or len(digest) != 71:
        fail("%s: descriptor digest %r is not sha256:<64 hex>" % (layout, digest))
    p = os.path.join(layout, "blobs", "sha256", digest[7:])
    if not os.path.isfile(p):
        fail("%s: blob %s (%s) is missing" % (layout, digest, desc.get("mediaType")))
    with open(p, "rb") as f:
        data = f.read()
    if relutil.sha256_bytes(data) != digest[7:]:
        fail("%s: blob %s does not hash to its name" % (layout, digest))
    if len(data) != desc.get("size"):
        fail("%s: blob %s is %d bytes, its descriptor says %s"
             % (layout, digest, len(data), desc.get("size")))
    return data


def read_json_blob(layout, desc):
    try:
        return json.loads(read_blob(layout, desc))
    except ValueError as e:
        fail("%s: blob %s is not JSON: %s" % (layout, desc.get("digest"), e))


def arch_of(platform):
    for arch, p in PLATFORMS.items():
        if p == platform:
            return arch
    fail("platform %r is none of %s" % (platform, sorted(PLATFORMS)))


def read_layout(layout):
    """{"index_desc", "index", "images": {arch: {"manifest_desc", "manifest", "config",
    "layer" (the uncompressed tar bytes)}}}, every blob checked on the way."""
    try:
        with open(os.path.join(layout, "oci-layout")) as f:
            lv = json.load(f)
        with open(os.path.join(layout, "index.json")) as f:
            top = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s is not an OCI image layout: %s" % (layout, e))
    if lv.get("imageLayoutVersion") != "1.0.0":
        fail("%s/oci-layout: imageLayoutVersion %r, want 1.0.0" % (layout, lv))
    entries = top.get("manifests") or []
    if top.get("schemaVersion") != 2 or len(entries) != 1 or \
            entries[0].get("mediaType") != MT_INDEX:
        fail("%s/index.json must name exactly one image index (schemaVersion 2)" % layout)
    desc = entries[0]
    index = read_json_blob(layout, desc)
    if index.get("schemaVersion") != 2 or index.get("mediaType") != MT_INDEX:
        fail("%s: the image index %s is not an OCI image index" % (layout, desc["digest"]))
    out = {"index_desc": desc, "index": index, "images": {}}
    for md in index.get("manifests") or []:
        if md.get("mediaType") != MT_MANIFEST:
            fail("%s: index entry %s is %r, not an image manifest"
                 % (layout, md.get("digest"), md.get("mediaType")))
        arch = arch_of(md.get("platform"))
        if arch in out["images"]:
            fail("%s: two images for %s" % (layout, arch))
        m = read_json_blob(layout, md)
        if m.get("schemaVersion") != 2 or m.get("mediaType") != MT_MANIFEST or \
                (m.get("config") or {}).get("mediaType") != MT_CONFIG:
            fail("%s: manifest %s (%s) is not an OCI image manifest with an OCI config"
                 % (layout, md["digest"], arch))
        cfg = read_json_blob(layout, m["config"])
        layers = m.get("layers") or []
        if len(layers) != 1 or layers[0].get("mediaType") != MT_LAYER:
            fail("%s: manifest %s (%s) must have one tar+gzip layer" % (layout, md["digest"], arch))
        gz = read_blob(layout, layers[0])
        if gz[:4] != b"\x1f\x8b\x08\x00" or gz[4:8] != b"\0\0\0\0":
            fail("%s: the %s layer's gzip header holds a file name, flags or an mtime"
                 % (layout, arch))
        tar = gzip.decompress(gz)
        diff_ids = (cfg.get("rootfs") or {}).get("diff_ids")
        if diff_ids != ["sha256:" + relutil.sha256_bytes(tar)]:
            fail("%s: the %s config's rootfs.diff_ids %r do not match its layer"
                 % (layout, arch, diff_ids))
        plat = {k: cfg.get(k) for k in ("architecture", "os", "variant") if cfg.get(k)}
        if plat != PLATFORMS[arch]:
            fail("%s: the %s config says platform %r" % (layout, arch, plat))
        out["images"][arch] = {"manifest_desc": md, "manifest": m, "config": cfg, "layer": tar}
    return out


def layer_entries(tar_bytes):
    """[(TarInfo, bytes or None)] of a layer, in order."""
    out = []
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
        for ti in tar:
            out.append((ti, tar.extractfile(ti).read() if ti.isfile() else None))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--revision", required=True)
    ap.add_argument("--created", required=True, type=int, help="SOURCE_DATE_EPOCH")
    ap.add_argument("--source", required=True)
    ap.add_argument("--kustomize", required=True, help="kustomize's path in the image")
    ap.add_argument("--image", action="append", required=True, metavar="ARCH=ROOT")
    a = ap.parse_args()
    roots = {}
    for spec in a.image:
        arch, sep, root = spec.partition("=")
        if not sep or not os.path.isdir(root):
            fail("--image %s: want ARCH=ROOT with ROOT a directory" % spec)
        roots[arch] = root
    desc = write_layout(a.out, roots, a.version, a.revision, a.created, a.source, a.kustomize)
    print(desc["digest"])


if __name__ == "__main__":
    sys.exit(relutil.main_guard("oci_image", main))
