#!/usr/bin/env bash
# Installs Argo CD $ARGOCD_VERSION (pinned in lib.sh) into namespace argocd from the release's
# install.yaml, with server-side apply (required from Argo CD 3.3 on: the ApplicationSet CRD is
# too large for client-side apply), and waits until every Argo CD workload is ready.
# Idempotent: re-applying the same release changes nothing.
#   ARGOCD_VERSION      release tag (default in lib.sh)
#   ARGOCD_INSTALL_URL  where install.yaml comes from (a mirror, or a local file path)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

require_cluster

kc create namespace "$ARGOCD_NAMESPACE" --dry-run=client -o yaml | kc apply -f - >/dev/null
log "applying Argo CD $ARGOCD_VERSION ($ARGOCD_INSTALL_URL)"
kc apply -n "$ARGOCD_NAMESPACE" --server-side --force-conflicts -f "$ARGOCD_INSTALL_URL" >/dev/null ||
	die "applying Argo CD's install.yaml failed" \
		"URL: $ARGOCD_INSTALL_URL (reachable from here? set ARGOCD_INSTALL_URL to a mirror or a local copy)"

kc wait --for=condition=Established --timeout=60s crd/applications.argoproj.io >/dev/null
log "waiting for the Argo CD workloads (image pulls included; up to 5 minutes)"
kc -n "$ARGOCD_NAMESPACE" wait --for=condition=Available --timeout=300s deployment --all >/dev/null ||
	die "Argo CD deployments did not become Available" \
		"look: kubectl --context $KUBE_CONTEXT -n $ARGOCD_NAMESPACE get pods; ... describe pod NAME"
kc -n "$ARGOCD_NAMESPACE" rollout status statefulset/argocd-application-controller --timeout=300s >/dev/null ||
	die "argocd-application-controller did not become ready" \
		"look: kubectl --context $KUBE_CONTEXT -n $ARGOCD_NAMESPACE describe statefulset argocd-application-controller"
log "Argo CD $ARGOCD_VERSION is ready in namespace $ARGOCD_NAMESPACE"
