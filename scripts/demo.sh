#!/usr/bin/env bash
# make demo: the sidecar's main job on the built-in test cluster. `krmpod generate` renders
# examples/demo-app the way Argo CD's CMP server runs it: in the application's directory, with
# the ARGOCD_* environment, in-cluster service-account credentials (a token file, ca.crt,
# KUBERNETES_SERVICE_HOST/PORT) and its own process group. kustomize (`kubectl kustomize`,
# which embeds kustomize 5.5) runs every containerized KRM function through krmpod's docker
# shim as a Pod on kubesim, a stand-in Kubernetes API server + kubelet.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
krmpod=${KRMPOD_BIN:-$root/build/krmpod}
state=$(mktemp -d /tmp/krmpod-demo.XXXXXX)
sim_pid=
cleanup() {
	[ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
	rm -rf "$state"
}
trap cleanup EXIT

"$root/tests/kubesim/kubesim" --port 0 --images "$root/tests/fixtures/images" --state "$state" \
	>"$state/url" 2>"$state/kubesim.log" &
sim_pid=$!
for _ in $(seq 100); do [ -s "$state/url" ] && break; sleep 0.1; done
url=$(head -1 "$state/url")
[ -n "$url" ] || { echo "demo: kubesim did not start; see $state/kubesim.log" >&2; cat "$state/kubesim.log" >&2; exit 1; }
hostport=${url#https://}
host=${hostport%:*}
port=${hostport##*:}

# The sidecar's projected service-account token volume.
sa=$state/serviceaccount
mkdir -p "$sa"
cp "$state/token" "$sa/token"
cp "$state/ca.crt" "$sa/ca.crt"
echo default >"$sa/namespace"

echo "demo: kubesim (a stand-in Kubernetes API server + kubelet) is at $url" >&2
# The environment Argo CD's CMP server gives generate, for one Application directory.
render() {
	(cd "$root/examples/$1" && shift && env -i PATH="$PATH" HOME="$state" TMPDIR="$state" \
		KUBERNETES_SERVICE_HOST="$host" KUBERNETES_SERVICE_PORT="$port" \
		KRMPOD_SERVICEACCOUNT_DIR="$sa" KRMPOD_KUSTOMIZE="kubectl kustomize" \
		ARGOCD_APP_NAMESPACE=argocd ARGOCD_APP_REVISION=HEAD \
		ARGOCD_APP_SOURCE_REPO_URL=https://example.com/demo.git \
		ARGOCD_APP_SOURCE_TARGET_REVISION=main ARGOCD_APP_PROJECT_NAME=default \
		"$@" setsid --wait "$krmpod" generate)
}
echo "demo: krmpod generate in examples/demo-app, as Argo CD's CMP server runs it:" >&2
echo >&2
render demo-app ARGOCD_APP_NAME=demo ARGOCD_APP_SOURCE_PATH=examples/demo-app \
	ARGOCD_ENV_FROM_SHIM="set in the Application (ARGOCD_ENV_FROM_SHIM)"
echo >&2
# Function catalogs (docs/catalogs.md): the admin trusts examples/catalog-app/catalog.yaml
# and lets only its images run; the app names its functions by kind and lists its copy.
echo "demo: krmpod generate in examples/catalog-app: functions named by kind, resolved from" >&2
echo "demo: a catalog the admin trusts, with KRMPOD_IMAGE_POLICY=catalog:" >&2
echo >&2
render catalog-app ARGOCD_APP_NAME=catalog-demo ARGOCD_APP_SOURCE_PATH=examples/catalog-app \
	KRMPOD_TRUSTED_CATALOGS="$root/examples/catalog-app/catalog.yaml" \
	KRMPOD_IMAGE_POLICY=catalog
echo >&2
pods=$(grep -c ' POST /api/v1/namespaces/[^/]*/pods' "$state/requests.log" || true)
echo "demo: the functions ran as $pods pods; the API requests kubesim served:" >&2
sed 's/^/  /' "$state/requests.log" >&2
KUBECONFIG="$state/kubeconfig" kubectl get pods -A --no-headers 2>/dev/null | grep . &&
	{ echo "demo: pods were left behind" >&2; exit 1; }
echo "demo: no pods left behind." >&2
