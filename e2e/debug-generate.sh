#!/usr/bin/env bash
# Runs `krmpod generate` on this machine against the kind cluster (or the cluster of
# --kubeconfig), the way Argo CD's CMP
# server runs it in the sidecar: in the app's directory, with a clean environment (env -i plus
# PATH, HOME, KUBECONFIG) holding Argo CD's build variables, the sidecar's KRMPOD_* settings
# (read from manifests/repo-server/argocd-repo-server.yaml) and KRMPOD_NAMESPACE. Functions
# run as pods in krmpod-functions; the manifests go to stdout, logs to stderr, and the exit
# status is generate's. A quick loop for "why does my app fail to render in Argo CD?".
#
#   e2e/debug-generate.sh [options] [APP_DIR]        APP_DIR defaults to e2e/app
#     --krmpod PATH       the krmpod binary to run (default: build/krmpod, which `make` builds;
#                         a Linux binary: on macOS, run this from a Linux VM or container)
#     --kustomize CMD     KRMPOD_KUSTOMIZE (default: kustomize when on PATH, else "kubectl kustomize")
#     --as-repo-server    authenticate as Argo CD's repo-server ServiceAccount (a token from
#                         `kubectl create token`), to test krmpod's RBAC; default: the kind
#                         kubeconfig's admin (context kind-krmpod-e2e)
#     --kubeconfig FILE   another cluster with Argo CD and krmpod installed: FILE's current
#                         context, in place of kind (the real-cluster tier runs this script so
#                         against the project's own cluster, tests/realkube/test_argocd.py)
#     --no-init           skip `krmpod init` (plugin.yaml's init hook, run first like Argo CD does)
#     -e NAME=VALUE       more environment, repeatable (-e KRMPOD_LOG_LEVEL=debug,
#                         -e ARGOCD_ENV_FOO=bar for an Application's plugin env FOO)
#     -o FILE             write the manifests to FILE instead of stdout
#
# The functions namespace must exist: with the admin identity this script applies
# manifests/functions (namespace, RBAC, policies) when it is missing; with --as-repo-server run
# e2e/install-krmpod.sh first.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

krmpod=$ROOT_DIR/build/krmpod
kustomize_cmd=
kubeconfig=
as_repo_server=0
run_init=1
out=
app_dir=$E2E_DIR/app
extra_env=
usage="usage: e2e/debug-generate.sh [--krmpod PATH] [--kustomize CMD] [--kubeconfig FILE] [--as-repo-server] [--no-init] [-e NAME=VALUE]... [-o FILE] [APP_DIR]"
while [ $# -gt 0 ]; do
	case $1 in
	--krmpod | --kustomize | --kubeconfig | -e | -o)
		[ $# -ge 2 ] || die "$1 needs a value" "$usage"
		case $1 in
		--krmpod) krmpod=$2 ;;
		--kustomize) kustomize_cmd=$2 ;;
		--kubeconfig) kubeconfig=$2 ;;
		-e)
			case $2 in [A-Za-z_]*=*) ;; *) die "-e wants NAME=VALUE, got '$2'" ;; esac
			extra_env="$extra_env$2
"
			;;
		-o) out=$2 ;;
		esac
		shift
		;;
	--as-repo-server) as_repo_server=1 ;;
	--no-init) run_init=0 ;;
	-h | --help)
		sed -n '2,29p' "$0"
		exit 0
		;;
	-*) die "unknown option '$1'" "$usage" ;;
	*) app_dir=$1 ;;
	esac
	shift
done

if [ -n "$kubeconfig" ]; then
	[ -r "$kubeconfig" ] || die "--kubeconfig $kubeconfig: no such readable file"
	need_kubectl
	kc() { kubectl --kubeconfig "$kubeconfig" "$@"; }
	kc get --raw /version >/dev/null 2>&1 ||
		die "the cluster of $kubeconfig (its current context) does not answer" "fix: check the file and that the cluster runs"
else
	require_cluster
fi
[ -x "$krmpod" ] || die "krmpod binary '$krmpod' not found or not executable" "fix: run 'make' (builds build/krmpod), or pass --krmpod PATH"
krmpod=$(cd "$(dirname "$krmpod")" && pwd)/$(basename "$krmpod")
"$krmpod" version >/dev/null 2>&1 ||
	die "'$krmpod version' does not run here" "build/krmpod is a static Linux binary: use a Linux machine, VM or container"
[ -d "$app_dir" ] || die "app directory '$app_dir' not found" "$usage"
app_dir=$(cd "$app_dir" && pwd)
case $out in "" | /*) ;; *) out=$PWD/$out ;; esac
if [ -z "$kustomize_cmd" ] && ! command -v kustomize >/dev/null 2>&1; then
	need kubectl "install kustomize or kubectl (kubectl kustomize embeds kustomize)"
	kustomize_cmd="kubectl kustomize"
fi

make_tmpdir
tmp=$E2E_TMP

# ---- credentials: a kubeconfig file of its own, never your ~/.kube/config -----------------
if [ -n "$kubeconfig" ]; then
	kubectl --kubeconfig "$kubeconfig" config view --minify --flatten >"$tmp/kubeconfig"
else
	kind get kubeconfig --name "$E2E_CLUSTER" >"$tmp/kubeconfig"
fi
kcfg() { kubectl --kubeconfig "$tmp/kubeconfig" "$@"; }
kind_user=$(kcfg config view -o jsonpath='{.contexts[0].context.user}')
sa="system:serviceaccount:$ARGOCD_NAMESPACE:argocd-repo-server"

if ! kc get namespace "$KRMPOD_FUNCTIONS_NAMESPACE" >/dev/null 2>&1; then
	if [ $as_repo_server = 1 ]; then
		die "namespace $KRMPOD_FUNCTIONS_NAMESPACE does not exist" "fix: run e2e/install-argocd.sh and e2e/install-krmpod.sh"
	fi
	log "namespace $KRMPOD_FUNCTIONS_NAMESPACE is missing: applying manifests/functions (namespace, RBAC, policies)"
	kc apply --server-side --field-manager=krmpod -k "$ROOT_DIR/manifests/functions" >&2 ||
		die "applying manifests/functions failed" "fix: run e2e/install-krmpod.sh for the full installation"
	log "(the full installation, sidecar included, is e2e/install-krmpod.sh)"
fi
if [ $as_repo_server = 1 ]; then
	kc -n "$ARGOCD_NAMESPACE" get serviceaccount argocd-repo-server >/dev/null 2>&1 ||
		die "ServiceAccount $ARGOCD_NAMESPACE/argocd-repo-server not found" "fix: run e2e/install-argocd.sh and e2e/install-krmpod.sh"
	[ "$(kc auth can-i create pods -n "$KRMPOD_FUNCTIONS_NAMESPACE" --as "$sa" 2>/dev/null)" = yes ] ||
		die "$sa may not create pods in $KRMPOD_FUNCTIONS_NAMESPACE" "fix: run e2e/install-krmpod.sh (manifests/functions/rbac.yaml)"
	token=$(kc -n "$ARGOCD_NAMESPACE" create token argocd-repo-server --duration=1h) ||
		die "kubectl create token failed (needs Kubernetes 1.24+ and kubectl 1.24+)"
	# Same user entry, client certificate replaced by the ServiceAccount's token.
	kcfg config unset "users.$kind_user.client-certificate-data" >/dev/null
	kcfg config unset "users.$kind_user.client-key-data" >/dev/null
	kcfg config set-credentials "$kind_user" --token="$token" >/dev/null
	log "identity: $sa (bound token, 1h)"
else
	who="the kind admin"
	[ -z "$kubeconfig" ] || who="the user of $kubeconfig"
	log "identity: $who ($kind_user)"
fi

# ---- the environment Argo CD gives a sidecar plugin ------------------------------------------
# KUBE_VERSION: Argo CD before 3.4 passes "MAJOR.MINOR", with any "+" removed; 3.4 and later
# "MAJOR.MINOR.PATCH" with no leading "v" (v3.6.1's reposerver parseKubeVersion: the server's
# gitVersion through k8s.io/apimachinery's ParseGeneric(...).String()); KUBE_API_VERSIONS:
# every group/version and group/version/Kind, sorted, comma-separated (reposerver
# getPluginEnvs, argo.APIResourcesToStrings). ARGOCD_APP_NAMESPACE is the Application's
# destination namespace; ARGOCD_APP_PARAMETERS is always set when the Application has a plugin
# stanza ("null" without parameters); discover gets no ARGOCD_ENV_* (not set here).
ver_json=$(kc get --raw /version)
major=$(printf '%s' "$ver_json" | sed -n 's/.*"major": *"\([^"]*\)".*/\1/p' | tr -d '+')
minor=$(printf '%s' "$ver_json" | sed -n 's/.*"minor": *"\([^"]*\)".*/\1/p' | tr -d '+')
git_version=$(printf '%s' "$ver_json" | sed -n 's/.*"gitVersion": *"v\{0,1\}\([0-9.]*\).*/\1/p')
if version_ge "$ARGOCD_VERSION" v3.4.0; then kube_version="$git_version"; else kube_version="$major.$minor"; fi
# KUBE_API_VERSIONS as the application controller's cluster cache sees the API (gitops-engine's
# GetAPIResources): every served version, not only the preferred one, and only the kinds
# that can be listed and watched (no Binding, TokenReview, SubjectAccessReviews...).
listable_kinds() { # GROUP_VERSION: "gv" and "gv/Kind" lines from the discovery document
	local path=/apis/$1
	[ "$1" = v1 ] && path=/api/v1
	kc get --raw "$path" 2>/dev/null | awk -v gv="$1" '{
		n = split($0, parts, /\{"name":"/)
		for (i = 2; i <= n; i++) {
			p = parts[i]; name = p; sub(/".*/, "", name)
			if (name ~ /\//) continue # a subresource
			if (!match(p, /"kind":"[^"]*"/)) continue
			kind = substr(p, RSTART + 8, RLENGTH - 9)
			if (!match(p, /"verbs":\[[^]]*\]/)) continue
			verbs = substr(p, RSTART, RLENGTH)
			if (verbs ~ /"list"/ && verbs ~ /"watch"/) { print gv; print gv "/" kind }
		}
	}'
}
api_versions=$(for gv in $(kc api-versions 2>/dev/null); do listable_kinds "$gv"; done |
	LC_ALL=C sort -u | paste -sd, -)

if git -C "$app_dir" rev-parse --git-dir >/dev/null 2>&1; then
	revision=$(git -C "$app_dir" rev-parse HEAD 2>/dev/null || echo 0000000000000000000000000000000000000000)
	source_path=$(git -C "$app_dir" rev-parse --show-prefix)
	source_path=${source_path%/}
else
	revision=0000000000000000000000000000000000000000
	source_path=.
fi
repo_url=${E2E_REPO_URL:-$E2E_GIT_URL}

# The sidecar's own literal env settings (name/value pairs) from manifests/.
sidecar_env=$(awk '/- name: KRMPOD_/ { n = $3; next } n != "" && /value:/ { v = $0; sub(/^[^:]*:[[:space:]]*/, "", v); gsub(/"/, "", v); print n "=" v } { n = "" }' \
	"$ROOT_DIR/manifests/repo-server/argocd-repo-server.yaml" | grep -v '^KRMPOD_NAMESPACE=' || true)

# The helper image the cluster admits (manifests/functions/admission.yaml: krmpod-admission's
# helperImage, which the install pins as the sidecar's image): the function pods' init
# containers (the network gate, mounts) run it, and the admission policy refuses another.
helper=$(kc -n "$KRMPOD_FUNCTIONS_NAMESPACE" get configmap krmpod-admission -o 'jsonpath={.data.helperImage}' 2>/dev/null || true)
if [ -n "$helper" ]; then
	sidecar_env=$(printf '%s\n' "$sidecar_env" | sed "s|^KRMPOD_HELPER_IMAGE=.*|KRMPOD_HELPER_IMAGE=$helper|")
fi

# The signature policy the sidecar reads (the krmpod-signature-policy ConfigMap mounted at
# KRMPOD_SIGNATURE_POLICY's path), copied from the cluster; without the ConfigMap the path
# stays, and generate fails naming it, as in the sidecar (docs/signatures.md).
policy_path=$(printf '%s\n' "$sidecar_env" | sed -n 's/^KRMPOD_SIGNATURE_POLICY=//p')
if [ -n "$policy_path" ] &&
	kc -n "$ARGOCD_NAMESPACE" get configmap krmpod-signature-policy -o 'jsonpath={.data.policy\.yaml}' >"$tmp/signature-policy.yaml" 2>/dev/null &&
	[ -s "$tmp/signature-policy.yaml" ]; then
	sidecar_env=$(printf '%s\n' "$sidecar_env" | sed "s|^KRMPOD_SIGNATURE_POLICY=.*|KRMPOD_SIGNATURE_POLICY=$tmp/signature-policy.yaml|")
fi

# The shim directory: `docker` -> krmpod, as the image's KRMPOD_SHIM_DIR.
mkdir -p "$tmp/shim"
ln -s "$krmpod" "$tmp/shim/docker"

set -- env -i \
	"PATH=$PATH" "HOME=${HOME:-/tmp}" "KUBECONFIG=$tmp/kubeconfig" \
	"ARGOCD_APP_NAME=$E2E_APP_NAME" \
	"ARGOCD_APP_NAMESPACE=$E2E_DEST_NAMESPACE" \
	"ARGOCD_APP_PROJECT_NAME=default" \
	"ARGOCD_APP_REVISION=$revision" \
	"ARGOCD_APP_REVISION_SHORT=$(printf '%.7s' "$revision")" \
	"ARGOCD_APP_REVISION_SHORT_8=$(printf '%.8s' "$revision")" \
	"ARGOCD_APP_SOURCE_PATH=$source_path" \
	"ARGOCD_APP_SOURCE_REPO_URL=$repo_url" \
	"ARGOCD_APP_SOURCE_TARGET_REVISION=$E2E_REPO_REVISION" \
	"KUBE_VERSION=$kube_version" \
	"KUBE_API_VERSIONS=$api_versions" \
	"ARGOCD_APP_PARAMETERS=null" \
	"KRMPOD_NAMESPACE=$KRMPOD_FUNCTIONS_NAMESPACE" \
	"KRMPOD_SHIM_DIR=$tmp/shim"
[ -z "$kustomize_cmd" ] || set -- "$@" "KRMPOD_KUSTOMIZE=$kustomize_cmd"
old_ifs=$IFS
IFS='
'
for kv in $sidecar_env $extra_env; do set -- "$@" "$kv"; done
IFS=$old_ifs

log "app $app_dir (ARGOCD_APP_SOURCE_PATH=$source_path, revision $(printf '%.8s' "$revision"))"
log "KUBE_VERSION=$kube_version; functions run in $KRMPOD_FUNCTIONS_NAMESPACE; krmpod $("$krmpod" version 2>&1 | head -1)"
cd "$app_dir"
if [ $run_init = 1 ] && grep -q '^  init:' "$ROOT_DIR/plugin.yaml" 2>/dev/null; then
	log "running: krmpod init"
	"$@" "$krmpod" init >&2 || {
		rc=$?
		die "krmpod init failed (exit $rc); Argo CD would stop here too" "rerun with -e KRMPOD_LOG_LEVEL=debug"
	}
fi
log "running: krmpod generate"
rc=0
if [ -n "$out" ]; then
	"$@" "$krmpod" generate >"$tmp/out.yaml" || rc=$?
	cp "$tmp/out.yaml" "$out"
else
	"$@" "$krmpod" generate || rc=$?
fi

left=$(kc -n "$KRMPOD_FUNCTIONS_NAMESPACE" get pods -l krmpod.dev/function=true -o name 2>/dev/null || true)
[ -z "$left" ] || warn "function pods still in $KRMPOD_FUNCTIONS_NAMESPACE: $(printf '%s' "$left" | tr '\n' ' ')"
if [ $rc = 0 ]; then log "generate succeeded${out:+; manifests in $out}"; else log "generate failed with exit status $rc"; fi
exit $rc
