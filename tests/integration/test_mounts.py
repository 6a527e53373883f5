"""Level 2, mounts: a function config's `mounts` (kustomize passes them as `docker run --mount
type=bind|tmpfs,...`) reach the function pod without a shared filesystem — through the
`mounts` init container running `krmpod unpack` (the binary under test, see conftest.py's
HELPER_IMAGE) — with real kustomize against kubesim, compared byte for byte with the function
run directly on the mounted directories (tests/fixtures/direct-docker)."""
import os
import re
import signal
import subprocess
import time

from apptrees import mount_app, tree
from conftest import (LOG_READS, HELPER_IMAGE, IMAGES, ROOT, KUSTOMIZE_RUN, base_env, kustomize,
                      no_sanitizer_reports, shim_link)

DIRECT = os.path.join(ROOT, "tests", "fixtures")


def direct_env(tmp_path):
    """PATH with a docker that runs the fixture programs directly on the mount sources."""
    d = tmp_path / "direct-bin"
    d.mkdir(exist_ok=True)
    if not (d / "docker").exists():
        os.symlink(os.path.join(DIRECT, "direct-docker"), str(d / "docker"))
    return {"PATH": str(d) + ":" + os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
            "KRMPOD_TEST_IMAGES": IMAGES, "KRMPOD_TEST_TMP": str(tmp_path)}


def mounts_env(kubesim, shim_dir, **extra):
    return base_env(kubesim, shim_dir, KRMPOD_HELPER_IMAGE=HELPER_IMAGE, **extra)


def app_with(tmp_path, mounts, data, image="example.com/fns/read-mount:v1"):
    """A kustomization whose generator mounts `mounts` ([(type, src, dst, rw)])."""
    return mount_app(tmp_path, mounts, data, image)


DATA = {
    "config.yaml": "color: blue\nsize: 3\n",
    "run.sh": ("#!/bin/sh\necho hi\n", 0o755),
    "private.txt": ("only the owner\n", 0o600),
    "sub/nested.txt": "nested\n",
    "sub/deeper/x.json": '{"x": [1, 2, 3]}\n',
    "empty": ("dir",),
    "link-to-nested": ("link", "sub/nested.txt"),
    "sub/up-link": ("link", "../config.yaml"),
    "big.txt": "".join("line %06d of a file that spans several chunks\n" % i
                       for i in range(4000)),
}


def api_requests(kubesim, before):
    """The pod API requests since `before` (kubesim logs other clients' requests too)."""
    return [l for l in kubesim.requests()[before:] if "/pods" in l]


def pod_posts(kubesim, before):
    return [l for l in api_requests(kubesim, before) if " POST " in " %s " % l and "/pods" in l]


def test_directory_mount_is_byte_exact_with_a_direct_run(kubesim, shim_dir, tmp_path):
    app = app_with(tmp_path, [("bind", "./data", "/data", False)],
                   {"name": "from-mount", "dirs": "/data"})
    tree(app / "data", DATA)
    before = len(kubesim.requests())
    via = kustomize(str(app), mounts_env(kubesim, shim_dir))
    assert via.returncode == 0, via.stderr.decode()
    direct = kustomize(str(app), direct_env(tmp_path))
    assert direct.returncode == 0, direct.stderr.decode()
    assert via.stdout == direct.stdout
    out = via.stdout.decode()
    assert "/data/link-to-nested l 555 -> sub/nested.txt" in out
    assert "/data/run.sh f 555 " in out and "/data/private.txt f 400 " in out
    assert "/data/empty d 555" in out
    assert "line 003999 of a file" in out
    err = via.stderr.decode()
    # the transfer is timed, and the function costs one request more than without mounts:
    # create, watch, events watch (Started), attach to the mounts helper, attach (exec mode:
    # exec), pre-attach log (not in exec mode), delete
    m = re.search(r"mounts: 12 entries, (\d+) bytes of files \((\d+) bytes of tar\) "
                  r"delivered in \d+ ms", err)
    assert m, err
    assert int(m.group(1)) == sum(os.path.getsize(os.path.join(d, f))
                                  for d, _, files in os.walk(str(app / "data")) for f in files
                                  if not os.path.islink(os.path.join(d, f)))
    assert "requests=%d" % (6 + LOG_READS) in err, err
    reqs = api_requests(kubesim, before)
    assert len(reqs) == 5 + LOG_READS, reqs  # the events watch is not a /pods request
    assert sum("/attach?container=mounts&stdin=true" in r for r in reqs) == 1, reqs
    no_sanitizer_reports(via.stderr)


def test_read_only_by_default_and_rw_when_the_config_says_so(kubesim, shim_dir, tmp_path):
    app = app_with(tmp_path, [("bind", "./data", "/data", False),
                              ("bind", "./scratch", "/scratch", True)],
                   {"name": "writes", "dirs": "/data", "write": "/data,/scratch"})
    tree(app / "data", {"a.txt": "a\n"})
    tree(app / "scratch", {"s.txt": "s\n"})
    r = kustomize(str(app), mounts_env(kubesim, shim_dir))
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    assert re.search(r"write\.data: 'denied: (Permission denied|Read-only file system)'", out), out
    assert "write.scratch: ok" in out, out
    # what the function writes stays in its pod: the kustomization is untouched
    assert sorted(os.listdir(str(app / "scratch"))) == ["s.txt"]
    assert sorted(os.listdir(str(app / "data"))) == ["a.txt"]
    no_sanitizer_reports(r.stderr)


def test_two_mounts_and_a_single_file(kubesim, shim_dir, tmp_path):
    app = app_with(tmp_path, [("bind", "./one", "/one", False),
                              ("bind", "two", "/opt/two", False),
                              ("bind", "./single.txt", "/etc/single.txt", False)],
                   {"name": "three", "dirs": "/one,/opt/two,/etc/single.txt"})
    tree(app / "one", {"1.txt": "one\n", "d/1b.txt": "one b\n"})
    tree(app / "two", {"2.txt": "two\n"})
    (app / "single.txt").write_text("just a file\n")
    via = kustomize(str(app), mounts_env(kubesim, shim_dir))
    assert via.returncode == 0, via.stderr.decode()
    direct = kustomize(str(app), direct_env(tmp_path))
    assert direct.returncode == 0, direct.stderr.decode()
    assert via.stdout == direct.stdout
    out = via.stdout.decode()
    assert "/etc/single.txt f 444 12" in out and "just a file" in out
    assert "/opt/two/2.txt f 444 4" in out and "one b" in out
    no_sanitizer_reports(via.stderr)


def test_tmpfs_needs_no_helper(kubesim, shim_dir, tmp_path):
    app = app_with(tmp_path, [("tmpfs", None, "/scratch", True), ("tmpfs", None, "/ro", False)],
                   {"name": "tmp", "dirs": "/scratch", "write": "/scratch,/ro"})
    before = len(kubesim.requests())
    # no KRMPOD_HELPER_IMAGE: a tmpfs sends nothing
    r = kustomize(str(app), base_env(kubesim, shim_dir))
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    assert "write.scratch: ok" in out, out
    assert re.search(r"write\.ro: 'denied", out), out
    assert not any("container=mounts" in l for l in api_requests(kubesim, before))
    no_sanitizer_reports(r.stderr)


def expect_refused(kubesim, shim_dir, app, needles, env=None):
    before = len(kubesim.requests())
    r = kustomize(str(app), env or mounts_env(kubesim, shim_dir))
    err = r.stderr.decode()
    assert r.returncode != 0, err
    assert r.stdout == b""
    for n in needles:
        assert n in err, err
    # refused before any pod was created
    assert pod_posts(kubesim, before) == []
    no_sanitizer_reports(r.stderr)
    return err


def test_a_symlink_leaving_the_mount_is_refused(kubesim, shim_dir, tmp_path):
    (tmp_path / "secret.txt").write_text("never sent\n")
    app = app_with(tmp_path, [("bind", "./data", "/data", False)], {"dirs": "/data"})
    tree(app / "data", {"ok.txt": "fine\n", "sub/escape": ("link", "../../../secret.txt")})
    err = expect_refused(kubesim, shim_dir, app, [
        "--mount type=bind,source=%s/data,target=/data,readonly" % app,
        "data/sub/escape: a symlink to \"../../../secret.txt\", which leaves the mount"])
    assert "never sent" not in err


def test_an_absolute_symlink_is_refused(kubesim, shim_dir, tmp_path):
    app = app_with(tmp_path, [("bind", "./data", "/data", False)], {"dirs": "/data"})
    tree(app / "data", {"passwd": ("link", "/etc/passwd")})
    expect_refused(kubesim, shim_dir, app,
                   ["data/passwd: a symlink to \"/etc/passwd\", which leaves the mount"])


def test_a_source_that_resolves_outside_the_kustomization_is_refused(kubesim, shim_dir,
                                                                     tmp_path):
    outside = tmp_path / "outside"
    tree(outside, {"secret.txt": "never sent\n"})
    app = app_with(tmp_path, [("bind", "./data", "/data", False)], {"dirs": "/data"})
    os.symlink(str(outside), str(app / "data"))  # kustomize itself only checks the text
    expect_refused(kubesim, shim_dir, app, [
        "the source %s/data resolves to %s, outside the kustomization directory %s"
        % (app, outside, app)])


def test_a_hard_link_to_a_file_outside_is_refused(kubesim, shim_dir, tmp_path):
    (tmp_path / "secret.txt").write_text("never sent\n")
    app = app_with(tmp_path, [("bind", "./data", "/data", False)], {"dirs": "/data"})
    tree(app / "data", {"ok.txt": "fine\n"})
    os.link(str(tmp_path / "secret.txt"), str(app / "data" / "innocent.txt"))
    expect_refused(kubesim, shim_dir, app,
                   ["data/innocent.txt has 2 hard links and only 1 of them are in the mounts"])


def test_an_oversized_mount_is_refused_before_any_pod(kubesim, shim_dir, tmp_path):
    app = app_with(tmp_path, [("bind", "./data", "/data", False)], {"dirs": "/data"})
    tree(app / "data", {"a.bin": "x" * 1500, "b/c.bin": "y" * 1000})
    expect_refused(kubesim, shim_dir, app, [
        "the mounts hold 2500 bytes of files, more than KRMPOD_MOUNT_MAX_BYTES (2048 bytes)",
        "--mount type=bind,source=%s/data,target=/data,readonly: 2500 bytes" % app],
        env=mounts_env(kubesim, shim_dir, KRMPOD_MOUNT_MAX_BYTES="2Ki"))


def test_a_named_volume_is_refused(kubesim, shim_dir, tmp_path):
    app = app_with(tmp_path, [("volume", "myvol", "/vol", False)], {"dirs": "/vol"})
    expect_refused(kubesim, shim_dir, app, [
        "--mount type=volume,source=%s/myvol,target=/vol,readonly: named docker volumes "
        "cannot exist in a cluster" % app])


def test_mounts_without_a_helper_image_fail_clearly(kubesim, shim_dir, tmp_path):
    app = app_with(tmp_path, [("bind", "./data", "/data", False)], {"dirs": "/data"})
    tree(app / "data", {"a.txt": "a\n"})
    # (attach mode: exec mode needs the helper image for itself, and says so)
    expect_refused(kubesim, shim_dir, app, ["KRMPOD_HELPER_IMAGE is not set"],
                   env=base_env(kubesim, shim_dir, KRMPOD_MODE=None, KRMPOD_HELPER_IMAGE=None))


def test_a_helper_image_that_cannot_be_pulled_fails_fast(kubesim, shim_dir, tmp_path):
    app = app_with(tmp_path, [("bind", "./data", "/data", False)], {"dirs": "/data"})
    tree(app / "data", {"a.txt": "a\n"})
    r = kustomize(str(app), base_env(kubesim, shim_dir,
                                     KRMPOD_HELPER_IMAGE="example.com/krmpod/missing:v1"))
    err = r.stderr.decode()
    assert r.returncode != 0
    # the init container that uses it (exec mode's installer is a container after it)
    assert "the init container mounts of pod" in err, err
    assert "cannot start: ImagePullBackOff" in err, err
    assert "KRMPOD_HELPER_IMAGE=example.com/krmpod/missing:v1" in err, err
    no_sanitizer_reports(r.stderr)


def test_shim_with_mount_flags_from_the_working_directory(kubesim, tmp_path):
    """The shim alone, as kustomize runs it: cwd is the kustomization directory."""
    app = tmp_path / "app"
    tree(app / "data", {"a.txt": "alpha\n"})
    d = os.path.dirname(shim_link())
    rl = (b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"
          b"functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n"
          b"  data: {name: m, dirs: /data}\n")
    args = KUSTOMIZE_RUN[:1] + ["--mount", "type=bind,source=%s/data,target=/data,readonly"
                                % app] + KUSTOMIZE_RUN[1:] + ["example.com/fns/read-mount:v1"]
    r = subprocess.run([os.path.join(d, "docker")] + args, input=rl, cwd=str(app),
                       env=mounts_env(kubesim, None), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert b"data.a.txt: 'alpha" in r.stdout, r.stdout
    # the same flags from another working directory: the source is outside it
    (tmp_path / "elsewhere").mkdir()
    r = subprocess.run([os.path.join(d, "docker")] + args, input=rl,
                       cwd=str(tmp_path / "elsewhere"),
                       env=mounts_env(kubesim, None), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 125
    assert b"outside the kustomization directory" in r.stderr, r.stderr
    no_sanitizer_reports(r.stderr)


def test_sigterm_while_the_helper_starts_deletes_the_pod(kubesim, tmp_path):
    kubesim.faults(start_latency_ms=3000)
    app = tmp_path / "app"
    tree(app / "data", {"a.txt": "alpha\n"})
    d = os.path.dirname(shim_link())
    args = ["run", "--rm", "-i", "--mount",
            "type=bind,source=%s/data,target=/data,readonly" % app,
            "example.com/fns/read-mount:v1"]
    p = subprocess.Popen([os.path.join(d, "docker")] + args, cwd=str(app),
                         env=mounts_env(kubesim, None), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 10
    while not kubesim.pods() and time.time() < deadline:
        time.sleep(0.05)
    assert kubesim.pods(), "no pod was created"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=10)
    assert p.returncode == 143, err.decode()
    assert b"interrupted by signal 15 while delivering its mounts" in err, err
    assert kubesim.pods() == []
    no_sanitizer_reports(err)
