"""Driving the installed krmpod sidecar as Argo CD's CMP server drives it, and the host-side
reference build the pipeline output is compared with."""
import io
import os
import subprocess
import tarfile
import uuid

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURE_IMAGES = os.path.join(ROOT, "tests", "fixtures", "images")
DIRECT_DOCKER = os.path.join(ROOT, "tests", "fixtures", "direct-docker")
CMP_SERVER = "/var/run/argocd/argocd-cmp-server"  # manifests/: the sidecar's command

# What Argo CD's CMP server sets for generate (docs: the plugin environment), plus a user env
# entry and git credentials that no function may see unless its config names them.
ARGOCD_ENV = {
    "ARGOCD_APP_NAME": "demo",
    "ARGOCD_APP_NAMESPACE": "argocd",
    "ARGOCD_APP_REVISION": "0123456789abcdef0123456789abcdef01234567",
    "ARGOCD_APP_SOURCE_PATH": "apps/demo",
    "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/apps.git",
    "ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
    "ARGOCD_APP_PROJECT_NAME": "default",
    "KUBE_VERSION": "1.34",
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

    def __init__(self, namespace, pod, container="krmpod"):
        self.namespace, self.pod, self.container = namespace, pod, container

    def exec_argv(self, args, stdin=False):
        return (["kubectl", "-n", self.namespace, "exec"] + (["-i"] if stdin else []) +
                [self.pod, "-c", self.container, "--"] + list(args))

    def exec(self, args, stdin=None, timeout=120):
        """Runs args in the container (no shell unless args is one); CompletedProcess."""
        return subprocess.run(self.exec_argv(args, stdin is not None), input=stdin,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)

    def sh(self, script, *args, stdin=None, timeout=120):
        return self.exec(["sh", "-c", script, "sh"] + list(args), stdin=stdin, timeout=timeout)

    def render_argv(self, env, timeout_ms, hook):
        """The exec that unpacks an app (a tar on stdin) where the CMP server would, runs the
        hook's command there through the CMP server stand-in (its own process group, the
        deadline kill), and removes the app again. The exit status is the hook's."""
        repo = "/tmp/_cmp_server/" + uuid.uuid4().hex
        app = repo + "/" + env["ARGOCD_APP_SOURCE_PATH"]
        script = ('set -e; repo=$1; app=$2; shift 2; mkdir -p "$app"; tar -x -C "$app"; '
                  'set +e; "$@" </dev/null; rc=$?; rm -rf "$repo"; exit $rc')
        run = [CMP_SERVER, "run", "--timeout-ms", str(timeout_ms), "--chdir", app]
        for k, v in sorted(env.items()):
            run += ["--env", "%s=%s" % (k, v)]
        return self.exec_argv(["sh", "-c", script, "sh", repo, app] + run + ["--"] +
                              plugin_command(hook), stdin=True)

    def render(self, app, env=None, timeout_ms=60000, hook="generate", timeout=180):
        """Runs a plugin hook (generate by default) on the host directory `app`, as Argo CD
        would: CompletedProcess with the hook's exit code, stdout and stderr."""
        full = dict(ARGOCD_ENV, **(env or {}))
        return subprocess.run(self.render_argv(full, timeout_ms, hook), input=tar_of(app),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)

    def start_render(self, app, env=None, timeout_ms=60000, hook="generate"):
        """The same, in the background: a Popen whose stdin has been written and closed."""
        full = dict(ARGOCD_ENV, **(env or {}))
        proc = subprocess.Popen(self.render_argv(full, timeout_ms, hook), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdin.write(tar_of(app))
        proc.stdin.close()
        return proc


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
