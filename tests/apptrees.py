"""Test inputs the kubesim tiers (tests/integration) and the real-cluster tier (tests/realkube)
both build: a kustomization whose generator has mounts, a file tree with modes and links, and a
large ResourceList."""
import os


def mount_app(tmp_path, mounts, data, image, name="app", envs=()):
    """A kustomization whose generator (`image`, read-mount) mounts [(type, src, dst, rw)],
    gets `data` as its functionConfig data and `envs` ("NAME=VALUE") in its environment."""
    app = tmp_path / name
    app.mkdir(exist_ok=True)
    (app / "kustomization.yaml").write_text("generators:\n- gen.yaml\n")
    lines = []
    for typ, src, dst, rw in mounts:
        lines.append("        - type: %s" % typ)
        if src is not None:
            lines.append("          src: %s" % src)
        lines.append("          dst: %s" % dst)
        if rw:
            lines.append("          rw: true")
    (app / "gen.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gen\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n"
        "        image: %s\n%s        mounts:\n%s\ndata:\n%s" %
        (image, ("        envs:\n" + "".join("        - %s\n" % e for e in envs)) if envs
         else "", "\n".join(lines), "".join("  %s: %s\n" % kv for kv in data.items())))
    return app


def tree(base, files):
    """Creates files: {relpath: text | ("link", target) | ("dir",) | (text, mode)}."""
    for rel, what in files.items():
        p = base / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(what, tuple) and what[0] == "link":
            os.symlink(what[1], str(p))
        elif isinstance(what, tuple) and what[0] == "dir":
            p.mkdir(exist_ok=True)
        elif isinstance(what, tuple):
            p.write_text(what[0])
            os.chmod(str(p), what[1])
        else:
            p.write_text(what)


def make_resource_list(path, size):
    """A ResourceList of at least `size` bytes: ConfigMaps with a 900-byte payload each."""
    item = ("- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm-%08d\n"
            "  data:\n    payload: " + "x" * 900 + "\n")
    with open(path, "w") as f:
        f.write("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
        n, written = 0, 0
        while written < size:
            s = item % n
            f.write(s)
            written += len(s)
            n += 1


def three_function_app(path, registry="example.com/fns"):
    """The load test's app (tests/load, tests/realkube/test_load.py): a Deployment and a
    ConfigMap, a generator (gen-configmap) and two transformers (add-label, set-labels), so
    a render runs three functions, one after another. `path` is the directory to create."""
    os.makedirs(path)

    def fn(name, kind, image, data, envs=()):
        env_lines = ("        envs:\n" + "".join("        - %s\n" % e for e in envs)
                     if envs else "")
        body = "".join("  %s: %s\n" % kv for kv in data)
        with open(os.path.join(path, name), "w") as f:
            f.write("apiVersion: krmpod.test/v1\nkind: %s\nmetadata:\n  name: %s\n"
                    "  annotations:\n    config.kubernetes.io/function: |\n      container:\n"
                    "        image: %s/%s:v1\n%sdata:\n%s"
                    % (kind, name[:-5], registry, image, env_lines, body))

    with open(os.path.join(path, "kustomization.yaml"), "w") as f:
        f.write("resources:\n- deployment.yaml\n- cm.yaml\ngenerators:\n- gen.yaml\n"
                "transformers:\n- label.yaml\n- team.yaml\n")
    with open(os.path.join(path, "deployment.yaml"), "w") as f:
        f.write("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n"
                "  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n"
                "    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n"
                "      - name: web\n        image: nginx:1.27\n")
    with open(os.path.join(path, "cm.yaml"), "w") as f:
        f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\ndata:\n  k: v\n")
    fn("gen.yaml", "GenerateConfigMap", "gen-configmap",
       [("name", "settings"), ("color", "blue"), ("env", "GREETING")], ["GREETING=hello"])
    fn("label.yaml", "AddLabel", "add-label", [("key", "tier"), ("value", "load")])
    fn("team.yaml", "SetLabels", "set-labels", [("team", "platform")])
    return path
