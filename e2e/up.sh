#!/usr/bin/env bash
# Creates the kind cluster krmpod-e2e ($E2E_CLUSTER) from the pinned node image and waits for
# its node to be Ready. Idempotent: an existing cluster of that name is reused as it is.
# kind adds the context kind-krmpod-e2e to your kubeconfig; the e2e scripts use only that
# context, whatever your current one is.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

need_docker
need_kind
need_kubectl

kind_version=$(kind version 2>/dev/null | awk '{print $2}')
if [ -n "$kind_version" ] && ! version_ge "$kind_version" "$KIND_MIN_VERSION"; then
	warn "kind $kind_version is older than $KIND_MIN_VERSION, the release $KIND_NODE_IMAGE was built for;" \
		"cluster creation may fail. Upgrade kind, or set KIND_NODE_IMAGE to an image from your kind release's notes."
fi

if cluster_exists; then
	log "kind cluster '$E2E_CLUSTER' exists; reusing it (e2e/down.sh deletes it)"
	kind export kubeconfig --name "$E2E_CLUSTER" >/dev/null 2>&1 || true
else
	log "creating kind cluster '$E2E_CLUSTER' from $KIND_NODE_IMAGE"
	kind create cluster --name "$E2E_CLUSTER" --image "$KIND_NODE_IMAGE" --wait 180s
fi

kc wait --for=condition=Ready nodes --all --timeout=180s >/dev/null ||
	die "the nodes of '$E2E_CLUSTER' did not become Ready" \
		"look: kubectl --context $KUBE_CONTEXT describe nodes"
log "cluster '$E2E_CLUSTER' is up: Kubernetes $(kc get --raw /version | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p'), context $KUBE_CONTEXT"
