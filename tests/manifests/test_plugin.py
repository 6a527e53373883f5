"""plugin.yaml parses as a ConfigManagementPlugin, and the commands it names exist: the path
is where the Dockerfile installs krmpod, and the binary has each hook (make image-local checks
the same inside the built image)."""
import os
import re
import subprocess

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KRMPOD_BIN = os.environ.get("KRMPOD_BIN", os.path.join(ROOT, "build", "krmpod"))


def plugin():
    with open(os.path.join(ROOT, "plugin.yaml")) as f:
        return yaml.safe_load(f)


def test_plugin_yaml_shape():
    p = plugin()
    assert p["apiVersion"] == "argoproj.io/v1alpha1"
    assert p["kind"] == "ConfigManagementPlugin"
    assert p["metadata"]["name"] == "krmpod" and p["spec"]["version"] == "v1"
    spec = p["spec"]
    assert spec["init"]["command"] == ["/usr/local/bin/krmpod", "init"]
    assert spec["generate"]["command"] == ["/usr/local/bin/krmpod", "generate"]
    assert spec["discover"]["find"]["command"] == ["/usr/local/bin/krmpod", "discover"]
    assert spec["provideGitCreds"] is False


def test_dockerfile_installs_what_plugin_yaml_names(tmp_path):
    """The image's added files come from scripts/image-layout.sh, which the Dockerfile's
    builder stage runs: plugin.yaml where the CMP server reads it, krmpod where it names."""
    with open(os.path.join(ROOT, "Dockerfile")) as f:
        df = f.read()
    assert re.search(r"^RUN scripts/image-layout\.sh /out build/krmpod$", df, re.M), df
    out = tmp_path / "out"
    subprocess.run([os.path.join(ROOT, "scripts", "image-layout.sh"), str(out), KRMPOD_BIN],
                   check=True)
    with open(os.path.join(ROOT, "plugin.yaml"), "rb") as f:
        assert (out / "home/argocd/cmp-server/config/plugin.yaml").read_bytes() == f.read()
    for cmd in (plugin()["spec"]["generate"]["command"], plugin()["spec"]["init"]["command"]):
        exe = out / cmd[0].lstrip("/")
        assert exe.is_file() and os.access(str(exe), os.X_OK), cmd


def test_the_binary_has_every_hook(tmp_path):
    out = subprocess.run([KRMPOD_BIN, "help"], stdout=subprocess.PIPE, check=True).stdout
    commands = {l.split()[0] for l in out.decode().splitlines() if l.startswith("  ")}
    p = plugin()["spec"]
    for cmd in (p["init"]["command"], p["generate"]["command"], p["discover"]["find"]["command"]):
        assert cmd[1] in commands, (cmd, commands)
    # and discover really answers "not mine" in a directory without a kustomization, the way
    # Argo CD's cmp-server reads it: exit 0, nothing on stdout (any other exit is an error)
    r = subprocess.run([KRMPOD_BIN, "discover"], cwd=str(tmp_path), stdout=subprocess.PIPE)
    assert r.returncode == 0 and r.stdout == b""
