"""A 50 MB ResourceList streams through with bounded memory."""
import os
import subprocess

import pytest

from apptrees import make_resource_list
from conftest import IS_ASAN, KRMPOD_BIN, KUSTOMIZE_RUN, base_env


def test_50mb_resource_list(kubesim, tmp_path):
    src = str(tmp_path / "rl.yaml")
    make_resource_list(src, 50 * 1024 * 1024)
    out = str(tmp_path / "out.yaml")
    d = str(tmp_path / "shim")
    os.mkdir(d)
    os.symlink(KRMPOD_BIN, os.path.join(d, "docker"))
    rss_file = str(tmp_path / "rss")
    # A fresh wrapper process whose only child is krmpod, so RUSAGE_CHILDREN is krmpod's.
    wrapper = ("import resource, subprocess, sys\n"
               "rc = subprocess.call(sys.argv[2:])\n"
               "open(sys.argv[1], 'w').write(str(resource.getrusage("
               "resource.RUSAGE_CHILDREN).ru_maxrss))\n"
               "sys.exit(rc)\n")
    with open(src, "rb") as fin, open(out, "wb") as fout:
        r = subprocess.run(["/usr/bin/python3", "-c", wrapper, rss_file,
                            os.path.join(d, "docker")] + KUSTOMIZE_RUN + ["example.com/cat"],
                           stdin=fin, stdout=fout, stderr=subprocess.PIPE,
                           env=base_env(kubesim), timeout=300)
    peak_kb = int(open(rss_file).read())
    assert r.returncode == 0, r.stderr.decode()
    assert os.path.getsize(out) == os.path.getsize(src)
    assert subprocess.run(["cmp", src, out]).returncode == 0
    if not IS_ASAN:
        assert peak_kb < 16 * 1024, "peak RSS %d KiB (limit 16 MiB)" % peak_kb
