"""Driving the installed krmpod sidecar as Argo CD's CMP server drives it, and the host-side
reference build the pipeline output is compared with."""
import hashlib
import io
import os
import re
import subprocess
import tarfile
import uuid

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURE_IMAGES = os.path.join(ROOT, "tests", "fixtures", "images")
DIRECT_DOCKER = os.path.join(ROOT, "tests", "fixtures", "direct-docker")
HOOK_RUNNER_BIN = os.environ.get("KRMPOD_HOOK_RUNNER_BIN",
                                 os.path.join(ROOT, "build", "realkube", "cmp-hook-run"))
HOOK_RUNNER = "/tmp/.krmpod-tier/cmp-hook-run"  # copied into the sidecar (tests/realkube/cmp-hook-run.c)
# The runner's last word with --stdout-copy: what the hook wrote on stdout.
RUNNER_STDOUT = re.compile(rb"cmp-hook-run \(krmpod test runner\): stdout: (\d+) bytes, "
                           rb"fnv1a64 ([0-9a-f]{16})\n")

# What Argo CD's CMP server sets for generate (docs: the plugin environment), plus a user env
# entry and git credentials that no function may see unless its config names them.
ARGOCD_ENV = {
    "ARGOCD_APP_NAME": "demo",
    "ARGOCD_APP_NAMESPACE": "prod",  # the destination namespace, not Argo CD's
    "ARGOCD_APP_REVISION": "0123456789abcdef0123456789abcdef01234567",
    "ARGOCD_APP_SOURCE_PATH": "apps/demo",
    "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/apps.git",
    "ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
    "ARGOCD_APP_PROJECT_NAME": "default",
    "KUBE_VERSION": "1.34.12",  # MAJOR.MINOR.PATCH, no "v" (Argo CD >= 3.4)
    "ARGOCD_APP_PARAMETERS": "null",  # always set with a plugin stanza
    "KUBE_API_VERSIONS": "v1,apps/v1",
    "ARGOCD_ENV_APP_COLOR": "green",
    "GIT_USERNAME": "robot",
    "GIT_PASSWORD": "hunter2",
}


def plugin_command(hook):
    """The command plugin.yaml gives a hook (the image carries this very file)."""
    with open(os.path.join(ROOT, "plugin.yaml")) as f:
        spec = yaml.safe_load(f)["spec"]
    return spec["discover"]["find"]["command"] if hook == "discover" else spec[hook]["command"]


def tar_of(directory):
    """The directory's contents as an uncompressed tar (modes and symlinks kept)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(os.listdir(directory)):
            tar.add(os.path.join(directory, name), arcname=name)
    return buf.getvalue()


class Sidecar:
    """The `krmpod` container of the running repo-server pod."""

    def __init__(self, namespace, pod, container="krmpod", files=None):
        self.namespace, self.pod, self.container = namespace, pod, container
        self.runner_copied = False
        # {path: bytes} the session's fixtures put into the container (a registry's CA...):
        # copied again into a new pod of the repo-server (Sidecar(..., files=old.files))
        self.files = dict(files or {})

    def exec_argv(self, args, stdin=False):
        return (["kubectl", "-n", self.namespace, "exec"] + (["-i"] if stdin else []) +
                [self.pod, "-c", self.container, "--"] + list(args))

    def exec(self, args, stdin=None, timeout=120):
        """Runs args in the container (no shell unless args is one); CompletedProcess."""
        return subprocess.run(self.exec_argv(args, stdin is not None), input=stdin,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)

    def sh(self, script, *args, stdin=None, timeout=120):
        return self.exec(["sh", "-c", script, "sh"] + list(args), stdin=stdin, timeout=timeout)

    def put(self, data, path, tries=3):
        """Writes data (bytes or a file object) to path in the container, checked by its
        SHA-256: `kubectl exec -i` sometimes delivers no stdin at all (kubernetes/kubernetes
        #112834), so a transfer that arrived short is sent again."""
        if isinstance(data, bytes):
            digest = hashlib.sha256(data).hexdigest()
        else:
            h = hashlib.sha256()
            for chunk in iter(lambda: data.read(1 << 20), b""):
                h.update(chunk)
            digest = h.hexdigest()
        script = ('mkdir -p "$(dirname "$1")" && cat > "$1.part" && '
                  '[ "$(sha256sum < "$1.part" | cut -d" " -f1)" = "$2" ] && mv "$1.part" "$1"')
        for _ in range(tries):
            if not isinstance(data, bytes):
                data.seek(0)
            argv = self.exec_argv(["sh", "-c", script, "sh", path, digest], stdin=True)
            io_args = {"input": data} if isinstance(data, bytes) else {"stdin": data}
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=300, **io_args)
            if r.returncode == 0:
                return
        raise AssertionError("could not copy %s into the sidecar in %d tries: %s"
                             % (path, tries, r.stderr.decode(errors="replace")))

    def upload_app(self, app, env):
        """Unpacks the host directory app where the CMP server would (its repository copy
        under /tmp, the app at ARGOCD_APP_SOURCE_PATH in it): (repo dir, app dir)."""
        repo = "/tmp/_cmp_server/" + uuid.uuid4().hex
        path = repo + "/" + env["ARGOCD_APP_SOURCE_PATH"]
        self.put(tar_of(app), repo + "/.app.tar")
        r = self.sh('set -e; mkdir -p "$2"; tar -x -C "$2" -f "$1/.app.tar"; rm "$1/.app.tar"',
                    repo, path)
        assert r.returncode == 0, "unpacking the app failed: %s" % r.stderr.decode()
        return repo, path

    def add_file(self, path, data):
        """Puts data at path now, and again into a new pod that takes this one's files."""
        self.files[path] = data
        self.put(data, path)

    def copy_runner(self):
        """Copies cmp-hook-run (and the session's files) into the sidecar's /tmp once: a new
        pod needs them again."""
        if self.runner_copied:
            return
        for path, data in sorted(self.files.items()):
            self.put(data, path)
        with open(HOOK_RUNNER_BIN, "rb") as f:
            self.put(f.read(), HOOK_RUNNER)
        r = self.sh('chmod 755 "$1"', HOOK_RUNNER)
        assert r.returncode == 0, "chmod of %s failed: %s" % (HOOK_RUNNER, r.stderr.decode())
        self.runner_copied = True

    def run_argv(self, repo, app, env, timeout_ms, hook, stdout_copy=None):
        """Runs the hook's command (plugin.yaml) in app through cmp-hook-run (its own process
        group, Argo CD's deadline kill), then removes the repository copy; the exit status is
        the hook's. With stdout_copy, the runner keeps a copy of the hook's stdout there and
        says its length and checksum (verified_stdout)."""
        self.copy_runner()
        run = [HOOK_RUNNER, "--timeout-ms", str(timeout_ms), "--chdir", app]
        if stdout_copy:
            run += ["--stdout-copy", stdout_copy]
        for k, v in sorted(env.items()):
            run += ["--env", "%s=%s" % (k, v)]
        script = '"$@" </dev/null; rc=$?; rm -rf "$0"; exit $rc'
        return self.exec_argv(["sh", "-c", script, repo] + run + ["--"] + plugin_command(hook))

    def render(self, app, env=None, timeout_ms=60000, hook="generate", timeout=180):
        """Runs a plugin hook (generate by default) on the host directory `app`, as Argo CD
        would: CompletedProcess with the hook's exit code, stdout and stderr. The stdout is
        what the hook wrote, checked against the runner's count and checksum: this
        cluster's kubelet now and then ends a `kubectl exec` stream early with a clean exit
        (the cut krmpod's own checks exist for), so a test must not take the transport's
        loss for the plugin's. A stdout that arrived short is read again from the runner's
        copy; the runner's line is taken out of stderr."""
        full = dict(ARGOCD_ENV, **(env or {}))
        repo, path = self.upload_app(app, full)
        copy = "%s/stdout.%s" % (os.path.dirname(HOOK_RUNNER), uuid.uuid4().hex)
        r = subprocess.run(self.run_argv(repo, path, full, timeout_ms, hook, copy),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        r.stdout, r.stderr = self.verified_stdout(r.stdout, r.stderr, copy)
        return r

    def verified_stdout(self, stdout, stderr, copy, tries=3):
        """(stdout, stderr) with stdout as the runner counted it (re-read from its copy when
        the exec stream lost bytes) and the runner's line gone from stderr."""
        m = RUNNER_STDOUT.search(stderr)
        if m is None:
            raise AssertionError("cmp-hook-run did not say what the hook wrote on stdout: %s"
                                 % stderr[-2000:].decode(errors="replace"))
        want = (int(m.group(1)), m.group(2).decode())
        stderr = stderr[:m.start()] + stderr[m.end():]
        got = stdout
        for _ in range(tries):
            if (len(got), fnv1a64(got)) == want:
                if got is not stdout:
                    stderr += (b"sidecar.py: stdout re-read from the runner's copy: the exec "
                               b"stream delivered %d of %d bytes\n" % (len(stdout), want[0]))
                self.sh('rm -f "$1"', copy)
                return got, stderr
            got = self.sh('cat "$1"', copy, timeout=120).stdout
        raise AssertionError("the hook wrote %d bytes on stdout (fnv1a64 %s); %d arrived, and "
                             "its copy could not be read back whole in %d tries"
                             % (want[0], want[1], len(stdout), tries))

    def start_render(self, app, env=None, timeout_ms=60000, hook="generate"):
        """The same, in the background: a Popen (stdout and stderr pipes)."""
        full = dict(ARGOCD_ENV, **(env or {}))
        repo, path = self.upload_app(app, full)
        return subprocess.Popen(self.run_argv(repo, path, full, timeout_ms, hook),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def fnv1a64(data):
    """FNV-1a, 64 bits, as cmp-hook-run computes it."""
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def direct_build(app, tmp_path, flags=(), **env):
    """`kustomize build` of app on this machine with tests/fixtures/direct-docker as `docker`:
    every function runs here, directly, with what its docker run line gives it."""
    d = os.path.join(str(tmp_path), "direct-bin")
    os.makedirs(d, exist_ok=True)
    if not os.path.exists(os.path.join(d, "docker")):
        os.symlink(DIRECT_DOCKER, os.path.join(d, "docker"))
    full = {"PATH": d + ":" + os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
            "KRMPOD_TEST_IMAGES": FIXTURE_IMAGES, "KRMPOD_TEST_TMP": str(tmp_path)}
    full.update(env)
    return subprocess.run(["kubectl", "kustomize", "--enable-alpha-plugins"] + list(flags) +
                          [str(app)],
                          env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
