#!/usr/bin/env bash
# Makes the two local base images `make image-local` builds on, for machines that reach Debian's
# package archive but no container registry:
#
#   krmpod-local/trixie-minbase:1      Debian trixie, debootstrap --variant=minbase from
#                                      deb.debian.org, `docker import`ed. The Dockerfile's builder
#                                      stage (BUILDER_IMAGE) in place of debian:trixie-slim.
#   krmpod-local/kustomize-standin:1   A stand-in for registry.k8s.io/kustomize/kustomize
#                                      (KUSTOMIZE_IMAGE): the same layout as the official image
#                                      (the kustomize command at /app/kustomize, WORKDIR /app), with
#                                      kustomize provided by this machine's kubectl, whose
#                                      `kubectl kustomize` embeds kustomize. /app/kustomize is a
#                                      small sh wrapper (scripts/kustomize-standin) that turns
#                                      `kustomize build ARGS` into `kubectl kustomize ARGS`. The
#                                      official image is Alpine and
#                                      has a shell too; only the kustomize version differs.
#
# Each image is cached by its tag: an existing image is reused (the stand-in is remade when the
# machine's kubectl or scripts/kustomize-standin changes). `scripts/base-images.sh --force`
# remakes both.
# Prints BUILDER_IMAGE=... and KUSTOMIZE_IMAGE=... on stdout; everything else goes to stderr.
# Needs: root, a running docker daemon (scripts/image-local.sh starts one), debootstrap (installed
# with apt-get when missing), kubectl on PATH.
set -euo pipefail

BUILDER_TAG=krmpod-local/trixie-minbase:1
STANDIN_TAG=krmpod-local/kustomize-standin:1
MIRROR=${KRMPOD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KUSTOMIZE_PATH=/app/kustomize # where the official image keeps kustomize (kustomize.Dockerfile)

force=0
[ "${1:-}" = --force ] && force=1

log() { echo "base-images: $*" >&2; }
die() { log "error: $*"; exit 1; }

have_image() { [ $force = 0 ] && docker image inspect "$1" >/dev/null 2>&1; }

docker info >/dev/null 2>&1 || die "the docker daemon is not reachable (scripts/image-local.sh starts one)"

# ---- builder base: debootstrap trixie minbase + docker import --------------------------------
if have_image "$BUILDER_TAG"; then
	log "$BUILDER_TAG exists (cached)"
else
	if ! command -v debootstrap >/dev/null; then
		log "installing debootstrap"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
	fi
	[ -e /usr/share/debootstrap/scripts/trixie ] || die "this debootstrap does not know trixie; update debootstrap"
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -f "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.pgp
	rootfs=$(mktemp -d /var/tmp/krmpod-rootfs.XXXXXX)
	trap 'rm -rf "$rootfs"' EXIT
	log "debootstrap --variant=minbase trixie from $MIRROR (a few minutes)"
	t0=$(date +%s)
	if ! debootstrap --variant=minbase --keyring="$keyring" trixie "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1; then
		tail -20 "$rootfs.log" >&2
		die "debootstrap failed (log: $rootfs.log)"
	fi
	rm -f "$rootfs.log"
	# Trim what an image does not need (as the official slim images do): apt lists and caches.
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
	echo "deb $MIRROR trixie main" >"$rootfs/etc/apt/sources.list"
	: >"$rootfs/etc/resolv.conf"
	log "docker import -> $BUILDER_TAG"
	tar --numeric-owner --xattrs -C "$rootfs" -c . |
		docker import \
			--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			--change 'ENV LANG=C.UTF-8' \
			--change 'CMD ["/bin/bash"]' \
			--message "debootstrap --variant=minbase trixie $MIRROR" - "$BUILDER_TAG" >/dev/null
	rm -rf "$rootfs"
	trap - EXIT
	log "$BUILDER_TAG made in $(($(date +%s) - t0)) s"
fi

# ---- kustomize stand-in: builder base + kubectl + /app/kustomize wrapper -------------------------
kubectl_bin=$(command -v kubectl) || die "kubectl is needed for the kustomize stand-in (kubectl kustomize)"
kubectl_bin=$(readlink -f "$kubectl_bin")
standin_sum=$(cat "$kubectl_bin" "$(dirname "$0")/kustomize-standin" | sha256sum | cut -d' ' -f1)
if have_image "$STANDIN_TAG" &&
	[ "$(docker image inspect -f '{{index .Config.Labels "krmpod.standin-sha256"}}' "$STANDIN_TAG")" = "$standin_sum" ]; then
	log "$STANDIN_TAG exists (cached)"
else
	ctx=$(mktemp -d /var/tmp/krmpod-standin.XXXXXX)
	trap 'rm -rf "$ctx"' EXIT
	cp "$kubectl_bin" "$ctx/kubectl"
	# the same wrapper the real-cluster tier's sidecar image uses (tests/realkube)
	cp "$(dirname "$0")/kustomize-standin" "$ctx/kustomize"
	chmod 755 "$ctx/kustomize" "$ctx/kubectl"
	cat >"$ctx/Dockerfile" <<EOF
FROM $BUILDER_TAG
COPY kubectl /usr/local/bin/kubectl
COPY kustomize $KUSTOMIZE_PATH
WORKDIR /app
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/app
LABEL krmpod.standin-sha256=$standin_sum
ENTRYPOINT ["$KUSTOMIZE_PATH"]
EOF
	log "docker build -> $STANDIN_TAG (kubectl $("$kubectl_bin" version --client 2>/dev/null | sed -n 's/^Kustomize Version: //p' | sed 's/^/embeds kustomize /'))"
	DOCKER_BUILDKIT=0 docker build -q --force-rm -t "$STANDIN_TAG" "$ctx" >/dev/null
	rm -rf "$ctx"
	trap - EXIT
fi

echo "BUILDER_IMAGE=$BUILDER_TAG"
echo "KUSTOMIZE_IMAGE=$STANDIN_TAG"
echo "KUSTOMIZE_PATH=$KUSTOMIZE_PATH"
