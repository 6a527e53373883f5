"""tests/arm64: the linux/arm64 build (build/arm64/krmpod, release/arm64.mk) run under
qemu-user against kubesim, every run compared byte for byte with the amd64 build/krmpod's run
of the same input (`make arm64-test`).

The harness is tests/integration/conftest.py's: its kubesim fixtures and helpers are loaded
from there (under another module name, as both files are conftest.py) and re-exported, with
KRMPOD_BIN the amd64 binary (which also stands behind kubesim's helper image, so the in-pod
side of exec mode runs amd64: kubesim runs a container as a host process).

qemu-aarch64-static is invoked explicitly, never through binfmt_misc: the arm64 binary runs as
`qemu-aarch64-static -0 ARGV0 build/arm64/krmpod ...`. kustomize cannot exec an arm64 file
itself, so `generate` gets KRMPOD_SHIM_DIR (as the shipped image sets it) with a `docker` that
runs the arm64 binary under qemu; the amd64 run gets a `docker` symlink to build/krmpod.

    KRMPOD_BIN        the amd64 build (default build/krmpod)
    KRMPOD_ARM64_BIN  the arm64 build (default build/arm64/krmpod)
    KRMPOD_QEMU       the emulator (default qemu-aarch64-static)
"""
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ.setdefault("KRMPOD_BIN", os.path.join(ROOT, "build", "krmpod"))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


it = _load("krmpod_integration_conftest", os.path.join(ROOT, "tests", "integration", "conftest.py"))
# The fixtures and helpers, under their own names (pytest finds fixtures by attribute).
globals().update({k: v for k, v in vars(it).items() if not k.startswith("_") and k not in ("os", "sys", "pytest")})

AMD64_BIN = it.KRMPOD_BIN
ARM64_BIN = os.path.abspath(os.environ.get("KRMPOD_ARM64_BIN", os.path.join(ROOT, "build", "arm64", "krmpod")))
QEMU = os.environ.get("KRMPOD_QEMU", "qemu-aarch64-static")
# ELF e_machine (offset 18, little endian) of each build.
EM_X86_64, EM_AARCH64 = 62, 183


def elf_machine(path):
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little")


@pytest.fixture(scope="session", autouse=True)
def binaries():
    """Both builds are there and are what they claim (an arm64 run must not be an amd64 one in
    disguise), and qemu is installed; otherwise the session stops, naming the fix."""
    for path, machine, what, fix in (
            (AMD64_BIN, EM_X86_64, "the amd64 build", "make build/krmpod"),
            (ARM64_BIN, EM_AARCH64, "the arm64 build", "make build/arm64/krmpod")):
        if not os.path.isfile(path):
            pytest.exit("%s %s does not exist: run `%s` (or `make arm64-test`)" % (what, path, fix), 2)
        got = elf_machine(path)
        if got != machine:
            pytest.exit("%s %s is not an ELF file for machine %d (e_machine %s): run `%s`"
                        % (what, path, machine, got, fix), 2)
    if not shutil.which(QEMU):
        pytest.exit("%s is not installed: run scripts/install-cross-deps.sh" % QEMU, 2)
    return AMD64_BIN, ARM64_BIN


_SHIMS = {}


def shim_dirs():
    """{arch: a KRMPOD_SHIM_DIR whose `docker` runs that build}, made once per session."""
    if not _SHIMS:
        base = tempfile.mkdtemp(prefix="krmpod-arm64-shims-")
        import atexit
        atexit.register(shutil.rmtree, base, True)
        amd, arm = os.path.join(base, "amd64"), os.path.join(base, "arm64")
        os.mkdir(amd)
        os.mkdir(arm)
        os.symlink(AMD64_BIN, os.path.join(amd, "docker"))
        with open(os.path.join(arm, "docker"), "w") as f:
            f.write("#!/bin/sh\n# the arm64 krmpod as `docker`, under qemu-user (tests/arm64)\n"
                    "echo \"$1\" >>'%s'\n"
                    "exec '%s' -0 docker '%s' \"$@\"\n"
                    % (os.path.join(base, "arm64-calls"), shutil.which(QEMU), ARM64_BIN))
        os.chmod(os.path.join(arm, "docker"), 0o755)
        _SHIMS.update(amd64=amd, arm64=arm)
    return dict(_SHIMS)


def arm64_shim_calls():
    """How many times the arm64 `docker` ran so far (each run appends its first argument)."""
    try:
        with open(os.path.join(os.path.dirname(shim_dirs()["arm64"]), "arm64-calls")) as f:
            return len(f.read().splitlines())
    except FileNotFoundError:
        return 0


def argv_for(arch, argv0, args):
    """The command line that runs a build as ARGV0 ARGS (argv0 `docker`: the shim)."""
    if arch == "arm64":
        return [shutil.which(QEMU), "-0", argv0, ARM64_BIN] + list(args)
    if argv0 == "docker":
        return [os.path.join(shim_dirs()["amd64"], "docker")] + list(args)
    return [AMD64_BIN] + list(args)


def run(arch, args, env, argv0="krmpod", stdin=b"", cwd=None, timeout=180):
    """Runs one build (arch amd64 or arm64) and returns its CompletedProcess (bytes). The arm64
    build gets its qemu `docker` as KRMPOD_SHIM_DIR, the amd64 build its symlink."""
    env = dict(env, KRMPOD_SHIM_DIR=shim_dirs()[arch])
    return subprocess.run(argv_for(arch, argv0, args), input=stdin, env=env, cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                          start_new_session=True)


def run_both(args, env, **kw):
    """(amd64, arm64) runs of the same command, one after the other."""
    return run("amd64", args, env, **kw), run("arm64", args, env, **kw)
