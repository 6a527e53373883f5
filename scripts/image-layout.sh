#!/bin/sh
# Lays out the files the sidecar image adds to the kustomize base image, under OUTDIR, as
# they land in the image's root:
#
#   /usr/local/bin/krmpod                         BINARY (the static build/krmpod), 0755
#   /usr/local/libexec/krmpod/docker              -> /usr/local/bin/krmpod (KRMPOD_SHIM_DIR)
#   /etc/ssl/certs/ca-certificates.crt            the CA bundle (KRMPOD_CA_BUNDLE, default
#                                                 this machine's), 0644
#   /home/argocd/cmp-server/config/plugin.yaml    the repository's plugin.yaml, 0644
#
# The one definition of the image's added files: the Dockerfile's builder stage runs it
# (`COPY --from=builder /out/ /` in the final stage), and the real-cluster tier
# (tests/realkube) lays out its sidecar image with it.
#
# Usage: scripts/image-layout.sh OUTDIR BINARY
set -eu
if [ $# -ne 2 ]; then
	echo "usage: scripts/image-layout.sh OUTDIR BINARY" >&2
	exit 2
fi
out=$1
bin=$2
root=$(cd "$(dirname "$0")/.." && pwd)
ca=${KRMPOD_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
for f in "$bin" "$ca" "$root/plugin.yaml"; do
	[ -f "$f" ] || {
		echo "image-layout: $f is missing" >&2
		exit 1
	}
done
umask 022
mkdir -p "$out/usr/local/bin" "$out/usr/local/libexec/krmpod" "$out/etc/ssl/certs" \
	"$out/home/argocd/cmp-server/config"
install -m 0755 "$bin" "$out/usr/local/bin/krmpod"
ln -sfn /usr/local/bin/krmpod "$out/usr/local/libexec/krmpod/docker"
install -m 0644 "$ca" "$out/etc/ssl/certs/ca-certificates.crt"
install -m 0644 "$root/plugin.yaml" "$out/home/argocd/cmp-server/config/plugin.yaml"
