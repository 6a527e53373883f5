#!/usr/bin/env bash
# Deletes the kind cluster krmpod-e2e ($E2E_CLUSTER) and with it everything the e2e scripts
# made (Argo CD, krmpod, the git server, the app). Idempotent.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

need_kind
if cluster_exists; then
	log "deleting kind cluster '$E2E_CLUSTER'"
	kind delete cluster --name "$E2E_CLUSTER"
else
	log "no kind cluster '$E2E_CLUSTER'; nothing to delete"
fi
