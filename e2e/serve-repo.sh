#!/usr/bin/env bash
# Serves e2e/app, as it is in your working tree (uncommitted edits included), from the
# in-cluster git server (git-server.yaml) at
#   git://krmpod-e2e-git.krmpod-e2e-git.svc.cluster.local:9418/krmpod-e2e.git  (branch main,
#   path e2e/app)
# Prints the served commit on stdout. Idempotent: unchanged files give the same commit and
# leave the server running as it is; changed files restart it with the new commit.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

require_cluster
make_tmpdir
tmp=$E2E_TMP
commit=$(make_app_bundle "$tmp")
log "serving $E2E_APP_PATH at commit $commit from $E2E_GIT_URL"

kc create namespace "$E2E_GIT_NAMESPACE" --dry-run=client -o yaml | kc apply -f - >/dev/null
kc -n "$E2E_GIT_NAMESPACE" create configmap krmpod-e2e-repo --from-file=repo.bundle="$tmp/repo.bundle" \
	--dry-run=client -o yaml | kc apply -f - >/dev/null
sed -e "s|^\( *\)image: .*# e2e-image:.*|\1image: $ARGOCD_IMAGE|" \
	-e "s|^\( *\)krmpod-e2e/commit: .*# e2e-commit:.*|\1krmpod-e2e/commit: \"$commit\"|" \
	"$E2E_DIR/git-server.yaml" | kc apply -f - >/dev/null
kc -n "$E2E_GIT_NAMESPACE" rollout status deployment/"$E2E_GIT_SERVICE" --timeout=180s >&2 ||
	die "the git server did not start" \
		"look: kubectl --context $KUBE_CONTEXT -n $E2E_GIT_NAMESPACE logs deploy/$E2E_GIT_SERVICE" \
		"     kubectl --context $KUBE_CONTEXT -n $E2E_GIT_NAMESPACE describe pod -l app=$E2E_GIT_SERVICE"
printf '%s\n' "$commit"
