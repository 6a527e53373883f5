"""`krmpod doctor`: permissions through SelfSubjectAccessReview, whether the namespace's
NetworkPolicies really isolate function pods, and the image pull Secrets."""
import base64
import json
import os
import subprocess

import yaml

from conftest import KRMPOD_BIN, ROOT, base_env, in_cluster_env

POLICIES = os.path.join(ROOT, "manifests", "functions", "networkpolicies.yaml")


def doctor(env):
    return subprocess.run([KRMPOD_BIN, "doctor"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)


def install_policies(kubesim):
    for doc in yaml.safe_load_all(open(POLICIES)):
        doc["metadata"].pop("namespace", None)
        kubesim.control("POST", "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
                        doc)


def test_without_policies_isolation_is_only_on_paper(kubesim):
    r = doctor(base_env(kubesim))
    out = r.stdout.decode()
    assert r.returncode == 1, out + r.stderr.decode()
    assert "[FAIL] no NetworkPolicy in default selects function pods with " \
           "krmpod.dev/network=none: their network isolation is only on paper" in out, out
    # the admin's client certificate may do everything
    assert "[ok  ] permission pods create in namespace default" in out, out
    assert "[ok  ] permission pods/attach create in namespace default" in out


def test_with_the_installed_policies(kubesim):
    install_policies(kubesim)
    r = doctor(base_env(kubesim))
    out = r.stdout.decode()
    assert r.returncode == 0, out
    assert "[ok  ] function pods with krmpod.dev/network=none: no ingress, no egress " \
           "(krmpod-deny-all)" in out, out
    assert "functions that ask for network are refused (KRMPOD_ALLOW_NETWORK is false)" in out
    assert "doctor: 0 failed" in out
    r = doctor(base_env(kubesim, KRMPOD_ALLOW_NETWORK="true"))
    out = r.stdout.decode()
    assert r.returncode == 0, out
    assert "function pods with krmpod.dev/network=granted: egress by the allowance's rules " \
           "(policies: krmpod-deny-all, krmpod-network-granted)" in out, out


def test_an_allow_all_policy_is_reported(kubesim):
    install_policies(kubesim)
    kubesim.control("POST", "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies", {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "allow-everything"},
        "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}]}})
    r = doctor(base_env(kubesim))
    out = r.stdout.decode()
    assert r.returncode == 1
    assert "[FAIL] function pods with krmpod.dev/network=none are not fully isolated: ingress " \
           "closed, egress partly allowed" in out, out
    assert "allow-everything" in out


def test_missing_permissions_are_named(kubesim, tmp_path):
    ro = open(kubesim.state + "/token-readonly").read().strip()
    r = doctor(in_cluster_env(kubesim, tmp_path, ro))
    out = r.stdout.decode()
    assert r.returncode == 1, out
    assert "[FAIL] permission pods create in namespace default is missing" in out, out
    assert "[ok  ] permission pods get in namespace default" in out, out
    # without the Started events functions still run, later: a warning, not a failure
    assert "[WARN] permission events watch in namespace default is missing: functions still " \
        "run, but krmpod attaches only when the pod status says the container runs" in out, out
    # the read-only role may list NetworkPolicies: the (missing) policies are still reported
    assert "only on paper" in out


def test_weak_template_is_reported(kubesim, tmp_path):
    install_policies(kubesim)
    t = tmp_path / "t.yaml"
    t.write_text("spec:\n  hostNetwork: true\n")
    r = doctor(base_env(kubesim, KRMPOD_POD_TEMPLATE=str(t)))
    out = r.stdout.decode()
    assert r.returncode == 1
    assert "[FAIL] KRMPOD_POD_TEMPLATE file %s: spec.hostNetwork is true" % t in out, out


def test_no_rights_at_all(kubesim, tmp_path):
    none = open(kubesim.state + "/token-none").read().strip()
    r = doctor(in_cluster_env(kubesim, tmp_path, none))
    out = r.stdout.decode()
    assert r.returncode == 1, out
    assert "[FAIL] permission pods get in namespace default is missing" in out, out
    assert "[FAIL] NetworkPolicies in default: cannot list them" in out, out
    assert "grant networkpolicies list" in out


def test_enforcement_is_not_claimed_without_a_probe_and_honest_when_it_cannot_tell(kubesim):
    """The policies in the API are not the network: without --probe doctor says it did not
    check; with it, a probe pod runs `krmpod net-gate` from the helper image, and on kubesim,
    which gives pods no API server address and has no network to enforce anything on, it says
    it cannot tell (the real cluster's verdicts: tests/realkube/test_isolation.py)."""
    from conftest import HELPER_IMAGE
    install_policies(kubesim)
    r = doctor(base_env(kubesim))
    out = r.stdout.decode()
    assert "[WARN] NetworkPolicy enforcement: not checked" in out and "--probe" in out, out
    assert "[WARN] network gate: off (KRMPOD_NETWORK_GATE)" in out, out
    env = base_env(kubesim, KRMPOD_HELPER_IMAGE=HELPER_IMAGE, KRMPOD_NETWORK_GATE="5s")
    r = subprocess.run([KRMPOD_BIN, "doctor", "--probe"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    out = r.stdout.decode()
    assert "[WARN] NetworkPolicy enforcement: cannot tell: krmpod net-gate: cannot check: " \
           "network gate: no address for the API server (KUBERNETES_SERVICE_HOST, " \
           "KUBERNETES_SERVICE_PORT) in this container" \
           in out, out + r.stderr.decode()
    assert "[ok  ] network gate: functions start once their pod is isolated, waiting at most " \
           "5000 ms" in out, out
    assert r.returncode == 0, out  # a warning, not a failure
    r = subprocess.run([KRMPOD_BIN, "doctor", "--probes"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 2 and b"usage: krmpod doctor [--probe]" in r.stderr, r.stderr


def secret(kubesim, name, type_="kubernetes.io/dockerconfigjson"):
    data = {".dockerconfigjson": base64.b64encode(json.dumps({"auths": {
        "reg.example.com:5444": {"auth": base64.b64encode(b"robot:s3cret-pw").decode()}}})
        .encode()).decode()} if type_ == "kubernetes.io/dockerconfigjson" else {"k": "dg=="}
    kubesim.control("POST", "/api/v1/namespaces/default/secrets",
                    {"metadata": {"name": name}, "type": type_, "data": data})


def test_image_pull_secrets_are_checked(kubesim, tmp_path):
    """Each Secret function pods pull with, from KRMPOD_IMAGE_PULL_SECRETS and from the
    PodTemplate's imagePullSecrets: ok when it is a kubernetes.io/dockerconfigjson in the
    functions namespace, FAIL naming it, the namespace and the fix when it is missing or of
    another type; its data never printed."""
    install_policies(kubesim)
    secret(kubesim, "pull-creds")
    secret(kubesim, "opaque-creds", "Opaque")
    t = tmp_path / "t.yaml"
    t.write_text("spec:\n  imagePullSecrets: [{name: template-creds}, {name: pull-creds}]\n")
    r = doctor(base_env(kubesim, KRMPOD_POD_TEMPLATE=str(t),
                        KRMPOD_IMAGE_PULL_SECRETS="pull-creds,missing-creds,opaque-creds"))
    out = r.stdout.decode()
    assert r.returncode == 1, out + r.stderr.decode()
    lines = [l for l in out.splitlines() if "image pull Secret" in l]
    assert len(lines) == 4, out  # each name once, the template's first
    assert lines[0].startswith("[FAIL] image pull Secret template-creds (the PodTemplate's "
                               "imagePullSecrets) does not exist in namespace default: "
                               "function pods cannot pull with it; create it (kubectl -n "
                               "default create secret docker-registry template-creds "), out
    assert lines[1] == "[ok  ] image pull Secret pull-creds in namespace default " \
                       "(KRMPOD_IMAGE_PULL_SECRETS): kubernetes.io/dockerconfigjson", out
    assert lines[2].startswith("[FAIL] image pull Secret missing-creds "
                               "(KRMPOD_IMAGE_PULL_SECRETS) does not exist in namespace "
                               "default"), out
    assert "or remove it from KRMPOD_IMAGE_PULL_SECRETS" in lines[2], out
    assert lines[3].startswith("[FAIL] image pull Secret opaque-creds "
                               "(KRMPOD_IMAGE_PULL_SECRETS) in namespace default is of type "
                               "Opaque, not kubernetes.io/dockerconfigjson"), out
    assert "doctor: 3 failed" in out, out
    for leak in ("s3cret-pw", base64.b64encode(b"robot:s3cret-pw").decode()):
        assert leak not in out + r.stderr.decode()
    # all present and right: no failure
    r = doctor(base_env(kubesim, KRMPOD_IMAGE_PULL_SECRETS="pull-creds"))
    out = r.stdout.decode()
    assert r.returncode == 0, out
    assert "[ok  ] image pull Secret pull-creds in namespace default" in out, out
    # none named: no line
    r = doctor(base_env(kubesim))
    assert "image pull Secret" not in r.stdout.decode()


def test_image_pull_secrets_without_secrets_get(kubesim, tmp_path):
    """A token that may not read Secrets (403): a warning saying which permission would let
    doctor check, not a failure."""
    secret(kubesim, "pull-creds")
    ro = open(kubesim.state + "/token-readonly").read().strip()
    env = in_cluster_env(kubesim, tmp_path, ro)
    env["KRMPOD_IMAGE_PULL_SECRETS"] = "pull-creds"
    r = doctor(env)
    out = r.stdout.decode()
    assert "[WARN] image pull Secret pull-creds (KRMPOD_IMAGE_PULL_SECRETS) in namespace " \
           "default: cannot check: reading it needs secrets get, which krmpod's Role does " \
           "not grant (a Role rule for secrets get with resourceNames [pull-creds] in " \
           "default lets doctor check it)" in out, out
    assert "[FAIL] image pull Secret" not in out, out


def test_a_bad_image_pull_secrets_setting_is_named(kubesim):
    r = doctor(base_env(kubesim, KRMPOD_IMAGE_PULL_SECRETS="Pull_Creds"))
    assert r.returncode != 0
    err = r.stderr.decode()
    assert 'KRMPOD_IMAGE_PULL_SECRETS=Pull_Creds: "Pull_Creds" is not a Secret name' in err, err


def test_the_mode_and_the_signature_policy_are_reported(kubesim, tmp_path):
    """doctor says which mode functions run in (auto without a helper image is attach for
    all), and reads the signature policy: none, one requiring nothing, one naming keys (its
    requirements listed), one that cannot be read (a FAIL: every render would fail)."""
    out = doctor(base_env(kubesim, KRMPOD_MODE=None, KRMPOD_HELPER_IMAGE=None)).stdout.decode()
    assert "[WARN] mode: auto without KRMPOD_HELPER_IMAGE: every function runs in attach mode" \
        in out, out
    assert "[ok  ] signature policy: none (KRMPOD_SIGNATURE_POLICY): no function needs a " \
           "signature" in out, out
    out = doctor(base_env(kubesim, KRMPOD_MODE="attach")).stdout.decode()
    assert "[ok  ] mode: attach (KRMPOD_MODE): every function in attach mode" in out, out
    out = doctor(base_env(kubesim, KRMPOD_MODE=None,
                          KRMPOD_HELPER_IMAGE="example.com/krmpod:1")).stdout.decode()
    assert "[ok  ] mode: auto (KRMPOD_MODE): exec mode for every function whose image config " \
           "krmpod can read from its registry, attach mode for the rest" in out, out

    empty = tmp_path / "empty.yaml"
    empty.write_text(yaml.safe_load(open(os.path.join(
        ROOT, "manifests", "repo-server", "signature-policy.yaml")))["data"]["policy.yaml"])
    out = doctor(base_env(kubesim, KRMPOD_SIGNATURE_POLICY=str(empty))).stdout.decode()
    assert "[ok  ] signature policy %s: requires no signature" % empty in out, out

    key = subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                          "ec_paramgen_curve:P-256"], stdout=subprocess.PIPE, check=True).stdout
    pub = subprocess.run(["openssl", "pkey", "-pubout"], input=key, stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: krmpod.dev/v1alpha1\nkind: SignaturePolicy\nkeys:\n"
        "- name: platform\n  publicKey: |\n" + "".join("    %s\n" % l for l in pub.splitlines())
        + "- name: vendor\n  publicKey: |\n" + "".join("    %s\n" % l for l in pub.splitlines())
        + "requirements:\n- images: [\"example.com/fns/*\"]\n  keys: [platform, vendor]\n")
    out = doctor(base_env(kubesim, KRMPOD_SIGNATURE_POLICY=str(policy))).stdout.decode()
    assert "[ok  ] signature policy %s: requirements[0] (images example.com/fns/*) needs a " \
           "signature by platform or vendor" % policy in out, out

    missing = tmp_path / "gone.yaml"
    r = doctor(base_env(kubesim, KRMPOD_SIGNATURE_POLICY=str(missing)))
    out = r.stdout.decode()
    assert r.returncode == 1, out
    assert "[FAIL] KRMPOD_SIGNATURE_POLICY: " in out and str(missing) in out and \
        "(every render fails until it can be read)" in out, out
