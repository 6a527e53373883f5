"""The warm pool (docs/internals/warm-pool.md) on kubesim: exec-mode pods kept for the next
call, leased through the API server with a JSON patch that tests the lease. Reuse and
byte-exact output, what a call leaves for the next (nothing), two callers and one idle pod,
a holder killed with SIGKILL, the TTL, the size and the cap, failures retire their pod, and
generate's prestart filling the pool. Each test ends with `krmpod gc` emptying the pool,
so kubesim holds no pod afterwards (the fixture checks)."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import KRMPOD_BIN, KUSTOMIZE_RUN, base_env, fn_container, exec_settings, run_shim, shim_link
from test_generate import cmp_env, fn_app, generate

POOLED = "example.com/fns/*"


def pool_env(kubesim, **extra):
    settings = dict(exec_settings(), KRMPOD_WARM_POOL="true", KRMPOD_WARM_POOL_IMAGES=POOLED)
    settings.update(extra)
    return base_env(kubesim, **settings)


def pool_pods(kubesim):
    return [p for p in kubesim.api_pods() if "krmpod.dev/pool" in p["metadata"]["labels"]]


def state(pod):
    return pod["metadata"]["labels"]["krmpod.dev/pool-state"]


def gc(kubesim, **extra):
    r = subprocess.run([shim_link("krmpod"), "gc"], env=pool_env(kubesim, **extra),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode() + r.stderr.decode()


@pytest.fixture
def pool(kubesim):
    """kubesim, and the pool emptied by krmpod gc at the end (a 1 ms TTL retires every
    idle pod)."""
    yield kubesim
    gc(kubesim, KRMPOD_WARM_POOL_TTL="1ms")
    left = pool_pods(kubesim)
    assert left == [], "gc left pool pods: %s" % [p["metadata"]["name"] for p in left]


def summary(r):
    m = re.search(rb"pod=(\S+): image=\S+ .* exit=(-?\d+) requests=(\d+)", r.stderr)
    assert m, r.stderr.decode()
    return m.group(1).decode(), int(m.group(2)), int(m.group(3))


def creates(kubesim, before):
    return [l for l in kubesim.requests()[before:] if " POST " in l and "/pods?" in l]


def test_a_second_call_reuses_the_pod(pool):
    data = b"".join(b"- item %05d\n" % i for i in range(5000))
    before = len(pool.requests())
    first = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=data,
                     env=pool_env(pool, KRMPOD_LOG_LEVEL="debug"))
    assert first.returncode == 0 and first.stdout == data, first.stderr.decode()
    pod1, _, _ = summary(first)
    assert b"created now" in first.stderr
    [p] = pool_pods(pool)
    assert p["metadata"]["name"] == pod1 and state(p) == "idle", p["metadata"]
    assert "krmpod.dev/lease-holder" not in p["metadata"]["annotations"]
    assert fn_container(p["spec"], exec_mode=True)["securityContext"][
        "readOnlyRootFilesystem"] is True
    assert "ownerReferences" not in p["metadata"]  # shared by every replica
    second = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=data,
                      env=pool_env(pool, KRMPOD_LOG_LEVEL="debug"))
    assert second.returncode == 0 and second.stdout == data, second.stderr.decode()
    pod2, code, requests = summary(second)
    assert pod2 == pod1 and code == 0
    assert b"taken from the warm pool" in second.stderr
    # the list, the lease, the exec and the lease given back
    assert requests == 4, second.stderr.decode()
    assert len(creates(pool, before)) == 1
    assert [state(p) for p in pool_pods(pool)] == ["idle"]


def test_nothing_of_a_call_reaches_the_next(pool):
    env = pool_env(pool)
    for i in range(3):
        r = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/home-probe:v1"],
                     stdin=b"x%d" % i, env=env)
        assert r.returncode == 0 and r.stdout == b"x%d" % i, r.stderr.decode()
        err = r.stderr.decode()
        assert "home-probe: HOME=[]" in err and "home-probe: TMPDIR=[]" in err, err
        around = re.search(r"home-probe: around=\[(.*)\]", err).group(1).split()
        assert len(around) == 1 and around[0].startswith("call-"), err  # its own HOME only
    assert len(pool_pods(pool)) == 1  # the same pod all three times


def test_two_callers_never_share_a_pod(pool):
    env = pool_env(pool)
    r = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"warm", env=env)
    assert r.returncode == 0, r.stderr.decode()
    [idle] = pool_pods(pool)
    # two calls at once, each holding its pod until its stdin closes
    procs = [subprocess.Popen([shim_link()] + KUSTOMIZE_RUN + ["example.com/fns/cat:v1"],
                              env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(2)]
    deadline = time.time() + 20
    while time.time() < deadline and sum(state(p) == "busy" for p in pool_pods(pool)) < 2:
        time.sleep(0.05)
    busy = [p for p in pool_pods(pool) if state(p) == "busy"]
    assert len(busy) == 2, [p["metadata"] for p in pool_pods(pool)]
    holders = {p["metadata"]["annotations"]["krmpod.dev/lease-holder"] for p in busy}
    assert len(holders) == 2, holders
    outs = [p.communicate(b"call %d" % i, timeout=30) for i, p in enumerate(procs)]
    for i, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0 and out == b"call %d" % i, err.decode()
    names = {summary(subprocess.CompletedProcess([], 0, o, e))[0] for o, e in outs}
    assert len(names) == 2 and idle["metadata"]["name"] in names, names


def test_a_killed_holder_s_pod_is_retired_after_its_lease(pool):
    env = pool_env(pool, KRMPOD_TIMEOUT="2s")
    proc = subprocess.Popen([shim_link()] + KUSTOMIZE_RUN + ["example.com/fns/cat:v1"],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 20
    while time.time() < deadline and not [p for p in pool_pods(pool) if state(p) == "busy"]:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    [p] = pool_pods(pool)
    assert state(p) == "busy"
    until = int(p["metadata"]["annotations"]["krmpod.dev/lease-until"])
    # within the lease gc keeps it (its holder may still be at work)...
    out = gc(pool)
    assert [q["metadata"]["name"] for q in pool_pods(pool)] == [p["metadata"]["name"]], out
    # ...after it, the pod goes
    time.sleep(max(0, until / 1000 - time.time()) + 0.5)
    out = gc(pool)
    assert "its lease ran out (the holder died)" in out, out
    assert pool_pods(pool) == []


def test_ttl_size_and_cap(pool):
    env = pool_env(pool, KRMPOD_WARM_POOL_SIZE="1", KRMPOD_WARM_POOL_MAX="2")
    procs = []
    for i in range(3):  # three calls running at once, started one after the other
        procs.append(subprocess.Popen([shim_link()] + KUSTOMIZE_RUN + ["example.com/fns/cat:v1"],
                                      env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
        deadline = time.time() + 20
        while time.time() < deadline and len([p for p in pool.api_pods()
                                              if p["status"].get("phase") == "Running"]) <= i:
            time.sleep(0.05)
    # only two pool pods (the cap); the third call got an ordinary pod
    assert len(pool.api_pods()) == 3 and len(pool_pods(pool)) == 2, \
        [p["metadata"]["name"] for p in pool.api_pods()]
    for i, p in enumerate(procs):
        out, err = p.communicate(b"%d" % i, timeout=30)
        assert p.returncode == 0 and out == b"%d" % i, err.decode()
    # each was given back (its pool had no idle pod when it took it): two idle, one more
    # than KRMPOD_WARM_POOL_SIZE, which the janitor trims; within the TTL the other stays
    assert [state(p) for p in pool_pods(pool)] == ["idle", "idle"], pool_pods(pool)
    out = gc(pool, KRMPOD_WARM_POOL_SIZE="1")
    assert "beyond KRMPOD_WARM_POOL_SIZE idle pods" in out, out
    assert len(pool_pods(pool)) == 1, out
    time.sleep(0.3)
    out = gc(pool, KRMPOD_WARM_POOL_SIZE="1", KRMPOD_WARM_POOL_TTL="200ms")
    assert "idle past KRMPOD_WARM_POOL_TTL" in out and pool_pods(pool) == [], out


def test_the_cap_counts_the_pods_of_every_key(pool):
    """KRMPOD_WARM_POOL_MAX bounds the pool pods of the namespace, whatever their keys: each
    Application (or each new value of a pod setting) is a key of its own, and idle pods of
    many keys must not hold the whole quota. Two keys fill a cap of 2; a third key's call
    gets an ordinary pod, deleted after it."""
    def call(app):
        r = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"x",
                     env=pool_env(pool, KRMPOD_WARM_POOL_MAX="2", KRMPOD_LOG_LEVEL="debug",
                                  ARGOCD_APP_NAME=app))
        assert r.returncode == 0 and r.stdout == b"x", r.stderr.decode()
        return summary(r)[0]
    a, b = call("a"), call("b")
    assert sorted(p["metadata"]["name"] for p in pool_pods(pool)) == sorted([a, b])
    keys = {p["metadata"]["labels"]["krmpod.dev/pool"] for p in pool_pods(pool)}
    assert len(keys) == 2, keys
    c = call("c")
    assert c not in (a, b)
    assert sorted(p["metadata"]["name"] for p in pool.api_pods()) == sorted([a, b])


def test_makers_racing_past_the_cap_keep_no_more_than_it(pool):
    """Two callers find the pool empty with room for one pod, and both make one (their
    creates held back until both have counted): the pool must not keep more than
    KRMPOD_WARM_POOL_MAX. Each counts again after its create, sees two, serves its call and
    retires its pod."""
    env = pool_env(pool, KRMPOD_WARM_POOL_MAX="1")
    pool.faults(http_delays=[{"ms": 1000, "count": 2, "method": "POST",
                              "path_contains": "/pods"}])
    procs = [subprocess.Popen([shim_link()] + KUSTOMIZE_RUN + ["example.com/fns/cat:v1"],
                              env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(2)]
    errs = []
    for i, p in enumerate(procs):
        out, err = p.communicate(b"%d" % i, timeout=30)
        assert p.returncode == 0 and out == b"%d" % i, err.decode()
        errs.append(err.decode())
    assert len(pool_pods(pool)) <= 1, [p["metadata"]["name"] for p in pool_pods(pool)]
    retired = [e for e in errs if "over KRMPOD_WARM_POOL_MAX=1 after a concurrent create" in e]
    assert retired, errs


def test_a_failed_call_retires_its_pod(pool):
    env = pool_env(pool)
    r = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/fail:v1"], stdin=b"x", env=env)
    assert r.returncode == 3 and b"fail: boom" in r.stderr, r.stderr.decode()
    assert pool_pods(pool) == []


def test_images_the_pool_does_not_take_get_pods_of_their_own(pool):
    env = pool_env(pool, KRMPOD_WARM_POOL_IMAGES="registry.example.co/*")
    r = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"x", env=env)
    assert r.returncode == 0, r.stderr.decode()
    assert pool_pods(pool) == [] and pool.api_pods() == []


def test_generate_fills_the_pool_and_a_second_render_creates_nothing(pool, tmp_path):
    app = fn_app(tmp_path, "example.com/fns/cat:v1")
    env = cmp_env(pool, tmp_path, **dict(exec_settings(), KRMPOD_WARM_POOL="true",
                                          KRMPOD_WARM_POOL_IMAGES=POOLED))
    first = generate(app, env)
    assert first.returncode == 0, first.stderr.decode()
    assert [state(p) for p in pool_pods(pool)] == ["idle"]
    before = len(pool.requests())
    second = generate(app, env)
    assert second.returncode == 0 and second.stdout == first.stdout, second.stderr.decode()
    assert creates(pool, before) == [], pool.requests()[before:]


def test_an_idempotent_catalog_entry_is_pooled(pool, tmp_path):
    """KEP-2906's `idempotent: true` is the catalog's word that a function may run again: a
    function generate resolved from such an entry goes to the pool without a pattern."""
    import registrylib
    from conftest import _EXEC
    from test_catalogs import admin_catalog, app_tree, catalog
    exec_settings()  # the registry serving the fixtures' image configs
    manifest, _ = _EXEC["registry"].image("add-label")
    entry = ("krmpod.test", "AddLabel", "v1", "example.com/fns/add-label:v1",
             {"sha256": registrylib.sha256_digest(manifest)[len("sha256:"):]})
    admin = admin_catalog(tmp_path, catalog("pooled", [entry]))
    app = app_tree(tmp_path, catalogs=())
    env = cmp_env(pool, tmp_path, **dict(exec_settings(), KRMPOD_WARM_POOL="true",
                                          KRMPOD_DEFAULT_CATALOGS=str(admin)))
    r = generate(app, env)
    assert r.returncode == 0, r.stderr.decode()
    assert b"team: platform" in r.stdout
    [p] = pool_pods(pool)
    assert p["metadata"]["annotations"]["krmpod.dev/image"].startswith(
        "example.com/fns/add-label@sha256:"), p["metadata"]
    # the same entry without `idempotent`: an ordinary pod, deleted after
    gc(pool, KRMPOD_WARM_POOL_TTL="1ms")
    doc = catalog("plain", [entry])
    doc["spec"]["krmFunctions"][0]["versions"][0]["idempotent"] = False
    admin = admin_catalog(tmp_path, doc, name="plain.yaml")
    r = generate(app, dict(env, KRMPOD_DEFAULT_CATALOGS=str(admin)))
    assert r.returncode == 0, r.stderr.decode()
    assert pool_pods(pool) == [] and pool.api_pods() == []


@pytest.mark.parametrize("settings,message", [
    ({"KRMPOD_MODE": "attach"}, "KRMPOD_WARM_POOL=true needs KRMPOD_MODE=exec"),
    ({"KRMPOD_WARM_POOL_SIZE": "0"}, "KRMPOD_WARM_POOL_SIZE=0 is not a number from 1 to 16"),
    ({"KRMPOD_WARM_POOL_MAX": "x"}, "KRMPOD_WARM_POOL_MAX=x is not a number from 1 to 1024"),
    ({"KRMPOD_WARM_POOL_TTL": "soon"}, "KRMPOD_WARM_POOL_TTL"),
    ({"KRMPOD_WARM_POOL_IMAGES": " , "}, "KRMPOD_WARM_POOL_IMAGES= , : \"\" is not an image pattern"),
])
def test_bad_pool_settings_are_named(pool, settings, message):
    r = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"x",
                 env=pool_env(pool, **settings))
    assert r.returncode == 125 and message.encode() in r.stderr, r.stderr.decode()
    assert pool.api_pods() == []


def test_a_render_leases_once_and_its_functions_share_the_pod(pool, tmp_path):
    """generate's prestart leases one pool pod per function pod key for the whole render
    and offers it to its shims; each gives it back to the render after a clean call, so
    three functions of one image make one pod, and a render's shims call through the
    render's session with it (one exec for the render), with no request of their own: a
    warm render's at once, a cold one's (the janitor made the pod) once the pod started."""
    app = tmp_path / "app3"
    app.mkdir()
    (app / "kustomization.yaml").write_text(
        "resources:\n- cm.yaml\ntransformers:\n- f0.yaml\n- f1.yaml\n- f2.yaml\n")
    (app / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\n")
    for i in range(3):
        (app / ("f%d.yaml" % i)).write_text(
            "apiVersion: krmpod.test/v1\nkind: Fn\nmetadata:\n  name: f%d\n  annotations:\n"
            "    config.kubernetes.io/function: |\n      container:\n"
            "        image: example.com/fns/cat:v1\n" % i)
    env = cmp_env(pool, tmp_path, **dict(exec_settings(), KRMPOD_WARM_POOL="true",
                                          KRMPOD_WARM_POOL_IMAGES=POOLED))
    before = len(pool.requests())
    first = generate(app, dict(env, KRMPOD_LOG_LEVEL="debug"))
    assert first.returncode == 0, first.stderr.decode()
    assert len(creates(pool, before)) == 1, pool.requests()[before:]
    [p] = pool_pods(pool)
    assert state(p) == "idle", p["metadata"]
    # a cold render: the janitor made the pod, and opened its session once it started
    lines = re.findall(rb"pod=(\S+): image=\S+ .* exit=0 requests=(\d+)", first.stderr)
    assert [(n.decode(), int(r)) for n, r in lines] == [(p["metadata"]["name"], 0)] * 3, \
        first.stderr.decode()
    assert first.stderr.count(b"session call: ") == 3, first.stderr.decode()
    before = len(pool.requests())
    second = generate(app, dict(env, KRMPOD_LOG_LEVEL="debug"))
    assert second.returncode == 0 and second.stdout == first.stdout, second.stderr.decode()
    assert creates(pool, before) == []
    # the shims' calls go through the render's session with the pod: no request of their own
    lines = re.findall(rb"pod=(\S+): image=\S+ .* exit=0 requests=(\d+)", second.stderr)
    assert [(n.decode(), int(r)) for n, r in lines] == [(p["metadata"]["name"], 0)] * 3, \
        second.stderr.decode()
    assert second.stderr.count(b"session call: ") == 3, second.stderr.decode()
    # the render's own requests: one list, one lease, one given back, and one exec (serve)
    reqs = [l for l in pool.requests()[before:] if "/kubesim/" not in l]
    assert len([l for l in reqs if " PATCH " in l]) == 2, reqs
    execs = [l for l in reqs if "/exec?" in l]
    assert len(execs) == 1 and "&command=serve&" in execs[0], reqs
    assert [state(p) for p in pool_pods(pool)] == ["idle"]


def test_a_render_cut_off_during_a_session_call_retires_the_pod(pool, tmp_path):
    """A call that never ends in the render's session: generate's deadline stops kustomize
    and its shim, the shim's connection ends before the call's end, the session breaks, and
    the pod (where the call may still run) is retired, not given back."""
    env = cmp_env(pool, tmp_path, **dict(exec_settings(), KRMPOD_WARM_POOL="true",
                                          KRMPOD_WARM_POOL_IMAGES=POOLED))
    quick = fn_app(tmp_path, "example.com/fns/slow-cat:v1", envs=["SLOW_SECONDS=0"],
                   name="quick")
    r = generate(quick, env)
    assert r.returncode == 0, r.stderr.decode()
    [p] = pool_pods(pool)
    assert state(p) == "idle"
    slow = fn_app(tmp_path, "example.com/fns/slow-cat:v1", envs=["SLOW_SECONDS=60"],
                  name="slow")
    r = generate(slow, dict(env, KRMPOD_GENERATE_TIMEOUT="4s", KRMPOD_LOG_LEVEL="debug"))
    err = r.stderr.decode()
    assert r.returncode != 0, err
    # generate's deadline, whether it or the shim's own (which ends with it) noticed first
    assert "KRMPOD_GENERATE_TIMEOUT (4000 ms) ran out" in err, err
    assert "did not end cleanly" in err, err
    assert pool_pods(pool) == [] or all(
        p["metadata"].get("deletionTimestamp") for p in pool_pods(pool)), pool_pods(pool)


def test_sigterm_during_a_session_call_retires_the_pod_at_once(pool, tmp_path):
    """Argo CD's kill sequence (SIGTERM to the process group) in the middle of a call through
    the render's session: generate ends, and the pod where the call ran is gone within
    seconds, not at its lease's end."""
    env = cmp_env(pool, tmp_path, **dict(exec_settings(), KRMPOD_WARM_POOL="true",
                                          KRMPOD_WARM_POOL_IMAGES=POOLED))
    quick = fn_app(tmp_path, "example.com/fns/slow-cat:v1", envs=["SLOW_SECONDS=0"],
                   name="quick")
    assert generate(quick, env).returncode == 0
    [p] = pool_pods(pool)
    slow = fn_app(tmp_path, "example.com/fns/slow-cat:v1", envs=["SLOW_SECONDS=60"],
                  name="slow")
    before = len(pool.requests())
    proc = subprocess.Popen([KRMPOD_BIN, "generate"], cwd=str(slow), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while not any("command=serve" in l for l in pool.requests()[before:]):
        assert time.monotonic() < deadline and proc.poll() is None, "no session was opened"
        time.sleep(0.05)
    time.sleep(1)  # the shim's call runs (it sleeps 60 s)
    os.killpg(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and out == b"", err.decode()
    t = time.monotonic()
    while any(x["metadata"]["name"] == p["metadata"]["name"] for x in pool.api_pods()):
        assert time.monotonic() - t < 3, (err.decode(), pool_pods(pool))
        time.sleep(0.05)


# A kustomize that runs the real one with a `docker` of its own first on PATH: the shim,
# with a stdin whose read fails (EISDIR: an open directory), for the session path's read
# error. The shim keeps its name (argv[0] `docker`) and its arguments.
BAD_STDIN_KUSTOMIZE = r"""#!/usr/bin/python3
import os, shutil, sys, tempfile
d = tempfile.mkdtemp(prefix="bad-stdin-")
shim = shutil.which("docker")
with open(os.path.join(d, "docker"), "w") as f:
    f.write("#!/usr/bin/python3\nimport os, sys\nfd = os.open('/', os.O_RDONLY)\n"
            "os.dup2(fd, 0)\nos.execv(%r, ['docker'] + sys.argv[1:])\n" % shim)
os.chmod(os.path.join(d, "docker"), 0o755)
os.environ["PATH"] = d + ":" + os.environ["PATH"]
args = sys.argv[1:]
os.execvp("kubectl", ["kubectl", "kustomize"] + (args[1:] if args[:1] == ["build"] else args))
"""


def test_a_stdin_read_error_on_the_session_path_fails_the_call(pool, tmp_path):
    """The shim's call through the render's session: its stdin cannot be read (EISDIR).
    The call fails naming stdin, as on the attach and single-exec paths, and the
    function never runs on a cut input taken for a whole one (the old code sent the end
    of stdin instead, and cat printed nothing); the pod is retired, not given back."""
    kz = tmp_path / "kustomize-bad-stdin"
    kz.write_text(BAD_STDIN_KUSTOMIZE)
    kz.chmod(0o755)
    env = cmp_env(pool, tmp_path, **dict(exec_settings(), KRMPOD_WARM_POOL="true",
                                          KRMPOD_WARM_POOL_IMAGES=POOLED))
    app = fn_app(tmp_path, "example.com/fns/cat:v1")
    r = generate(app, env)  # a cold render leaves an idle pod: the next call is warm
    assert r.returncode == 0, r.stderr.decode()
    r = generate(app, dict(env, KRMPOD_KUSTOMIZE=str(kz), KRMPOD_LOG_LEVEL="debug"))
    err = r.stderr.decode()
    assert r.returncode != 0 and r.stdout == b"", err
    assert "the render's session: read stdin: Is a directory" in err, err
    assert [p for p in pool_pods(pool) if state(p) == "idle"
            and not p["metadata"].get("deletionTimestamp")] == [], pool_pods(pool)


def test_a_claim_that_lands_between_the_janitor_s_list_and_its_delete_keeps_its_pod(pool):
    """gc lists an idle pod past its TTL; before its DELETE is served (held back 2 s), a call
    takes the pod and runs in it. The DELETE carries the listed uid and resourceVersion as
    preconditions: the claim changed the pod, the server answers 409, the pod and its call
    live on. The old janitor deleted from its stale list: the call lost its pod mid-run."""
    slow = KUSTOMIZE_RUN + ["-e", "SLOW_SECONDS=3", "example.com/fns/slow-cat:v1"]
    quick = KUSTOMIZE_RUN + ["-e", "SLOW_SECONDS=0", "example.com/fns/slow-cat:v1"]
    r = run_shim(pool, quick, stdin=b"warm up", env=pool_env(pool), timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    [idle] = pool_pods(pool)
    assert state(idle) == "idle"
    pool.faults(http_delays=[{"ms": 2000, "count": 1, "method": "DELETE"}])
    before = len(pool.requests())
    janitor = subprocess.Popen([shim_link("krmpod"), "gc"],
                               env=pool_env(pool, KRMPOD_WARM_POOL_TTL="1ms"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 10
    while time.time() < deadline and not any(
            " GET " in l and "labelSelector=krmpod.dev%2Fpool" in l
            for l in pool.requests()[before:]):
        time.sleep(0.02)
    time.sleep(0.2)  # gc is in its DELETE now, held back by the fault
    call = run_shim(pool, slow, stdin=b"mid-janitor", env=pool_env(pool, KRMPOD_LOG_LEVEL="debug"),
                    timeout=60)
    out, err = janitor.communicate(timeout=30)
    assert janitor.returncode == 0, err.decode()
    assert call.returncode == 0 and call.stdout == b"mid-janitor", call.stderr.decode()
    assert summary(call)[0] == idle["metadata"]["name"], call.stderr.decode()
    assert "changed since the list (a caller took it, or its status moved): left alone" in \
        err.decode(), err.decode()
    assert [p["metadata"]["name"] for p in pool_pods(pool)] == [idle["metadata"]["name"]]


def test_a_release_answered_504_after_it_applied_leaves_the_pod_in_the_pool(pool):
    """The lease given back, then a 504 (the server applied the patch and timed out). The
    patch is not sent again (it would fail its test with 422), and the pod is not retired
    blindly either: it is read, found idle (given back after all) and left in the pool,
    where another caller may have taken it already. The old client re-sent the patch, got
    422 and deleted the pod."""
    slow = KUSTOMIZE_RUN + ["-e", "SLOW_SECONDS=2", "example.com/fns/slow-cat:v1"]
    r = run_shim(pool, slow, stdin=b"first", env=pool_env(pool), timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    [p] = pool_pods(pool)
    proc = subprocess.Popen([shim_link()] + slow, env=pool_env(pool, KRMPOD_LOG_LEVEL="info"),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 20
    while time.time() < deadline and [state(q) for q in pool_pods(pool)] != ["busy"]:
        time.sleep(0.02)
    # the claim is done: the next PATCH is the release
    pool.faults(http_errors=[{"status": 504, "count": 1, "method": "PATCH", "after": True}])
    out, err = proc.communicate(b"second", timeout=60)
    assert proc.returncode == 0 and out == b"second", err.decode()
    assert "was given back after all (idle): left in the pool" in err.decode(), err.decode()
    assert [(q["metadata"]["name"], state(q)) for q in pool_pods(pool)] == [
        (p["metadata"]["name"], "idle")]


def test_a_pooled_pod_serves_one_application(pool):
    """The Application (ARGOCD_APP_NAME, ARGOCD_APP_PROJECT_NAME, ARGOCD_APP_NAMESPACE) is
    part of the pod key: another Application's call never gets the idle pod one left, the
    same Application's does."""
    def call(app, project="default"):
        r = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"x",
                     env=pool_env(pool, KRMPOD_LOG_LEVEL="debug", ARGOCD_APP_NAME=app,
                                  ARGOCD_APP_PROJECT_NAME=project,
                                  ARGOCD_APP_NAMESPACE="prod"))
        assert r.returncode == 0 and r.stdout == b"x", r.stderr.decode()
        return summary(r)[0]
    a = call("team-a")
    b = call("team-b")
    assert b != a
    assert call("team-a", project="other") not in (a, b)  # another project: another pool
    assert call("team-a") == a
    keys = {p["metadata"]["labels"]["krmpod.dev/pool"] for p in pool_pods(pool)}
    assert len(keys) == 3, keys
    for p in pool_pods(pool):  # the whole hash the claim checks, beside the label's part
        sha = p["metadata"]["annotations"]["krmpod.dev/spec-sha256"]
        assert len(sha) == 64 and sha.startswith(p["metadata"]["labels"]["krmpod.dev/pool"])


@pytest.mark.parametrize("shared", [True, False])
def test_an_admin_catalog_entry_may_share_a_pooled_pod_across_applications(pool, tmp_path,
                                                                          shared):
    """The one exception to one Application per pooled pod: an admin's catalog entry with
    shareAcrossApplications: true. Then every Application's call takes the same idle pod;
    the same entry without it (or in no admin catalog) keeps them apart."""
    from test_catalogs import admin_catalog, catalog
    extra = {"shareAcrossApplications": True} if shared else {}
    admin = admin_catalog(tmp_path, catalog("fns", [("krmpod.test", "Cat", "v1",
                                                     "example.com/fns/cat:v1", extra)]))

    def call(app, **more):
        env = dict(KRMPOD_LOG_LEVEL="debug", ARGOCD_APP_NAME=app,
                   ARGOCD_APP_PROJECT_NAME="default", ARGOCD_APP_NAMESPACE="prod")
        env.update(more)
        r = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"x",
                     env=pool_env(pool, **env))
        assert r.returncode == 0 and r.stdout == b"x", r.stderr.decode()
        return summary(r)[0]
    a = call("team-a", KRMPOD_DEFAULT_CATALOGS=str(admin))
    b = call("team-b", KRMPOD_DEFAULT_CATALOGS=str(admin))
    assert (a == b) == shared, (a, b)
    # without the admin's catalog, the mark is not there: the Application is in the key
    c = call("team-c")
    assert c not in (a, b)


def test_an_admin_catalog_that_cannot_be_read_fails_a_pooled_call_naming_it(pool, tmp_path):
    """A pooled call reads the admin's catalogs for shareAcrossApplications: one that cannot
    be read fails the call before any pod, naming the setting and the file."""
    before = len(pool.requests())
    missing = tmp_path / "nope.yaml"
    r = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"x",
                 env=pool_env(pool, KRMPOD_DEFAULT_CATALOGS=str(missing)))
    err = r.stderr.decode()
    assert r.returncode == 125, err
    assert "the warm pool: the admin's catalogs: KRMPOD_DEFAULT_CATALOGS" in err, err
    assert str(missing) in err, err
    assert creates(pool, before) == []


@pytest.mark.parametrize("name", ["LD_PRELOAD", "LD_LIBRARY_PATH", "NODE_OPTIONS", "BASH_ENV",
                                  "PERL5OPT", "PYTHONSTARTUP", "JAVA_TOOL_OPTIONS"])
def test_loader_and_interpreter_variables_are_refused_in_pooled_calls(pool, name):
    before = len(pool.requests())
    r = run_shim(pool, KUSTOMIZE_RUN + ["-e", name + "=/tmp/x", "example.com/fns/cat:v1"],
                 stdin=b"x", env=pool_env(pool))
    err = r.stderr.decode()
    assert r.returncode == 125, err
    assert "its config sets %s, which a pooled call refuses" % name in err, err
    assert "KRMPOD_WARM_POOL_IMAGES" in err, err
    assert creates(pool, before) == []
    # not pooled: docker's semantics, the variable reaches the function
    r = run_shim(pool, KUSTOMIZE_RUN + ["-e", name + "=/tmp/x", "example.com/fns/printenv:v1"],
                 stdin=b"x", env=base_env(pool, **exec_settings()))
    assert r.returncode == 0 and ("%s=/tmp/x" % name) in r.stderr.decode(), r.stderr.decode()


def test_a_pooled_call_cannot_move_home_tmpdir_or_path(pool, tmp_path):
    """A function config's TMPDIR, HOME and PATH do not reach a pooled call: krmpod sets the
    call's own directory and the container's PATH after the config's env, so nothing a call
    writes outlives it (TMPDIR=/dev/shm would) and no call chooses the next one's tools."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = ["-e", "TMPDIR=%s" % elsewhere, "-e", "HOME=%s" % elsewhere, "-e", "PATH=/nowhere",
            "example.com/fns/printenv:v1"]
    r = run_shim(pool, KUSTOMIZE_RUN + args, stdin=b"x", env=pool_env(pool))
    err = r.stderr.decode()
    assert r.returncode == 0 and r.stdout == b"x", err
    env = dict(l.split("=", 1) for l in err.splitlines() if "=" in l and not l.startswith("krmpod"))
    assert env["TMPDIR"] == env["HOME"] and "/call-" in env["HOME"], env
    assert env["PATH"] != "/nowhere", env
    assert list(elsewhere.iterdir()) == []


def test_a_lease_answered_504_after_it_applied_is_taken(pool):
    """The claim's patch applied, then a 504: the patch is not sent again (it would fail
    its test with 422, and the caller would think the pod gone to another and make a new
    one, while the lease kept the idle pod busy until it ran out). The pod is read: leased
    to this caller, so the call runs in it. A cause of the real-cluster tier's flake
    "the warm render made a new pod" on a loaded fresh machine."""
    r = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"x",
                 env=pool_env(pool))
    assert r.returncode == 0, r.stderr.decode()
    [p] = pool_pods(pool)
    before = len(pool.requests())
    pool.faults(http_errors=[{"status": 504, "count": 1, "method": "PATCH", "after": True}])
    r = run_shim(pool, KUSTOMIZE_RUN + ["example.com/fns/cat:v1"], stdin=b"y",
                 env=pool_env(pool, KRMPOD_LOG_LEVEL="info"))
    err = r.stderr.decode()
    assert r.returncode == 0 and r.stdout == b"y", err
    assert "was taken although its answer was lost" in err, err
    assert creates(pool, before) == []
    assert [(q["metadata"]["name"], state(q)) for q in pool_pods(pool)] == [
        (p["metadata"]["name"], "idle")]
