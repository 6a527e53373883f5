"""The arm64 build under qemu-user against kubesim, byte for byte against the amd64 build:
`krmpod generate` as Argo CD's CMP server runs it (real kustomize, in-cluster credentials,
the Argo CD environment of tests/integration/test_generate.py) in attach and exec mode, a
failing function, a large render, and one shim `docker run` whose stdin holds every byte
value."""
import os
import re
import sys

from conftest import IMAGES, arm64_shim_calls, base_env, exec_settings, it, run, run_both

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _load_test_generate():
    """tests/integration/test_generate.py's helpers; its `from conftest import ...` is given
    the integration conftest it was written against."""
    import importlib.util
    saved = sys.modules.get("conftest")
    sys.modules["conftest"] = it
    try:
        spec = importlib.util.spec_from_file_location(
            "krmpod_integration_test_generate",
            os.path.join(ROOT, "tests", "integration", "test_generate.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.modules["conftest"] = saved


tg = _load_test_generate()


# kubectl's klog header: severity, date, time, pid (E1128 13:09:41.697394    4907 run.go:72])
KLOG = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ")


def own_lines(stderr):
    """The lines of stderr that krmpod did not write (the functions', kustomize's), in order,
    klog's time and pid taken out: krmpod's own lines name pods and durations, which differ
    from run to run."""
    return [KLOG.sub(r"\1 ", ln) for ln in stderr.decode(errors="replace").splitlines()
            if not ln.startswith("krmpod[")]


def assert_same(amd, arm, rc):
    a_err, b_err = amd.stderr.decode(errors="replace"), arm.stderr.decode(errors="replace")
    assert amd.returncode == rc, "amd64: exit %d\n%s" % (amd.returncode, a_err)
    assert arm.returncode == rc, "arm64 under qemu: exit %d (amd64: %d)\n%s" % (
        arm.returncode, amd.returncode, b_err)
    if arm.stdout != amd.stdout:
        n = next((i for i, (x, y) in enumerate(zip(amd.stdout, arm.stdout)) if x != y),
                 min(len(amd.stdout), len(arm.stdout)))
        raise AssertionError("stdout differs: amd64 %d bytes, arm64 %d bytes, first difference "
                             "at byte %d: amd64 %r, arm64 %r\narm64 stderr:\n%s"
                             % (len(amd.stdout), len(arm.stdout), n, amd.stdout[n:n + 60],
                                arm.stdout[n:n + 60], b_err))
    assert own_lines(arm.stderr) == own_lines(amd.stderr), (a_err, b_err)


def test_generate_example_app(kubesim, tmp_path):
    """tests/fixtures/kustomize/transform-generate: a generator and a transformer."""
    env = tg.cmp_env(kubesim, tmp_path, FROM_SHIM="shim value")
    calls = arm64_shim_calls()
    amd, arm = run_both(["generate"], env, cwd=tg.APP)
    assert_same(amd, arm, 0)
    assert arm64_shim_calls() - calls == 2  # kustomize's two `docker run`s were the arm64 build
    assert b"team: platform" in arm.stdout and b"name: settings" in arm.stdout
    err = arm.stderr.decode()
    assert err.count("image=example.com/fns/") == 2, err
    assert "add-label: labelled 3 items" in err, err


def test_generate_function_failure(kubesim, tmp_path):
    """A function that fails: exit 1, nothing on stdout, the function's stderr passed on."""
    app = tg.fn_app(tmp_path, "example.com/fail:v1")
    amd, arm = run_both(["generate"], tg.cmp_env(kubesim, tmp_path), cwd=str(app))
    assert_same(amd, arm, 1)
    assert arm.stdout == b""
    assert "fail: boom" in arm.stderr.decode()


def test_generate_large_render(kubesim, tmp_path):
    """About 3 MB of manifests through a function and back: many WebSocket frames each way
    (64-bit extended lengths, frames cut anywhere), text in several scripts and escapes that
    JSON and YAML must carry (bytes >= 0x80 everywhere: char is unsigned on aarch64)."""
    app = tg.fn_app(tmp_path, "example.com/cat:v1")
    words = ["grüße", "日本語", "ελληνικά", "emoji \U0001F680", "tab\there", "quote \" and \\",
             "control \x01\x1f", "x" * 300]
    with open(str(app / "cm.yaml"), "w", encoding="utf-8") as f:
        for i in range(24):
            f.write("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: data-%02d\ndata:\n" % i)
            for j in range(420):
                text = " ".join(words[(i + j + k) % len(words)] for k in range(6))
                f.write("  k%03d: %s\n" % (j, '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')
                                            .replace("\t", "\\t").replace("\x01", "\\x01")
                                            .replace("\x1f", "\\x1F")))
    amd, arm = run_both(["generate"], tg.cmp_env(kubesim, tmp_path), cwd=str(app), timeout=300)
    assert_same(amd, arm, 0)
    assert len(arm.stdout) > 3_000_000, len(arm.stdout)
    assert "日本語".encode() in arm.stdout and b"name: data-23" in arm.stdout


def streams(kubesim, since):
    """The stream subresources requested since request number `since`: {"exec"}, {"attach"}."""
    return {sub for line in kubesim.requests()[since:] for sub in ("exec", "attach")
            if "/%s?" % sub in line}


def test_generate_exec_mode(kubesim, tmp_path):
    """Exec mode: the image config read from a registry (TLS, digests), the function run
    through pods/exec with krmpod's own framing. The in-pod side (kubesim's helper image) is
    the amd64 build: kubesim runs containers as host processes."""
    env = tg.cmp_env(kubesim, tmp_path, FROM_SHIM="shim value", **exec_settings())
    assert env["KRMPOD_MODE"] == "exec"
    start = len(kubesim.requests())
    amd = run("amd64", ["generate"], env, cwd=tg.APP, timeout=300)
    mid = len(kubesim.requests())
    arm = run("arm64", ["generate"], env, cwd=tg.APP, timeout=300)
    assert_same(amd, arm, 0)
    assert streams(kubesim, start) == {"exec"}
    assert streams(kubesim, mid) == {"exec"}, kubesim.requests()[mid:]
    err = arm.stderr.decode()
    assert err.count("image=example.com/fns/") == 2, err


def test_shim_docker_run_every_byte(kubesim):
    """One `docker run` as kustomize makes it: 1 MiB of stdin holding every byte value comes
    back through the cat function unchanged, from both builds."""
    data = bytes(range(256)) * 4096
    env = base_env(kubesim)
    amd, arm = run_both(it.KUSTOMIZE_RUN + ["example.com/cat:v1"], env, argv0="docker", stdin=data)
    assert_same(amd, arm, 0)
    assert arm.stdout == data
    assert os.path.isdir(IMAGES)
