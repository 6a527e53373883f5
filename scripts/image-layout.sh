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
# With --root KUSTOMIZE it lays out a complete root instead, for an image with no base
# (`make release`, release/release.mk; docs/release.md): the files above and
#
#   /usr/local/bin/kustomize                      KUSTOMIZE (a static kustomize), 0755
#   /etc/passwd, /etc/group                       root, argocd (999:999, HOME /home/argocd:
#                                                 the uid Argo CD's sidecar runs as) and
#                                                 nobody/nogroup, 0644
#   /tmp                                          1777
#   /home/argocd                                  0755
#
# Every directory is 0755; ownership is not set here (the image's layers say uid/gid 0 for
# every entry, release/oci_image.py).
#
# The one definition of the image's files: the Dockerfile's builder stage runs it
# (`COPY --from=builder /out/ /` in the final stage), the real-cluster tier (tests/realkube)
# lays out its sidecar image with it, and `make release` builds each architecture's root
# with --root.
#
# Usage: scripts/image-layout.sh [--root KUSTOMIZE] OUTDIR BINARY
set -eu
usage() {
	echo "usage: scripts/image-layout.sh [--root KUSTOMIZE] OUTDIR BINARY" >&2
	exit 2
}
kustomize=
if [ "${1:-}" = --root ]; then
	[ $# -ge 2 ] || usage
	kustomize=$2
	shift 2
fi
[ $# -eq 2 ] || usage
out=$1
bin=$2
root=$(cd "$(dirname "$0")/.." && pwd)
ca=${KRMPOD_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
for f in "$bin" "$ca" "$root/plugin.yaml" ${kustomize:+"$kustomize"}; do
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

[ -n "$kustomize" ] || exit 0
install -m 0755 "$kustomize" "$out/usr/local/bin/kustomize"
printf '%s\n' \
	'root:x:0:0:root:/root:/sbin/nologin' \
	'argocd:x:999:999:Argo CD:/home/argocd:/sbin/nologin' \
	'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' >"$out/etc/passwd"
printf '%s\n' 'root:x:0:' 'argocd:x:999:' 'nogroup:x:65534:' >"$out/etc/group"
chmod 0644 "$out/etc/passwd" "$out/etc/group"
mkdir -p "$out/tmp"
chmod 1777 "$out/tmp"
chmod 0755 "$out/home/argocd"
