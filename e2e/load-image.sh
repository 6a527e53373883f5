#!/usr/bin/env bash
# Puts the krmpod sidecar image on the kind node, and pre-pulls the KRM function images there.
#
#   e2e/load-image.sh                 build krmpod:local from ../Dockerfile (docker build), load it
#   e2e/load-image.sh --make          build it with `make image-local` instead (Debian, as root:
#                                     the variant for machines that reach no container registry)
#   e2e/load-image.sh IMAGE           load IMAGE (pulled first when it is not local); no build
#   KRMPOD_IMAGE=IMAGE e2e/load-image.sh --no-build   same, IMAGE from the environment
#
# The function images are pulled by the node's containerd (crictl pull), by digest, so the
# first render under Argo CD does not spend its 60 s deadline on image pulls.
# Idempotent: kind load skips an image the node already has.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

build=docker
while [ $# -gt 0 ]; do
	case $1 in
	--make) build="make" ;;
	--no-build) build=none ;;
	-h | --help)
		sed -n '2,14p' "$0"
		exit 0
		;;
	-*) die "unknown option '$1'" "usage: e2e/load-image.sh [--make | --no-build] [IMAGE]" ;;
	*)
		KRMPOD_IMAGE=$1
		build=none
		;;
	esac
	shift
done

need_docker
require_cluster

case $build in
docker)
	version=$(git -C "$ROOT_DIR" describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)
	log "building $KRMPOD_IMAGE from $ROOT_DIR/Dockerfile (docker build; the first build compiles the C dependencies: minutes)"
	[ -f "$ROOT_DIR/Dockerfile" ] || die "$ROOT_DIR/Dockerfile not found" "fix: build the image yourself and pass it: e2e/load-image.sh IMAGE"
	# shellcheck disable=SC2086 # E2E_DOCKER_BUILD_ARGS is a list of extra arguments
	docker build ${E2E_DOCKER_BUILD_ARGS:-} --build-arg "VERSION=$version" -t "$KRMPOD_IMAGE" "$ROOT_DIR" ||
		die "docker build failed" "the Dockerfile's builder stage needs network access to Debian's archive;" \
			"E2E_DOCKER_BUILD_ARGS='--network host' helps behind some proxies, or use --make"
	;;
make)
	need make "install make (apt-get install make)"
	log "building $KRMPOD_IMAGE with 'make image-local'"
	(cd "$ROOT_DIR" && IMAGE="$KRMPOD_IMAGE" make image-local) ||
		die "'make image-local' failed" "fix: see its output above, or build with plain docker: e2e/load-image.sh (without --make)"
	;;
none)
	if ! docker image inspect "$KRMPOD_IMAGE" >/dev/null 2>&1; then
		log "$KRMPOD_IMAGE is not in the local docker; pulling it"
		docker pull "$KRMPOD_IMAGE" || die "cannot pull $KRMPOD_IMAGE" "fix: build it, or docker login to its registry"
	fi
	;;
esac

docker image inspect "$KRMPOD_IMAGE" >/dev/null 2>&1 || die "image $KRMPOD_IMAGE is not in the local docker after the build"
log "loading $KRMPOD_IMAGE into kind cluster '$E2E_CLUSTER'"
kind load docker-image "$KRMPOD_IMAGE" --name "$E2E_CLUSTER" >&2 ||
	die "kind load docker-image $KRMPOD_IMAGE failed" \
		"with Docker's containerd image store, try: docker save $KRMPOD_IMAGE | kind load image-archive /dev/stdin --name $E2E_CLUSTER"

# Pre-pull the function images on every node (by digest when pinned).
for node in $(kind get nodes --name "$E2E_CLUSTER"); do
	for img in $(function_images); do
		log "pre-pulling $img on $node"
		docker exec "$node" crictl pull "$img" >/dev/null ||
			die "the node $node could not pull $img" \
				"is the digest right? e2e/pin-images.sh --verify checks it against the registry;" \
				"does the node reach ghcr.io? (docker exec $node crictl pull $img)"
	done
done
log "images ready: $KRMPOD_IMAGE and $(function_images | wc -l | tr -d ' ') function image(s)"
