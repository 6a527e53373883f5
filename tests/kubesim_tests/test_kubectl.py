"""kubesim against the real kubectl (1.32): what a client sees must be what a cluster shows."""
import json
import os
import queue
import random
import re
import threading
import time


def pod(name, image, stdin=False, command=None, args=None, **spec):
    c = {"name": name, "image": image}
    if stdin:
        c.update(stdin=True, stdinOnce=True)
    if command:
        c["command"] = command
    if args:
        c["args"] = args
    s = {"restartPolicy": "Never", "containers": [c]}
    s.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": s}


def running(ks, name):
    return ks.wait_phase(name, "Running")


def err(r):
    return r.stderr.decode(errors="replace")


def test_version(kubectl):
    r = kubectl("version", "-o", "json", check=True)
    v = json.loads(r.stdout)
    assert v["serverVersion"]["gitVersion"] == "v1.34.0-kubesim"
    assert (v["serverVersion"]["major"], v["serverVersion"]["minor"]) == ("1", "34")


def test_run_rm_stdin_is_byte_exact(ks, kubectl):
    rnd = random.Random(11)
    data = bytes(range(256)) + bytes(rnd.getrandbits(8) for _ in range(200_000))
    r = kubectl("run", "copy", "-i", "--rm", "-q", "--restart=Never", "--image=cat",
                input=data)
    assert r.returncode == 0, err(r)
    assert r.stdout == data
    assert ks.pod("copy") is None, "--rm left the pod behind"


def test_run_exit_code_comes_from_the_container_status(ks, kubectl):
    r = kubectl("run", "failing", "-i", "--rm", "-q", "--restart=Never", "--image=fail",
                input=b"x")
    assert r.returncode == 3, err(r)
    assert "fail: boom" in err(r)
    assert "pod default/failing terminated (Error)" in err(r)


def test_attach_with_stdin_once(ks, kubectl):
    ks.create_pod(pod("att", "cat", stdin=True))
    running(ks, "att")
    data = b"attached line 1\n" + bytes(range(256)) * 40
    r = kubectl("attach", "-i", "att", input=data)
    assert r.returncode == 0, err(r)
    assert r.stdout == data
    # stdinOnce: the end of the attach's stdin closed the container's stdin, so cat ended
    p = ks.wait_phase("att", "Succeeded", "Failed")
    assert p["status"]["phase"] == "Succeeded"
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    r = kubectl("attach", "-i", "att", input=b"late")
    assert r.returncode == 1
    assert "cannot attach a container in a completed pod" in err(r)


def test_exec_stdin_stdout_stderr_and_exit_code(ks, kubectl):
    ks.create_pod(pod("ex", "sleep"))
    running(ks, "ex")
    data = bytes(reversed(range(256))) * 300
    r = kubectl("exec", "-i", "ex", "--", "cat", input=data)
    assert r.returncode == 0, err(r)
    assert r.stdout == data
    r = kubectl("exec", "ex", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
    assert r.returncode == 7, err(r)
    assert r.stdout == b"out\n"
    assert "err\n" in err(r) and "command terminated with exit code 7" in err(r)
    r = kubectl("exec", "ex", "--", "no-such-command-here")
    assert r.returncode != 0
    assert "no-such-command-here" in err(r)


def test_logs(ks, kubectl):
    ks.create_pod(pod("lg", "stderr-first"))
    ks.wait_phase("lg", "Succeeded")
    r = kubectl("logs", "lg", check=True)
    assert r.stdout == b"hello from stderr before stdin\n"
    ks.create_pod(pod("lf", "cat", command=["sh", "-c", "echo one; sleep 0.4; echo two"]))
    running(ks, "lf")
    t0 = time.monotonic()
    r = kubectl("logs", "-f", "lf", check=True)
    assert r.stdout == b"one\ntwo\n"
    assert time.monotonic() - t0 < 10
    r = kubectl("logs", "lf", "--tail=1", check=True)
    assert r.stdout == b"two\n"


def test_logs_of_a_container_that_cannot_start(ks, kubectl):
    ks.create_pod(pod("nopull", "example.com/not-an-image:v1"))

    def waiting(reason):
        return lambda p: p["status"].get("containerStatuses", [{}])[0].get("state", {}).get(
            "waiting", {}).get("reason") == reason
    # the kubelet's words for each (tests/conformance/data/pod_image_pull_failure.json)
    for reason, text in (("ErrImagePull", "image can't be pulled"),
                         ("ImagePullBackOff", "trying and failing to pull image")):
        ks.wait_pod("nopull", waiting(reason))
        r = kubectl("logs", "nopull")
        assert r.returncode == 1
        assert 'container "nopull" in pod "nopull" is waiting to start: ' + text in err(r)


def test_get_pods_watch_sees_events(ks, kubectl_bg):
    w = kubectl_bg("get", "pods", "-w", "--output-watch-events")
    lines = queue.Queue()

    def reader():
        for line in iter(w.stdout.readline, b""):
            lines.put(line.decode())
    threading.Thread(target=reader, daemon=True).start()
    time.sleep(0.5)  # kubectl lists, then watches from the list's resourceVersion
    ks.create_pod(pod("watched", "sleep"))
    running(ks, "watched")
    ks.ok("DELETE", "/api/v1/namespaces/default/pods/watched",
          {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    seen, deadline = [], time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            seen.append(lines.get(timeout=0.2).split())
        except queue.Empty:
            continue
        if seen[-1][:2] == ["DELETED", "watched"]:
            break
    events = [(s[0], s[1], s[3]) for s in seen if len(s) >= 4 and s[1] == "watched"]
    assert ("ADDED", "watched", "Pending") in events, seen
    assert ("MODIFIED", "watched", "Running") in events, seen
    assert events[-1][:2] == ("DELETED", "watched"), seen


def test_delete_pod(ks, kubectl):
    ks.create_pod(pod("doomed", "sleep"))
    running(ks, "doomed")
    t0 = time.monotonic()
    r = kubectl("delete", "pod", "doomed", check=True)
    assert r.stdout == b'pod "doomed" deleted\n'
    # graceful: SIGTERM ends sleep at once, far inside the 30 s grace period
    assert time.monotonic() - t0 < 10
    assert ks.pod("doomed") is None
    r = kubectl("delete", "pod", "doomed")
    assert r.returncode == 1
    assert 'pods "doomed" not found' in err(r)


def test_get_pods_table(ks, kubectl):
    ks.create_pod(pod("t-running", "sleep"))
    ks.create_pod(pod("t-done", "cat"))
    ks.create_pod(pod("t-failed", "fail"))
    ks.create_pod(pod("t-nopull", "example.com/missing:v1"))
    running(ks, "t-running")
    ks.wait_phase("t-done", "Succeeded")
    ks.wait_phase("t-failed", "Failed")
    ks.wait_pod("t-nopull", lambda p: "waiting" in p["status"].get("containerStatuses", [{}])[0]
                .get("state", {}))
    r = kubectl("get", "pods", check=True)
    rows = [line.split() for line in r.stdout.decode().splitlines()]
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    table = {row[0]: row[1:4] for row in rows[1:]}
    assert table["t-running"] == ["1/1", "Running", "0"]
    assert table["t-done"] == ["0/1", "Completed", "0"]
    assert table["t-failed"] == ["0/1", "Error", "0"]
    assert table["t-nopull"][0] == "0/1"
    assert table["t-nopull"][1] in ("ErrImagePull", "ImagePullBackOff")
    assert set(table) == {"t-running", "t-done", "t-failed", "t-nopull"}
    r = kubectl("get", "pod", "t-running", "-o", "wide", check=True)
    head, row = [line.split() for line in r.stdout.decode().splitlines()]
    assert head[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    assert row[6] == "kubesim-node" and re.match(r"^10\.244\.0\.\d+$", row[5])
    r = kubectl("get", "pod", "t-failed", "-o", "jsonpath={.status.containerStatuses[0]"
                ".state.terminated.exitCode}", check=True)
    assert r.stdout == b"3"


def token_kubeconfig(ks, tmp_path, token):
    with open(os.path.join(ks.state, "kubeconfig-token")) as f:
        kc = json.load(f)
    kc["users"][0]["user"]["token"] = token
    path = str(tmp_path / "kubeconfig")
    with open(path, "w") as f:
        json.dump(kc, f)
    return path


def test_bad_token_is_401(ks, kubectl, tmp_path):
    good = token_kubeconfig(ks, tmp_path, ks.token)
    kubectl("get", "pods", kubeconfig=good, check=True)
    bad = token_kubeconfig(ks, tmp_path, "not-a-valid-token")
    r = kubectl("get", "pods", kubeconfig=bad)
    assert r.returncode == 1
    assert "You must be logged in to the server (Unauthorized)" in err(r)
    code, body = ks.api("GET", "/api/v1/namespaces/default/pods", token="not-a-valid-token")
    assert code == 401 and body["reason"] == "Unauthorized" and body["kind"] == "Status"


def test_token_without_rights_is_403(ks, kubectl):
    none = os.path.join(ks.state, "kubeconfig-none")
    r = kubectl("get", "pods", kubeconfig=none)
    assert r.returncode == 1
    assert ('pods is forbidden: User "system:serviceaccount:default:norights" cannot list '
            'resource "pods" in API group "" in the namespace "default"') in err(r)
    ro = os.path.join(ks.state, "kubeconfig-readonly")
    ks.create_pod(pod("ro-target", "sleep"))
    running(ks, "ro-target")
    r = kubectl("get", "pods", kubeconfig=ro, check=True)
    assert b"ro-target" in r.stdout
    r = kubectl("run", "nope", "--image=cat", "--restart=Never", kubeconfig=ro)
    assert r.returncode == 1
    assert ('pods is forbidden: User "system:serviceaccount:default:readonly" cannot create '
            'resource "pods"') in err(r)
    r = kubectl("exec", "ro-target", "--", "true", kubeconfig=ro)
    assert r.returncode == 1
    assert 'cannot create resource "pods/exec"' in err(r) or \
        'cannot get resource "pods/exec"' in err(r), err(r)
    r = kubectl("delete", "pod", "ro-target", kubeconfig=ro)
    assert r.returncode == 1 and 'pods "ro-target" is forbidden' in err(r)
    assert ks.pod("ro-target") is not None
    r = kubectl("auth", "can-i", "create", "pods/attach", kubeconfig=ro)
    assert (r.returncode, r.stdout) == (1, b"no\n")
    r = kubectl("auth", "can-i", "get", "pods", kubeconfig=ro)
    assert (r.returncode, r.stdout) == (0, b"yes\n")


POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels:
    app: created-from-file
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: example.com/cat:v1
    stdin: true
    stdinOnce: true%s
"""


def test_create_f_validates_on_the_server(ks, kubectl, tmp_path):
    f = tmp_path / "pod.yaml"
    f.write_text(POD_YAML % ("from-file", ""))
    r = kubectl("create", "-f", str(f))  # default --validate=strict, no flag needed
    assert r.returncode == 0, err(r)
    assert r.stdout == b"pod/from-file created\n"
    p = running(ks, "from-file")
    assert p["metadata"]["labels"] == {"app": "created-from-file"}
    assert p["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"  # a default
    posts = [line for line in open(os.path.join(ks.state, "requests.log"))
             if "POST /api/v1/namespaces/default/pods?" in line and "kubectl-create" in line]
    assert posts and "fieldValidation=Strict" in posts[-1]
    f.write_text(POD_YAML % ("typo", "\n    stdinonce: true"))
    r = kubectl("create", "-f", str(f))
    assert r.returncode == 1
    assert 'strict decoding error: unknown field "spec.containers[0].stdinonce"' in err(r)
    assert ks.pod("typo") is None
    f.write_text((POD_YAML % ("no-image", "")).replace("    image: example.com/cat:v1\n", ""))
    r = kubectl("create", "-f", str(f))
    assert r.returncode == 1
    assert 'The Pod "no-image" is invalid' in err(r) and "spec.containers[0].image: Required " \
        "value" in err(r)


def test_label_annotate_and_patch(ks, kubectl):
    ks.create_pod(pod("patched", "sleep"))
    running(ks, "patched")
    assert kubectl("label", "pod", "patched", "claimed=yes", check=True).stdout == \
        b"pod/patched labeled\n"
    kubectl("annotate", "pod", "patched", "note=hi", check=True)
    p = ks.pod("patched")
    assert p["metadata"]["labels"] == {"claimed": "yes"}
    assert p["metadata"]["annotations"] == {"note": "hi"}
    r = kubectl("get", "pods", "-l", "claimed=yes", "-o", "name", check=True)
    assert r.stdout == b"pod/patched\n"
    # only what a real API server lets change on a pod
    r = kubectl("patch", "pod", "patched", "-p", '{"spec":{"restartPolicy":"Always"}}')
    assert r.returncode == 1 and "pod updates may not change fields" in err(r)
    r = kubectl("patch", "pod", "patched", "--type=json", "-p",
                '[{"op":"add","path":"/spec/activeDeadlineSeconds","value":1}]', check=True)
    p = ks.wait_phase("patched", "Failed")
    assert p["status"]["reason"] == "DeadlineExceeded"
    r = kubectl("label", "pod", "patched", "claimed=no", "--overwrite", "--resource-version=1")
    assert r.returncode == 1 and "the object has been modified" in err(r)


def test_events_started_for_each_container(ks, kubectl):
    """The kubelet's Started events (krmpod attaches on them): kubectl lists them with field
    selectors, one per container, init containers named by their own field path."""
    ks.create_pod(pod("ev", "cat", command=["sh", "-c", "exit 0"],
                      initContainers=[{"name": "first", "image": "cat",
                                       "command": ["sh", "-c", "exit 0"]}]))
    ks.wait_phase("ev", "Succeeded")
    r = kubectl("get", "events", "--field-selector", "involvedObject.name=ev,reason=Started",
                "-o", "json", check=True)
    items = json.loads(r.stdout)["items"]
    paths = sorted(e["involvedObject"]["fieldPath"] for e in items)
    assert paths == ["spec.containers{ev}", "spec.initContainers{first}"], items
    assert all(e["source"]["component"] == "kubelet" and e["type"] == "Normal" for e in items)
    r = kubectl("get", "events", "--field-selector", "involvedObject.name=nothing-here",
                "-o", "json", check=True)
    assert json.loads(r.stdout)["items"] == []
    r = kubectl("get", "events", "--field-selector", "involvedObject.name=ev", check=True)
    lines = r.stdout.decode().splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], lines
    assert sum("Normal   Started   pod/ev   Started container" in l for l in lines) == 2, lines
