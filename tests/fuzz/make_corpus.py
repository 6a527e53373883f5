#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets, tests/fuzz/corpus/NAME/ (tests/fuzz/README.md).

The seeds are real inputs the other tests use: the API server's answers recorded in
tests/conformance/data (Pods, Statuses, watch events, attach messages, /version), the
kustomizations of examples/ and tests/fixtures/kustomize, the unit tests' docker lines,
kubeconfigs, catalogs, manifests and challenges, and archives made with tarfile, hostile ones
included. Each seed is small; the fuzzers find the rest.

    tests/fuzz/make_corpus.py        (re)writes the corpora; run from anywhere
"""
import base64
import io
import json
import os
import re
import shutil
import struct
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
MAX_SEED = 8192

D64 = "a428de44a9059b6d8a4e3aba6d1bb6bb9c3e1ee6c2c3e0f2b0a4d6f1e2c3b4a5"
DA = "sha256:" + D64
DB = "sha256:" + "b" * 64


def read(*path):
    with open(os.path.join(ROOT, *path), "rb") as f:
        return f.read()


class Corpus:
    def __init__(self, name):
        self.dir = os.path.join(CORPUS, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)

    def add(self, name, data):
        if isinstance(data, str):
            data = data.encode()
        if len(data) > MAX_SEED:
            return
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(data)


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def conformance():
    """(case, step name, answer) of every recorded step."""
    data = os.path.join(ROOT, "tests", "conformance", "data")
    for name in sorted(os.listdir(data)):
        with open(os.path.join(data, name)) as f:
            case = json.load(f)
        for step in case.get("steps", []):
            yield case["case"], step.get("name", "step"), step.get("answer", {})


def body_of(answer):
    body = answer.get("body")
    if isinstance(body, (dict, list)):
        return compact(body)
    return body if isinstance(body, str) else None


def slug(*parts):
    return re.sub(r"[^A-Za-z0-9]+", "-", "-".join(parts)).strip("-").lower()


# --- docker_args ------------------------------------------------------------------------

def c_strings(text):
    """The C string literals of text, unescaped."""
    out = []
    for m in re.finditer(r'"((?:[^"\\]|\\.)*)"', text):
        out.append(re.sub(r"\\(.)", lambda e: {"n": "\n", "t": "\t"}.get(e.group(1), e.group(1)),
                          m.group(1)))
    return out


def argv_literals(path):
    """Each ARGV(...) of a unit test, as its list of strings."""
    text = read(path).decode()
    for m in re.finditer(r"\bARGV\(", text):
        i, depth, in_str = m.end(), 1, False
        while i < len(text) and depth:
            c = text[i]
            if in_str:
                if c == "\\":
                    i += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            i += 1
        yield c_strings(text[m.end():i - 1])


def docker_args():
    c = Corpus("docker_args")
    for i, argv in enumerate(argv_literals("tests/unit/test_docker_args.c")):
        c.add("unit-%02d" % i, "\0".join(argv))
    c.add("kpt-line", "\0".join([
        "--rm", "-i", "--network", "none", "--user", "65532:65532",
        "--security-opt=no-new-privileges", "-e", "FOO", "--mount",
        "type=bind,source=/home/u/app/data,target=/data,readonly",
        "--mount", "type=tmpfs,src=/ignored,dst=/tmp/scratch",
        "gcr.io/kpt-fn/set-labels:v0.2.0", "--", "arg"]))
    c.add("version-format", "\0".join(["1.2.3-dirty.007", "--format", "{{ .Server.Version }}"]))
    c.add("version-json", "\0".join(["0ad1771", "-f", "{{json .}}"]))


# --- kubeconfig -------------------------------------------------------------------------

KUBECONFIG = """apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster:
    server: {server}
{cluster}users:
- name: u
  user:
{user}contexts:
- name: c
  context: {{cluster: k, user: u, namespace: fns}}
"""


def kubeconfig():
    c = Corpus("kubeconfig")

    def kc(name, server="https://gw.example.com/k8s/", cluster="", user="    token: t\n",
           extra=""):
        c.add(name, KUBECONFIG.format(server=server, cluster=cluster, user=user) + extra)

    kc("token-prefix")
    kc("ca-data", cluster="    certificate-authority-data: aGVsbG8=\n")
    kc("ca-file", cluster="    certificate-authority: ca.crt\n    tls-server-name: api.local\n",
       extra="#@ ca.crt\n-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n"
             "-----END CERTIFICATE-----\n")
    kc("insecure", server="https://10.96.0.1:443",
       cluster="    insecure-skip-tls-verify: true\n")
    kc("insecure-and-ca", cluster="    insecure-skip-tls-verify: true\n"
                                  "    certificate-authority-data: aGVsbG8=\n")
    kc("ipv6", server="https://[fd00::1]:6443/k8s")
    kc("client-cert", user="    client-certificate-data: Y2VydA==\n"
                           "    client-key-data: a2V5\n")
    kc("client-cert-files", user="    client-certificate: tls/client.crt\n"
                                 "    client-key: tls/client.key\n",
       extra="#@ tls/client.crt\n-----BEGIN CERTIFICATE-----\nY2VydA==\n"
             "-----END CERTIFICATE-----\n#@ tls/client.key\n-----BEGIN EC PRIVATE KEY-----\n"
             "a2V5\n-----END EC PRIVATE KEY-----\n")
    kc("cert-without-key", user="    client-certificate-data: Y2VydA==\n")
    kc("token-file", user="    tokenFile: token\n", extra="#@ token\nsecret-token\n")
    kc("empty-token-file", user="    tokenFile: token\n", extra="#@ token\n \n")
    kc("exec-user", user="    exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}\n")
    kc("http-server", server="http://plain.example.com")
    kc("bad-port", server="https://api.example.com:70000")
    kc("bad-base64", cluster="    certificate-authority-data: '!!!'\n")
    c.add("merged", "current-context: c\n"
                    "contexts: [{name: c, context: {cluster: k2, user: u2}}]\n"
                    "#@ config2\n"
                    "current-context: other\n"
                    "clusters: [{name: k2, cluster: {server: 'https://b.example.com:8443/'}}]\n"
                    "users: [{name: u2, user: {token: t2}}]\n")
    c.add("no-context", "apiVersion: v1\nkind: Config\nclusters: []\n")
    c.add("json", compact({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                           "clusters": [{"name": "k", "cluster": {"server": "https://k"}}],
                           "contexts": [{"name": "c", "context": {"cluster": "k"}}]}))


# --- json, kube_status, ws_frame -----------------------------------------------------------

def api_answers():
    json_c, status_c, ws_c = Corpus("json"), Corpus("kube_status"), Corpus("ws_frame")
    seen_json = seen_status = seen_watch = 0
    for case, step, answer in conformance():
        body = body_of(answer)
        name = slug(case, step)
        if body and seen_json < 20:
            json_c.add(name, body)
            seen_json += 1
        code = int(answer.get("code", "200") or 200)
        if body and seen_status < 14 and (code >= 400 or '"kind":"Pod"' in body or
                                          "gitVersion" in body):
            status_c.add(name, struct.pack(">H", (code - 100) % 500) + body.encode())
            seen_status += 1
        events = answer.get("events")
        if isinstance(events, str):
            events = None
        if events and seen_watch < 6:
            lines = "".join(compact(e) + "\n" for e in events[-2:])
            status_c.add(name + "-watch", struct.pack(">H", 100) + lines.encode())
            seen_watch += 1
        messages = answer.get("messages")
        if isinstance(messages, list) and messages:
            ws_c.add(name, frames(messages))
    # YAML the reader also takes
    json_c.add("kustomization", read("examples/catalog-app/kustomization.yaml"))
    json_c.add("yaml-types", "a: ~\nb: [yes, True, 1.5e3, -.5, +1, 0x10, '1', null, ]\n"
                             "c: {? x : y, \"q\\u00e9\\t\": !!str 12}\nd: |\n  line\n")
    json_c.add("escapes", '"\\N \\L \\P \\x7f \\x85 \\uFFFE \\0 \\e \\a"')
    # the statuses and watch lines of the unit tests
    status_c.add("status-422", struct.pack(">H", 322) + compact({
        "kind": "Status", "status": "Failure", "reason": "Invalid", "code": 422,
        "message": "Pod \"x\" is invalid: spec.containers[0].image: Required value",
        "details": {"causes": [{"reason": "FieldValueRequired", "field": "spec.image",
                                "message": "Required value"}]}}).encode())
    status_c.add("plain-429", struct.pack(">H", 329) + b"Too many requests, retry later\n")
    status_c.add("watch-expired", struct.pack(">H", 100) + (compact(
        {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}) +
        "\n" + compact({"type": "BOOKMARK", "object": {"metadata": {
            "resourceVersion": "12345"}}}) + "\r\n").encode())
    status_c.add("retry-after", struct.pack(">H", 403) + b"Sun, 06 Nov 1994 08:49:37 GMT")
    status_c.add("version-managed", struct.pack(">H", 100) + compact(
        {"major": "1", "minor": "30+", "gitVersion": "v1.30.0-gke.1"}).encode())
    ws_c.add("exit-code", frames([[1, "out"], [2, "err"], [3, {
        "status": "Failure", "reason": "NonZeroExitCode", "details": {"causes": [
            {"reason": "ExitCode", "message": "3"}]}}], [255, "\x00\x01"]]))
    ws_c.add("split-status", frames([[3, {"status": "Success"}]], piece=7))
    ws_c.add("unknown-channel", frames([[9, "x"]]))


def frames(messages, piece=200):
    """Attach messages [channel, payload] as the ws_frame target's pieces."""
    out = b""
    for channel, payload in messages:
        if not isinstance(payload, str):
            payload = compact(payload)
        data = bytes([channel % 256]) + payload.encode("utf-8", "surrogateescape")
        chunks = [data[i:i + piece] for i in range(0, len(data), piece)] or [b""]
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            out += bytes([1 if last else 0, len(chunk)]) + chunk
    return out


# --- tar_unpack ---------------------------------------------------------------------------

def tar(entries, fmt=tarfile.USTAR_FORMAT):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for e in entries:
            info = tarfile.TarInfo(e[0])
            info.type = e[1]
            info.mode = e[3] if len(e) > 3 else (0o755 if e[1] == tarfile.DIRTYPE else 0o644)
            info.mtime = 1700000000
            data = None
            if e[1] == tarfile.REGTYPE:
                data = e[2].encode() if isinstance(e[2], str) else e[2]
                info.size = len(data)
            elif e[1] in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                info.linkname = e[2]
            elif e[1] in (tarfile.CHRTYPE, tarfile.BLKTYPE):
                info.devmajor, info.devminor = 1, 3
            t.addfile(info, io.BytesIO(data) if data else None)
    # tarfile pads to 10240-byte records: keep the end marker (two zero blocks) only
    body = buf.getvalue().rstrip(b"\0")
    return body + b"\0" * (-len(body) % 512 + 1024)


def with_header(archive, offset, field, value):
    """archive with the header at offset given value in a field (the checksum made right)."""
    fields = {"size": (124, 12), "mtime": (136, 12), "mode": (100, 8), "type": (156, 1)}
    start, length = fields[field]
    b = bytearray(archive)
    b[offset + start:offset + start + length] = value.ljust(length, b"\0")[:length]
    b[offset + 148:offset + 156] = b" " * 8
    b[offset + 148:offset + 156] = b"%06o\0 " % sum(b[offset:offset + 512])
    return bytes(b)


def tar_unpack():
    c = Corpus("tar_unpack")
    D, F, L, H = tarfile.DIRTYPE, tarfile.REGTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE
    c.add("mounts", tar([("0", D), ("0/data", D), ("0/data/a.txt", F, "hello\n"),
                         ("0/data/rel", L, "a.txt"), ("0/data/sub", D, None, 0o500),
                         ("0/data/sub/b.txt", F, "b" * 600, 0o600), ("1", D),
                         ("1/single.txt", F, "one file\n")]))
    long = "0/" + "/".join(["d%03d" % i for i in range(12)])
    c.add("pax-long-paths", tar([("0/" + "x" * 150, F, "long name"), ("0/l", L, "y" * 120)],
                                fmt=tarfile.PAX_FORMAT))
    c.add("deep", tar([(long[:i], D) for i in range(3, len(long) + 1)
                       if i == len(long) or long[i] == "/"] + [(long + "/f", F, "deep")]))
    c.add("dotdot", tar([("0/../../etc/x", F, "x")]))
    c.add("absolute", tar([("/0/x", F, "x"), ("/etc/passwd", F, "root::0:0::/:/bin/sh\n")]))
    c.add("symlink-out", tar([("0/l", L, "/etc"), ("0/c", D), ("0/c/up", L, "../../x")]))
    c.add("symlink-then-file", tar([("0/d", D), ("0/l", L, "d"), ("0/l/f", F, "x")]))
    c.add("symlink-chain", tar([("0/d1", D), ("0/d1/l", L, ".."), ("0/x", L, "d1/l/../..")]))
    c.add("hardlink", tar([("0/f", F, "x"), ("0/h", H, "0/f"), ("0/e", H, "/etc/shadow")]))
    c.add("devices", tar([("0/null", tarfile.CHRTYPE), ("0/fifo", tarfile.FIFOTYPE),
                          ("0/disk", tarfile.BLKTYPE)]))
    c.add("gnu-longname", tar([("0/" + "g" * 120, F, "gnu")], fmt=tarfile.GNU_FORMAT))
    c.add("duplicate", tar([("0/f", F, "x"), ("0/f", F, "y"), ("0/d", D), ("0/d", D)]))
    c.add("no-mount", tar([("7/x", F, "x"), ("00/x", F, "x"), ("x", F, "x")]))
    ok = tar([("0/a", F, "12345")])
    c.add("huge-size", with_header(ok, 0, "size", b"77777777777"))
    c.add("big-mtime", with_header(ok, 0, "mtime", b"100000000000"))
    c.add("dir-with-data", with_header(tar([("0/d", D)]), 0, "size", b"00000000010"))
    c.add("cut-short", ok[:700])
    c.add("bad-checksum", ok[:148] + b"0000000\0" + ok[156:])
    c.add("zero-then-data", b"\0" * 512 + ok[:512] + b"\0" * 1024)
    pax = b"30 path=0/pax-named-file.txt\n"
    c.add("pax-bad-records", tar([("0/p", F, "p")], fmt=tarfile.PAX_FORMAT).replace(
        b"path=", b"pxth=", 1) + pax)


# --- kustomization, yaml_edit -------------------------------------------------------------

def tree(directory, first="kustomization.yaml"):
    """A directory's files as one seed: `first`, then "#@ NAME" and each other file."""
    out = read(directory, first)
    for name in sorted(os.listdir(os.path.join(ROOT, directory))):
        if name != first and os.path.isfile(os.path.join(ROOT, directory, name)):
            out += b"#@ " + name.encode() + b"\n" + read(directory, name)
    return out


def kustomization():
    c = Corpus("kustomization")
    c.add("catalog-app", tree("examples/catalog-app"))
    c.add("demo-app", tree("examples/demo-app"))
    c.add("transform-generate", tree("tests/fixtures/kustomize/transform-generate"))
    c.add("layers", "resources:\n- base\n- ../outside\n- https://github.com/x/y\n"
                    "components: [comp]\nbases: [old]\ncatalogs: [catalog.yaml, "
                    "'oci://r.example/c:v1']\ntransformers:\n- fns\n- |\n"
                    "  apiVersion: example.com/v1\n  kind: Inline\n  metadata:\n"
                    "    annotations:\n      config.kubernetes.io/function: |\n"
                    "        container: {image: example.com/inline:v1, network: true}\n"
                    "#@ base/kustomization.yaml\nresources: [../base, cm.yaml]\n"
                    "transformers: [fn.yaml]\n"
                    "#@ base/fn.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                    "  annotations:\n    config.k8s.io/function: 'container: {image: legacy}'\n"
                    "#@ comp/kustomization.yaml\nkind: Component\n"
                    "#@ fns/kustomization.yaml\nresources: [a.yaml]\n"
                    "#@ fns/a.yaml\nkind: A\nmetadata:\n  annotations:\n"
                    "    krmpod.dev/mounts: data\n    krmpod.dev/cpu-limit: 500m\n"
                    "    config.kubernetes.io/function: |\n      container:\n"
                    "        image: a:v1\n        envs: [X, Y=1]\n"
                    "        mounts: [{type: bind, src: d, dst: /d}]\n---\n# only a comment\n")
    c.add("missing-file", "generators: [nothere.yaml]\n")
    c.add("bad-annotation", "transformers:\n- |\n  metadata: {annotations: "
                            "{config.kubernetes.io/function: '[unclosed'}}\n")
    c.add("cycle", "resources: [a]\n#@ a/kustomization.yaml\nresources: [../a, ..]\n")
    c.add("Kustomization-name", "resources: [sub]\n#@ sub/Kustomization\nresources: []\n")

    y = Corpus("yaml_edit")
    y.add("catalog-app", read("examples/catalog-app/kustomization.yaml"))
    y.add("demo-app", read("examples/demo-app/kustomization.yaml"))
    for name in ("label.yaml", "generate.yaml"):
        y.add("demo-" + name, read("examples/demo-app", name))
    y.add("fixture", read("tests/fixtures/kustomize/transform-generate/kustomization.yaml"))
    y.add("styles", "# a comment\ncatalogs:\n- a.yaml\nplain: x\nsingle: 'x'\ndouble: \"x\"\n"
                    "tagged: !!str 12\nanchor: &a {k: v}\nalias: *a\nlit: |\n  one\n  two\n"
                    "folded: >-\n  one\n  two\nempty:\nflow: {a: , b: [1, ~]}\n"
                    "transformers: [fn.yaml, \"q.yaml\", {not: a string}]\n")
    y.add("meta-null", "apiVersion: v1\nkind: ConfigMap\nmetadata: ~\n---\nkind: Skip\n"
                       "metadata: {annotations: null}\n---\n- not a mapping\n---\nplain\n")
    y.add("annotated", "apiVersion: example.com/v1\nkind: SetLabels\nmetadata:\n  name: x\n"
                       "  annotations:\n    config.kubernetes.io/function: old\n"
                       "    other: 'y'\ngenerators:\n- |\n  kind: Inline\n")
    y.add("json", compact({"apiVersion": "v1", "kind": "List", "catalogs": ["x"],
                           "validators": ["a", "b"], "items": [1, "2", True, None]}))


# --- pod_template, catalog, registry ------------------------------------------------------

def pod_template():
    c = Corpus("pod_template")
    template = {
        "metadata": {"labels": {"team": "platform", "sandbox": "gvisor"},
                     "annotations": {"example.com/owner": "platform-team",
                                     "krmpod.dev/image": "overridden"}},
        "spec": {
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "krm",
                             "effect": "NoSchedule"}],
            "nodeSelector": {"pool": "functions"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "pool", "operator": "In", "values": ["functions"]}]}]}}},
            "priorityClassName": "krm-functions",
            "imagePullSecrets": [{"name": "registry-creds"}],
            "runtimeClassName": "gvisor",
            "volumes": [{"name": "ca", "emptyDir": {}}],
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "fn", "image": "ignored.example.com/not-used",
                "resources": {"requests": {"cpu": "250m", "memory": "128Mi"},
                              "limits": {"cpu": "2", "memory": "1Gi"}},
                "volumeMounts": [{"name": "ca", "mountPath": "/etc/extra-ca", "readOnly": True}],
                "securityContext": {"allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]}},
            }],
        },
    }
    c.add("podtemplate", compact({"apiVersion": "v1", "kind": "PodTemplate",
                                  "metadata": {"name": "functions"}, "template": template}))
    c.add("template-only", compact(template))
    c.add("yaml", "metadata:\n  labels: {a: b}\nspec:\n  hostNetwork: false\n"
                  "  automountServiceAccountToken: false\n  containers:\n  - name: x\n"
                  "    securityContext: {privileged: false, runAsUser: 7}\n")
    bad = [
        {"spec": {"hostNetwork": True}},
        {"spec": {"hostPID": True, "hostIPC": True}},
        {"spec": {"automountServiceAccountToken": True}},
        {"spec": {"securityContext": {"runAsNonRoot": False}}},
        {"spec": {"securityContext": {"runAsUser": 0}}},
        {"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}},
        {"spec": {"containers": [{"securityContext": {"privileged": True}}]}},
        {"spec": {"containers": [{"securityContext": {"allowPrivilegeEscalation": True}}]}},
        {"spec": {"containers": [{"securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]}},
        {"spec": {"volumes": [{"name": "host", "hostPath": {"path": "/"}}]}},
        {"spec": {"volumes": [{"name": "krmpod-mount-0", "emptyDir": {}}]}},
        {"spec": {"initContainers": [{"name": "x", "image": "busybox"}]}},
        {"metadata": {"labels": {"app.kubernetes.io/managed-by": "me"}}},
        {"metadata": {"labels": {"krmpod.dev/network": "granted"}}},
        {"metadata": {"labels": {"n": 1}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {}},
    ]
    for i, doc in enumerate(bad):
        c.add("refused-%02d" % i, compact(doc))


def catalog():
    c = Corpus("catalog")
    c.add("catalog-app", read("examples/catalog-app/catalog.yaml"))
    fn = {"group": "example.com", "names": {"kind": "SetLabels"}, "description": "d",
          "publisher": "p", "home": "https://example.com", "maintainers": [], "tags": ["t"],
          "versions": [{"name": "v1", "idempotent": True, "usage": "u", "license": "MIT",
                        "schema": {"openAPIV3Schema": {"type": "object"}}, "examples": [],
                        "runtime": {"container": {
                            "image": "registry.example.co/fns/set-labels:v1.2.3",
                            "sha256": D64, "requireNetwork": True,
                            "requireStorageMount": False}}},
                       {"name": "v2", "runtime": {"container": {
                           "image": "registry.example.co:5000/fns/set-labels@" + DA}}}]}
    doc = {"apiVersion": "config.kubernetes.io/v1alpha1", "kind": "KRMFunctionCatalog",
           "metadata": {"name": "example-co-functions"}, "spec": {"krmFunctions": [
               fn, {"group": "", "names": {"kind": "Core"}, "versions": [
                   {"name": "v1", "runtime": {"container": {"image": "core:latest"}}}]}]}}
    c.add("krmfunctioncatalog", compact(doc))
    refused = [
        ("exec", {"exec": {"path": "/bin/fn"}}),
        ("semver-without-digest", {"container": {"image": "r/fn:v1.2.3"}}),
        ("digest-disagrees", {"container": {"image": "r/fn@" + DA, "sha256": "b" * 64}}),
        ("unknown-field", {"container": {"image": "r/fn:latest", "privileged": True}}),
    ]
    for name, runtime in refused:
        bad = json.loads(json.dumps(doc))
        bad["spec"]["krmFunctions"][0]["versions"][0]["runtime"] = runtime
        c.add(name, compact(bad))
    c.add("refs", "\n".join([
        "/etc/krmpod/catalogs/catalog.yaml#" + DA,
        "https://catalogs.example.com/fns.yaml",
        "oci://registry.example.co:5000/fns/catalog:v1",
        "oci://registry.example.co/fns/catalog@" + DA + "#" + DA,
        "catalog.yaml, /abs.yaml,,",
        "http://insecure.example.com/c.yaml",
        "example.com/v1",
        "registry.example.co:5000/fns/x:v1.2.3-rc.1+build@" + DA]) + "\n")


def registry():
    c = Corpus("registry")
    layer = "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"
    c.add("oci-manifest", compact({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": DA,
                   "size": 2},
        "layers": [{"mediaType": "application/x-other", "digest": DA, "size": 1},
                   {"mediaType": layer, "digest": DB, "size": 42}]}))
    c.add("docker-manifest", compact({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                   "digest": DA, "size": 1469},
        "layers": [{"mediaType": layer, "digest": "sha512:" + D64, "size": 7}]}))
    c.add("index", compact({"mediaType": "application/vnd.oci.image.index.v1+json",
                            "manifests": [
                                {"digest": DA, "size": 1, "platform": {
                                    "os": "linux", "architecture": "arm64"}},
                                {"digest": DB, "size": 2, "platform": {
                                    "os": "linux", "architecture": "amd64", "variant": "v3"}},
                                {"digest": DA, "size": 3, "platform": {
                                    "os": "linux", "architecture": "amd64"}}]}))
    c.add("schema1", compact({"schemaVersion": 1, "fsLayers": []}))
    c.add("image-config", compact({
        "architecture": "amd64", "os": "linux", "config": {
            "Entrypoint": ["/usr/local/bin/fn"], "Cmd": ["--serve"],
            "Env": ["PATH=/usr/bin", "FN_MODE=krm"], "WorkingDir": "/work", "User": "nobody"}}))
    c.add("image-config-nulls", '{"config":{"Entrypoint":null,"WorkingDir":"","User":"",'
                                '"Cmd":[1]}}')
    c.add("dockerconfigjson", compact({"auths": {
        "https://index.docker.io/v1/": {"auth": "dXNlcjpwYXNz"},
        "registry.example.co:5000": {"username": "u", "password": "p"},
        "http://localhost:5000/v2/": {"auth": "bm9jb2xvbg=="},
        "[::1]:5000": {"identitytoken": "t"}}}))
    c.add("dockerconfigjson-kubelet", compact({"auths": {
        "*.example.co": {"auth": "dXNlcjpwYXNz"},
        "a.example.co/team/": {"username": "u", "password": "p"},
        "https://a.example.co/v2/team/app": {"auth": "dTI6cGE6c3M="},
        "docker.io/library/": {"username": "hub", "password": "p"},
        "registry.example.co:5000/team": {"username": "t", "password": "p"},
        "oci://registry.example.co:5000": {"auth": "x"}}}))
    c.add("challenges-and-refs", "\n".join([
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:library/alpine:pull"',
        'bearer  Realm = "http://h/t?a=1,b=\\"2\\"" , SERVICE=reg.test,'
        'scope="repository:a:pull,push",error="insufficient_scope"',
        'Basic realm="Registry Realm"',
        'Bearer realm="x",service="y", Basic realm="z"',
        'Bearer realm="x',
        "alpine",
        "reg.io:5000/a/b:t@" + DA,
        "index.docker.io/library/x__y.z--w:1.0",
        "[fd00::1]:5000/repo@sha256:short"]) + "\n")


def sign():
    """Bundles as cosign v3 writes them (tests/realkube/test_signatures.py saw them), a
    simple-signing payload as cosign v2 writes it, and signature policies."""
    c = Corpus("sign")
    digest = "sha256:a2add098a88cc3623fc94b6048fcba81073c82e57c0909139b34b8e556e89216"
    statement = compact({"_type": "https://in-toto.io/Statement/v1",
                         "subject": [{"digest": {"sha256": digest[7:]}, "annotations": {}}],
                         "predicateType": "https://sigstore.dev/cosign/sign/v1",
                         "predicate": {}})
    sig = "MEUCIA12Fd2Ed+CObC2RTElpgidh5LxHyq/QMF53/OtqlQugAiEAn2OIAIAkKLE7x4BguHEPBqrxeUh6cO1mNVXm5vkEfvU="
    bundle = {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
              "verificationMaterial": {"publicKey": {"hint": "xruREySPyBm0JDjmAPe3gTqz9vQp/C7RNWu2IQgxd0s="}},
              "dsseEnvelope": {"payload": base64.b64encode(statement.encode()).decode(),
                               "payloadType": "application/vnd.in-toto+json",
                               "signatures": [{"sig": sig}]}}
    c.add("bundle", compact(bundle))
    c.add("bundle-blob", compact({"mediaType": bundle["mediaType"], "messageSignature": {
        "messageDigest": {"algorithm": "SHA2_256", "digest": "AAAA"}, "signature": sig}}))
    c.add("payload", compact({"critical": {
        "identity": {"docker-reference": "10.245.0.1:5443/kptdev/krm-functions-catalog/starlark"},
        "image": {"docker-manifest-digest": digest}, "type": "cosign container image signature"},
        "optional": None}))
    pem = ("-----BEGIN PUBLIC KEY-----\n"
           "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE1lRyRAP0VnI6lPdSjIUiHMuR036V\n"
           "xaleYK4SSlvkIf7aVpSQ76P584AdGaKWXSq0OwCp+Xyus1SpIBrAZk4L/w==\n"
           "-----END PUBLIC KEY-----\n")
    c.add("policy", "apiVersion: krmpod.dev/v1alpha1\nkind: SignaturePolicy\nkeys:\n"
          "- name: platform\n  publicKey: |\n" +
          "".join("    %s\n" % l for l in pem.splitlines()) +
          "requirements:\n- images: [\"registry.example.co/fns/*\"]\n  catalogs: [c]\n"
          "  keys: [platform]\n")
    c.add("policy-empty", "apiVersion: krmpod.dev/v1alpha1\nkind: SignaturePolicy\n"
          "keys: []\nrequirements: []\n")
    c.add("policy-tlog", "apiVersion: krmpod.dev/v1alpha1\nkind: SignaturePolicy\n"
          "keys: []\nrequirements: []\ntransparencyLog: {}\n")


def main():
    docker_args()
    kubeconfig()
    api_answers()
    tar_unpack()
    kustomization()
    pod_template()
    catalog()
    registry()
    sign()


if __name__ == "__main__":
    main()
