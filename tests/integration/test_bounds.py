"""Bounds on what a repository can make krmpod hold: one bad repository must not take the
sidecar down for every Application (its memory limit is 512 Mi, and discover runs for every
auto-detected app)."""
import os
import subprocess
import sys

from conftest import (ATTACH_ALLOW, IS_ASAN, KRMPOD_BIN, KUSTOMIZE_RUN, base_env, exec_settings, run_shim,
                      shim_link)

# the peak RSS of one child, from a Python that runs only it
PEAK = ("import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
        "sys.stderr.buffer.write(r.stderr)\n"
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def test_a_huge_flow_list_is_refused_early_and_small(tmp_path):
    """A 15 MiB `resources: [a,a,...]` (7.8 million values) under LIMIT_KUSTOMIZE_FILE: the
    old discover built all of it (786 MB, 23 s); now the parser stops at JSON_MAX_NODES
    values with an error naming the limit."""
    n = (15 << 20) // 2
    (tmp_path / "kustomization.yaml").write_text("resources: [" + ",".join(["a"] * n) + "]\n")
    r = subprocess.run([sys.executable, "-c", PEAK, KRMPOD_BIN, "discover"], cwd=str(tmp_path),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                       env={"PATH": os.environ["PATH"]})
    code, rss_kb = map(int, r.stdout.split())
    err = r.stderr.decode()
    assert code == 1, err
    assert "more than 1000000 values (JSON_MAX_NODES" in err, err
    # ~110 MB for the static binary, ~400 MB under ASan's shadow memory
    assert rss_kb < (600 if IS_ASAN else 200) * 1024, rss_kb


def test_a_function_s_output_past_krmpod_max_output_fails_the_call(kubesim):
    """2 MiB of stdout with KRMPOD_MAX_OUTPUT=1Mi: the call fails naming the function and the
    setting (attach mode, or exec mode under KRMPOD_TEST_MODE=exec), and nothing past the
    limit reaches stdout. Within the limit the same call is whole."""
    data = b"".join(b"- item %07d\n" % i for i in range(160000))  # ~2.2 MB
    env = base_env(kubesim, KRMPOD_MAX_OUTPUT="1Mi")
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat:v1"], stdin=data, env=env)
    err = r.stderr.decode()
    assert r.returncode == 125, err
    assert "the function's stdout passed KRMPOD_MAX_OUTPUT (1048576 bytes)" in err, err
    assert "example.com/cat:v1" in err, err
    assert len(r.stdout) <= 1 << 20
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat:v1"], stdin=data,
                 env=base_env(kubesim, KRMPOD_MAX_OUTPUT="4Mi"))
    assert r.returncode == 0 and r.stdout == data, r.stderr.decode()
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat:v1"], stdin=b"x",
                 env=base_env(kubesim, KRMPOD_MAX_OUTPUT="lots"))
    assert r.returncode == 125 and b"KRMPOD_MAX_OUTPUT=lots is not a size" in r.stderr, r.stderr


def test_the_cap_holds_for_output_only_the_pod_log_has(kubesim):
    """quick-output writes 2 MiB and exits 0; its attach is refused as one to a container that
    has ended (kubesim's attach_no_container), so its output comes from the pod log. The old
    code wrote all of it to stdout whatever KRMPOD_MAX_OUTPUT said; now the call fails naming
    the setting, and nothing reaches stdout. Within the limit the same call is whole."""
    from conftest import EXEC_MODE
    if EXEC_MODE:  # the exec starts the function: its output is always streamed
        return
    call = KUSTOMIZE_RUN + ["example.com/quick-output:v1"]
    kubesim.faults(attach_no_container=1)
    r = run_shim(kubesim, call, stdin=b"x", env=base_env(kubesim, KRMPOD_MAX_OUTPUT="1Mi"))
    err = r.stderr.decode()
    assert r.returncode == 125 and r.stdout == b"", err
    assert "only its pod log holds) passed KRMPOD_MAX_OUTPUT (1048576 bytes)" in err, err
    kubesim.faults(attach_no_container=1)
    r = run_shim(kubesim, call, stdin=b"x",
                 env=base_env(kubesim, KRMPOD_MAX_OUTPUT="4Mi", **ATTACH_ALLOW))
    assert r.returncode == 0 and r.stdout == b"x" * (2 << 20), r.stderr.decode()[-2000:]
    assert "come from the pod log" in r.stderr.decode(), r.stderr.decode()[-2000:]


def test_the_cap_holds_through_the_render_s_session(kubesim, tmp_path):
    """The same cap on a pooled call through generate's session: the render fails naming the
    setting, and the pod is retired (its call was cut)."""
    from test_generate import cmp_env, fn_app, generate
    from test_pool import POOLED, pool_pods
    big = tmp_path / "big"
    big.mkdir()
    (big / "kustomization.yaml").write_text("resources:\n- cm.yaml\ntransformers:\n- f.yaml\n")
    (big / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n"
                                 "data:\n  blob: '" + "x" * (1 << 20) + "'\n")
    (big / "f.yaml").write_text(
        "apiVersion: krmpod.test/v1\nkind: Fn\nmetadata:\n  name: f\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n"
        "        image: example.com/fns/cat:v1\n")
    env = cmp_env(kubesim, tmp_path, **dict(exec_settings(), KRMPOD_WARM_POOL="true",
                                             KRMPOD_WARM_POOL_IMAGES=POOLED))
    r = generate(big, dict(env, KRMPOD_MAX_OUTPUT="512Ki"))
    err = r.stderr.decode()
    assert r.returncode != 0 and r.stdout == b"", err
    assert "passed KRMPOD_MAX_OUTPUT (524288 bytes)" in err, err
    r = generate(big, env)  # the default, 64 MiB, is far above it
    assert r.returncode == 0, r.stderr.decode()
    subprocess.run([shim_link("krmpod"), "gc"],
                   env=dict(base_env(kubesim, **exec_settings()), KRMPOD_WARM_POOL="true",
                            KRMPOD_WARM_POOL_IMAGES=POOLED, KRMPOD_WARM_POOL_TTL="1ms"),
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, check=True)
    assert pool_pods(kubesim) == []


def test_a_function_s_stderr_is_capped_head_and_tail(kubesim):
    """6 MiB of a function's stderr with KRMPOD_MAX_STDERR=64Ki: its first and last lines
    pass, with one line saying how much was dropped between; its stdout is whole. Before
    issue 29 all of it passed, whatever the output caps said."""
    data = b"apiVersion: v1\nkind: ResourceList\nitems: []\n"
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/noisy:v1"], stdin=data,
                 env=base_env(kubesim, KRMPOD_MAX_STDERR="64Ki"))
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 0 and r.stdout == data, err[-3000:]
    assert len(r.stderr) < (64 << 10) + (16 << 10), len(r.stderr)
    assert "noisy: FIRST" in err and "noisy: LAST" in err, err[-3000:]
    assert ("bytes of the stderr of example.com/noisy:v1 dropped here: KRMPOD_MAX_STDERR=65536 "
            "keeps the first 32768 and the last 32768 bytes]") in err, err[-3000:]
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/noisy:v1"], stdin=data,
                 env=base_env(kubesim, KRMPOD_MAX_STDERR="1k"))
    assert r.returncode == 125 and b"KRMPOD_MAX_STDERR=1k: at least 4096 bytes" in r.stderr, \
        r.stderr[-2000:]


def test_a_render_s_stderr_is_capped(kubesim, tmp_path):
    """Two noisy functions in one render, each capped at 1 MiB, the render at 256 KiB
    (KRMPOD_GENERATE_MAX_STDERR): what generate writes to stderr stays under the render's
    cap, says what it dropped, and the manifests are whole."""
    from test_generate import cmp_env, generate
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text(
        "resources:\n- cm.yaml\ntransformers:\n- f1.yaml\n- f2.yaml\n")
    (app / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
                                 "data:\n  k: v\n")
    for name in ("f1", "f2"):
        (app / (name + ".yaml")).write_text(
            "apiVersion: krmpod.test/v1\nkind: Fn\nmetadata:\n  name: %s\n  annotations:\n"
            "    config.kubernetes.io/function: |\n      container:\n"
            "        image: example.com/fns/noisy:v1\n" % name)
    env = cmp_env(kubesim, tmp_path, KRMPOD_MAX_STDERR="1Mi",
                  KRMPOD_GENERATE_MAX_STDERR="256Ki")
    r = generate(app, env)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 0, err[-3000:]
    assert b"name: cm" in r.stdout and b"k: v" in r.stdout, r.stdout
    assert len(r.stderr) < (256 << 10) + (16 << 10), len(r.stderr)
    assert "of the render's stderr dropped here: KRMPOD_GENERATE_MAX_STDERR=262144" in err, \
        err[-3000:]
    assert err.count("noisy: FIRST") >= 1 and "noisy: LAST" in err, err[-3000:]
