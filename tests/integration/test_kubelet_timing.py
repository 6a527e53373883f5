"""krmpod under the kubelet's real timing. kubesim by default shows container starts and exits
in the pod status only at the kubelet's next relist (1 s, as measured on a real 1.34 node:
tests/conformance/data/exit_delay.json); the suite shortens that to 20 ms for speed. Here the
real period is back: the output stream ends when the function exits, its exit code arrives up
to a relist later, and krmpod waits for it instead of guessing."""
import re
import time

from conftest import EXEC_MODE, KUSTOMIZE_RUN, base_env, no_sanitizer_reports, run_shim

RELIST_MS = 1000


def timings(stderr):
    m = re.search(rb"attached=(-?\d+)ms finished=(\d+)ms", stderr)
    assert m, stderr.decode()
    return int(m.group(1)), int(m.group(2))


def test_exit_code_arrives_a_relist_after_the_output(kubesim):
    kubesim.faults(relist_period_ms=RELIST_MS)
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fail"], stdin=b"x",
                 env=base_env(kubesim, KRMPOD_LOG_LEVEL="debug"))
    assert r.returncode == 3, r.stderr.decode()
    assert b"fail: boom" in r.stderr
    no_sanitizer_reports(r.stderr)
    attached, finished = timings(r.stderr)
    assert b"exit=3" in r.stderr
    if EXEC_MODE:
        # exec mode: the exit code comes on the exec stream the moment the function ends,
        # with no relist to wait for (docs/internals/exec-mode.md)
        assert 0 <= finished - attached < RELIST_MS / 2, r.stderr.decode()
        return
    # krmpod attaches on the kubelet's Started event, before any relist shows the container
    # running; the function ends at once, and its terminated state comes with the next
    # relist: at most a period after the attach, never guessed earlier
    assert b"attached on the kubelet's Started event" in r.stderr, r.stderr.decode()
    assert attached < RELIST_MS, r.stderr.decode()
    assert 0 <= finished - attached <= RELIST_MS + 300, r.stderr.decode()


def test_a_function_that_ended_before_any_relist_saw_it_run(kubesim):
    """It never shows as running: the status goes from waiting to terminated, and krmpod
    takes its output from the log."""
    kubesim.faults(relist_period_ms=RELIST_MS)
    t0 = time.monotonic()
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/quick-exit"], stdin=b"x")
    assert r.returncode == 4, r.stderr.decode()
    err = r.stderr.decode()
    assert "quick-exit: done before anyone attached" in err, err
    if EXEC_MODE:  # the exec starts the function: nothing can happen before it
        assert "before krmpod attached" not in err and timings(r.stderr)[0] >= 0, err
        return
    assert "before krmpod attached" in err, err
    assert timings(r.stderr)[0] == -1, err  # no attach at all
    assert time.monotonic() - t0 < 4 * RELIST_MS / 1000, err
