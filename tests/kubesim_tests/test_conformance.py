"""kubesim answers like the real server where krmpod depends on it: the conformance cases
(tests/conformance/cases.py) are replayed against a kubesim with its default settings and
compared with what a real Kubernetes 1.34 answered (tests/conformance/data/, recorded with
`make conformance-record`). See tests/conformance/README.md for what is compared."""
import json
import os
import shutil
import sys
import tempfile
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CONFORMANCE = os.path.join(ROOT, "tests", "conformance")
DATA = os.path.join(CONFORMANCE, "data")
sys.path.insert(0, CONFORMANCE)
import cases  # noqa: E402
from normalize import compare_step, normalize  # noqa: E402
from targets import KubesimTarget  # noqa: E402

from conftest import IMAGES  # noqa: E402
from kubesim_lib import testing  # noqa: E402

RECORDED = sorted(f[:-5] for f in os.listdir(DATA) if f.endswith(".json") and
                  f != "exit_delay.json")
# The kubelet's relist period that kubesim's default models, and how far a measured delay
# may stray from the model (scheduling noise on a loaded 2-core machine).
RELIST_S = 1.0
SLACK_S = 0.25


def load(name):
    with open(os.path.join(DATA, name + ".json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def replay():
    """One kubesim with its default settings (a realistic relist period), every case run
    against it once (in parallel, as recorded), and the exit delay measured alongside. Only
    the image pull back-off is shortened (10 s by default): the cases compare the order of
    events, not that wait."""
    state = tempfile.mkdtemp(prefix="kubesim-conformance-")
    sim = testing.Kubesim(state, IMAGES, pull_backoff_ms=4000)
    t = KubesimTarget(sim)
    t.setup()
    delays = []
    recs, errors = cases.run_cases(t, alongside=lambda: delays.extend(
        cases.measure_exit_delay(t, parallel=True)))
    yield t, recs, errors, delays
    sim.stop()
    with open(os.path.join(state, "kubesim.stderr")) as f:
        log = f.read()
    shutil.rmtree(state, ignore_errors=True)
    assert "Traceback" not in log, "kubesim raised:\n" + log


def test_every_case_has_a_recording():
    assert RECORDED == sorted(cases.case_name(c) for c in cases.CASES + cases.SERIAL_CASES)


@pytest.mark.parametrize("case", RECORDED)
def test_case(replay, case):
    t, recs, errors, _ = replay
    assert case not in errors, errors[case]
    recorded, rec = load(case), recs[case]
    assert [s["name"] for s in rec.steps] == [s["name"] for s in recorded["steps"]]
    names = dict(t.names(), **rec.names)
    diffs = []
    for want, mine in zip(recorded["steps"], rec.steps):
        diffs += compare_step(mine, want["answer"], normalize(mine["answer"], names))
    assert not diffs, "%s (%s):\n%s" % (case, recorded["about"], "\n".join(diffs))


def modelled_delay(run):
    """The exit -> terminated delay the relist model predicts: the status changes at the
    first relist after the exit, relists every RELIST_S from the one that saw the container
    start running."""
    since_tick = run["runs_s"] - run["start_to_running_s"]
    return RELIST_S - since_tick % RELIST_S


@pytest.mark.parametrize("who", ["recorded", "kubesim"])
def test_exit_to_terminated_follows_the_relist(replay, who):
    runs = load("exit_delay")["runs"] if who == "recorded" else replay[3]
    assert len(runs) == 5, runs
    for r in runs:
        assert 0 < r["exit_to_terminated_s"] <= RELIST_S + SLACK_S, r
        if r["start_to_running_s"] is not None and r["start_to_running_s"] < r["runs_s"]:
            assert abs(r["exit_to_terminated_s"] - modelled_delay(r)) <= SLACK_S, (
                "%s: the delay is not the time to the next relist (%.2f s): %s"
                % (who, modelled_delay(r), r))
        # the terminal phase follows one relist later
        assert abs(r["terminated_to_phase_s"] - RELIST_S) <= SLACK_S + 0.1, r


def test_relist_can_be_set_low(tmp_path):
    """Tests that need speed set the period explicitly; the delay shrinks with it."""
    sim = testing.Kubesim(str(tmp_path), IMAGES, relist_period_ms=50)
    try:
        t = KubesimTarget(sim)
        out = []
        th = threading.Thread(target=lambda: out.extend(cases.measure_exit_delay(
            t, runs=(0.1, 0.3), parallel=True)))
        th.start()
        th.join(30)
        assert len(out) == 2
        for r in out:
            assert r["exit_to_terminated_s"] <= 0.05 + SLACK_S, r
            assert r["terminated_to_phase_s"] <= 0.05 + SLACK_S, r
    finally:
        sim.stop()
