"""Images for the real-cluster tier, built from this repository and this machine's files and
imported into realkube's containerd (nothing is pulled):

  * one image per function fixture (tests/fixtures/images/NAME), entrypoint = the fixture,
    as example.com/fns/NAME:v1 (the name tests/fixtures/direct-docker maps back to NAME):
    a busybox root filesystem (`realkube busybox-rootfs`), plus for the Python fixtures this
    machine's Debian python3: the interpreter, the shared libraries ldd names, the standard
    library modules the fixtures really import (traced by running them here) and the yaml
    module, so a function's output in a pod is byte for byte the output of the direct run;
  * the sidecar image: a stand-in for the kustomize base image with its official layout
    (/app/kustomize, here scripts/kustomize-standin over this machine's kubectl, whose
    `kubectl kustomize` embeds kustomize), plus exactly the files scripts/image-layout.sh
    lays out (the script the Dockerfile's builder stage runs), with the ENV, USER, WORKDIR,
    ENTRYPOINT and CMD of the Dockerfile's final stage, read from the Dockerfile;
  * upstream Argo CD's images (argocd, redis), made as tests/realkube/argocd.py says;
  * real KRM functions (kpt's catalog, an organisation's own) under their real names, made
    as tests/realkube/realfns.py says.

Imports are cached: build/realkube/images.json records, per image name, a digest of the
root filesystem and config and the digest the import gave. An image is imported again only
when that content changed or containerd no longer holds that name at that digest (a `reset`,
or someone re-imported the name).

Run it by hand: `/usr/bin/python3 tests/realkube/images.py` (the cluster must be running)."""
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "images")
WORK = os.path.join(ROOT, "build", "realkube")
REALKUBE = os.environ.get("REALKUBE", os.path.join(ROOT, "scripts", "realkube"))
PYTHON = "/usr/bin/python3"

FN_IMAGE = "example.com/fns/%s:v1"
SIDECAR_REPO = "ghcr.io/krmpod/krmpod"  # the name manifests/ uses; the tier pins it by digest
SIDECAR_IMAGE = SIDECAR_REPO + ":realkube-test"
# Where the official kustomize image keeps kustomize (kustomize.Dockerfile), as
# scripts/base-images.sh and the Dockerfile's KUSTOMIZE_PATH say; its WORKDIR.
KUSTOMIZE_PATH = "/app/kustomize"
KUSTOMIZE_WORKDIR = "/app"
SYS_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

SAMPLE_RL = """apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web}
  spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}}}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cm}
  data: {k: v}
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: fn}
  data: {name: sample, namespace: ns, key: a, value: b, env: HOME}
"""

TRACE = r"""
import atexit, json, runpy, sys
out, script = sys.argv[1], sys.argv[2]
def dump():
    files = set()
    for m in list(sys.modules.values()):
        for attr in ("__file__", "__cached__"):
            f = getattr(m, attr, None)
            if isinstance(f, str):
                files.add(f)
    with open(out, "w") as fh:
        json.dump(sorted(files), fh)
atexit.register(dump)
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
"""


def log(msg):
    sys.stderr.write("realkube-images: %s\n" % msg)
    sys.stderr.flush()


def run(args, **kw):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), r.returncode,
                                                r.stderr.decode(errors="replace")))
    return r.stdout.decode()


def is_python(path):
    with open(path, "rb") as f:
        return f.readline().startswith(b"#!/usr/bin/python3")


# ---- root filesystems ------------------------------------------------------------------

def copy_file(src, root):
    """Copies src (symlinks followed) to the same absolute path under root, keeping its mode;
    a path under /usr/bin lands in root's /bin (the busybox root has /usr/bin -> ../bin)."""
    dst = os.path.join(root, src.lstrip("/"))
    parent = os.path.realpath(os.path.dirname(dst))
    if not parent.startswith(os.path.realpath(root)):
        raise RuntimeError("%s would land outside the root" % src)
    os.makedirs(parent, exist_ok=True)
    dst = os.path.join(parent, os.path.basename(dst))
    shutil.copyfile(src, dst)
    os.chmod(dst, stat.S_IMODE(os.stat(src).st_mode))


def shared_libs(binary):
    """The absolute paths ldd names for binary (the loader included); [] for a static one."""
    r = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    libs = []
    for line in r.stdout.decode().splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if m:
            libs.append(m.group(1))
    return libs


def traced_python_files(scripts, tmp):
    """The files (modules and their .pyc) the Python fixtures import, found by running each on
    a sample ResourceList here, plus the whole `encodings` package."""
    files = set()
    for script in scripts:
        out = os.path.join(tmp, "trace.json")
        r = subprocess.run([PYTHON, "-c", TRACE, out, script], input=SAMPLE_RL.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env={"PATH": "/usr/bin:/bin"})
        if not os.path.exists(out):
            raise RuntimeError("tracing %s failed: %s" % (script, r.stderr.decode()))
        with open(out) as f:
            files.update(json.load(f))
        os.unlink(out)
    enc = os.path.dirname(run([PYTHON, "-c", "import encodings; print(encodings.__file__)"])
                          .strip())
    for d, _, names in os.walk(enc):
        files.update(os.path.join(d, n) for n in names)
    return sorted(f for f in files if os.path.isfile(f) and f.startswith("/usr/"))


def busybox_root(path):
    run([REALKUBE, "busybox-rootfs", path])


def python_root(path, scripts, tmp):
    """busybox + Debian's python3 (interpreter, libraries, the traced stdlib, yaml)."""
    busybox_root(path)
    exe = os.path.realpath(PYTHON)
    copy_file(exe, path)
    os.symlink(os.path.basename(exe), os.path.join(path, "bin", "python3"))
    libdirs = run([PYTHON, "-c", "import sys, sysconfig; print(sysconfig.get_path('stdlib'));"
                   "print(sysconfig.get_path('platstdlib') + '/lib-dynload')"]).split()
    for d in libdirs:  # getpath's landmarks: lib/python3.X/os.py and lib-dynload
        os.makedirs(os.path.join(path, d.lstrip("/")), exist_ok=True)
    files = traced_python_files(scripts, tmp)
    libs = set(shared_libs(exe))
    for f in files:
        copy_file(f, path)
        if f.endswith(".so"):
            libs.update(shared_libs(f))
    for lib in sorted(libs):
        copy_file(lib, path)
    # the interpreter really starts there and finds what the fixtures import
    r = subprocess.run(["chroot", path, "/usr/bin/python3", "-c", "import yaml, os, sys"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0 or r.stderr:
        raise RuntimeError("python3 in the image root does not start cleanly: %s"
                           % r.stderr.decode(errors="replace"))


def copy_tree(src, dst):
    """Copies src's contents over dst (cp -a: modes, symlinks)."""
    run(["cp", "-a", src + "/.", dst + "/"])


# ---- the Dockerfile's final stage ------------------------------------------------------

def dockerfile_instructions(path):
    """[(INSTRUCTION, rest)] of a Dockerfile: comments dropped, continuations joined."""
    out, cur = [], ""
    with open(path) as f:
        for line in f:
            s = line.rstrip("\n")
            if not cur and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if cur and s.lstrip().startswith("#"):
                continue
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            cur += s
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


def substitute(text, variables):
    def one(m):
        name = m.group(1) or m.group(2)
        if name not in variables:
            raise RuntimeError("Dockerfile: ${%s} is not a known ARG or ENV" % name)
        return variables[name]
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", one, text)


def final_stage_config(path=os.path.join(ROOT, "Dockerfile"), build_args=None):
    """What the final stage sets: {"env": [(k, v)], "user", "workdir", "entrypoint", "cmd"}
    (absent keys: not set there). ARG defaults (global ones re-declared in the stage) and
    earlier ENVs are substituted; build_args override ARG defaults."""
    insts = dockerfile_instructions(path)
    global_args = {}
    stages = []
    for word, rest in insts:
        if word == "FROM":
            stages.append([])
        elif stages:
            stages[-1].append((word, rest))
        elif word == "ARG":
            k, _, v = rest.partition("=")
            global_args[k] = v
    global_args.update(build_args or {})
    variables, cfg = {}, {"env": []}
    for word, rest in stages[-1]:
        if word == "ARG":
            k, sep, v = rest.partition("=")
            variables[k] = (build_args or {}).get(k, v if sep else global_args.get(k, ""))
        elif word == "ENV":
            parts = shlex.split(rest)
            if parts and "=" not in parts[0]:  # legacy `ENV KEY value words`
                pairs = [(parts[0], " ".join(parts[1:]))]
            else:
                pairs = [p.split("=", 1) for p in parts]
            for k, v in pairs:
                v = substitute(v, variables)
                variables[k] = v
                cfg["env"] = [(ek, ev) for ek, ev in cfg["env"] if ek != k] + [(k, v)]
        elif word in ("USER", "WORKDIR"):
            cfg[word.lower()] = substitute(rest, variables)
        elif word in ("ENTRYPOINT", "CMD"):
            if not rest.startswith("["):
                raise RuntimeError("Dockerfile: %s must use the JSON form" % word)
            cfg[word.lower()] = json.loads(rest)
    return cfg


# ---- import with a cache ---------------------------------------------------------------

def tree_digest(path):
    h = hashlib.sha256()
    for d, dirs, files in os.walk(path):
        dirs.sort()
        for n in sorted(dirs + files):
            p = os.path.join(d, n)
            st = os.lstat(p)
            h.update(("%s %o %d %d\n" % (os.path.relpath(p, path), st.st_mode, st.st_uid,
                                         st.st_gid)).encode())
            if stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(p).encode() + b"\n")
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
    return h.hexdigest()


def registry_path(name):
    """Where the cluster's registry keeps name (scripts/realkube's registry_path): its path
    and tag without the registry host."""
    n = name.split("@", 1)[0]
    first = n.split("/", 1)[0]
    if "/" in n and ("." in first or ":" in first or first == "localhost"):
        rest = n.split("/", 1)[1]
    else:
        rest = n if "/" in n else "library/" + n
    if ":" not in rest.rsplit("/", 1)[-1]:
        rest += ":latest"
    return rest


class Importer:
    def __init__(self, sock):
        self.sock = sock
        env = dict(l[len("export "):].split("=", 1) for l in run([REALKUBE, "env"]).splitlines()
                   if l.startswith("export "))
        self.registry, self.registry_ca = env["REALKUBE_REGISTRY"], env["REALKUBE_CA_CERT"]
        self.cache_path = os.path.join(WORK, "images.json")
        try:
            with open(self.cache_path) as f:
                self.cache = json.load(f)
        except (OSError, ValueError):
            self.cache = {}
        self.imported, self.reused = [], []

    def containerd_digest(self, name):
        out = run(["ctr", "-a", self.sock, "-n", "k8s.io", "images", "ls", "name==" + name])
        for line in out.splitlines()[1:]:
            cols = line.split()
            if len(cols) >= 3 and cols[0] == name:
                return cols[2]
        return None

    def registry_has(self, name, digest):
        """The cluster's registry serves name's tag at digest (a `realkube reset`, or an
        import from before the registry existed, leaves it without)."""
        import http.client
        import ssl
        host, port = self.registry.rsplit(":", 1)
        path = registry_path(name)
        repo, tag = path.rsplit(":", 1)
        conn = http.client.HTTPSConnection(host, int(port), timeout=10,
                                           context=ssl.create_default_context(
                                               cafile=self.registry_ca))
        try:
            conn.request("HEAD", "/v2/%s/manifests/%s" % (repo, tag), headers={
                "Accept": "application/vnd.oci.image.manifest.v1+json"})
            r = conn.getresponse()
            r.read()
            return r.status == 200 and r.getheader("Docker-Content-Digest") == digest
        except OSError:
            return False
        finally:
            conn.close()

    def image(self, name, rootfs, entrypoint=None, cmd=None, user=None, workdir=None, env=()):
        """Imports rootfs as name unless the same content is there already; the digest."""
        args = []
        if entrypoint is not None:
            args += ["--entrypoint", json.dumps(entrypoint)]
        if cmd is not None:
            args += ["--cmd", json.dumps(cmd)]
        if user is not None:
            args += ["--user", user]
        if workdir is not None:
            args += ["--workdir", workdir]
        for k, v in env:
            args += ["--env", "%s=%s" % (k, v)]
        key = hashlib.sha256((tree_digest(rootfs) + json.dumps(args)).encode()).hexdigest()
        rec = self.cache.get(name)
        if (rec and rec["key"] == key and self.containerd_digest(name) == rec["digest"]
                and self.registry_has(name, rec["digest"])):
            self.reused.append(name)
            return rec["digest"]
        digest = run([REALKUBE, "image", name, rootfs] + args).strip()
        if not digest.startswith("sha256:"):
            raise RuntimeError("realkube image %s printed no digest: %r" % (name, digest))
        self.cache[name] = {"key": key, "digest": digest}
        os.makedirs(WORK, exist_ok=True)
        with open(self.cache_path + ".tmp", "w") as f:
            json.dump(self.cache, f, indent=1, sort_keys=True)
        os.replace(self.cache_path + ".tmp", self.cache_path)
        self.imported.append(name)
        return digest


# ---- the images ------------------------------------------------------------------------

def function_config(name):
    """What a fixture's image runs (its image config's Entrypoint and User)."""
    return {"Entrypoint": ["/usr/local/bin/" + name], "User": "65534:65534"}


def fixture_kind(name):
    """The kind a fixture's catalog entry names ("stderr-first" -> "StderrFirst")."""
    return "".join(part.capitalize() for part in re.split(r"[-_.]", name) if part)


def fixture_catalog(names, catalog="krmpod-test-fixtures"):
    """An admin catalog (docs/catalogs.md) that lists the fixtures' images with the
    entrypoint their image config says (function_config, the very config imported), recorded
    so that krmpod runs them in exec mode where it cannot read their configs (issue 29)."""
    entries = []
    for name in names:
        entrypoint = json.dumps(function_config(name)["Entrypoint"])
        entries.append("  - group: example.com\n    names: {kind: %s}\n    versions:\n"
                       "    - name: v1\n      runtime: {container: {image: %s, entrypoint: %s}}\n"
                       % (fixture_kind(name), FN_IMAGE % name, entrypoint))
    return ("apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata: {name: %s}\n"
            "spec:\n  krmFunctions:\n" % catalog) + "".join(entries)


def build_all(sock, krmpod_bin, fixtures=None):
    """Builds and imports every image; returns {"functions": {fixture: digest},
    "real": {function: {"image", "digest", "binary", "size"}},
    "sidecar": digest, "argocd": {"argocd": digest, "redis": digest, "names": {...}},
    "sidecar_config": cfg, "imported": [...]}."""
    import argocd
    import realfns
    fixtures = fixtures or sorted(os.listdir(FIXTURES))
    imp = Importer(sock)
    result = {"functions": {}}
    tmp = tempfile.mkdtemp(prefix="rootfs-", dir=os.path.join(WORK))
    try:
        py = [f for f in fixtures if is_python(os.path.join(FIXTURES, f))]
        py_base = os.path.join(tmp, "python-base")
        python_root(py_base, [os.path.join(FIXTURES, f) for f in py], tmp)
        sh_base = os.path.join(tmp, "busybox-base")
        busybox_root(sh_base)
        for name in fixtures:
            root = os.path.join(tmp, "fn-" + name)
            shutil.copytree(py_base if name in py else sh_base, root, symlinks=True)
            dst = os.path.join(root, "usr", "local", "bin", name)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(os.path.join(FIXTURES, name), dst)
            os.chmod(dst, 0o755)
            cfg = function_config(name)
            result["functions"][name] = imp.image(FN_IMAGE % name, root,
                                                  entrypoint=cfg["Entrypoint"], user=cfg["User"])
            shutil.rmtree(root)

        result["argocd"] = argocd.build_images(imp)
        result["real"] = realfns.build_images(imp)

        # the sidecar: kustomize stand-in base + scripts/image-layout.sh + the final stage
        root = os.path.join(tmp, "sidecar")
        busybox_root(root)
        kubectl = os.path.realpath(shutil.which("kubectl"))
        if shared_libs(kubectl):
            raise RuntimeError("%s is not static: it cannot stand in for kustomize" % kubectl)
        os.makedirs(os.path.join(root, "usr", "local", "bin"))
        shutil.copyfile(kubectl, os.path.join(root, "usr", "local", "bin", "kubectl"))
        os.chmod(os.path.join(root, "usr", "local", "bin", "kubectl"), 0o755)
        os.makedirs(os.path.join(root, KUSTOMIZE_WORKDIR.lstrip("/")))
        shutil.copyfile(os.path.join(ROOT, "scripts", "kustomize-standin"),
                        os.path.join(root, KUSTOMIZE_PATH.lstrip("/")))
        os.chmod(os.path.join(root, KUSTOMIZE_PATH.lstrip("/")), 0o755)
        layout = os.path.join(tmp, "layout")
        run([os.path.join(ROOT, "scripts", "image-layout.sh"), layout, krmpod_bin])
        copy_tree(layout, root)
        cfg = final_stage_config(build_args={"KUSTOMIZE_PATH": KUSTOMIZE_PATH})
        # the base's config (the official image: WORKDIR /app, ENTRYPOINT /app/kustomize;
        # PATH as scripts/base-images.sh's stand-in), overlaid by the final stage's
        env = [("PATH", SYS_PATH + ":" + KUSTOMIZE_WORKDIR)]
        for k, v in cfg["env"]:
            env = [(ek, ev) for ek, ev in env if ek != k] + [(k, v)]
        result["sidecar_config"] = dict(cfg, env=env, workdir=cfg.get("workdir", KUSTOMIZE_WORKDIR))
        result["sidecar"] = imp.image(SIDECAR_IMAGE, root,
                                      entrypoint=cfg.get("entrypoint", [KUSTOMIZE_PATH]),
                                      cmd=cfg.get("cmd"), user=cfg.get("user"),
                                      workdir=result["sidecar_config"]["workdir"], env=env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["imported"], result["reused"] = imp.imported, imp.reused
    return result


if __name__ == "__main__":
    env = dict(l[len("export "):].split("=", 1) for l in run([REALKUBE, "env"]).splitlines()
               if l.startswith("export "))
    res = build_all(env["REALKUBE_CONTAINERD_SOCK"], os.path.join(ROOT, "build", "krmpod"))
    json.dump(res, sys.stdout, indent=1, sort_keys=True)
    print()
