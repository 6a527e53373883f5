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


def test_dockerfile_installs_what_plugin_yaml_names():
    with open(os.path.join(ROOT, "Dockerfile")) as f:
        df = f.read()
    assert "COPY plugin.yaml /out/home/argocd/cmp-server/config/plugin.yaml" in df
    assert re.search(r"install -m 0755 build/krmpod /out/usr/local/bin/krmpod\b", df)


def test_the_binary_has_every_hook(tmp_path):
    out = subprocess.run([KRMPOD_BIN, "help"], stdout=subprocess.PIPE, check=True).stdout
    commands = {l.split()[0] for l in out.decode().splitlines() if l.startswith("  ")}
    p = plugin()["spec"]
    for cmd in (p["init"]["command"], p["generate"]["command"], p["discover"]["find"]["command"]):
        assert cmd[1] in commands, (cmd, commands)
    # and discover really answers "not mine" in a directory without a kustomization
    r = subprocess.run([KRMPOD_BIN, "discover"], cwd=str(tmp_path), stdout=subprocess.PIPE)
    assert r.returncode == 1 and r.stdout == b""
