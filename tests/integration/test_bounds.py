"""Bounds on what a repository can make krmpod hold: one bad repository must not take the
sidecar down for every Application (its memory limit is 512 Mi, and discover runs for every
auto-detected app)."""
import os
import subprocess
import sys

from conftest import IS_ASAN, KRMPOD_BIN

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
