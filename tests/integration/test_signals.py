"""Signals mid-run: the pod is deleted and krmpod exits 128+signo, within 2 s."""
import signal
import time

import pytest

from conftest import KUSTOMIZE_RUN, start_shim


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130),
                                      (signal.SIGHUP, 129)])
def test_signal_deletes_pod(kubesim, sig, code):
    proc, pod = start_shim(kubesim, KUSTOMIZE_RUN + ["example.com/cat"])
    t0 = time.monotonic()
    proc.send_signal(sig)
    try:
        proc.wait(timeout=5)
    finally:
        proc.kill()
    elapsed = time.monotonic() - t0
    err = proc.stderr.read().decode()
    assert proc.returncode == code, err
    assert elapsed < 2.0, "took %.2fs to exit" % elapsed
    assert kubesim.api_pods() == [], "pod %s still there" % pod["metadata"]["name"]
