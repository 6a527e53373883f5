"""Upstream Argo CD on the real cluster, installed as its own docs install it.

  * The `argocd` multi-call binary and kustomize are the real peers scripts/build-peers.sh
    builds from the Go module proxy (tests/tools/argocd, tests/tools/kustomize).
  * Its images are made here the way upstream's Dockerfile makes them, on a Debian root
    filesystem from Debian's packages (debootstrap --variant=minbase, cached under
    build/realkube/debian/ by package list): git, tini, gpg, ssh, ca-certificates and tzdata
    as upstream installs them; the `argocd` binary at /usr/local/bin with upstream's links
    (argocd-repo-server, argocd-cmp-server, ...), kustomize beside it, and the three shell
    helpers upstream copies in (hack/gpg-wrapper.sh, hack/git-verify-wrapper.sh,
    entrypoint.sh) taken from the module's own tree; user argocd (999), ENTRYPOINT tini.
    Redis is Debian's redis-server under the name upstream's manifest gives its image.
    Left out, and not needed by any test: helm, git-lfs, Argo CD's web UI (a stub is
    compiled in).
  * They go to the cluster's registry under their upstream names (`realkube image`), so the
    manifests' `imagePullPolicy: Always` pulls them as it would from quay.io and
    public.ecr.aws.
  * install.yaml is the module's own manifests/install.yaml, the very file of the release,
    applied as Argo CD's docs and e2e/install-argocd.sh apply it; what a render does not
    need (dex, notifications, the ApplicationSet controller) is then scaled to zero. The API
    server stays: it makes the `default` AppProject and the server key at its start, as in
    every real install.
  * The test repository is served by e2e/git-server.yaml (git daemon in the argocd image),
    from a git bundle in a ConfigMap, as e2e/serve-repo.sh serves it."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import images

ROOT = images.ROOT
TOOLS = os.path.join(ROOT, "tests", "tools")
MODULE = "github.com/argoproj/argo-cd/v3"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = os.environ.get("KRMPOD_DEBIAN_MIRROR", "http://deb.debian.org/debian")
DEBIAN_CACHE = os.path.join(images.WORK, "debian")
# upstream's Dockerfile (argocd-base): apt-get install git tini ca-certificates gpg gpg-agent
# tzdata connect-proxy openssh-client (connect-proxy: SOCKS for ssh, not in Debian's main)
ARGOCD_PACKAGES = ["git", "tini", "ca-certificates", "gpg", "gpg-agent", "tzdata",
                   "openssh-client"]
REDIS_PACKAGES = ["redis-server"]
# upstream's Dockerfile: the links to the multi-call binary
ARGOCD_LINKS = ["argocd-server", "argocd-repo-server", "argocd-cmp-server",
                "argocd-application-controller", "argocd-dex", "argocd-notifications",
                "argocd-applicationset-controller", "argocd-k8s-auth", "argocd-commit-server"]
ARGOCD_UID = 999
NAMESPACE = "argocd"
# scaled to zero after the install: nothing a render needs (dex's image is not made here)
UNNEEDED = ["deployment/argocd-dex-server", "deployment/argocd-notifications-controller",
            "deployment/argocd-applicationset-controller"]
GIT_SERVER = os.path.join(ROOT, "e2e", "git-server.yaml")
GIT_NAMESPACE = "krmpod-e2e-git"
GIT_SERVICE = "krmpod-e2e-git"
GIT_REPO = "krmpod-e2e.git"
GIT_URL = "git://%s.%s.svc.cluster.local:9418/%s" % (GIT_SERVICE, GIT_NAMESPACE, GIT_REPO)


def log(msg):
    images.log("argocd: " + msg)


def go_env(peer):
    env = dict(os.environ, GOFLAGS="-mod=readonly")
    if peer in ("argocd", "kustomize"):
        env["GOTOOLCHAIN"] = "go1.27.3"  # their go.mod needs Go 1.27 (build-peers.sh)
    return env


def version():
    """The Argo CD release tests/tools/argocd/go.mod pins (v3.6.1)."""
    with open(os.path.join(TOOLS, "argocd", "go.mod")) as f:
        m = re.search(r"^\s*%s (v\S+)" % re.escape(MODULE), f.read(), re.M)
    if not m:
        raise RuntimeError("tests/tools/argocd/go.mod requires no %s" % MODULE)
    return m.group(1)


def module_dir():
    """The pinned release's source tree in the Go module cache (downloaded when missing)."""
    r = subprocess.run(["go", "mod", "download", "-json", "%s@%s" % (MODULE, version())],
                       cwd=os.path.join(TOOLS, "argocd"), env=go_env("argocd"),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("go mod download %s@%s failed: %s" % (
            MODULE, version(), r.stderr.decode(errors="replace")))
    return json.loads(r.stdout)["Dir"]


def install_yaml():
    return os.path.join(module_dir(), "manifests", "install.yaml")


def manifest_images():
    """{"argocd": ref, "redis": ref}: the images install.yaml names."""
    with open(install_yaml()) as f:
        refs = set(re.findall(r"^\s*image:\s*(\S+)", f.read(), re.M))
    argocd = [r for r in refs if "/argoproj/argocd:" in r]
    redis = [r for r in refs if re.search(r"/redis:", r)]
    if len(argocd) != 1 or len(redis) != 1:
        raise RuntimeError("install.yaml names images %s: expected one argocd and one redis"
                           % sorted(refs))
    return {"argocd": argocd[0], "redis": redis[0]}


def peers():
    """{"argocd": path, "kustomize": path}, built when their pins changed."""
    script = os.path.join(ROOT, "scripts", "build-peers.sh")
    images.run([script, "argocd", "kustomize"])
    out = {}
    for p in ("argocd", "kustomize"):
        path = os.path.join(images.run([script, "--dir", p]).strip(), p)
        if not os.access(path, os.X_OK):
            raise RuntimeError("scripts/build-peers.sh made no %s" % path)
        out[p] = path
    return out


# ---- Debian root filesystems ---------------------------------------------------------------

def debian_rootfs(packages):
    """A Debian root filesystem with packages (debootstrap minbase), cached by package list;
    its path (do not write into it: copy it)."""
    key = hashlib.sha256(("%s %s %s v1" % (DEBIAN_SUITE, DEBIAN_MIRROR,
                                           ",".join(sorted(packages)))).encode()).hexdigest()[:16]
    done = os.path.join(DEBIAN_CACHE, key, "rootfs")
    if os.path.isdir(done):
        return done
    os.makedirs(DEBIAN_CACHE, exist_ok=True)
    work = tempfile.mkdtemp(prefix="debootstrap-", dir=DEBIAN_CACHE)
    target = os.path.join(work, "rootfs")
    t0 = time.monotonic()
    log("debootstrap %s with %s (first time: a minute or so; cached in %s)"
        % (DEBIAN_SUITE, " ".join(packages), DEBIAN_CACHE))
    r = subprocess.run(["debootstrap", "--variant=minbase", "--include=" + ",".join(packages),
                        DEBIAN_SUITE, target, DEBIAN_MIRROR],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        tail = r.stdout.decode(errors="replace")[-2000:]
        shutil.rmtree(work, ignore_errors=True)
        raise RuntimeError("debootstrap %s (%s) from %s failed (set KRMPOD_DEBIAN_MIRROR for "
                           "another mirror):\n%s" % (DEBIAN_SUITE, ",".join(packages),
                                                     DEBIAN_MIRROR, tail))
    # what an image does not carry: package caches, documentation, device nodes
    for d in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man",
              "usr/share/info", "dev", "var/log"):
        p = os.path.join(target, d)
        if os.path.isdir(p):
            for n in os.listdir(p):
                q = os.path.join(p, n)
                if os.path.isdir(q) and not os.path.islink(q):
                    shutil.rmtree(q)
                elif n != "lock":
                    os.unlink(q)
    dst = os.path.join(DEBIAN_CACHE, key)
    os.makedirs(dst, exist_ok=True)
    os.rename(target, done)
    shutil.rmtree(work, ignore_errors=True)
    log("debootstrap done in %.0f s" % (time.monotonic() - t0))
    return done


def add_user(root, name, uid, home):
    with open(os.path.join(root, "etc", "passwd"), "a") as f:
        f.write("%s:x:%d:%d::%s:/bin/sh\n" % (name, uid, uid, home))
    with open(os.path.join(root, "etc", "group"), "a") as f:
        f.write("%s:x:%d:\n" % (name, uid))


def argocd_root(path, bins, moddir):
    """upstream's Dockerfile, argocd-base and the final stage, on Debian."""
    images.copy_tree(debian_rootfs(ARGOCD_PACKAGES), path)
    add_user(path, "argocd", ARGOCD_UID, "/home/argocd")
    home = os.path.join(path, "home", "argocd")
    os.makedirs(home)
    os.chown(home, ARGOCD_UID, 0)
    os.chmod(home, 0o775)  # chown argocd:0, chmod g=u
    local = os.path.join(path, "usr", "local", "bin")
    os.makedirs(local, exist_ok=True)
    for name, src in (("argocd", bins["argocd"]), ("kustomize", bins["kustomize"]),
                      ("gpg-wrapper.sh", os.path.join(moddir, "hack", "gpg-wrapper.sh")),
                      ("git-verify-wrapper.sh",
                       os.path.join(moddir, "hack", "git-verify-wrapper.sh")),
                      ("entrypoint.sh", os.path.join(moddir, "entrypoint.sh"))):
        shutil.copyfile(src, os.path.join(local, name))
        os.chmod(os.path.join(local, name), 0o755)
    os.symlink("/usr/local/bin/entrypoint.sh", os.path.join(local, "uid_entrypoint.sh"))
    for link in ARGOCD_LINKS:
        os.symlink("/usr/local/bin/argocd", os.path.join(local, link))
    cfg = os.path.join(path, "app", "config")
    for d in ("ssh", "tls", "gpg/source", "gpg/keys"):
        os.makedirs(os.path.join(cfg, d), exist_ok=True)
    open(os.path.join(cfg, "ssh", "ssh_known_hosts"), "w").close()
    os.makedirs(os.path.join(path, "etc", "ssh"), exist_ok=True)
    os.symlink("/app/config/ssh/ssh_known_hosts",
               os.path.join(path, "etc", "ssh", "ssh_known_hosts"))
    os.chown(os.path.join(cfg, "gpg", "keys"), ARGOCD_UID, 0)
    os.chmod(os.path.join(cfg, "gpg", "keys"), 0o700)


def redis_root(path):
    images.copy_tree(debian_rootfs(REDIS_PACKAGES), path)
    os.makedirs(os.path.join(path, "data"), exist_ok=True)


def build_images(imp):
    """Builds and imports (and pushes) the argocd and redis images under install.yaml's
    names; {"argocd": digest, "redis": digest, "names": {...}}."""
    names = manifest_images()
    bins = peers()
    moddir = module_dir()
    tmp = tempfile.mkdtemp(prefix="argocd-rootfs-", dir=images.WORK)
    try:
        root = os.path.join(tmp, "argocd")
        os.makedirs(root)
        argocd_root(root, bins, moddir)
        out = {"names": names}
        out["argocd"] = imp.image(names["argocd"], root, entrypoint=["/usr/bin/tini", "--"],
                                  user=str(ARGOCD_UID), workdir="/home/argocd",
                                  env=[("USER", "argocd"),
                                       ("GRPC_ENABLE_TXT_SERVICE_CONFIG", "false")])
        shutil.rmtree(root)
        root = os.path.join(tmp, "redis")
        os.makedirs(root)
        redis_root(root)
        out["redis"] = imp.image(names["redis"], root, entrypoint=["/usr/bin/redis-server"],
                                 workdir="/data")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# ---- the install ---------------------------------------------------------------------------

def install(kubectl):
    """install.yaml into `argocd` (which must exist), as Argo CD's docs apply it; then what a
    render does not need scaled to zero."""
    path = install_yaml()
    log("applying %s (Argo CD %s)" % (os.path.relpath(path, module_dir()), version()))
    kubectl("apply", "-n", NAMESPACE, "--server-side", "--force-conflicts", "-f", path,
            timeout=300)
    kubectl("-n", NAMESPACE, "scale", "--replicas=0", *UNNEEDED)
    kubectl("wait", "--for=condition=Established", "--timeout=60s",
            "crd/applications.argoproj.io")


def wait_ready(kubectl):
    for d in ("deployment/argocd-redis", "deployment/argocd-server"):
        kubectl("-n", NAMESPACE, "rollout", "status", d, "--timeout=180s", timeout=200)
    kubectl("-n", NAMESPACE, "rollout", "status", "statefulset/argocd-application-controller",
            "--timeout=180s", timeout=200)


# ---- the git server ------------------------------------------------------------------------

def git(args, cwd, **kw):
    env = dict(os.environ, GIT_AUTHOR_NAME="krmpod tests", GIT_AUTHOR_EMAIL="tests@krmpod.dev",
               GIT_COMMITTER_NAME="krmpod tests", GIT_COMMITTER_EMAIL="tests@krmpod.dev",
               GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_DATE="2026-01-01T00:00:00Z",
               HOME=cwd)
    return images.run(["git"] + list(args), cwd=cwd, env=env, **kw)


def make_bundle(tree, work):
    """Commits the directory `tree` (as it is: modes, symlinks) on branch main of a new
    repository in work; (bundle path, commit)."""
    repo = os.path.join(work, "repo")
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(tree, repo, symlinks=True)
    git(["init", "-q", "-b", "main"], repo)
    git(["add", "-A"], repo)
    git(["commit", "-q", "-m", "test apps"], repo)
    commit = git(["rev-parse", "HEAD"], repo).strip()
    bundle = os.path.join(work, "repo.bundle")
    git(["bundle", "create", "-q", bundle, "main"], repo)
    return bundle, commit


def serve_repo(kubectl, tree, argocd_image, work):
    """Serves `tree` at GIT_URL (branch main), as e2e/serve-repo.sh does; the commit."""
    bundle, commit = make_bundle(tree, work)
    ns = kubectl("create", "namespace", GIT_NAMESPACE, "--dry-run=client", "-o", "yaml").stdout
    kubectl("apply", "-f", "-", stdin=ns)
    cm = kubectl("-n", GIT_NAMESPACE, "create", "configmap", "krmpod-e2e-repo",
                 "--from-file=repo.bundle=" + bundle, "--dry-run=client", "-o", "yaml").stdout
    kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=cm)
    with open(GIT_SERVER) as f:
        text = f.read()
    # the two lines e2e/serve-repo.sh sets
    text, n1 = re.subn(r"(?m)^( *)image: .*# e2e-image:.*$", r"\g<1>image: " + argocd_image, text)
    text, n2 = re.subn(r"(?m)^( *)krmpod-e2e/commit: .*# e2e-commit:.*$",
                       r'\g<1>krmpod-e2e/commit: "%s"' % commit, text)
    if n1 != 1 or n2 != 1:
        raise RuntimeError("e2e/git-server.yaml lost its e2e-image or e2e-commit marker")
    kubectl("apply", "-f", "-", stdin=text.encode())
    kubectl("-n", GIT_NAMESPACE, "rollout", "status", "deployment/" + GIT_SERVICE,
            "--timeout=180s", timeout=200)
    wait_service_routes(kubectl, GIT_NAMESPACE, GIT_SERVICE, 9418)
    return commit


def wait_service_routes(kubectl, ns, name, port, timeout=60):
    """Until a TCP connection to the Service's ClusterIP succeeds from this machine: a pod
    Ready is not yet a route (kube-proxy programs the endpoint a moment later, and until
    then a client gets `no route to host`: seen as the repo-server's first `git ls-remote`
    failing, which Argo CD then does not retry for minutes)."""
    import socket
    ip = kubectl("-n", ns, "get", "service", name, "-o",
                 "jsonpath={.spec.clusterIP}").stdout.decode().strip()
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((ip, port), timeout=2).close()
            return
        except OSError as e:
            if time.monotonic() > deadline:
                raise RuntimeError("service %s/%s (%s:%d) took no connection within %d s: %s"
                                   % (ns, name, ip, port, timeout, e))
            time.sleep(0.2)
