#!/usr/bin/env bash
# Deploys the e2e Application (application.yaml): serves e2e/app from the in-cluster git
# server (serve-repo.sh), or points at E2E_REPO_URL (a fork that has e2e/app pushed, at
# E2E_REPO_REVISION), sets the plugin name from plugin.yaml, and applies it.
# Then asks Argo CD for a hard refresh, so the app is re-rendered now, not from its cache.
# Idempotent.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

require_cluster
kc get crd applications.argoproj.io >/dev/null 2>&1 || die "Argo CD is not installed" "fix: run e2e/install-argocd.sh"

if [ -n "$E2E_REPO_URL" ]; then
	repo=$E2E_REPO_URL
	log "using $repo at $E2E_REPO_REVISION (E2E_REPO_URL); it must contain $E2E_APP_PATH as committed and pushed"
else
	repo=$E2E_GIT_URL
	"$E2E_DIR/serve-repo.sh" >/dev/null
fi
plugin=$(plugin_name)

log "applying Application $E2E_APP_NAME (plugin $plugin, repo $repo, revision $E2E_REPO_REVISION)"
sed -e "s|^\( *\)repoURL: .*# e2e: repoURL|\1repoURL: $repo|" \
	-e "s|^\( *\)targetRevision: .*# e2e: targetRevision|\1targetRevision: $E2E_REPO_REVISION|" \
	-e "s|^\( *\)name: .*# e2e: plugin.name|\1name: $plugin|" \
	-e "s|^\(  name: \)krmpod-e2e$|\1$E2E_APP_NAME|" \
	"$E2E_DIR/application.yaml" | kc apply -f - >&2
kc -n "$ARGOCD_NAMESPACE" annotate application "$E2E_APP_NAME" argocd.argoproj.io/refresh=hard --overwrite >/dev/null
log "Application $E2E_APP_NAME applied; e2e/check.sh waits for it and checks the result"
