"""Init containers, attach to an init container, emptyDir volumes shared between init and main
containers (read-only mounts really read-only), other volume types, and PodTemplates; checked
through kubectl where a user would look."""
import base64
import json
import os
import time

from test_kubectl import err


def container(name, image="fsop", args=None, mounts=(), stdin=False, **kw):
    c = {"name": name, "image": image}
    if args:
        c["args"] = list(args)
    if mounts:
        c["volumeMounts"] = [dict(name=n, mountPath=p, **({"readOnly": True} if ro else {}))
                             for n, p, ro in mounts]
    if stdin:
        c.update(stdin=True, stdinOnce=True)
    c.update(kw)
    return c


def pod(name, inits, mains, volumes=("work",), **spec):
    s = {"restartPolicy": "Never", "initContainers": inits, "containers": mains,
         "volumes": [{"name": v, "emptyDir": {}} for v in volumes]}
    if not inits:
        del s["initContainers"]
    s.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": s}


def statuses(p, kind="initContainerStatuses"):
    return {c["name"]: c for c in p["status"].get(kind) or []}


def state(cs):
    (k, v), = cs["state"].items()
    return k, v


def get_row(kubectl, name):
    r = kubectl("get", "pod", name, check=True)
    head, row = [line.split() for line in r.stdout.decode().splitlines()]
    return dict(zip(head, row))


def test_init_containers_run_in_order_and_share_an_emptydir(ks, kubectl):
    w = [("work", "/work", False)]
    ks.create_pod(pod("ordered", [
        container("first", args=["append", "/work/order", "first\\n"], mounts=w),
        container("second", args=["append", "/work/order", "second\\n"], mounts=w),
    ], [container("main", args=["cat", "/work/order"], mounts=w)]))
    p = ks.wait_phase("ordered", "Succeeded", "Failed")
    assert p["status"]["phase"] == "Succeeded"
    r = kubectl("logs", "ordered", "-c", "main", check=True)
    assert r.stdout == b"first\nsecond\n"
    inits = statuses(p)
    for name in ("first", "second"):
        kind, term = state(inits[name])
        assert kind == "terminated" and term["exitCode"] == 0 and term["reason"] == "Completed"
        assert inits[name]["ready"] is True and inits[name]["started"] is False
        assert inits[name]["containerID"] == term["containerID"]
    assert inits["first"]["state"]["terminated"]["finishedAt"] <= \
        inits["second"]["state"]["terminated"]["startedAt"]
    conds = {c["type"]: c for c in p["status"]["conditions"]}
    assert conds["Initialized"]["status"] == "True"
    assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "PodCompleted"
    assert get_row(kubectl, "ordered")["STATUS"] == "Completed"
    r = kubectl("logs", "ordered", "-c", "first", check=True)
    assert r.stdout == b""


def test_attach_to_an_init_container_while_the_pod_is_pending(ks, kubectl):
    w = [("work", "/work", False)]
    ks.create_pod(pod("feeder", [
        container("unpack", args=["write", "/work/input"], mounts=w, stdin=True),
        container("check", args=["ls", "/work"], mounts=w),
    ], [container("fn", args=["cat", "/work/input"], mounts=[("work", "/work", True)])]))
    p = ks.wait_pod("feeder", lambda p: state(statuses(p)["unpack"])[0] == "running",
                    what="init container running")
    # the pod waits on its first init container: Pending, Init:0/2
    assert p["status"]["phase"] == "Pending"
    assert state(statuses(p)["check"]) == ("waiting", {"reason": "PodInitializing"})
    assert state(statuses(p, "containerStatuses")["fn"]) == ("waiting",
                                                              {"reason": "PodInitializing"})
    assert statuses(p)["unpack"]["started"] is True
    conds = {c["type"]: c for c in p["status"]["conditions"]}
    assert conds["Initialized"]["status"] == "False"
    assert conds["Initialized"]["reason"] == "ContainersNotInitialized"
    assert conds["Initialized"]["message"] == "containers with incomplete status: [unpack check]"
    row = get_row(kubectl, "feeder")
    assert (row["READY"], row["STATUS"]) == ("0/1", "Init:0/2")
    # neither a later init container nor the main one can be attached to yet: the kubelet
    # does not know them (the real server's answer, after the upgrade)
    r = kubectl("attach", "feeder", "-c", "check")
    assert r.returncode == 1
    assert ("unable to upgrade connection: container check not found in pod feeder_default"
            in err(r))
    r = kubectl("logs", "feeder", "-c", "fn")
    assert r.returncode == 1 and "is waiting to start: PodInitializing" in err(r)

    data = bytes(range(256)) * 100 + b"end\n"
    r = kubectl("attach", "-i", "feeder", "-c", "unpack", input=data)
    assert r.returncode == 0, err(r)
    p = ks.wait_phase("feeder", "Succeeded", "Failed")
    assert p["status"]["phase"] == "Succeeded", json.dumps(p["status"], indent=1)
    assert kubectl("logs", "feeder", "-c", "fn", check=True).stdout == data
    assert kubectl("logs", "feeder", "-c", "check", check=True).stdout == b"input\n"
    # stdinOnce: a second attach cannot feed the (finished) init container
    r = kubectl("attach", "-i", "feeder", "-c", "unpack", input=b"again")
    assert r.returncode == 1


def test_a_failing_init_container_fails_the_pod(ks, kubectl):
    ks.create_pod(pod("broken", [container("setup", image="fail"),
                                 container("never", args=["map"])],
                      [container("main", args=["map"])], volumes=()))
    p = ks.wait_phase("broken", "Failed", "Succeeded")
    assert p["status"]["phase"] == "Failed"
    kind, term = state(statuses(p)["setup"])
    assert kind == "terminated" and term["exitCode"] == 3 and term["reason"] == "Error"
    assert statuses(p)["setup"]["ready"] is False
    assert state(statuses(p)["never"]) == ("waiting", {"reason": "PodInitializing"})
    assert state(statuses(p, "containerStatuses")["main"]) == ("waiting",
                                                                {"reason": "PodInitializing"})
    assert get_row(kubectl, "broken")["STATUS"] == "Init:Error"
    r = kubectl("logs", "broken", "-c", "setup", check=True)
    assert r.stdout == b"fail: boom\n"


def test_init_container_image_pull_failure(ks, kubectl):
    ks.create_pod(pod("initpull", [container("setup", image="example.com/nope:v1")],
                      [container("main", args=["map"])], volumes=()))
    ks.wait_pod("initpull", lambda p: statuses(p).get("setup", {}).get("state", {})
                .get("waiting", {}).get("reason") in ("ErrImagePull", "ImagePullBackOff"))
    assert get_row(kubectl, "initpull")["STATUS"] in ("Init:ErrImagePull",
                                                      "Init:ImagePullBackOff")


def test_deadline_applies_while_initializing(ks):
    ks.create_pod(pod("slowinit", [container("wait", image="sleep")],
                      [container("main", args=["map"])], volumes=(),
                      activeDeadlineSeconds=1))
    p = ks.wait_phase("slowinit", "Failed", timeout=10)
    assert p["status"]["reason"] == "DeadlineExceeded"
    assert state(statuses(p, "containerStatuses")["main"])[0] == "waiting"


def test_read_only_mounts_are_unwritable(ks, kubectl):
    rw, ro = [("data", "/data", False)], [("data", "/data", True)]
    ks.create_pod(pod("readonly", [
        container("fill", args=["append", "/data/f", "seed\\n"], mounts=rw),
    ], [
        container("reader", args=["cat", "/data/f"], mounts=ro),
        container("scribbler", args=["write", "/data/f"], mounts=ro),
        container("creator", args=["write", "/data/new"], mounts=ro),
    ], volumes=("data",)))
    p = ks.wait_phase("readonly", "Failed", "Succeeded")
    mains = statuses(p, "containerStatuses")
    assert state(mains["reader"])[1]["exitCode"] == 0
    assert kubectl("logs", "readonly", "-c", "reader", check=True).stdout == b"seed\n"
    for name, path in (("scribbler", "/data/f"), ("creator", "/data/new")):
        assert state(mains[name])[1]["exitCode"] == 1
        log = kubectl("logs", "readonly", "-c", name, check=True).stderr + \
            kubectl("logs", "readonly", "-c", name, check=True).stdout
        assert b"fsop: write %s: Permission denied" % path.encode() in log, log
    assert mains["reader"]["volumeMounts"] == [{"name": "data", "mountPath": "/data",
                                                "readOnly": True,
                                                "recursiveReadOnly": "Disabled"}]


def test_read_only_view_next_to_a_writer(ks, kubectl):
    """A read-only mount of a volume that a container running alongside writes to gets a
    read-only snapshot (taken at start), still unwritable."""
    ks.create_pod(pod("mixed", [
        container("fill", args=["append", "/v/f", "before\\n"], mounts=[("v", "/v", False)]),
    ], [
        container("writer", args=["append", "/v/f", "after\\n"], mounts=[("v", "/v", False)]),
        container("viewer", args=["write", "/v/f"], mounts=[("v", "/v", True)]),
    ], volumes=("v",)))
    p = ks.wait_phase("mixed", "Failed", "Succeeded")
    mains = statuses(p, "containerStatuses")
    assert state(mains["writer"])[1]["exitCode"] == 0
    assert state(mains["viewer"])[1]["exitCode"] == 1
    assert b"Permission denied" in kubectl("logs", "mixed", "-c", "viewer", check=True).stdout


def test_volume_map_and_working_dir(ks, kubectl):
    ks.create_pod(pod("mapped", [], [container(
        "main", image="cat", command=["sh", "-c", 'echo "$KUBESIM_VOLUME_MAP"; pwd'],
        mounts=[("a", "/mnt/a", False), ("b", "/mnt/b", True)], workingDir="/mnt/a/sub")],
        volumes=("a", "b")))
    ks.wait_phase("mapped", "Succeeded")
    vmap, cwd = kubectl("logs", "mapped", check=True).stdout.decode().splitlines()
    entries = vmap.split(",")
    assert [e.split("=")[0] for e in entries] == ["/mnt/a", "/mnt/b"]
    host_a = entries[0].split("=", 1)[1]
    assert entries[1].endswith(":ro")
    assert cwd == os.path.join(host_a, "sub")
    assert host_a.endswith("/volumes/a") and os.path.isdir(host_a)
    kubectl("delete", "pod", "mapped", check=True)
    deadline = time.monotonic() + 5
    while os.path.exists(host_a) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(host_a), "the emptyDir outlived its pod"


def test_env_expansion_and_downward_api(ks, kubectl):
    c = container("main", image="cat", command=["sh", "-c", 'echo "$A|$B|$POD|$(A)"'],
                  env=[{"name": "A", "value": "one"}, {"name": "B", "value": "$(A)-two-$$(A)"},
                       {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath":
                                                                  "metadata.name"}}}])
    ks.create_pod(pod("envy", [], [c], volumes=()))
    ks.wait_phase("envy", "Succeeded")
    assert kubectl("logs", "envy", check=True).stdout == b"one|one-two-$(A)|envy|one\n"


def test_other_volume_types(ks, kubectl, tmp_path):
    vols = [{"name": "proj", "projected": {"sources": []}},
            {"name": "down", "downwardAPI": {"items": []}},
            {"name": "host", "hostPath": {"path": "/does/not/matter"}}]
    p = pod("othervols", [], [container("main", args=["map"], mounts=[
        ("proj", "/p", False), ("down", "/d", True), ("host", "/h", False)])], volumes=())
    p["spec"]["volumes"] = vols
    ks.create_pod(p)
    ks.wait_phase("othervols", "Succeeded")
    lines = kubectl("logs", "othervols", check=True).stdout.decode().splitlines()
    assert [(line.split()[0], line.split()[2]) for line in lines] == [
        ("/p", "rw"), ("/d", "ro"), ("/h", "rw")]
    assert all(os.listdir(line.split()[1]) == [] for line in lines)  # placeholders: empty
    f = tmp_path / "cm.yaml"
    f.write_text(json.dumps(pod("withcm", [], [container("main", args=["map"], mounts=[
        ("cfg", "/cfg", True)])], volumes=())).replace(
        '"volumes": []', '"volumes": [{"name": "cfg", "configMap": {"name": "x"}}]'))
    r = kubectl("create", "-f", str(f))
    assert r.returncode == 1
    assert 'The Pod "withcm" is invalid: spec.volumes[0].configMap: Forbidden: kubesim has no ' \
        'ConfigMaps' in err(r)
    f.write_text(json.dumps(pod("badmount", [], [container("main", args=["map"], mounts=[
        ("missing", "/m", False)])], volumes=())))
    r = kubectl("create", "-f", str(f))
    assert r.returncode == 1
    assert 'spec.containers[0].volumeMounts[0].name: Not found: "missing"' in err(r)


TEMPLATE = """\
apiVersion: v1
kind: PodTemplate
metadata:
  name: fn-template
  labels:
    krmpod.dev/template: "true"
template:
  metadata:
    labels:
      app: fn
  spec:
    restartPolicy: Never
    initContainers:
    - name: unpack
      image: example.com/krmpod:v1
    containers:
    - name: fn
      image: example.com/cat:v1
      stdin: true%s
"""


def test_podtemplates(ks, kubectl, tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text(TEMPLATE % "")
    r = kubectl("create", "-f", str(f))
    assert r.returncode == 0, err(r)
    assert r.stdout == b"podtemplate/fn-template created\n"
    r = kubectl("get", "podtemplates", check=True)
    rows = [line.split() for line in r.stdout.decode().splitlines()]
    assert rows == [["NAME", "CONTAINERS", "IMAGES", "POD", "LABELS"],
                    ["fn-template", "fn", "example.com/cat:v1", "app=fn"]]
    r = kubectl("get", "podtemplate", "fn-template", "-o", "json", check=True)
    t = json.loads(r.stdout)
    assert t["kind"] == "PodTemplate" and t["metadata"]["uid"]
    assert t["template"]["spec"]["initContainers"][0]["name"] == "unpack"
    assert t["template"]["spec"]["containers"][0]["terminationMessagePath"] == \
        "/dev/termination-log"
    r = kubectl("get", "podtemplates", "-l", "krmpod.dev/template=true", "-o", "name",
                check=True)
    assert r.stdout == b"podtemplate/fn-template\n"
    r = kubectl("create", "-f", str(f))
    assert r.returncode == 1 and 'podtemplates "fn-template" already exists' in err(r)
    f.write_text((TEMPLATE % "\n      stdinOnse: true").replace("fn-template", "typo"))
    r = kubectl("create", "-f", str(f))
    assert r.returncode == 1
    assert 'unknown field "template.spec.containers[0].stdinOnse"' in err(r)
    r = kubectl("get", "podtemplates", "--kubeconfig", os.path.join(ks.state,
                                                                    "kubeconfig-readonly"))
    assert r.returncode == 0 and b"fn-template" in r.stdout
    r = kubectl("delete", "podtemplate", "fn-template", check=True)
    assert r.stdout == b'podtemplate "fn-template" deleted\n'
    r = kubectl("get", "podtemplate", "fn-template")
    assert r.returncode == 1 and 'podtemplates "fn-template" not found' in err(r)


def test_networkpolicies(ks, kubectl, tmp_path):
    """What `krmpod doctor` reads: the policies of manifests/ created and listed by kubectl."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    src = open(os.path.join(root, "manifests", "functions", "networkpolicies.yaml")).read()
    f = tmp_path / "np.yaml"
    f.write_text(src.replace("namespace: krmpod-functions", "namespace: default"))
    r = kubectl("create", "-f", str(f))
    assert r.returncode == 0, err(r)
    assert r.stdout.decode().splitlines() == [
        "networkpolicy.networking.k8s.io/krmpod-deny-all created",
        "networkpolicy.networking.k8s.io/krmpod-network-granted created"]
    r = kubectl("get", "networkpolicies", "-o", "name", check=True)
    assert r.stdout.decode().split() == ["networkpolicy.networking.k8s.io/krmpod-deny-all",
                                         "networkpolicy.networking.k8s.io/krmpod-network-granted"]
    r = kubectl("get", "networkpolicy", "krmpod-deny-all", "-o", "json", check=True)
    assert json.loads(r.stdout)["spec"]["policyTypes"] == ["Ingress", "Egress"]
    r = kubectl("get", "networkpolicies", "--kubeconfig",
                os.path.join(ks.state, "kubeconfig-readonly"), "-o", "name")
    assert r.returncode == 0 and b"krmpod-deny-all" in r.stdout
    r = kubectl("delete", "-f", str(f), check=True)
    r = kubectl("get", "networkpolicies", "-o", "name", check=True)
    assert r.stdout == b""
    f.write_text(src.replace("policyTypes:", "policyType:", 1))
    r = kubectl("create", "-f", str(f))
    assert r.returncode == 1 and 'unknown field "spec.policyType"' in err(r), err(r)


def test_secrets(ks, kubectl, tmp_path):
    """What `krmpod doctor` reads of an image pull Secret: a dockerconfigjson Secret created
    by kubectl (stringData, as an admin writes it), its type read back; the read-only token
    may not read Secrets; a dockerconfigjson Secret without its key is refused as the API
    server refuses it. (kubectl's `create secret` sends protobuf, which kubesim does not
    decode.)"""
    cfg = json.dumps({"auths": {"reg.example.com:5444": {"auth": "dTpw"}}})
    f = tmp_path / "secret.yaml"
    f.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: pull-creds}\n"
                 "type: kubernetes.io/dockerconfigjson\nstringData:\n"
                 "  .dockerconfigjson: '%s'\n" % cfg)
    r = kubectl("create", "-f", str(f))
    assert r.returncode == 0, err(r)
    assert r.stdout.decode().strip() == "secret/pull-creds created"
    r = kubectl("get", "secret", "pull-creds", "-o", "json", check=True)
    obj = json.loads(r.stdout)
    assert obj["type"] == "kubernetes.io/dockerconfigjson", obj
    assert json.loads(base64.b64decode(obj["data"][".dockerconfigjson"])) == json.loads(cfg)
    r = kubectl("get", "secret", "pull-creds", "--kubeconfig",
                os.path.join(ks.state, "kubeconfig-readonly"))
    assert r.returncode == 1 and 'secrets "pull-creds" is forbidden' in err(r), err(r)
    code, obj = ks.api("POST", "/api/v1/namespaces/default/secrets", {
        "metadata": {"name": "broken"}, "type": "kubernetes.io/dockerconfigjson",
        "data": {}})
    assert code == 422 and "data[.dockerconfigjson]: Required value" in obj["message"], obj
    kubectl("delete", "secret", "pull-creds", check=True)
    r = kubectl("get", "secret", "pull-creds")
    assert r.returncode == 1 and 'secrets "pull-creds" not found' in err(r), err(r)


def test_a_post_start_hook_runs_before_the_next_container_starts(ks, kubectl):
    """As the kubelet: containers start one after another in one sync, and a container's
    postStart exec hook runs to its end before the next one starts (exec mode's installer
    relies on it); a failed hook gets its container killed."""
    w = [("work", "/work", False)]

    def hook(*args):
        return {"postStart": {"exec": {"command": ["fsop"] + list(args)}}}
    ks.create_pod(pod("hooked", [], [
        container("first", args=["write", "/work/sink"], mounts=w, stdin=True,
                  lifecycle=hook("append", "/work/order", "hook\\n")),
        container("second", args=["cat", "/work/order"], mounts=w)]))
    p = ks.wait_pod("hooked", lambda p: "terminated" in
                    statuses(p, "containerStatuses").get("second", {}).get("state", {}),
                    what="second container done")
    _, term = state(statuses(p, "containerStatuses")["second"])
    assert term["exitCode"] == 0, term
    r = kubectl("logs", "hooked", "-c", "second", check=True)
    assert r.stdout == b"hook\n"
    ks.create_pod(pod("badhook", [], [
        container("first", args=["write", "/work/sink"], mounts=w, stdin=True,
                  lifecycle=hook("cat", "/work/missing"))]))
    p = ks.wait_pod("badhook", lambda p: "terminated" in
                    statuses(p, "containerStatuses").get("first", {}).get("state", {}),
                    what="the container killed")
    _, term = state(statuses(p, "containerStatuses")["first"])
    assert term["exitCode"] != 0, term
