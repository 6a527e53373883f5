"""Exec mode on an image's own entrypoint (issue 29, item 1; docs/internals/exec-mode.md):
when krmpod cannot read a function image's config and no admin catalog records its
entrypoint, the pod's function container runs the image's entrypoint, held on its stdin
(never attached), and krmpod's call runs what that process (PID 1) runs: its command line,
environment and working directory. The output goes through the call's counted streams and
trailer, never the container log; what PID 1 wrote while it waited must be what the call's
run wrote first, else the render fails. kubesim gives such a container its own PID
namespace (as a runtime does), so these tests need root."""
import json
import os
import re

import pytest

from conftest import KUSTOMIZE_RUN, base_env, exec_settings, no_sanitizer_reports, run_shim

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="kubesim needs root for a PID namespace")

UNREACHABLE = "example.com=127.0.0.1:1"  # a mirror that refuses: no image config


def env_of(kubesim, tmp_path, **extra):
    env = dict(exec_settings(), KRMPOD_MODE="exec", KRMPOD_REGISTRY_MIRRORS=UNREACHABLE,
               KRMPOD_CACHE_DIR=str(tmp_path / "cache"), KRMPOD_LOG_LEVEL="debug")
    env.update(extra)
    return base_env(kubesim, **env)


def specs(stderr):
    return [json.loads(l.split("pod spec: ", 1)[1]) for l in stderr.decode().splitlines()
            if "pod spec: " in l]


def streams(kubesim, before):
    return sorted({s for l in kubesim.requests()[before:] for s in ("exec", "attach", "log")
                   if "/%s?" % s in l})


def test_the_images_own_entrypoint_gives_exact_output_and_early_stderr_once(kubesim, tmp_path):
    """args, -e and the working directory reach the call's run as they reached PID 1; the
    early line is on stderr once (the call's; PID 1's stays in the log, which only checks
    it); ~200 KB of stdout byte for byte; no attach."""
    stdin = b"apiVersion: v1\nkind: ResourceList\nitems: []\n"
    want = stdin + b"".join(b"# line %06d of the padding, 64 bytes long....................\n"
                            % i for i in range(200 * 16))
    before = len(kubesim.requests())
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["-e", "EARLY_SAY=hello there", "-e", "EARLY_KIB=200",
                                           "example.com/fns/early-say:v1", "--flag", "a b"],
                 stdin=stdin, env=env_of(kubesim, tmp_path, KRMPOD_LOG_LEVEL="info"), timeout=120)
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert r.stdout == want, (len(r.stdout), len(want))
    early = [l for l in err.splitlines() if l.startswith("early-say: ")]
    assert len(early) == 1, err
    assert early[0].startswith("early-say: args=['--flag', 'a b'] cwd=") and \
        early[0].endswith(" say=hello there"), early
    assert "runs in exec mode (KRMPOD_MODE=exec) on its image's own entrypoint" in err, err
    assert streams(kubesim, before) == ["exec", "log"], kubesim.requests()[before:]
    no_sanitizer_reports(r.stderr)
    # the pod: the entrypoint with the args and env, held on stdin, beside krmpod
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["-e", "EARLY_SAY=x", "example.com/fns/early-say:v1",
                                           "--flag", "a b"],
                 stdin=stdin, env=env_of(kubesim, tmp_path))
    assert r.returncode == 0, r.stderr.decode()
    [spec] = specs(r.stderr)
    fn = [c for c in spec["spec"]["containers"] if c["name"] == "fn"][0]
    assert "command" not in fn and fn["args"] == ["--flag", "a b"], fn
    assert fn["stdin"] is True and fn["stdinOnce"] is False, fn
    assert {"name": "EARLY_SAY", "value": "x"} in fn["env"], fn
    assert [c["name"] for c in spec["spec"]["containers"]] == ["krmpod", "fn"], spec


def test_a_wrapper_that_wrote_and_then_exec_d_another_program_fails_closed(kubesim, tmp_path):
    """stderr-first is `echo …; exec /bin/cat`: PID 1 is cat by the time of the call, and the
    line its wrapper wrote is in the log only. Running cat would drop that line, so the
    render fails, naming the image and what would give krmpod the entrypoint."""
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/stderr-first:v1"], stdin=b"a: 1\n",
                 env=env_of(kubesim, tmp_path))
    err = r.stderr.decode()
    assert r.returncode != 0, err
    assert "function example.com/fns/stderr-first:v1: pod " in err, err
    assert "the function's own process (PID 1, started from its image's entrypoint) wrote 31 " \
           "bytes before krmpod's call that the call's run did not write first on its " \
           "stderr" in err, err
    assert "record the image's entrypoint in an admin catalog" in err, err
    no_sanitizer_reports(r.stderr)


def test_an_entrypoint_that_does_not_wait_for_stdin_fails_closed(kubesim, tmp_path):
    """quick-exit ends at once: PID 1 is gone before (or while) the call runs; never exit 0."""
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/quick-exit:v1"], stdin=b"a: 1\n",
                 env=env_of(kubesim, tmp_path))
    err = r.stderr.decode()
    assert r.returncode != 0 and r.stdout == b"", err
    assert "example.com/fns/quick-exit:v1" in err, err
    no_sanitizer_reports(r.stderr)


def test_a_working_directory_that_pid_1_removed_fails_the_call_by_name(kubesim, tmp_path):
    """The call runs PID 1's command in PID 1's working directory; when that directory is
    gone (the entrypoint entered one and removed it), running there is impossible: the call
    fails (126) naming the directory, and nothing is printed. The exec is held back 2 s so
    that the entrypoint surely removed its directory before the call reads PID 1 (read any
    earlier, the call would run where PID 1 started, and remove its own)."""
    kubesim.faults(http_delays=[{"ms": 2000, "count": 1, "path_contains": "/exec"}])
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["-e", "EARLY_CWD_GONE=1",
                                           "example.com/fns/early-say:v1"], stdin=b"a: 1\n",
                 env=env_of(kubesim, tmp_path, KRMPOD_LOG_LEVEL="info"))
    err = r.stderr.decode()
    assert r.returncode == 126 and r.stdout == b"", err
    assert re.search(r"krmpod call: cannot enter /tmp/early-say-\S+ \(deleted\), the working "
                     r"directory of PID 1: No such file or directory", err), err
    no_sanitizer_reports(r.stderr)


def test_the_log_is_read_once_the_status_shows_the_container_started(kubesim, tmp_path):
    """A real kubelet's Started event comes up to a relist before the pod status, and the
    exec can run then; the API server refuses the log of a container its status does not
    show started (400 "is waiting to start"). krmpod asks again until it can read it (the
    real cluster's first render failed here). The status lags 3 s behind the start here, every
time (with the relist's ticks alone, a tick right after the start made it a matter of
chance)."""
    kubesim.faults(start_status_lag_ms=3000)
    r = run_shim(kubesim, KUSTOMIZE_RUN + ["example.com/fns/early-say:v1"], stdin=b"a: 1\n",
                 env=env_of(kubesim, tmp_path))
    err = r.stderr.decode()
    assert r.returncode == 0 and r.stdout == b"a: 1\n", err
    assert "its log is not readable yet: " in err and "is waiting to start" in err, err
    no_sanitizer_reports(r.stderr)


def test_a_run_without_i_stays_in_attach_mode_and_says_why(kubesim, tmp_path):
    """docker gives a run without -i an empty stdin, so its entrypoint would not wait for a
    call (`kpt fn doc`'s `--help`): attach mode, said with the reason."""
    r = run_shim(kubesim, ["run", "--rm", "example.com/fns/with-help:v1", "--help"],
                 env=env_of(kubesim, tmp_path, KRMPOD_ATTACH_UNVERIFIED="allow"))
    err = r.stderr.decode()
    assert "example.com/fns/with-help:v1 runs in attach mode: its image config cannot be read (" \
        in err, err
    assert "and run without -i its entrypoint would not wait on its stdin for krmpod's call" \
        in err, err
    assert "on its image's own entrypoint" not in err, err
