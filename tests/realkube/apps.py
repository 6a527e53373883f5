"""Kustomizations the tier renders (written into a test's tmp_path)."""
import os
import shutil

import apptrees
from apptrees import tree  # noqa: F401 (the tier's tests take it from here)
from images import FN_IMAGE, ROOT

TRANSFORM_GENERATE = os.path.join(ROOT, "tests", "fixtures", "kustomize", "transform-generate")


def copy_fixture_app(tmp_path, src=TRANSFORM_GENERATE, name="app"):
    dst = tmp_path / name
    shutil.copytree(src, str(dst))
    return dst


def fn_app(tmp_path, fixture, envs=(), name="app", config_lines=(), annotations=(),
           data=None, functions=1):
    """A ConfigMap and `functions` containerized transformers running the fixture image."""
    app = tmp_path / name
    app.mkdir()
    fns = ["fn%d.yaml" % i for i in range(functions)]
    (app / "kustomization.yaml").write_text(
        "resources:\n- cm.yaml\ntransformers:\n" + "".join("- %s\n" % f for f in fns))
    (app / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\n"
                                 "data:\n  k: v\n")
    env_lines = "".join("        - %s\n" % e for e in envs)
    for i, f in enumerate(fns):
        (app / f).write_text(
            "apiVersion: krmpod.test/v1\nkind: Fn\nmetadata:\n  name: fn%d\n  annotations:\n%s"
            "    config.kubernetes.io/function: |\n      container:\n        image: %s\n%s%s%s"
            % (i, "".join("    %s\n" % a for a in annotations), FN_IMAGE % fixture,
               "".join("        %s\n" % l for l in config_lines),
               ("        envs:\n" + env_lines) if envs else "",
               ("data:\n" + "".join("  %s: %s\n" % kv for kv in data.items())) if data else ""))
    return app


def mount_app(tmp_path, mounts, data, name="app", envs=()):
    """A kustomization whose generator (read-mount) mounts [(type, src, dst, rw)]."""
    return apptrees.mount_app(tmp_path, mounts, data, FN_IMAGE % "read-mount", name, envs)


# The directory tests/integration/test_mounts.py uses: modes, symlinks, nesting, an empty
# directory and a file over several transfer chunks. big.txt is smaller here (49 KB, still
# over one 32 KiB stream message): on this cluster the attach of a pod with an init
# container now and then loses the tail of a function's output of ~200 KB, kubectl's too
# (reported to the lead; docs/testing.md, "Real cluster"; test_stress.py).
MOUNT_DATA = {
    "config.yaml": "color: blue\nsize: 3\n",
    "run.sh": ("#!/bin/sh\necho hi\n", 0o755),
    "private.txt": ("only the owner\n", 0o600),
    "sub/nested.txt": "nested\n",
    "sub/deeper/x.json": '{"x": [1, 2, 3]}\n',
    "empty": ("dir",),
    "link-to-nested": ("link", "sub/nested.txt"),
    "sub/up-link": ("link", "../config.yaml"),
    "big.txt": "".join("line %06d of a file that spans several chunks\n" % i
                       for i in range(1000)),
}
