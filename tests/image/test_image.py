"""The CMP sidecar image (`make image-local`): size, layout, plugin.yaml, user, and the image's
own `krmpod generate` rendering a kustomization with containerized functions against kubesim,
run as Argo CD runs the sidecar (uid 999, read-only root, /tmp an emptyDir)."""
import os
import subprocess
import uuid

import yaml

from conftest import (BASE_IMAGE, HERE, IMAGE, IMAGES, KUSTOMIZE_PATH, PLUGIN_PATH, ROOT, SA_DIR,
                      docker, world_readable_copy)

MB = 1000 * 1000
APP = os.path.join(HERE, "app")
PLAIN = os.path.join(HERE, "plain")
# Where the CMP server would have unpacked the repo (it works under its /tmp emptyDir).
APP_IN = "/tmp/_cmp_server/repo/apps/demo"


def env_of(image):
    return dict(e.split("=", 1) for e in image["Config"].get("Env") or [])


def plugin_spec(layout):
    return yaml.safe_load(layout.contents[PLUGIN_PATH])


# ---- static checks --------------------------------------------------------------------------

def test_size_at_most_base_plus_5mb(image, base_image):
    added = image["Size"] - base_image["Size"]
    print("image %s: %d bytes; %s: %d bytes; added %d bytes" %
          (IMAGE, image["Size"], BASE_IMAGE, base_image["Size"], added))
    assert added <= 5 * MB, "the image adds %.2f MB to %s (limit 5 MB)" % (added / MB, BASE_IMAGE)


def test_config_user_env_entrypoint(image):
    cfg = image["Config"]
    assert cfg["User"] == "999"
    env = env_of(image)
    assert env["KRMPOD_SHIM_DIR"] == "/usr/local/libexec/krmpod"
    assert env["KRMPOD_KUSTOMIZE"] == KUSTOMIZE_PATH
    assert cfg["Entrypoint"] == ["/usr/local/bin/krmpod"]


def test_final_stage_runs_no_command(image, base_image):
    """The final stage only copies files and sets config (no RUN), so it builds on any
    kustomize image, shell-less ones included."""
    history = docker("history", "--no-trunc", "--format", "{{.CreatedBy}}", IMAGE).stdout.decode()
    base = docker("history", "--no-trunc", "--format", "{{.CreatedBy}}", BASE_IMAGE).stdout.decode()
    added = history.splitlines()[:len(history.splitlines()) - len(base.splitlines())]
    assert added, "the image has no layers over %s" % BASE_IMAGE
    for step in added:
        assert "#(nop)" in step or step.startswith(("COPY", "ENV", "USER", "LABEL", "ENTRYPOINT",
                                                      "CMD", "ARG", "WORKDIR")), step


def test_plugin_yaml_in_image(layout):
    ti = layout.get(PLUGIN_PATH)
    assert ti is not None and ti.isfile(), "no %s in the image" % PLUGIN_PATH
    assert layout.others_can(PLUGIN_PATH, 0o4), "uid 999 cannot read %s" % PLUGIN_PATH
    with open(os.path.join(ROOT, "plugin.yaml"), "rb") as f:
        assert layout.contents[PLUGIN_PATH] == f.read(), "the image's plugin.yaml is not the repo's"
    p = plugin_spec(layout)
    assert p["apiVersion"] == "argoproj.io/v1alpha1"
    assert p["kind"] == "ConfigManagementPlugin"
    assert p["metadata"]["name"] == "krmpod"
    spec = p["spec"]
    assert spec["version"]
    assert spec["preserveFileMode"] is False
    assert spec["provideGitCreds"] is False
    commands = {
        "init": spec["init"]["command"],
        "generate": spec["generate"]["command"],
        "discover": spec["discover"]["find"]["command"],
    }
    for role, cmd in commands.items():
        assert cmd == ["/usr/local/bin/krmpod", role], (role, cmd)
        assert os.path.isabs(cmd[0])
        final, exe = layout.resolve(cmd[0])
        assert exe.isfile(), "%s: %s is not a file in the image" % (role, cmd[0])
        assert layout.others_can(cmd[0], 0o1), "%s: uid 999 cannot execute %s" % (role, cmd[0])


def test_layout(layout, image):
    env = env_of(image)
    krmpod = layout.get("/usr/local/bin/krmpod")
    assert krmpod is not None and krmpod.isfile()
    assert krmpod.size < 4 * 1024 * 1024
    assert krmpod.uid == 0, "krmpod must not be writable by the sidecar's user"
    assert not krmpod.mode & 0o022
    # the private bin dir holds exactly `docker` -> krmpod
    shim_dir = env["KRMPOD_SHIM_DIR"]
    d = layout.get(shim_dir)
    assert d is not None and d.isdir()
    entries = sorted(n for n in layout.members if os.path.dirname(n) == shim_dir)
    assert entries == [shim_dir + "/docker"], entries
    link = layout.get(shim_dir + "/docker")
    assert link.issym() and link.linkname == "/usr/local/bin/krmpod"
    assert layout.resolve(shim_dir + "/docker")[0] == "/usr/local/bin/krmpod"
    assert layout.others_can(shim_dir + "/docker", 0o1)
    # the kustomize that generate runs
    final, kz = layout.resolve(env["KRMPOD_KUSTOMIZE"])
    assert kz.isfile() and layout.others_can(env["KRMPOD_KUSTOMIZE"], 0o1), final
    # the CA bundle krmpod falls back to (kubeconfig.c: kube_config_ca, for REST and streams alike)
    ca = "/etc/ssl/certs/ca-certificates.crt"
    final, ti = layout.resolve(ca)
    assert ti.isfile() and ti.size > 10000 and layout.others_can(ca, 0o4)


def test_version_as_argo_runs_it():
    r = docker("run", "--rm", "--network", "none", "--read-only", "--user", "999",
               "--cap-drop", "ALL", "--security-opt", "no-new-privileges", IMAGE, "version")
    out = r.stdout.decode()
    assert "krmpod" in out, out


def test_docker_name_dispatches_to_the_shim():
    """kpt calls `docker version` first: the private symlink must reach the shim role."""
    r = docker("run", "--rm", "--network", "none", "--read-only", "--user", "999",
               "--entrypoint", "/usr/local/libexec/krmpod/docker", IMAGE, "version", check=False)
    assert r.returncode == 0, r.stderr.decode()


# ---- against kubesim ------------------------------------------------------------------------

def sidecar(kubesim, sa, app, command, extra_env=None, timeout=180):
    """Runs `command` (a plugin.yaml command) in the image the way the Argo CD sidecar runs it:
    uid 999, read-only root fs, /tmp a tmpfs, in-cluster credentials mounted, the app as cwd,
    the ARGOCD_* environment of a generate request. Host network: kubesim is on 127.0.0.1."""
    name = "krmpod-image-test-" + uuid.uuid4().hex[:10]
    env = {
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(kubesim.port),
        "ARGOCD_APP_NAME": "demo",
        "ARGOCD_APP_NAMESPACE": "argocd",
        "ARGOCD_APP_REVISION": "0123456789abcdef0123456789abcdef01234567",
        "ARGOCD_APP_SOURCE_PATH": "apps/demo",
        "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/demo.git",
        "ARGOCD_APP_SOURCE_TARGET_REVISION": "HEAD",
        "ARGOCD_APP_PROJECT_NAME": "default",
        "KUBE_VERSION": "1.30.0",
        "KUBE_API_VERSIONS": "v1,apps/v1",
        "KRMPOD_LOG_LEVEL": "info",
    }
    env.update(extra_env or {})
    args = ["run", "--rm", "--name", name, "--network", "host", "--read-only",
            "--tmpfs", "/tmp:rw,nosuid,nodev,mode=1777", "--user", "999",
            "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
            "-v", "%s:%s:ro" % (sa, SA_DIR), "-v", "%s:%s:ro" % (app, APP_IN), "-w", APP_IN]
    for k, v in sorted(env.items()):
        args += ["-e", "%s=%s" % (k, v)]
    args += ["--entrypoint", command[0], IMAGE] + list(command[1:])
    try:
        return subprocess.run(["docker"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout)
    finally:
        docker("rm", "-f", name, check=False)


def reference_render(app, env):
    """The same kustomization rendered on the host with the functions run directly (no pods,
    no image): kubectl kustomize with tests/fixtures/direct-docker as `docker`."""
    bindir = os.path.join(os.path.dirname(app), "direct-bin")
    os.makedirs(bindir, exist_ok=True)
    link = os.path.join(bindir, "docker")
    if not os.path.exists(link):
        os.symlink(os.path.join(ROOT, "tests", "fixtures", "direct-docker"), link)
    full = {"PATH": bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/root"), "KRMPOD_TEST_IMAGES": IMAGES}
    full.update(env)
    r = subprocess.run(["kubectl", "kustomize", "--enable-alpha-plugins", app], env=full,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


def pod_creates(kubesim, before):
    return [l for l in kubesim.requests()[before:]
            if " POST " in l and l.split()[2].split("?")[0].endswith("/pods")]


def test_generate_renders_with_function_pods(kubesim, service_account, layout, tmp_path):
    app = world_readable_copy(APP, str(tmp_path / "app"))
    before = len(kubesim.requests())
    r = sidecar(kubesim, service_account, app, plugin_spec(layout)["spec"]["generate"]["command"],
                {"FROM_SIDECAR": "sidecar env value"})
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 0, err
    out = r.stdout.decode()
    # byte for byte what the functions give when run directly on this machine
    assert r.stdout == reference_render(app, {"FROM_SIDECAR": "sidecar env value"}), (out, err)
    docs = [d for d in yaml.safe_load_all(out) if d]
    names = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    assert names == [("ConfigMap", "app-config"), ("ConfigMap", "sidecar-settings")], names
    gen = [d for d in docs if d["metadata"]["name"] == "sidecar-settings"][0]
    assert gen["data"]["ENV_GREETING"] == "from the sidecar image"
    assert gen["data"]["ENV_FROM_SIDECAR"] == "sidecar env value"
    assert gen["data"]["ENV_LOG_TO_STDERR"] == "true"
    # the sidecar's own environment does not leak into functions
    assert gen["data"]["ENV_KUBERNETES_SERVICE_HOST"] == "<unset>"
    for d in docs:
        assert d["metadata"]["labels"]["rendered-by"] == "krmpod-sidecar", d
    # function stderr reaches Argo CD's UI (kustomize hands the transformer 3 items: the two
    # ConfigMaps and the generator's config; the direct run says the same)
    assert "add-label: labelled 3 items" in err, err
    # one pod per function, created through the API (and the kubesim fixture checks that
    # none is left)
    assert len(pod_creates(kubesim, before)) == 2, kubesim.requests()[before:]


def test_image_kustomize_with_the_shim_first_on_path(kubesim, service_account, image, tmp_path):
    """What generate sets up, done by hand: the image's kustomize with the private `docker`
    first on PATH. Separates image problems (layout, credentials, read-only root) from
    generate's own."""
    env = env_of(image)
    app = world_readable_copy(APP, str(tmp_path / "app"))
    path = env["KRMPOD_SHIM_DIR"] + ":" + env.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    before = len(kubesim.requests())
    r = sidecar(kubesim, service_account, app,
                [env["KRMPOD_KUSTOMIZE"], "build", "--enable-alpha-plugins", "."],
                {"FROM_SIDECAR": "sidecar env value", "PATH": path})
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == reference_render(app, {"FROM_SIDECAR": "sidecar env value"})
    assert "add-label: labelled 3 items" in r.stderr.decode()
    assert len(pod_creates(kubesim, before)) == 2, kubesim.requests()[before:]


def test_generate_failing_function_fails_with_no_output(kubesim, service_account, layout,
                                                        tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text("resources:\n- configmap.yaml\ntransformers:\n- fn.yaml\n")
    (app / "configmap.yaml").write_text(open(os.path.join(APP, "configmap.yaml")).read())
    (app / "fn.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fn\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n"
        "        image: example.com/fns/fail:v1\n")
    app = world_readable_copy(str(app), str(tmp_path / "app-ro"))
    r = sidecar(kubesim, service_account, app, plugin_spec(layout)["spec"]["generate"]["command"])
    assert r.returncode != 0
    assert r.stdout == b"", "generate must never print partial output on failure"
    assert b"fail: boom" in r.stderr


def test_init_preflight_passes(kubesim, service_account, layout, tmp_path):
    app = world_readable_copy(APP, str(tmp_path / "app"))
    r = sidecar(kubesim, service_account, app, plugin_spec(layout)["spec"]["init"]["command"])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.strip() == b"" or b"apiVersion" not in r.stdout


def test_discover_matches_only_apps_with_functions(kubesim, service_account, layout, tmp_path):
    cmd = plugin_spec(layout)["spec"]["discover"]["find"]["command"]
    app = world_readable_copy(APP, str(tmp_path / "app"))
    r = sidecar(kubesim, service_account, app, cmd)
    assert r.returncode == 0 and r.stdout.strip(), (r.returncode, r.stdout, r.stderr)
    plain = world_readable_copy(PLAIN, str(tmp_path / "plain"))
    r = sidecar(kubesim, service_account, plain, cmd)
    # Argo CD: a match is exit 0 with non-empty stdout
    assert r.returncode != 0 or not r.stdout.strip(), (r.returncode, r.stdout, r.stderr)
