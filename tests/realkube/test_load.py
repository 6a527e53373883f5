"""Opt-in (KRMPOD_REALKUBE_LOAD=N concurrent renders; `make load LOAD_REALKUBE=8`; not part of
`make test`): tests/load/load.py's check on the real cluster. N renders of the 3-function app
(tests/apptrees.py) start at once in the installed sidecar, through the CMP server stand-in,
prestart on: every render byte for byte the direct run, every pod started ahead claimed (as
many as the shipped ResourceQuota has room for: 16 pods, so 8 renders queue for it), one
pod per function (the tier's pod watch), none left (the tier's after-test check). Prints the
render time p50/p99, the pods created vs the functions run, and the API requests per
function as the shims count them."""
import os
import re
import subprocess
import threading
import time

import pytest
import yaml

from apptrees import three_function_app
from conftest import ROOT
from sidecar import ARGOCD_ENV, direct_build

RENDERS = int(os.environ.get("KRMPOD_REALKUBE_LOAD", "0") or 0)
FUNCTIONS = 3


def quota_pods():
    """The pods the shipped ResourceQuota allows in the functions namespace."""
    with open(os.path.join(ROOT, "manifests", "functions", "resourcequota.yaml")) as f:
        quota = next(d for d in yaml.safe_load_all(f) if d and d["kind"] == "ResourceQuota")
    return int(quota["spec"]["hard"]["pods"])


QUOTA_PODS = quota_pods()
PRESTART = re.compile(r"krmpod\[prestart\]: (\d+) pods started ahead in (\d+) ms, (\d+) claimed, "
                      r"(\d+) unclaimed deleted")
FUNCTION_LINE = re.compile(r"krmpod\[docker\] pod=\S+: image=(\S+) .* exit=(-?\d+) requests=(\d+)")


def percentile(values, p):
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1)))))]


@pytest.mark.skipif(RENDERS <= 0, reason="set KRMPOD_REALKUBE_LOAD=N for N concurrent renders")
def test_concurrent_renders(install, tmp_path):
    app = three_function_app(str(tmp_path / "app"))
    want = direct_build(app, tmp_path).stdout
    sidecar = install.sidecar
    env = dict(ARGOCD_ENV)
    # every copy first (kubectl exec), so that the renders really start together
    uploads = [sidecar.upload_app(app, env) for _ in range(RENDERS)]
    mark = install.recorder.mark()
    results = [None] * RENDERS

    def one(i, repo, path):
        t0 = time.monotonic()
        r = subprocess.run(sidecar.run_argv(repo, path, env, 60000, "generate"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        results[i] = (time.monotonic() - t0, r)

    threads = [threading.Thread(target=one, args=(i, repo, path))
               for i, (repo, path) in enumerate(uploads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    install.recorder.settle()
    pods = install.recorder.pods_since(mark)
    problems, functions_run, requests, prestarted = [], 0, 0, []
    room = RENDERS * FUNCTIONS <= QUOTA_PODS
    for i, (took, r) in enumerate(results):
        err = r.stderr.decode(errors="replace")
        if r.returncode != 0:
            problems.append("render %d: exit %d: %s" % (i, r.returncode, err[-600:]))
        elif r.stdout != want:
            problems.append("render %d: %d bytes, not the direct run's %d"
                            % (i, len(r.stdout), len(want)))
        fns = FUNCTION_LINE.findall(err)
        functions_run += len(fns)
        requests += sum(int(n) for _, _, n in fns)
        # Prestart stops at a full ResourceQuota (the shipped one allows 16 pods): a render
        # may start fewer ahead, or none (then it prints no line), but every pod it started
        # must be claimed, and with room for all of them all must have been started.
        m = PRESTART.search(err)
        started, claimed, deleted = (int(m.group(1)), int(m.group(3)), int(m.group(4))) \
            if m else (0, 0, 0)
        prestarted.append(started)
        if claimed != started or deleted != 0 or (room and started != FUNCTIONS):
            problems.append("render %d: %s" % (i, m.group(0) if m else "no prestart line"))
    if not any(n == FUNCTIONS for n in prestarted):
        problems.append("no render started all its %d pods ahead: %s" % (FUNCTIONS, prestarted))
    if len(pods) != functions_run or functions_run != FUNCTIONS * RENDERS:
        problems.append("%d pods created, %d functions run, %d expected"
                        % (len(pods), functions_run, FUNCTIONS * RENDERS))
    times = [took for took, _ in results]
    print("\nrealkube load: %d concurrent renders of %d functions: render p50 %.2f s, p99 "
          "%.2f s; %d pods created, %d functions run, %d of them started ahead (the quota allows "
          "%d pods); %.1f API requests per function (the shims' count)" % (
              RENDERS, FUNCTIONS, percentile(times, 50), percentile(times, 99), len(pods),
              functions_run, sum(prestarted), QUOTA_PODS, requests / max(1, functions_run)))
    assert not problems, "\n".join(problems)
