# shellcheck shell=bash
# shellcheck disable=SC2034 # the settings below are used by the scripts that source this file
# Shared settings and helpers for the e2e scripts. Sourced, never run. Every script here
# talks to the kind cluster only through `kc` (kubectl --context kind-$E2E_CLUSTER), so
# whatever your current kubectl context is, it is never touched.
#
# Works with bash 3.2 (macOS /bin/bash) and GNU or BSD userland: no mapfile, no associative
# arrays, no `sed -i`, no `timeout`.

E2E_DIR=$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT_DIR=$(CDPATH='' cd "$E2E_DIR/.." && pwd)

# ---- pinned versions (README.md, "Pinned versions", says where each one comes from) --------
# kind v0.29.0 release notes: the node image built for that release, by digest (kind supports a
# node image only with the release that built it, and only by digest).
KIND_MIN_VERSION=v0.29.0
: "${KIND_NODE_IMAGE:=kindest/node:v1.33.1@sha256:050072256b9a903bd914c0b2866828150cb229cea0efe5892e2b644d5dd3b34f}"
# Argo CD: install.yaml of a release tag (3.3 and later need server-side apply: the
# ApplicationSet CRD is too large for client-side apply's last-applied annotation).
# The version is the one tests/tools/argocd/go.mod pins: the real-cluster tier builds that
# release from the Go module proxy and installs the same install.yaml the same way
# (tests/realkube/argocd.py), so kind and the project's cluster run one Argo CD.
argocd_pinned_version() {
	sed -n 's/^[[:space:]]*github\.com\/argoproj\/argo-cd\/v3 \(v[0-9][^[:space:]]*\).*/\1/p' \
		"$ROOT_DIR/tests/tools/argocd/go.mod" 2>/dev/null | head -n 1
}
: "${ARGOCD_VERSION:=$(argocd_pinned_version)}"
[ -n "$ARGOCD_VERSION" ] || ARGOCD_VERSION=unknown # selftest.sh fails on this
: "${ARGOCD_INSTALL_URL:=https://raw.githubusercontent.com/argoproj/argo-cd/$ARGOCD_VERSION/manifests/install.yaml}"
: "${ARGOCD_IMAGE:=quay.io/argoproj/argocd:$ARGOCD_VERSION}"

# ---- names ----------------------------------------------------------------------------------
: "${E2E_CLUSTER:=krmpod-e2e}"
KUBE_CONTEXT="kind-$E2E_CLUSTER"
: "${ARGOCD_NAMESPACE:=argocd}"
: "${KRMPOD_IMAGE:=krmpod:local}"                  # the sidecar image to test
: "${KRMPOD_CONTAINER:=krmpod}"                    # the sidecar's container name (manifests/)
: "${KRMPOD_MANIFEST_IMAGE:=}"                     # image name used in manifests/ (auto-detected)
: "${KRMPOD_FUNCTIONS_NAMESPACE:=krmpod-functions}" # where function pods run (manifests/)
: "${E2E_APP_NAME:=krmpod-e2e}"                    # the Argo CD Application
: "${E2E_REPO_URL:=}"                              # empty: serve e2e/app from the in-cluster git server
: "${E2E_REPO_REVISION:=main}"
: "${E2E_TIMEOUT:=600}"                            # seconds to wait for the app to sync
: "${E2E_PLUGIN_NAME:=}"                           # empty: derived from plugin.yaml
# The Application's destination namespace (e2e/application.yaml): set-namespace moves every
# object out of it, so nothing may end up there.
E2E_DEST_NAMESPACE=krmpod-e2e-dest
# The in-cluster git server (fixed names: e2e/git-server.yaml spells them out).
E2E_GIT_NAMESPACE=krmpod-e2e-git
E2E_GIT_REPO=krmpod-e2e.git
E2E_GIT_SERVICE=krmpod-e2e-git
E2E_GIT_URL="git://$E2E_GIT_SERVICE.$E2E_GIT_NAMESPACE.svc.cluster.local:9418/$E2E_GIT_REPO"
E2E_APP_PATH=e2e/app # path of the app inside the served repository (and in this one)

# ---- messages -------------------------------------------------------------------------------
log() { printf '%s e2e: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
warn() { printf '%s e2e: warning: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
	printf 'e2e: error: %s\n' "$1" >&2
	shift
	local line
	for line in "$@"; do printf '  %s\n' "$line" >&2; done
	exit 1
}

# need TOOL WHAT-TO-DO: stop with a message naming the missing tool and how to get it.
need() {
	local tool=$1 fix=$2
	shift 2
	command -v "$tool" >/dev/null 2>&1 && return 0
	die "'$tool' is required but not on PATH" "fix: $fix" "$@"
}
need_docker() {
	need docker "install Docker (https://docs.docker.com/engine/install/) or Docker Desktop"
	docker info >/dev/null 2>&1 ||
		die "docker is installed but its daemon does not answer ('docker info' fails)" \
			"fix: start Docker (Docker Desktop, or 'sudo systemctl start docker'), and make sure" \
			"     your user may use it (e.g. member of the 'docker' group)"
}
need_kind() {
	need kind "install kind $KIND_MIN_VERSION or newer: https://kind.sigs.k8s.io/docs/user/quick-start/#installation" \
		"(e.g. 'go install sigs.k8s.io/kind@$KIND_MIN_VERSION')"
}
need_kubectl() {
	need kubectl "install kubectl 1.30 or newer: https://kubernetes.io/docs/tasks/tools/"
}

# ---- kubectl against the e2e cluster only ---------------------------------------------------
kc() { kubectl --context "$KUBE_CONTEXT" "$@"; }

cluster_exists() { kind get clusters 2>/dev/null | grep -qx "$E2E_CLUSTER"; }
require_cluster() {
	need_kind
	need_kubectl
	cluster_exists || die "the kind cluster '$E2E_CLUSTER' does not exist" "fix: run e2e/up.sh (or e2e/run.sh)"
	kc get --raw /version >/dev/null 2>&1 ||
		die "the kind cluster '$E2E_CLUSTER' exists but its API server does not answer on context $KUBE_CONTEXT" \
			"fix: 'kind export kubeconfig --name $E2E_CLUSTER', or recreate it: e2e/down.sh && e2e/up.sh"
}

# wait_for DESCRIPTION TIMEOUT_SECONDS COMMAND...: runs COMMAND (quietly) every 2 s until it
# succeeds. After TIMEOUT_SECONDS it prints "timed out ... waiting for DESCRIPTION" and returns 1,
# so the caller can add what to look at: wait_for "x" 60 cmd || die "..." "look: ...".
wait_for() {
	local what=$1 limit=$2 start=$SECONDS
	shift 2
	until "$@" >/dev/null 2>&1; do
		if [ $((SECONDS - start)) -ge "$limit" ]; then
			printf 'e2e: timed out after %ss waiting for %s\n' "$limit" "$what" >&2
			return 1
		fi
		sleep 2
	done
}

# make_tmpdir: a private temporary directory in $E2E_TMP, removed when the script exits.
E2E_TMP=
make_tmpdir() {
	E2E_TMP=$(mktemp -d "${TMPDIR:-/tmp}/krmpod-e2e.XXXXXX") || die "mktemp failed"
	trap 'rm -rf "$E2E_TMP"' EXIT
}

# version_ge A B: true when version A >= version B (vX.Y.Z, the v optional).
version_ge() {
	awk -v a="${1#v}" -v b="${2#v}" 'BEGIN {
		na = split(a, x, /[.-]/); nb = split(b, y, /[.-]/)
		for (i = 1; i <= 3; i++) { if (x[i] + 0 > y[i] + 0) exit 0; if (x[i] + 0 < y[i] + 0) exit 1 }
		exit 0 }'
}

# ---- reading this repository's YAML (simple, block-style files we write ourselves) ----------

# function_images: the container images of the KRM functions e2e/app uses, one a line, from
# the `image:` lines of files that carry a config.kubernetes.io/function annotation.
function_image_files() {
	grep -l 'config.kubernetes.io/function' "$E2E_DIR"/app/*.yaml
}
function_images() {
	local f
	for f in $(function_image_files); do
		sed -n 's/^[[:space:]]*image:[[:space:]]*\([^[:space:]#]*\).*/\1/p' "$f"
	done
}

# yaml_data FILE: the `key: value` pairs of FILE's top-level `data:` map, as key=value lines.
yaml_data() {
	awk '
		/^data:[[:space:]]*$/ { in_data = 1; next }
		/^[^[:space:]#]/ { in_data = 0 }
		in_data && /^  [^[:space:]#][^:]*:/ {
			line = $0; sub(/^  /, "", line)
			key = line; sub(/:.*/, "", key)
			val = line; sub(/^[^:]*:[[:space:]]*/, "", val); sub(/[[:space:]]+#.*$/, "", val)
			gsub(/^["\047]|["\047]$/, "", val)
			print key "=" val
		}' "$1"
}

# The namespace set-namespace moves everything to, and the labels set-labels adds.
app_namespace() { yaml_data "$E2E_DIR/app/fn-set-namespace.yaml" | sed -n 's/^namespace=//p'; }
app_labels() { yaml_data "$E2E_DIR/app/fn-set-labels.yaml"; }

# plugin_name: what an Application's spec.source.plugin.name must say for the sidecar plugin:
# <metadata.name>-<spec.version> when plugin.yaml sets a version, else <metadata.name>
# (Argo CD's config-management-plugins documentation). E2E_PLUGIN_NAME overrides it.
plugin_name() {
	if [ -n "$E2E_PLUGIN_NAME" ]; then
		printf '%s\n' "$E2E_PLUGIN_NAME"
		return
	fi
	[ -f "$ROOT_DIR/plugin.yaml" ] ||
		die "$ROOT_DIR/plugin.yaml not found; set E2E_PLUGIN_NAME to the plugin's name"
	awk '
		function val(s) { sub(/^[^:]*:[[:space:]]*/, "", s); sub(/[[:space:]]+#.*$/, "", s); gsub(/["\047]/, "", s); return s }
		/^[^[:space:]#]/ { sect = $1 }
		sect == "metadata:" && /^  name:/ { name = val($0) }
		sect == "spec:" && /^  version:/ { version = val($0) }
		END { if (name == "") exit 1; print (version == "" ? name : name "-" version) }
	' "$ROOT_DIR/plugin.yaml" || die "could not read metadata.name from $ROOT_DIR/plugin.yaml"
}

# container_images NAME < rendered.yaml: "image<TAB>imagePullPolicy" of every container named
# NAME in kustomize output (kustomize prints normalised YAML: a list's items start with "- " at
# the list key's own indentation, an item's keys two columns further in).
container_images() {
	awk -v want="$1" '
		function indent(s) { match(s, /^ */); return RLENGTH }
		function val(s) { sub(/^ *-? *[A-Za-z]+:[[:space:]]*/, "", s); gsub(/["\047]/, "", s); return s }
		function flush() { if (inlist && name == want) print image "\t" policy; name = image = policy = "" }
		{
			n = indent($0)
			if ($0 ~ /^ *(containers|initContainers):[[:space:]]*$/) { flush(); inlist = 1; lind = n; next }
			if (!inlist || $0 ~ /^[[:space:]]*$/) next
			if ($0 ~ /^---/ || n < lind || (n == lind && $0 !~ /^ *- /)) { flush(); inlist = 0; next }
			if (n == lind) { flush(); line = $0; sub(/- /, "  ", line) } else line = $0
			if (indent(line) != lind + 2) next
			if (line ~ /^ *name:/) name = val(line)
			else if (line ~ /^ *image:/) image = val(line)
			else if (line ~ /^ *imagePullPolicy:/) policy = val(line)
		}
		END { flush() }'
}

# image_name REF: REF without its tag or digest (what a kustomize `images:` entry matches).
image_name() {
	local ref=${1%%@*} last
	last=${ref##*/}
	case $last in *:*) ref=${ref%:*} ;; esac
	printf '%s\n' "$ref"
}

# make_app_bundle DIR: packs e2e/app as it is in the working tree (uncommitted edits included)
# into a one-commit repository at $E2E_APP_PATH on branch main, writes DIR/repo.bundle and
# prints the commit. Fixed author, committer and dates make the commit a function of the
# content: the same files give the same commit, so re-serving unchanged files changes nothing.
make_app_bundle() {
	local out=$1 repo=$1/repo
	need git "install git (apt-get install git, brew install git, ...)"
	rm -rf "$repo"
	mkdir -p "$repo/$E2E_APP_PATH"
	cp -R "$E2E_DIR/app/." "$repo/$E2E_APP_PATH/"
	(
		cd "$repo" || exit 1
		export GIT_AUTHOR_NAME="krmpod e2e" GIT_AUTHOR_EMAIL="e2e@krmpod.invalid" \
			GIT_COMMITTER_NAME="krmpod e2e" GIT_COMMITTER_EMAIL="e2e@krmpod.invalid" \
			GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" \
			GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
		git init -q .
		git symbolic-ref HEAD refs/heads/main
		git add -A
		git -c commit.gpgsign=false commit -q -m "krmpod e2e application ($E2E_APP_PATH)"
		git bundle create -q "$out/repo.bundle" HEAD main 2>/dev/null ||
			git bundle create "$out/repo.bundle" HEAD main >/dev/null 2>&1
		git rev-parse HEAD
	)
}
