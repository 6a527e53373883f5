"""Applications through upstream Argo CD (tests/realkube/argocd.py): the real application
controller asks the real repo-server, which fetches the test repository over git from a
server in the cluster (e2e/git-server.yaml), builds the real tarball and sends it to the
real argocd-cmp-server in the krmpod sidecar, which runs plugin.yaml's discover, init and
generate. Cases a-i of issue 20 (docs/testing.md, "The real Argo CD")."""
import json
import os
import re
import subprocess
import time

import pytest
import yaml

import argocd
from apps import MOUNT_DATA, tree
from conftest import ARGOCD_NS, FN_NS, MARKER, Sidecar, current_repo_server_pod, fresh_namespace
from images import FN_IMAGE
from kube import kubectl
from sidecar import direct_build

PLUGIN = "krmpod-v1"  # plugin.yaml: metadata.name-spec.version
DEST_PREFIX = "krmpod-argo-"


def fn_doc(name, image, data=None, extra=""):
    """A containerized transformer's config (kustomize's function annotation)."""
    return ("apiVersion: krmpod.test/v1\nkind: Fn\nmetadata:\n  name: %s\n  annotations:\n"
            "    config.kubernetes.io/function: |\n      container:\n        image: %s\n%s%s"
            % (name, image, extra,
               ("data:\n" + "".join("  %s: %s\n" % kv for kv in data.items())) if data else ""))


OBJECTS = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n"
           "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n"
           "  - port: 80\n    targetPort: 8080\n  selector:\n    app: web\n")
LABELS = {"team": "gitops", "tier": "web"}

# What Argo CD gives generate (docs: the plugin environment), as far as e2e/debug-generate.sh
# reproduces it
BUILD_ENV = ["ARGOCD_APP_NAME", "ARGOCD_APP_REVISION", "ARGOCD_APP_REVISION_SHORT",
             "ARGOCD_APP_SOURCE_PATH", "ARGOCD_APP_SOURCE_REPO_URL",
             "ARGOCD_APP_SOURCE_TARGET_REVISION", "ARGOCD_APP_PROJECT_NAME", "ARGOCD_APP_NAMESPACE",
             "ARGOCD_APP_PARAMETERS", "KUBE_VERSION", "KUBE_API_VERSIONS"]

# The test repository: one tree, every case's app under apps/.
REPO = {
    # a: two containerized functions (set-labels, then add-label)
    "apps/fns/kustomization.yaml": "resources:\n- objects.yaml\ntransformers:\n- labels.yaml\n"
                                   "- mark.yaml\n",
    "apps/fns/objects.yaml": OBJECTS,
    "apps/fns/labels.yaml": fn_doc("labels", FN_IMAGE % "set-labels", LABELS),
    "apps/fns/mark.yaml": fn_doc("mark", FN_IMAGE % "add-label"),
    # e: the same objects and a function that fails
    "apps/fns-failing/kustomization.yaml": "resources:\n- objects.yaml\ntransformers:\n"
                                           "- labels.yaml\n- fail.yaml\n",
    "apps/fns-failing/objects.yaml": OBJECTS,
    "apps/fns-failing/labels.yaml": fn_doc("labels", FN_IMAGE % "set-labels", LABELS),
    "apps/fns-failing/fail.yaml": fn_doc("fail", FN_IMAGE % "fail"),
    # c: no function at all: Argo CD's built-in kustomize
    "apps/plain/kustomization.yaml": "resources:\n- objects.yaml\ncommonLabels:\n  plain: 'yes'\n",
    "apps/plain/objects.yaml": OBJECTS,
    # d: what a function's environment holds (read-mount reports ENV_<name>)
    "apps/env/kustomization.yaml": "generators:\n- gen.yaml\n",
    "apps/env/gen.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: env-probe\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n        image: %s\n"
        "        envs:\n        - COLOR\n        - PARAM_SIZE\n        - STATIC=fixed\n"
        "data:\n  name: seen\n  dirs: ''\n  env: COLOR,PARAM_SIZE,STATIC,ARGOCD_ENV_COLOR,"
        "ARGOCD_APP_NAME,ARGOCD_APP_NAMESPACE,ARGOCD_APP_PARAMETERS,ARGOCD_APP_REVISION,"
        "ARGOCD_APP_SOURCE_REPO_URL,KUBE_VERSION,KRMPOD_MODE,GIT_USERNAME,GIT_PASSWORD,"
        "GIT_ASKPASS,HOME,PARAM_OTHER\n" % (FN_IMAGE % "read-mount")),
    # k: a function that takes 8 s
    "apps/slowish/kustomization.yaml": "resources:\n- objects.yaml\ntransformers:\n"
                                       "- slow.yaml\n",
    "apps/slowish/objects.yaml": OBJECTS,
    "apps/slowish/slow.yaml": fn_doc("slow", FN_IMAGE % "slow-cat",
                                     extra="        envs:\n        - SLOW_SECONDS=8\n"),
    # l: the values of Argo CD's build environment, named one by one
    "apps/envall/kustomization.yaml": "generators:\n- gen.yaml\n",
    "apps/envall/gen.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: env-probe\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n        image: %s\n"
        "        envs:\n%s"
        "data:\n  name: build-env\n  dirs: ''\n  env: %s\n" % (
            FN_IMAGE % "read-mount", "".join("        - %s\n" % n for n in BUILD_ENV),
            ",".join(BUILD_ENV))),
    # f, h: a function that sleeps for a minute
    "apps/slow/kustomization.yaml": "resources:\n- objects.yaml\ntransformers:\n- sleep.yaml\n",
    "apps/slow/objects.yaml": OBJECTS,
    "apps/slow/sleep.yaml": fn_doc("sleep", FN_IMAGE % "sleep"),
    # i: a base in ../ and a mount, under the real tarball
    "apps/tree/base/kustomization.yaml": "resources:\n- objects.yaml\n",
    "apps/tree/base/objects.yaml": OBJECTS,
    "apps/tree/overlay/kustomization.yaml": "resources:\n- ../base\ngenerators:\n- gen.yaml\n",
    "apps/tree/overlay/gen.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mount-probe\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n        image: %s\n"
        "        mounts:\n        - type: bind\n          src: files\n          dst: /work\n"
        "data:\n  name: mounted\n  dirs: /work\n" % (FN_IMAGE % "read-mount")),
}
# m: real functions (tests/realkube/realfns.py): the organisation's generator expands an App,
# its defaults and a starlark script from kpt's catalog follow; and the generator refusing an
# App, with its own message
import realfns  # noqa: E402
import test_realfns  # noqa: E402
REPO.update({
    "apps/real/kustomization.yaml": "resources:\n- deploy.yaml\ngenerators:\n- app.yaml\n"
                                    "transformers:\n- defaults.yaml\n- starlark.yaml\n",
    "apps/real/deploy.yaml": test_realfns.DEPLOY,
    "apps/real/app.yaml": test_realfns.APP % (realfns.image_name("app-generator"), 70, "metrics"),
    "apps/real/defaults.yaml": test_realfns.defaults_config(),
    "apps/real/starlark.yaml": test_realfns.starlark_config(),
    "apps/real-failing/kustomization.yaml": "generators:\n- app.yaml\n",
    "apps/real-failing/app.yaml": test_realfns.APP % (realfns.image_name("app-generator"), 70,
                                                      "admin"),
})
for _rel, _what in MOUNT_DATA.items():
    if _rel == "empty":  # git keeps no empty directory
        continue
    REPO["apps/tree/overlay/files/" + _rel] = _what


# ---- Applications --------------------------------------------------------------------------

def app_manifest(name, path, plugin=None, automated=True):
    dest = DEST_PREFIX + name
    source = {"repoURL": argocd.GIT_URL, "targetRevision": "main", "path": path}
    if plugin is not None:
        source["plugin"] = plugin
    spec = {"project": "default", "source": source,
            "destination": {"server": "https://kubernetes.default.svc", "namespace": dest},
            "syncPolicy": {"syncOptions": ["CreateNamespace=true"]}}
    if automated:
        spec["syncPolicy"]["automated"] = {"prune": True, "selfHeal": True}
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": ARGOCD_NS}, "spec": spec}


def apply_app(manifest):
    kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=krmpod-tests",
            "-f", "-", stdin=json.dumps(manifest).encode())


def get_app(name):
    return json.loads(kubectl("-n", ARGOCD_NS, "get", "application", name, "-o",
                              "json").stdout)


def app_state(app):
    st = app.get("status") or {}
    return ((st.get("sync") or {}).get("status"), (st.get("health") or {}).get("status"),
            [c.get("type") + ": " + c.get("message", "") for c in st.get("conditions") or []])


def wait_app(name, pred, what, timeout=180):
    """Polls the Application until pred(app) holds; the app. Fails naming its state."""
    deadline = time.monotonic() + timeout
    app = None
    while time.monotonic() < deadline:
        app = get_app(name)
        if pred(app):
            return app
        time.sleep(1)
    raise AssertionError("Application %s: not %s within %d s; sync, health, conditions: %s\n"
                         "operationState: %s" % (
                             name, what, timeout, app_state(app),
                             json.dumps((app.get("status") or {}).get("operationState"))[:3000]))


def synced_healthy(revision):
    def pred(app):
        st = app.get("status") or {}
        return (app_state(app)[:2] == ("Synced", "Healthy")
                and (st.get("sync") or {}).get("revision") == revision
                and not st.get("conditions"))
    return pred


def comparison_error(name, timeout=180):
    """Waits until the Application shows a ComparisonError; its message."""
    def has(app):
        return any(c.get("type") == "ComparisonError" for c in
                   (app.get("status") or {}).get("conditions") or [])
    app = wait_app(name, has, "showing a ComparisonError", timeout=timeout)
    return [c["message"] for c in app["status"]["conditions"]
            if c["type"] == "ComparisonError"][0]


def delete_app(name):
    kubectl("-n", ARGOCD_NS, "delete", "application", name, "--wait=false", "--ignore-not-found")


def refresh(name, hard=True):
    kubectl("-n", ARGOCD_NS, "annotate", "--overwrite", "application", name,
            "argocd.argoproj.io/refresh=%s" % ("hard" if hard else "normal"))


def live(kind, name, ns):
    r = kubectl("-n", ns, "get", kind, name, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def subset(want, have, path="$"):
    """Every field of want is in have with the same value (lists: same length, item-wise)."""
    if isinstance(want, dict):
        assert isinstance(have, dict), "%s: %r is not a map" % (path, have)
        for k, v in want.items():
            assert k in have, "%s.%s is missing (live: %s)" % (path, k, sorted(have))
            subset(v, have[k], "%s.%s" % (path, k))
    elif isinstance(want, list):
        assert isinstance(have, list) and len(have) == len(want), "%s: %r vs %r" % (
            path, want, have)
        for i, (w, h) in enumerate(zip(want, have)):
            subset(w, h, "%s[%d]" % (path, i))
    else:
        assert want == have, "%s: rendered %r, live %r" % (path, want, have)


def assert_deployed_as_rendered(rendered_yaml, ns):
    """Every object of the docker-style render is live in ns with the rendered fields."""
    docs = [d for d in yaml.safe_load_all(rendered_yaml) if d]
    assert docs, "the direct render printed nothing"
    for d in docs:
        obj = live(d["kind"], d["metadata"]["name"], ns)
        assert obj is not None, "%s/%s is not in %s" % (d["kind"], d["metadata"]["name"], ns)
        want = dict(d)
        want["metadata"] = {k: v for k, v in d["metadata"].items() if k != "namespace"}
        subset(want, obj)


def logs_since(pod, container, since):
    return kubectl("-n", ARGOCD_NS, "logs", pod, "-c", container,
                   "--since-time=" + since).stdout.decode(errors="replace")


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def fn_pods():
    return [p["metadata"]["name"] for p in json.loads(
        kubectl("-n", FN_NS, "get", "pods", "-o", "json").stdout)["items"]]


def wait_no_fn_pods(timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = fn_pods()
        if not left:
            return
        time.sleep(1)
    raise AssertionError("function pods still in %s after %d s: %s" % (FN_NS, timeout, left))


# ---- the module's setup --------------------------------------------------------------------

class Repo:
    def __init__(self, commit, tree_dir, checkout):
        self.commit, self.tree, self.checkout = commit, tree_dir, checkout


@pytest.fixture(scope="module")
def repo(install, tmp_path_factory):
    """The test repository, served in the cluster; Applications and their destinations are
    deleted at the end."""
    fresh_namespace(install.api, argocd.GIT_NAMESPACE)
    work = tmp_path_factory.mktemp("argocd-repo")
    src = work / "tree"
    src.mkdir()
    tree(src, REPO)
    kubectl("create", "namespace", argocd.GIT_NAMESPACE)
    kubectl("label", "namespace", argocd.GIT_NAMESPACE, MARKER + "=true")
    commit = argocd.serve_repo(kubectl, str(src), install.images["argocd"]["names"]["argocd"],
                               str(work))
    yield Repo(commit, src, work / "repo")
    apps = json.loads(kubectl("-n", ARGOCD_NS, "get", "applications", "-o", "json").stdout)
    for a in apps["items"]:
        delete_app(a["metadata"]["name"])
    for ns in json.loads(kubectl("get", "namespaces", "-o", "json").stdout)["items"]:
        if ns["metadata"]["name"].startswith(DEST_PREFIX):
            kubectl("delete", "namespace", ns["metadata"]["name"], "--wait=false")
    kubectl("delete", "namespace", argocd.GIT_NAMESPACE, "--wait=false")


def direct(repo, path, tmp_path, **env):
    r = direct_build(repo.tree / path, tmp_path, **env)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


# ---- the cases -----------------------------------------------------------------------------

def test_a_named_plugin_syncs_what_a_docker_render_gives(install, repo, tmp_path):
    apply_app(app_manifest("a", "apps/fns", plugin={"name": PLUGIN}))
    app = wait_app("a", synced_healthy(repo.commit), "Synced and Healthy at the commit")
    assert app["status"]["sourceType"] == "Plugin", app["status"].get("sourceType")
    assert_deployed_as_rendered(direct(repo, "apps/fns", tmp_path), DEST_PREFIX + "a")
    cm = live("configmap", "settings", DEST_PREFIX + "a")
    assert cm["metadata"]["labels"].get("team") == "gitops", cm["metadata"]
    wait_no_fn_pods(30)


def test_b_no_plugin_stanza_is_discovered_by_krmpod(install, repo, tmp_path):
    apply_app(app_manifest("b", "apps/fns"))
    app = wait_app("b", synced_healthy(repo.commit), "Synced and Healthy at the commit")
    assert app["status"]["sourceType"] == "Plugin", app["status"].get("sourceType")
    assert_deployed_as_rendered(direct(repo, "apps/fns", tmp_path), DEST_PREFIX + "b")


def test_c_plain_kustomization_goes_to_the_built_in_kustomize_quietly(install, repo, tmp_path):
    since = now_rfc3339()
    time.sleep(1)
    apply_app(app_manifest("c", "apps/plain"))
    app = wait_app("c", synced_healthy(repo.commit), "Synced and Healthy at the commit")
    assert app["status"]["sourceType"] == "Kustomize", app["status"].get("sourceType")
    cm = live("configmap", "settings", DEST_PREFIX + "c")
    assert cm["metadata"]["labels"].get("plain") == "yes", cm["metadata"]
    pod = current_repo_server_pod(install.api)
    for container in ("argocd-repo-server", "krmpod"):
        text = logs_since(pod, container, since)
        bad = [l for l in text.splitlines()
               if re.search(r'"level":"(error|fatal)"|level=error|krmpod.*error', l)]
        assert not bad, "%s logged errors for a plain kustomization:\n%s" % (
            container, "\n".join(bad))


def test_d_plugin_env_and_parameters_reach_a_function_only_as_documented(install, repo):
    plugin = {"name": PLUGIN,
              "env": [{"name": "COLOR", "value": "green"}],
              "parameters": [{"name": "size", "string": "large"},
                             {"name": "other", "string": "unnamed"}]}
    apply_app(app_manifest("d", "apps/env", plugin=plugin))
    wait_app("d", synced_healthy(repo.commit), "Synced and Healthy at the commit")
    seen = live("configmap", "seen", DEST_PREFIX + "d")["data"]
    # named in the function's config: from plugin.env (ARGOCD_ENV_COLOR), from a parameter
    # (Argo CD's PARAM_SIZE), a literal
    assert seen["ENV_COLOR"] == "green", seen
    assert seen["ENV_PARAM_SIZE"] == "large", seen
    assert seen["ENV_STATIC"] == "fixed", seen
    # not named: nothing else of the plugin's environment
    for name in ("ARGOCD_ENV_COLOR", "ARGOCD_APP_NAME", "ARGOCD_APP_NAMESPACE",
                 "ARGOCD_APP_PARAMETERS", "ARGOCD_APP_REVISION", "ARGOCD_APP_SOURCE_REPO_URL",
                 "KUBE_VERSION", "KRMPOD_MODE", "GIT_USERNAME", "GIT_PASSWORD", "GIT_ASKPASS",
                 "PARAM_OTHER"):
        assert seen["ENV_" + name] == "<unset>", (name, seen)


def test_e_failing_function_is_a_comparison_error_and_prunes_nothing(install, repo):
    apply_app(app_manifest("e", "apps/fns", plugin={"name": PLUGIN}))
    wait_app("e", synced_healthy(repo.commit), "Synced and Healthy at the commit")
    before = live("service", "web", DEST_PREFIX + "e")
    apply_app(app_manifest("e", "apps/fns-failing", plugin={"name": PLUGIN}))
    refresh("e")

    msg = comparison_error("e")
    assert "fail: boom" in msg, msg  # the function's stderr
    assert "krmpod" in msg, msg  # and krmpod's own message
    time.sleep(5)  # automated sync with prune: nothing may go
    after = live("service", "web", DEST_PREFIX + "e")
    assert after is not None and after["metadata"]["uid"] == before["metadata"]["uid"], after
    assert live("configmap", "settings", DEST_PREFIX + "e") is not None
    wait_no_fn_pods(30)


def synced(revision):
    def pred(app):
        st = app.get("status") or {}
        return (app_state(app)[0] == "Synced" and not st.get("conditions")
                and (st.get("sync") or {}).get("revision") == revision)
    return pred


def test_m_real_functions_sync_what_kustomize_with_their_binaries_gives(install, repo,
                                                                        tmp_path):
    """The organisation's generator, its defaults and kpt's starlark through the real Argo CD:
    the live objects are the render of kustomize running the same binaries directly. (The
    Deployment's images cannot be pulled here: Synced, not Healthy, is what is waited for.)"""
    apply_app(app_manifest("m", "apps/real", plugin={"name": PLUGIN}))
    wait_app("m", synced(repo.commit), "Synced at the commit")
    rendered = direct(repo, "apps/real", tmp_path, **realfns.direct_env(install.images["real"]))
    for kind in ("Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"):
        assert "kind: %s" % kind in rendered, rendered
    assert_deployed_as_rendered(rendered, DEST_PREFIX + "m")
    hpa = live("horizontalpodautoscaler", "shop", DEST_PREFIX + "m")
    assert hpa["metadata"]["annotations"]["example.com/owner"] == "platform", hpa["metadata"]
    wait_no_fn_pods(30)


def test_m_a_real_function_s_own_error_is_argo_cds_comparison_error(install, repo):
    apply_app(app_manifest("m-failing", "apps/real-failing", plugin={"name": PLUGIN}))
    msg = comparison_error("m-failing")
    assert 'monitoring port \\"admin\\" is not a container port' in msg or \
        'monitoring port "admin" is not a container port' in msg, msg
    assert "app-generator" in msg, msg
    wait_no_fn_pods(30)


def test_g_hard_refreshes_repeated_syncs_and_two_apps_at_once(install, repo, tmp_path):
    for n in ("g1", "g2"):
        apply_app(app_manifest(n, "apps/fns", plugin={"name": PLUGIN}))
    for n in ("g1", "g2"):
        wait_app(n, synced_healthy(repo.commit), "Synced and Healthy at the commit")
    for _ in range(3):
        stamps = {n: get_app(n)["status"].get("reconciledAt") for n in ("g1", "g2")}
        time.sleep(1.1)  # reconciledAt has whole seconds
        for n in ("g1", "g2"):
            refresh(n)
        for n in ("g1", "g2"):
            wait_app(n, lambda a, n=n: (synced_healthy(repo.commit)(a) and
                                        a["status"].get("reconciledAt") != stamps[n]
                                        and "argocd.argoproj.io/refresh" not in
                                        (a["metadata"].get("annotations") or {})),
                     "refreshed and Synced")
    ref = direct(repo, "apps/fns", tmp_path)
    for n in ("g1", "g2"):
        assert_deployed_as_rendered(ref, DEST_PREFIX + n)
    wait_no_fn_pods(30)


def test_l_debug_generate_gives_what_argo_cd_gives(install, repo):
    """e2e/debug-generate.sh, the laptop path, run against this cluster as the repo-server's
    ServiceAccount on the served checkout: its build environment equals what the real
    Argo CD gave the same app, but for the destination namespace (the script's own), and its
    render succeeds with krmpod's RBAC."""
    apply_app(app_manifest("l", "apps/envall", plugin={"name": PLUGIN}))
    wait_app("l", synced_healthy(repo.commit), "Synced and Healthy at the commit")
    argo = live("configmap", "build-env", DEST_PREFIX + "l")["data"]
    env = dict(os.environ, E2E_APP_NAME="l", E2E_REPO_URL=argocd.GIT_URL)
    r = subprocess.run([os.path.join(argocd.ROOT, "e2e", "debug-generate.sh"), "--kubeconfig",
                        os.environ["KUBECONFIG"], "--as-repo-server", "--krmpod",
                        os.environ.get("KRMPOD_BIN", os.path.join(argocd.ROOT, "build",
                                                                  "krmpod")),
                        str(repo.checkout / "apps" / "envall")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    mine = [d for d in yaml.safe_load_all(r.stdout) if d and d["metadata"]["name"] ==
            "build-env"][0]["data"]
    for name in BUILD_ENV:
        a, b = argo["ENV_" + name], mine["ENV_" + name]
        if name == "ARGOCD_APP_NAMESPACE":
            assert a == DEST_PREFIX + "l" and b == "krmpod-e2e-dest", (a, b)
        elif name == "KUBE_API_VERSIONS":
            only_argo = sorted(set(a.split(",")) - set(b.split(",")))
            only_mine = sorted(set(b.split(",")) - set(a.split(",")))
            assert not only_argo and not only_mine, "KUBE_API_VERSIONS: only Argo CD's: %s; " \
                "only debug-generate's: %s" % (" ".join(only_argo), " ".join(only_mine))
        else:
            assert a == b, (name, a, b)
    wait_no_fn_pods(30)


def test_j_explicit_kustomize_settings_bypass_the_plugin(install, repo):
    """spec.source.kustomize makes the source type Kustomize: discovery never runs, and
    Argo CD's own kustomize refuses the containerized functions (README, docs/install.md)."""
    mark = install.recorder.mark()
    m = app_manifest("j", "apps/fns")
    m["spec"]["source"]["kustomize"] = {"commonLabels": {"bypass": "yes"}}
    apply_app(m)

    msg = comparison_error("j")
    # Argo CD's own kustomize ran it, and stopped at the functions
    assert re.search(r"`kustomize build [^`]*/apps/fns` failed", msg), msg
    assert "krmpod" not in msg, msg
    install.recorder.settle()
    assert not install.recorder.pods_since(mark), "a function pod was made for a kustomize app"


def test_i_base_in_parent_and_a_mount_under_the_real_tarball(install, repo, tmp_path):
    apply_app(app_manifest("i", "apps/tree/overlay", plugin={"name": PLUGIN}))
    wait_app("i", synced_healthy(repo.commit), "Synced and Healthy at the commit")
    assert live("service", "web", DEST_PREFIX + "i") is not None  # from ../base
    seen = live("configmap", "mounted", DEST_PREFIX + "i")["data"]
    listing = seen["listing"]
    # without preserveFileMode Argo CD's tarball makes every file 0644: run.sh (0755 in git)
    # and private.txt (0600 in the tree) arrive as 0644 (read-mount masks the write bits)
    assert re.search(r"^/work/run\.sh f 0?444 ", listing, re.M), listing
    assert re.search(r"^/work/private\.txt f 0?444 ", listing, re.M), listing
    # relative symlinks inside the tree stay links to the same file
    assert re.search(r"^/work/link-to-nested l .*sub/nested\.txt", listing, re.M), listing
    assert seen["work.sub.nested.txt"] == "nested\n", seen


def test_f_krmpod_stops_before_argo_cds_default_deadline(install, repo):
    """Under Argo CD's default 60 s, generate's own KRMPOD_GENERATE_TIMEOUT (45 s) strikes
    first: the Application shows krmpod's message naming the setting, not a bare deadline,
    and no pod stays."""
    apply_app(app_manifest("f0", "apps/slow", plugin={"name": PLUGIN}, automated=False))

    try:
        msg = comparison_error("f0", timeout=120)
        assert "KRMPOD_GENERATE_TIMEOUT (45000 ms)" in msg, msg
        assert "DeadlineExceeded" not in msg, msg
    finally:
        delete_app("f0")
    wait_no_fn_pods(30)


def test_f_render_past_argo_cds_deadline_leaves_no_pod(install, repo):
    """The controller's repo-server timeout shortened to 20 s (argocd-cmd-params-cm,
    controller.repo.server.timeout.seconds): the cmp-server's deadline kills generate while
    its function sleeps; no function pod may stay."""
    patch = {"data": {"controller.repo.server.timeout.seconds": "20"}}
    kubectl("-n", ARGOCD_NS, "patch", "configmap", "argocd-cmd-params-cm", "--type=merge",
            "-p", json.dumps(patch))
    restart_controller()
    try:
        apply_app(app_manifest("f", "apps/slow", plugin={"name": PLUGIN}, automated=False))

        msg = comparison_error("f", timeout=120)
        # Argo CD's deadline kill (exec.CommandContext: SIGKILL to generate, SIGTERM to its
        # process group): the shim, SIGTERMed, deleted its pod and said so
        # (or the controller's own deadline error, when that arrives first)
        assert ("signal: killed" in msg and "interrupted by signal 15" in msg) or \
            "DeadlineExceeded" in msg, msg
        delete_app("f")
        wait_no_fn_pods(30)
    finally:
        delete_app("f")
        # the setting goes; the running controller keeps 20 s (what follows renders in less)
        kubectl("-n", ARGOCD_NS, "patch", "configmap", "argocd-cmd-params-cm", "--type=json",
                "-p", json.dumps([{"op": "remove",
                                   "path": "/data/controller.repo.server.timeout.seconds"}]),
                check=False)
        wait_no_fn_pods(60)


def doc_command(suffix):
    """The `kubectl ... -- <suffix>` line of docs/install.md, as argv."""
    with open(os.path.join(argocd.ROOT, "docs", "install.md")) as f:
        for line in f:
            line = line.strip()
            if line.startswith("kubectl ") and line.endswith("-- " + suffix):
                return line.split()
    raise AssertionError("docs/install.md has no `kubectl ... -- %s` line" % suffix)


def restart_controller():
    kubectl("-n", ARGOCD_NS, "rollout", "restart", "statefulset/argocd-application-controller")
    kubectl("-n", ARGOCD_NS, "rollout", "status", "statefulset/argocd-application-controller",
            "--timeout=180s", timeout=200)


def use_new_repo_server_pod(install):
    """The session's sidecar is the repo-server's new pod from here on."""
    deadline = time.monotonic() + 120
    while True:
        try:
            install.pod = current_repo_server_pod(install.api)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    install.sidecar = Sidecar(ARGOCD_NS, install.pod, files=install.sidecar.files)


def test_k_repo_server_parallelism_limit_does_not_bound_generates(install, repo):
    """reposerver.parallelism.limit=1: the repo-server releases it once the tarball is sent,
    so two Applications' generates still run at once (docs/install.md, "How many functions
    run at once"): only the ResourceQuota bounds function pods."""
    cm = ["-n", ARGOCD_NS, "patch", "configmap", "argocd-cmd-params-cm"]
    kubectl(*cm, "--type=merge", "-p", json.dumps({"data": {"reposerver.parallelism.limit": "1"}}))
    try:
        kubectl("-n", ARGOCD_NS, "rollout", "restart", "deployment/argocd-repo-server")
        kubectl("-n", ARGOCD_NS, "rollout", "status", "deployment/argocd-repo-server",
                "--timeout=180s", timeout=200)
        use_new_repo_server_pod(install)
        for n in ("k1", "k2"):
            apply_app(app_manifest(n, "apps/slowish", plugin={"name": PLUGIN}))
        most = 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            most = max(most, len(fn_pods()))
            if most >= 2 or all(synced_healthy(repo.commit)(get_app(n)) for n in ("k1", "k2")):
                break
            time.sleep(0.3)
        for n in ("k1", "k2"):
            wait_app(n, synced_healthy(repo.commit), "Synced and Healthy at the commit")
        assert most >= 2, "the two generates never ran at once (at most %d pod)" % most
    finally:
        # the running pod keeps the limit; test_h replaces it
        kubectl(*cm, "--type=json", "-p", json.dumps(
            [{"op": "remove", "path": "/data/reposerver.parallelism.limit"}]), check=False)
    wait_no_fn_pods(30)


def test_h_repo_server_deleted_mid_render_leaves_no_pod(install, repo):
    """The repo-server pod deleted while a function (8 s) runs: its pod is left, finishes on
    its own, and `krmpod gc` deletes it (a later generate would too: test_gc.py)."""
    apply_app(app_manifest("h", "apps/slowish", plugin={"name": PLUGIN}, automated=False))
    deadline = time.monotonic() + 60
    while not fn_pods():
        assert time.monotonic() < deadline, "no function pod appeared within 60 s"
        time.sleep(0.5)
    old = current_repo_server_pod(install.api)
    kubectl("-n", ARGOCD_NS, "delete", "pod", old, "--wait=false")
    delete_app("h")
    try:
        kubectl("-n", ARGOCD_NS, "rollout", "status", "deployment/argocd-repo-server",
                "--timeout=180s", timeout=200)
        # The sidecar's processes died with its container (its PID 1, the cmp-server, exits
        # on SIGTERM and the kernel kills the rest): the pod runs on until its function ends
        # (or its activeDeadlineSeconds, KRMPOD_GENERATE_TIMEOUT), then `krmpod gc`, as
        # docs/install.md ("Housekeeping") gives it, deletes it; --older-than 2s in place of
        # the default 60 s (the grace a live shim gets; this one is dead), to save a minute.
        left = fn_pods()
        deadline = time.monotonic() + 120
        while left and time.monotonic() < deadline:
            phases = {p["status"].get("phase") for p in json.loads(kubectl(
                "-n", FN_NS, "get", "pods", "-o", "json").stdout)["items"]}
            if phases <= {"Succeeded", "Failed"}:
                break
            time.sleep(1)
        time.sleep(3)
        cmd = doc_command("krmpod gc") + ["--older-than", "2s"]
        r = kubectl(*cmd[1:], check=False, timeout=120)
        assert r.returncode == 0, r.stderr.decode()
        wait_no_fn_pods(30)
    finally:
        use_new_repo_server_pod(install)


def test_output_past_the_generate_cap_is_krmpods_error_not_argo_cds(install, tmp_path):
    """Argo CD's repo-server takes at most ARGOCD_GRPC_MAX_SIZE_MB (100 MiB) from a plugin and
    fails with its own words past it; krmpod stops first, at KRMPOD_GENERATE_MAX_OUTPUT
    (90Mi by default; 1Mi here, for a render of ~1.4 MB), prints nothing and names both."""
    app = tmp_path / "big"
    big = "x" * 700000
    tree(app, {"kustomization.yaml": "resources:\n- big.yaml\ntransformers:\n- mark.yaml\n",
               "big.yaml": "".join("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big%d\n"
                                   "data:\n  blob: %s\n" % (i, big) for i in range(2)),
               "mark.yaml": fn_doc("mark", FN_IMAGE % "add-label")})
    r = install.sidecar.render(app, env={"KRMPOD_GENERATE_MAX_OUTPUT": "1Mi"})
    err = r.stderr.decode(errors="replace")
    assert r.returncode != 0 and r.stdout == b"", (r.returncode, len(r.stdout), err)
    assert "KRMPOD_GENERATE_MAX_OUTPUT" in err and "ARGOCD_GRPC_MAX_SIZE_MB" in err, err
