"""The glibc build under valgrind (memcheck): no invalid access, no uninitialised use, no leak,
on the main paths (a function run, a function failure, a pull failure, generate). ASan runs
the whole suite; valgrind sees what ASan cannot (uninitialised reads) in the same code."""
import os
import shutil
import subprocess

import pytest

from conftest import ATTACH_ALLOW, KUSTOMIZE_RUN, ROOT, base_env, in_cluster_env, shim_link

GLIBC_BIN = os.path.join(ROOT, "build", "glibc", "krmpod")
VALGRIND = shutil.which("valgrind")
VG = [VALGRIND, "--quiet", "--error-exitcode=99", "--leak-check=full",
      "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
      "--track-origins=yes"] if VALGRIND else []

pytestmark = pytest.mark.skipif(
    os.environ.get("KRMPOD_VALGRIND") != "1",
    reason="valgrind tier: make integration runs it once (KRMPOD_VALGRIND=1)")


def shim(args, env, stdin=b""):
    link = shim_link("docker", GLIBC_BIN)
    # valgrind runs the symlink, so argv[0] is still `docker`
    return subprocess.run(VG + [link] + args, input=stdin, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=300)


def test_function_run(kubesim):
    data = b"".join(b"line %d\n" % i for i in range(20000))
    r = shim(KUSTOMIZE_RUN + ["example.com/cat"], base_env(kubesim), stdin=data)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == data


def test_function_failure_and_stderr_before_attach(kubesim, tmp_path):
    r = shim(KUSTOMIZE_RUN + ["example.com/fail"], in_cluster_env(kubesim, tmp_path,
                                                                   kubesim.token), stdin=b"x")
    assert r.returncode == 3, r.stderr.decode()
    assert b"fail: boom" in r.stderr
    # under valgrind the function's first write often comes before the attach: the recovery
    # from the pod log is the path this covers, so unproven output is accepted here
    r = shim(KUSTOMIZE_RUN + ["example.com/stderr-first"], {**base_env(kubesim), **ATTACH_ALLOW},
             stdin=b"y")
    assert r.returncode == 0 and r.stdout == b"y", r.stderr.decode()
    assert b"hello from stderr before stdin" in r.stderr


def test_pull_failure(kubesim):
    kubesim.faults(pull_fail_images=["cat"])
    r = shim(KUSTOMIZE_RUN + ["example.com/cat"], base_env(kubesim), stdin=b"x")
    assert r.returncode == 125, r.stderr.decode()
    assert b"ErrImagePull" in r.stderr or b"ImagePullBackOff" in r.stderr, r.stderr


def test_generate_and_discover(kubesim, tmp_path):
    env = in_cluster_env(kubesim, tmp_path, kubesim.token)
    env.update({"KRMPOD_KUSTOMIZE": "kubectl kustomize", "TMPDIR": str(tmp_path),
                "FROM_SHIM": "x"})
    app = os.path.join(ROOT, "examples", "demo-app")
    for hook in ("generate", "init", "discover"):
        r = subprocess.run(VG + [GLIBC_BIN, hook], cwd=app, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300, start_new_session=True)
        assert r.returncode == 0, (hook, r.stderr.decode())
