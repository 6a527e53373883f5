#!/usr/bin/python3
"""make conformance-record: runs the conformance cases (cases.py) against a real cluster and
saves the normalised answers in tests/conformance/data/, one JSON file per case, plus the
measured delay between a container's exit and its terminated status (exit_delay.json).

    eval "$(scripts/realkube env)"   # REALKUBE_API_SERVER, _CA_CERT, _ADMIN_CERT, ...
    tests/conformance/record.py [--out DIR] [CASE...]

The cluster must run images registry.local/busybox:1 (realkube imports it). Everything
happens in a fresh namespace conformance-XXXXXX, deleted (without waiting) at the end.
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402
from normalize import normalize  # noqa: E402
from targets import RealTarget  # noqa: E402


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "data"))
    ap.add_argument("--no-delay", action="store_true", help="skip the exit-delay measurement")
    ap.add_argument("cases", nargs="*", help="case names (default: all)")
    a = ap.parse_args()
    env = os.environ
    missing = [k for k in ("REALKUBE_API_SERVER", "REALKUBE_CA_CERT", "REALKUBE_ADMIN_CERT",
                           "REALKUBE_ADMIN_KEY") if not env.get(k)]
    if missing:
        ap.error("%s not set: run eval \"$(scripts/realkube env)\" first"
                 % ", ".join(missing))
    t = RealTarget(env["REALKUBE_API_SERVER"], env["REALKUBE_CA_CERT"],
                   env["REALKUBE_ADMIN_CERT"], env["REALKUBE_ADMIN_KEY"],
                   env.get("REALKUBE_NODE_NAME", "realkube-node"))
    os.makedirs(a.out, exist_ok=True)
    version = t.admin.request("GET", "/version").json.get("gitVersion")
    print("recording from %s (%s), namespace %s" % (t.admin.server, version, t.ns),
          file=sys.stderr)
    t.setup()
    try:
        recs, errors = cases.run_cases(t, a.cases or None)
        for name, rec in sorted(recs.items()):
            if name in errors:
                continue
            names = dict(t.names(), **rec.names)
            doc = {"case": name, "about": " ".join(
                       (getattr(cases, "case_" + name).__doc__ or "").split()),
                   "recorded_from": version,
                   "steps": [{"name": s["name"], "request": normalize(s["request"], names),
                              "answer": normalize(s["answer"], names)} for s in rec.steps]}
            if rec.measurements:
                doc["measurements"] = rec.measurements
            write(os.path.join(a.out, name + ".json"), doc)
            print("  %-28s %d steps" % (name, len(rec.steps)), file=sys.stderr)
        if not a.no_delay and not a.cases:
            runs = cases.measure_exit_delay(t)
            delays = [r["exit_to_terminated_s"] for r in runs]
            lags = [r["terminated_to_phase_s"] for r in runs]
            write(os.path.join(a.out, "exit_delay.json"), {
                "about": "Seconds between a container's exit (its own /proc/uptime stamp) and "
                         "the watch event that shows it terminated, and from that to the "
                         "terminal phase. The kubelet sees a container's changes at its next "
                         "relist (every second), so the delay is 1 s minus where in the "
                         "relist period the exit fell.",
                "recorded_from": version, "runs": runs,
                "summary": {"exit_to_terminated_max_s": max(delays),
                            "exit_to_terminated_min_s": min(delays),
                            "terminated_to_phase_median_s": statistics.median(lags)}})
            print("  exit delay: %s s; phase lag %s s" % (delays, lags), file=sys.stderr)
    finally:
        t.cleanup()
    for name, text in sorted(errors.items()):
        print("case %s failed:\n%s" % (name, text), file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
