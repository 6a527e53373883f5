#!/usr/bin/env bash
# make demo: renders examples/demo-app with real kustomize (kubectl kustomize) while every
# containerized KRM function in it runs as a Pod on kubesim, the built-in test cluster.
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

mkdir -p "$state/bin"
ln -s "$krmpod" "$state/bin/docker"
echo "demo: kubesim (a stand-in Kubernetes API server + kubelet) is at $url" >&2
echo "demo: kubectl kustomize --enable-alpha-plugins examples/demo-app, with docker -> krmpod:" >&2
echo >&2
PATH="$state/bin:$PATH" KUBECONFIG="$state/kubeconfig" FROM_SHIM="set in the shim's environment" \
	kubectl kustomize --enable-alpha-plugins "$root/examples/demo-app"
echo >&2
left=$(grep -c ' POST /api/v1/namespaces/[^/]*/pods' "$state/requests.log" || true)
echo "demo: the functions ran as $left pods; the API requests kubesim served:" >&2
sed 's/^/  /' "$state/requests.log" >&2
KUBECONFIG="$state/kubeconfig" kubectl get pods -A --no-headers 2>/dev/null | grep . &&
	{ echo "demo: pods were left behind" >&2; exit 1; }
echo "demo: no pods left behind." >&2
