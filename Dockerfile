# krmpod — Argo CD config-management-plugin sidecar image, the development build.
#
#   builder : Debian trixie; `make` builds the pinned C dependencies from Debian source packages
#             (scripts/deps.sh) and the static binary build/krmpod.
#   final   : the official kustomize image plus krmpod (one static binary, ~2 MB), the CA bundle,
#             plugin.yaml and the private `docker` symlink. No RUN step: any base works, a
#             shell-less one included.
#
# Released images are not built here: `make release` (docs/release.md) writes them as an OCI
# image layout with no base image, each architecture's root laid out by the same script with
# --root (scripts/image-layout.sh: these added files, plus kustomize built from
# tests/tools/kustomize's pins at /usr/local/bin/kustomize, a pinned Debian CA bundle,
# /etc/passwd and /etc/group with argocd 999, /tmp), reproducibly and without docker. This
# Dockerfile keeps the kustomize base image because `make image-local` (tests/image) and the
# real-cluster tier (tests/realkube) build on a stand-in for it whose kustomize is a shell
# wrapper around kubectl.
#
# Build (needs network for apt inside the builder):
#   docker build --network host --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg KRMPOD_COMMIT=$(git rev-parse HEAD) -t krmpod .
# Without registry access, `make image-local` substitutes locally made base images
# (scripts/base-images.sh) for both ARGs below.
#
# Pins. Re-resolve with `docker buildx imagetools inspect IMAGE:TAG` (the index digest) when
# bumping. Both digests were taken from public pinned references (debian:trixie-slim's
# 2026-08-24 rebuild; registry.k8s.io/kustomize/kustomize:v5.8.1 as pinned by a Renovate-managed
# project); they could not be resolved against the registries from the machine that wrote this.
ARG BUILDER_IMAGE=debian:trixie-slim@sha256:d7e12182ce18b85b93007c1dedf31f2d29e01ccf3182cc4017c709b6259bc132
ARG KUSTOMIZE_IMAGE=registry.k8s.io/kustomize/kustomize:v5.8.1@sha256:899fcd3bc898160e62bcaf82932b0cb29ba38d16272353db2e7acbba82129429
# Where KUSTOMIZE_IMAGE keeps the kustomize binary. The official image (kustomize.Dockerfile in
# kubernetes-sigs/kustomize: Alpine, WORKDIR /app, ENTRYPOINT ["/app/kustomize"], runs as root)
# has it at /app/kustomize.
ARG KUSTOMIZE_PATH=/app/kustomize

# ---- builder -------------------------------------------------------------------------------
FROM ${BUILDER_IMAGE} AS builder
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
# Layers from slowest-changing to fastest: build tools, then the C dependencies (pinned in
# deps.sh, minutes to build), then krmpod's own sources (seconds).
COPY scripts/install-build-deps.sh scripts/
# linux-libc-dev: the kernel headers libwebsockets needs (gcc only recommends libc6-dev, so a
# minimal Debian lacks them); install-build-deps.sh installs the rest.
RUN apt-get update -qq \
	&& apt-get install -y -qq --no-install-recommends libc6-dev linux-libc-dev >/dev/null \
	&& scripts/install-build-deps.sh && rm -rf /var/lib/apt/lists/*
COPY scripts/deps.sh scripts/
RUN scripts/deps.sh musl && rm -rf build/src build/apt
COPY Makefile ./
COPY src/ src/
ARG VERSION=0.0.0-dev
# the build context holds no .git: say the commit here (`krmpod version` prints it)
ARG KRMPOD_COMMIT=unknown
RUN make VERSION="${VERSION}" KRMPOD_COMMIT="${KRMPOD_COMMIT}" && ./build/krmpod version
# The final image's added files, laid out as they land there by the one script that defines
# them (the real-cluster tier, tests/realkube, builds its sidecar image with it too).
COPY plugin.yaml ./
COPY scripts/image-layout.sh scripts/
RUN scripts/image-layout.sh /out build/krmpod

# ---- final ---------------------------------------------------------------------------------
FROM ${KUSTOMIZE_IMAGE}
ARG KUSTOMIZE_PATH
ARG VERSION=0.0.0-dev
COPY --from=builder /out/ /
# generate runs "$KRMPOD_KUSTOMIZE build --enable-alpha-plugins ." with KRMPOD_SHIM_DIR (docker
# -> krmpod) first on PATH. The Argo CD sidecar runs as 999 (argocd), read-only root fs, /tmp
# an emptyDir.
ENV KRMPOD_SHIM_DIR=/usr/local/libexec/krmpod \
	KRMPOD_KUSTOMIZE=${KUSTOMIZE_PATH}
USER 999
LABEL org.opencontainers.image.title="krmpod" \
	org.opencontainers.image.description="Argo CD CMP sidecar: kustomize KRM functions as Kubernetes Pods" \
	org.opencontainers.image.version="${VERSION}" \
	org.opencontainers.image.licenses="Apache-2.0"
# Argo CD's sidecar spec sets command: /var/run/argocd/argocd-cmp-server; the entrypoint is for
# running krmpod by hand (`docker run IMAGE doctor`).
ENTRYPOINT ["/usr/local/bin/krmpod"]
CMD ["version"]
