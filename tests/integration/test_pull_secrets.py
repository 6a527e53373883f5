"""Issue 29, item 1: the function pods' pull Secrets give exec mode. A function image in a
registry that wants credentials (htpasswd, over TLS) and that KRMPOD_REGISTRY_AUTH does not
cover: where the sidecar may read the pods' pull Secret (KRMPOD_IMAGE_PULL_SECRETS), krmpod
reads the image config with it and runs the function in exec mode; where it may not (the
shipped Role's token, without `secrets get`), the function runs in exec mode on its image's
own entrypoint and the log says what would give krmpod the entrypoint. pull_auth.h."""
import base64
import json
import os
import subprocess

import pytest

import registrylib
from conftest import HELPER_IMAGE, IMAGES, KUSTOMIZE_RUN, base_env, in_cluster_env, shim_link

USERS = {"fnuser": "s3cret-pass"}
RL = (b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
      b"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n")


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    pki = registrylib.Pki(str(tmp_path_factory.mktemp("pki")))
    try:
        reg = registrylib.Registry(pki, auth="htpasswd", users=USERS)
    except registrylib.RegistryError as e:
        pytest.fail(str(e))
    try:
        reg.push_image("fns/cat", "v1", {"Entrypoint": [os.path.join(IMAGES, "cat")]})
        yield reg, pki
    finally:
        reg.stop()


def pull_secret(kubesim, name, host):
    auth = base64.b64encode(("fnuser:%s" % USERS["fnuser"]).encode()).decode()
    data = base64.b64encode(json.dumps({"auths": {host: {"auth": auth}}}).encode()).decode()
    kubesim.control("POST", "/api/v1/namespaces/default/secrets",
                    {"metadata": {"name": name}, "type": "kubernetes.io/dockerconfigjson",
                     "data": {".dockerconfigjson": data}})


def run(env):
    return subprocess.run([shim_link("docker")] + KUSTOMIZE_RUN + ["example.com/fns/cat:v1"],
                          input=RL, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=90)


def settings(reg, pki, tmp_path, mode):
    return dict(KRMPOD_MODE=mode, KRMPOD_HELPER_IMAGE=HELPER_IMAGE,
                KRMPOD_REGISTRY_MIRRORS="example.com=" + reg.host, KRMPOD_REGISTRY_CA=pki.ca,
                KRMPOD_CACHE_DIR=str(tmp_path / "cache"), KRMPOD_IMAGE_PULL_SECRETS="fn-pull",
                KRMPOD_REGISTRY_AUTH=None, KRMPOD_LOG_LEVEL="debug")


def test_a_readable_pull_secret_gives_exec_mode(kubesim, tmp_path, registry):
    reg, pki = registry
    pull_secret(kubesim, "fn-pull", reg.host)
    r = run(base_env(kubesim, **settings(reg, pki, tmp_path, "exec")))
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert b"name: a" in r.stdout, r.stdout
    # exec mode: the call went through the pod's krmpod, with the Secret's credentials
    assert "credentials of auths.\"%s\" in pull Secret default/fn-pull" % reg.host in err, err
    specs = [l for l in err.splitlines() if "pod spec: " in l]
    assert specs and all('"name":"krmpod"' in l for l in specs), specs
    assert USERS["fnuser"] not in err and "s3cret-pass" not in err


def test_an_unreadable_pull_secret_leaves_the_images_own_entrypoint_and_says_why(
        kubesim, tmp_path, registry):
    """The shipped Role's token (pods, no `secrets get`): the image config cannot be read,
    the function runs in exec mode on its image's own entrypoint, and the log says what
    would give krmpod the entrypoint."""
    reg, pki = registry
    pull_secret(kubesim, "fn-pull", reg.host)
    token = open(kubesim.state + "/token-krmpod").read().strip()
    env = in_cluster_env(kubesim, tmp_path, token)
    env.update({k: v for k, v in settings(reg, pki, tmp_path, "exec").items() if v})
    env.pop("KRMPOD_REGISTRY_AUTH", None)
    r = run(env)
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert "pull Secret default/fn-pull: not read (the Role grants no `get` on it)" in err, err
    assert "runs in exec mode (KRMPOD_MODE=exec) on its image's own entrypoint: its image " \
           "config cannot be read" in err, err
    assert "the registry %s requires credentials: set KRMPOD_REGISTRY_AUTH to a " \
           "dockerconfigjson that has them, or let the sidecar read the function pods' pull " \
           "Secret" % reg.host in err, err
    specs = [json.loads(l.split("pod spec: ", 1)[1]) for l in err.splitlines() if "pod spec: " in l]
    fns = [c for p in specs for c in p["spec"]["containers"] if c["name"] == "fn"]
    assert fns and all("command" not in c and c["stdin"] and not c["stdinOnce"] for c in fns), specs
