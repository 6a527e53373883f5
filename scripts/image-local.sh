#!/usr/bin/env bash
# `make image-local`: builds the krmpod CMP sidecar image on a machine that reaches Debian's
# package archive but no container registry, and tests it (tests/image).
#
#   1. installs docker.io and debootstrap with apt-get when missing, and starts dockerd
#      (`dockerd --iptables=false`, in the background) when no daemon answers;
#   2. scripts/base-images.sh: local stand-ins for the Dockerfile's two base images
#      (Debian trixie minbase for the builder, a kustomize image with the official layout);
#   3. docker build --network host with those as BUILDER_IMAGE / KUSTOMIZE_IMAGE;
#   4. tests/image (pytest, Debian's /usr/bin/python3) against the image and kubesim.
#
# Environment: IMAGE (default krmpod:local), VERSION (default: git describe),
# KRMPOD_IMAGE_SKIP_TESTS=1 to build only.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
IMAGE=${IMAGE:-krmpod:local}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/krmpod-dockerd.log}

log() { echo "image-local: $*" >&2; }
die() { log "error: $*"; exit 1; }

# ---- tools -------------------------------------------------------------------------------------
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v docker >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
for pkg in python3 python3-pytest python3-yaml openssl; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
	mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
command -v kubectl >/dev/null || die "kubectl is needed (the kustomize stand-in image is built from it)"

# ---- docker daemon -----------------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
	log "no docker daemon answers: starting dockerd --iptables=false (log: $DOCKERD_LOG)"
	# Its own session and no inherited stdio, so it outlives this script and make.
	setsid dockerd --iptables=false >>"$DOCKERD_LOG" 2>&1 </dev/null &
	for _ in $(seq 1 60); do
		docker info >/dev/null 2>&1 && break
		if ! kill -0 $! 2>/dev/null; then
			tail -20 "$DOCKERD_LOG" >&2
			die "dockerd exited at start (log: $DOCKERD_LOG); docker is required for make image-local"
		fi
		sleep 1
	done
	docker info >/dev/null 2>&1 || {
		tail -20 "$DOCKERD_LOG" >&2
		die "dockerd did not answer within 60 s (log: $DOCKERD_LOG)"
	}
	log "dockerd is up (pid $!)"
fi

# ---- base images ---------------------------------------------------------------------------------
eval "$(scripts/base-images.sh)"

# ---- build -------------------------------------------------------------------------------------
# The classic builder (DOCKER_BUILDKIT=0) works with both Debian's docker.io and newer clients
# that lack the buildx plugin. The local base images are used as they are (no pull).
log "docker build $IMAGE (BUILDER_IMAGE=$BUILDER_IMAGE KUSTOMIZE_IMAGE=$KUSTOMIZE_IMAGE VERSION=$VERSION)"
t0=$(date +%s)
DOCKER_BUILDKIT=0 docker build --network host --force-rm \
	--build-arg "BUILDER_IMAGE=$BUILDER_IMAGE" \
	--build-arg "KUSTOMIZE_IMAGE=$KUSTOMIZE_IMAGE" \
	--build-arg "KUSTOMIZE_PATH=$KUSTOMIZE_PATH" \
	--build-arg "VERSION=$VERSION" \
	-t "$IMAGE" . >&2
log "built $IMAGE in $(($(date +%s) - t0)) s: $(docker image inspect -f '{{.Size}}' "$IMAGE") bytes" \
	"(base $KUSTOMIZE_IMAGE: $(docker image inspect -f '{{.Size}}' "$KUSTOMIZE_IMAGE") bytes)"

# ---- test --------------------------------------------------------------------------------------
if [ "${KRMPOD_IMAGE_SKIP_TESTS:-0}" = 1 ]; then
	log "KRMPOD_IMAGE_SKIP_TESTS=1: not testing"
	exit 0
fi
KRMPOD_IMAGE=$IMAGE KRMPOD_KUSTOMIZE_BASE_IMAGE=$KUSTOMIZE_IMAGE KRMPOD_KUSTOMIZE_PATH=$KUSTOMIZE_PATH \
	/usr/bin/python3 -m pytest -q tests/image
