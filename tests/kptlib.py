"""What the kpt tests share, on kubesim (tests/integration/test_kpt.py) and on the real
cluster (tests/realkube/test_kpt.py): hermetic kpt runs, a package's files, and the
byte-for-byte comparison of a run through krmpod with the reference run."""
import os
import re
import subprocess

KPT = "/usr/bin/kpt"
# --as-current-user: kpt runs as this uid:gid (not nobody's, so the flag shows).
USER_ID, GROUP_ID = 4242, 4343

# kpt's "[PASS] "IMAGE" in 120ms": the only part of its output that follows the clock.
TIMING = re.compile(rb'^(\[(?:PASS|FAIL)\] "[^"\n]*") in \S+$', re.M)

KPTFILE = """apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
    - image: set-labels:v0.1
      configMap:
        app: demo
    - image: example.com/fns/add-label:v1
"""
RESOURCES = """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: blue
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels:
      run: web
  template:
    metadata:
      labels:
        run: web
    spec:
      containers:
        - name: web
          image: nginx
"""


def hermetic_env(root, bin_dir):
    home = os.path.join(root, "home")
    tmp = os.path.join(root, "tmp")
    for d in (home, tmp):
        os.makedirs(d, exist_ok=True)
    # kpt (Go) reads HTTP_PROXY/HTTPS_PROXY and NO_PROXY. Not the lowercase http_proxy:
    # libwebsockets takes that one for krmpod's attach and ignores NO_PROXY.
    nowhere = "http://127.0.0.1:9"
    return {"PATH": bin_dir + ":/usr/bin:/bin", "HOME": home,
            "XDG_CACHE_HOME": os.path.join(home, ".cache"),
            "XDG_CONFIG_HOME": os.path.join(home, ".config"), "TMPDIR": tmp,
            "HTTPS_PROXY": nowhere, "HTTP_PROXY": nowhere, "NO_PROXY": "127.0.0.1,localhost",
            "KPT_FN_RUNTIME": "docker"}


def docker_dir(root, target):
    d = os.path.join(root, "bin")
    os.makedirs(d, exist_ok=True)
    os.symlink(target, os.path.join(d, "docker"))
    return d


def kpt(args, cwd, env, as_user=False):
    argv = [KPT] + list(args)
    if as_user:
        argv = ["setpriv", "--reuid=%d" % USER_ID, "--regid=%d" % GROUP_ID,
                "--clear-groups"] + argv
        # kpt's user.Current() needs $USER for an id without a passwd entry
        env = dict(env, USER="kpt-user")
    return subprocess.run(argv, cwd=str(cwd), env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)


def tree(d):
    """Every file under d: relative path -> bytes."""
    out = {}
    for base, _, files in os.walk(str(d)):
        for n in files:
            p = os.path.join(base, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, str(d))] = f.read()
    return out


def assert_same(case, via_pods, direct):
    """kpt's runs through krmpod and directly agree byte for byte (timings masked)."""
    for what in ("returncode", "stdout", "stderr"):
        got, want = getattr(via_pods, what), getattr(direct, what)
        if what == "stderr":
            got, want = TIMING.sub(rb"\1 in <time>", got), TIMING.sub(rb"\1 in <time>", want)
        assert got == want, ("%s: kpt's %s differs\n--- through krmpod:\n%s\n--- direct:\n%s"
                             % (case, what, got, want))


def chown_tree(d):
    for base, dirs, files in os.walk(d):
        for n in [base] + [os.path.join(base, x) for x in dirs + files]:
            os.lchown(n, USER_ID, GROUP_ID)


