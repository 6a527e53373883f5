"""Opt-in (KRMPOD_REALKUBE_LOAD=N concurrent renders; `make load LOAD_REALKUBE=8`; not part of
`make test`): tests/load/load.py's check on the real cluster. N renders of the 3-function app
(tests/apptrees.py) start at once in the installed sidecar, through the CMP server stand-in,
prestart on: every render byte for byte the direct run, every pod started ahead claimed, one
pod per function (the tier's pod watch), none left (the tier's after-test check). Prints the
render time p50/p99, the pods created vs the functions run, and the API requests per
function as the shims count them."""
import os
import re
import subprocess
import threading
import time

import pytest

from apptrees import three_function_app
from sidecar import ARGOCD_ENV, direct_build

RENDERS = int(os.environ.get("KRMPOD_REALKUBE_LOAD", "0") or 0)
FUNCTIONS = 3
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
    problems, functions_run, requests = [], 0, 0
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
        m = PRESTART.search(err)
        if not m or (int(m.group(1)), int(m.group(3)), int(m.group(4))) != (FUNCTIONS,
                                                                          FUNCTIONS, 0):
            problems.append("render %d: %s" % (i, m.group(0) if m else "no prestart line"))
    if len(pods) != functions_run or functions_run != FUNCTIONS * RENDERS:
        problems.append("%d pods created, %d functions run, %d expected"
                        % (len(pods), functions_run, FUNCTIONS * RENDERS))
    times = [took for took, _ in results]
    print("\nrealkube load: %d concurrent renders of %d functions: render p50 %.2f s, p99 "
          "%.2f s; %d pods created, %d functions run; %.1f API requests per function (the "
          "shims' count)" % (RENDERS, FUNCTIONS, percentile(times, 50), percentile(times, 99),
                             len(pods), functions_run, requests / max(1, functions_run)))
    assert not problems, "\n".join(problems)
