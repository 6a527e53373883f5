"""scripts/realkube's own promises (root; part of `make realkube-test`, run before the tier,
as they stop the cluster):

  * `stop` leaves nothing behind: no process, mount, address, route, bridge, iptables chain
    or rule, ipset, and the kernel settings as they were; also after a `start` that failed;
  * a port already held stops `start` before anything starts, naming the component, the
    port and the process that holds it;
  * a component that exits while starting fails `start` with its name and its log, and the
    cluster is never reported running;
  * scripts/build-peers.sh without Go, or without the module proxy, says so and how to fix it.

A cluster that was running before these tests is started again at the end."""
import os
import re
import shutil
import socket
import stat
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REALKUBE = os.environ.get("REALKUBE", os.path.join(ROOT, "scripts", "realkube"))
BUILD_PEERS = os.path.join(ROOT, "scripts", "build-peers.sh")
STATE = os.environ.get("REALKUBE_DIR", "/var/lib/realkube")
SYSCTLS = ["net/ipv4/ip_forward", "net/ipv4/conf/all/route_localnet",
           "net/bridge/bridge-nf-call-iptables", "vm/overcommit_memory", "kernel/panic",
           "kernel/panic_on_oops"]


def run(*args, env=None, timeout=900):
    return subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, env=env)


def text(r):
    return r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")


def host_state():
    """What realkube may change on the host, normalized: a dict of comparable parts."""
    st = {}
    for tool in ("iptables", "ip6tables"):
        for table in ("filter", "nat", "mangle", "raw"):
            r = run(tool, "-w", "5", "-t", table, "-S")
            st["%s/%s" % (tool, table)] = sorted(r.stdout.decode().splitlines())
    st["ipsets"] = sorted(run("ipset", "list", "-n").stdout.decode().split())
    st["addresses"] = sorted(l.split()[3] for l in run("ip", "-o", "addr").stdout.decode()
                             .splitlines())
    st["routes"] = sorted(run("ip", "route", "show", "table", "all").stdout.decode()
                          .splitlines())
    st["links"] = sorted(l.split(":")[1].strip().split("@")[0] for l in
                         run("ip", "-o", "link").stdout.decode().splitlines())
    with open("/proc/mounts") as f:
        st["mounts"] = sorted(l.split()[1] for l in f if STATE + "/" in l.split()[1])
    st["processes"] = sorted(processes_of_state())
    for k in SYSCTLS:
        p = "/proc/sys/" + k
        if os.path.exists(p):
            with open(p) as f:
                st["sysctl " + k] = f.read().strip()
    return st


def processes_of_state():
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cl = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if STATE + "/" in cl and "pytest" not in cl:
            out.append(cl[:120])
    return out


def assert_nothing_left(before):
    after = host_state()
    leftovers = {}
    for k in after:
        if k in ("processes", "mounts", "ipsets"):
            extra = [x for x in after[k] if x not in before.get(k, [])]
        elif k.startswith("sysctl"):
            extra = [] if after[k] == before.get(k) else ["%s != %s" % (after[k], before.get(k))]
        else:
            extra = [x for x in after[k] if x not in before.get(k, [])]
        if extra:
            leftovers[k] = extra
    # whatever the baseline held: none of realkube's names may be there after a stop
    names = re.compile(r"KUBE-|REALKUBE-|kube-router|realkube0|10\.245\.0\.1|10\.96\.0\.0/12")
    for k, v in after.items():
        if isinstance(v, list):
            bad = [x for x in v if names.search(x)]
            if bad:
                leftovers.setdefault(k + " (realkube's names)", bad)
    assert not leftovers, "left behind after stop: %s" % leftovers


def status():
    return run(REALKUBE, "status").returncode


@pytest.fixture(scope="module")
def stopped():
    """The cluster stopped, and the host's state then; restarted at the end if it ran."""
    was_running = status() != 3
    r = run(REALKUBE, "stop")
    assert r.returncode == 0, text(r)
    yield host_state()
    if was_running:
        r = run(REALKUBE, "start")
        assert r.returncode == 0, text(r)


def test_start_then_stop_leaves_the_host_as_it_was(stopped):
    r = run(REALKUBE, "start")
    try:
        assert r.returncode == 0, text(r)
        assert status() == 0
        assert host_state() != stopped, "a running cluster changed nothing on the host?"
    finally:  # a failed start leaves what did start up: the next tests need it stopped
        r = run(REALKUBE, "stop")
    assert r.returncode == 0, text(r)
    assert status() == 3
    assert_nothing_left(stopped)


def test_a_port_already_held_stops_start_before_anything_starts(stopped):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 10259))  # kube-scheduler's
        s.listen(1)
        r = run(REALKUBE, "start")
    out = text(r)
    assert r.returncode != 0, out
    assert "kube-scheduler: port tcp/10259" in out and "pid %d" % os.getpid() in out, out
    assert status() == 3, "a start refused for a held port started something"
    r = run(REALKUBE, "stop")
    assert r.returncode == 0, text(r)
    assert_nothing_left(stopped)


def test_a_component_that_exits_while_starting_is_named_with_its_log(stopped, tmp_path):
    # the real binaries, but a kube-controller-manager that exits at once
    bins = tmp_path / "bin"
    bins.mkdir()
    real = subprocess.run([BUILD_PEERS, "--dir", "kube"], stdout=subprocess.PIPE,
                          check=True).stdout.decode().strip()
    for b in ("kube-apiserver", "kube-scheduler", "kubelet", "kube-proxy"):
        os.symlink(os.path.join(real, b), str(bins / b))
    fake = bins / "kube-controller-manager"
    fake.write_text("#!/bin/sh\necho 'controller-manager broken on purpose' >&2\nexit 3\n")
    fake.chmod(0o755)
    r = run(REALKUBE, "start", env=dict(os.environ, REALKUBE_BIN_DIR=str(bins)))
    out = text(r)
    try:
        assert r.returncode != 0, out
        assert "kube-controller-manager exited while starting" in out, out
        assert "controller-manager broken on purpose" in out, out  # the log's tail
        assert "%s/log/kube-controller-manager.log" % STATE in out, out
        assert "the cluster is NOT running" in out, out
        st = run(REALKUBE, "status")
        assert st.returncode == 1 and "realkube: degraded" in text(st), text(st)
    finally:
        r = run(REALKUBE, "stop")
    assert r.returncode == 0, text(r)
    assert_nothing_left(stopped)
    # the next start takes the real binaries back
    r = run(REALKUBE, "start")
    try:
        assert r.returncode == 0, text(r)
    finally:
        r = run(REALKUBE, "stop")
    assert r.returncode == 0, text(r)


def test_build_peers_without_go_names_it(tmp_path):
    go = shutil.which("go")
    assert go, "the tests need Go on PATH"
    path = ":".join(d for d in os.environ["PATH"].split(":")
                    if not os.path.exists(os.path.join(d, "go")))
    r = run("/bin/bash", BUILD_PEERS, "kube", env=dict(os.environ, PATH=path,
                                                        KRMPOD_PEERS_DIR=str(tmp_path)))
    assert r.returncode == 1, text(r)
    assert "no 'go' on PATH" in text(r) and "install Go" in text(r), text(r)


def test_build_peers_without_the_module_proxy_says_so(tmp_path):
    env = dict(os.environ, KRMPOD_PEERS_DIR=str(tmp_path / "out"),
               GOMODCACHE=str(tmp_path / "modcache"), GOPROXY="http://127.0.0.1:9")
    r = run(BUILD_PEERS, "kube-router", env=env, timeout=300)
    out = text(r)
    assert r.returncode == 1, out
    assert "kube-router: the Go module proxy could not be reached" in out, out
    assert "GOPROXY (http://127.0.0.1:9)" in out, out
    assert not (tmp_path / "out" / "kube-router" / ".stamp").exists()
    # go leaves its module cache read-only
    for dirpath, dirs, _ in os.walk(str(tmp_path / "modcache")):
        for d in dirs:
            os.chmod(os.path.join(dirpath, d), stat.S_IRWXU)
