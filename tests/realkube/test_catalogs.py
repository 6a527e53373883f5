"""Function catalogs on the real cluster (docs/catalogs.md): the admin's catalog is the
shipped krmpod-catalogs ConfigMap, patched by the install overlay (conftest.write_overlay)
and mounted where the shipped KRMPOD_DEFAULT_CATALOGS points. A function named by kind
only runs as the pod of the image the catalog pins, by digest, on the real kubelet; the
image policy refuses what the catalog does not name before any pod exists; a wrong digest
fails with the kubelet's reason."""
import hashlib
import re

from conftest import assert_ok, containers, exit_codes, fn_container, pod_summary, render
from images import FN_IMAGE

KIND_ONLY = """apiVersion: krmpod.test/v1
kind: AddLabel
metadata:
  name: team
data:
  key: team
  value: platform
"""

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
"""


def kind_only_app(tmp_path, name="app", catalog=None):
    app = tmp_path / name
    app.mkdir()
    k = "resources:\n- deployment.yaml\ntransformers:\n- label.yaml\n"
    if catalog is not None:
        k += "catalogs:\n- catalog.yaml\n"
        (app / "catalog.yaml").write_text(catalog)
    (app / "kustomization.yaml").write_text(k)
    (app / "deployment.yaml").write_text(DEPLOYMENT)
    (app / "label.yaml").write_text(KIND_ONLY)
    return app


def test_kind_only_function_runs_the_image_the_admin_catalog_pins(install, tmp_path):
    digest = install.images["functions"]["add-label"]
    pinned = "example.com/fns/add-label@" + digest
    app = kind_only_app(tmp_path)
    r, pods = render(install, app, KRMPOD_IMAGE_POLICY="catalog")
    assert_ok(r)
    err = r.stderr.decode()
    assert "catalog: AddLabel krmpod.test/v1 (kustomization.yaml: transformers: label.yaml) " \
           "-> %s, from catalog realkube-admin (/etc/krmpod/catalogs/catalog.yaml)" % pinned \
        in err, err
    assert "add-label: labelled 1 items" in err, err
    assert "team: platform" in r.stdout.decode(), r.stdout.decode()
    [rec] = pods.values()
    assert fn_container(rec["created"])["image"] == pinned, pod_summary(rec)
    if containers(pods) == [["fn"]]:  # attach mode: the exit code is the container's
        assert exit_codes(rec) and set(exit_codes(rec)) == {0}, pod_summary(rec)
    # the kubelet ran exactly that image: its status names the digest
    statuses = [s for _, _, o in rec["events"]
                for s in (o.get("status") or {}).get("containerStatuses") or []]
    assert any(digest in (s.get("imageID") or "") for s in statuses), statuses


def test_policy_catalog_refuses_an_image_the_catalog_does_not_name(install, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text("resources:\n- deployment.yaml\n"
                                            "transformers:\n- fn.yaml\n")
    (app / "deployment.yaml").write_text(DEPLOYMENT)
    (app / "fn.yaml").write_text(
        "apiVersion: krmpod.test/v1\nkind: Fn\nmetadata:\n  name: fn\n  annotations:\n"
        "    config.kubernetes.io/function: |\n      container:\n        image: %s\n"
        % (FN_IMAGE % "set-labels"))
    r, pods = render(install, app, KRMPOD_IMAGE_POLICY="catalog")
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert r.stdout == b""
    assert "names image %s, which the image policy (KRMPOD_IMAGE_POLICY=catalog) refuses" \
        % (FN_IMAGE % "set-labels") in err, err
    assert pods == {}, [pod_summary(p) for p in pods.values()]
    # the same app under the shipped policy (any) renders
    r, pods = render(install, app)
    assert_ok(r)


def test_a_wrong_digest_fails_with_the_kubelets_reason(install, tmp_path):
    wrong = "0" * 64
    catalog = ("apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n"
               "  name: team\nspec:\n  krmFunctions:\n  - group: krmpod.test\n"
               "    names: {kind: AddLabel}\n    description: d\n    publisher: p\n"
               "    versions:\n    - name: v1\n      idempotent: true\n      runtime:\n"
               "        container: {image: '%s', sha256: '%s'}\n" % (FN_IMAGE % "add-label",
                                                                      wrong))
    app = kind_only_app(tmp_path, catalog=catalog)
    # the admin vouches for this catalog by its digest: a copy in the repository is used
    pin = "sha256:" + hashlib.sha256(catalog.encode()).hexdigest()
    r, pods = render(install, app,
                     KRMPOD_TRUSTED_CATALOGS="/etc/krmpod/catalogs/team.yaml#" + pin)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert r.stdout == b""
    image = "example.com/fns/add-label@sha256:" + wrong
    assert "-> %s, from catalog team (/tmp/_cmp_server/" % image in err, err
    # the kubelet's reason, with the pod and the image
    assert re.search(r"pod krmpod-functions/krmpod-add-label-\w+ cannot start: "
                     r"(ErrImagePull|ImagePullBackOff): .*%s" % re.escape(image), err), err
    assert len(pods) == 1, [pod_summary(p) for p in pods.values()]
