"""Real kustomize (kubectl kustomize, which embeds kustomize 5.5) drives the shim."""
import os
import shutil

from conftest import ATTACH_ALLOW, IMAGES, ROOT, base_env, kustomize, no_sanitizer_reports

APP = os.path.join(ROOT, "tests", "fixtures", "kustomize", "transform-generate")
DIRECT = os.path.join(ROOT, "tests", "fixtures")


def direct_env(tmp_path, **extra):
    """PATH with a docker that runs the fixture programs directly (the reference)."""
    d = tmp_path / "direct-bin"
    d.mkdir()
    os.symlink(os.path.join(DIRECT, "direct-docker"), str(d / "docker"))
    env = {"PATH": str(d) + ":" + os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
           "KRMPOD_TEST_IMAGES": IMAGES}
    env.update(extra)
    return env


def test_transformer_and_generator_byte_for_byte(kubesim, shim_dir, tmp_path):
    env = base_env(kubesim, shim_dir, FROM_SHIM="shim value")
    via_pods = kustomize(APP, env)
    assert via_pods.returncode == 0, via_pods.stderr.decode()
    direct = kustomize(APP, direct_env(tmp_path, FROM_SHIM="shim value"))
    assert direct.returncode == 0, direct.stderr.decode()
    assert via_pods.stdout == direct.stdout
    out = via_pods.stdout.decode()
    # the generator ran, saw exactly the variables its config names, and the transformer
    # labelled everything (the generated ConfigMap too)
    assert "name: settings" in out and "color: blue" in out
    assert "ENV_GREETING: hello world" in out
    assert "ENV_FROM_SHIM: shim value" in out
    assert "ENV_LOG_TO_STDERR: \"true\"" in out or "ENV_LOG_TO_STDERR: 'true'" in out
    assert "ENV_KUBECONFIG: <unset>" in out
    assert out.count("team: platform") == 2, out
    err = via_pods.stderr.decode()
    # the function's own stderr line passes through unchanged (the same as the direct run)
    fn_lines = [l for l in direct.stderr.decode().splitlines() if l.startswith("add-label:")]
    assert fn_lines == ["add-label: labelled 3 items"], direct.stderr.decode()
    assert fn_lines[0] in err.splitlines(), err
    assert err.count("image=example.com/fns/") == 2, err
    no_sanitizer_reports(via_pods.stderr)


def test_failing_function_fails_kustomize_with_its_stderr(kubesim, shim_dir, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text("transformers:\n- fn.yaml\n")
    (app / "fn.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fn\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n"
        "        image: example.com/fail:v1\n")
    r = kustomize(str(app), base_env(kubesim, shim_dir))
    assert r.returncode != 0
    assert b"fail: boom" in r.stderr
    assert r.stdout == b""


def test_stderr_before_stdin_reaches_kustomize_user(kubesim, shim_dir, tmp_path):
    kubesim.faults(start_latency_ms=100)
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(os.path.join(APP, "deployment.yaml"), str(app))
    (app / "kustomization.yaml").write_text("resources:\n- deployment.yaml\ntransformers:\n- fn.yaml\n")
    (app / "fn.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fn\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n"
        "        image: example.com/stderr-first:v1\n")
    r = kustomize(str(app), base_env(kubesim, shim_dir, **ATTACH_ALLOW))
    assert r.returncode == 0, r.stderr.decode()
    assert b"hello from stderr before stdin" in r.stderr
    assert b"name: web" in r.stdout
