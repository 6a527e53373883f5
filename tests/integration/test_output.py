"""Output that cannot be written is a failure: a command whose stdout is a full disk
(/dev/full: ENOSPC) or a pipe nobody reads (EPIPE) exits non-zero and says so on stderr,
never 0 with its output lost (discover, catalog view, help, version; generate writes its
manifests with its own checked writes)."""
import os
import subprocess

from conftest import KRMPOD_BIN, ROOT

APP = os.path.join(ROOT, "tests", "fixtures", "kustomize", "transform-generate")
COMMANDS = [["discover"], ["catalog", "view", APP], ["version"], ["help"]]


def run_to(stdout, args):
    return subprocess.run([KRMPOD_BIN] + args, cwd=APP, stdout=stdout, stderr=subprocess.PIPE,
                          env={"PATH": os.environ["PATH"]}, timeout=60)


def test_each_command_writes_something_when_stdout_works():
    for args in COMMANDS:
        r = subprocess.run([KRMPOD_BIN] + args, cwd=APP, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env={"PATH": os.environ["PATH"]}, timeout=60)
        assert r.returncode == 0 and r.stdout, (args, r.stderr.decode())


def test_a_full_disk_fails_the_command():
    for args in COMMANDS:
        with open("/dev/full", "wb") as full:
            r = run_to(full, args)
        err = r.stderr.decode()
        assert r.returncode == 1, (args, r.returncode, err)
        assert "writing to stdout failed: No space left on device" in err, (args, err)


def test_a_reader_that_went_away_fails_the_command():
    for args in COMMANDS:
        rd, wr = os.pipe()
        os.close(rd)
        try:
            r = run_to(wr, args)
        finally:
            os.close(wr)
        err = r.stderr.decode()
        assert r.returncode == 1, (args, r.returncode, err)
        assert "writing to stdout failed: Broken pipe" in err, (args, err)
