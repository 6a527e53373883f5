"""What the soak (tests/soak/soak.py) and the load test (tests/load/load.py) share: a kubesim
with the fixture images and the mounts helper, `krmpod generate` run as Argo CD's CMP server
runs it (in-cluster credentials, ARGOCD_* variables, its own session), the reference render
with tests/fixtures/direct-docker, and what /proc says about a run's processes."""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "kubesim"))
from kubesim_lib import testing  # noqa: E402

IMAGES = os.path.join(ROOT, "tests", "fixtures", "images")
DIRECT_DOCKER = os.path.join(ROOT, "tests", "fixtures", "direct-docker")
HELPER = os.path.join(ROOT, "tests", "fixtures", "krmpod-helper")
# KRMPOD_HELPER_IMAGE: kubesim runs its `krmpod unpack` as tests/fixtures/krmpod-helper
# around the binary under test (as tests/integration/conftest.py sets it up).
HELPER_IMAGE = "example.com/krmpod/krmpod:test"

# What Argo CD's CMP server sets for generate (as tests/integration/test_generate.py), and
# things that must never reach a function.
ARGOCD_ENV = {
    "ARGOCD_APP_NAME": "soak",
    "ARGOCD_APP_NAMESPACE": "argocd",
    "ARGOCD_APP_REVISION": "0123456789abcdef",
    "ARGOCD_APP_SOURCE_PATH": "apps/soak",
    "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/apps.git",
    "ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
    "ARGOCD_APP_PROJECT_NAME": "default",
    "KUBE_VERSION": "1.34",
    "KUBE_API_VERSIONS": "v1,apps/v1",
    "GIT_PASSWORD": "hunter2",
}


def start_kubesim(state, krmpod_bin, relist_period_ms=20, pull_backoff_ms=1000):
    """A kubesim in `state` serving the fixture images and the mounts helper (the binary
    under test). 20 ms relists: the order of a real kubelet's events, without its waits."""
    helper_dir = os.path.join(state, "helper-images")
    os.makedirs(helper_dir, exist_ok=True)
    path = os.path.join(helper_dir, "krmpod")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec /usr/bin/python3 %s %s \"$@\"\n" % (HELPER, krmpod_bin))
    os.chmod(path, 0o755)
    return testing.Kubesim(state, IMAGES + ":" + helper_dir, relist_period_ms=relist_period_ms,
                           pull_backoff_ms=pull_backoff_ms)


def service_account_dir(sim, path):
    """In-cluster credentials as the sidecar has them (token, ca.crt, namespace)."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "token"), "w") as f:
        f.write(sim.token + "\n")
    with open(os.path.join(sim.state, "ca.crt")) as src, \
            open(os.path.join(path, "ca.crt"), "w") as dst:
        dst.write(src.read())
    with open(os.path.join(path, "namespace"), "w") as f:
        f.write("default")
    return path


def cmp_env(sim, sa_dir, tmpdir, krmpod_bin, **extra):
    """generate's environment under Argo CD: in-cluster credentials, the ARGOCD_* variables,
    real kustomize (`kubectl kustomize`), a private TMPDIR; for the ASan build, sanitizer
    reports exit 99."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "KUBERNETES_SERVICE_HOST": sim.host,
        "KUBERNETES_SERVICE_PORT": str(sim.port),
        "KRMPOD_SERVICEACCOUNT_DIR": sa_dir,
        "KRMPOD_KUSTOMIZE": "kubectl kustomize",
        "KRMPOD_LOG_LEVEL": "info",
        "TMPDIR": tmpdir,
    }
    env.update(ARGOCD_ENV)
    if "/asan/" in krmpod_bin:
        env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0:exitcode=99"
        env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:exitcode=99"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def sanitizer_report(text):
    """The first line of an ASan/UBSan/LSan report in text, or None."""
    for line in text.splitlines():
        if ("ERROR: AddressSanitizer" in line or "ERROR: LeakSanitizer" in line or
                "runtime error:" in line):
            return line
    return None


def direct_render(app, scratch):
    """The reference: the same kustomization built by kustomize with a `docker` that runs the
    fixture programs directly (no pod). Returns the CompletedProcess (bytes)."""
    bindir = os.path.join(scratch, "direct-bin")
    os.makedirs(bindir, exist_ok=True)
    link = os.path.join(bindir, "docker")
    if not os.path.exists(link):
        os.symlink(DIRECT_DOCKER, link)
    env = {"PATH": bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": os.environ.get("HOME", "/root"), "KRMPOD_TEST_IMAGES": IMAGES,
           "KRMPOD_TEST_TMP": scratch}
    return subprocess.run(["kubectl", "kustomize", "--enable-alpha-plugins", app], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)


# --- /proc --------------------------------------------------------------------------------

def proc_stat(pid):
    """(ppid, state, pgrp, session) of pid, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            text = f.read()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), fields[0], int(fields[2]), int(fields[3])


def proc_argv0(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return os.path.basename(f.read().split(b"\0")[0]).decode(errors="replace")
    except OSError:
        return ""


def all_procs():
    """{pid: (ppid, state, pgrp, session)} of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = proc_stat(int(d))
            if st:
                out[int(d)] = st
    return out


def session_procs(sid, procs=None):
    """{pid: (ppid, state, argv0)} of the processes of session sid (generate's own session,
    as the CMP server starts it)."""
    procs = all_procs() if procs is None else procs
    return {pid: (st[0], st[1], proc_argv0(pid)) for pid, st in procs.items() if st[3] == sid}


def shims(sess):
    """The shims among a session's processes ({pid: (ppid, state, argv0)}): argv[0] docker,
    not a zombie, and not the child of another docker process (LeakSanitizer's tracer, which
    the ASan build forks at exit, carries its parent's argv)."""
    docker = {pid for pid, (_, _, a0) in sess.items() if a0 == "docker"}
    return sorted(pid for pid in docker if sess[pid][1] != "Z" and sess[pid][0] not in docker)


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def zombie_children(pid):
    """The children of pid in state Z."""
    return [p for p, st in all_procs().items() if st[0] == pid and st[1] == "Z"]


def percentile(values, p):
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]
