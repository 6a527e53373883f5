"""Argo CD's deadline kill, as its CMP server does it (the stand-in's `run --timeout-ms`):
SIGKILL to `krmpod generate` at once and SIGTERM to its process group, SIGKILL to the group
5 s later. Within those 5 s every function pod must be gone from the real API server."""
import threading
import time

from apps import fn_app
from conftest import FN_NS, pod_summary


def test_deadline_kill_leaves_no_function_pod(install, tmp_path):
    app = fn_app(tmp_path, "sleep")
    mark = install.recorder.mark()
    proc = install.sidecar.start_render(app, timeout_ms=5000)
    lines = []

    def read():
        for line in iter(proc.stderr.readline, b""):
            lines.append((time.monotonic(), line.decode(errors="replace")))
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    out = proc.stdout.read()
    rc = proc.wait(timeout=60)
    reader.join(timeout=10)
    err = "".join(l for _, l in lines)
    kill = [t for t, l in lines if "deadline of 5000 ms exceeded" in l]
    assert kill, "the deadline never struck (exit %d):\n%s" % (rc, err)
    kill_t = kill[0]
    assert rc == 137, (rc, err)  # SIGKILLed, as Argo CD reports it
    assert out == b"", out
    # a function pod was running when the deadline struck (else this proves nothing)
    install.recorder.settle()
    pods = install.recorder.pods_since(mark)
    running = [p for p in pods.values()
               if any((o.get("status") or {}).get("phase") == "Running" and t < kill_t
                      for t, _, o in p["events"])]
    assert running, "no function pod ran before the deadline: %s" % [
        pod_summary(p) for p in pods.values()]
    # and 5 s later none is left
    while time.monotonic() < kill_t + 5 and install.api.pods(FN_NS):
        time.sleep(0.1)
    left = install.api.pods(FN_NS)
    assert left == [], "pods left 5 s after the kill: %s\nstderr:\n%s" % (
        [p["metadata"]["name"] for p in left], err)
    gone = {p["name"]: round(p["deleted_at"] - kill_t, 2) for p in pods.values()
            if p["deleted_at"]}
    print("pods deleted this many seconds after the kill: %s" % gone)
