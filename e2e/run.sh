#!/usr/bin/env bash
# The whole e2e test, in order. Each step is idempotent, so re-running after a fix (or after
# editing e2e/app) is cheap: an existing cluster, Argo CD and images are reused.
#
#   e2e/run.sh              build krmpod:local with docker and test it
#   e2e/run.sh --make       build it with `make image-local` instead
#   e2e/run.sh --image REF  test an existing image (no build)
#   e2e/run.sh --down       delete the cluster at the end when everything passed
#
#   1 pin-images.sh --check   the function images are pinned by digest (offline)
#   2 up.sh                   kind cluster krmpod-e2e (pinned node image)
#   3 install-argocd.sh       Argo CD (pinned release), ready
#   4 load-image.sh           sidecar image into kind; function images pre-pulled
#   5 install-krmpod.sh       manifests/ with that image; repo-server rolled out
#   6 deploy-app.sh           e2e/app served from the in-cluster git server; the Application
#   7 check.sh                synced, healthy, functions ran as pods, nothing left behind
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

load_args=
down=0
while [ $# -gt 0 ]; do
	case $1 in
	--make) load_args=--make ;;
	--image)
		[ $# -ge 2 ] || die "--image needs an image reference"
		KRMPOD_IMAGE=$2
		export KRMPOD_IMAGE
		load_args=--no-build
		shift
		;;
	--down) down=1 ;;
	-h | --help)
		sed -n '2,18p' "$0"
		exit 0
		;;
	*) die "unknown argument '$1'" "usage: e2e/run.sh [--make | --image REF] [--down]" ;;
	esac
	shift
done

t0=$SECONDS
step() {
	log "==== $*"
	"$@" || die "step failed: ${*#"$E2E_DIR"/}" \
		"the cluster, if one was made, is kept for debugging (e2e/README.md, \"Troubleshooting\"); e2e/down.sh deletes it"
}
step "$E2E_DIR/pin-images.sh" --check
step "$E2E_DIR/up.sh"
step "$E2E_DIR/install-argocd.sh"
# shellcheck disable=SC2086 # load_args is empty or one option
step "$E2E_DIR/load-image.sh" $load_args
step "$E2E_DIR/install-krmpod.sh"
step "$E2E_DIR/deploy-app.sh"
step "$E2E_DIR/check.sh"
log "e2e passed in $((SECONDS - t0))s"
if [ $down = 1 ]; then
	"$E2E_DIR/down.sh"
else
	log "the cluster stays up: kubectl --context $KUBE_CONTEXT ...; e2e/down.sh deletes it"
fi
